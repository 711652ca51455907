// The attention plans' CUDA entry points. select refuses CUDA streams for now (ops/attention.cpp), so
// these are never reached; the GPU path to come is cuDNN's fused attention through the cuDNN
// frontend's graph API, built in select, and a tiled online-softmax kernel of ours where cuDNN refuses.
#include "ops/attention_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {

Status launch(const LaunchContext&, const AttentionProblem&) {
  return plan_error(StatusCode::unsupported, "AttentionPlan", "stream", "the CUDA backend has no attention kernel yet");
}
Status launch(const LaunchContext&, const AttentionBackwardProblem&) {
  return plan_error(StatusCode::unsupported, "AttentionBackwardPlan", "stream",
                    "the CUDA backend has no attention kernel yet");
}

}  // namespace baracuda::detail::cuda

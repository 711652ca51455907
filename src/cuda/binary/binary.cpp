// The CUDA entry points of the binary family: a problem goes to its kind's group (src/cuda/binary/*.cu).
#include "ops/binary_problem.hpp"

namespace baracuda::detail::cuda {

Status launch(const LaunchContext& ctx, const BinaryForwardProblem& problem) {
  return with_binary_group(problem.desc.kind, [&](auto group) { return launch_group<group()>(ctx, problem); });
}

Status launch(const LaunchContext& ctx, const BinaryBackwardProblem& problem) {
  return with_binary_group(problem.desc.kind, [&](auto group) { return launch_group<group()>(ctx, problem); });
}

}  // namespace baracuda::detail::cuda

// The CUDA entry points of the unary family: a problem goes to its kind's group (src/cuda/unary/*.cu).
#include "ops/unary_problem.hpp"

namespace baracuda::detail::cuda {

Status launch(const LaunchContext& ctx, const UnaryForwardProblem& problem) {
  return with_unary_group(problem.desc.kind, [&](auto group) { return launch_group<group()>(ctx, problem); });
}

Status launch(const LaunchContext& ctx, const UnaryBackwardProblem& problem) {
  return with_unary_group(problem.desc.kind, [&](auto group) { return launch_group<group()>(ctx, problem); });
}

}  // namespace baracuda::detail::cuda

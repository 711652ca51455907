// The CUDA entry points of the binary family: a problem goes to its kind's group (src/cuda/binary/*.cu).
#include "ops/binary_problem.hpp"

namespace baracuda::detail::cuda {

template <class Problem>
Status launch_binary(const LaunchContext& ctx, const Problem& problem) {
  return run_with_casts(
      problem.casts, [&](const CastProblem& cast) { return launch(ctx, cast); },
      [&] {
        return with_binary_group(problem.desc.kind, [&](auto group) { return launch_group<group()>(ctx, problem); });
      });
}

Status launch(const LaunchContext& ctx, const BinaryForwardProblem& problem) { return launch_binary(ctx, problem); }
Status launch(const LaunchContext& ctx, const BinaryBackwardProblem& problem) { return launch_binary(ctx, problem); }

}  // namespace baracuda::detail::cuda

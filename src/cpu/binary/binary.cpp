// The CPU entry points of the binary family: a problem goes to its kind's group (src/cpu/binary/*.cpp).
#include "ops/binary_problem.hpp"

namespace baracuda::detail::cpu {

Status launch(const LaunchContext& ctx, const BinaryForwardProblem& problem) {
  return with_binary_group(problem.desc.kind, [&](auto group) { return launch_group<group()>(ctx, problem); });
}

Status launch(const LaunchContext& ctx, const BinaryBackwardProblem& problem) {
  return with_binary_group(problem.desc.kind, [&](auto group) { return launch_group<group()>(ctx, problem); });
}

}  // namespace baracuda::detail::cpu

// The CPU entry points of the ternary family: a problem goes to its kind's group (src/cpu/ternary/*.cpp).
#include "ops/ternary_problem.hpp"

namespace baracuda::detail::cpu {

Status launch(const LaunchContext& ctx, const TernaryForwardProblem& problem) {
  return with_ternary_group(problem.desc.kind, [&](auto group) { return launch_group<group()>(ctx, problem); });
}

Status launch(const LaunchContext& ctx, const TernaryBackwardProblem& problem) {
  return with_ternary_group(problem.desc.kind, [&](auto group) { return launch_group<group()>(ctx, problem); });
}

}  // namespace baracuda::detail::cpu

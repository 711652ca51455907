#pragma once
// The CPU kernels of one group of unary kinds: the shared dispatch with the CPU elementwise launcher.
// Each src/cpu/unary/<group>.cpp instantiates launch_group for its group alone.
#include "cpu/elementwise.hpp"
#include "ops/unary_problem.hpp"

namespace baracuda::detail::cpu {

template <int G>
Status launch_group(const LaunchContext&, const UnaryForwardProblem& problem) {
  return dispatch_unary<G, true, half, bfloat16>(problem.desc, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    using Math = typename decltype(math)::type;
    using Out = math_output_t<Math, T>;
    return unary_typed<Math, T>(
        problem, [](const auto& op, const auto& tensors) { return run_elementwise<T, Out>(op, tensors); });
  });
}
template <int G>
Status launch_group(const LaunchContext&, const UnaryBackwardProblem& problem) {
  return dispatch_unary<G, false, half, bfloat16>(problem.desc, [&](auto math, auto element) -> Status {
    using T = typename decltype(element)::type;
    return unless_predicate<typename decltype(math)::type>("UnaryBackwardPlan", [&](auto gradient_math) {
      using Math = typename decltype(gradient_math)::type;
      return unary_typed<Math, T>(problem,
                                  [](const auto& op, const auto& tensors) { return run_elementwise<T>(op, tensors); });
    });
  });
}

}  // namespace baracuda::detail::cpu

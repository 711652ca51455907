#pragma once
// The CPU kernels of one group of unary kinds: the shared dispatch with the CPU elementwise launcher.
// Each src/cpu/unary/<group>.cpp instantiates launch_group for its group alone.
#include "cpu/elementwise.hpp"
#include "ops/unary_problem.hpp"

namespace baracuda::detail::cpu {

template <int G, class Problem>
Status launch_unary_group(const Problem& problem) {
  return dispatch_unary<G, half, bfloat16>(problem.desc, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return unary_typed<typename decltype(math)::type, T>(
        problem, [](const auto& op, const auto& tensors) { return run_elementwise<T>(op, tensors); });
  });
}

template <int G>
Status launch_group(const LaunchContext&, const UnaryForwardProblem& problem) {
  return launch_unary_group<G>(problem);
}
template <int G>
Status launch_group(const LaunchContext&, const UnaryBackwardProblem& problem) {
  return launch_unary_group<G>(problem);
}

}  // namespace baracuda::detail::cpu

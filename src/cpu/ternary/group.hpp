#pragma once
// The CPU kernels of one group of ternary kinds: the shared dispatch with the CPU launchers. Each
// src/cpu/ternary/<group>.cpp instantiates launch_group for its group alone.
#include "cpu/elementwise.hpp"
#include "ops/ternary_problem.hpp"

namespace baracuda::detail::cpu {

// An elementwise pass whose first input has element type First (where's bool condition).
template <class T>
inline constexpr auto kTernaryPass = [](auto first, const auto& op, const auto& tensors) {
  return run_elementwise<T, T, typename decltype(first)::type>(op, tensors);
};

template <int G>
Status launch_group(const LaunchContext&, const TernaryForwardProblem& problem) {
  return dispatch_ternary<G, true, half, bfloat16>(problem.desc, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return ternary_typed<typename decltype(math)::type, T>(problem, kTernaryPass<T>);
  });
}

template <int G>
Status launch_group(const LaunchContext&, const TernaryBackwardProblem& problem) {
  return dispatch_ternary<G, false, half, bfloat16>(problem.desc, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return ternary_typed<typename decltype(math)::type, T>(
        problem, kTernaryPass<T>, [](auto, const auto& reduction) { return run_split_reduction(reduction); });
  });
}

}  // namespace baracuda::detail::cpu

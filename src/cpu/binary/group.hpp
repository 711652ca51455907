#pragma once
// The CPU kernels of one group of binary kinds: the shared dispatch with the CPU launchers. Each
// src/cpu/binary/<group>.cpp instantiates launch_group for its group alone.
#include "cpu/elementwise.hpp"
#include "ops/binary_problem.hpp"

namespace baracuda::detail::cpu {

template <int G>
Status launch_group(const LaunchContext&, const BinaryForwardProblem& problem) {
  return dispatch_binary_forward<G, half, bfloat16>(problem.desc, [&](auto math, auto element, auto first) {
    using T = typename decltype(element)::type;
    using Math = typename decltype(math)::type;
    using First = typename decltype(first)::type;
    using Out = math_output_t<Math, T>;
    return binary_typed<Math, T, First>(
        problem, [](const auto& op, const auto& tensors) { return run_elementwise<T, Out, First>(op, tensors); });
  });
}

template <int G>
Status launch_group(const LaunchContext&, const BinaryBackwardProblem& problem) {
  return dispatch_binary_backward<G, half, bfloat16>(problem.desc, [&](auto math, auto element) -> Status {
    using T = typename decltype(element)::type;
    return unless_predicate<typename decltype(math)::type>("BinaryBackwardPlan", [&](auto gradient_math) {
      using Math = typename decltype(gradient_math)::type;
      return binary_typed<Math, T>(
          problem, [](const auto& op, const auto& tensors) { return run_elementwise<T>(op, tensors); },
          [](const auto& reduction) { return run_split_reduction(reduction); });
    });
  });
}

}  // namespace baracuda::detail::cpu

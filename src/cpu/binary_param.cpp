// CPU kernels of the BinaryParam family: the shared dispatch with the CPU launchers.
#include "cpu/elementwise.hpp"
#include "ops/binary_param_problem.hpp"

namespace baracuda::detail::cpu {

Status launch(const LaunchContext&, const BinaryParamForwardProblem& problem) {
  return dispatch_binary_param<half, bfloat16>(problem, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return binary_param_forward_typed<typename decltype(math)::type, T>(
        problem, [](const auto& op, const auto& tensors) { return run_elementwise<T>(op, tensors); });
  });
}

Status launch(const LaunchContext&, const BinaryParamBackwardProblem& problem) {
  return dispatch_binary_param<half, bfloat16>(problem, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return binary_param_backward_typed<typename decltype(math)::type, T>(
        problem, [](const auto& op, const auto& tensors) { return run_elementwise<T>(op, tensors); },
        [](const auto& reduction) { return run_split_reduction(reduction); });
  });
}

}  // namespace baracuda::detail::cpu

// CPU kernels of the BinaryParam family: the shared dispatch with the CPU launchers.
#include "cpu/elementwise.hpp"

namespace baracuda::detail::cpu {

Status binary_param_forward(const BinaryParamForwardProblem& problem) {
  return dispatch_float<half, bfloat16>(problem.desc.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return binary_param_forward_typed<T>(
        problem, [](const auto& op, const auto& tensors) { return run_elementwise<T>(op, tensors); });
  });
}

Status binary_param_backward(const BinaryParamBackwardProblem& problem) {
  return dispatch_float<half, bfloat16>(problem.desc.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return binary_param_backward_typed<T>(
        problem, [](const auto& op, const auto& tensors) { return run_elementwise<T>(op, tensors); },
        [](const auto& reduction) { return run_split_reduction(reduction); });
  });
}

}  // namespace baracuda::detail::cpu

// CPU kernels of the BinaryParam family: the shared dispatch with the CPU launchers.
#include "cpu/elementwise.hpp"
#include "ops/binary_param_problem.hpp"

namespace baracuda::detail::cpu {

Status launch(const LaunchContext&, const BinaryParamForwardProblem& problem) {
  return dispatch_math(problem.math, [&](auto math) {
    using Math = typename decltype(math)::type;
    return dispatch_float<half, bfloat16>(problem.desc.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return binary_param_forward_typed<Math, T>(
          problem, [](const auto& op, const auto& tensors) { return run_elementwise<T>(op, tensors); });
    });
  });
}

Status launch(const LaunchContext&, const BinaryParamBackwardProblem& problem) {
  return dispatch_math(problem.math, [&](auto math) {
    using Math = typename decltype(math)::type;
    return dispatch_float<half, bfloat16>(problem.desc.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return binary_param_backward_typed<Math, T>(
          problem, [](const auto& op, const auto& tensors) { return run_elementwise<T>(op, tensors); },
          [](const auto& reduction) { return run_split_reduction(reduction); });
    });
  });
}

}  // namespace baracuda::detail::cpu

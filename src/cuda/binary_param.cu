// CUDA kernels of the BinaryParam family: the shared dispatch with the CUDA launchers.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/common/elementwise.cuh"
#include "cuda/runtime.hpp"

namespace baracuda::detail::cuda {

Status binary_param_forward(const Stream& stream, const BinaryParamForwardProblem& problem) {
  DeviceGuard guard(stream.device());
  const int sm_count = cuda_device_info(stream.device())->sm_count;
  return dispatch_float<__half, __nv_bfloat16>(problem.desc.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return binary_param_forward_typed<T>(problem, [&](const auto& op, const auto& tensors) {
      return run_elementwise<T>(stream, sm_count, op, tensors);
    });
  });
}

Status binary_param_backward(const Stream& stream, const BinaryParamBackwardProblem& problem) {
  DeviceGuard guard(stream.device());
  const int sm_count = cuda_device_info(stream.device())->sm_count;
  return dispatch_float<__half, __nv_bfloat16>(problem.desc.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return binary_param_backward_typed<T>(
        problem, [&](const auto& op, const auto& tensors) { return run_elementwise<T>(stream, sm_count, op, tensors); },
        [&](const auto& reduction) { return run_split_reduction(stream, sm_count, reduction); });
  });
}

}  // namespace baracuda::detail::cuda

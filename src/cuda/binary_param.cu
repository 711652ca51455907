// CUDA kernels of the BinaryParam family: the shared dispatch with the CUDA launchers.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/common/broadcast_reduction.cuh"
#include "cuda/common/elementwise.cuh"
#include "ops/binary_param_problem.hpp"

namespace baracuda::detail::cuda {

Status launch(const LaunchContext& ctx, const BinaryParamForwardProblem& problem) {
  return dispatch_binary_param<__half, __nv_bfloat16>(problem, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return binary_param_forward_typed<typename decltype(math)::type, T>(
        problem, [&](const auto& op, const auto& tensors) {
          return run_elementwise<T>(ctx.stream, ctx.target.sm_count, op, tensors);
        });
  });
}

Status launch(const LaunchContext& ctx, const BinaryParamBackwardProblem& problem) {
  const int sm_count = ctx.target.sm_count;
  return dispatch_binary_param<__half, __nv_bfloat16>(problem, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return binary_param_backward_typed<typename decltype(math)::type, T>(
        problem,
        [&](const auto& op, const auto& tensors) { return run_elementwise<T>(ctx.stream, sm_count, op, tensors); },
        [&](const auto& reduction) { return run_split_reduction(ctx.stream, sm_count, reduction); });
  });
}

}  // namespace baracuda::detail::cuda

#pragma once
// The CUDA kernels of one group of binary kinds: the shared dispatch with the CUDA launchers. Each
// src/cuda/binary/<group>.cu instantiates launch_group for its group alone.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/common/broadcast_reduction.cuh"
#include "cuda/common/elementwise_transposed.cuh"
#include "ops/binary_problem.hpp"

namespace baracuda::detail::cuda {

template <int G>
Status launch_group(const LaunchContext& ctx, const BinaryForwardProblem& problem) {
  return dispatch_binary_forward<G, __half, __nv_bfloat16>(problem.desc, [&](auto math, auto element, auto first) {
    using T = typename decltype(element)::type;
    using Math = typename decltype(math)::type;
    using First = typename decltype(first)::type;
    using Out = math_output_t<Math, T>;
    return binary_typed<Math, T, First>(problem, [&](const auto& op, const auto& tensors) {
      // The transposed path: the arithmetic kinds only (ops/binary.cpp offers it to them alone).
      if constexpr (G == kBinaryArith)
        if (tensors.path == ElementwisePath::transposed)
          return run_elementwise_transposed<T, Out, First>(ctx.stream, op, tensors);
      return run_elementwise<T, Out, First>(ctx.stream, ctx.target.sm_count, op, tensors);
    });
  });
}

template <int G>
Status launch_group(const LaunchContext& ctx, const BinaryBackwardProblem& problem) {
  const int sm_count = ctx.target.sm_count;
  return dispatch_binary_backward<G, __half, __nv_bfloat16>(problem.desc, [&](auto math, auto element) -> Status {
    using T = typename decltype(element)::type;
    return unless_predicate<typename decltype(math)::type>("BinaryBackwardPlan", [&](auto gradient_math) {
      using Math = typename decltype(gradient_math)::type;
      return binary_typed<Math, T>(
          problem,
          [&](const auto& op, const auto& tensors) { return run_elementwise<T>(ctx.stream, sm_count, op, tensors); },
          [&](const auto& reduction) { return run_split_reduction(ctx.stream, sm_count, reduction); });
    });
  });
}

}  // namespace baracuda::detail::cuda

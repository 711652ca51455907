#pragma once
// The CUDA kernels of one group of ternary kinds: the shared dispatch with the CUDA launchers. Each
// src/cuda/ternary/<group>.cu instantiates launch_group for its group alone.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/common/broadcast_reduction.cuh"
#include "cuda/common/elementwise.cuh"
#include "ops/ternary_problem.hpp"

namespace baracuda::detail::cuda {

template <int G>
Status launch_group(const LaunchContext& ctx, const TernaryForwardProblem& problem) {
  return dispatch_ternary<G, true, __half, __nv_bfloat16>(problem.desc, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return ternary_typed<typename decltype(math)::type, T>(problem, [&](auto first, const auto& op, const auto& t) {
      return run_elementwise<T, T, typename decltype(first)::type>(ctx.stream, ctx.target.sm_count, op, t);
    });
  });
}

template <int G>
Status launch_group(const LaunchContext& ctx, const TernaryBackwardProblem& problem) {
  const int sm_count = ctx.target.sm_count;
  return dispatch_ternary<G, false, __half, __nv_bfloat16>(problem.desc, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return ternary_typed<typename decltype(math)::type, T>(
        problem,
        [&](auto first, const auto& op, const auto& t) {
          return run_elementwise<T, T, typename decltype(first)::type>(ctx.stream, sm_count, op, t);
        },
        [&](auto, const auto& reduction) { return run_split_reduction(ctx.stream, sm_count, reduction); });
  });
}

}  // namespace baracuda::detail::cuda

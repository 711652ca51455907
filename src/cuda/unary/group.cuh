#pragma once
// The CUDA kernels of one group of unary kinds: the shared dispatch with the CUDA elementwise
// launcher. Each src/cuda/unary/<group>.cu instantiates launch_group for its group alone.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/common/elementwise.cuh"
#include "ops/unary_problem.hpp"

namespace baracuda::detail::cuda {

template <int G, class Problem>
Status launch_unary_group(const LaunchContext& ctx, const Problem& problem) {
  return dispatch_unary<G, __half, __nv_bfloat16>(problem.desc, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return unary_typed<typename decltype(math)::type, T>(problem, [&](const auto& op, const auto& tensors) {
      return run_elementwise<T>(ctx.stream, ctx.target.sm_count, op, tensors);
    });
  });
}

template <int G>
Status launch_group(const LaunchContext& ctx, const UnaryForwardProblem& problem) {
  return launch_unary_group<G>(ctx, problem);
}
template <int G>
Status launch_group(const LaunchContext& ctx, const UnaryBackwardProblem& problem) {
  return launch_unary_group<G>(ctx, problem);
}

}  // namespace baracuda::detail::cuda

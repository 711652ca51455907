#pragma once
// The CUDA kernels of one group of unary kinds: the shared dispatch with the CUDA elementwise
// launcher. Each src/cuda/unary/<group>.cu instantiates launch_group for its group alone.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/common/elementwise.cuh"
#include "ops/unary_problem.hpp"

namespace baracuda::detail::cuda {

template <int G>
Status launch_group(const LaunchContext& ctx, const UnaryForwardProblem& problem) {
  return dispatch_unary<G, true, __half, __nv_bfloat16>(problem.desc, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    using Math = typename decltype(math)::type;
    using Out = math_output_t<Math, T>;
    return unary_typed<Math, T>(problem, [&](const auto& op, const auto& tensors) {
      return run_elementwise<T, Out>(ctx.stream, ctx.target.sm_count, op, tensors);
    });
  });
}
template <int G>
Status launch_group(const LaunchContext& ctx, const UnaryBackwardProblem& problem) {
  return dispatch_unary<G, false, __half, __nv_bfloat16>(problem.desc, [&](auto math, auto element) -> Status {
    using T = typename decltype(element)::type;
    return unless_predicate<typename decltype(math)::type>("UnaryBackwardPlan", [&](auto gradient_math) {
      using Math = typename decltype(gradient_math)::type;
      return unary_typed<Math, T>(problem, [&](const auto& op, const auto& tensors) {
        return run_elementwise<T>(ctx.stream, ctx.target.sm_count, op, tensors);
      });
    });
  });
}

}  // namespace baracuda::detail::cuda

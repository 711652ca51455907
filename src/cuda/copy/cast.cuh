#pragma once
// The CUDA casts from one set of x's dtypes (floats, or integers and bool) to every dtype: the cast
// functor through the shared elementwise launchers, the transposed one included (x.t().contiguous()).
// cast_float.cu and cast_integer.cu instantiate one set each.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "cuda/common/elementwise_transposed.cuh"
#include "ops/copy_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {

template <bool kFromFloat>
Status launch_cast(const LaunchContext& ctx, const CastProblem& problem) {
  if (is_floating(problem.desc.dtype) != kFromFloat)
    return Status::error(StatusCode::invalid_problem, "cast: x's dtype is not in this translation unit's set");
  return dispatch_any<__half, __nv_bfloat16>(problem.desc.dtype, [&](auto in) {
    using In = typename decltype(in)::type;
    if constexpr (is_float_like_v<In> != kFromFloat) {
      return Status::ok();  // not reached: checked above
    } else {
      return dispatch_any<__half, __nv_bfloat16>(problem.desc.out_dtype, [&](auto out) {
        using Out = typename decltype(out)::type;
        const CastFunctor<cast_acc_t<In>> op;
        if (problem.path == ElementwisePath::transposed)
          return run_elementwise_transposed<In, Out>(ctx.stream, op, cast_tensors(problem));
        return run_elementwise<In, Out>(ctx.stream, ctx.target.sm_count, op, cast_tensors(problem));
      });
    }
  });
}

}  // namespace baracuda::detail::cuda

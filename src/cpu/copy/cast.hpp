#pragma once
// The CPU casts from one set of x's dtypes (floats, or integers and bool) to every dtype: the cast
// functor through the shared CPU elementwise launcher. cast_float.cpp and cast_integer.cpp
// instantiate one set each.
#include "cpu/elementwise.hpp"
#include "ops/copy_problem.hpp"

namespace baracuda::detail::cpu {

template <bool kFromFloat>
Status launch_cast(const CastProblem& problem) {
  if (is_floating(problem.desc.dtype) != kFromFloat)
    return Status::error(StatusCode::invalid_problem, "cast: x's dtype is not in this translation unit's set");
  return dispatch_any<half, bfloat16>(problem.desc.dtype, [&](auto in) {
    using In = typename decltype(in)::type;
    if constexpr (is_float_like_v<In> != kFromFloat) {
      return Status::ok();  // not reached: checked above
    } else {
      return dispatch_any<half, bfloat16>(problem.desc.out_dtype, [&](auto out) {
        using Out = typename decltype(out)::type;
        return run_elementwise<In, Out>(CastFunctor<cast_acc_t<In>>{}, cast_tensors(problem));
      });
    }
  });
}

}  // namespace baracuda::detail::cpu

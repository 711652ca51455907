#pragma once
// What the norm families' CPU kernels (norm, group_norm, batch_norm) share: a value loaded into the
// compute type by the library's one conversion, and the dispatch over the data's type T and the
// weight's W (T, or f32 beside 16-bit or f64 data).
#include <cstdint>
#include <type_traits>

#include "common/convert.hpp"
#include "common/dispatch.hpp"

namespace baracuda::detail::cpu::norms {

template <class Acc, class T>
Acc load(const T* p, int64_t i) {
  return convert<Acc>(p[i]);
}

// Calls f(type_identity<T>, type_identity<W>) for the problem's desc.dtype and weight_dtype.
template <class Problem, class F>
Status dispatch(const Problem& p, F&& f) {
  return dispatch_float<half, bfloat16>(p.desc.dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    if (p.weight_dtype == DType::f32 && !std::is_same_v<T, float>) return f(t, std::type_identity<float>{});
    return f(t, t);
  });
}

}  // namespace baracuda::detail::cpu::norms

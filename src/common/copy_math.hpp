#pragma once
// The copy family's functors (cast, fill), each element converted by common/convert.hpp. Read by
// both backends and by NVRTC (the kernels compiled at select).
#include "common/convert.hpp"
#include "common/elementwise.hpp"
#include "common/portable.hpp"

namespace baracuda::detail {

// A cast's compute type: x's own, but f32 for the 16-bit floats (their values are exact in it).
template <class In>
using cast_acc_t = std::conditional_t<is_16bit_float_v<In>, float, In>;

template <class Acc_>
struct CastFunctor {
  using Acc = Acc_;
  static constexpr int kIn = 1, kOut = 1;
  static constexpr ElementCost kCost = ElementCost::arithmetic;
  BARACUDA_HD void operator()(const Acc (&x)[1], Acc (&y)[1]) const { y[0] = x[0]; }
};

// y = value, already in y's type (converted once, on the host).
template <class Out>
struct FillFunctor {
  using Acc = Out;
  static constexpr int kIn = 0, kOut = 1;
  Out value;
  BARACUDA_HD void operator()(const Acc (&)[1], Acc (&y)[1]) const { y[0] = value; }
};

}  // namespace baracuda::detail

#pragma once
// Copies: the cast between any two dtypes, which with one dtype is the strided copy (contiguous(),
// a transpose made contiguous, broadcast expansion, copy_ between any views), and the fill.
//   CastPlan   y = x converted to out_dtype   (Tensor.to(dtype), Tensor.copy_, lax.convert_element_type)
//   FillPlan   y = value                      (Tensor.fill_, torch.full)
//
// dtypes: any of f16, bf16, f32, f64, i8, u8, i32, i64, bool, to any of them. The conversion rules
// (the same on both backends, src/common/convert.hpp):
//   - to a float: round to nearest even, once (f64 and 32- / 64-bit integers to f16 / bf16 too: not
//     through a rounded f32, as PyTorch does, so no double rounding); past the largest finite value
//     +-inf; NaN stays NaN; +-0 and subnormals kept (no flush to zero);
//   - float to integer: toward zero, saturating at the integer's range; NaN gives 0 (PyTorch
//     leaves both undefined: its CUDA kernels saturate as here, its CPU ones differ by platform);
//   - integer to integer: two's complement wrap, as C++ and PyTorch;
//   - to bool: x != 0 (NaN is true); bool to any: 0 or 1. A bool element is a byte holding 0 or 1.
// The backward of a cast is the cast back (a CastPlan with dtype and out_dtype swapped), as PyTorch's
// autograd gives it; where x was broadcast, sum that over its broadcast dims (ReducePlan).
//
// Views: y has `shape` and may be strided but must not overlap itself; x has `shape` too and may be
// strided and broadcast (zero strides: x.expand(...).contiguous()). y may be x exactly where the
// dtypes match (a copy onto itself); any other overlap is an error naming y. Variants as the unary plans'
// (`vectorized`, `contiguous`, `strided`, `strided_vectorized`) and, on CUDA, `transpose` (a tile through shared memory
// where x's unit-stride dim is not y's: x.t().contiguous()); the SKU's variant names the dtypes
// ("vectorized.f32_to_bf16").
#include <optional>

#include "baracuda/core/plan.hpp"

namespace baracuda {

struct CastDescriptor {
  DType dtype = DType::f32;      // x's
  DType out_dtype = DType::f32;  // y's
  Shape shape;
};

struct CastArgs {
  AnyTensorRef x;
  AnyTensorMut y;  // overwritten
};

struct FillDescriptor {
  DType dtype = DType::f32;
  Shape shape;
  // The value, converted to dtype by the rules above. NaN and +-inf are errors for an integer dtype,
  // as is a finite value outside the dtype's range (PyTorch's "cannot be converted without
  // overflow"); a fraction is truncated for an integer dtype.
  double value = 0.0;
  // An integer value taken exactly (i64 values past 2^53); when set, `value` is ignored.
  std::optional<int64_t> integer_value{};
};

struct FillArgs {
  AnyTensorMut y;  // overwritten
};

struct CastOp : OpTag<CastDescriptor, CastArgs> {};
struct FillOp : OpTag<FillDescriptor, FillArgs> {};

using CastPlan = Plan<CastOp>;
using FillPlan = Plan<FillOp>;

}  // namespace baracuda

#pragma once
// Ternary elementwise ops: out = f(a, b, c) for every element of a, b and c broadcast against each
// other (NumPy's rules: shapes right-aligned, size-1 dims stretched, rank 0..8), `descriptor.kind`
// picking f. Any operand but where's condition may be a scalar in the descriptor instead of a tensor
// (addcdiv's are tensors alone, as torch.addcdiv's).
//   kind      out                       as
//   where     a ? b : c                 torch.where(cond, x, y); a (the condition) has dtype bool
//   clamp     min(max(a, b), c)         torch.clamp(x, min, max): b the lower bound, c the upper
//   addcdiv   a + value (b / c)         torch.addcdiv(a, b, c, value=value) (floats alone, as PyTorch)
// (lerp and addcmul, a + w b with w a scalar or a broadcast tensor, are the BinaryParam plans.)
// clamp, as PyTorch's: NaN in a, b or c gives NaN (a's first, then b's, then c's); where b > c the
// result is c. A missing bound is a scalar -inf (b) or +inf (c): clamp(x, max=m) is b_scalar = -inf.
//
// The backward reads dout, a, b and c and writes da, db and dc (each optional: leave it empty and it
// is not computed; where's condition has none), each summed over the dims its operand was broadcast
// along in a fixed split order (`broadcast_reduce`: deterministic, no atomics). The gradients are
// PyTorch's autograd's, also where f is not differentiable:
//   where     db = a ? dout : 0,  dc = a ? 0 : dout
//   clamp     da = dout where b <= a <= c (0 where a is NaN), db = dout where a < b and b < c,
//             dc = dout where a > c or c < b (so b = c sends the gradient to a, or to the bound a passed)
//   addcdiv   da = dout, db = value dout / c, dc = -(value dout / c) b / c
//
// dtypes f32, f64, f16, bf16 (a, b, c, out and the gradients share it; where's a is bool); compute
// in f32 for 16-bit types and f32, f64 for f64; a scalar operand is held in the compute type. Every
// view may be strided or broadcast (zero strides); out may be an input exactly (in place, x.clamp_())
// where that input has the output's shape, and da / db / dc may be dout exactly unless an operand
// broadcasts (its gradient is reduced from dout after the others are written); any other overlap of
// an output is an error naming it.
#include "baracuda/core/plan.hpp"
#include "baracuda/ops/ternary_kind.hpp"

namespace baracuda {

struct TernaryDescriptor {
  TernaryKind kind = TernaryKind::where;
  DType dtype = DType::f32;          // of b, c, out and the gradients, and of a but for where (bool)
  Shape a_shape, b_shape, c_shape;   // each ignored where its operand is a scalar
  std::optional<double> a_scalar{};  // a is this number, not a tensor (never where's condition)
  std::optional<double> b_scalar{};
  std::optional<double> c_scalar{};
  double value = 1.0;  // a parameter of the kind: addcdiv's scale (where and clamp ignore it)
};

struct TernaryArgs {
  AnyTensorRef a;  // unused where its operand is a scalar; where's condition: bool
  AnyTensorRef b;
  AnyTensorRef c;
  AnyTensorMut out;
};

struct TernaryBackwardArgs {
  AnyTensorRef dout;
  AnyTensorRef a;
  AnyTensorRef b;
  AnyTensorRef c;
  AnyTensorMut da;  // a_shape, overwritten; optional (null: not computed); unused where a is a scalar
  AnyTensorMut db;
  AnyTensorMut dc;
};

struct TernaryOp : OpTag<TernaryDescriptor, TernaryArgs> {};
struct TernaryBackwardOp : OpTag<TernaryDescriptor, TernaryBackwardArgs> {};

using TernaryPlan = Plan<TernaryOp>;
using TernaryBackwardPlan = Plan<TernaryBackwardOp>;

// Whether TernaryPlan takes the kind at `dtype` (TernaryBackwardPlan: at a float dtype).
bool ternary_kind_takes(TernaryKind kind, DType dtype);

// "where", "clamp": the kind's name (SKUs and errors say it); "?" for a value that is no kind.
std::string_view ternary_kind_name(TernaryKind kind);

// The shape of out: a's, b's and c's broadcast (a scalar operand counts as rank 0); nullopt where a
// dim of size != 1 meets a different size.
std::optional<Shape> ternary_output_shape(const TernaryDescriptor& desc);

}  // namespace baracuda

#pragma once
// Binary elementwise ops: out = f(a, b) with a and b broadcast against each other by NumPy's rules
// (shapes right-aligned, a size-1 dim stretched), `descriptor.kind` picking f; and the backward,
// which gives da and db, each summed over the dims its operand was broadcast along in a fixed order
// (deterministic, no atomics). One plan pair for every kind:
//   BinaryPlan           out = f(a, b)
//   BinaryBackwardPlan   da = sum(dout * df/da), db = sum(dout * df/db)   (reads dout, a and b)
//
// Kinds (PyTorch's names; torch.<kind>):
//   add(alpha)  a + alpha b          sub(alpha)  a - alpha b         mul        a b
//   div         a / b (true)         div_floor   floor(a / b)        div_trunc  trunc(a / b)
//               (torch.div's rounding_mode "floor" and "trunc", torch.floor_divide)
//   remainder   a - floor(a / b) b (sign of b, Python's %)           fmod       C's fmod (sign of a)
//   pow         a^b                  atan2       atan2(a, b)         hypot      sqrt(a^2 + b^2)
//   maximum minimum (NaN propagates) fmax fmin (NaN ignored: the other operand)
//   copysign    |a| with b's sign    logaddexp   log(e^a + e^b)      xlogy      a log(b), 0 where a == 0
// Predicates, whose out is bool (torch.eq, ..., torch.logical_and): eq ne lt le gt ge (IEEE: any
// comparison with NaN is false but ne, which is true; -0 == +0), logical_and logical_or logical_xor
// (an operand is true where it is not 0: NaN is true). They have no gradient (BinaryBackwardPlan
// rejects them, naming descriptor.kind), as PyTorch's autograd gives bool outputs none.
// Bitwise, on integers and bool alone (torch.bitwise_and, ..., torch.bitwise_left_shift):
//   bitwise_and bitwise_or bitwise_xor (on bool: the logical ones)    shift_left shift_right  a << b, a >> b
// Mixed dtypes: `b_dtype`, b's dtype where it differs from a's; both compute in their promotion
// (promote_types: PyTorch's rules), out has it (a predicate's: bool).
//
// Operands: each of a and b is a tensor of its own shape (`a_shape`, `b_shape`), or a scalar held in
// the descriptor (`a_scalar` / `b_scalar` set: x + 2, 2 ** x); the output has the broadcast shape
// (binary_output_shape). A scalar operand has no gradient.
// dtypes: f32, f64, f16, bf16 (16-bit compute in f32, f64 in f64) for every kind but the bitwise
// ones. Forward on integers (PyTorch's integer tensor ops; no gradient): i8 u8 i32 i64 for add sub
// mul div div_floor div_trunc remainder fmod pow maximum minimum fmax fmin, the predicates and the
// bitwise kinds, and bool for add (or) mul (and) maximum minimum fmax fmin, the predicates and
// bitwise and / or / xor. i8, u8 and i32 compute in int32, i64 in int64, and every result wraps to
// its dtype (two's complement, as PyTorch); div of integers is true division, its out f32 (the
// operands converted to f32 first).
// Every tensor shares the dtype (b and db b_dtype's, where set) but out, which is
// binary_output_dtype: bool for a predicate, f32 for div of integers. An integer dtype's scalar
// operands and alpha must be whole numbers within its range (bool's: 0 or 1), else select fails
// naming the field.
// Integer edge values, defined (never a trap): div_floor, div_trunc, remainder and fmod by 0 give 0
// (NumPy's); the most negative value divided by -1 wraps to itself, its remainder 0; pow wraps as
// repeated products do, and a negative exponent gives the real power truncated (1 for a = 1, +-1
// for a = -1, else 0, 0 too: PyTorch's for a tensor exponent; PyTorch raises for a negative scalar
// one, here it truncates the same way); a shift by a negative count or by at least the compute
// type's width (32 bits for i8 u8 i32, 64 for i64) gives 0 to the left and the sign (0 or -1) to the
// right; past the dtype's own width the result is that as well (u8 >> is logical).
// Views: any strides; inputs may broadcast (zero strides); outputs must not overlap themselves.
// out may be a or b exactly (in place, as a.add_(b)) where that operand has the output's shape; da
// and db may be dout exactly, unless a or b broadcasts (its gradient is reduced from dout after the
// other is written). Any other overlap of an output with an input is an error naming it.
// The backward's da and db are optional: leave one empty (data null) and it is not computed.
//
// Edge values follow PyTorch: maximum / minimum of a NaN is NaN; fmax / fmin return the other
// operand; div by 0 is +-inf or NaN (IEEE); div_floor / div_trunc by 0 give a / b (+-inf, NaN);
// remainder and fmod by 0 are NaN; xlogy(0, b) = 0 unless b is NaN; pow(0, 0) = 1.
// Gradients where f is not differentiable, as PyTorch's autograd gives them:
//   maximum / minimum: a tie splits dout in halves; fmax / fmin: a tie sends it all to a;
//   div_floor, div_trunc: 0 for both; remainder: da = dout, db = -dout floor(a / b); fmod:
//   db = -dout trunc(a / b); copysign: da = +-dout, the sign of copysign(a, b) / a (0 at a = 0; also
//   at a = +-inf, where PyTorch's ratio gives NaN), db = 0;
//   pow: da = 0 where b == 0, db = 0 where a == 0 and b >= 0; hypot(0, 0): NaN (0 / 0);
//   xlogy: da = dout log(b), 0 where a == 0 and b <= 0.
#include <optional>

#include "baracuda/core/plan.hpp"
#include "baracuda/ops/binary_kind.hpp"

namespace baracuda {

// Whether out is bool (a comparison or a logical op): those kinds have no backward.
constexpr bool binary_kind_is_predicate(BinaryKind kind) { return kind >= BinaryKind::eq; }
// Whether the kind's gradients read a and b: add's and sub's are dout's alone (times alpha), so their
// BinaryBackwardPlan ignores a and b (ArgSpec::present false: they may be left empty).
constexpr bool binary_gradient_reads_operands(BinaryKind kind) {
  return kind != BinaryKind::add && kind != BinaryKind::sub;
}

struct BinaryDescriptor {
  BinaryKind kind = BinaryKind::add;
  DType dtype = DType::f32;
  Shape a_shape;                     // ignored where a_scalar is set
  Shape b_shape;                     // ignored where b_scalar is set
  std::optional<double> a_scalar{};  // a is this number, not a tensor (then a_shape is ignored)
  std::optional<double> b_scalar{};
  // b's dtype where it differs from `dtype` (a's). a and b are then computed in promote_types(dtype,
  // b_dtype), which out has (bool for a predicate, f32 for div of integers), as PyTorch's type
  // promotion: an i32 index plus an f32 tensor gives f32, a bf16 activation plus an f32 residual f32,
  // f16 with bf16 f32, u8 with i32 i32. Both operands must be tensors, the kind must take the promoted
  // dtype, and u8 with i8 (i16) is unsupported; each is an error naming this field.
  // The forward of f16 or bf16 with f32 loads the 16-bit operand in its kernels (no extra pass); any
  // other pair first casts the operand of the other dtype into the workspace (workspace_size() says how
  // much: its element count in the promoted dtype). The backward takes float pairs: dout has the
  // promoted dtype, da and db their operands' (computed in the promoted dtype, cast back through the
  // workspace).
  std::optional<DType> b_dtype{};
  // The scalar operand's own dtype, as PyTorch types a Python number: it joins the promotion only when
  // of a higher category than the tensor's (promote_with_scalar: an integer tensor + 2.5 computes in
  // f32, a bool tensor + 3 in i64; an f16 tensor * 2.5 stays f16). The tensor is then cast into the
  // workspace first, as for b_dtype. Unset: the scalar takes the tensor's dtype (and must be whole
  // and in range for an integer one). Set without a scalar operand: an error naming this field.
  std::optional<DType> scalar_dtype{};
  double alpha = 1.0;  // add and sub: a +- alpha b (torch.add(a, b, alpha=...)); the other kinds ignore it
};

struct BinaryArgs {
  AnyTensorRef a;  // unused where a_scalar is set
  AnyTensorRef b;  // unused where b_scalar is set
  AnyTensorMut out;
};

struct BinaryBackwardArgs {
  AnyTensorRef dout;
  AnyTensorRef a;   // unused (may be left empty) where a_scalar is set or the kind is add or sub
  AnyTensorRef b;   // (binary_gradient_reads_operands)
  AnyTensorMut da;  // a_shape, overwritten; optional (null: not computed); unused where a_scalar is set
  AnyTensorMut db;
};

struct BinaryOp : OpTag<BinaryDescriptor, BinaryArgs> {};
struct BinaryBackwardOp : OpTag<BinaryDescriptor, BinaryBackwardArgs> {};

using BinaryPlan = Plan<BinaryOp>;
using BinaryBackwardPlan = Plan<BinaryBackwardOp>;

// Whether BinaryPlan takes the kind at `dtype` (BinaryBackwardPlan: at a float dtype, where this is
// true and the kind is no predicate).
bool binary_kind_takes(BinaryKind kind, DType dtype);

// The dtype a and b compute in: descriptor.dtype, or its promotion with b_dtype (promote_types) or
// with scalar_dtype (promote_with_scalar).
DType binary_operand_dtype(const BinaryDescriptor& desc);
// out's dtype: bool for a predicate, f32 for div of integers, else binary_operand_dtype.
DType binary_output_dtype(const BinaryDescriptor& desc);

// "add", "div_floor": the kind's name (SKUs and errors say it); "?" for a value that is no kind.
std::string_view binary_kind_name(BinaryKind kind);

// The shape of out: a's and b's broadcast (a scalar operand counts as rank 0); nullopt where a dim
// of size != 1 meets a different size.
std::optional<Shape> binary_output_shape(const BinaryDescriptor& desc);

}  // namespace baracuda

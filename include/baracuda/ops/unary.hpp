#pragma once
// Unary elementwise ops: out = f(x; parameters) for every element, `descriptor.kind` picks f; and the
// backward, dx = dout * f'(x). One plan pair for every kind:
//   UnaryPlan           out = f(x)
//   UnaryBackwardPlan   dx = dout * f'(x)        (reads dout and x: no saved output)
//
// Kinds (PyTorch's names; each is torch.<kind> or torch.nn.functional.<kind>):
//   math:        abs neg sign reciprocal square sqrt rsqrt exp exp2 expm1 log log2 log10 log1p
//                sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh erf erfc erfinv
//                lgamma floor ceil round (half to even, torch.round) trunc frac (x - trunc(x))
//   activations: relu relu6 leaky_relu(negative_slope) elu(alpha) selu celu(alpha) gelu
//                gelu_tanh (F.gelu(x, approximate="tanh")) silu mish softplus(beta, threshold)
//                softsign sigmoid logsigmoid hardtanh(min_val, max_val) hardsigmoid hardswish
//   predicates:  isnan isinf isfinite signbit logical_not (x == 0), whose out is bool; they have no
//                backward (UnaryBackwardPlan rejects them, naming descriptor.kind). signbit(-0) and
//                signbit(-NaN) are true (not for f16 on the GPU, whose conversion drops a NaN's
//                sign); logical_not(NaN) is false (NaN is not 0).
//   bitwise:     bitwise_not (~x; on bool, logical not), on integers and bool alone.
//
// On the GPU, f16 and bf16 sigmoid and silu (and gelu's gradient's exp) use the hardware's
// approximate exp and reciprocal (a few f32 ulp, far below a 16-bit ulp; results under 2^-126 in
// magnitude are 0).
// dtypes: f32, f64, f16, bf16 (16-bit compute in f32, f64 in f64; x, out, dout and dx share it, but a
// predicate's out, which is bool) for every kind but bitwise_not. Forward on integers (no gradient):
// i8 u8 i32 i64 for abs neg sign square relu and floor ceil round trunc (the identity on an
// integer, as PyTorch's), and those and bool for bitwise_not and the predicates (isnan and isinf
// false, isfinite true, signbit x < 0). i8, u8 and i32 compute in int32, i64 in int64; the
// results wrap to the dtype as PyTorch's (abs and neg of the most negative value give it back; neg of
// a u8 is 256 - x).
// Views: any strides; x and dout may broadcast (zero strides); out and dx must not overlap
// themselves. out may be x exactly (in place, as x.exp_()), and dx may be dout or x exactly; any
// other overlap of an output with an input is an error naming the output.
//
// Edge values follow PyTorch: sign(NaN) = 0; relu, relu6, hardtanh, hardsigmoid, hardswish and the
// other activations propagate NaN; frac(+-inf) = NaN; round ties go to even.
// Gradients where f is not differentiable, as PyTorch's autograd gives them:
//   abs'(0) = 0; sign, floor, ceil, round, trunc: 0 everywhere; frac' = 1;
//   relu'(0) = 0, relu'(NaN) = 1 (dout passes, as PyTorch's threshold_backward); relu6 and hardtanh: 0 at (and outside)
//   both bounds; leaky_relu'(0) = negative_slope; elu'(0) = alpha, celu'(0) = 1, selu'(0) = scale * alpha (the x <= 0
//   branch); hardsigmoid: 0 at and outside +-3; hardswish: 0 below -3, x / 3 + 1/2 on [-3, 3] (so -1/2 at -3 and 3/2 at
//   3), 1 above 3; softplus: 1 where beta x > threshold; sqrt'(0) = +inf, rsqrt'(0) and reciprocal'(0) infinite,
//   log'(0) = +inf (the formulas' values); lgamma' = digamma: +-inf at -+0, NaN at the negative integers.
// One departure: gelu_tanh's gradient is (1 + tanh) / 2 where tanh has saturated, also where x^3
// overflows the compute type (PyTorch's formula gives NaN there, e.g. at x = 1e30 in f32).
#include "baracuda/core/plan.hpp"
#include "baracuda/ops/unary_kind.hpp"

namespace baracuda {

// Whether out is bool: those kinds have no backward.
constexpr bool unary_kind_is_predicate(UnaryKind kind) { return kind >= UnaryKind::isnan; }

// The parameters of the kinds that take some (PyTorch's names and defaults); the other kinds ignore
// them. select rejects a parameter the kind reads that is NaN, softplus's beta == 0 (it divides by it;
// a negative beta is taken, as PyTorch does), celu's alpha == 0 (PyTorch rejects it) and hardtanh's min_val > max_val.
struct UnaryParameters {
  double negative_slope = 0.01;  // leaky_relu
  double alpha = 1.0;            // elu, celu
  double beta = 1.0;             // softplus: log(1 + exp(beta x)) / beta, x where beta x > threshold
  double threshold = 20.0;       // softplus
  double min_val = -1.0;         // hardtanh
  double max_val = 1.0;          // hardtanh
};

struct UnaryDescriptor {
  UnaryKind kind = UnaryKind::relu;
  DType dtype = DType::f32;
  Shape shape;
  UnaryParameters parameters{};
};

struct UnaryArgs {
  AnyTensorRef x;
  AnyTensorMut out;
};

struct UnaryBackwardArgs {
  AnyTensorRef dout;
  AnyTensorRef x;
  AnyTensorMut dx;  // overwritten
};

struct UnaryOp : OpTag<UnaryDescriptor, UnaryArgs> {};
struct UnaryBackwardOp : OpTag<UnaryDescriptor, UnaryBackwardArgs> {};

using UnaryPlan = Plan<UnaryOp>;
using UnaryBackwardPlan = Plan<UnaryBackwardOp>;

// Whether UnaryPlan takes the kind at `dtype` (UnaryBackwardPlan: at a float dtype, where this is
// true and the kind is no predicate).
bool unary_kind_takes(UnaryKind kind, DType dtype);

// "exp", "gelu_tanh": the kind's name (SKUs and errors say it); "?" for a value that is no kind.
std::string_view unary_kind_name(UnaryKind kind);

}  // namespace baracuda

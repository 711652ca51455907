#pragma once
// The reduction family: one value (and, for the arg-kinds, one index) per output element, over any
// set of dims of a tensor of rank 0..8, forward and backward, one plan pair whose descriptor's
// `kind` picks the reduction (torch.sum / mean / prod / amax / amin / max / min / argmax / argmin /
// var / std / var_mean / linalg.vector_norm / logsumexp / any / all / count_nonzero over `dim=`,
// keepdim or not).
//
//   kind            out dtype           value                       backward (dx from dy)
//   sum             x's (or f32)        sum x                       dy
//                   integer x: i64 (or x's)
//   mean            x's (or f32)        sum x / n                   dy / n
//   prod            as sum's            prod x                      dy * prod of the others (exact with zeros)
//   amax, amin      x's (or f32)        max / min x                 dy / (ties) at every element equal to out
//   max, min        x's (or f32)        max / min x, and `indices`  dy at the element `indices` names
//   argmax, argmin  index_dtype         `indices` only              none
//   var             x's (or f32)        sum (x - mean)^2 / (n - correction)   2 dy (x - mean) / (n - correction)
//   std             x's (or f32)        sqrt(var)                   dy (x - mean) / ((n - correction) std)
//   var_mean        x's (or f32)        var, and the mean in `mean` 2 dy (x - mean) / (n - correction) + dmean / n
//                                       (one pass: torch.var_mean)  (dmean empty: that term is 0)
//   norm            x's (or f32)        (sum |x|^p)^(1/p); p = inf: max |x|, -inf: min |x|, 0: count of x != 0
//                                       dy sign(x) |x|^(p-1) / out^(p-1) (0 where out is 0; inf: split among ties)
//   logsumexp       x's (or f32)        log sum exp x (shifted by the max: 1e30 does not overflow)   dy exp(x - out)
//   any, all        bool                some / every x != 0 (NaN counts as nonzero)                  none
//   count_nonzero   i64                 how many x != 0                                              none
//
// dtypes: f32, f64, f16, bf16 for every kind; i32 and i64 for sum, prod, amax, amin, max, min,
// argmax, argmin, any, all and count_nonzero (as PyTorch, which refuses the mean or var of integers; an
// integer sum or product is i64 unless out_dtype asks for x's own, as jnp.sum keeps it; an f32 out
// is for floating x); bool for any, all and count_nonzero. The backward takes the floating dtypes
// alone (integers have no gradient): ReduceBackwardPlan refuses the others naming descriptor.dtype.
//
// Indices (max, min, argmax, argmin) count along the reduced dims in row-major order (for one dim,
// PyTorch's index along it); ties give the first index, and a NaN is greater than everything (the
// first NaN wins, as PyTorch's max / argmax). `dims` lists the reduced dims (negative counts from the
// end; no repeats); an empty list reduces every dim (torch.sum(x), jnp.sum(x)). With keepdim the
// output has x's rank with size 1 at every reduced dim; without, the reduced dims are dropped.
//
// Numerics: 16-bit and f32 inputs compute and accumulate in f32, f64 in f64; integers and bools in
// int64, exactly: sums and products wrap as two's complement (at 64 bits, then at 32 for an i32 out),
// as PyTorch's and JAX's do. NaN propagates through sum, mean, prod, amax/amin, max/min, var, std,
// var_mean, norm (p != 0: norm's p = 0 counts a NaN as nonzero, as PyTorch) and logsumexp; logsumexp
// of a row of -inf is -inf, and of a row with +inf is +inf. Gradients follow their formulas: var /
// std of a row holding an infinity give NaN (PyTorch: +-inf), std of a constant row 0 / 0 = NaN (as
// PyTorch). On the GPU, var's f32 running mean divides with the approximate (2 ulp) division. Over
// an empty reduced set: sum 0, prod 1, mean, var and std NaN, logsumexp -inf, norm 0, any false,
// all true, count 0; amax, amin, max, min, argmax and argmin are an error at select (PyTorch refuses
// them too). var / std with n - correction <= 0 give inf or NaN as PyTorch's (0 / 0 = NaN, x / 0 =
// inf). var_mean's var is var's and its mean mean's, within rounding (the mean is the running one of
// var's pass); over an empty reduced set both are NaN.
//
// Determinism: every kernel is deterministic (no atomics: a fixed reduction order, the same bits on
// every run). amax/amin/max/min/arg-kinds, any/all/count and an empty reduced set do not depend on
// the order at all (amax takes +0 over -0, amin -0 over +0; max / min keep the first index), but for
// the payload of a NaN result (one of the input NaNs'). Sums, products, var and logsumexp depend on it through
// rounding: the same shape, dims and kernel give the same bits whatever the views' strides and alignment, and a layout
// that changes the kernel (reducing a transposed view's dim turns rows into columns) may round differently, within the
// bound the order gives: pairwise over slots of a sequential run, an error below (n / slots + log2(slots)) ulps of the
// sum of |x|.
#include <array>
#include <initializer_list>
#include <optional>

#include "baracuda/core/plan.hpp"
#include "baracuda/ops/reduce_kind.hpp"

namespace baracuda {

// The reduced dims: at most kMaxRank, none repeated; negative counts from the end. Empty: all dims.
struct ReduceDims {
  int count = 0;
  std::array<int, kMaxRank> dims{};

  ReduceDims() = default;
  ReduceDims(std::initializer_list<int> list);  // more than kMaxRank sets count past kMaxRank
};

struct ReduceDescriptor {
  DType dtype = DType::f32;  // x (the forward's input; the backward's dx)
  Shape shape;               // x's, rank 0..8
  ReduceDims dims;
  bool keepdim = false;
  ReduceKind kind = ReduceKind::sum;
  std::optional<DType> out_dtype;  // value kinds: nullopt, the natural one or f32 (torch.sum(x, dtype=f32));
                                   // an integer sum or prod: i64 or x's
  DType index_dtype = DType::i64;  // `indices` of max, min, argmax, argmin: i32 or i64
  double correction = 1.0;         // var, std, var_mean: n - correction divides (1: Bessel's, torch's default)
  double p = 2.0;                  // norm: any p, including 0 and +-inf
};

struct ReduceArgs {
  AnyTensorRef x;
  AnyTensorMut out;      // the values (every kind but argmax / argmin); var_mean's var
  AnyTensorMut indices;  // max, min, argmax, argmin
  AnyTensorMut mean{};   // var_mean's mean (out's dtype and shape); empty for the other kinds
};

// The gradient of x, from the forward's outputs. The views each kind reads: x for prod, amax /
// amin, var / std / var_mean, norm and logsumexp; out for norm and logsumexp; indices for max / min;
// dout always; dmean for var_mean, where it may be empty (a mean without gradient: zeros). The others
// may be empty (an input a kind does not read is ignored). prod, amax / amin and var / std /
// var_mean reduce what they need from x again (the zeros, the ties, the mean) in a first pass. Every
// element of dx is written (not accumulated).
struct ReduceBackwardArgs {
  AnyTensorRef x;
  AnyTensorRef out;
  AnyTensorRef indices;
  AnyTensorRef dout;  // the gradient of out (var_mean: of the var)
  AnyTensorMut dx;
  AnyTensorRef dmean{};  // var_mean: the gradient of the mean (out's dtype and shape), or empty
};

struct ReduceOp : OpTag<ReduceDescriptor, ReduceArgs> {};
struct ReduceBackwardOp : OpTag<ReduceDescriptor, ReduceBackwardArgs> {};

using ReducePlan = Plan<ReduceOp>;
using ReduceBackwardPlan = Plan<ReduceBackwardOp>;

}  // namespace baracuda

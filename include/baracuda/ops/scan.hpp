#pragma once
// The scans of the reduction family: an inclusive scan along one dim of a tensor of rank 0..8,
// forward and backward, one plan pair whose descriptor's `kind` picks the scan (torch.cumsum /
// cumprod / cummax / cummin / logcumsumexp over `dim=`; jax.lax.cumsum ... with `reverse`).
//
//   kind            out dtype          out[i] (along dim; with reverse, over i..n-1 instead of 0..i)
//   cumsum          x's (or f32)       x[0] + ... + x[i]
//                   integer x: i64 (or x's)
//   cumprod         x's (or f32)       x[0] * ... * x[i]
//   cummax, cummin  x's (or f32)       max / min of x[0..i], and `indices`: where it is (index_dtype)
//   logcumsumexp    x's (or f32)       log(exp x[0] + ... + exp x[i]), shifted by the running max
//
// cummax / cummin follow PyTorch: a tie moves the index to the later element (torch.cummax of
// [1, 1] gives indices [0, 1]), a NaN is greater than everything, and a later NaN takes the index
// (with reverse, "later" is the scan's order: toward index 0). Indices count along dim.
//
// Backward (dx from dout = dL/dout), one reversed scan per kind, with no division:
//   cumsum         dx[i] = sum_{j >= i} dout[j]
//   cumprod        dx[i] = out[i-1] * s[i],  s[i] = dout[i] + x[i+1] s[i+1]   (exact with zeros)
//   cummax/cummin  dx[i] = the sum of dout[j] over the j whose indices[j] is i
//   logcumsumexp   dx[i] = exp(x[i] - out[i]) s[i],  s[i] = dout[i] + exp(out[i] - out[i+1]) s[i+1]
//                  (0 where x[i] is -inf; every factor is <= 1: no overflow)
// (with reverse, i+1 and i-1 swap). A factor of 0 (x[i+1] = 0; a run of cummax's indices ending) cuts
// the sum there: a NaN or inf of dout past it does not reach the elements before it. The views each kind reads: dout
// always; x for cumprod and logcumsumexp; out for cumprod and logcumsumexp; indices for cummax / cummin (as the forward
// wrote them: the gradient of a run of equal indices goes to the element that starts it).
//
// dtypes: f32, f64, f16, bf16 for every kind; i32 and i64 for cumsum (out i64, as torch.cumsum, or
// x's own: it wraps as two's complement). The backward takes the floating dtypes alone.
//
// Numerics: 16-bit and f32 inputs compute and accumulate in f32, f64 in f64, integers in int64
// (exact, wrapping). NaN propagates as in PyTorch. Determinism: no atomics, a fixed order: the same
// shape, dim and kernel give the same bits on every run and whatever the views' strides; cummax /
// cummin do not depend on the order at all. The order: each thread folds a run of consecutive
// elements, runs are combined by a scan over the threads of a block, blocks by a scan of their
// totals: the error of a cumsum is below (run + log2(threads) + log2(blocks)) ulps of the running
// sum of |x|.
#include <optional>

#include "baracuda/core/plan.hpp"
#include "baracuda/ops/scan_kind.hpp"

namespace baracuda {

struct ScanDescriptor {
  DType dtype = DType::f32;  // x (the forward's input; the backward's dx)
  Shape shape;               // x's (and out's, indices', dout's), rank 0..8 (a scalar is one element)
  int dim = -1;              // the scanned dim; negative counts from the end (0 or -1 for a scalar)
  ScanKind kind = ScanKind::cumsum;
  bool reverse = false;            // scan from the last element to the first (jax.lax.cumsum(reverse=True))
  std::optional<DType> out_dtype;  // nullopt or dtype, or f32 (torch.cumsum(x, dtype=f32)); integer x: i64 or x's
  DType index_dtype = DType::i64;  // `indices` of cummax / cummin: i32 or i64
};

struct ScanArgs {
  AnyTensorRef x;
  AnyTensorMut out;
  AnyTensorMut indices;  // cummax, cummin
};

// The gradient of x, from the forward's views (those the kind does not read may be empty). Every
// element of dx is written (not accumulated).
struct ScanBackwardArgs {
  AnyTensorRef x;
  AnyTensorRef out;
  AnyTensorRef indices;
  AnyTensorRef dout;
  AnyTensorMut dx;
};

struct ScanOp : OpTag<ScanDescriptor, ScanArgs> {};
struct ScanBackwardOp : OpTag<ScanDescriptor, ScanBackwardArgs> {};

using ScanPlan = Plan<ScanOp>;
using ScanBackwardPlan = Plan<ScanBackwardOp>;

}  // namespace baracuda

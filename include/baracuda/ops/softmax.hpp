#pragma once
// The softmax family: maps of a row onto the probability simplex along one dim of a tensor of rank
// 1..8, forward and backward, one plan pair whose descriptor's `kind` picks the map:
//   softmax, log_softmax (torch.softmax / torch.log_softmax with `dtype=`, and their backward,
//     torch._softmax_backward_data):
//       y = softmax(x) = exp(x - max) / sum(exp(x - max))           dx = y (dy - sum(dy y))
//       y = log_softmax(x) = (x - max) - log(sum(exp(x - max)))     dx = dy - exp(y) sum(dy)
//   sparsemax (Martins & Astudillo 2016; Liger-Kernel's sparsemax): the Euclidean projection onto
//     the simplex, y = max(x - tau, 0) with tau such that sum(y) = 1;
//       dx = dy - mean of dy over the support (y > 0), and 0 off the support.
//   entmax15 (alpha = 1.5 entmax, Peters, Niculae & Martins 2019; the `entmax` package's entmax15):
//     y = max(x / 2 - tau, 0)^2 with tau such that sum(y) = 1;
//       dx = g (dy - sum(g dy) / sum(g)) with g = sqrt(y).
//     Both are exact: the support and tau are the sort-based definition's (ties included), found
//     without sorting: Newton steps on tau from below (Michelot's algorithm for sparsemax), each
//     step's support giving the closed-form tau, guarded by bisection so that no row takes more than
//     ~2 x (the compute type's bits) passes; typical rows take 3 to 6 (src/common/softmax_math.hpp).
// The backward reads the forward's output y (not x), as PyTorch saves it.
//
// Dtypes: x is f32, f64, f16 or bf16; y is x's dtype or, with `out_dtype = f32`, f32 for any input
// (torch.softmax(x, dtype=torch.float32)). The backward's y and dy have y's dtype and dx has x's:
// the gradient comes back in the dtype of the forward's input, as torch._softmax_backward_data's
// `input_dtype`. 16-bit and f32 inputs compute and accumulate in f32, f64 in f64.
//
// Numerics, as PyTorch's (the row max is subtracted first, so huge magnitudes such as 1e30 never
// overflow): a -inf entry gives exactly 0 (log_softmax: -inf) and leaves the rest of its row exact;
// a row with a NaN, a +inf, or nothing but -inf gives NaN in every element of the row. The same
// holds for sparsemax and entmax15, whose entries off the support are exactly 0.
//
// Any extent along dim (no cap), any dim of the shape. Views may be strided (zero strides broadcast
// an input); outputs must not overlap themselves. y may be x itself, and dx may be dy or y, where
// their dtypes match (in place); otherwise an output must not overlap an input. Every kernel is
// deterministic: the same inputs give the same bits on every run. Kernels
// (`SoftmaxPlan::schema().variants`), chosen at select from the shape: a row held in registers by a
// (sub-)warp, a block or a cluster of blocks; a long row split over blocks that combine partial
// results through the workspace (the only variant that needs one); and a dim that is not innermost
// walked by threads that own its columns. The sparsemax and entmax15 forward, which need several
// passes over a row, hold it in registers where it fits and otherwise read it from memory once per
// pass (`pass_row`, a block a row, any length and strides).
#include <optional>

#include "baracuda/core/plan.hpp"
#include "baracuda/ops/softmax_kind.hpp"

namespace baracuda {

struct SoftmaxDescriptor {
  DType dtype = DType::f32;        // x (the forward's input; the backward's dx)
  std::optional<DType> out_dtype;  // y (and dy); nullopt: dtype. Otherwise dtype or f32
  Shape shape;                     // rank 1..8
  int dim = -1;                    // negative counts from the end
  SoftmaxKind kind = SoftmaxKind::softmax;
};

struct SoftmaxArgs {
  AnyTensorRef x;
  AnyTensorMut y;
};

struct SoftmaxBackwardArgs {
  AnyTensorRef y;  // the forward's output
  AnyTensorRef dy;
  AnyTensorMut dx;  // overwritten
};

struct SoftmaxOp : OpTag<SoftmaxDescriptor, SoftmaxArgs> {};
struct SoftmaxBackwardOp : OpTag<SoftmaxDescriptor, SoftmaxBackwardArgs> {};

using SoftmaxPlan = Plan<SoftmaxOp>;
using SoftmaxBackwardPlan = Plan<SoftmaxBackwardOp>;

}  // namespace baracuda

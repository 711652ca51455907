#pragma once
// The softmax family: softmax and log_softmax along one dim of a tensor of rank 1..8, forward and
// backward (torch.softmax / torch.log_softmax with `dtype=`, and their backward,
// torch._softmax_backward_data).
//   SoftmaxPlan           y = softmax(x) = exp(x - max) / sum(exp(x - max))         along dim
//                         y = log_softmax(x) = (x - max) - log(sum(exp(x - max)))
//   SoftmaxBackwardPlan   softmax:      dx = y (dy - sum(dy y))
//                         log_softmax:  dx = dy - exp(y) sum(dy)
// The backward reads the forward's output y (not x), as PyTorch saves it.
//
// Dtypes: x is f32, f64, f16 or bf16; y is x's dtype or, with `out_dtype = f32`, f32 for any input
// (torch.softmax(x, dtype=torch.float32)). The backward's y and dy have y's dtype and dx has x's:
// the gradient comes back in the dtype of the forward's input, as torch._softmax_backward_data's
// `input_dtype`. 16-bit and f32 inputs compute and accumulate in f32, f64 in f64.
//
// Numerics, as PyTorch's (the row max is subtracted first, so huge magnitudes such as 1e30 never
// overflow): a -inf entry gives exactly 0 (log_softmax: -inf) and leaves the rest of its row exact;
// a row with a NaN, a +inf, or nothing but -inf gives NaN in every element of the row.
//
// Any extent along dim (no cap), any dim of the shape. Views may be strided (zero strides broadcast
// an input); outputs must not overlap themselves. y may be x itself, and dx may be dy or y, where
// their dtypes match (in place); otherwise an output must not overlap an input. Every kernel is
// deterministic: the same inputs give the same bits on every run. Kernels
// (`SoftmaxPlan::schema().variants`), chosen at select from the shape: a row held in registers by a
// (sub-)warp, a block or a cluster of blocks; a long row split over blocks that combine partial
// results through the workspace (the only variant that needs one); and a dim that is not innermost
// walked by threads that own its columns.
#include <optional>

#include "baracuda/core/plan.hpp"

namespace baracuda {

enum class SoftmaxKind : unsigned char { softmax, log_softmax };

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

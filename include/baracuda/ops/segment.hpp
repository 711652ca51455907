#pragma once
// The segment family: rows of `data` [N, ...] (each row the D elements of its trailing dims) reduced
// into `num_segments` (S) rows of `out` [S, ...] by the segment each row belongs to
// (jax.ops.segment_sum / segment_max, tf.math.unsorted_segment_*, torch.segment_reduce,
// torch_scatter's segment_coo / segment_csr, Tensor.scatter_reduce along dim 0):
//   SegmentSumPlan    out[s] = sum of the rows of segment s        (empty: 0)
//   SegmentMeanPlan   out[s] = that sum / the segment's row count   (empty: 0)
//   SegmentMaxPlan    out[s] = elementwise max of its rows          (empty: -inf; integers: their lowest)
//   SegmentMinPlan    out[s] = elementwise min                      (empty: +inf; integers: their highest)
// and their backward plans (ddata from dout, every element of ddata written, never accumulated):
//   sum: ddata[i] = dout[segment of i]; mean: the same divided by the segment's row count;
//   max / min: dout[s, j] goes to the row `indices[s, j]` names, every other element of ddata is 0.
// `descriptor.initial`, when set, is the value of every empty segment instead (it does not join the
// values of a non-empty one: torch.segment_reduce's `initial` does).
//
// Which segment a row belongs to (`descriptor.form`):
//   sorted_ids    segment_ids [N], nondecreasing (jax's indices_are_sorted=True, segment_coo);
//   unsorted_ids  segment_ids [N] in any order (jax.ops.segment_sum, scatter_reduce, index_add_);
//   offsets       offsets [S + 1], nondecreasing: segment s is rows [offsets[s], offsets[s + 1])
//                 (torch.segment_reduce(offsets=...), segment_csr); rows before offsets[0] or from
//                 offsets[S] on belong to no segment.
//
// Max and min store the row that attains each output in the forward's `indices` [S, ...] (the first
// such row; -1 for an empty segment), as torch_scatter does, rather than recomputing it in the
// backward: the backward then reads dout and indices once and writes ddata once (one pass, no
// second read of data and out, and no search for the first row attaining a tie). `indices` is
// optional in the forward (left empty, only the values are written) and required by the backward.
// NaN propagates (the first NaN of a segment wins, as the reductions' max / min).
//
// Bad input never reads or writes out of bounds and never goes uncounted. Into `bad_index_count`
// (an int64 in the stream's memory, added to; optional), every plan, forward and backward, counts:
//   - segment ids outside [0, S): the row is dropped (it joins no segment; its gradient is 0);
//   - with sorted_ids, each id below its predecessor (an unsorted input): the plan's answer is then
//     not specified beyond "in bounds" (a row out of order may be left out of its segment, or
//     folded into a neighbour's), but the count says so;
//   - offsets outside [0, N]: counted and clamped into [0, N]; each offset below its predecessor is
//     counted too, and makes its segment empty (offsets are counted, not an error: they live in
//     device memory, which select never reads); where the next segment then starts is not
//     specified beyond "in bounds" (the CPU starts it at the lower offset, CUDA at the running
//     maximum of the offsets, so that its segments stay disjoint).
// Bad descriptors (negative sizes, an N that i32 indices cannot count, an integer initial that the
// dtype cannot hold) are errors at select that name the plan and the field.
//
// Numerics: 16-bit types accumulate in f32, f32 in f32, f64 in f64, integers (i32 and i64 data, for
// sum, max and min) in int64 and wrap to the dtype as PyTorch and JAX do. Variants: "segmented"
// (sorted ids and offsets: each segment folds its rows in row order; deterministic by construction),
// "sort" (unsorted ids: the rows are sorted by segment, stably, then segmented: deterministic; the
// default on the CPU and when determinism is required), and on CUDA "atomic" (unsorted sum and mean:
// atomic adds into an f32 / f64 / int64 scratch; the fast default, not bit-identical across runs).
// Max and min are deterministic in every form.
#include <optional>

#include "baracuda/core/plan.hpp"
#include "baracuda/ops/segment_kind.hpp"

namespace baracuda {

struct SegmentDescriptor {
  DType dtype = DType::f32;        // data and out (the backward: dout and ddata)
  DType index_dtype = DType::i64;  // segment_ids, offsets and indices: i32 or i64
  Shape data_shape;                // [N, ...], rank 1..8
  int64_t num_segments = 0;        // S
  SegmentForm form = SegmentForm::sorted_ids;
  std::optional<double> initial;  // the value of an empty segment (default: 0, -inf, +inf as above)
};

struct SegmentArgs {
  AnyTensorRef data;         // [N, ...]
  AnyTensorRef segment_ids;  // [N]: sorted_ids, unsorted_ids (empty for offsets)
  AnyTensorRef offsets;      // [S + 1]: offsets (empty for the ids forms)
  AnyTensorMut out;          // [S, ...]
  AnyTensorMut indices{};    // max / min, optional: [S, ...] of index_dtype, the row attaining out
  int64_t* bad_index_count = nullptr;
};

struct SegmentBackwardArgs {
  AnyTensorRef dout;         // [S, ...]
  AnyTensorRef segment_ids;  // as the forward's
  AnyTensorRef offsets;
  AnyTensorRef indices;  // max / min: the forward's (values that name no row of their segment are ignored)
  AnyTensorMut ddata;    // [N, ...], written
  int64_t* bad_index_count = nullptr;
};

struct SegmentSumOp : OpTag<SegmentDescriptor, SegmentArgs> {};
struct SegmentMeanOp : OpTag<SegmentDescriptor, SegmentArgs> {};
struct SegmentMaxOp : OpTag<SegmentDescriptor, SegmentArgs> {};
struct SegmentMinOp : OpTag<SegmentDescriptor, SegmentArgs> {};
struct SegmentSumBackwardOp : OpTag<SegmentDescriptor, SegmentBackwardArgs> {};
struct SegmentMeanBackwardOp : OpTag<SegmentDescriptor, SegmentBackwardArgs> {};
struct SegmentMaxBackwardOp : OpTag<SegmentDescriptor, SegmentBackwardArgs> {};
struct SegmentMinBackwardOp : OpTag<SegmentDescriptor, SegmentBackwardArgs> {};

using SegmentSumPlan = Plan<SegmentSumOp>;
using SegmentMeanPlan = Plan<SegmentMeanOp>;
using SegmentMaxPlan = Plan<SegmentMaxOp>;
using SegmentMinPlan = Plan<SegmentMinOp>;
using SegmentSumBackwardPlan = Plan<SegmentSumBackwardOp>;
using SegmentMeanBackwardPlan = Plan<SegmentMeanBackwardOp>;
using SegmentMaxBackwardPlan = Plan<SegmentMaxBackwardOp>;
using SegmentMinBackwardPlan = Plan<SegmentMinBackwardOp>;

}  // namespace baracuda

#pragma once
// What the segment plans hand to a backend: the rows side (data, or the backward's ddata) and the
// segments side (out, or dout) as N and S rows of D columns (a Walker over the trailing dims gives a
// column's offset in each view), the index views, the variant and the workspace.
#include <algorithm>

#include "baracuda/ops/segment.hpp"
#include "common/checked.hpp"
#include "common/elementwise.hpp"
#include "common/segment.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

// By name in the schemas (the max / min ones have no atomic; the backward has gather alone).
enum class SegmentVariant : unsigned char { segmented, atomic, sort, gather };

// Walker tensors of the columns.
enum SegmentColumn : int { kRowSide, kSegmentSide, kIndices, kSegmentColumns };

struct SegmentProblem {
  bool backward = false;
  SegmentReduction reduction = SegmentReduction::sum;
  SegmentForm form = SegmentForm::sorted_ids;
  SegmentVariant variant = SegmentVariant::segmented;
  DType dtype = DType::f32;
  DType index_dtype = DType::i64;
  int64_t rows = 0;      // N
  int64_t segments = 0;  // S
  int64_t length = 0;    // D
  Walker<kSegmentColumns> columns;
  int64_t row_stride = 0, segment_stride = 0, indices_stride = 0;  // along dim 0
  const void* row_in = nullptr;                                    // forward: data
  void* row_out = nullptr;                                         // backward: ddata
  const void* segment_in = nullptr;                                // backward: dout
  void* segment_out = nullptr;                                     // forward: out
  void* indices = nullptr;    // max / min (the forward writes it when given; the backward reads it)
  const void* ids = nullptr;  // segment_ids (ids forms)
  int64_t ids_stride = 0;
  const void* offsets = nullptr;  // offsets form
  int64_t offsets_stride = 0;
  double empty_value = 0;     // floating dtypes: an empty segment's value
  int64_t empty_integer = 0;  // integer dtypes: the same
  int64_t tile_rows = 0;      // CUDA: rows of a tile of the segmented walk (ops/segment.cpp)
  bool vectorized = false;    // CUDA: D contiguous in whole, aligned 16-byte vectors on both sides
  bool packed_rows = false;   // CUDA: D = 1, rows adjacent, 16-byte aligned (vectors of rows)
  int64_t* bad_index_count = nullptr;
  void* workspace = nullptr;
  size_t workspace_size = 0;

  // The index view the counter walks: the ids, or the offsets.
  const void* counted() const { return offsets ? offsets : ids; }
  int64_t counted_size() const { return offsets ? segments + 1 : rows; }
  int64_t counted_stride() const { return offsets ? offsets_stride : ids_stride; }
  int64_t counted_bound() const { return offsets ? rows + 1 : segments; }
  bool counted_sorted() const { return form != SegmentForm::unsorted_ids; }
  template <class Idx>
  SegmentRows<Idx> segment_rows() const {
    SegmentRows<Idx> r;
    r.keys = static_cast<const Idx*>(ids);
    r.key_stride = ids_stride;
    r.offsets = static_cast<const Idx*>(offsets);
    r.offset_stride = offsets_stride;
    r.rows = rows;
    r.segments = segments;
    return r;
  }
};

namespace cpu {
CheckedSize segment_workspace(const SegmentProblem& shape);
Status launch(const LaunchContext& ctx, const SegmentProblem& problem);
}  // namespace cpu
namespace cuda {
CheckedSize segment_workspace(const SegmentProblem& shape);  // no_cuda.cpp: never reached
Status launch(const LaunchContext& ctx, const SegmentProblem& problem);
}  // namespace cuda

}  // namespace baracuda::detail

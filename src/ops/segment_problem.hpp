#pragma once
// What the segment plans hand to a backend: the rows side (data, or the backward's ddata) and the
// segments side (out, or dout) as N and S rows of D columns (a Walker over the trailing dims gives a
// column's offset in each view), the index views, the variant and the workspace.
// The problem and the tiles of the CUDA walk are read by NVRTC too (the kernels compiled at select);
// the backends' entry points are the host's.
#include "baracuda/core/dtype_kind.hpp"
#include "baracuda/ops/segment_kind.hpp"
#include "common/checked.hpp"
#include "common/elementwise.hpp"
#include "common/segment.hpp"
#if !defined(__CUDACC_RTC__)
#include <vector>

#include "baracuda/ops/segment.hpp"
#include "ops/launch.hpp"
#endif

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

// The CUDA walk's positions and regions. Region r holds positions [begin(r), end(r)): r = -1 those
// before the first segment, r in [0, S) segment r, r = S those after the last; `starts` (S + 1
// nondecreasing positions in [0, N], cuda/segment.cpp) makes them a partition of [0, N). Tile k is
// positions [k P, min(N, (k + 1) P)); it owns the regions that begin inside it (the last tile also
// the empty ones that begin at N). The host fills it; the kernels walk it.
struct SegmentTiles {
  const int64_t* starts = nullptr;
  const uint32_t* order32 = nullptr;  // the sort variant: the row at each position (N < 2^32)
  const int64_t* order64 = nullptr;   // (N past 2^32)
  int64_t rows = 0, segments = 0;     // N, S
  int64_t tile_rows = 0;              // P
  int64_t count = 0;                  // tiles (one where N = 0, to write every segment empty)

#if defined(__CUDACC__)
  __device__ int64_t begin(int64_t r) const { return r < 0 ? 0 : starts[r]; }
  __device__ int64_t end(int64_t r) const { return r < segments ? starts[r + 1] : rows; }
  __device__ int64_t row(int64_t q) const { return order32 ? int64_t{order32[q]} : order64 ? order64[q] : q; }
  // The first s in [0, S] with starts[s] >= q (`above`: > q); S + 1 where none.
  __device__ int64_t search(int64_t q, bool above) const {
    int64_t lo = 0, hi = segments + 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2, v = starts[mid];
      if (v < q || (above && v == q))
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }
  // The region a tile beginning at t0 walks first: the one holding t0 where it began before t0, else
  // the first that begins at t0 (empty ones included: they are this tile's).
  __device__ int64_t first_region(int64_t t0) const {
    const int64_t s = search(t0, false);
    return s <= segments && starts[s] == t0 ? s : s - 1;
  }
  // The region holding position q < N.
  __device__ int64_t region_of(int64_t q) const { return search(q, true) - 1; }
#endif
};

#if !defined(__CUDACC_RTC__)
namespace cpu {
CheckedSize segment_workspace(const SegmentProblem& shape);
Status launch(const LaunchContext& ctx, const SegmentProblem& problem);
}  // namespace cpu
namespace cuda {
CheckedSize segment_workspace(const SegmentProblem& shape);  // no_cuda.cpp: never reached
Status launch(const LaunchContext& ctx, const SegmentProblem& problem);
// Compiles (or finds in the caches) the kernels of the problem's direction, reduction, form,
// variant and dtypes: select's part (the kernels are compiled at select).
Status prepare_segment(const PlanTarget& target, const SegmentProblem& problem);
}  // namespace cuda
#endif

}  // namespace baracuda::detail

#if !defined(__CUDACC_RTC__)
namespace baracuda::detail::jit {
struct Program;
// Every segment program: each reduction, dtype, index dtype, direction and walk (cuda/segment.cpp).
std::vector<Program> segment_programs();
}  // namespace baracuda::detail::jit
#endif

#pragma once
// The strategies of the CUDA indexing family, one translation unit each (src/cuda/indexing/*.cu);
// src/cuda/indexing.cu picks one per problem and counts the bad index values after it. Each is a
// function template instantiated in its own .cu for every type pair below, so its kernels are
// compiled once.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <limits>

#include "common/checked.hpp"
#include "ops/indexing_problem.hpp"

// X(T, Idx) for each element type T a strategy is compiled for, with each index type.
#define BARACUDA_INDEX_TYPES(X, T) X(T, int32_t) X(T, int64_t)
// Gather moves bits: one element type per size.
#define BARACUDA_GATHER_TYPES(X) \
  BARACUDA_INDEX_TYPES(X, uint16_t) BARACUDA_INDEX_TYPES(X, uint32_t) BARACUDA_INDEX_TYPES(X, uint64_t)
// Scatter-add sums: the floating-point types of dispatch_float.
#define BARACUDA_SCATTER_TYPES(X) \
  BARACUDA_INDEX_TYPES(X, __half) \
  BARACUDA_INDEX_TYPES(X, __nv_bfloat16) BARACUDA_INDEX_TYPES(X, float) BARACUDA_INDEX_TYPES(X, double)

namespace baracuda::detail::cuda {

// The shared-memory line of scatter_line: a destination line of up to this many bytes of sums.
inline constexpr int64_t kSharedRowBytes = 48 * 1024;
// A line longer than a slab takes scatter_line while its entries are at most a slab's slots over this.
inline constexpr int64_t kSlabEntriesDivisor = 2;
// Adding, scatter_line writes a line back entry by entry (not slot by slot) while it has at most an
// entry a kSparseLineSlots slots and its entries fit one tile; f32 / f64 atomics take every adding
// line that sparse (strategy.cpp).
inline constexpr int64_t kSparseLineSlots = 6;
// Whether a line of `line_size` slots is that sparse with `entries` entries.
inline bool sparse_line(int64_t entries, int64_t line_size) { return entries <= line_size / kSparseLineSlots; }
// scatter_short_lines: lines of up to this many entries (a warp's lanes).
inline constexpr int64_t kShortLineEntries = 32;
// scatter_warp_lines: an item holds at most kWarpItemEntries entries (4 rounds of a warp's lanes, held
// in registers). Overwriting, a line's sums fit in kWarpLineBytes of shared memory (a warp's own;
// 2048 f32 sums) and several lines make an item while their sums fit in kWarpItemBytes (four 8-warp
// blocks an SM; a longer line takes 8 KB a warp, three blocks). Adding, only the reached slots are
// summed (in the line's sums where it fits, else in a small hash a warp), so a line may be as long as
// a slot's key allows: an item's slots are numbered in an int.
// Adding a line of more entries in f32 / f64, at most kWarpLineEntries and sparse (sparse_line), the
// line is an item of several tiles of kWarpItemEntries, its reached slots hashed in up to
// 2 x kWarpLineEntries.
inline constexpr int64_t kWarpLineBytes = 8192;
inline constexpr int64_t kWarpItemBytes = 4096;
inline constexpr int64_t kWarpItemEntries = 128;
inline constexpr int64_t kWarpLineEntries = 512;
inline constexpr int64_t kMaxWarpKey = std::numeric_limits<int>::max();
// Column lines (ScatterKernel::column_lines): element mode along a dim that is not the walk's
// innermost (gather's backward along dim 0 of a tall table), at most kColumnLineEntries entries a
// column (one tile of the shared line), where the column tiles would need more than
// kMaxColumnLineSlabs slabs. The walk is taken with dim innermost (dim_innermost), so that each
// column's destination line is a line of the kernels above (column_lines_by_warp): the warp lines'
// adds, or the shared line's entry by entry; into the table zeroed first when overwriting.
inline constexpr int64_t kColumnLineEntries = 1024;
inline constexpr int64_t kMaxColumnLineSlabs = 8;
// Whether column lines are summed by the warp lines (at most kWarpItemEntries entries; or a column
// longer than the shared line's sums, its reached slots hashed in tiles) rather than the shared line.
bool column_lines_by_warp(const IndexedProblemDesc& desc);

// scatter_columns' tile: `width` adjacent columns (the walk's innermost dim) by `rows` destination
// rows in shared memory; a table of more rows along dim is cut into `slabs` of rows, each reading
// all the tile's entries. The width is the fewest columns that fill a 32-byte sector of T, widened
// (to 256 at most) while the rows still fit: fewer slabs first, then fewer items.
struct ColumnTiles {
  int64_t width = 0, rows = 0, slabs = 0;
};
ColumnTiles column_tiles(DType dtype, int64_t dim_size);
// scatter_columns is chosen (strategy.cpp, column_tiles_pay) where the problem gives at least
// kMinColumnItems items (tile x slab) to spread over the GPU or each item has at most
// kMaxColumnItemEntries entries (a few items, each short), and where its slabs (each rereads the
// entries) cost less than the alternative: at most kMaxColumnSlabs beside f32 / f64 atomics; beside
// the global sort, entries reread for fewer bytes than a table column's plus kSortEntryBytes an
// entry (the sort's passes over keys and values, in bytes of traffic).
inline constexpr int64_t kMaxColumnSlabs = 8;
inline constexpr int64_t kMinColumnItems = 256;
inline constexpr int64_t kMaxColumnItemEntries = 16384;
inline constexpr int64_t kSortEntryBytes = 128;

// The deterministic scatter's scratch, laid out in one workspace (sizes in bytes).
struct SortedScatterWorkspace {
  size_t keys = 0, offsets = 0, partials = 0, sort_temp = 0;
  bool fits = false;  // the total is below kMaxBytes (else the sizes are zero and the plan is refused)
  CheckedSize total() const {
    if (!fits) return CheckedSize::poisoned();
    return CheckedSize(2) * static_cast<int64_t>(keys) + CheckedSize(2) * static_cast<int64_t>(offsets) +
           static_cast<int64_t>(partials) + static_cast<int64_t>(sort_temp);
  }
};
// Bytes of scratch the sorted scatter needs for `rows` rows of `row_length` (device sort included).
SortedScatterWorkspace sorted_scatter_workspace(int64_t rows, int64_t row_length, DType dtype);

// Gather (gather.cu): rows of the table into `values`; invalid index values write zeros.
template <class Bits, class Idx>
Status gather(const Stream& stream, const IndexedProblem& p, int sm_count);

// Scatter-add with atomics (scatter_atomic.cu), rows or elements.
template <class T, class Idx>
Status scatter_atomic(const Stream& stream, const IndexedProblem& p, int sm_count);

// The walk `layout` with dim moved innermost (its other dims in order): a destination line is then the
// table along dim at one column (column lines).
IndexedLayout dim_innermost(const IndexedLayout& layout);

// The line kernels below sum the lines of `layout` (p.layout, or dim_innermost's for column lines).
// `overwrite`: write every table element rather than add to it (the walk covers every line of the
// table); `zeroed`: adding into a table known to hold zeros (zeroed first), so nothing is loaded.

// Scatter-add of ScatterKernel::shared_line problems (scatter_line.cu): a destination line per block,
// summed in shared memory, atomic or ordered by p.variant; no workspace.
template <class T, class Idx>
Status scatter_line(const Stream& stream, const IndexedProblem& p, const IndexedLayout& layout, bool overwrite,
                    bool zeroed, int sm_count);

// Scatter-add of ScatterKernel::column_tiles problems (scatter_columns.cu): element mode along a dim
// that is not the walk's innermost, a tile of columns by a slab of rows summed in shared memory,
// atomic or ordered by p.variant. `overwrite` as scatter_line; no workspace.
template <class T, class Idx>
Status scatter_columns(const Stream& stream, const IndexedProblem& p, bool overwrite, int sm_count);

// Scatter-add of lines of at most kShortLineEntries entries (scatter_short.cu): a group of lanes per
// line sums each destination's entries in entry order and adds the sum to it once (no atomics:
// deterministic, f32 sums for 16-bit types); no workspace.
template <class T, class Idx>
Status scatter_short_lines(const Stream& stream, const IndexedProblem& p, int sm_count);

// Scatter-add of ScatterKernel::warp_lines problems (scatter_warp.cu): a few destination lines per
// warp, summed in the warp's shared memory in entry order (deterministic, f32 sums for 16-bit types),
// then written with one coalesced pass (overwriting) or slot by slot where the entries reached
// (adding); no workspace.
template <class T, class Idx>
Status scatter_warp_lines(const Stream& stream, const IndexedProblem& p, const IndexedLayout& layout, bool overwrite,
                          bool zeroed, int sm_count);

// Deterministic scatter-add (scatter_sorted.cu): rows sorted by destination, summed by window in
// p.workspace (sorted_scatter_workspace).
template <class T, class Idx>
Status scatter_sorted(const Stream& stream, const IndexedProblem& p, int sm_count);

}  // namespace baracuda::detail::cuda

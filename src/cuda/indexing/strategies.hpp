#pragma once
// The strategies of the CUDA indexing family: their kernels (src/cuda/common/gather_kernels.cuh and
// scatter_*_kernels.cuh, compiled at select by NVRTC, one program a strategy's element type, index type
// and the constants select decides) and their host launchers (src/cuda/indexing.cpp picks one per
// problem and counts the bad index values after it; src/cuda/indexing/*.cpp). NVRTC reads the sizes
// and the kernels' arguments here; the choices and the launchers are the host's.
#include "common/checked.hpp"
#include "common/indexing.hpp"
#include "cuda/common/threads.hpp"
#if !defined(__CUDACC_RTC__)
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

#include "common/dispatch.hpp"
#include "ops/indexing_problem.hpp"

namespace baracuda::detail::jit {
struct Program;
struct Module;
}  // namespace baracuda::detail::jit
#endif

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

// Gather: vectors per thread per step of the row gather, all loaded before any is stored (the most
// loads in flight; 8 measured best of 2, 4 and 8: bench/NOTES.md, sweep i7).
inline constexpr int kRowVectors = 8;

// scatter_atomic: rows a thread group takes at once (a span; see the kernels' file comment).
inline constexpr int kSpan = 8;

// The shared-memory sums of the line and column scatters (cuda/common/line_sum.cuh): a block's
// entries come in tiles of kLineTile, kLineItems a thread.
inline constexpr int kLineItems = 4;
inline constexpr int kLineTile = kThreads * kLineItems;
// Column lines of up to kColumnLineEntries entries are one tile each (the shared line's add_entries).
static_assert(kColumnLineEntries <= kLineTile);

// scatter_line: what a block sums at once (an item) is slots [first, first + width) of walk lines
// [line, line + lines) (cuda/common/scatter_line_kernels.cuh, LineSlab). LineSpan says how items are
// cut, fixed per launch:
//  - one: a whole line (it fits in shared memory);
//  - several: whole lines, as many as fit in shared memory and keep their entries within one tile
//    (short lines with few entries: a line a block would leave one line's loads in flight a block);
//  - slab: a slab of kSharedRowBytes of a longer line; each of the line's slabs reads all its entries
//    (from L2 after the first) and keeps those that land in it.
enum class LineSpan { one, several, slab };

// scatter_columns: the walk seen as [lines, entries (dim), columns (the innermost dim)]. A
// destination line is the table along dim at one (line, column); a block's item is `1 << shift`
// adjacent columns of one line by a slab of `rows` destination rows, in shared memory at (row -
// first) << shift | column. The item's entries (entries x width, the column fastest: coalesced) come
// in tiles of kLineTile; each slab of a tile reads them all and keeps those that land in it (the
// slabs of a tile are adjacent items, so all but the first read them from L2).
struct ColumnWalk : EntryColumnWalk {
  int shift = 0;  // log2 of the tile's width
  int64_t column_tiles = 1, rows = 0, slabs = 1;
  int64_t dim_size = 0, table_dim_stride = 0, padding = kNoPadding;
};

// scatter_short_lines: rounds of a warp's lines whose loads are issued together (each lane has one
// entry a round).
inline constexpr int kShortRounds = 4;
inline constexpr int kWarpsPerBlock = kThreads / 32;

// scatter_warp_lines (cuda/common/scatter_warp_kernels.cuh).
inline constexpr int kWarps = kThreads / 32;
// Adding lines longer than the warp's sums: the reached slots' keys and sums, twice an item's
// entries (a line's, past kWarpItemEntries) rounded up to a power of two: at most half full.
inline constexpr int kHashBits = 8;  // an item of at most kWarpItemEntries
static_assert((1 << kHashBits) >= 2 * kWarpItemEntries);
inline constexpr int kMaxHashSlots = static_cast<int>(2 * kWarpLineEntries);
inline constexpr int kOwnedWords = static_cast<int>(kWarpLineBytes / 4 / 32);  // adding lines: a bit a slot

// Where a slot's sum is and how its owner is known: `lines`, an item's whole lines (overwriting, no
// owner); `owned_lines`, the same with a bit a slot for its owner (adding); `hashed`, the reached
// slots alone (adding, lines of any length).
enum class WarpSums { lines, owned_lines, hashed };

// How a launch cuts the walk: `per_item` consecutive lines of `entries` each, summed in `line_size`
// slots a line. `outer_dims`: the walk's dims that give a line's offsets (all of them when dim left
// the walk, every entry then alone on its line).
// `warp_slots`: each warp's sums in shared memory: an item's slots and 16 / sizeof(T) more (see
// item_sums), rounded up to 16 bytes; hashed, 2^hash_bits. Adding, each warp's marks follow every
// warp's sums: kOwnedWords bits, or as many hash keys.
// `tiles`: an item's tiles of at most kWarpItemEntries entries (more than one: an item is one line
// of more entries, its sums hashed in 2^hash_bits slots).
// `zeroed`: adding into a table known to hold zeros (see add_slots).
struct WarpItems {
  int64_t lines = 0, items = 0;
  int entries = 0, per_item = 0, line_size = 0, outer_dims = 0, warp_slots = 0, tiles = 1, hash_bits = kHashBits;
  bool zeroed = false;
};

// The sorted scatter's windows (cuda/common/scatter_sorted_kernels.cuh).
inline constexpr int64_t kRowsPerWindow = 32;      // rows mode: one block sums a window of rows
inline constexpr int64_t kElementsPerWindow = 32;  // element mode: one thread sums a window
// The window for rows of `row_length` elements.
inline int64_t sorted_window(int64_t row_length) { return row_length > 1 ? kRowsPerWindow : kElementsPerWindow; }

// The sorted keys: each valid row's table offset divided by `unit` (a common divisor of every table
// offset the walk can reach: fewer key bits, so fewer radix passes), and the sentinel that sorts
// after every valid key.
struct SortedKeys {
  const uint64_t* keys;
  uint64_t sentinel;
  int64_t unit;
  BARACUDA_HD int64_t table_offset(uint64_t key) const { return static_cast<int64_t>(key) * unit; }
};

// Long runs (a token on most rows: one run over thousands of windows). Where a problem has at least
// kChunkedWindows windows, each chunk of kChunkWindows windows that lies inside one run (the run
// covers the last row before the chunk and the first row after it) is summed first, in window order,
// into a partial row of its own after the windows' two rows each (sum_chunks_kernel); the fix-up then
// adds a chunk's sum in its windows' place wherever its run covers the chunk and the window after it.
// The same order for every run: still the same bits every time, and a run over 32768 windows takes
// about 80 rounds of loads instead of 4096.
inline constexpr int64_t kChunkWindows = 64, kChunkedWindows = 8 * kChunkWindows;

#if !defined(__CUDACC_RTC__)
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
// CUB's radix sort of (key, values offset) pairs, compiled ahead of time (cuda/indexing/sort.cu): the
// scratch it needs for `rows` pairs of 64-bit keys, and the sort of the keys' low `key_bits` bits.
size_t sort_pairs_scratch(int64_t rows);
Status sort_pairs(void* scratch, size_t scratch_bytes, const uint64_t* keys_in, uint64_t* keys,
                  const int64_t* offsets_in, int64_t* offsets, int64_t rows, int key_bits, const Stream& stream);

// The walk `layout` with dim moved innermost (its other dims in order): a destination line is then the
// table along dim at one column (column lines).
IndexedLayout dim_innermost(const IndexedLayout& layout);

// The strategies' launchers. Each finds (or compiles) its program from what select knows (the dtypes,
// the variant and the flags below; a run's load or list mode stops there) and launches its kernels,
// the kernel and its grid chosen from the views.
struct ElementwiseRun;

// The kernels' namespace, for their name expressions.
inline constexpr std::string_view kKernelNamespace = "baracuda::detail::cuda::";
// A program of the kernels in `header` (a path among the embedded sources); its kernels' names are
// the caller's to add.
jit::Program indexing_program(std::string name, std::string_view header);
// Calls f(std::type_identity<T>{}, std::type_identity<Idx>{}) with a scatter's element and index
// types (the host's 16-bit types: the kernels' names spell them as NVRTC's).
template <class F>
Status with_scatter_types(const IndexedProblemDesc& desc, F&& f) {
  return dispatch_index(desc.index_dtype, [&](auto index) {
    return dispatch_float<half, bfloat16>(desc.dtype, [&](auto t) { return f(t, index); });
  });
}

// Gather (gather_kernels.cuh): rows of the table into `values`; invalid index values write zeros.
Status gather(const ElementwiseRun& r, const IndexedProblem& p);

// Scatter-add with atomics (scatter_atomic_kernels.cuh), rows or elements.
Status scatter_atomic(const ElementwiseRun& r, const IndexedProblem& p);

// The line kernels below sum the lines of `layout` (p.layout, or dim_innermost's for column lines).
// `overwrite`: write every table element rather than add to it (the walk covers every line of the
// table); `zeroed`: adding into a table known to hold zeros (zeroed first), so nothing is loaded.

// Scatter-add of ScatterKernel::shared_line problems (scatter_line_kernels.cuh): a destination line
// per block, summed in shared memory, atomic or ordered by p.variant; no workspace.
Status scatter_line(const ElementwiseRun& r, const IndexedProblem& p, const IndexedLayout& layout, bool overwrite,
                    bool zeroed);

// Scatter-add of ScatterKernel::column_tiles problems (scatter_columns_kernels.cuh): element mode
// along a dim that is not the walk's innermost, a tile of columns by a slab of rows summed in shared
// memory, atomic or ordered by p.variant. `overwrite` as scatter_line; no workspace.
Status scatter_columns(const ElementwiseRun& r, const IndexedProblem& p, bool overwrite);

// Scatter-add of lines of at most kShortLineEntries entries (scatter_short_kernels.cuh): a group of
// lanes per line sums each destination's entries in entry order and adds the sum to it once (no
// atomics: deterministic, f32 sums for 16-bit types); no workspace.
Status scatter_short_lines(const ElementwiseRun& r, const IndexedProblem& p);

// Scatter-add of ScatterKernel::warp_lines problems (scatter_warp_kernels.cuh): a few destination
// lines per warp, summed in the warp's shared memory in entry order (deterministic, f32 sums for
// 16-bit types), then written with one coalesced pass (overwriting) or slot by slot where the entries
// reached (adding); no workspace.
Status scatter_warp_lines(const ElementwiseRun& r, const IndexedProblem& p, const IndexedLayout& layout, bool overwrite,
                          bool zeroed);

// Deterministic scatter-add (scatter_sorted_kernels.cuh): rows sorted by destination, summed by
// window in p.workspace (sorted_scatter_workspace).
Status scatter_sorted(const ElementwiseRun& r, const IndexedProblem& p);
#endif

}  // namespace baracuda::detail::cuda

// The CUDA indexing policy, decided at select: which scatter kernel, which default variant, and the
// workspace.
#include <utility>

#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {
namespace {

// Entries per destination line when the scatter's walk has dim innermost with one index value per
// entry (element mode, or a 1-D index with nothing after dim), else 0. An index of size 1 along dim
// puts every entry alone on its own line. Decided from the shapes alone (strides do not move dim in
// the walk).
int64_t line_entries(const IndexedProblemDesc& desc) {
  int last = desc.shape.rank - 1;
  while (last > desc.dim && desc.shape.dims[last] == 1) --last;
  return desc.scatter && last == desc.dim ? desc.shape.dims[desc.dim] : 0;
}

bool sixteen_bit(DType dtype) { return dtype == DType::f16 || dtype == DType::bf16; }

// Bytes of a sum (acc_t<T>): f32 for 16-bit types.
int64_t acc_size(DType dtype) { return static_cast<int64_t>(dtype_size(acc_dtype(dtype))); }
// Sums a block's shared line holds (scatter_line_kernels.cuh: kSharedRowBytes of acc_t<T>).
int64_t shared_line_slots(DType dtype) { return kSharedRowBytes / acc_size(dtype); }

// Element mode along a dim that is not the walk's innermost (a later dim has more than one
// element): the column tiles while they pay, and while the problem gives enough items or short ones
// (kMinColumnItems). Against f32 / f64 atomics, while the slabs are at most kMaxColumnSlabs
// (measured); against the global sort (16-bit defaults, deterministic variants), while the entries'
// bytes that the slabs read again stay below a table column's bytes plus what the sort costs an
// entry (kSortEntryBytes) and the slabs are at most kMaxColumnSlabsBesideSort (past it, measured:
// the write-back of many narrow slabs, 32 bytes a row, runs slower than the sort's zeroing and sums).
inline constexpr int64_t kMaxColumnSlabsBesideSort = 32;
// Whether the problem is an element-mode scatter along a dim that is not the walk's innermost (a
// later dim has more than one element) onto a table with rows along dim.
bool along_outer_dim(const IndexedProblemDesc& desc) {
  if (!desc.scatter || desc.broadcast_index || desc.shape.numel() == 0) return false;
  bool outer = false;
  for (int d = desc.dim + 1; d < desc.shape.rank; ++d) outer = outer || desc.shape.dims[d] > 1;
  return outer && desc.table_shape.dims[desc.dim] > 0;
}

bool column_tiles_pay(const IndexedProblemDesc& desc, bool against_atomics) {
  if (!along_outer_dim(desc)) return false;
  const int64_t dim_size = desc.table_shape.dims[desc.dim];
  const ColumnTiles tiles = column_tiles(desc.dtype, dim_size);
  const int64_t entries = desc.shape.dims[desc.dim], columns = desc.shape.numel() / entries;
  // (Quotients and doubles: a descriptor's sizes reach 2^62.)
  const double items = double((columns + tiles.width - 1) / tiles.width) * double(tiles.slabs);
  if (items < double(kMinColumnItems) && entries > kMaxColumnItemEntries / tiles.width) return false;
  if (against_atomics) return tiles.slabs <= kMaxColumnSlabs;
  if (tiles.slabs > kMaxColumnSlabsBesideSort) return false;
  const auto size = static_cast<int64_t>(dtype_size(desc.dtype));
  const auto entry_bytes = size + static_cast<int64_t>(dtype_size(desc.index_dtype));
  // In doubles: a cost estimate, past int64 for huge tables.
  return double(tiles.slabs) * double(entries) * double(entry_bytes) <=
         double(dim_size) * double(size) + double(entries) * double(kSortEntryBytes);
}

// The column lines (each column's line summed by the line kernels, the table zeroed first when
// overwritten) where each column has few entries on a tall table: at most kColumnLineEntries, where
// the column tiles would need more than kMaxColumnLineSlabs slabs, each reading every entry of its
// columns (measured: bench/NOTES.md, "Column lines"). Such lines are sparse (more than 8 slabs are at
// least 6145 rows: at most an entry a 6 slots); a line's slots are numbered in an int.
bool column_lines_pay(const IndexedProblemDesc& desc) {
  if (!along_outer_dim(desc)) return false;
  const int64_t dim_size = desc.table_shape.dims[desc.dim], entries = desc.shape.dims[desc.dim];
  return entries <= kColumnLineEntries && dim_size <= kMaxWarpKey &&
         column_tiles(desc.dtype, dim_size).slabs > kMaxColumnLineSlabs;
}

// Lines of at most kWarpItemEntries entries take a warp's sums (the warp lines) where they hold more
// entries than a warp's lanes, or where the table is overwritten, the walk reaches every line of it
// and a line's sums fit a warp's shared memory: then the warp writes each line once, zeros included,
// instead of zeroing the table and adding the entries after (measured: bench/NOTES.md, "Warp
// lines"). Adding, the warp sums only the slots its entries reach, whatever the line's length, and
// in f32 / f64 (their sorted variant: the default adds with atomics) takes sparse lines of up to
// kWarpLineEntries entries: 16-bit types, which load each reached slot before adding, measured
// slower there than the shared line (bench/NOTES.md, "Warp lines adding"); denser lines keep the
// shared line, which reads and writes each line once.
// Adding a few entries a line into a table, the short lines touch only their destinations.
ScatterKernel scatter_kernel(const IndexedProblemDesc& desc) {
  const int64_t entries = line_entries(desc);
  if (entries <= 0) return ScatterKernel::general;  // see column_tiles_pay
  const int64_t line_size = desc.table_shape.dims[desc.dim];
  const bool writes_every_line = !desc.accumulate && covers_every_table_line(desc);
  const int64_t warp_line_size = writes_every_line ? kWarpLineBytes / acc_size(desc.dtype) : kMaxWarpKey;
  const int64_t warp_entries = !writes_every_line && !sixteen_bit(desc.dtype) && sparse_line(entries, line_size)
                                   ? kWarpLineEntries
                                   : kWarpItemEntries;
  const bool warp_fits = line_size >= 1 && line_size <= warp_line_size && entries <= warp_entries;
  if (warp_fits && (entries > kShortLineEntries || writes_every_line)) return ScatterKernel::warp_lines;
  if (entries <= kShortLineEntries) return ScatterKernel::short_lines;
  // A line longer than a slab of shared memory is cut into slabs, each reading all the line's
  // entries (from L2 after the first): worth it while the entries are few beside a slab.
  const int64_t slots = shared_line_slots(desc.dtype);
  // (A line of no slot, every entry out of range, takes the general kernel: items are sized by lines.)
  return line_size >= 1 && (line_size <= slots || entries <= slots / kSlabEntriesDivisor) ? ScatterKernel::shared_line
                                                                                          : ScatterKernel::general;
}

}  // namespace

ColumnTiles column_tiles(DType dtype, int64_t dim_size) {
  ColumnTiles t;
  const int64_t slots = shared_line_slots(dtype);
  t.width = 32 / static_cast<int64_t>(dtype_size(dtype));
  while (t.width < 256 && dim_size <= slots / (2 * t.width)) t.width *= 2;
  t.rows = slots / t.width;
  t.slabs = (dim_size + t.rows - 1) / t.rows;
  return t;
}

// Measured (bench/NOTES.md, "Column lines"): more entries on columns that fit the shared line's sums
// run faster there (atomically or in order in shared memory, then entry by entry), longer columns
// faster by the warp's hash in tiles than by slabs of the shared line. The warp's hash stays within
// kWarpLineEntries entries (2 x 512 slots: 96 KB of shared memory a block in f64, which sm_80-89 GPUs
// give too); more entries on a longer column take the shared line's slabs.
bool column_lines_by_warp(const IndexedProblemDesc& desc) {
  const int64_t entries = desc.shape.dims[desc.dim];
  return entries <= kWarpItemEntries ||
         (entries <= kWarpLineEntries && desc.table_shape.dims[desc.dim] > shared_line_slots(desc.dtype));
}

IndexedLayout dim_innermost(const IndexedLayout& layout) {
  // (dim is a walk dim of its own: only the marker tensor steps along it, so collapsing never merged
  // it; where it has one element it left the walk and nothing moves.)
  IndexedLayout moved = layout;
  Walker<kRowTensors>& w = moved.rows;
  int d = 0;
  while (d < w.rank && w.strides[kRowTensors - 1][d] == 0) ++d;
  for (; d + 1 < w.rank; ++d) {
    std::swap(w.sizes[d], w.sizes[d + 1]);
    for (int t = 0; t < kRowTensors; ++t) std::swap(w.strides[t][d], w.strides[t][d + 1]);
  }
  return moved;
}

ScatterStrategy scatter_strategy(const IndexedProblemDesc& problem, std::optional<IndexVariant> forced,
                                 bool deterministic) {
  ScatterStrategy s;
  s.kernel = scatter_kernel(problem);
  // 16-bit types accumulate in f32 by default: atomically only in shared memory, else sorted.
  const bool general_atomics = forced ? *forced == IndexVariant::atomic : !deterministic && !sixteen_bit(problem.dtype);
  // (Not against f32 / f64 atomics: measured slower, bench/NOTES.md "Column lines". 16-bit types asked
  // for atomics keep them, in f32 in shared memory, as the shared line does.)
  if (s.kernel == ScatterKernel::general && !(general_atomics && !sixteen_bit(problem.dtype)) &&
      column_lines_pay(problem))
    s.kernel = ScatterKernel::column_lines;
  if (s.kernel == ScatterKernel::general && column_tiles_pay(problem, general_atomics))
    s.kernel = ScatterKernel::column_tiles;
  // f32 / f64 atomics into the table take lines past shared memory (slabs lose to them), and, when
  // adding, the short and warp lines and the sparse shared lines (at most an entry a
  // kSparseLineSlots slots, whatever their entries): measured 1.04-1.33x those (bench/NOTES.md, "Long
  // lines"). The shared line keeps adds dense with entries, where it reads and writes each line
  // once; overwriting, the line kernels write every line once where atomics need the table zeroed.
  const bool adds = problem.accumulate || !covers_every_table_line(problem);
  const bool sparse = sparse_line(line_entries(problem), problem.table_shape.dims[problem.dim]);
  const bool slabs = problem.table_shape.dims[problem.dim] > shared_line_slots(problem.dtype);
  const bool atomics_take_it =
      s.kernel == ScatterKernel::shared_line
          ? slabs || (adds && sparse)
          : adds && (s.kernel == ScatterKernel::short_lines || s.kernel == ScatterKernel::warp_lines);
  if (general_atomics && !sixteen_bit(problem.dtype) && atomics_take_it) s.kernel = ScatterKernel::general;
  // Short and warp lines (and column lines of a warp's entries) are summed in entry order at no cost:
  // sorted (deterministic) by default where they stay (16-bit types, overwriting, determinism asked).
  // 16-bit types add atomically by default only in shared memory (f32 sums).
  const bool warp_sums = s.kernel == ScatterKernel::short_lines || s.kernel == ScatterKernel::warp_lines ||
                         (s.kernel == ScatterKernel::column_lines && column_lines_by_warp(problem));
  const bool shared_sums = s.kernel == ScatterKernel::shared_line || s.kernel == ScatterKernel::column_tiles ||
                           s.kernel == ScatterKernel::column_lines;
  const bool atomic_default = !deterministic && !warp_sums && (!sixteen_bit(problem.dtype) || shared_sums);
  s.variant = forced.value_or(atomic_default ? IndexVariant::atomic : IndexVariant::sorted);
  if (s.variant == IndexVariant::sorted && s.kernel == ScatterKernel::general && problem.shape.numel() > 0) {
    int64_t rows = 0, length = 0;
    rows_and_length(problem, rows, length);
    s.workspace = sorted_scatter_workspace(rows, length, problem.dtype).total();
  }
  return s;
}

}  // namespace baracuda::detail::cuda

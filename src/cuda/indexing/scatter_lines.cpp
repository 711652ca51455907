// The line scatter-adds on CUDA (either variant; ScatterKernel::short_lines, shared_line, warp_lines,
// column_tiles and column_lines): their kernels (cuda/common/scatter_short_kernels.cuh,
// scatter_line_kernels.cuh, scatter_warp_kernels.cuh, scatter_columns_kernels.cuh) compiled at select,
// one program an element type, index type and what select decides of the kernel (the variant; the
// warp's WarpSums); the item's span, the dense walk and the grid come from the views.
#include <algorithm>
#include <string>

#include "cuda/common/launch.cuh"
#include "cuda/elementwise_launch.hpp"
#include "cuda/indexing/strategies.hpp"
#include "cuda/jit/launch.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {
namespace {

struct ShortLinesProgram;
struct ColumnsProgram;

// The program `name` of one kernel template over (T, [kOrdered,] Idx).
template <class Tag, class T, class Idx, class... Ordered>
Expected<const jit::Module*> one_kernel_module(const ElementwiseRun& r, const char* name, const char* kernel,
                                               const char* header) {
  return module_for<ProgramTag<Tag, T, Idx, Ordered...>>(r, [&] {
    std::string args = jit::type_name<T>();
    ((args += Ordered::value ? ", true" : ", false"), ...);
    args += ", " + jit::type_name<Idx>();
    jit::Program prog = indexing_program(std::string(name) + "<" + args + ">", header);
    prog.kernels = {std::string(kKernelNamespace) + kernel + "<" + args + ">"};
    return prog;
  });
}

// Whether each item's table elements are one run (write_run): unit steps along dim and, several
// lines an item, the walk's lines back to back in the table.
bool item_runs(const IndexedLayout& layout, LineSpan span) {
  if (layout.table_dim_stride != 1) return false;
  if (span != LineSpan::several) return true;
  const Walker<kRowTensors>& w = layout.rows;
  int64_t step = layout.dim_size;
  for (int d = w.rank - 2; d >= 0; --d)
    if (w.strides[2][d] != step || __builtin_mul_overflow(step, w.sizes[d], &step)) return false;
  return true;
}

// The shared line's launch (its program's kernels in LineSpan order), for elements of
// `element_bytes` summed in `acc_bytes`.
Status launch_line(const ElementwiseRun& r, const IndexedProblem& p, const IndexedLayout& layout, const jit::Module& m,
                   bool overwrite, bool zeroed, size_t element_bytes, size_t acc_bytes) {
  const int sm_count = r.target.sm_count;
  const int64_t slots = kSharedRowBytes / acc_bytes;
  const int64_t entries = layout.rows.inner_size(), lines = layout.row_count / entries;
  // Several lines an item while two fit and their entries stay within a tile, and while that leaves
  // two items a block of a full grid (counted at five resident blocks an SM, the most there are).
  const int64_t fit = std::min(slots / layout.dim_size, kLineTile / entries);
  const int64_t several = std::min(fit, lines / (int64_t(sm_count) * 5 * 2));
  const LineSpan span = layout.dim_size > slots ? LineSpan::slab : several >= 2 ? LineSpan::several : LineSpan::one;
  const int64_t per_item = span == LineSpan::slab      ? (layout.dim_size + slots - 1) / slots
                           : span == LineSpan::several ? several
                                                       : 1;
  // Adding, an item whose entries are one tile and sparse on its lines is written back entry by
  // entry (add_entries), else slot by slot: scattered writes win on sparse lines and lose to the
  // slot scan on dense ones (bench/NOTES.md, "Long lines").
  const bool by_entry = !overwrite && entries <= kLineTile && sparse_line(entries, layout.dim_size);
  const void* kernel = m.kernels[static_cast<int>(span)];
  // An item's sums and write_run's shift (16 / sizeof(T) sums at most).
  const int64_t shift = 16 / static_cast<int64_t>(element_bytes);
  const size_t bytes =
      static_cast<size_t>((span == LineSpan::several ? several * layout.dim_size : std::min(layout.dim_size, slots)) +
                          shift) *
      acc_bytes;
  // The line takes up to the 48 KB a block gets by default and the shift's sums past it. The
  // kernel's largest, the same on every call: a launch of smaller items elsewhere never lowers it
  // under this one.
  const int max_bytes = static_cast<int>(kSharedRowBytes + shift * acc_bytes);
  if (Status st = raise_kernel_attribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_bytes,
                                         "cudaFuncSetAttribute");
      !st)
    return st;
  // One wave of resident blocks, each looping over its items with the next tile in flight.
  const int64_t items = span == LineSpan::several ? (lines + several - 1) / several : lines * per_item;
  unsigned blocks = 0;
  if (Status st = one_wave_blocks(kernel, bytes, items, sm_count, blocks); !st) return st;
  const bool runs = item_runs(layout, span);
  return launch_kernel(m, static_cast<int>(span), dim3(blocks), kThreads, r.stream, "scatter_shared_row_kernel",
                       {&layout, &p.values, &p.table, &p.index, &overwrite, &per_item, &by_entry, &runs, &zeroed},
                       bytes);
}

// Where the warp keeps its sums: its lines' slots where they fit and a line's entries make one tile
// (each slot's owner marked when adding), else the reached slots hashed.
WarpSums warp_sums(int64_t entries, int64_t line_size, size_t acc_bytes, bool overwrite) {
  const int64_t tiles = (entries + kWarpItemEntries - 1) / kWarpItemEntries;
  if (tiles > 1 || line_size > kWarpLineBytes / static_cast<int64_t>(acc_bytes)) return WarpSums::hashed;
  return overwrite ? WarpSums::lines : WarpSums::owned_lines;
}

// The warp lines' program of one WarpSums: its kernels the dense walk's and the other's (and, writing
// whole lines, the other's element by element: kVec 1).
template <class T, class Idx>
Expected<const jit::Module*> warp_module(const ElementwiseRun& r, WarpSums sums) {
  const auto make = [&](auto sums_tag) {
    constexpr WarpSums kSums = decltype(sums_tag)::value;
    return module_for<ProgramTag<WarpSums, T, Idx, decltype(sums_tag)>>(r, [] {
      const char* sums_name = kSums == WarpSums::lines         ? "lines"
                              : kSums == WarpSums::owned_lines ? "owned_lines"
                                                               : "hashed";
      const std::string ti = jit::type_name<T>() + ", " + jit::type_name<Idx>();
      const std::string vec = kSums == WarpSums::lines ? std::to_string(16 / sizeof(T)) : "1";
      const std::string tail = std::string(", ") + std::string(kKernelNamespace) + "WarpSums::" + sums_name + ", " + ti;
      const std::string kernel = std::string(kKernelNamespace) + "scatter_warp_lines_kernel<";
      jit::Program prog =
          indexing_program("scatter_warp_lines<" + ti + ", " + sums_name + ">", "cuda/common/scatter_warp_kernels.cuh");
      prog.kernels = {kernel + vec + ", true" + tail + ">", kernel + vec + ", false" + tail + ">"};
      if (kSums == WarpSums::lines) prog.kernels.push_back(kernel + "1, false" + tail + ">");
      return prog;
    });
  };
  switch (sums) {
    case WarpSums::lines:
      return make(std::integral_constant<WarpSums, WarpSums::lines>{});
    case WarpSums::owned_lines:
      return make(std::integral_constant<WarpSums, WarpSums::owned_lines>{});
    case WarpSums::hashed:
      break;
  }
  return make(std::integral_constant<WarpSums, WarpSums::hashed>{});
}

// Whether every line of the table starts 16-byte aligned with unit stride along dim and a whole
// number of 16-byte chunks: then the write-back moves chunks.
bool chunked_lines(const IndexedLayout& layout, const WarpItems& g, const void* table, size_t element_bytes) {
  const int64_t vec = 16 / static_cast<int64_t>(element_bytes);
  if (layout.table_dim_stride != 1 || g.line_size % vec != 0 || !aligned16(table)) return false;
  for (int d = 0; d < g.outer_dims; ++d)
    if (layout.rows.strides[2][d] % vec != 0) return false;  // the table's line steps
  return true;
}

// Whether the walk is [lines, entries] with unit steps in the values and the index, the table's lines
// back to back (or one entry a line, consecutive): see load_item and write_item.
bool dense_walk(const IndexedLayout& layout, const WarpItems& g) {
  const Walker<kRowTensors>& w = layout.rows;
  if (layout.table_dim_stride != 1 || g.outer_dims > 1) return false;
  const bool walked = g.outer_dims < w.rank;
  for (int t = 0; t < 2 && walked; ++t)
    if (w.inner_stride(t) != 1) return false;
  if (g.outer_dims == 0) return true;  // one line
  return w.strides[0][0] == g.entries && w.strides[1][0] == g.entries && w.strides[2][0] == g.line_size;
}

// Kernel `index` of a warp lines' program, sums of `acc_bytes`.
Status launch_warp_lines(const ElementwiseRun& r, const IndexedProblem& p, const IndexedLayout& layout,
                         const WarpItems& g, const jit::Module& m, int index, WarpSums sums, size_t acc_bytes) {
  const void* kernel = m.kernels[index];
  // At most 64 KB + 8 x 32 bytes of sums, and 8 x 256 bytes of bits; hashed, up to 8 x 1024 sums and
  // keys.
  const int marks = sums == WarpSums::hashed ? g.warp_slots : sums == WarpSums::owned_lines ? kOwnedWords : 0;
  const size_t bytes = size_t(kWarps) * (size_t(g.warp_slots) * acc_bytes + size_t(marks) * sizeof(int));
  // Shared memory before L1: four blocks of 36 KB an SM (three of 68 KB or 64 KB, two of 96 KB), past
  // the 48 KB default.
  if (Status st = raise_kernel_attribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared, "cudaFuncSetAttribute");
      !st)
    return st;
  // The kernel's largest sums (one line of kWarpLineBytes a warp, or the largest hash), the same on
  // every call: a launch of smaller items elsewhere never lowers it under this one.
  const int max_bytes = sums == WarpSums::hashed
                            ? kWarps * kMaxHashSlots * static_cast<int>(acc_bytes + sizeof(int))
                            : kWarps * static_cast<int>(kWarpLineBytes + 32 + 16 + kOwnedWords * 4);
  if (Status st = raise_kernel_attribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_bytes,
                                         "cudaFuncSetAttribute");
      !st)
    return st;
  // One wave of resident blocks, each warp looping over its items (the next item's loads in flight).
  unsigned blocks = 0;
  if (Status st = one_wave_blocks(kernel, bytes, (g.items + kWarps - 1) / kWarps, r.target.sm_count, blocks); !st)
    return st;
  return launch_kernel(m, index, dim3(blocks), kThreads, r.stream, "scatter_warp_lines_kernel",
                       {&layout, &g, &p.values, &p.table, &p.index}, bytes);
}

}  // namespace

Status scatter_short_lines(const ElementwiseRun& r, const IndexedProblem& p) {
  return with_scatter_types(p.desc, [&](auto t, auto index) -> Status {
    Expected<const jit::Module*> module =
        one_kernel_module<ShortLinesProgram, typename decltype(t)::type, typename decltype(index)::type>(
            r, "scatter_short_lines", "scatter_short_lines_kernel", "cuda/common/scatter_short_kernels.cuh");
    if (!module || !*module) return module.status();
    const IndexedLayout& layout = p.layout;
    // One entry a line when the index has size 1 along dim (dim then left the walk), else dim's size.
    const int64_t entries = p.desc.shape.dims[p.desc.dim] > 1 ? layout.rows.inner_size() : 1;
    int group = 1;
    while (group < entries) group *= 2;
    const int64_t lines = layout.row_count / entries;
    const int64_t lines_per_block = int64_t(kWarpsPerBlock) * (32 / group) * kShortRounds;
    const int64_t needed = (lines + lines_per_block - 1) / lines_per_block;
    const auto blocks = static_cast<unsigned>(std::clamp<int64_t>(needed, 1, int64_t(r.target.sm_count) * 8));
    const bool overwrite = !p.desc.accumulate;
    return launch_kernel(**module, 0, dim3(blocks), kThreads, r.stream, "scatter_short_lines_kernel",
                         {&layout, &p.values, &p.table, &p.index, &entries, &group, &overwrite});
  });
}

Status scatter_line(const ElementwiseRun& r, const IndexedProblem& p, const IndexedLayout& layout, bool overwrite,
                    bool zeroed) {
  return with_scatter_types(p.desc, [&](auto t, auto index) -> Status {
    using T = typename decltype(t)::type;
    using Idx = typename decltype(index)::type;
    const auto line = [&](auto ordered) {
      constexpr bool kOrdered = decltype(ordered)::value;
      return module_for<ProgramTag<LineSpan, T, Idx, decltype(ordered)>>(r, [] {
        const std::string head = jit::type_name<T>() + (kOrdered ? ", true, " : ", false, ");
        const std::string idx = ", " + jit::type_name<Idx>();
        jit::Program prog = indexing_program("scatter_line<" + head + jit::type_name<Idx>() + ">",
                                             "cuda/common/scatter_line_kernels.cuh");
        for (const char* span : {"one", "several", "slab"})  // (LineSpan's order)
          prog.kernels.push_back(std::string(kKernelNamespace) + "scatter_shared_row_kernel<" + head +
                                 std::string(kKernelNamespace) + "LineSpan::" + span + idx + ">");
        return prog;
      });
    };
    Expected<const jit::Module*> module =
        p.variant == IndexVariant::sorted ? line(std::true_type{}) : line(std::false_type{});
    if (!module || !*module) return module.status();
    return launch_line(r, p, layout, **module, overwrite, zeroed, sizeof(T), sizeof(acc_t<T>));
  });
}

Status scatter_columns(const ElementwiseRun& r, const IndexedProblem& p, bool overwrite) {
  return with_scatter_types(p.desc, [&](auto t, auto index) -> Status {
    using T = typename decltype(t)::type;
    using Idx = typename decltype(index)::type;
    const char* kernel = "scatter_columns_kernel";
    const char* header = "cuda/common/scatter_columns_kernels.cuh";
    Expected<const jit::Module*> module =
        p.variant == IndexVariant::sorted
            ? one_kernel_module<ColumnsProgram, T, Idx, std::true_type>(r, "scatter_columns", kernel, header)
            : one_kernel_module<ColumnsProgram, T, Idx, std::false_type>(r, "scatter_columns", kernel, header);
    if (!module || !*module) return module.status();
    const Walker<kRowTensors>& w = p.layout.rows;
    // The marker tensor (the walker's last) is non-zero only along dim; the innermost dim is not dim.
    const int inner = w.rank - 1;
    if (inner < 0 || w.strides[kRowTensors - 1][inner] != 0)
      return Status::error(StatusCode::backend_error, "scatter_columns: dim is the walk's innermost dim");
    ColumnWalk cw;
    static_cast<EntryColumnWalk&>(cw) = entry_column_walk(w);
    const ColumnTiles tiles = column_tiles(p.desc.dtype, p.layout.dim_size);
    while ((int64_t(1) << cw.shift) < tiles.width) ++cw.shift;
    cw.column_tiles = (cw.columns + tiles.width - 1) / tiles.width;
    cw.rows = tiles.rows;
    cw.slabs = tiles.slabs;
    cw.dim_size = p.layout.dim_size;
    cw.table_dim_stride = p.layout.table_dim_stride;
    cw.padding = p.layout.padding;
    const size_t bytes = static_cast<size_t>(std::min(cw.dim_size, cw.rows) * tiles.width) * sizeof(acc_t<T>);
    // The sums can take the 48 KB a block gets by default, beside the kernel's static shared memory:
    // the kernel's largest (rows x width sums are at most a shared line's), so that a launch of fewer
    // bytes elsewhere never lowers it under this one.
    const int max_bytes = static_cast<int>(kSharedRowBytes);
    if (Status st = raise_kernel_attribute((*module)->kernels[0], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           max_bytes, "cudaFuncSetAttribute");
        !st)
      return st;
    const int64_t items = cw.lines.numel() * cw.column_tiles * cw.slabs;
    const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>(items, 1, int64_t(r.target.sm_count) * 16));
    return launch_kernel(**module, 0, dim3(blocks), kThreads, r.stream, "scatter_columns_kernel",
                         {&cw, &p.values, &p.table, &p.index, &overwrite}, bytes);
  });
}

Status scatter_warp_lines(const ElementwiseRun& r, const IndexedProblem& p, const IndexedLayout& layout, bool overwrite,
                          bool zeroed) {
  return with_scatter_types(p.desc, [&](auto t, auto index) -> Status {
    using T = typename decltype(t)::type;
    using Idx = typename decltype(index)::type;
    using Acc = acc_t<T>;
    if (r.mode != ElementwiseMode::launch) {
      // Select has no views: a line's entries and length from the shapes, as the walk has them (dim
      // is its innermost dim, or left it: one entry a line).
      const int64_t walked = p.desc.shape.dims[p.desc.dim];
      const int64_t entries = walked > 1 ? walked : 1, line_size = p.desc.table_shape.dims[p.desc.dim];
      return warp_module<T, Idx>(r, warp_sums(entries, line_size, sizeof(Acc), overwrite)).status();
    }
    const bool dim_walked = p.desc.shape.dims[p.desc.dim] > 1;  // else dim left the walk: one entry a line
    WarpItems g;
    g.zeroed = zeroed;
    // Overwriting, <= kWarpItemEntries; adding, <= kWarpLineEntries (strategy).
    g.entries = static_cast<int>(dim_walked ? layout.rows.inner_size() : 1);
    // Overwriting, <= kWarpLineBytes / sizeof(Acc); adding, <= kMaxWarpKey (strategy).
    g.line_size = static_cast<int>(layout.dim_size);
    g.outer_dims = dim_walked ? layout.rows.rank - 1 : layout.rows.rank;
    g.lines = layout.row_count / g.entries;
    // A line's sums in the warp's lines where they fit and its entries make one tile (overwriting,
    // they do: strategy), else hashed; a line of more entries is an item of several tiles.
    g.tiles = (g.entries + static_cast<int>(kWarpItemEntries) - 1) / static_cast<int>(kWarpItemEntries);
    const WarpSums sums = warp_sums(g.entries, g.line_size, sizeof(Acc), overwrite);
    const bool hashed = sums == WarpSums::hashed;
    while (g.tiles > 1 && (1 << g.hash_bits) < 2 * g.entries) ++g.hash_bits;
    // As many lines an item as its entries and its sums allow (hashed: an item's slots numbered in an
    // int), while every SM still gets 32 items.
    const int64_t fit = std::min<int64_t>(
        hashed ? kMaxWarpKey / g.line_size : kWarpItemBytes / static_cast<int64_t>(sizeof(Acc)) / g.line_size,
        kWarpItemEntries / g.entries);
    g.per_item = static_cast<int>(
        std::clamp<int64_t>(g.lines / (int64_t(r.target.sm_count) * 32), 1, std::max<int64_t>(fit, 1)));
    g.items = (g.lines + g.per_item - 1) / g.per_item;
    const int aligned = 16 / static_cast<int>(sizeof(Acc));  // sums in 16 bytes
    g.warp_slots =
        hashed ? 1 << g.hash_bits
               : (g.per_item * g.line_size + static_cast<int>(16 / sizeof(T)) + aligned - 1) / aligned * aligned;
    Expected<const jit::Module*> module = warp_module<T, Idx>(r, sums);
    if (!module || !*module) return module.status();
    // The program's kernels: the dense walk's, the other's, and (whole lines) the other's without
    // 16-byte chunks.
    const bool dense = dense_walk(layout, g);
    const int kernel = dense ? 0 : sums != WarpSums::lines || chunked_lines(layout, g, p.table, sizeof(T)) ? 1 : 2;
    return launch_warp_lines(r, p, layout, g, **module, kernel, sums, sizeof(Acc));
  });
}

}  // namespace baracuda::detail::cuda

// The general scatter-adds (ScatterKernel::general) on CUDA, for the walks the line kernels do not
// take: with atomics (cuda/common/scatter_atomic_kernels.cuh), or sorted by destination and summed by
// window (cuda/common/scatter_sorted_kernels.cuh; CUB's radix sort in between, cuda/indexing/sort.cu).
// The kernels are compiled at select, one program an element type and index type (and for the sorted
// sums whether the table was zeroed first); the kernel and its grid come from the views.
#include <algorithm>
#include <numeric>
#include <string>

#include "cuda/common/launch.cuh"
#include "cuda/common/row_walk.cuh"
#include "cuda/elementwise_launch.hpp"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {
namespace {

// The programs' kernels, in their order (the vector kernels for f32 alone).
enum class AtomicKernel : int { rows, span_rows, elements, vectors, span_vectors };
enum class SortedKernel : int { keys, windows_vectorized, element_windows, windows, chunks, fix_up_vectorized, fix_up };

// Spans of kSpan rows while they give the device 4 groups an SM (each group a block where rows are
// long: 8192 rows of 768 measured even with a row a group, bench/NOTES.md); else a row a group, as
// many groups as rows, the kernels' one-row instantiation, and rows of more than a block's units cut
// into pieces of at least a block's, up to 4 groups an SM (16 rows of 262144 f32 were 16 blocks on
// 132 SMs: 0.88x PyTorch).
inline bool spans_pay(int64_t rows, int sm_count) { return rows >= int64_t(kSpan) * 4 * sm_count; }
inline int64_t pieces_of(int64_t rows, int64_t units, int sm_count) {
  if (spans_pay(rows, sm_count) || rows == 0) return 1;
  return std::max<int64_t>(1, std::min((int64_t(4) * sm_count + rows - 1) / rows, units / kThreads));
}

Status launch_atomic(const ElementwiseRun& r, const IndexedProblem& p, const jit::Module& m) {
  const IndexedLayout& layout = p.layout;
  const int sm_count = r.target.sm_count;
  const bool spans = spans_pay(layout.row_count, sm_count);
  auto launch = [&](AtomicKernel kernel, unsigned blocks, const char* what, auto... extra) {
    return launch_kernel(m, static_cast<int>(kernel), dim3(blocks), kThreads, r.stream, what,
                         {&layout, &p.values, &p.table, &p.index, &extra...});
  };
  if (p.desc.dtype == DType::f32 && p.vectorized_rows) {
    const int64_t vectors = layout.row_length / 4, pieces = pieces_of(layout.row_count, vectors, sm_count);
    const int lanes = lanes_for(vectors);
    return launch(spans ? AtomicKernel::span_vectors : AtomicKernel::vectors,
                  row_blocks(ceil_div(layout.row_count, int64_t{spans ? kSpan : 1}) * pieces, lanes, sm_count),
                  "scatter_atomic_v4_kernel", pieces, lanes);
  }
  if (layout.columns.rank == 0 && layout.rows.rank > 0) {
    const int64_t inner = layout.rows.inner_size();
    const int lanes = lanes_for((inner + kElementBatch - 1) / kElementBatch);
    return launch(AtomicKernel::elements, row_blocks(layout.row_count / inner, lanes, sm_count),
                  "scatter_atomic_elements_kernel", lanes);
  }
  const int64_t pieces = pieces_of(layout.row_count, layout.row_length, sm_count);
  const int lanes = lanes_for(layout.row_length);
  return launch(spans ? AtomicKernel::span_rows : AtomicKernel::rows,
                row_blocks(ceil_div(layout.row_count, int64_t{spans ? kSpan : 1}) * pieces, lanes, sm_count),
                "scatter_atomic_kernel", pieces, lanes);
}

// The sorted scatter's scratch within the workspace.
struct SortedBuffers {
  uint64_t* keys_in;
  uint64_t* keys;       // sorted
  int64_t* offsets_in;  // each row's values offset: the sort's payload
  int64_t* offsets;     // sorted
  void* partials;
  void* sort_temp;
  size_t sort_temp_bytes;
};

size_t round_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

SortedBuffers carve(void* workspace, const SortedScatterWorkspace& sizes) {
  char* p = static_cast<char*>(workspace);
  SortedBuffers b;
  b.keys_in = reinterpret_cast<uint64_t*>(p);
  b.keys = reinterpret_cast<uint64_t*>(p + sizes.keys);
  b.offsets_in = reinterpret_cast<int64_t*>(p + 2 * sizes.keys);
  b.offsets = reinterpret_cast<int64_t*>(p + 2 * sizes.keys + sizes.offsets);
  b.partials = p + 2 * sizes.keys + 2 * sizes.offsets;
  b.sort_temp = p + 2 * sizes.keys + 2 * sizes.offsets + sizes.partials;
  b.sort_temp_bytes = sizes.sort_temp;
  return b;
}

// The greatest common divisor of the table strides the rows step along (with dim's): every
// destination offset is a multiple of it. An embedding table of 768-element rows sorts 16-bit row
// numbers (two radix passes) instead of 26-bit offsets (four).
int64_t key_unit(const IndexedLayout& layout) {
  int64_t unit = layout.table_dim_stride;
  for (int d = 0; d < layout.rows.rank; ++d) unit = std::gcd(unit, layout.rows.strides[2][d]);
  return unit > 0 ? unit : 1;
}

int key_bits(uint64_t sentinel) {
  int bits = 1;
  while (bits < 64 && (uint64_t{1} << bits) <= sentinel) ++bits;
  return bits;
}

// Adds the layout's rows of `values` into `table` by runs of equal keys: `k.keys` are the rows'
// destinations sorted stably with the sentinel last, `offsets` the rows' values offsets in the same
// order, `partials` two rows of Acc per window (sorted_window(row_length) rows each), then a row per
// kChunkWindows windows. `vector`: elements of T a 16-byte vector.
// `vectorized_rows`: rows of whole 16-byte vectors, aligned; `zeroed`: the table holds zeros (it is
// overwritten, and was zeroed first), so the vectorized rows store their sums without loading it
// (the program's vectorized sums were compiled for it).
Status sum_sorted_runs(const ElementwiseRun& r, const jit::Module& m, const IndexedLayout& layout, bool vectorized_rows,
                       bool zeroed, const void* values, void* table, const SortedKeys& k, const int64_t* offsets,
                       void* partials, int64_t vector) {
  const int sm_count = r.target.sm_count;
  auto launch = [&](SortedKernel kernel, unsigned blocks, const char* what, std::initializer_list<const void*> args) {
    return launch_kernel(m, static_cast<int>(kernel), dim3(blocks), kThreads, r.stream, what, args);
  };
  const int64_t rows = layout.row_count;
  const int64_t window = sorted_window(layout.row_length);
  const int64_t windows = (rows + window - 1) / window;
  const int lanes = layout.columns.rank == 0 ? 1 : lanes_for(layout.row_length);
  if (vectorized_rows) {
    // At least kRowsPerWindow lanes per window, so a block's windows fit its rows in shared memory.
    const int vector_lanes = std::max<int>(lanes_for(layout.row_length / vector), int(kRowsPerWindow));
    if (Status st = launch(SortedKernel::windows_vectorized, row_blocks(windows, vector_lanes, sm_count),
                           "sum_windows_vectorized_kernel",
                           {&layout, &k, &values, &table, &offsets, &partials, &windows, &vector_lanes});
        !st)
      return st;
  } else if (layout.columns.rank == 0) {
    if (Status st = launch(SortedKernel::element_windows, grid_stride_blocks(windows, sm_count),
                           "sum_element_windows_kernel", {&layout, &k, &values, &table, &offsets, &partials, &windows});
        !st)
      return st;
  } else {
    if (Status st = launch(SortedKernel::windows, row_blocks(windows, lanes, sm_count), "sum_windows_kernel",
                           {&layout, &k, &values, &table, &offsets, &partials, &window, &windows, &lanes});
        !st)
      return st;
  }
  const bool chunked = windows >= kChunkedWindows;
  if (chunked) {
    const int chunk_lanes = lanes_for(layout.row_length);
    if (Status st = launch(SortedKernel::chunks, row_blocks(windows / kChunkWindows, chunk_lanes, sm_count),
                           "sum_chunks_kernel", {&k, &window, &windows, &layout.row_length, &partials, &chunk_lanes});
        !st)
      return st;
  }
  if (vectorized_rows) {
    const int vector_lanes = lanes_for(layout.row_length / vector);
    return launch(SortedKernel::fix_up_vectorized, row_blocks(windows, vector_lanes, sm_count),
                  "fix_up_vectorized_kernel",
                  {&layout, &k, &table, &partials, &windows, &vector_lanes, &zeroed, &chunked});
  }
  return launch(SortedKernel::fix_up, row_blocks(windows, lanes, sm_count), "fix_up_kernel",
                {&layout, &k, &table, &partials, &window, &windows, &lanes, &chunked});
}

Status launch_sorted(const ElementwiseRun& r, const IndexedProblem& p, const jit::Module& m, int64_t vector) {
  const IndexedLayout& layout = p.layout;
  const int64_t rows = layout.row_count;
  const SortedScatterWorkspace sizes = sorted_scatter_workspace(rows, layout.row_length, p.desc.dtype);
  const SortedBuffers b = carve(p.workspace, sizes);
  const int64_t unit = key_unit(layout);
  // The sentinel over the unit, rounded up: above every valid key (valid offsets are below sentinel_key).
  const SortedKeys k{b.keys, static_cast<uint64_t>((layout.sentinel_key + unit - 1) / unit), unit};
  if (Status st = launch_kernel(
          m, static_cast<int>(SortedKernel::keys), dim3(grid_stride_blocks(rows, r.target.sm_count)), kThreads,
          r.stream, "scatter_keys_kernel", {&layout, &p.index, &unit, &k.sentinel, &b.keys_in, &b.offsets_in});
      !st)
    return st;
  if (Status st = sort_pairs(b.sort_temp, b.sort_temp_bytes, b.keys_in, b.keys, b.offsets_in, b.offsets, rows,
                             key_bits(k.sentinel), r.stream);
      !st)
    return st;
  // Overwriting, the table was zeroed first (cuda/indexing.cpp).
  const bool zeroed = !p.desc.accumulate;
  return sum_sorted_runs(r, m, layout, p.vectorized_rows, zeroed, p.values, p.table, k, b.offsets, b.partials, vector);
}

}  // namespace

Status scatter_atomic(const ElementwiseRun& r, const IndexedProblem& p) {
  return with_scatter_types(p.desc, [&](auto t, auto index) -> Status {
    using T = typename decltype(t)::type;
    using Idx = typename decltype(index)::type;
    Expected<const jit::Module*> module = module_for<ProgramTag<AtomicKernel, T, Idx>>(r, [] {
      const std::string ti = jit::type_name<T>() + ", " + jit::type_name<Idx>();
      const std::string ns(kKernelNamespace);
      jit::Program prog = indexing_program("scatter_atomic<" + ti + ">", "cuda/common/scatter_atomic_kernels.cuh");
      for (int rows : {1, kSpan})
        prog.kernels.push_back(ns + "scatter_atomic_kernel<" + std::to_string(rows) + ", " + ti + ">");
      prog.kernels.push_back(ns + "scatter_atomic_elements_kernel<" + ti + ">");
      if (std::is_same_v<T, float>)
        for (int rows : {1, kSpan})
          prog.kernels.push_back(ns + "scatter_atomic_v4_kernel<" + std::to_string(rows) + ", " +
                                 jit::type_name<Idx>() + ">");
      return prog;
    });
    if (!module || !*module) return module.status();
    return launch_atomic(r, p, **module);
  });
}

Status scatter_sorted(const ElementwiseRun& r, const IndexedProblem& p) {
  return with_scatter_types(p.desc, [&](auto t, auto index) -> Status {
    using T = typename decltype(t)::type;
    using Idx = typename decltype(index)::type;
    const auto sorted = [&](auto zeroed) {
      constexpr bool kZeroed = decltype(zeroed)::value;
      return module_for<ProgramTag<SortedKernel, T, Idx, std::bool_constant<kZeroed>>>(r, [] {
        const std::string t = jit::type_name<T>(), ns(kKernelNamespace);
        const std::string name = "scatter_sorted<" + t + ", " + jit::type_name<Idx>() + (kZeroed ? ", zeroed>" : ">");
        jit::Program prog = indexing_program(name, "cuda/common/scatter_sorted_kernels.cuh");
        prog.kernels = {ns + "scatter_keys_kernel<" + jit::type_name<Idx>() + ">",
                        ns + "sum_windows_vectorized_kernel<" + t + (kZeroed ? ", true>" : ", false>"),
                        ns + "sum_element_windows_kernel<" + t + ">",
                        ns + "sum_windows_kernel<" + t + ">",
                        ns + "sum_chunks_kernel<" + jit::type_name<acc_t<T>>() + ">",
                        ns + "fix_up_vectorized_kernel<" + t + ">",
                        ns + "fix_up_kernel<" + t + ">"};
        return prog;
      });
    };
    // Overwriting, the table was zeroed first: the vectorized sums store without loading it.
    Expected<const jit::Module*> module = p.desc.accumulate ? sorted(std::false_type{}) : sorted(std::true_type{});
    if (!module || !*module) return module.status();
    return launch_sorted(r, p, **module, 16 / static_cast<int64_t>(sizeof(T)));
  });
}

SortedScatterWorkspace sorted_scatter_workspace(int64_t rows, int64_t row_length, DType dtype) {
  SortedScatterWorkspace w;
  const int64_t n = std::max<int64_t>(rows, 1);  // rows and row_length are below kMaxElements
  const CheckedSize keys = round_up_to(CheckedSize(n) * 8, 256);
  const int64_t window = sorted_window(row_length);
  const int64_t windows = (n + window - 1) / window;
  const CheckedSize partials =  // two rows a window, a row a chunk of windows (scatter_sorted_kernels.cuh)
      round_up_to(CheckedSize(2 * windows + windows / kChunkWindows) * std::max<int64_t>(row_length, 1) *
                      (dtype == DType::f64 ? 8 : 4),
                  256);
  // Past kMaxBytes the plan is refused at select; the sort is not even asked its scratch size.
  if (!(keys * 4 + partials).below(kMaxBytes)) return {};
  w.keys = w.offsets = static_cast<size_t>(keys.value());
  w.partials = static_cast<size_t>(partials.value());
  w.sort_temp = round_up(sort_pairs_scratch(n));
  w.fits = true;
  return w;
}

}  // namespace baracuda::detail::cuda

// CUDA kernels of the indexing family.
//  - gather: rows in parallel, `lanes` threads per row (a power of two up to a block, fitted to the
//    row's length), 16-byte vectors when rows allow; invalid index values write zeros.
//  - scatter-add, atomic: the same walk, adding with atomics.
//  - scatter-add along the innermost dim (either variant): one destination line per block, summed in
//    shared memory (see scatter_shared_row_kernel); no workspace.
//  - scatter-add, sorted (deterministic), elsewhere: keys (the destination's table offset) and values offsets are
//    radix-sorted (stable); the sorted rows are cut into windows; each window sums its runs of equal
//    keys in sorted (= original) order in the accumulator type, adding complete runs straight into
//    the table and leaving runs that cross a window edge as partial sums; a fix-up pass sums each
//    crossing run's partials in window order. No atomics, so every run gives the same bits.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>

#include "common/dispatch.hpp"
#include "cuda/common/check.cuh"
#include "cuda/common/launch.cuh"
#include "cuda/common/vector.cuh"
#include "cuda/runtime.hpp"
#include "ops/indexing_problem.hpp"

namespace baracuda::detail::cuda {
namespace {

// Threads per row: the row's work units rounded up to a power of two, at most a block.
int lanes_for(int64_t units) {
  int lanes = 1;
  while (lanes < kThreads && lanes < units) lanes *= 2;
  return lanes;
}

unsigned row_blocks(int64_t rows, int lanes, int sm_count) {
  const int64_t rows_per_block = kThreads / lanes;
  const int64_t needed = (rows + rows_per_block - 1) / rows_per_block;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(needed, int64_t(sm_count) * 32)));
}

template <class Idx>
__global__ void count_bad_kernel(const Idx* index, Walker<1> walker, int64_t n, int64_t dim_size, int64_t padding,
                                 unsigned long long* counter) {
  unsigned long long bad = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[1];
    walker.offsets(i, off);
    bad += bad_index(index[off[0]], dim_size, padding) ? 1 : 0;
  }
  for (int o = 16; o > 0; o /= 2) bad += __shfl_down_sync(0xffffffffu, bad, o);
  if ((threadIdx.x & 31) == 0 && bad) atomicAdd(counter, bad);
}

template <class Idx>
Status count_bad(const Stream& stream, const IndexedProblem& p, int sm_count) {
  if (!p.bad_index_count) return Status::ok();
  const Strides* strides[1] = {&p.index_view.strides};
  const Walker<1> walker = make_walker<1>(p.index_view.shape, strides);
  const int64_t n = p.index_view.numel();
  const unsigned blocks = grid_stride_blocks(n, sm_count);
  count_bad_kernel<Idx><<<blocks, kThreads, 0, native(stream)>>>(
      static_cast<const Idx*>(p.index_view.data), walker, n, p.layout.dim_size, p.layout.padding,
      reinterpret_cast<unsigned long long*>(p.bad_index_count));
  return last_launch_status("count_bad_kernel");
}

template <class Bits>
__global__ void zero_view_kernel(Bits* data, Walker<1> walker, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[1];
    walker.offsets(i, off);
    data[off[0]] = Bits{0};
  }
}

// Zeroes every element of a (strided) view: an overwriting scatter's table before its sums.
template <class Bits>
Status zero_view(const Stream& stream, const AnyTensorRef& view, int sm_count) {
  Bits* data = static_cast<Bits*>(const_cast<void*>(view.data));
  if (view.is_contiguous())
    return cuda_status(cudaMemsetAsync(data, 0, static_cast<size_t>(view.numel()) * sizeof(Bits), native(stream)),
                       "cudaMemsetAsync");
  const Strides* strides[1] = {&view.strides};
  const Walker<1> walker = make_walker<1>(view.shape, strides);
  const int64_t n = view.numel();
  const unsigned blocks = grid_stride_blocks(n, sm_count);
  zero_view_kernel<Bits><<<blocks, kThreads, 0, native(stream)>>>(data, walker, n);
  return last_launch_status("zero_view_kernel");
}

// Row r of the walk handled by `lanes` threads of the block: calls f(r, lane) for each row.
template <class F>
__device__ __forceinline__ void for_each_row(int64_t rows, int lanes, F&& f) {
  const int rows_per_block = kThreads / lanes;
  const int lane = threadIdx.x % lanes;
  for (int64_t r = int64_t(blockIdx.x) * rows_per_block + threadIdx.x / lanes; r < rows;
       r += int64_t(gridDim.x) * rows_per_block)
    f(r, lane);
}

// Vectors per thread per step of the row gather, all loaded before any is stored (8 measured best:
// 2 -> 84.5%, 4 -> 87.3%, 8 -> 87.7% of copy for bf16 embedding rows; bench/NOTES.md).
inline constexpr int kRowVectors = 8;

template <class Bits, class Idx>
__global__ void __launch_bounds__(kThreads)
    gather_vectorized_kernel(IndexedLayout layout, Bits* values, const Bits* table, const Idx* index, int lanes) {
  constexpr int kV = Vec16<Bits>::kSize;
  const int64_t vectors = layout.row_length / kV;
  for_each_row(layout.row_count, lanes, [&](int64_t r, int lane) {
    int64_t values_off, table_off;
    const bool valid = layout.locate(index, r, values_off, table_off);
    for (int64_t v0 = lane; v0 < vectors; v0 += int64_t(kRowVectors) * lanes) {
      Vec16<Bits> x[kRowVectors];
#pragma unroll
      for (int k = 0; k < kRowVectors; ++k) {
        const int64_t v = v0 + k * int64_t(lanes);
#pragma unroll
        for (int e = 0; e < kV; ++e) x[k].v[e] = Bits{0};
        if (valid && v < vectors) x[k] = load16(table + table_off + v * kV);
      }
#pragma unroll
      for (int k = 0; k < kRowVectors; ++k) {
        const int64_t v = v0 + k * int64_t(lanes);
        if (v < vectors) store16(values + values_off + v * kV, x[k]);
      }
    }
  });
}

template <class Bits, class Idx>
__global__ void __launch_bounds__(kThreads)
    gather_kernel(IndexedLayout layout, Bits* values, const Bits* table, const Idx* index, int lanes) {
  for_each_row(layout.row_count, lanes, [&](int64_t r, int lane) {
    int64_t values_off, table_off;
    const bool valid = layout.locate(index, r, values_off, table_off);
    for (int64_t c = lane; c < layout.row_length; c += lanes) {
      int64_t dv, dt;
      layout.column(c, dv, dt);
      values[values_off + dv] = valid ? table[table_off + dt] : Bits{0};
    }
  });
}

// Element mode: every element looks up its own index value. The `lanes` threads of a walk line step
// along its innermost dim (no division per element), kElementBatch elements at a time: the batch's
// index values are loaded back to back, then f(values_off, table_off, valid, inside) gets the batch
// (`inside`: the element exists; `valid`: it exists and its index value is in range, not padding).
inline constexpr int kElementBatch = 8;  // 4 -> 8: bf16 gather 48.4% -> 54.6% of copy

template <class Idx, class F>
__device__ __forceinline__ void for_each_element_batch(const IndexedLayout& layout, const Idx* index, int lanes,
                                                       F&& f) {
  const Walker<kRowTensors>& w = layout.rows;
  const int64_t inner = w.inner_size();
  for_each_row(layout.row_count / inner, lanes, [&](int64_t r, int lane) {
    int64_t base[kRowTensors];
    w.offsets(r, base, w.rank - 1);
    for (int64_t c0 = lane; c0 < inner; c0 += int64_t(lanes) * kElementBatch) {
      int64_t values_off[kElementBatch], table_off[kElementBatch], value[kElementBatch];
      bool valid[kElementBatch], inside[kElementBatch];
#pragma unroll
      for (int u = 0; u < kElementBatch; ++u) {
        const int64_t c = c0 + u * int64_t(lanes);
        inside[u] = c < inner;
        value[u] = inside[u] ? static_cast<int64_t>(index[base[1] + c * w.inner_stride(1)]) : -1;
      }
#pragma unroll
      for (int u = 0; u < kElementBatch; ++u) {
        const int64_t c = c0 + u * int64_t(lanes);
        valid[u] = inside[u] && value[u] >= 0 && value[u] < layout.dim_size && value[u] != layout.padding;
        values_off[u] = base[0] + c * w.inner_stride(0);
        table_off[u] = base[2] + c * w.inner_stride(2) + value[u] * layout.table_dim_stride;
      }
      f(values_off, table_off, valid, inside);
    }
  });
}

using ElementOffsets = int64_t[kElementBatch];
using ElementFlags = bool[kElementBatch];

template <class Bits, class Idx>
__global__ void __launch_bounds__(kThreads)
    gather_elements_kernel(IndexedLayout layout, Bits* values, const Bits* table, const Idx* index, int lanes) {
  for_each_element_batch(layout, index, lanes,
                         [&](const ElementOffsets& values_off, const ElementOffsets& table_off,
                             const ElementFlags& valid, const ElementFlags& inside) {
                           Bits x[kElementBatch];
#pragma unroll
                           for (int u = 0; u < kElementBatch; ++u) x[u] = valid[u] ? table[table_off[u]] : Bits{0};
#pragma unroll
                           for (int u = 0; u < kElementBatch; ++u)
                             if (inside[u]) values[values_off[u]] = x[u];
                         });
}

template <class Bits, class Idx>
Status gather(const Stream& stream, const IndexedProblem& p, int sm_count) {
  const IndexedLayout& layout = p.layout;
  Bits* values = static_cast<Bits*>(p.values);
  const Bits* table = static_cast<const Bits*>(p.table);
  const Idx* index = static_cast<const Idx*>(p.index);
  if (p.vectorized_rows) {
    const int64_t vectors = layout.row_length / Vec16<Bits>::kSize;
    const int lanes = lanes_for((vectors + kRowVectors - 1) / kRowVectors);
    gather_vectorized_kernel<Bits, Idx><<<row_blocks(layout.row_count, lanes, sm_count), kThreads, 0, native(stream)>>>(
        layout, values, table, index, lanes);
    if (Status s = last_launch_status("gather_vectorized_kernel"); !s) return s;
  } else if (layout.columns.rank == 0 && layout.rows.rank > 0) {
    const int64_t inner = layout.rows.inner_size();
    const int lanes = lanes_for((inner + kElementBatch - 1) / kElementBatch);
    gather_elements_kernel<Bits, Idx>
        <<<row_blocks(layout.row_count / inner, lanes, sm_count), kThreads, 0, native(stream)>>>(layout, values, table,
                                                                                                 index, lanes);
    if (Status s = last_launch_status("gather_elements_kernel"); !s) return s;
  } else {
    const int lanes = lanes_for(layout.row_length);
    gather_kernel<Bits, Idx><<<row_blocks(layout.row_count, lanes, sm_count), kThreads, 0, native(stream)>>>(
        layout, values, table, index, lanes);
    if (Status s = last_launch_status("gather_kernel"); !s) return s;
  }
  return count_bad<Idx>(stream, p, sm_count);
}

// ---------------------------------------------------------------------------------------------
// Scatter-add

template <class T, class Acc>
__device__ __forceinline__ void add_into(T* p, Acc v) {
  *p = static_cast<T>(static_cast<Acc>(*p) + v);
}

template <class T, class Acc>
__device__ __forceinline__ void atomic_add_into(T* p, Acc v) {
  atomicAdd(p, static_cast<T>(v));
}

template <class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    scatter_atomic_kernel(IndexedLayout layout, const T* values, T* table, const Idx* index, int lanes) {
  using Acc = acc_t<T>;
  for_each_row(layout.row_count, lanes, [&](int64_t r, int lane) {
    int64_t values_off, table_off;
    if (!layout.locate(index, r, values_off, table_off)) return;
    for (int64_t c = lane; c < layout.row_length; c += lanes) {
      int64_t dv, dt;
      layout.column(c, dv, dt);
      atomic_add_into(table + table_off + dt, static_cast<Acc>(values[values_off + dv]));
    }
  });
}

template <class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    scatter_atomic_elements_kernel(IndexedLayout layout, const T* values, T* table, const Idx* index, int lanes) {
  using Acc = acc_t<T>;
  for_each_element_batch(layout, index, lanes,
                         [&](const ElementOffsets& values_off, const ElementOffsets& table_off,
                             const ElementFlags& valid, const ElementFlags&) {
                           Acc x[kElementBatch];
#pragma unroll
                           for (int u = 0; u < kElementBatch; ++u)
                             x[u] = valid[u] ? static_cast<Acc>(values[values_off[u]]) : Acc(0);
#pragma unroll
                           for (int u = 0; u < kElementBatch; ++u)
                             if (valid[u]) atomic_add_into(table + table_off[u], x[u]);
                         });
}

// Element mode along the innermost dim (torch.gather's backward along the last dim, index_select's
// backward along it): a block sums one destination line of `dim_size` in shared memory (in f32 for
// 16-bit types), then writes or adds the line with one coalesced pass that also re-zeroes it. The
// entries (index value, value) come in tiles of kLineTile, one tile ahead: the next tile's loads are
// issued before the current tile is summed and its line written. Two ways to sum a tile:
//  - atomic: shared-memory atomics; the order of the additions varies from run to run;
//  - ordered (the "sorted" variant): in each round of one entry per thread, the lanes of a warp
//    holding the same index value are matched (__match_any_sync) and the lowest one sums them in
//    lane order; then the warps take turns, in warp order, adding their sums into the line. Every
//    slot sums its entries in one fixed order (tile, round, warp, lane): the same bits every run.
inline constexpr int kLineItems = 4;  // entries per thread per tile
inline constexpr int kLineTile = kThreads * kLineItems;
inline constexpr int kLineWarps = kThreads / 32;

template <class Acc>
struct LineTile {
  int key[kLineItems];  // the index value (a line fits in shared memory), or -1 for an entry to skip
  Acc value[kLineItems];
};

// Tile `tile` of walk line `line`: coalesced loads, values loaded independently of their index.
template <class T, class Idx>
__device__ __forceinline__ void load_line_tile(const IndexedLayout& layout, const T* values, const Idx* index,
                                               int64_t line, int64_t tile, LineTile<acc_t<T>>& t) {
  const Walker<kRowTensors>& w = layout.rows;
  const int64_t inner = w.inner_size();
  int64_t base[kRowTensors];
  w.offsets(line, base, w.rank - 1);
#pragma unroll
  for (int u = 0; u < kLineItems; ++u) {
    const int64_t c = tile * kLineTile + u * int64_t(kThreads) + threadIdx.x;
    const bool inside = c < inner;
    const int64_t i = inside ? static_cast<int64_t>(index[base[1] + c * w.inner_stride(1)]) : -1;
    const acc_t<T> v = inside ? static_cast<acc_t<T>>(values[base[0] + c * w.inner_stride(0)]) : acc_t<T>(0);
    const bool valid = i >= 0 && i < layout.dim_size && i != layout.padding;
    t.key[u] = valid ? static_cast<int>(i) : -1;
    t.value[u] = v;
  }
}

template <class Acc>
__device__ __forceinline__ void add_tile_atomic(const LineTile<Acc>& t, Acc* line_sum) {
#pragma unroll
  for (int u = 0; u < kLineItems; ++u)
    if (t.key[u] >= 0) atomicAdd(line_sum + t.key[u], t.value[u]);
}

template <class Acc>
__device__ __forceinline__ void add_tile_ordered(const LineTile<Acc>& t, Acc* line_sum) {
  __shared__ Acc stage[kThreads];  // each round's values, read by the lowest lane of each match
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  Acc* warp_stage = stage + warp * 32;
  Acc sum[kLineItems];
  bool leads[kLineItems];
#pragma unroll
  for (int u = 0; u < kLineItems; ++u) {
    warp_stage[lane] = t.value[u];
    const unsigned group = __match_any_sync(0xffffffffu, static_cast<unsigned>(t.key[u]));
    __syncwarp();
    leads[u] = t.key[u] >= 0 && lane == __ffs(group) - 1;
    sum[u] = Acc(0);
    if (leads[u])
      for (unsigned m = group; m; m &= m - 1) sum[u] += warp_stage[__ffs(m) - 1];
    __syncwarp();  // the stage is rewritten next round
  }
  for (int turn = 0; turn < kLineWarps; ++turn) {
    if (warp == turn) {
#pragma unroll
      for (int u = 0; u < kLineItems; ++u) {
        if (leads[u]) line_sum[t.key[u]] += sum[u];
        __syncwarp();  // a later round may add to the same slot from another lane
      }
    }
    __syncthreads();
  }
}

// Five blocks per SM (at most 51 registers): with two tiles in registers the kernel otherwise takes
// 80+ registers and two or three blocks per SM, which measured 10-35% slower (bench/NOTES.md).
template <class T, bool kOrdered, class Idx>
__global__ void __launch_bounds__(kThreads, 5)
    scatter_shared_row_kernel(IndexedLayout layout, const T* values, T* table, const Idx* index, bool overwrite) {
  using Acc = acc_t<T>;
  constexpr int kBatch = 8;  // write-back loads issued back to back
  extern __shared__ unsigned char shared_bytes[];
  Acc* line_sum = reinterpret_cast<Acc*>(shared_bytes);
  const Walker<kRowTensors>& w = layout.rows;
  const int64_t inner = w.inner_size(), lines = layout.row_count / inner;
  const int64_t tiles = (inner + kLineTile - 1) / kLineTile;
  const int64_t step = int64_t(blockDim.x) * kBatch;
  for (int64_t j = threadIdx.x; j < layout.dim_size; j += blockDim.x) line_sum[j] = Acc(0);
  __syncthreads();
  LineTile<Acc> next;
  if (blockIdx.x < lines) load_line_tile(layout, values, index, blockIdx.x, 0, next);
  for (int64_t r = blockIdx.x; r < lines; r += gridDim.x) {
    for (int64_t k = 0; k < tiles; ++k) {
      const LineTile<Acc> tile = next;
      const int64_t next_line = k + 1 < tiles ? r : r + gridDim.x;
      if (next_line < lines) load_line_tile(layout, values, index, next_line, k + 1 < tiles ? k + 1 : 0, next);
      if constexpr (kOrdered) {
        add_tile_ordered(tile, line_sum);
      } else {
        add_tile_atomic(tile, line_sum);
      }
    }
    __syncthreads();
    int64_t base[kRowTensors];
    w.offsets(r, base, w.rank - 1);
    T* line = table + base[2];
    for (int64_t j0 = threadIdx.x; j0 < layout.dim_size; j0 += step) {
      T old[kBatch];
      if (!overwrite) {
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          const int64_t j = j0 + u * int64_t(blockDim.x);
          old[u] = j < layout.dim_size ? line[j * layout.table_dim_stride] : T{};
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int64_t j = j0 + u * int64_t(blockDim.x);
        if (j >= layout.dim_size) continue;
        const Acc sum = line_sum[j];
        line_sum[j] = Acc(0);  // ready for the next line
        if (overwrite) {
          line[j * layout.table_dim_stride] = static_cast<T>(sum);
        } else if (sum != Acc(0)) {
          line[j * layout.table_dim_stride] = static_cast<T>(static_cast<Acc>(old[u]) + sum);
        }
      }
    }
    __syncthreads();
  }
}

// f32 rows of whole 4-vectors: one vector reduction (red.global.add.v4.f32, sm_90) per 16 bytes.
template <class Idx>
__global__ void __launch_bounds__(kThreads)
    scatter_atomic_v4_kernel(IndexedLayout layout, const float* values, float* table, const Idx* index, int lanes) {
  const int64_t vectors = layout.row_length / 4;
  for_each_row(layout.row_count, lanes, [&](int64_t r, int lane) {
    int64_t values_off, table_off;
    if (!layout.locate(index, r, values_off, table_off)) return;
    for (int64_t v = lane; v < vectors; v += lanes) {
      const float4 x = *reinterpret_cast<const float4*>(values + values_off + v * 4);
      float* dst = table + table_off + v * 4;
#if __CUDA_ARCH__ >= 900
      asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "f"(x.x), "f"(x.y), "f"(x.z), "f"(x.w)
                   : "memory");
#else
      atomicAdd(dst, x.x);
      atomicAdd(dst + 1, x.y);
      atomicAdd(dst + 2, x.z);
      atomicAdd(dst + 3, x.w);
#endif
    }
  });
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

// Each row's sort key (its destination's table offset, or the sentinel for a skipped row) and its
// values offset, so the sums read the values without locating the row again.
template <class Idx>
__global__ void scatter_keys_kernel(IndexedLayout layout, const Idx* index, uint64_t* keys, int64_t* offsets) {
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < layout.row_count;
       r += int64_t(gridDim.x) * blockDim.x) {
    int64_t values_off, table_off;
    const bool valid = layout.locate(index, r, values_off, table_off);
    keys[r] = static_cast<uint64_t>(valid ? table_off : layout.sentinel_key);
    offsets[r] = values_off;
  }
}

// Calls f(s, e, key, from_previous, into_next) for each run [s, e) of equal keys in the window
// [start, end) of the sorted keys, stopping at the sentinel (invalid rows sort last). A run that
// continues from the previous window or into the next one is a partial sum of its destination.
template <class F>
__device__ __forceinline__ void for_each_run(const uint64_t* keys, int64_t start, int64_t end, int64_t rows,
                                             uint64_t sentinel, F&& f) {
  int64_t s = start;
  while (s < end && keys[s] != sentinel) {
    const uint64_t key = keys[s];
    int64_t e = s + 1;
    while (e < end && keys[e] == key) ++e;
    f(s, e, key, s == start && start > 0 && keys[start - 1] == key, e == end && end < rows && keys[end] == key);
    s = e;
  }
}

// Sums the runs of window w (see the file comment). `lane` of `group` threads share the columns.
template <class T>
__device__ void sum_window(const IndexedLayout& layout, const T* values, T* table, const uint64_t* keys,
                           const int64_t* offsets, acc_t<T>* partials, int64_t window, int64_t w, int lane, int group) {
  using Acc = acc_t<T>;
  const int64_t rows = layout.row_count, length = layout.row_length;
  const int64_t start = w * window, end = min(start + window, rows);
  const uint64_t sentinel = static_cast<uint64_t>(layout.sentinel_key);
  for_each_run(keys, start, end, rows, sentinel,
               [&](int64_t s, int64_t e, uint64_t key, bool from_previous, bool into_next) {
                 for (int64_t c = lane; c < length; c += group) {
                   int64_t dv, dt;
                   layout.column(c, dv, dt);
                   Acc sum = 0;
                   for (int64_t i = s; i < e; ++i) sum += static_cast<Acc>(values[offsets[i] + dv]);
                   if (!from_previous && !into_next) {
                     add_into(table + key + dt, sum);
                   } else {
                     partials[(w * 2 + (from_previous ? 0 : 1)) * length + c] = sum;
                   }
                 }
               });
}

// For a run that starts in window w and crosses into the next: its partials, in window order. The
// run's last window is found by binary search in the sorted keys, so the partials' loads are
// independent of each other (the sum itself stays in window order).
template <class T>
__device__ void fix_up_window(const IndexedLayout& layout, T* table, const uint64_t* keys, const acc_t<T>* partials,
                              int64_t window, int64_t w, int lane, int group) {
  using Acc = acc_t<T>;
  const int64_t rows = layout.row_count, length = layout.row_length;
  const int64_t start = w * window, end = min(start + window, rows);
  const uint64_t key = keys[end - 1];
  if (key == static_cast<uint64_t>(layout.sentinel_key) || end >= rows || keys[end] != key) return;
  if (keys[start] == key && start > 0 && keys[start - 1] == key) return;  // started in an earlier window
  int64_t lo = end, hi = rows;                                            // the first position past the run
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] == key)
      lo = mid + 1;
    else
      hi = mid;
  }
  const int64_t last = (lo - 1) / window;  // the run's last window
  for (int64_t c = lane; c < length; c += group) {
    int64_t dv, dt;
    layout.column(c, dv, dt);
    Acc sum = partials[(w * 2 + 1) * length + c];
    int64_t next = w + 1;
    for (; next + 4 <= last + 1; next += 4) {
      const Acc p0 = partials[(next * 2) * length + c], p1 = partials[((next + 1) * 2) * length + c];
      const Acc p2 = partials[((next + 2) * 2) * length + c], p3 = partials[((next + 3) * 2) * length + c];
      sum += p0;
      sum += p1;
      sum += p2;
      sum += p3;
    }
    for (; next <= last; ++next) sum += partials[(next * 2) * length + c];
    add_into(table + key + dt, sum);
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    sum_windows_kernel(IndexedLayout layout, const T* values, T* table, const uint64_t* keys, const int64_t* offsets,
                       acc_t<T>* partials, int64_t window, int64_t windows, int lanes) {
  for_each_row(windows, lanes, [&](int64_t w, int lane) {
    sum_window(layout, values, table, keys, offsets, partials, window, w, lane, lanes);
  });
}

// Rows of one element (element mode): one thread per window, its keys, offsets and values all loaded
// up front (independent loads), then its runs summed in registers. Same runs, same order and same
// partial slots as sum_window.
template <class T>
__global__ void __launch_bounds__(kThreads)
    sum_element_windows_kernel(IndexedLayout layout, const T* values, T* table, const uint64_t* keys,
                               const int64_t* offsets, acc_t<T>* partials, int64_t windows) {
  using Acc = acc_t<T>;
  constexpr int kWindow = static_cast<int>(kElementsPerWindow);
  const int64_t rows = layout.row_count;
  const uint64_t sentinel = static_cast<uint64_t>(layout.sentinel_key);
  for (int64_t w = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; w < windows; w += int64_t(gridDim.x) * blockDim.x) {
    const int64_t start = w * kWindow;
    uint64_t key[kWindow];
    Acc v[kWindow];
#pragma unroll
    for (int j = 0; j < kWindow; ++j) key[j] = start + j < rows ? keys[start + j] : sentinel;
#pragma unroll
    for (int j = 0; j < kWindow; ++j) v[j] = key[j] != sentinel ? static_cast<Acc>(values[offsets[start + j]]) : Acc(0);
    const bool continues = start > 0 && key[0] != sentinel && keys[start - 1] == key[0];
    const uint64_t after = start + kWindow < rows ? keys[start + kWindow] : sentinel;
    Acc sum = 0;
#pragma unroll
    for (int j = 0; j < kWindow; ++j) {
      sum += v[j];
      if (j + 1 < kWindow && key[j + 1] == key[j]) continue;  // the run goes on
      if (key[j] != sentinel) {
        const bool from_previous = continues && key[j] == key[0];  // the window's first run
        const bool into_next = j + 1 == kWindow && after == key[j];
        if (!from_previous && !into_next) {
          add_into(table + key[j], sum);
        } else {
          partials[w * 2 + (from_previous ? 0 : 1)] = sum;
        }
      }
      sum = 0;
    }
  }
}

// Rows mode, rows of whole 16-byte vectors: a block stages each window's keys and row offsets in
// shared memory, then every thread sums whole vectors of columns (kV accumulators) down each run.
// Same runs, same order and same partial slots as sum_window.
template <class T>
__global__ void __launch_bounds__(kThreads)
    sum_windows_vectorized_kernel(IndexedLayout layout, const T* values, T* table, const uint64_t* keys,
                                  const int64_t* row_offsets, acc_t<T>* partials, int64_t windows, int lanes) {
  using Acc = acc_t<T>;
  constexpr int kV = Vec16<T>::kSize;
  constexpr int kWindow = static_cast<int>(kRowsPerWindow);
  // One window per group of `lanes` threads; lanes >= kWindow, so the groups' offsets fit.
  __shared__ int64_t offsets[kThreads];
  const int groups = kThreads / lanes;
  const int group = threadIdx.x / lanes, lane = threadIdx.x % lanes;
  const int64_t rows = layout.row_count, length = layout.row_length;
  const int64_t vectors = length / kV;
  const uint64_t sentinel = static_cast<uint64_t>(layout.sentinel_key);
  for (int64_t base = int64_t(blockIdx.x) * groups; base < windows; base += int64_t(gridDim.x) * groups) {
    const int64_t w = base + group;
    const int64_t start = w * kWindow, end = w < windows ? min(start + kWindow, rows) : start;
    __syncthreads();
    for (int i = lane; i < kWindow; i += lanes)
      offsets[group * kWindow + i] = start + i < end ? row_offsets[start + i] : 0;
    __syncthreads();
    for_each_run(keys, start, end, rows, sentinel,
                 [&](int64_t s, int64_t e, uint64_t key, bool from_previous, bool into_next) {
                   for (int64_t v = lane; v < vectors; v += lanes) {
                     Acc sum[kV] = {};
                     for (int64_t i = s; i < e; ++i) {
                       const Vec16<T> x = load16(values + offsets[group * kWindow + (i - start)] + v * kV);
#pragma unroll
                       for (int k = 0; k < kV; ++k) sum[k] += static_cast<Acc>(x.v[k]);
                     }
                     if (!from_previous && !into_next) {
                       T* dst = table + key + v * kV;
                       Vec16<T> y = load16(dst);
#pragma unroll
                       for (int k = 0; k < kV; ++k) y.v[k] = static_cast<T>(static_cast<Acc>(y.v[k]) + sum[k]);
                       store16(dst, y);
                     } else {
                       Acc* slot = partials + (w * 2 + (from_previous ? 0 : 1)) * length + v * kV;
#pragma unroll
                       for (int k = 0; k < kV; ++k) slot[k] = sum[k];
                     }
                   }
                 });
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    fix_up_kernel(IndexedLayout layout, T* table, const uint64_t* keys, const acc_t<T>* partials, int64_t window,
                  int64_t windows, int lanes) {
  for_each_row(windows, lanes,
               [&](int64_t w, int lane) { fix_up_window(layout, table, keys, partials, window, w, lane, lanes); });
}

int key_bits(int64_t sentinel) {
  int bits = 1;
  while (bits < 64 && (uint64_t{1} << bits) <= static_cast<uint64_t>(sentinel)) ++bits;
  return bits;
}

template <class T, class Idx>
Status scatter_add(const Stream& stream, const IndexedProblem& p, int sm_count) {
  using Acc = acc_t<T>;
  const IndexedLayout& layout = p.layout;
  const T* values = static_cast<const T*>(p.values);
  T* table = static_cast<T*>(p.table);
  const Idx* index = static_cast<const Idx*>(p.index);
  cudaStream_t s = native(stream);
  // Overwriting: the shared-row kernel writes every table element itself when the walk covers every
  // line of the table; otherwise the table is zeroed first and the sums are added.
  const bool fused_overwrite = !p.desc.accumulate && p.shared_rows && covers_every_table_line(p.desc);
  if (!p.desc.accumulate && !fused_overwrite)
    if (Status st = zero_view<T>(stream, p.table_view, sm_count); !st) return st;
  if (layout.row_count == 0 || p.desc.shape.numel() == 0) return Status::ok();
  if (p.shared_rows) {
    const bool ordered = p.variant == IndexVariant::sorted;
    const auto kernel = ordered ? scatter_shared_row_kernel<T, true, Idx> : scatter_shared_row_kernel<T, false, Idx>;
    const size_t bytes = static_cast<size_t>(layout.dim_size) * sizeof(Acc);
    // The line can take the 48 KB a block gets by default, beside the kernel's static shared memory.
    if (Status st = cuda_status(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
            "cudaFuncSetAttribute");
        !st)
      return st;
    const int64_t rows = layout.row_count / layout.rows.inner_size();
    const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>(rows, 1, int64_t(sm_count) * 16));
    kernel<<<blocks, kThreads, bytes, s>>>(layout, values, table, index, fused_overwrite);
    if (Status st = last_launch_status("scatter_shared_row_kernel"); !st) return st;
    return count_bad<Idx>(stream, p, sm_count);
  }
  if (p.variant == IndexVariant::atomic) {
    if constexpr (std::is_same_v<T, float>) {
      if (p.vectorized_rows) {
        const int lanes = lanes_for(layout.row_length / 4);
        scatter_atomic_v4_kernel<Idx>
            <<<row_blocks(layout.row_count, lanes, sm_count), kThreads, 0, s>>>(layout, values, table, index, lanes);
        if (Status st = last_launch_status("scatter_atomic_v4_kernel"); !st) return st;
        return count_bad<Idx>(stream, p, sm_count);
      }
    }
    if (layout.columns.rank == 0 && layout.rows.rank > 0) {
      const int64_t inner = layout.rows.inner_size();
      const int lanes = lanes_for((inner + kElementBatch - 1) / kElementBatch);
      scatter_atomic_elements_kernel<T, Idx><<<row_blocks(layout.row_count / inner, lanes, sm_count), kThreads, 0, s>>>(
          layout, values, table, index, lanes);
      if (Status st = last_launch_status("scatter_atomic_elements_kernel"); !st) return st;
      return count_bad<Idx>(stream, p, sm_count);
    }
    const int lanes = lanes_for(layout.row_length);
    scatter_atomic_kernel<T, Idx>
        <<<row_blocks(layout.row_count, lanes, sm_count), kThreads, 0, s>>>(layout, values, table, index, lanes);
    if (Status st = last_launch_status("scatter_atomic_kernel"); !st) return st;
    return count_bad<Idx>(stream, p, sm_count);
  }
  const int64_t rows = layout.row_count;
  const SortedScatterWorkspace sizes = sorted_scatter_workspace(rows, layout.row_length, p.desc.dtype);
  const SortedBuffers b = carve(p.workspace, sizes);
  const unsigned key_blocks = grid_stride_blocks(rows, sm_count);
  scatter_keys_kernel<Idx><<<key_blocks, kThreads, 0, s>>>(layout, index, b.keys_in, b.offsets_in);
  if (Status st = last_launch_status("scatter_keys_kernel"); !st) return st;
  size_t temp_bytes = b.sort_temp_bytes;
  if (Status st = cuda_status(cub::DeviceRadixSort::SortPairs(b.sort_temp, temp_bytes, b.keys_in, b.keys, b.offsets_in,
                                                              b.offsets, rows, 0, key_bits(layout.sentinel_key), s),
                              "cub::DeviceRadixSort::SortPairs");
      !st)
    return st;
  const int64_t window = sorted_window(layout.row_length);
  const int64_t windows = (rows + window - 1) / window;
  const int lanes = layout.columns.rank == 0 ? 1 : lanes_for(layout.row_length);
  Acc* partials = static_cast<Acc*>(b.partials);
  if (p.vectorized_rows) {
    // At least kRowsPerWindow lanes per window, so a block's windows fit its offsets in shared memory.
    const int vector_lanes = std::max<int>(lanes_for(layout.row_length / Vec16<T>::kSize), int(kRowsPerWindow));
    sum_windows_vectorized_kernel<T><<<row_blocks(windows, vector_lanes, sm_count), kThreads, 0, s>>>(
        layout, values, table, b.keys, b.offsets, partials, windows, vector_lanes);
    if (Status st = last_launch_status("sum_windows_vectorized_kernel"); !st) return st;
  } else if (layout.columns.rank == 0) {
    sum_element_windows_kernel<T><<<grid_stride_blocks(windows, sm_count), kThreads, 0, s>>>(
        layout, values, table, b.keys, b.offsets, partials, windows);
    if (Status st = last_launch_status("sum_element_windows_kernel"); !st) return st;
  } else {
    sum_windows_kernel<T><<<row_blocks(windows, lanes, sm_count), kThreads, 0, s>>>(
        layout, values, table, b.keys, b.offsets, partials, window, windows, lanes);
    if (Status st = last_launch_status("sum_windows_kernel"); !st) return st;
  }
  fix_up_kernel<T><<<row_blocks(windows, lanes, sm_count), kThreads, 0, s>>>(layout, table, b.keys, partials, window,
                                                                             windows, lanes);
  if (Status st = last_launch_status("fix_up_kernel"); !st) return st;
  return count_bad<Idx>(stream, p, sm_count);
}

}  // namespace

SortedScatterWorkspace sorted_scatter_workspace(int64_t rows, int64_t row_length, DType dtype) {
  SortedScatterWorkspace w;
  const size_t n = static_cast<size_t>(std::max<int64_t>(rows, 1));
  w.keys = round_up(n * sizeof(uint64_t));
  w.offsets = round_up(n * sizeof(int64_t));
  const int64_t window = sorted_window(row_length);
  const size_t windows = (n + window - 1) / window;
  w.partials =
      round_up(windows * 2 * static_cast<size_t>(std::max<int64_t>(row_length, 1)) * (dtype == DType::f64 ? 8 : 4));
  size_t temp = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, temp, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
                                  static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr),
                                  static_cast<int64_t>(n), 0, 64);
  w.sort_temp = round_up(temp);
  return w;
}

Status indexed_gather(const Stream& stream, const IndexedProblem& p) {
  DeviceGuard guard(stream.device());
  const int sm_count = cuda_device_info(stream.device())->sm_count;
  return dispatch_index(p.desc.index_dtype, [&](auto index_tag) {
    using Idx = typename decltype(index_tag)::type;
    switch (dtype_size(p.desc.dtype)) {
      case 2:
        return gather<uint16_t, Idx>(stream, p, sm_count);
      case 4:
        return gather<uint32_t, Idx>(stream, p, sm_count);
      default:
        return gather<uint64_t, Idx>(stream, p, sm_count);
    }
  });
}

Status indexed_scatter_add(const Stream& stream, const IndexedProblem& p) {
  DeviceGuard guard(stream.device());
  const int sm_count = cuda_device_info(stream.device())->sm_count;
  return dispatch_index(p.desc.index_dtype, [&](auto index_tag) {
    using Idx = typename decltype(index_tag)::type;
    return dispatch_float<__half, __nv_bfloat16>(p.desc.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return scatter_add<T, Idx>(stream, p, sm_count);
    });
  });
}

}  // namespace baracuda::detail::cuda

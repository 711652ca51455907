#pragma once
// Scatter-add along the innermost dim of a walk (either variant): one destination line per block,
// summed in shared memory (see scatter_shared_row_kernel); no workspace. The walk is the problem's,
// or for column lines (strategies.hpp) the problem's with dim moved innermost.
// Compiled at select (NVRTC; cuda/indexing/scatter_lines.cpp launches them), one program an element
// type, index type and variant.
#include "cuda/common/line_sum.cuh"
#include "cuda/common/line_write.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {

// Element mode along the innermost dim (torch.gather's backward along the last dim, index_select's
// backward along it): a block sums one destination line of `dim_size` in shared memory (in f32 for
// 16-bit types), then writes or adds the line with one coalesced pass that also re-zeroes it: in
// 16-byte chunks where the item is one run of the table (line_write.cuh), else slot by slot; adding
// an item whose entries are one tile and few beside its slots, only the slots they reached are
// visited (add_entries). A line longer than shared memory holds is cut into slabs (LineSlab), a
// block each. The entries (index value, value) come in tiles of kLineTile, one tile ahead: the next
// tile's loads are issued before the current tile is summed (atomic or ordered: line_sum.cuh) and
// its line written. The grid is one wave of resident blocks, so that a block's next tile is in
// flight while it writes its line.

// What a block sums at once (an item): slots [first, first + width) of walk lines [line, line +
// lines), in shared memory at (line - slab.line) * width + (slot - first); LineSpan
// (cuda/indexing/strategies.hpp) says how items are cut, fixed per launch.
struct LineSlab {
  int64_t line = 0, lines = 1, first = 0, width = 0;
};
// `per_item`: lines an item (several) or slabs a line (slab).
template <LineSpan kSpan>
__device__ __forceinline__ LineSlab slab_of(int64_t item, int64_t per_item, int64_t slots, int64_t lines,
                                            int64_t dim_size) {
  LineSlab s;
  s.width = dim_size;
  if constexpr (kSpan == LineSpan::one) {
    s.line = item;
  } else if constexpr (kSpan == LineSpan::several) {
    s.line = item * per_item;
    s.lines = min(per_item, lines - s.line);
  } else {
    s.line = item / per_item;
    s.first = (item - s.line * per_item) * slots;
    s.width = min(slots, dim_size - s.first);
  }
  return s;
}

// Tile `tile` of an item's entries (lines' entries one after the other): coalesced loads, values
// loaded independently of their index.
template <LineSpan kSpan, class T, class Idx>
__device__ __forceinline__ void load_line_tile(const IndexedLayout& layout, const T* values, const Idx* index,
                                               const LineSlab& slab, int64_t tile, LineTile<acc_t<T>>& t) {
  const Walker<kRowTensors>& w = layout.rows;
  const int64_t inner = w.inner_size();
  int64_t base[kRowTensors];
  if constexpr (kSpan != LineSpan::several) w.offsets(slab.line, base, w.rank - 1);
#pragma unroll
  for (int u = 0; u < kLineItems; ++u) {
    int64_t c = tile * kLineTile + u * int64_t(kThreads) + threadIdx.x, line_in_item = 0;
    if constexpr (kSpan == LineSpan::several) {  // an item is one tile: c < kLineTile
      line_in_item = static_cast<int>(c) / static_cast<int>(inner);
      c -= line_in_item * inner;
      w.offsets(slab.line + min(line_in_item, slab.lines - 1), base, w.rank - 1);
    }
    const bool inside = c < inner && line_in_item < slab.lines;
    const int64_t i = inside ? static_cast<int64_t>(index[base[1] + c * w.inner_stride(1)]) : -1;
    const acc_t<T> v = inside ? static_cast<acc_t<T>>(values[base[0] + c * w.inner_stride(0)]) : acc_t<T>(0);
    const bool valid = i >= slab.first && i < slab.first + slab.width && i != layout.padding;
    t.key[u] = valid ? static_cast<int>(line_in_item * slab.width + i - slab.first) : -1;
    t.value[u] = v;
  }
}

// The write-back of an item of several lines: slot s is line s / width of it, column s % width. A
// thread's slots advance by a block each step, so its (line, column) is carried, not divided, and
// the line's table offset recomputed only when the line changes.
template <class T, class Acc>
__device__ __forceinline__ void write_lines(const IndexedLayout& layout, const LineSlab& slab, Acc* line_sum, T* table,
                                            bool overwrite) {
  const int width = static_cast<int>(slab.width);  // an item fits in shared memory
  const int slots = static_cast<int>(slab.lines) * width;
  int line_in_item = static_cast<int>(threadIdx.x) / width, j = static_cast<int>(threadIdx.x) - line_in_item * width;
  constexpr int kBatch = 4;  // slots whose old values are loaded back to back
  int based = -1;
  int64_t base[kRowTensors];
  for (int s0 = threadIdx.x; s0 < slots; s0 += kBatch * blockDim.x) {
    T* at[kBatch];
    T old[kBatch];
    Acc sum[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (line_in_item != based && line_in_item < static_cast<int>(slab.lines)) {
        layout.rows.offsets(slab.line + line_in_item, base, layout.rows.rank - 1);
        based = line_in_item;
      }
      const int s = s0 + u * static_cast<int>(blockDim.x);
      at[u] = table + base[2] + j * layout.table_dim_stride;
      sum[u] = s < slots ? line_sum[s] : ScatterSum::identity<Acc>();
      old[u] = old_value(sum[u], at[u], overwrite);
      for (j += blockDim.x; j >= width; j -= width) ++line_in_item;
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int s = s0 + u * static_cast<int>(blockDim.x);
      if (s >= slots) continue;
      line_sum[s] = ScatterSum::identity<Acc>();  // ready for the next item
      write_slot(sum[u], at[u], old[u], overwrite);
    }
  }
}

// Adding an item whose entries are all in one tile (registers): each reached slot is taken by the
// first of its entries' threads (take_sum), which adds it to its table element; a slot no entry
// reached is not visited, and the loads of a thread's slots are in flight together. (Scanning the
// line instead costs its length and a load latency per kThreads x kBatch slots.)
// `zeroed`: the table holds zeros (an overwrite, zeroed first): nothing is loaded.
template <class T, class Acc>
__device__ __forceinline__ void add_entries(const IndexedLayout& layout, const LineSlab& slab, const LineTile<Acc>& t,
                                            Acc* line_sum, T* table, bool zeroed) {
  const int width = static_cast<int>(slab.width);  // an item fits in shared memory
  T* at[kLineItems];
  T old[kLineItems];
  Acc sum[kLineItems];
#pragma unroll
  for (int u = 0; u < kLineItems; ++u) {
    sum[u] = t.key[u] >= 0 ? take_sum(line_sum + t.key[u]) : ScatterSum::identity<Acc>();
    at[u] = table;
    if (sum[u] != ScatterSum::identity<Acc>()) {
      const int line_in_item = t.key[u] / width;
      int64_t base[kRowTensors];
      layout.rows.offsets(slab.line + line_in_item, base, layout.rows.rank - 1);
      at[u] = table + base[2] + (slab.first + t.key[u] - line_in_item * width) * layout.table_dim_stride;
    }
    old[u] = old_value(sum[u], at[u], zeroed);
  }
#pragma unroll
  for (int u = 0; u < kLineItems; ++u) write_slot(sum[u], at[u], old[u], false);
}

// Five blocks per SM (at most 51 registers): with two tiles in registers the kernel otherwise takes
// 80+ registers and two or three blocks per SM, which measured 10-35% slower (bench/NOTES.md). Four
// for several lines an item, whose write-back carries more state.
template <class T, bool kOrdered, LineSpan kSpan, class Idx>
__global__ void __launch_bounds__(kThreads, kSpan == LineSpan::several ? 4 : 5)
    scatter_shared_row_kernel(IndexedLayout layout, const T* values, T* table, const Idx* index, bool overwrite,
                              int64_t per_item, bool by_entry, bool runs, bool zeroed) {
  using Acc = acc_t<T>;
  constexpr int kBatch = 8;  // write-back loads issued back to back
  constexpr int64_t kSlots = kSharedRowBytes / sizeof(Acc);
  constexpr int kVec = 16 / sizeof(T);
  extern __shared__ __align__(16) unsigned char shared_bytes[];  // write_run's chunks of sums
  Acc* line_sum = reinterpret_cast<Acc*>(shared_bytes);
  const Walker<kRowTensors>& w = layout.rows;
  const int64_t inner = w.inner_size(), lines = layout.row_count / inner;
  const int64_t tiles = kSpan == LineSpan::several ? 1 : (inner + kLineTile - 1) / kLineTile;
  const int64_t items = kSpan == LineSpan::one       ? lines
                        : kSpan == LineSpan::several ? (lines + per_item - 1) / per_item
                                                     : lines * per_item;
  const int64_t step = int64_t(blockDim.x) * kBatch;
  // An item's sums, and as many more as write_run's shift can take.
  const int64_t used = (kSpan == LineSpan::several ? per_item * layout.dim_size : min(layout.dim_size, kSlots)) + kVec;
  for (int64_t j = threadIdx.x; j < used; j += blockDim.x) line_sum[j] = ScatterSum::identity<Acc>();
  __syncthreads();
  LineTile<Acc> next, tile;
  if (blockIdx.x < items)
    load_line_tile<kSpan>(layout, values, index, slab_of<kSpan>(blockIdx.x, per_item, kSlots, lines, layout.dim_size),
                          0, next);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const LineSlab slab = slab_of<kSpan>(item, per_item, kSlots, lines, layout.dim_size);
    int64_t base[kRowTensors];
    w.offsets(slab.line, base, w.rank - 1);
    T* const first = table + base[2] + slab.first * layout.table_dim_stride;  // the item's first element
    // Sums placed for write_run where the item is one run of the table.
    Acc* const sums = runs ? line_sum + run_shift(first) : line_sum;
    for (int64_t k = 0; k < tiles; ++k) {
      tile = next;
      const int64_t next_item = k + 1 < tiles ? item : item + gridDim.x;
      if (next_item < items)
        load_line_tile<kSpan>(layout, values, index,
                              slab_of<kSpan>(next_item, per_item, kSlots, lines, layout.dim_size),
                              k + 1 < tiles ? k + 1 : 0, next);
      if constexpr (kOrdered) {
        add_tile_ordered(tile, sums);
      } else {
        add_tile_atomic(tile, sums);
      }
    }
    __syncthreads();
    if (by_entry) {
      add_entries(layout, slab, tile, sums, table, zeroed);
    } else if (runs) {
      write_run<kVec>(first, static_cast<int>(slab.lines * slab.width), sums, threadIdx.x, blockDim.x, overwrite);
    } else if constexpr (kSpan == LineSpan::several) {
      write_lines(layout, slab, line_sum, table, overwrite);
    } else {
      for (int64_t j0 = threadIdx.x; j0 < slab.width; j0 += step) {
        T old[kBatch];  // the sums are read from shared memory twice rather than held
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          const int64_t j = j0 + u * int64_t(blockDim.x);
          old[u] = j < slab.width ? old_value(line_sum[j], first + j * layout.table_dim_stride, overwrite) : T{};
        }
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          const int64_t j = j0 + u * int64_t(blockDim.x);
          if (j >= slab.width) continue;
          write_slot(line_sum[j], first + j * layout.table_dim_stride, old[u], overwrite);
          line_sum[j] = ScatterSum::identity<Acc>();  // ready for the next item
        }
      }
    }
    __syncthreads();
  }
}

}  // namespace baracuda::detail::cuda

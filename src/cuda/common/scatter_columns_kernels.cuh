#pragma once
// Scatter-add along a dim that is not the walk's innermost, element mode (torch.gather's backward
// along dim 0, scatter_add_(0, ...)), either variant: a block sums a tile of adjacent columns (the
// walk's innermost dim) by a slab of destination rows in shared memory, then writes them; no
// workspace, no global atomics.
// Compiled at select (NVRTC; cuda/indexing/scatter_lines.cpp launches them), one program an element
// type, index type and variant. The walk's item is a ColumnWalk's (cuda/indexing/strategies.hpp).
#include "cuda/common/line_sum.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {

// An item: `height` destination rows from `first`, columns from `column0` of walk line `line`, whose
// tile starts at `base` (values, index, table).
struct ColumnItem {
  int64_t base[3], first, height, column0;
};
__device__ __forceinline__ ColumnItem column_item(const ColumnWalk& cw, int64_t item) {
  const int64_t per_line = cw.column_tiles * cw.slabs, line = item / per_line, in_line = item - line * per_line;
  const int64_t tile_column = in_line / cw.slabs;
  ColumnItem it;
  it.first = (in_line - tile_column * cw.slabs) * cw.rows;
  it.height = min(cw.rows, cw.dim_size - it.first);
  it.column0 = tile_column << cw.shift;
  cw.lines.offsets(line, it.base);
  for (int t = 0; t < 3; ++t) it.base[t] += it.column0 * cw.column_stride[t];
  return it;
}

// Tile k of an item's entries (entry-major, the column fastest): the values loaded independently
// of their index; an entry is kept where its row lands in the item's slab.
template <class T, class Idx>
__device__ __forceinline__ void load_column_tile(const ColumnWalk& cw, const T* values, const Idx* index,
                                                 const ColumnItem& it, int64_t k, LineTile<acc_t<T>>& tile) {
  const int width = 1 << cw.shift;
#pragma unroll
  for (int u = 0; u < kLineItems; ++u) {
    const int64_t e = k * kLineTile + u * kThreads + threadIdx.x, entry = e >> cw.shift;
    const int c = static_cast<int>(e & (width - 1));
    const bool inside = entry < cw.entries && it.column0 + c < cw.columns;
    const int64_t i =
        inside ? static_cast<int64_t>(index[it.base[1] + entry * cw.entry_stride[1] + c * cw.column_stride[1]]) : -1;
    tile.value[u] =
        inside ? static_cast<acc_t<T>>(values[it.base[0] + entry * cw.entry_stride[0] + c * cw.column_stride[0]])
               : acc_t<T>(0);
    const bool valid = i >= it.first && i < it.first + it.height && i != cw.padding;
    tile.key[u] = valid ? (static_cast<int>(i - it.first) << cw.shift) + c : -1;
  }
}

// The next tile's loads are issued before the current one is added (and before the item's write-back
// when it is the item's last), as in scatter_line_kernels.cuh.
template <class T, bool kOrdered, class Idx>
__global__ void __launch_bounds__(kThreads, 4)
    scatter_columns_kernel(ColumnWalk cw, const T* values, T* table, const Idx* index, bool overwrite) {
  using Acc = acc_t<T>;
  constexpr int kBatch = 4;  // write-back loads issued back to back
  extern __shared__ unsigned char shared_bytes[];
  Acc* sums = reinterpret_cast<Acc*>(shared_bytes);
  const int width = 1 << cw.shift;
  const int64_t items = cw.lines.numel() * cw.column_tiles * cw.slabs;
  const int64_t tiles = (cw.entries * width + kLineTile - 1) / kLineTile;
  const int used = static_cast<int>(min(cw.dim_size, cw.rows)) * width;
  for (int s = threadIdx.x; s < used; s += blockDim.x) sums[s] = ScatterSum::identity<Acc>();
  __syncthreads();
  ColumnItem next_item = column_item(cw, min(int64_t(blockIdx.x), items - 1));
  LineTile<Acc> next;
  if (blockIdx.x < items) load_column_tile(cw, values, index, next_item, 0, next);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const ColumnItem it = next_item;
    for (int64_t k = 0; k < tiles; ++k) {
      const LineTile<Acc> tile = next;
      if (k + 1 < tiles) {
        load_column_tile(cw, values, index, it, k + 1, next);
      } else if (item + gridDim.x < items) {
        next_item = column_item(cw, item + gridDim.x);
        load_column_tile(cw, values, index, next_item, 0, next);
      }
      if constexpr (kOrdered) {
        add_tile_ordered(tile, sums);
      } else {
        add_tile_atomic(tile, sums);
      }
    }
    const int64_t first = it.first, column0 = it.column0, height = it.height;
    const int64_t base[3] = {it.base[0], it.base[1], it.base[2]};
    __syncthreads();
    const int slots = static_cast<int>(height) * width;
    // One loop for each value of `overwrite`: with the flag a run-time test in one loop, NVRTC kept
    // the test and the shared window's address inside it, where nvcc made a loop of each
    // (bench/NOTES.md, the seventeenth session's SASS comparison).
    const auto write_back = [&](auto overwrite_flag) {
      constexpr bool kOverwrite = decltype(overwrite_flag)::value;
      for (int s0 = threadIdx.x; s0 < slots; s0 += kBatch * blockDim.x) {
        T* at[kBatch];
        T old[kBatch];
        bool in_table[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          const int s = s0 + u * static_cast<int>(blockDim.x), c = s & (width - 1);
          in_table[u] = s < slots && column0 + c < cw.columns;
          at[u] = table + base[2] + (first + (s >> cw.shift)) * cw.table_dim_stride + c * cw.column_stride[2];
          old[u] = in_table[u] ? old_value(sums[s], at[u], kOverwrite) : T{};
        }
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          const int s = s0 + u * static_cast<int>(blockDim.x);
          if (in_table[u]) write_slot(sums[s], at[u], old[u], kOverwrite);
          if (s < slots) sums[s] = ScatterSum::identity<Acc>();  // ready for the next item
        }
      }
    };
    if (overwrite) {
      write_back(std::true_type{});
    } else {
      write_back(std::false_type{});
    }
    __syncthreads();
  }
}

}  // namespace baracuda::detail::cuda

// Scatter-add of short destination lines, a warp each (either variant; always in one fixed order):
// the walk's innermost dim is dim and a line of sums fits in kWarpLineBytes of shared memory (gather's
// backward of [tokens, experts] <- [tokens, k], of [rows, 1024] <- [rows, 64]). A warp takes an item
// of a few consecutive lines (at most kWarpItemEntries entries), adds its entries into its own sums in
// shared memory, in f32 for 16-bit types, then writes the item's lines with one coalesced pass.
// Overwriting, that pass is the table's only write (zeros included), so the table is written once
// at the full line rate where zeroing it first and adding the entries after would write it, then
// read and rewrite every sector an entry reaches. No block-wide barrier: a warp's item is its own,
// and the next item's entries are loaded before the current item is summed and written.
//
// Each round of 32 entries (one a lane), lanes whose entries meet at one slot are matched
// (__match_any_sync) and the lowest sums them in lane order, then adds that sum to the slot: every
// slot sums its entries in entry order, the same bits on every run, with no atomics.
#include <algorithm>

#include "cuda/common/check.cuh"
#include "cuda/common/launch.cuh"
#include "cuda/common/scatter_ops.cuh"
#include "cuda/indexing/line_sum.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {
namespace {

inline constexpr int kWarps = kThreads / 32;
inline constexpr int kRounds = static_cast<int>(kWarpItemEntries / 32);  // an item's entries, one a lane a round

// How a launch cuts the walk: `per_item` consecutive lines of `entries` each, summed in `line_size`
// slots a line. `outer_dims`: the walk's dims that give a line's offsets (all of them when dim left
// the walk, every entry then alone on its line).
struct WarpItems {
  int64_t lines = 0, items = 0;
  int entries = 0, per_item = 0, line_size = 0, outer_dims = 0;
};

template <class Acc>
struct WarpTile {
  int count = 0;        // the item's entries
  int key[kRounds];     // slot in the warp's sums, or -1 for an entry to skip (bad index, padding)
  Acc value[kRounds];
};

// Item `item`'s entries, one a lane a round: coalesced, the values loaded independently of their index.
template <class T, class Idx>
__device__ __forceinline__ void load_item(const IndexedLayout& layout, const WarpItems& g, const T* values,
                                          const Idx* index, int64_t item, WarpTile<acc_t<T>>& t) {
  const Walker<kRowTensors>& w = layout.rows;
  const int lane = threadIdx.x % 32;
  const int64_t line0 = item * g.per_item;
  t.count = static_cast<int>(min(int64_t(g.per_item), g.lines - line0)) * g.entries;
#pragma unroll
  for (int r = 0; r < kRounds; ++r) {
    const int e = r * 32 + lane;
    const bool inside = e < t.count;
    const int line_in_item = inside ? e / g.entries : 0, c = e - line_in_item * g.entries;
    int64_t base[kRowTensors];
    w.offsets(line0 + line_in_item, base, g.outer_dims);
    // (c is 0 when dim left the walk: every line is one entry.)
    const int64_t i = inside ? static_cast<int64_t>(index[base[1] + c * w.inner_stride(1)]) : -1;
    t.value[r] = inside ? static_cast<acc_t<T>>(values[base[0] + c * w.inner_stride(0)]) : acc_t<T>(0);
    const bool valid = i >= 0 && i < layout.dim_size && i != layout.padding;
    t.key[r] = valid ? line_in_item * g.line_size + static_cast<int>(i) : -1;
  }
}

// Adds a tile into the warp's sums, round by round, each slot's entries in lane order.
template <class Acc>
__device__ __forceinline__ void add_item(const WarpTile<Acc>& t, Acc* sums, Acc* stage) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < kRounds; ++r) {
    if (r * 32 >= t.count) break;  // warp-uniform
    stage[lane] = t.value[r];
    const unsigned same = __match_any_sync(0xffffffffu, static_cast<unsigned>(t.key[r]));
    __syncwarp();
    if (t.key[r] >= 0 && lane == __ffs(same) - 1) {
      Acc sum = ScatterSum::identity<Acc>();
      for (unsigned m = same; m; m &= m - 1) sum = ScatterSum::reduce(sum, stage[__ffs(m) - 1]);
      sums[t.key[r]] = ScatterSum::reduce(sums[t.key[r]], sum);
    }
    __syncwarp();  // the stage is rewritten next round
  }
}

// Writes (or adds) an item's sums to its table lines and clears them for the next item. A lane's
// slots advance by 32 a step, so its (line, column) is carried, not divided, and the line's table
// offset recomputed only when its line changes.
template <class T, class Acc>
__device__ __forceinline__ void write_item(const IndexedLayout& layout, const WarpItems& g, int64_t item, Acc* sums,
                                           T* table, bool overwrite) {
  constexpr int kBatch = 4;  // slots whose old values are loaded back to back (adding)
  const int lane = threadIdx.x % 32;
  const int64_t line0 = item * g.per_item;
  const int slots = static_cast<int>(min(int64_t(g.per_item), g.lines - line0)) * g.line_size;
  int line_in_item = lane / g.line_size, j = lane - line_in_item * g.line_size, based = -1;
  int64_t base[kRowTensors] = {};
  for (int s0 = 0; s0 < slots; s0 += 32 * kBatch) {
    T* at[kBatch];
    T old[kBatch];
    Acc sum[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int s = s0 + u * 32 + lane;
      if (s < slots && line_in_item != based) {
        layout.rows.offsets(line0 + line_in_item, base, g.outer_dims);
        based = line_in_item;
      }
      at[u] = table + base[2] + int64_t(j) * layout.table_dim_stride;
      sum[u] = s < slots ? sums[s] : ScatterSum::identity<Acc>();
      old[u] = s < slots ? old_value(sum[u], at[u], overwrite) : T{};
      for (j += 32; j >= g.line_size; j -= g.line_size) ++line_in_item;
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int s = s0 + u * 32 + lane;
      if (s >= slots) continue;
      sums[s] = ScatterSum::identity<Acc>();
      write_slot(sum[u], at[u], old[u], overwrite);
    }
  }
  __syncwarp();  // the sums are cleared before the next item adds to them
}

template <class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    scatter_warp_lines_kernel(IndexedLayout layout, WarpItems g, const T* values, T* table, const Idx* index,
                              bool overwrite) {
  using Acc = acc_t<T>;
  extern __shared__ unsigned char shared_bytes[];
  __shared__ Acc stage[kWarps][32];
  const int warp_in_block = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int item_slots = g.per_item * g.line_size;
  Acc* sums = reinterpret_cast<Acc*>(shared_bytes) + warp_in_block * item_slots;
  for (int s = lane; s < item_slots; s += 32) sums[s] = ScatterSum::identity<Acc>();
  __syncwarp();
  const int64_t first = int64_t(blockIdx.x) * kWarps + warp_in_block, step = int64_t(gridDim.x) * kWarps;
  WarpTile<Acc> next;
  if (first < g.items) load_item(layout, g, values, index, first, next);
  for (int64_t item = first; item < g.items; item += step) {
    const WarpTile<Acc> tile = next;
    if (item + step < g.items) load_item(layout, g, values, index, item + step, next);
    add_item(tile, sums, stage[warp_in_block]);
    write_item(layout, g, item, sums, table, overwrite);
  }
}

}  // namespace

template <class T, class Idx>
Status scatter_warp_lines(const Stream& stream, const IndexedProblem& p, bool overwrite, int sm_count) {
  using Acc = acc_t<T>;
  const IndexedLayout& layout = p.layout;
  const bool dim_walked = p.desc.shape.dims[p.desc.dim] > 1;  // else dim left the walk: one entry a line
  WarpItems g;
  g.entries = static_cast<int>(dim_walked ? layout.rows.inner_size() : 1);  // <= kWarpItemEntries (strategy)
  g.line_size = static_cast<int>(layout.dim_size);  // <= kWarpLineBytes / sizeof(Acc) (strategy)
  g.outer_dims = dim_walked ? layout.rows.rank - 1 : layout.rows.rank;
  g.lines = layout.row_count / g.entries;
  // As many lines an item as its sums and entries allow, while every SM still gets 32 items.
  const int64_t fit = std::min<int64_t>(kWarpLineBytes / static_cast<int64_t>(sizeof(Acc)) / g.line_size,
                                        kWarpItemEntries / g.entries);
  g.per_item = static_cast<int>(std::clamp<int64_t>(g.lines / (int64_t(sm_count) * 32), 1, std::max<int64_t>(fit, 1)));
  g.items = (g.lines + g.per_item - 1) / g.per_item;
  const size_t bytes = size_t(kWarps) * size_t(g.per_item) * size_t(g.line_size) * sizeof(Acc);  // <= 32 KB
  const int64_t needed = (g.items + kWarps - 1) / kWarps;
  const auto blocks = static_cast<unsigned>(std::clamp<int64_t>(needed, 1, int64_t(sm_count) * kBlocksPerSm));
  scatter_warp_lines_kernel<T, Idx><<<blocks, kThreads, bytes, native(stream)>>>(
      layout, g, static_cast<const T*>(p.values), static_cast<T*>(p.table), static_cast<const Idx*>(p.index),
      overwrite);
  return last_launch_status("scatter_warp_lines_kernel");
}

#define BARACUDA_INSTANTIATE(T, Idx) \
  template Status scatter_warp_lines<T, Idx>(const Stream&, const IndexedProblem&, bool, int);
BARACUDA_SCATTER_TYPES(BARACUDA_INSTANTIATE)
#undef BARACUDA_INSTANTIATE

}  // namespace baracuda::detail::cuda

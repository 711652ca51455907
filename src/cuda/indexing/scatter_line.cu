// Scatter-add along the innermost dim (either variant): one destination line per block, summed in
// shared memory (see scatter_shared_row_kernel); no workspace.
#include <algorithm>

#include "cuda/common/check.cuh"
#include "cuda/common/launch.cuh"
#include "cuda/common/scatter_ops.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {
namespace {

// Element mode along the innermost dim (torch.gather's backward along the last dim, index_select's
// backward along it): a block sums one destination line of `dim_size` in shared memory (in f32 for
// 16-bit types), then writes or adds the line with one coalesced pass that also re-zeroes it. A line
// longer than shared memory holds is cut into slabs (LineSlab), a block each. The
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

// A block's share of the table: slots [first, first + width) of walk line `line` (the whole line
// when it fits in shared memory, else a slab of kSharedRowBytes of sums; a line of several slabs has
// its entries read once per slab, each slab keeping those that land in it).
struct LineSlab {
  int64_t line = 0, first = 0, width = 0;
};
template <bool kSlabs>
__device__ __forceinline__ LineSlab slab_of(int64_t item, int64_t slabs_per_line, int64_t slots, int64_t dim_size) {
  LineSlab s;
  if constexpr (!kSlabs) {  // a line a block: the single-slab kernel keeps its registers
    s.line = item;
    s.width = dim_size;
    return s;
  }
  s.line = item / slabs_per_line;
  s.first = (item - s.line * slabs_per_line) * slots;
  s.width = min(slots, dim_size - s.first);
  return s;
}

// Tile `tile` of a slab's line: coalesced loads, values loaded independently of their index.
template <class T, class Idx>
__device__ __forceinline__ void load_line_tile(const IndexedLayout& layout, const T* values, const Idx* index,
                                               const LineSlab& slab, int64_t tile, LineTile<acc_t<T>>& t) {
  const Walker<kRowTensors>& w = layout.rows;
  const int64_t inner = w.inner_size();
  int64_t base[kRowTensors];
  w.offsets(slab.line, base, w.rank - 1);
#pragma unroll
  for (int u = 0; u < kLineItems; ++u) {
    const int64_t c = tile * kLineTile + u * int64_t(kThreads) + threadIdx.x;
    const bool inside = c < inner;
    const int64_t i = inside ? static_cast<int64_t>(index[base[1] + c * w.inner_stride(1)]) : -1;
    const acc_t<T> v = inside ? static_cast<acc_t<T>>(values[base[0] + c * w.inner_stride(0)]) : acc_t<T>(0);
    const bool valid = i >= slab.first && i < slab.first + slab.width && i != layout.padding;
    t.key[u] = valid ? static_cast<int>(i - slab.first) : -1;
    t.value[u] = v;
  }
}

template <class Acc>
__device__ __forceinline__ void add_tile_atomic(const LineTile<Acc>& t, Acc* line_sum) {
#pragma unroll
  for (int u = 0; u < kLineItems; ++u)
    if (t.key[u] >= 0) ScatterSum::atomic_combine(line_sum + t.key[u], t.value[u]);
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
    sum[u] = ScatterSum::identity<Acc>();
    if (leads[u])
      for (unsigned m = group; m; m &= m - 1) sum[u] = ScatterSum::reduce(sum[u], warp_stage[__ffs(m) - 1]);
    __syncwarp();  // the stage is rewritten next round
  }
  for (int turn = 0; turn < kLineWarps; ++turn) {
    if (warp == turn) {
#pragma unroll
      for (int u = 0; u < kLineItems; ++u) {
        if (leads[u]) ScatterSum::combine(line_sum + t.key[u], sum[u]);
        __syncwarp();  // a later round may add to the same slot from another lane
      }
    }
    __syncthreads();
  }
}

// Five blocks per SM (at most 51 registers): with two tiles in registers the kernel otherwise takes
// 80+ registers and two or three blocks per SM, which measured 10-35% slower (bench/NOTES.md).
template <class T, bool kOrdered, bool kSlabs, class Idx>
__global__ void __launch_bounds__(kThreads, 5)
    scatter_shared_row_kernel(IndexedLayout layout, const T* values, T* table, const Idx* index, bool overwrite) {
  using Acc = acc_t<T>;
  constexpr int kBatch = 8;  // write-back loads issued back to back
  constexpr int64_t kSlots = kSharedRowBytes / sizeof(Acc);
  extern __shared__ unsigned char shared_bytes[];
  Acc* line_sum = reinterpret_cast<Acc*>(shared_bytes);
  const Walker<kRowTensors>& w = layout.rows;
  const int64_t inner = w.inner_size(), lines = layout.row_count / inner;
  const int64_t tiles = (inner + kLineTile - 1) / kLineTile;
  const int64_t slabs_per_line = (layout.dim_size + kSlots - 1) / kSlots, items = lines * slabs_per_line;
  const int64_t step = int64_t(blockDim.x) * kBatch;
  for (int64_t j = threadIdx.x; j < min(layout.dim_size, kSlots); j += blockDim.x)
    line_sum[j] = ScatterSum::identity<Acc>();
  __syncthreads();
  LineTile<Acc> next;
  if (blockIdx.x < items)
    load_line_tile(layout, values, index, slab_of<kSlabs>(blockIdx.x, slabs_per_line, kSlots, layout.dim_size), 0, next);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const LineSlab slab = slab_of<kSlabs>(item, slabs_per_line, kSlots, layout.dim_size);
    for (int64_t k = 0; k < tiles; ++k) {
      const LineTile<Acc> tile = next;
      const int64_t next_item = k + 1 < tiles ? item : item + gridDim.x;
      if (next_item < items)
        load_line_tile(layout, values, index, slab_of<kSlabs>(next_item, slabs_per_line, kSlots, layout.dim_size),
                       k + 1 < tiles ? k + 1 : 0, next);
      if constexpr (kOrdered) {
        add_tile_ordered(tile, line_sum);
      } else {
        add_tile_atomic(tile, line_sum);
      }
    }
    __syncthreads();
    int64_t base[kRowTensors];
    w.offsets(slab.line, base, w.rank - 1);
    T* line = table + base[2] + slab.first * layout.table_dim_stride;
    for (int64_t j0 = threadIdx.x; j0 < slab.width; j0 += step) {
      T old[kBatch];
      if (!overwrite) {
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          const int64_t j = j0 + u * int64_t(blockDim.x);
          old[u] = j < slab.width ? line[j * layout.table_dim_stride] : T{};
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int64_t j = j0 + u * int64_t(blockDim.x);
        if (j >= slab.width) continue;
        const Acc sum = line_sum[j];
        line_sum[j] = ScatterSum::identity<Acc>();  // ready for the next line
        if (overwrite) {
          line[j * layout.table_dim_stride] = static_cast<T>(sum);
        } else if (sum != ScatterSum::identity<Acc>()) {
          ScatterSum::combine(&old[u], sum);
          line[j * layout.table_dim_stride] = old[u];
        }
      }
    }
    __syncthreads();
  }
}

}  // namespace

template <class T, class Idx>
Status scatter_line(const Stream& stream, const IndexedProblem& p, bool overwrite, int sm_count) {
  using Acc = acc_t<T>;
  const IndexedLayout& layout = p.layout;
  const bool ordered = p.variant == IndexVariant::sorted;
  const int64_t slots = kSharedRowBytes / sizeof(Acc);
  const bool slabs = layout.dim_size > slots;
  const auto kernel = ordered ? (slabs ? scatter_shared_row_kernel<T, true, true, Idx>
                                       : scatter_shared_row_kernel<T, true, false, Idx>)
                              : (slabs ? scatter_shared_row_kernel<T, false, true, Idx>
                                       : scatter_shared_row_kernel<T, false, false, Idx>);
  const size_t bytes = static_cast<size_t>(std::min(layout.dim_size, slots)) * sizeof(Acc);
  // The line can take the 48 KB a block gets by default, beside the kernel's static shared memory.
  if (Status st = cuda_status(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
          "cudaFuncSetAttribute");
      !st)
    return st;
  const int64_t items = layout.row_count / layout.rows.inner_size() * ((layout.dim_size + slots - 1) / slots);
  const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>(items, 1, int64_t(sm_count) * 16));
  kernel<<<blocks, kThreads, bytes, native(stream)>>>(layout, static_cast<const T*>(p.values), static_cast<T*>(p.table),
                                                      static_cast<const Idx*>(p.index), overwrite);
  return last_launch_status("scatter_shared_row_kernel");
}

#define BARACUDA_INSTANTIATE(T, Idx) \
  template Status scatter_line<T, Idx>(const Stream&, const IndexedProblem&, bool, int);
BARACUDA_SCATTER_TYPES(BARACUDA_INSTANTIATE)
#undef BARACUDA_INSTANTIATE

}  // namespace baracuda::detail::cuda

#pragma once
// The shared-memory sums of the line and column scatter kernels (scatter_line_kernels.cuh,
// scatter_columns_kernels.cuh): a block's entries come in tiles of kLineTile (index key, value; the
// sizes in cuda/indexing/strategies.hpp); each tile is added into sums in shared memory, then each
// sum is written to its table slot. Two ways to add a tile:
//  - atomic: shared-memory atomics; the order of the additions varies from run to run;
//  - ordered (the "sorted" variant): in each round of one entry per thread, the lanes of a warp
//    holding the same key are matched (__match_any_sync) and the lowest one sums them in lane order;
//    then the warps take turns, in warp order, adding their sums into the line. Every slot sums its
//    entries in one fixed order (tile, round, warp, lane): the same bits every run.
// (NVRTC reads it: the kernels compiled at select.)
#include "common/elementwise.hpp"
#include "cuda/common/line_write.cuh"
#include "cuda/common/scatter_ops.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {

inline constexpr int kLineWarps = kThreads / 32;

template <class Acc>
struct LineTile {
  int key[kLineItems];  // the index value (a line fits in shared memory), or -1 for an entry to skip
  Acc value[kLineItems];
};

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

// A slot's sum (f32 or f64), taken and cleared in one step: of the threads holding entries of the
// slot, the first gets the sum and the rest the identity.
template <class Acc>
__device__ __forceinline__ Acc take_sum(Acc* slot) {
  const Acc clear = ScatterSum::identity<Acc>();
  if constexpr (sizeof(Acc) == 4) {
    return __int_as_float(atomicExch(reinterpret_cast<int*>(slot), __float_as_int(clear)));
  } else {
    using Bits = unsigned long long;
    return __longlong_as_double(static_cast<long long>(
        atomicExch(reinterpret_cast<Bits*>(slot), static_cast<Bits>(__double_as_longlong(clear)))));
  }
}

}  // namespace baracuda::detail::cuda

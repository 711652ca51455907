#pragma once
// Scatter-add of short lines (either variant): the walk's innermost dim is dim with at most
// kShortLineEntries entries a line (MoE routing's top-k gradient, [tokens, experts] <- [tokens, k]),
// or an index of size 1 along dim (every entry alone on its line: a cross-entropy's target logit,
// [rows, vocab] <- [rows, 1]). A group of `group` lanes (the entries rounded up to a power of two)
// takes a line, one entry a lane; lanes whose entries meet at one destination are matched
// (__match_any_sync on the table offset) and the lowest sums them in lane order (their values staged
// in shared memory), in f32 for 16-bit types, then adds the sum to the destination once (add_once).
// No other group touches that line, so nothing contends, there is no workspace and no shared line to
// clear, whatever the line's length: the same bits on every run, one rounding per destination.
// Compiled at select (NVRTC; cuda/indexing/scatter_lines.cpp launches it), one program an element
// type and index type.
#include "cuda/common/scatter_ops.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {

// Adds a destination's whole sum to it, the only thread that does. Overwriting, the table was just
// zeroed: the sum is stored. f32 and f64 add with an atomic that nothing contends (the bits of a
// load, add and store, without waiting for the load, but for f32 subnormals, which PTX's
// red.add.f32 flushes to zero); 16-bit types load, add in f32 and store, for one rounding (their
// atomics would round the sum to 16 bits first).
template <class T, class Acc>
__device__ __forceinline__ void add_once(T* p, Acc sum, bool overwrite) {
  if (overwrite) {
    *p = static_cast<T>(sum);
  } else if constexpr (std::is_same_v<T, Acc>) {
    ScatterSum::atomic_combine(p, sum);
  } else {
    ScatterSum::combine(p, sum);
  }
}

template <class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    scatter_short_lines_kernel(IndexedLayout layout, const T* values, T* table, const Idx* index, int64_t entries,
                               int group, bool overwrite) {
  using Acc = acc_t<T>;
  // Each round's values, read by the lowest lane of each match (a few reads where a shuffle loop
  // would take one a lane of the group).
  __shared__ Acc stage[kWarpsPerBlock][kShortRounds][32];
  const Walker<kRowTensors>& w = layout.rows;
  const int lane = threadIdx.x % 32;
  const int first = lane & -group;  // the group's first lane (group is a power of two)
  const int64_t e = lane - first;
  const int64_t lines = layout.row_count / entries;
  const int64_t per_round = 32 / group, per_step = per_round * kShortRounds;
  const int64_t warp = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  Acc(&warp_stage)[kShortRounds][32] = stage[threadIdx.x / 32];
  // line0 is the same across the warp: every lane reaches the warp-wide matches.
  for (int64_t line0 = warp * per_step; line0 < lines; line0 += warps * per_step) {
    Acc x[kShortRounds];
    int64_t table_off[kShortRounds];
    bool valid[kShortRounds];
#pragma unroll
    for (int k = 0; k < kShortRounds; ++k) {
      const int64_t line = line0 + k * per_round + lane / group;
      const bool inside = line < lines && e < entries;
      int64_t values_off = 0;
      table_off[k] = 0;
      if (entries > 1) {  // dim is the walk's innermost: the line's offsets, then entry e along it
        int64_t base[kRowTensors];
        w.offsets(min(line, lines - 1), base, w.rank - 1);
        values_off = base[0] + e * w.inner_stride(0);
        valid[k] = inside && layout.table_row(index[base[1] + e * w.inner_stride(1)], base[2] + e * w.inner_stride(2),
                                              table_off[k]);
      } else {  // dim left the walk: every row is a line of one entry
        valid[k] = inside && layout.locate(index, line, values_off, table_off[k]);
      }
      x[k] = inside ? static_cast<Acc>(values[values_off]) : Acc(0);  // not waiting on the index
    }
#pragma unroll
    for (int k = 0; k < kShortRounds; ++k) warp_stage[k][lane] = x[k];
    __syncwarp();
#pragma unroll
    for (int k = 0; k < kShortRounds; ++k) {
      // Lanes without a valid entry get keys no offset can equal, so they match only themselves.
      const unsigned long long key = valid[k] ? static_cast<unsigned long long>(table_off[k]) : ~0ull - lane;
      const unsigned same = __match_any_sync(0xffffffffu, key);
      if (!valid[k] || lane != __ffs(same) - 1) continue;
      Acc sum = ScatterSum::identity<Acc>();
      for (unsigned m = same; m; m &= m - 1) sum = ScatterSum::reduce(sum, warp_stage[k][__ffs(m) - 1]);
      add_once(table + table_off[k], sum, overwrite);
    }
    __syncwarp();  // the stage is rewritten next step
  }
}

}  // namespace baracuda::detail::cuda

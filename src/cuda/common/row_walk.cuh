#pragma once
// The walk of an IndexedLayout's rows on the GPU: `lanes` threads per row (cuda/common/row_lanes.hpp),
// rows spread over a grid-stride loop of blocks. The host compiler (the launch sizes), nvcc and NVRTC
// (the indexing kernels compiled at select) all read it.
#include "common/indexing.hpp"
#include "cuda/common/row_lanes.hpp"

namespace baracuda::detail::cuda {

// Element mode: every element looks up its own index value. The `lanes` threads of a walk line step
// along its innermost dim (no division per element), kElementBatch elements at a time: the batch's
// index values are loaded back to back, then f(values_off, table_off, valid, inside) gets the batch
// (`inside`: the element exists; `valid`: it exists and its index value is in range, not padding).
inline constexpr int kElementBatch = 8;  // 4 -> 8: bf16 gather 48.4% -> 54.6% of copy

#if defined(__CUDACC__)
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
        table_off[u] = base[2] + c * w.inner_stride(2) + (valid[u] ? value[u] : 0) * layout.table_dim_stride;
      }
      f(values_off, table_off, valid, inside);
    }
  });
}

using ElementOffsets = int64_t[kElementBatch];
using ElementFlags = bool[kElementBatch];
#endif

}  // namespace baracuda::detail::cuda

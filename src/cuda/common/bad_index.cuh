#pragma once
// Counting the index values out of range (see bad_index) into the caller's int64 counter, so a bad
// index is detected without a device-side assert.
#include "common/indexing.hpp"
#include "cuda/common/check.cuh"
#include "cuda/common/launch.cuh"
#include "ops/indexing_problem.hpp"

namespace baracuda::detail::cuda {

template <class Idx>
__global__ void count_bad_kernel(const Idx* index, Walker<1> walker, int64_t n, int64_t dim_size,
                                 unsigned long long repeats, unsigned long long* counter) {
  unsigned long long bad = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[1];
    walker.offsets(i, off);
    bad += bad_index(index[off[0]], dim_size) ? 1 : 0;
  }
  for (int o = 16; o > 0; o /= 2) bad += __shfl_down_sync(0xffffffffu, bad, o);
  if ((threadIdx.x & 31) == 0 && bad) atomicAdd(counter, bad * repeats);
}

template <class Idx>
Status count_bad(const Stream& stream, const IndexedProblem& p, int sm_count) {
  if (!p.bad_index_count) return Status::ok();
  int64_t repeats = 1;
  const Walker<1> walker = distinct_elements(p.index_view, repeats);
  const int64_t n = p.index_view.numel() == 0 ? 0 : walker.numel();
  const unsigned blocks = grid_stride_blocks(n, sm_count);
  count_bad_kernel<Idx><<<blocks, kThreads, 0, native(stream)>>>(
      static_cast<const Idx*>(p.index_view.data), walker, n, p.layout.dim_size,
      static_cast<unsigned long long>(repeats), reinterpret_cast<unsigned long long*>(p.bad_index_count));
  return last_launch_status("count_bad_kernel");
}

}  // namespace baracuda::detail::cuda

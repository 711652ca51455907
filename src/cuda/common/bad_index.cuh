#pragma once
// Counting the index values out of range (see bad_index) into the caller's int64 counter, so a bad
// index is detected without a device-side assert. Compiled at select (NVRTC; cuda/indexing.cpp
// launches it), one program an index type.
#include "common/indexing.hpp"

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

}  // namespace baracuda::detail::cuda

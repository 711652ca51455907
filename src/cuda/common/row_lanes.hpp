#pragma once
// Rows walked by groups of `lanes` threads (a power of two up to a block, fitted to the row's work),
// rows spread over a grid-stride loop of blocks: the host's launch sizes and the kernels' walk. The
// host compiler, nvcc and NVRTC (the kernels compiled at select) all read it.
#include "common/portable.hpp"
#include "cuda/common/threads.hpp"
#if !defined(__CUDACC_RTC__)
#include <algorithm>
#endif

namespace baracuda::detail::cuda {

// Threads per row: the row's work units rounded up to a power of two, at most a block.
inline int lanes_for(int64_t units) {
  int lanes = 1;
  while (lanes < kThreads && lanes < units) lanes *= 2;
  return lanes;
}

inline unsigned row_blocks(int64_t rows, int lanes, int sm_count) {
  const int64_t rows_per_block = kThreads / lanes;
  const int64_t needed = (rows + rows_per_block - 1) / rows_per_block;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(needed, int64_t(sm_count) * 32)));
}

#if defined(__CUDACC__)
// Row r of the walk handled by `lanes` threads of the block: calls f(r, lane) for each row.
template <class F>
__device__ __forceinline__ void for_each_row(int64_t rows, int lanes, F&& f) {
  const int rows_per_block = kThreads / lanes;
  const int lane = threadIdx.x % lanes;
  for (int64_t r = int64_t(blockIdx.x) * rows_per_block + threadIdx.x / lanes; r < rows;
       r += int64_t(gridDim.x) * rows_per_block)
    f(r, lane);
}
#endif

}  // namespace baracuda::detail::cuda

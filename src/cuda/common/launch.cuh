#pragma once
// Launch geometry every CUDA kernel family shares.
#include <algorithm>
#include <cstdint>

#include "cuda/common/check.cuh"
#include "cuda/common/threads.hpp"

namespace baracuda::detail::cuda {

// Grid-stride kernels launch at most this many blocks per SM; each thread then loops.
inline constexpr int kBlocksPerSm = 8;

inline unsigned grid_stride_blocks(int64_t n, int sm_count) {
  const int64_t needed = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(needed, int64_t(sm_count) * kBlocksPerSm)));
}

// The grid of one wave: `needed` blocks of `kernel` (kThreads threads, `bytes` of dynamic shared
// memory) at most, no more than are resident at once, so that each block loops over its items with
// the next one's loads in flight.
template <class Kernel>
Status one_wave_blocks(Kernel kernel, size_t bytes, int64_t needed, int sm_count, unsigned& blocks) {
  int per_sm = 0;
  if (Status st = cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, bytes),
                              "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
      !st)
    return st;
  blocks = static_cast<unsigned>(std::clamp<int64_t>(needed, 1, int64_t(sm_count) * std::max(per_sm, 1)));
  return Status::ok();
}

}  // namespace baracuda::detail::cuda

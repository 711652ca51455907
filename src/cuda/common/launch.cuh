#pragma once
// Launch geometry every CUDA kernel family shares.
#include <algorithm>
#include <cstdint>

namespace baracuda::detail::cuda {

inline constexpr int kThreads = 256;
// Grid-stride kernels launch at most this many blocks per SM; each thread then loops.
inline constexpr int kBlocksPerSm = 8;

inline unsigned grid_stride_blocks(int64_t n, int sm_count) {
  const int64_t needed = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(needed, int64_t(sm_count) * kBlocksPerSm)));
}

}  // namespace baracuda::detail::cuda

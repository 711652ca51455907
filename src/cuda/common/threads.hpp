#pragma once
// Threads a block of most CUDA kernels (plain C++: nvcc, NVRTC and the host compiler read it).
namespace baracuda::detail::cuda {

inline constexpr int kThreads = 256;

}  // namespace baracuda::detail::cuda

#pragma once
// Zeroing a strided view on the GPU (an overwriting scatter's table before its sums; a contiguous one
// takes a memset): a grid-stride walk. Compiled at select (NVRTC; cuda/indexing.cpp launches it),
// one program an element size.
#include "common/elementwise.hpp"

namespace baracuda::detail::cuda {

template <class Bits>
__global__ void zero_view_kernel(Bits* data, Walker<1> walker, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[1];
    walker.offsets(i, off);
    data[off[0]] = Bits{0};
  }
}

}  // namespace baracuda::detail::cuda

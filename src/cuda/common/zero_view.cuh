#pragma once
// Zeroing a (strided) view on the GPU: a memset when contiguous, else a grid-stride walk.
#include "common/elementwise.hpp"
#include "cuda/common/check.cuh"
#include "cuda/common/launch.cuh"

namespace baracuda::detail::cuda {

template <class Bits>
__global__ void zero_view_kernel(Bits* data, Walker<1> walker, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[1];
    walker.offsets(i, off);
    data[off[0]] = Bits{0};
  }
}

// Zeroes every element of a (strided) view: an overwriting scatter's table before its sums.
template <class Bits>
Status zero_view(const Stream& stream, const AnyTensorRef& view, int sm_count) {
  Bits* data = static_cast<Bits*>(const_cast<void*>(view.data));
  if (view.is_contiguous())
    return cuda_status(cudaMemsetAsync(data, 0, static_cast<size_t>(view.numel()) * sizeof(Bits), native(stream)),
                       "cudaMemsetAsync");
  const Strides* strides[1] = {&view.strides};
  const Walker<1> walker = make_walker<1>(view.shape, strides);
  const int64_t n = view.numel();
  const unsigned blocks = grid_stride_blocks(n, sm_count);
  zero_view_kernel<Bits><<<blocks, kThreads, 0, native(stream)>>>(data, walker, n);
  return last_launch_status("zero_view_kernel");
}

}  // namespace baracuda::detail::cuda

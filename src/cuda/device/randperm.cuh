#pragma once
// randperm's kernels (include/baracuda/ops/random.hpp): the keys of values 0..n-1 (grid-stride), and
// the values in key order written to out (CUB's radix sort runs between them, cuda/randperm_sort.cu).
#include "cuda/device/common.cuh"
#include "cuda/device/params.h"
#include "cuda/device/philox.h"

namespace baracuda::device {

__global__ void __launch_bounds__(256) randperm_keys(const __grid_constant__ RandpermParams p) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < p.n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    p.keys[i] = philox_randperm_key(p.seed, p.offset + static_cast<unsigned long long>(i));
    p.values[i] = i;
  }
}

template <class T>
__global__ void __launch_bounds__(256) randperm_write(const __grid_constant__ RandpermParams p) {
  T* out = static_cast<T*>(p.out);
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < p.n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    out[i * p.out_stride] = static_cast<T>(p.sorted[i]);
}

}  // namespace baracuda::device

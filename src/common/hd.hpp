#pragma once
// BARACUDA_HD marks code that both backends compile: __host__ __device__ under nvcc, plain C++
// under the host compiler.
#if defined(__CUDACC__)
#define BARACUDA_HD __host__ __device__ __forceinline__
#else
#define BARACUDA_HD inline
#endif

// Fixed-length loops over register arrays must unroll on the GPU (or the arrays go to local memory).
#if defined(__CUDA_ARCH__)
#define BARACUDA_UNROLL _Pragma("unroll")
#else
#define BARACUDA_UNROLL
#endif

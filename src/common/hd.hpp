#pragma once
// BARACUDA_HD marks code that both backends compile: __host__ __device__ under nvcc, plain C++
// under the host compiler.
#if defined(__CUDACC__)
#define BARACUDA_HD __host__ __device__ __forceinline__
#else
#define BARACUDA_HD inline
#endif

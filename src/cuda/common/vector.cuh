#pragma once
// 16-byte vector loads and stores of any element type.
#include <cuda_runtime.h>

namespace baracuda::detail::cuda {

template <class T>
struct alignas(16) Vec16 {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];
};

template <class T>
__device__ __forceinline__ Vec16<T> load16(const T* p) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  Vec16<T> out;
  *reinterpret_cast<uint4*>(&out) = raw;
  return out;
}

template <class T>
__device__ __forceinline__ void store16(T* p, const Vec16<T>& v) {
#if BARACUDA_STREAMING_STORES
  __stcs(reinterpret_cast<uint4*>(p), *reinterpret_cast<const uint4*>(&v));
#else
  *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(&v);
#endif
}

// N elements of T (N * sizeof(T) a multiple of 16: a kernel whose tensors differ in element size
// moves 16 bytes of the narrowest and as many elements of the others), by 16-byte accesses.
template <class T, int N>
struct alignas(16) Pack {
  static_assert(N * sizeof(T) % 16 == 0);
  static constexpr int kAccesses = static_cast<int>(N * sizeof(T) / 16);
  T v[N];
};

template <int N, class T>
__device__ __forceinline__ Pack<T, N> load_pack(const T* p) {
  Pack<T, N> out;
#pragma unroll
  for (int a = 0; a < Pack<T, N>::kAccesses; ++a)
    reinterpret_cast<uint4*>(&out)[a] = reinterpret_cast<const uint4*>(p)[a];
  return out;
}

template <class T, int N>
__device__ __forceinline__ void store_pack(T* p, const Pack<T, N>& v) {
#pragma unroll
  for (int a = 0; a < Pack<T, N>::kAccesses; ++a) {
#if BARACUDA_STREAMING_STORES
    __stcs(reinterpret_cast<uint4*>(p) + a, reinterpret_cast<const uint4*>(&v)[a]);
#else
    reinterpret_cast<uint4*>(p)[a] = reinterpret_cast<const uint4*>(&v)[a];
#endif
  }
}

}  // namespace baracuda::detail::cuda

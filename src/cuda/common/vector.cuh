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

}  // namespace baracuda::detail::cuda

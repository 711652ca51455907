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

// Asks L2 to fetch [p, p + bytes) from memory (sm_90's bulk prefetch; nothing before): a kernel
// that must wait (for a reduction, for other blocks) before its next loads starts them here, so
// that memory stays busy while it waits. p and bytes are whole 16-byte units; a hint, never a fault.
__device__ __forceinline__ void prefetch_l2(const void* p, int64_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (bytes >= 16)
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(static_cast<unsigned>(bytes & ~int64_t{15}))
                 : "memory");
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace baracuda::detail::cuda

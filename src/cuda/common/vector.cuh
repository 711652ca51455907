#pragma once
// 16-byte vector loads and stores of any element type.
// (nvcc and NVRTC both read it: NVRTC has the vector types built in.)
#include "common/portable.hpp"
#if !defined(__CUDACC_RTC__)
#include <cuda_runtime.h>
#endif

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

// The sizeof(Access) bytes at p (an access of 2, 4, 8 or 16 bytes), or where one_value the element *p
// in each sizeof(T) of them, as raw words: a kernel keeping several vectors in flight converts them
// only once all are loaded, since elements written one by one (a repeated value merged with a load)
// made the compiler unpack each load as it landed, before issuing the next (cuda/common/
// broadcast_reduction.cuh, the rows kernels of cuda/common/elementwise_kernels.cuh).
template <class Access, class T>
__device__ __forceinline__ Access load_or_splat(const T* p, bool one_value) {
  static_assert(sizeof(Access) >= sizeof(T));
  if (!one_value) return *reinterpret_cast<const Access*>(p);
  if constexpr (sizeof(T) == 8) {
    const uint2 d = *reinterpret_cast<const uint2*>(p);
    if constexpr (sizeof(Access) == 16) {
      return {d.x, d.y, d.x, d.y};
    } else {
      return d;
    }
  } else {
    // (the element's bits in every sizeof(T) bytes of a word)
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, std::conditional_t<sizeof(T) == 2, uint16_t, uint8_t>>;
    const uint32_t w = *reinterpret_cast<const Bits*>(p) * (0xffffffffu / static_cast<Bits>(~Bits{0}));
    if constexpr (sizeof(Access) == 16) {
      return {w, w, w, w};
    } else if constexpr (sizeof(Access) == 8) {
      return {w, w};
    } else {
      return static_cast<Access>(w);
    }
  }
}

template <class T>
__device__ __forceinline__ Vec16<T> as_vec16(uint4 raw) {
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

// N elements of T moved by one access of N * sizeof(T) bytes (2, 4, 8 or 16): a kernel whose tensors
// differ in element size moves 16 bytes of the widest and as many elements of the others, so that
// each access instruction of a warp is contiguous (two 16-byte halves a lane would leave every other
// chunk of a store to the next instruction: bf16 -> f32 ran at 58-64% of copy).
template <class T, int N>
struct Pack {
  static constexpr int kBytes = static_cast<int>(N * sizeof(T));
  static_assert(kBytes == 2 || kBytes == 4 || kBytes == 8 || kBytes == 16);
  using Access =
      std::conditional_t<kBytes == 16, uint4,
                         std::conditional_t<kBytes == 8, uint2, std::conditional_t<kBytes == 4, uint32_t, uint16_t>>>;
  alignas(kBytes) T v[N];
};

template <int N, class T>
__device__ __forceinline__ Pack<T, N> load_pack(const T* p) {
  using Access = typename Pack<T, N>::Access;
  Pack<T, N> out;
  *reinterpret_cast<Access*>(&out) = *reinterpret_cast<const Access*>(p);
  return out;
}
// load_pack into out, or where one_value the element *p in each of the N (load_or_splat). Written
// into the caller's pack: returned by value, the rows kernel held 62 registers rather than 46.
template <int N, class T>
__device__ __forceinline__ void load_pack_or_splat(Pack<T, N>& out, const T* p, bool one_value) {
  const auto raw = load_or_splat<typename Pack<T, N>::Access>(p, one_value);
  memcpy(&out, &raw, sizeof raw);
}

template <class T, int N>
__device__ __forceinline__ void store_pack(T* p, const Pack<T, N>& v) {
  using Access = typename Pack<T, N>::Access;
#if BARACUDA_STREAMING_STORES
  if constexpr (sizeof(Access) == 16) {
    __stcs(reinterpret_cast<uint4*>(p), *reinterpret_cast<const uint4*>(&v));
    return;
  }
#endif
  *reinterpret_cast<Access*>(p) = *reinterpret_cast<const Access*>(&v);
}

}  // namespace baracuda::detail::cuda

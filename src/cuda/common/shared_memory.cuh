#pragma once
// Shared memory through 32-bit addresses. NVRTC (13.0) gives shared pointers 64 bits where nvcc
// gives them 32 (PTX `mov.u64` of a __shared__ array against nvcc's `mov.u32`; no NVRTC option
// changes it), so a kernel indexing a tile inside its loops carried 64-bit address arithmetic: more
// registers, spills, more instructions (bench/NOTES.md, "NVRTC's 64-bit shared pointers"). A kernel
// whose tile sits in such loops takes the tile's 32-bit address once (shared_address) and accesses
// it here. The asm is volatile with a memory clobber: the compiler keeps it in program order with
// the barriers and with the kernel's other memory accesses, as it would plain accesses to a tile.
// (nvcc and NVRTC both read it.)
#include "common/portable.hpp"

namespace baracuda::detail::cuda {

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// The sizeof(T) bytes (1, 2, 4, 8 or 16) at the shared address `at`, which is aligned to them.
template <class T>
__device__ __forceinline__ void store_shared(uint32_t at, const T& value) {
  if constexpr (sizeof(T) == 16) {
    uint32_t w[4];
    memcpy(w, &value, 16);
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(at), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
                 : "memory");
  } else if constexpr (sizeof(T) == 8) {
    uint32_t w[2];
    memcpy(w, &value, 8);
    asm volatile("st.shared.v2.u32 [%0], {%1, %2};" ::"r"(at), "r"(w[0]), "r"(w[1]) : "memory");
  } else if constexpr (sizeof(T) == 4) {
    uint32_t w;
    memcpy(&w, &value, 4);
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(at), "r"(w) : "memory");
  } else if constexpr (sizeof(T) == 2) {
    unsigned short w;
    memcpy(&w, &value, 2);
    asm volatile("st.shared.u16 [%0], %1;" ::"r"(at), "h"(w) : "memory");
  } else {
    static_assert(sizeof(T) == 1, "store_shared: 1, 2, 4, 8 or 16 bytes");
    unsigned char b;
    memcpy(&b, &value, 1);
    asm volatile("st.shared.u8 [%0], %1;" ::"r"(at), "r"(uint32_t{b}) : "memory");
  }
}

template <class T>
__device__ __forceinline__ T load_shared(uint32_t at) {
  T value;
  if constexpr (sizeof(T) == 16) {
    uint32_t w[4];
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "r"(at)
                 : "memory");
    memcpy(&value, w, 16);
  } else if constexpr (sizeof(T) == 8) {
    uint32_t w[2];
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "r"(at) : "memory");
    memcpy(&value, w, 8);
  } else if constexpr (sizeof(T) == 4) {
    uint32_t w;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(w) : "r"(at) : "memory");
    memcpy(&value, &w, 4);
  } else {
    static_assert(sizeof(T) == 2, "load_shared: 2, 4, 8 or 16 bytes (stores: also 1)");
    unsigned short w;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(w) : "r"(at) : "memory");
    memcpy(&value, &w, 2);
  }
  return value;
}

}  // namespace baracuda::detail::cuda

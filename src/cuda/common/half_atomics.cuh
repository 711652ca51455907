#pragma once
// Atomic adds of the 16-bit types (baracuda::half, baracuda::bfloat16) for the kernels NVRTC compiles,
// which see neither cuda_fp16.h nor cuda_bf16.h: the same instructions as those headers' atomicAdd,
// so the same bits. f16 by atom.add.noftz.f16 (sm_70 on); bf16 by atom.add.noftz.bf16 from sm_90,
// before it a compare-and-swap loop on the 16-bit word adding with one fma.rn.bf16 (x * 1 + old).
#include "common/portable.hpp"

namespace baracuda::detail::cuda {

__device__ __forceinline__ half atomic_add(half* address, half value) {
  half old;
  asm volatile("{ atom.add.noftz.f16 %0,[%1],%2; }\n" : "=h"(old.bits) : "l"(address), "h"(value.bits) : "memory");
  return old;
}

__device__ __forceinline__ bfloat16 atomic_add(bfloat16* address, bfloat16 value) {
  bfloat16 old;
#if __CUDA_ARCH__ >= 900
  asm volatile("{ atom.add.noftz.bf16 %0,[%1],%2; }\n" : "=h"(old.bits) : "l"(address), "h"(value.bits) : "memory");
#else
  unsigned short* word = reinterpret_cast<unsigned short*>(address);
  unsigned short seen = *word, assumed;
  do {
    assumed = seen;
    unsigned short sum;
    asm("{.reg .b16 c;\n  mov.b16 c, 0x3f80U;\n  fma.rn.bf16 %0,%1,c,%2;}\n"
        : "=h"(sum)
        : "h"(value.bits), "h"(assumed));
    seen = atomicCAS(word, assumed, sum);
  } while (assumed != seen);
  old.bits = seen;
#endif
  return old;
}

}  // namespace baracuda::detail::cuda

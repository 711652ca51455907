#pragma once
// Quotients and square roots in f32 for a 16-bit output (f16, bf16) on the GPU, where a Math's
// forward16 takes them (unary_math.hpp's reciprocal and sqrt, binary_math.hpp's div). The IEEE f32
// division and root branch to a slow path, which keeps the compiler from overlapping a thread's
// elements: bf16 a / b[D] [16384, 4096] ran at 41% of copy, sqrt at 59% (H200, bench/labs/cost_lab.cu;
// bench/NOTES.md, "Vectors a thread by the op's cost"). Here the special-function unit's reciprocal or
// reciprocal root, one Newton correction (within about an f32 ulp of the exact result, far inside a
// 16-bit one: 2^-11 f16, 2^-8 bf16) and selects, no branch. Every special value is IEEE's: +-0, +-inf,
// NaN, subnormal operands and quotients. The host (never called there but compiled) keeps IEEE's.
#include "common/hd.hpp"
#include "common/portable.hpp"

namespace baracuda::detail::arith16 {

// a / b. Operands scaled by a power of two (exact) bring |b| into [2^-126, 2^126], where its
// reciprocal is a normal number; where the corrected quotient is not finite (a or b infinite or NaN,
// b zero, an overflow) the uncorrected one a * (1 / b) is IEEE's result.
BARACUDA_HD float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  const float m = fabsf(b);
  const float scale = m > 0x1p126f ? 0x1p-2f : (m < 0x1p-126f ? 0x1p24f : 1.0f);
  a *= scale;
  b *= scale;
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  const float q0 = a * r;
  const float q = fmaf(fmaf(-b, q0, a), r, q0);
  return fabsf(q) <= 0x1.fffffep127f ? q : q0;
#else
  return a / b;
#endif
}

// sqrt(x): x 1 / sqrt(x), corrected once; +-0 and +inf are their own roots (0 x inf would be NaN),
// negative x NaN; subnormal x as any other (rsqrt.approx without ftz takes them).
BARACUDA_HD float sqrt(float x) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  const float s = x * r;
  const float root = fmaf(fmaf(-s, s, x), 0.5f * r, s);
  return x == 0.0f || x == INFINITY ? x : root;
#else
  return std::sqrt(x);
#endif
}

}  // namespace baracuda::detail::arith16

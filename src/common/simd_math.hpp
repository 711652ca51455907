#pragma once
// exp, expm1, log, log1p, erf and tanh in the compute type A, for the maths both backends share
// (common/unary_math.hpp) and the CPU's tile loops (cpu/vector_math.hpp). On the device and in f64
// they are the C library's (CUDA's libdevice on the device); f32 on the host takes the branch-free
// approximations below, which a loop of them vectorizes (the C library's are calls, one element at a
// time). Those select with bit masks (select), never a branch, step through bits with dtype_bits
// (memcpy), and are exact at +-0, +-inf and NaN and take subnormal inputs; exp flushes its subnormal
// results (x < -87) to 0.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "baracuda/core/dtype.hpp"
#include "common/hd.hpp"

namespace baracuda::detail::simd_math {

// Always inlined: a call left in a loop keeps it scalar, and runs the baseline build (GCC declines to
// inline exp into some of a translation unit's many callers, e.g. gelu's backward, 13x slower). Under
// nvcc, BARACUDA_HD is __forceinline__ already.
#if defined(__GNUC__) && !defined(__CUDACC__)
#define BARACUDA_SIMD_INLINE inline __attribute__((always_inline))
#define BARACUDA_SIMD_HD inline __attribute__((always_inline))
#else
#define BARACUDA_SIMD_INLINE inline
#define BARACUDA_SIMD_HD BARACUDA_HD
#endif

#if !defined(__CUDA_ARCH__)
namespace f32 {

using dtype_bits::of;
using dtype_bits::to_float;
inline constexpr uint32_t kSign = 0x80000000u;

// c ? v : w, in bits: GCC may turn a ternary into branches and fold a clamped path's arithmetic into
// constants, and where such a constant could trap (exp(89)'s overflow to inf) the loop stays scalar.
BARACUDA_SIMD_INLINE float select(bool c, float v, float w) {
  const uint32_t mask = 0u - static_cast<uint32_t>(c);
  return to_float((of(v) & mask) | (of(w) & ~mask));
}

// x = n ln2 + r with |r| <= ln2 / 2 (n an integer in a float, r exact: ln2 in two parts, Cephes'),
// and 2^n as two powers of 2 (their product may overflow: inf). x within [-87, 89]: exp(-87) is still
// normal, as every intermediate, because a product with a subnormal result (or one that underflows)
// costs a microcode assist, 20x the loop's time; exp flushes below -87 to 0. NaN passes through.
struct Reduced {
  float r, scale_lo, scale_hi;
  int32_t n;
};
BARACUDA_SIMD_INLINE Reduced reduce_ln2(float x) {
  const float c = select(x < -87.0f, -87.0f, select(x > 89.0f, 89.0f, x));
  const float shifted = c * 1.44269504088896341f + 12582912.0f;  // 1.5 * 2^23: rounds to an integer
  const float n = shifted - 12582912.0f;
  const int32_t k = static_cast<int32_t>(of(shifted) - of(12582912.0f));
  const int32_t half = k >> 1;
  return {(c - n * 0.693359375f) + n * 2.12194440e-4f, to_float(static_cast<uint32_t>(half + 127) << 23),
          to_float(static_cast<uint32_t>(k - half + 127) << 23), k};
}
// exp(r) - 1 for |r| <= ln2 / 2: r + r^2 P(r), Cephes' expf polynomial (within 1 ulp of exp(r)).
BARACUDA_SIMD_INLINE float expm1_reduced(float r) {
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r;
}

BARACUDA_SIMD_INLINE float exp(float x) {
  const Reduced t = reduce_ln2(x);
  return select(x < -87.0f, 0.0f, ((expm1_reduced(t.r) + 1.0f) * t.scale_lo) * t.scale_hi);
}

// 2^n (e^r - 1) + (2^n - 1): no cancellation near 0 (n = 0: e^r - 1 itself); past n = 64 the -1 is
// below the rounding, and exp's form keeps 2^n from overflowing before the last product. The sign
// is x's (expm1(-0) = -0).
BARACUDA_SIMD_INLINE float expm1(float x) {
  const Reduced t = reduce_ln2(x);
  const float e = expm1_reduced(t.r), scale = t.scale_lo * t.scale_hi;
  const float near = e * scale + (scale - 1.0f);
  const float far = ((e + 1.0f) * t.scale_lo) * t.scale_hi - 1.0f;
  return to_float(of(select(t.n > 64, far, near)) | (of(x) & kSign));
}

// Cephes' logf: x = 2^e m with m in [sqrt(1/2), sqrt(2)), log(m) = f - f^2 / 2 + f^3 P(f), f = m - 1
// (within 1 ulp); subnormals scaled by 2^23 first. log(+-0) = -inf, log(x < 0) = NaN, log(inf) = inf.
BARACUDA_SIMD_INLINE float log(float x) {
  const uint32_t bits = of(x);
  const bool subnormal = bits < 0x00800000u;
  const uint32_t b = of(select(subnormal, x * 8388608.0f, x));
  const uint32_t mantissa = b & 0x007fffffu;
  const bool low = mantissa < 0x003504f3u;  // m < sqrt(2) / 2 in [0.5, 1): m doubled, e one less
  const int32_t e = static_cast<int32_t>((b >> 23) & 0xffu) - 126 - 23 * subnormal - low;
  const float m = to_float(mantissa | 0x3f000000u);  // in [0.5, 1)
  const float f = select(low, (m + m) - 1.0f, m - 1.0f);
  const float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  const float fe = static_cast<float>(e);
  float y = p * f * z;
  y = y + -2.12194440e-4f * fe;
  y = y + -0.5f * z;
  float result = (f + y) + 0.693359375f * fe;
  result = select(bits >= 0x7f800000u, select(bits == 0x7f800000u, x, to_float(0x7fc00000u)), result);  // inf, NaN, < 0
  return select((bits << 1) == 0, to_float(0xff800000u), result);                                       // +-0: -inf
}

// log(1 + x) = log(u) x / (u - 1) with u = 1 + x rounded (Goldberg): the factor corrects u's rounding
// error; x itself where u rounds to 1, inf at inf.
BARACUDA_SIMD_INLINE float log1p(float x) {
  const float u = 1.0f + x, d = u - 1.0f;
  return select((d == 0.0f) | (of(x) == 0x7f800000u), x, log(u) * (x / d));
}

// x P(x^2) / Q(x^2) on |x| < 4 (Eigen's and XLA's rational erf: within a few ulp), 1 past 3.92, where
// erf rounds to 1 in f32; the sign is x's.
BARACUDA_SIMD_INLINE float erf(float x) {
  const float a = to_float(of(x) & ~kSign);
  const float c = select(a > 4.0f, 4.0f, a);
  const float x2 = c * c;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 - 2.10102402082508e-06f;
  p = p * x2 - 5.69250639462346e-05f;
  p = p * x2 - 7.34990630326855e-04f;
  p = p * x2 - 2.95459980854025e-03f;
  p = p * x2 - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 - 2.13374055278905e-04f;
  q = q * x2 - 1.68282697438203e-03f;
  q = q * x2 - 7.37332916720468e-03f;
  q = q * x2 - 1.42647390514189e-02f;
  const float magnitude = select(a > 3.92f, 1.0f, c * (p / q));
  return to_float(of(magnitude) | (of(x) & kSign));
}

// tanh |x| = t / (t + 2) with t = expm1(2 |x|), |x| capped at 10 (tanh rounds to 1 from 9.01); the
// sign is x's.
BARACUDA_SIMD_INLINE float tanh(float x) {
  const float a = to_float(of(x) & ~kSign);
  const float t = expm1(2.0f * select(a > 10.0f, 10.0f, a));
  return to_float(of(t / (t + 2.0f)) | (of(x) & kSign));
}

}  // namespace f32
#endif

// The dispatch: f32 on the host to the approximations above, everything else to the C library.
#if defined(__CUDA_ARCH__)
#define BARACUDA_SIMD_MATH(name) \
  template <class A>             \
  BARACUDA_SIMD_HD A name(A x) { \
    return std::name(x);         \
  }
#else
#define BARACUDA_SIMD_MATH(name)            \
  template <class A>                        \
  BARACUDA_SIMD_HD A name(A x) {            \
    if constexpr (std::is_same_v<A, float>) \
      return f32::name(x);                  \
    else                                    \
      return std::name(x);                  \
  }
#endif
BARACUDA_SIMD_MATH(exp)
BARACUDA_SIMD_MATH(expm1)
BARACUDA_SIMD_MATH(log)
BARACUDA_SIMD_MATH(log1p)
BARACUDA_SIMD_MATH(erf)
BARACUDA_SIMD_MATH(tanh)
#undef BARACUDA_SIMD_MATH

// c ? v : w, for a math that would branch around one of them: in bits for f32 on the host (both sides
// computed, the loop vectorizes), a ternary elsewhere.
template <class A>
BARACUDA_SIMD_HD A select(bool c, A v, A w) {
#if defined(__CUDA_ARCH__)
  return c ? v : w;
#else
  if constexpr (std::is_same_v<A, float>)
    return f32::select(c, v, w);
  else
    return c ? v : w;
#endif
}
#undef BARACUDA_SIMD_HD
#undef BARACUDA_SIMD_INLINE

}  // namespace baracuda::detail::simd_math

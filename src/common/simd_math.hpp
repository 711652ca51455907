#pragma once
// exp, expm1, log, log1p, erf and tanh in the compute type A, for the maths both backends share
// (common/unary_math.hpp) and the CPU's tile loops (cpu/vector_math.hpp). On the device and in f64
// they are the C library's (CUDA's libdevice on the device); f32 on the host takes the branch-free
// approximations below, which a loop of them vectorizes (the C library's are calls, one element at a
// time). Those select with bit masks (select), never a branch, step through bits with dtype_bits
// (memcpy), are exact at +-0, +-inf and NaN, take subnormal inputs and give subnormal results, and
// compute the same bits in every instruction set's build (no FMA: the host files build with
// -ffp-contract=off). Their bounds over every f32 (docs/OPS.md; tests/test_unary.cpp checks them):
// exp 1 ulp, log1p 1 ulp, erf 0.51 ulp and monotone.
#include "common/hd.hpp"
#include "common/portable.hpp"
#if !defined(__CUDACC_RTC__)
#include "baracuda/core/dtype.hpp"
#endif

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

// c ? v : w for integers and doubles, in bits as for floats.
BARACUDA_SIMD_INLINE int32_t select(bool c, int32_t v, int32_t w) {
  const int32_t mask = -static_cast<int32_t>(c);
  return (v & mask) | (w & ~mask);
}
BARACUDA_SIMD_INLINE double select(bool c, double v, double w) {
  const uint64_t mask = 0u - static_cast<uint64_t>(c);
  uint64_t a, b;
  std::memcpy(&a, &v, sizeof a);
  std::memcpy(&b, &w, sizeof b);
  a = (a & mask) | (b & ~mask);
  std::memcpy(&v, &a, sizeof v);
  return v;
}
// 2^n for n in [-126, 127], from its bits.
BARACUDA_SIMD_INLINE float pow2(int32_t n) { return to_float(static_cast<uint32_t>(n + 127) << 23); }

// x = n ln2 + r with |r| <= ln2 / 2 (n an integer, r exact: ln2 in two parts, Cephes'), for x within
// [-104, 89] (the callers clamp; NaN passes through).
struct Reduced {
  float r;
  int32_t n;
};
BARACUDA_SIMD_INLINE Reduced reduce_ln2(float x) {
  const float shifted = x * 1.44269504088896341f + 12582912.0f;  // 1.5 * 2^23: rounds to an integer
  const float n = shifted - 12582912.0f;
  return {(x - n * 0.693359375f) + n * 2.12194440e-4f, static_cast<int32_t>(of(shifted) - of(12582912.0f))};
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
// e^x = 2^n e^r, 2^n added to e^r's exponent bits (e^r in (0.7, 1.42): no product, no rounding). n
// is at most 128 (x <= 89), and 2^128 e^r is a float for x <= 88.7228317 (there e^r < 1), inf past
// it (chosen with NaN, x + inf). Results under 2^-126 (x < -87.34, n <= -126) are subnormal: v =
// e^r 2^(n + 126) < 1 (normal, from the bits as well) is rounded to a multiple of 2^-23 by adding 1,
// whose low bits are then the subnormal's (2^-149 units; 1 + v rounding to 2 gives 2^-126's bits):
// the rounding of the product 2^n e^r, without a product that is subnormal or underflows (a
// microcode assist, 20x the loop's time, even in a lane whose result is not taken). Where n > -126,
// v = 2 e^r > 1 selects the normal result. x is clamped to [-104, 89]: e^-104 rounds to 0. Within 1
// ulp, subnormals included; the clamps and selects compile to min, max and blends (every lane of a
// vector computes every path; the common range costs two integer adds over a flushing exp).
BARACUDA_SIMD_INLINE float exp(float x) {
  const float c = select(x < -104.0f, -104.0f, x);  // NaN stays NaN
  const Reduced t = reduce_ln2(c);
  const uint32_t e = of(expm1_reduced(t.r) + 1.0f);
  const int32_t m = t.n + 126 < 1 ? t.n + 126 : 1;
  const float v = to_float(e + (static_cast<uint32_t>(m) << 23));
  const float tiny = to_float(of(v + 1.0f) - of(1.0f));
  const float result = select(v < 1.0f, tiny, to_float(e + (static_cast<uint32_t>(t.n) << 23)));
  return select(!(x <= 88.72283172607421875f), x + to_float(0x7f800000u), result);
}

// x = n ln2 + r as reduce_ln2, and e^r = 1 + r (1 + r P(r)) with P exp's polynomial, evaluated with
// fused multiply-adds (one rounding at the end); for x within [-104, 89]. e^r's bits and n, which the
// callers put together. An FMA rounds once in every instruction set, so every build gives the same
// bits; only the cloned loops (cpu/vector_math.hpp), whose wide builds have the instruction, should
// call it: the baseline build's fmaf is a library call.
struct FusedExp {
  uint32_t e;  // e^r's bits
  int32_t n;
};
BARACUDA_SIMD_INLINE FusedExp fused_exp_parts(float x) {
  const float shifted = __builtin_fmaf(x, 1.44269504088896341f, 12582912.0f);
  const float n = shifted - 12582912.0f;
  const float r = __builtin_fmaf(n, 2.12194440e-4f, __builtin_fmaf(n, -0.693359375f, x));
  float p = 1.9875691500e-4f;
  p = __builtin_fmaf(p, r, 1.3981999507e-3f);
  p = __builtin_fmaf(p, r, 8.3334519073e-3f);
  p = __builtin_fmaf(p, r, 4.1665795894e-2f);
  p = __builtin_fmaf(p, r, 1.6666665459e-1f);
  p = __builtin_fmaf(p, r, 5.0000001201e-1f);
  return {of(__builtin_fmaf(__builtin_fmaf(p, r, 1.0f), r, 1.0f)), static_cast<int32_t>(of(shifted) - of(12582912.0f))};
}
// e^x for x <= 0, -inf or NaN (exp(x - max) of the softmax family, logsumexp, cross-entropy and
// attention), from fused_exp_parts, with exp's subnormal results: within 0.89 ulp over every f32 of
// [-104, 0] (docs/OPS.md), in fewer operations than exp (no overflow path, fused products).
BARACUDA_SIMD_INLINE float exp_nonpositive(float x) {
  const FusedExp t = fused_exp_parts(select(x < -104.0f, -104.0f, x));
  const int32_t m = t.n + 126 < 1 ? t.n + 126 : 1;
  const float v = to_float(t.e + (static_cast<uint32_t>(m) << 23));
  const float tiny = to_float(of(v + 1.0f) - of(1.0f));
  return select(x != x, x, select(v < 1.0f, tiny, to_float(t.e + (static_cast<uint32_t>(t.n) << 23))));
}

// 2^n (e^r - 1) + (2^n - 1): no cancellation near 0 (n = 0: e^r - 1 itself); past n = 64 the -1 is
// below the rounding, and exp's form keeps 2^n from overflowing before the last product. x is
// clamped to [-64, 89] (expm1 rounds to -1 from -17.4; 2^-92 keeps every product normal). The sign
// is x's (expm1(-0) = -0).
BARACUDA_SIMD_INLINE float expm1(float x) {
  const Reduced t = reduce_ln2(select(x < -64.0f, -64.0f, select(x > 89.0f, 89.0f, x)));
  const int32_t half = t.n >> 1;
  const float e = expm1_reduced(t.r), lo = pow2(half), hi = pow2(t.n - half), s = lo * hi;
  const float near = e * s + (s - 1.0f);
  const float far = ((e + 1.0f) * lo) * hi - 1.0f;
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

// fdlibm's log1pf without its branches: log(1 + x) = k ln2 + log(1 + f) + c, 1 + f = (1 + x) / 2^k
// in [sqrt(1/2), sqrt(2)) and c = the rounding error of u = 1 + x over u (f = x, k = c = 0 for x
// in [sqrt(1/2) - 1, sqrt(2) - 1)), log(1 + f) = f - f^2 / 2 + s (f^2 / 2 + R(s^2)), s = f / (2 + f)
// (R: FreeBSD's k_logf.h, within 2^-34.2), ln2 in two parts: within 1 ulp (fdlibm's bound). x itself
// for |x| < 2^-24 (those lanes compute with 0: x^2 could be subnormal, an assist); -1 gives -inf, x <
// -1 NaN, inf inf.
BARACUDA_SIMD_INLINE float log1p(float x) {
  const uint32_t bits = of(x);
  const bool tiny = (bits & ~kSign) < 0x33800000u;  // |x| < 2^-24
  const bool near = (x < 0.41421353816986083984f) & (x > -0.29289320111274719238f);
  const float u = 1.0f + x;
  const uint32_t mantissa = of(u) & 0x007fffffu;
  const bool high = mantissa >= 0x003504f4u;                  // u's mantissa past sqrt(2): 1 + f = u / 2^(k + 1)
  const int32_t e = static_cast<int32_t>(of(u) >> 23) - 127;  // u in [2^e, 2^(e + 1)): k is e or e + 1
  const float c = select(e > 0, 1.0f - (u - x), x - (u - 1.0f)) / u;  // u - x, u - 1 exact
  const int32_t k = e + high;
  const float f = select(near, select(tiny, 0.0f, x), to_float(mantissa | select(high, 0x3f000000, 0x3f800000)) - 1.0f);
  const float fk = static_cast<float>(select(near, 0, k)), ck = select(near, 0.0f, c);
  const float s = f / (2.0f + f), z = s * s, w = z * z;
  const float r = z * (0.66666662693f + w * 0.28498786688f) + w * (0.40000972152f + w * 0.24279078841f);
  const float hfsq = 0.5f * f * f;
  const float result = fk * 6.9313812256e-01f - ((hfsq - (s * (hfsq + r) + (fk * 9.0580006145e-06f + ck))) - f);
  const float special = select(x == -1.0f, to_float(0xff800000u), select(x < -1.0f, to_float(0x7fc00000u), x));
  return select(tiny | ((bits & ~kSign) >= 0x7f800000u) | (x <= -1.0f), special, result);
}

// erf |x| in f64, rounded once to f32: in f32 the rounding of each step is about as large as erf's
// own rise from one f32 to the next (past 1, where erf is within 0.16 of 1), and the result was not
// monotone. Two pieces (Juffa's erff's, fitted here without FMA: scripts/fit_erf.py): |x| + |x| P(x^2)
// up to 0.921875, 1 - e^R(|x|) past it (R approximating log erfc; e^R > 0, so |erf| <= 1), |x| capped
// at 3.9375 (erf rounds to 1 from 3.9193). Within 0.51 ulp and monotone (tests/test_unary.cpp checks
// every f32); the sign is x's.
BARACUDA_SIMD_INLINE float erf(float x) {
  const float af = to_float(of(x) & ~kSign);
  const double a = static_cast<double>(select(af > 3.9375f, 3.9375f, af)), s = a * a;
  double p = 8.370053830069883e-05;
  p = p * s - 8.142693338687845e-04;
  p = p * s + 5.201031329357871e-03;
  p = p * s - 2.685939787297733e-02;
  p = p * s + 1.1283695486842556e-01;
  p = p * s - 3.761263373461594e-01;
  p = p * s + 1.283791666373707e-01;
  double r = -2.1184059804160206e-05;
  r = r * a + 4.3547574786501975e-04;
  r = r * a - 4.17589143453602e-03;
  r = r * a + 2.5131922814779824e-02;
  r = r * a - 1.082990645357622e-01;
  r = r * a - 6.333299859914125e-01;
  r = r * a - 1.1295231406269957e+00;
  r = r * a + 1.7635820441320644e-04;
  // e^r for r in [-17.3, 0.001]: 2^n e^f, |f| <= ln2 / 2, e^f by its Taylor series to f^8 (within 2^-32).
  const double shifted = r * 1.4426950408889634 + 6755399441055744.0;  // 1.5 * 2^52: rounds to an integer
  const double n = shifted - 6755399441055744.0;
  const double f = r - n * 0.6931471805599453;
  double q = 1.0 / 40320;
  q = q * f + 1.0 / 5040;
  q = q * f + 1.0 / 720;
  q = q * f + 1.0 / 120;
  q = q * f + 1.0 / 24;
  q = q * f + 1.0 / 6;
  q = q * f + 0.5;
  q = q * f + 1.0;
  q = q * f + 1.0;
  uint64_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  const uint64_t two_n = (bits - 0x4338000000000000u + 1023u) << 52;  // 2^n's bits (n in [-26, 0])
  double scale;
  std::memcpy(&scale, &two_n, sizeof scale);
  const double tail = 1.0 - q * scale;
  const float magnitude = static_cast<float>(select(a <= 0.921875, a * p + a, tail));
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

// e^x for x <= 0 or NaN, for the cloned loops alone (f32::exp_nonpositive); other types exp.
#if !defined(__CUDA_ARCH__)
template <class A>
BARACUDA_SIMD_HD A exp_nonpositive(A x) {
  if constexpr (std::is_same_v<A, float>)
    return f32::exp_nonpositive(x);
  else
    return std::exp(x);
}
#endif

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

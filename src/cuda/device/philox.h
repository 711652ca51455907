#pragma once
// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): the
// library's one generator. Plain C++ that the host compiler and NVRTC both read, so the CPU and
// every GPU compute the same bits: a value is a pure function of (seed, offset + element index),
// whatever the backend, grid or strides. Both compile it without FMA contraction; a product is fused
// only where the code says so (philox_fma), which rounds once on either side.
#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#include <cmath>  // (the normals' sqrt)
#endif

namespace baracuda::device {

struct Philox4 {
  unsigned int v[4];
};

// Always inlined on the host too: the CPU loops that draw the f32 normals and exponentials are built
// per instruction set (cpu/vector_math.hpp's BARACUDA_CPU_CLONES), and GCC inlines a function with no
// target of its own into such a clone only where it must; left a call, philox_fma would run the
// baseline build's library fmaf.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define BARACUDA_PHILOX_FN __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define BARACUDA_PHILOX_FN [[gnu::always_inline]] inline
#else
#define BARACUDA_PHILOX_FN inline
#endif

BARACUDA_PHILOX_FN void philox_mulhilo(unsigned int a, unsigned int b, unsigned int& hi, unsigned int& lo) {
#if defined(__CUDA_ARCH__)
  // One IMAD.WIDE.U32: the 64-bit product written in C++ compiles to it plus an add of zero.
  unsigned long long p;
  asm("mul.wide.u32 %0, %1, %2;" : "=l"(p) : "r"(a), "r"(b));
#else
  const unsigned long long p = static_cast<unsigned long long>(a) * b;
#endif
  hi = static_cast<unsigned int>(p >> 32);
  lo = static_cast<unsigned int>(p);
}

// The block for counter (c0, c1, c2, c3) under key (k0, k1).
BARACUDA_PHILOX_FN Philox4 philox4x32_10(Philox4 c, unsigned int k0, unsigned int k1) {
  for (int round = 0; round < 10; ++round) {
    unsigned int hi0, lo0, hi1, lo1;
    philox_mulhilo(0xD2511F53u, c.v[0], hi0, lo0);
    philox_mulhilo(0xCD9E8D57u, c.v[2], hi1, lo1);
    c = {{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

// The 32 random bits of stream position `index` under `seed`: word index % 4 of the block at
// counter index / 4 (64 bits of it), key the seed's two halves.
BARACUDA_PHILOX_FN unsigned int philox_bits(unsigned long long seed, unsigned long long index) {
  const unsigned long long block = index >> 2;
  const Philox4 r = philox4x32_10({{static_cast<unsigned int>(block), static_cast<unsigned int>(block >> 32), 0u, 0u}},
                                  static_cast<unsigned int>(seed), static_cast<unsigned int>(seed >> 32));
  return r.v[index & 3];
}

// u in [0, 1) from 53 bits of two words.
BARACUDA_PHILOX_FN double philox_u53(unsigned int hi, unsigned int lo) {
  return (static_cast<double>(hi >> 5) * 67108864.0 + static_cast<double>(lo >> 6)) * 1.1102230246251565e-16;
}

// The bits of a double (exact on both sides: the exponent is read, never computed).
BARACUDA_PHILOX_FN unsigned long long philox_double_bits(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned long long>(__double_as_longlong(x));
#else
  unsigned long long u;
  __builtin_memcpy(&u, &x, sizeof u);
  return u;
#endif
}
BARACUDA_PHILOX_FN double philox_bits_double(unsigned long long u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double x;
  __builtin_memcpy(&x, &u, sizeof x);
  return x;
#endif
}
BARACUDA_PHILOX_FN unsigned int philox_float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  unsigned int u;
  __builtin_memcpy(&u, &x, sizeof u);
  return u;
#endif
}
BARACUDA_PHILOX_FN float philox_bits_float(unsigned int u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  __builtin_memcpy(&x, &u, sizeof x);
  return x;
#endif
}

// c[0] + x (c[1] + x (c[2] + ...)), innermost first.
template <class F, int N>
BARACUDA_PHILOX_FN F philox_horner(F x, const F (&c)[N]) {
  F r = c[N - 1];
  for (int k = N - 2; k >= 0; --k) r = c[k] + x * r;
  return r;
}

// a b + c rounded once: fmaf on the device, the FMA instruction in the CPU's wide builds and the C
// library's (exact) fmaf in its baseline one, so the same bits everywhere.
BARACUDA_PHILOX_FN float philox_fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return fmaf(a, b, c);
#else
  return __builtin_fmaf(a, b, c);
#endif
}
// philox_horner's polynomial in f32 from term K on, each step one fused multiply-add: written out by
// the template rather than a loop, which GCC left rolled in the CPU's clones, the coefficients
// reloaded every step.
template <int K = 0, int N>
BARACUDA_PHILOX_FN float philox_horner_fma(float x, const float (&c)[N]) {
  if constexpr (K == N - 1)
    return c[K];
  else
    return philox_fma(philox_horner_fma<K + 1>(x, c), x, c[K]);
}

// cos and sin of x + q pi / 2 from c = cos x and s = sin x.
template <class F>
BARACUDA_PHILOX_FN void philox_quadrant(int q, F c, F s, F& cos_out, F& sin_out) {
  const int k = q & 3;
  cos_out = k == 0 ? c : k == 1 ? -s : k == 2 ? -c : s;
  sin_out = k == 0 ? s : k == 1 ? c : k == 2 ? -s : -c;
}

// log(x) for x in [2^-53, 1] and cos / sin(2 pi v) for v in [0, 1) from +, -, * and one division,
// in one order, with constants folded by the compiler: the same bits on every backend (the
// libraries' log and cos differ in their last bits). Both are within a few units of f64's last
// place, far below what the callers round to.
BARACUDA_PHILOX_FN double portable_log(double x) {
  // x = m 2^e, m in [sqrt(1/2), sqrt(2)): the exponent from the bits, m by exact scalings.
  const unsigned long long bits = philox_double_bits(x);
  int e = static_cast<int>(bits >> 52) - 1023;
  double m = philox_bits_double((bits & 0xFFFFFFFFFFFFFull) | (1023ull << 52));  // [1, 2)
  if (m >= 1.41421356237309504880) {
    m *= 0.5;
    ++e;
  }
  const double s = (m - 1.0) / (m + 1.0), s2 = s * s;  // log m = 2 atanh(s), |s| <= 0.1716
  const double series[] = {1.0,      1.0 / 3,  1.0 / 5,  1.0 / 7,  1.0 / 9,  1.0 / 11, 1.0 / 13,
                           1.0 / 15, 1.0 / 17, 1.0 / 19, 1.0 / 21, 1.0 / 23, 1.0 / 25};
  return e * 0.693147180559945286226764 + e * 2.319046813846299558e-17 + 2.0 * s * philox_horner(s2, series);
}
BARACUDA_PHILOX_FN void portable_sincos_2pi(double v, double& cos_out, double& sin_out) {
  const double t = v - (v >= 0.5 ? 1.0 : 0.0);  // [-1/2, 1/2): exact
  const double q = t < -0.375 ? -2.0 : t < -0.125 ? -1.0 : t < 0.125 ? 0.0 : t < 0.375 ? 1.0 : 2.0;
  const double x = 6.283185307179586232 * (t - 0.25 * q);  // [-pi/4, pi/4]
  const double x2 = x * x;
  // Taylor to x^16 and x^17: the first term left out is below 2^-58.
  const double cos_series[] = {1.0,
                               -1.0 / 2,
                               1.0 / 24,
                               -1.0 / 720,
                               1.0 / 40320,
                               -1.0 / 3628800,
                               1.0 / 479001600,
                               -1.0 / 87178291200.0,
                               1.0 / 20922789888000.0};
  const double sin_series[] = {1.0,
                               -1.0 / 6,
                               1.0 / 120,
                               -1.0 / 5040,
                               1.0 / 362880,
                               -1.0 / 39916800,
                               1.0 / 6227020800.0,
                               -1.0 / 1307674368000.0,
                               1.0 / 355687428096000.0};
  const double c = philox_horner(x2, cos_series), sn = x * philox_horner(x2, sin_series);
  philox_quadrant(static_cast<int>(q), c, sn, cos_out, sin_out);
}

// The block at counter (index, 0, stream). The 32-bit draws are stream 0 (philox_bits); the normal
// and exponential draws have streams of their own (1, 2) and take one block for two positions.
BARACUDA_PHILOX_FN Philox4 philox_block(unsigned long long seed, unsigned long long index, unsigned int stream) {
  return philox4x32_10({{static_cast<unsigned int>(index), static_cast<unsigned int>(index >> 32), 0u, stream}},
                       static_cast<unsigned int>(seed), static_cast<unsigned int>(seed >> 32));
}

// randperm's key of value i (position offset + i): the 64 bits of words 0 and 1 of the block at
// counter (index, 0, 3).
BARACUDA_PHILOX_FN unsigned long long philox_randperm_key(unsigned long long seed, unsigned long long index) {
  const Philox4 r = philox_block(seed, index, 3u);
  return (static_cast<unsigned long long>(r.v[0]) << 32) | r.v[1];
}

// Standard normals at positions 2 g and 2 g + 1 (Box-Muller, both halves) from the block at
// (g, 0, 1): u1 in (0, 1] from words 0 and 1, u2 in [0, 1) from words 2 and 3, 53 bits each.
BARACUDA_PHILOX_FN void philox_normal_pair(unsigned long long seed, unsigned long long g, double (&z)[2]) {
  const Philox4 r = philox_block(seed, g, 1u);
  const double u1 = 1.0 - philox_u53(r.v[0], r.v[1]), u2 = philox_u53(r.v[2], r.v[3]);
  const double radius = sqrt(-2.0 * portable_log(u1));
  double c, s;
  portable_sincos_2pi(u2, c, s);
  z[0] = radius * c;
  z[1] = radius * s;
}

// Standard exponentials at positions 2 g and 2 g + 1: -log(u), u in (0, 1] from words 0-1 and 2-3
// of the block at (g, 0, 2).
BARACUDA_PHILOX_FN void philox_exponential_pair(unsigned long long seed, unsigned long long g, double (&e)[2]) {
  const Philox4 r = philox_block(seed, g, 2u);
  e[0] = -portable_log(1.0 - philox_u53(r.v[0], r.v[1]));
  e[1] = -portable_log(1.0 - philox_u53(r.v[2], r.v[3]));
}

// The f32 forms for f32 and 16-bit outputs: four values a block, u from 24 bits (u1 = 1 - u in
// [2^-24, 1]: normals reach 5.77 standard deviations), log and sin / cos in f32 by polynomials in
// fused multiply-adds, with no division (an IEEE division costs the GPU more than the rest of the log)
// and no branch (on random inputs the CPU mispredicts one half the time): within 1 f32 ulp of log over
// every f32 of [2^-24, 1], 1e-7 absolute of sin / cos (tests/test_random.cpp).
BARACUDA_PHILOX_FN float philox_u24(unsigned int bits) {
  return static_cast<float>(bits >> 8) * 5.9604644775390625e-8f;
}
BARACUDA_PHILOX_FN float portable_log_f32(float x) {  // x in [2^-24, 1]
  // x = m 2^e, m in [sqrt(1/2), sqrt(2)), from the bits (musl's logf): adding the bits of 1 less those
  // of sqrt(1/2) carries into the exponent exactly where x's mantissa is sqrt(2)'s or more.
  const unsigned int shifted = philox_float_bits(x) + (0x3F800000u - 0x3F3504F3u);
  const int e = static_cast<int>(shifted >> 23) - 127;
  const float m = philox_bits_float((shifted & 0x7FFFFFu) + 0x3F3504F3u);
  // log m = log1p(f), f = m - 1 (exact) in [sqrt(1/2) - 1, sqrt(2) - 1): f + f^2 (-1/2 + f P(f)), P of
  // degree 7 fitted to that interval in f64 (minimax of log1p's relative error), rounded to f32.
  const float f = m - 1.0f;
  const float coefficients[] = {-0.5f,        0.333333313f,  -0.250008196f, 0.200012267f,  -0.166233569f,
                                0.142017573f, -0.131601825f, 0.127615765f,  -0.0763449669f};
  const float log_m = philox_fma(f * f, philox_horner_fma(f, coefficients), f);
  // ln 2 in two parts, the first exact times any e here.
  const float fe = static_cast<float>(e);
  return philox_fma(fe, 0.693145751953125f, philox_fma(fe, 1.428606765330187e-6f, log_m));
}
BARACUDA_PHILOX_FN void portable_sincos_2pi_f32(float v, float& cos_out, float& sin_out) {  // v in [0, 1)
  // v = q / 4 + w, q v's nearest quarter (ties up) in quarters, |w| <= 1/8: 4 v + 1/2 and w are exact
  // for the multiples of 2^-24 that the draws take.
  const unsigned int q = static_cast<unsigned int>(4.0f * v + 0.5f);
  const float x = 6.28318530718f * (v - 0.25f * static_cast<float>(q)), x2 = x * x;  // [-pi/4, pi/4]
  // Cephes' cosf and sinf polynomials on [-pi/4, pi/4] (minimax for f32): 1 - x^2 / 2 + x^4 C(x^2)
  // and x + x^3 S(x^2).
  const float cos_series[] = {1.0f, -0.5f, 4.166664568298827e-2f, -1.388731625493765e-3f, 2.443315711809948e-5f};
  const float sin_series[] = {-1.6666654611e-1f, 8.3321608736e-3f, -1.9515295891e-4f};
  const float c = philox_horner_fma(x2, cos_series), sn = philox_fma(x * x2, philox_horner_fma(x2, sin_series), x);
  // philox_quadrant's choice in bits: c and sn swapped in odd quadrants, the signs flipped by xor.
  const unsigned int k = q & 3u, swap = 0u - (k & 1u);
  const unsigned int cb = philox_float_bits(c), sb = philox_float_bits(sn);
  cos_out = philox_bits_float(((sb & swap) | (cb & ~swap)) ^ (((k + 1u) & 2u) << 30));
  sin_out = philox_bits_float(((cb & swap) | (sb & ~swap)) ^ ((k & 2u) << 30));
}
// Normals at positions 4 g .. 4 g + 3: Box-Muller on words (0, 1) and (2, 3) of the block at (g, 0, 1).
BARACUDA_PHILOX_FN void philox_normal_quad(unsigned long long seed, unsigned long long g, float (&z)[4]) {
  const Philox4 r = philox_block(seed, g, 1u);
  for (int k = 0; k < 2; ++k) {
    const float radius = sqrtf(-2.0f * portable_log_f32(1.0f - philox_u24(r.v[2 * k])));
    float c, sn;
    portable_sincos_2pi_f32(philox_u24(r.v[2 * k + 1]), c, sn);
    z[2 * k] = radius * c;
    z[2 * k + 1] = radius * sn;
  }
}
// Exponentials at positions 4 g .. 4 g + 3: -log(1 - u), u from word j of the block at (g, 0, 2).
BARACUDA_PHILOX_FN void philox_exponential_quad(unsigned long long seed, unsigned long long g, float (&e)[4]) {
  const Philox4 r = philox_block(seed, g, 2u);
  for (int j = 0; j < 4; ++j) e[j] = -portable_log_f32(1.0f - philox_u24(r.v[j]));
}

// One position's value of each (the references' per-element form of the pairs above).
BARACUDA_PHILOX_FN double philox_normal(unsigned long long seed, unsigned long long index) {
  double z[2];
  philox_normal_pair(seed, index >> 1, z);
  return z[index & 1];
}
BARACUDA_PHILOX_FN double philox_exponential(unsigned long long seed, unsigned long long index) {
  double e[2];
  philox_exponential_pair(seed, index >> 1, e);
  return e[index & 1];
}
BARACUDA_PHILOX_FN float philox_normal_f32(unsigned long long seed, unsigned long long index) {
  float z[4];
  philox_normal_quad(seed, index >> 2, z);
  return z[index & 3];
}
BARACUDA_PHILOX_FN float philox_exponential_f32(unsigned long long seed, unsigned long long index) {
  float e[4];
  philox_exponential_quad(seed, index >> 2, e);
  return e[index & 3];
}

#undef BARACUDA_PHILOX_FN

}  // namespace baracuda::device

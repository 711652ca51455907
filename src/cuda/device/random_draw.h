#pragma once
// The random plans' draws, by groups: the G consecutive stream positions G g .. G g + G - 1 share
// one Philox block, so a thread (or a CPU loop step) draws the block once and writes G elements.
// Plain C++ read by the host compiler and NVRTC (cpu/random.cpp, cuda/device/random.cuh): both
// backends compute every value here, in the same operations, without FMA contraction.
//   32-bit draws (uniform f32 / 16-bit, bernoulli, randint, dropout): G = 4, word j of the block at
//     counter g (stream 0): philox_bits of position 4 g + j.
//   f64 uniform: G = 2, words 2 j and 2 j + 1 of that block (positions 2 (2 g + j) and one more).
//   normal, exponential: f64 G = 2, f32 and 16-bit G = 4, philox.h's pair and quad functions
//   (streams 1, 2).
// Positions are taken mod 2^64 (an offset near 2^64 wraps), block counters as philox_bits takes them.
#include "cuda/device/params.h"
#include "cuda/device/philox.h"

// (Always inlined on the host, as philox.h's functions: cpu/random.cpp calls them from loops built
// per instruction set.)
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define BARACUDA_DRAW_FN __host__ __device__ __forceinline__
#else
#include <cmath>
#if defined(__GNUC__)
#define BARACUDA_DRAW_FN [[gnu::always_inline]] inline
#else
#define BARACUDA_DRAW_FN inline
#endif
#endif

namespace baracuda::device {

enum : int { kRandomUniform = 0, kRandomBernoulli = 1, kRandomRandint = 2, kRandomNormal = 3, kRandomExponential = 4 };

// Elements a block gives kind K (an f64 draw takes two words an element).
template <int K, bool kF64>
inline constexpr int kRandomGroup = kF64 && (K == kRandomUniform || K == kRandomNormal || K == kRandomExponential) ? 2
                                                                                                                   : 4;

// The block holding positions 4 g .. 4 g + 3 (philox_bits's counter: position / 4, mod 2^62).
BARACUDA_DRAW_FN Philox4 philox_bits_block(unsigned long long seed, unsigned long long g) {
  return philox_block(seed, (g << 2) >> 2, 0u);
}

// bits mod range for range in [1, 2^32], without a division (Lemire, Kaser and Kurz, "Faster
// remainder by direct computation", 2019: for 32-bit bits and range, with magic = ceil(2^64 / range)
// mod 2^64, the remainder is the high 64 bits of ((magic bits) mod 2^64) range). A 64-bit modulo is a
// subroutine of about 70 instructions on the GPU.
BARACUDA_DRAW_FN unsigned int random_below(unsigned int bits, unsigned long long range, unsigned long long magic) {
  if (range > 0xFFFFFFFFull) return bits;       // range 2^32
  const unsigned long long low = magic * bits;  // mod 2^64
  // The high 64 bits of low * range, range < 2^32: from the two halves of low.
  const unsigned long long lo = (low & 0xFFFFFFFFull) * range, hi = (low >> 32) * range;
  return static_cast<unsigned int>((hi + (lo >> 32)) >> 32);
}

// u in [0, 1) from the top 24 bits (exact in f32), scaled to [low, high) in f32.
BARACUDA_DRAW_FN float uniform_f32(unsigned int bits, float low, float high) {
  const float u = static_cast<float>(bits >> 8) * 5.9604644775390625e-8f;  // 2^-24
  const float v = low + (high - low) * u;
  return v < high ? v : nextafterf(high, low);
}
BARACUDA_DRAW_FN double uniform_f64(unsigned int hi, unsigned int lo, double low, double high) {
  const double v = low + (high - low) * philox_u53(hi, lo);
  return v < high ? v : nextafter(high, low);
}

// Group g's values of kind K in V, the type each backend rounds to the output's dtype: double for
// f64 outputs, float for f32 and 16-bit ones, long long for randint. (low / high carry mean / std
// for normal and lambda in high for exponential: ops/random.cpp.)
template <int K, class V, int G>
BARACUDA_DRAW_FN void random_group_values(const RandomParams& p, unsigned long long g, V (&v)[G]) {
  if constexpr ((K == kRandomNormal || K == kRandomExponential) && G == 2) {
    double d[2];
    if constexpr (K == kRandomNormal) {
      philox_normal_pair(p.seed, (g << 1) >> 1, d);
      for (int j = 0; j < 2; ++j) v[j] = p.low + p.high * d[j];
    } else {
      philox_exponential_pair(p.seed, (g << 1) >> 1, d);
      for (int j = 0; j < 2; ++j) v[j] = d[j] / p.high;
    }
  } else if constexpr (K == kRandomNormal || K == kRandomExponential) {
    // In f32 throughout: the affine step in f64 (two conversions and two f64 operations a value) cost
    // the GPU's normals a tenth of their time.
    float f[4];
    if constexpr (K == kRandomNormal)
      philox_normal_quad(p.seed, (g << 2) >> 2, f);
    else
      philox_exponential_quad(p.seed, (g << 2) >> 2, f);
    for (int j = 0; j < 4; ++j) v[j] = philox_fma(f[j], p.scale, p.shift);
  } else {
    const Philox4 r = philox_bits_block(p.seed, g);
    if constexpr (K == kRandomUniform && G == 2) {
      for (int j = 0; j < 2; ++j) v[j] = static_cast<V>(uniform_f64(r.v[2 * j], r.v[2 * j + 1], p.low, p.high));
    } else {
      for (int j = 0; j < 4; ++j) {
        if constexpr (K == kRandomRandint)
          v[j] = static_cast<V>(static_cast<long long>(p.low) + random_below(r.v[j], p.range, p.range_magic));
        else if constexpr (K == kRandomBernoulli)
          v[j] = r.v[j] < p.threshold ? V(1) : V(0);
        else
          v[j] = static_cast<V>(uniform_f32(r.v[j], static_cast<float>(p.low), static_cast<float>(p.high)));
      }
    }
  }
}

// The groups covering elements [0, total) drawn from position `offset` on: groups offset / G ..,
// `count` of them; group g's first element is g G - offset (mod 2^64: "before 0" wraps past total).
template <int G>
BARACUDA_DRAW_FN unsigned long long random_group_count(unsigned long long offset, long long total) {
  return (offset % G + static_cast<unsigned long long>(total) + G - 1) / G;
}

}  // namespace baracuda::device

#undef BARACUDA_DRAW_FN

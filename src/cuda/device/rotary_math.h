#pragma once
// The rotary plans' arithmetic (include/baracuda/ops/rotary.hpp), plain C++ read by the host compiler
// and NVRTC (cpu/rotary.cpp, cuda/device/rotary.cuh): both backends compute every value here in the
// same operations, without FMA contraction, so they write the same bits.
//   inv_freq[i] = base^(-2i / rotary_dim) = 2^(-(2i / rotary_dim) log2(base)) in f64 (log2(base)
//   computed once on the host), or a table's f32 value; the angle position * inv_freq in f64; its
//   cos / sin by philox.h's portable_sincos_2pi of the angle's fraction of a turn, in f64.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define BARACUDA_ROTARY_FN __host__ __device__ __forceinline__
#else
#include <cmath>  // (before philox.h, whose host code calls sqrt)
#define BARACUDA_ROTARY_FN inline
#endif

#include "cuda/device/params.h"
#include "cuda/device/philox.h"

namespace baracuda::device {

// 2^x: 2^n 2^r with n the nearest integer and r in [-1/2, 1/2], 2^r = e^(r ln 2) by Taylor to the
// 15th power (the first term left out is below 2^-60). x - n is exact; x is clamped to +-1100 (past
// f64's range either way), so n fits an int.
BARACUDA_ROTARY_FN double rotary_exp2(double x) {
  x = x < -1100.0 ? -1100.0 : x > 1100.0 ? 1100.0 : x;
  const double n = floor(x + 0.5);
  const double t = (x - n) * 0.693147180559945309417;
  const double series[] = {1.0,
                           1.0,
                           1.0 / 2,
                           1.0 / 6,
                           1.0 / 24,
                           1.0 / 120,
                           1.0 / 720,
                           1.0 / 5040,
                           1.0 / 40320,
                           1.0 / 362880,
                           1.0 / 3628800,
                           1.0 / 39916800,
                           1.0 / 479001600,
                           1.0 / 6227020800.0,
                           1.0 / 87178291200.0,
                           1.0 / 1307674368000.0};
  return ldexp(philox_horner(t, series), static_cast<int>(n));
}

// Pair i's inverse frequency.
BARACUDA_ROTARY_FN double rotary_inv_freq(const RotaryParams& p, long long i) {
  if (p.inv_freq) return static_cast<double>(p.inv_freq[i * p.inv_freq_stride]);
  return rotary_exp2(-(2.0 * static_cast<double>(i) / p.rotary_dim) * p.log2_base);
}

// cos and sin of position * inv_freq, with the angle's sign flipped by `sign` (-1: the backward).
// The fraction of a turn, angle / 2 pi - floor(angle / 2 pi), is within 2^-52 of the angle's own
// (relative to the angle) plus one rounding; an angle past 2^52 turns has no fraction left (cos 1,
// sin 0), a NaN or infinite one gives NaN.
BARACUDA_ROTARY_FN void rotary_cos_sin(double position, double inv_freq, double sign, double& c, double& s) {
  const double turns = position * inv_freq * 0.159154943091895335769;  // 1 / (2 pi)
  portable_sincos_2pi(turns - floor(turns), c, s);
  s *= sign;
}

// Pair (a, b) rotated by the angle whose cos and sin are c and s.
template <class Acc>
BARACUDA_ROTARY_FN void rotary_rotate(Acc a, Acc b, Acc c, Acc s, Acc& out_a, Acc& out_b) {
  out_a = a * c - b * s;
  out_b = b * c + a * s;
}

// Token (batch, seq)'s position, as a double (i64 positions past 2^53 rounded).
template <class I>
BARACUDA_ROTARY_FN double rotary_position(const RotaryParams& p, long long batch, long long seq) {
  return static_cast<double>(
      static_cast<const I*>(p.positions)[batch * p.position_strides[0] + seq * p.position_strides[1]]);
}

}  // namespace baracuda::device

#undef BARACUDA_ROTARY_FN

#pragma once
// MultinomialPlan's draws (include/baracuda/ops/random.hpp), plain C++ read by the host compiler and
// NVRTC (cpu/multinomial.cpp, cuda/device/multinomial.cuh): both backends compute every key, sum and
// search here, in the same operations and order, without FMA contraction, so they draw the same
// indices.
#include "cuda/device/random_draw.h"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define BARACUDA_MULTINOMIAL_FN __host__ __device__ __forceinline__
#else
#define BARACUDA_MULTINOMIAL_FN inline
#endif

namespace baracuda::device {

// With replacement, a row's running sum is taken in this many chunks of ceil(C / kMultinomialChunks).
inline constexpr int kMultinomialChunks = 256;

// A weight a row may hold: finite and not negative.
BARACUDA_MULTINOMIAL_FN bool multinomial_weight_ok(double w) { return w >= 0.0 && w <= 1.7976931348623157e308; }
BARACUDA_MULTINOMIAL_FN bool multinomial_weight_ok(float w) { return w >= 0.0f && w <= 3.4028234663852886e38f; }

// +inf: the key of a category never drawn.
BARACUDA_MULTINOMIAL_FN float multinomial_never() {
#if defined(__CUDA_ARCH__)
  return __int_as_float(0x7f800000);
#else
  return __builtin_huge_valf();
#endif
}

// Without replacement, the key of a category of weight w in a row whose largest weight is L (> 0):
// E / (w inverse) in f32, inverse = 1 / L in W (the caller's, once a row), E the f32 exponential at
// `position`; +inf (never drawn) where the scaled weight is 0, the largest float where the quotient
// overflows (odds below 2^-128 of the largest's: ties in category order).
template <class W>
BARACUDA_MULTINOMIAL_FN float multinomial_key_of(float exponential, W w, W inverse) {
  const float scaled = static_cast<float>(w * inverse);
  if (!(scaled > 0.0f)) return multinomial_never();
  const float key = exponential / scaled;
  if (key == 0.0f) return 0.0f;  // (E = -log(1) is -0: its bits would sort last)
  return key <= 3.4028234663852886e38f ? key : 3.4028234663852886e38f;
}
template <class W>
BARACUDA_MULTINOMIAL_FN float multinomial_key(W w, W inverse, unsigned long long seed, unsigned long long position) {
  return multinomial_key_of(philox_exponential_f32(seed, position), w, inverse);
}

// With replacement, u in [0, 1): RandomPlan's f64 uniform (low 0, high 1) of the element at
// `position` (words 2 j and 2 j + 1 of the stream-0 block of group position / 2, j = position % 2).
BARACUDA_MULTINOMIAL_FN double multinomial_uniform(unsigned long long seed, unsigned long long position) {
  const Philox4 r = philox_bits_block(seed, position >> 1);
  const int j = static_cast<int>(position & 1);
  return philox_u53(r.v[2 * j], r.v[2 * j + 1]);
}

// The chunk [begin, end) of category indices chunk t covers in a row of `categories`.
BARACUDA_MULTINOMIAL_FN void multinomial_chunk(long long categories, int t, long long& begin, long long& end) {
  const long long length = (categories + kMultinomialChunks - 1) / kMultinomialChunks;
  begin = t * length < categories ? t * length : categories;
  end = begin + length < categories ? begin + length : categories;
}

// A row's validity (every weight finite and not negative, the largest above 0) and its largest weight,
// in category order: the host's form (the CUDA kernels reduce across a block, to the same result).
template <class W, class Weight>
BARACUDA_MULTINOMIAL_FN bool multinomial_row_largest(long long categories, const Weight& weight, W& largest) {
  bool ok = true;
  largest = W(0);
  for (long long c = 0; c < categories; ++c) {
    const W w = weight(c);
    ok = ok && multinomial_weight_ok(w);
    largest = w > largest ? w : largest;
  }
  return ok && largest > W(0);
}

// With replacement, a row's running sums through each chunk into ends[kMultinomialChunks] (f64, the
// chunks summed from 0 in order, then added in chunk order) and whether the row can be drawn from.
template <class Weight>
BARACUDA_MULTINOMIAL_FN bool multinomial_row_ends(long long categories, const Weight& weight, double* ends) {
  bool ok = true;
  double running = 0.0;
  for (int t = 0; t < kMultinomialChunks; ++t) {
    long long begin, end;
    multinomial_chunk(categories, t, begin, end);
    double sum = 0.0;
    for (long long c = begin; c < end; ++c) {
      ok = ok && multinomial_weight_ok(weight(c));
      sum += weight(c);
    }
    running += sum;
    ends[t] = running;
  }
  return ok && running > 0.0;
}

// With replacement, one sample: `ends[t]` is the running sum through chunk t (ends[kChunks - 1] the
// row's total, > 0), `weight(c)` a category's weight as f64. The first category whose running sum
// (from the start of its chunk, ends[t - 1]) passes u total; where rounding leaves none (u total
// rounded up to the total), the last category of positive weight in the last chunk that has one.
template <class Weight>
BARACUDA_MULTINOMIAL_FN long long multinomial_search(const double* ends, long long categories, double u,
                                                     const Weight& weight) {
  const double target = u * ends[kMultinomialChunks - 1];
  int lo = 0, hi = kMultinomialChunks;  // the first chunk whose end passes the target
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (ends[mid] > target)
      hi = mid;
    else
      lo = mid + 1;
  }
  if (lo == kMultinomialChunks) {  // (none: the last chunk holding weight)
    lo = kMultinomialChunks - 1;
    while (lo > 0 && !(ends[lo] > ends[lo - 1])) --lo;
  }
  long long begin, end;
  multinomial_chunk(categories, lo, begin, end);
  double running = lo > 0 ? ends[lo - 1] : 0.0;
  long long last_positive = -1;
  for (long long c = begin; c < end; ++c) {
    const double w = weight(c);
    if (w > 0.0) last_positive = c;
    running += w;
    if (running > target && w > 0.0) return c;
  }
  return last_positive;
}

}  // namespace baracuda::device

#undef BARACUDA_MULTINOMIAL_FN

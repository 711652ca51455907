#pragma once
// The softmax family's formulas, once for both backends. A row is reduced to a Partial (forward: the
// running max and the sum of exp(x - max); backward: one sum), partials of pieces of a row combine
// in any grouping (each kernel fixes its own order, so every run gives the same bits), and the
// row's total then gives each output element.
//
// Edge values follow from the formulas, as in PyTorch's two-pass softmax: exp(v - max) of a NaN is
// NaN and of a +inf is exp(inf - inf) = NaN, so such a row sums to NaN; a -inf contributes exactly 0
// (softmax_term guards -inf - -inf, so a -inf piece of a row never poisons the rest); a row of only
// -inf has max -inf and sum 0, so every output is 0/0 = NaN.
#include <cmath>
#include <limits>

#include "baracuda/ops/softmax.hpp"
#include "common/hd.hpp"

// Fixed-length loops over register arrays must unroll on the GPU (or the arrays go to local memory).
#if defined(__CUDA_ARCH__)
#define BARACUDA_UNROLL _Pragma("unroll")
#else
#define BARACUDA_UNROLL
#endif

namespace baracuda::detail {

// exp and log in the compute type: on the GPU, f32 uses the fast hardware approximations (their
// error, a few ulp relative to the largest terms, is far below a 16-bit or f32 rounding of the
// output); f64 uses the accurate ones.
template <class A>
BARACUDA_HD A softmax_exp(A x) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(A) == 4)
    return __expf(x);
  else
    return exp(x);
#else
  return std::exp(x);
#endif
}
template <class A>
BARACUDA_HD A softmax_log(A x) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(A) == 4)
    return __logf(x);
  else
    return log(x);
#else
  return std::log(x);
#endif
}

template <class A>
BARACUDA_HD A minus_infinity() {
  return -std::numeric_limits<A>::infinity();
}

// exp(v - max) for v <= max, with a -inf v contributing exactly 0 (even when max is -inf too).
template <class A>
BARACUDA_HD A softmax_term(A v, A max) {
  return v == minus_infinity<A>() ? A(0) : softmax_exp(v - max);
}

template <class A>
struct SoftmaxStats {
  A max;
  A sum;  // of exp(x - max)
};

// Commutative bit for bit (max, then products and one sum), so a butterfly reduction leaves the
// same bits in every lane.
template <class A>
BARACUDA_HD SoftmaxStats<A> merge_stats(const SoftmaxStats<A>& a, const SoftmaxStats<A>& b) {
  const A max = a.max > b.max ? a.max : b.max;
  return {max, a.sum * softmax_term(a.max, max) + b.sum * softmax_term(b.max, max)};
}

// The forward: one input (x); a partial is SoftmaxStats.
template <class A>
struct SoftmaxForwardMath {
  using Value = A;
  static constexpr int kInputs = 1;
  using Partial = SoftmaxStats<A>;
  SoftmaxKind kind = SoftmaxKind::softmax;

  BARACUDA_HD static A fill() { return minus_infinity<A>(); }  // a missing element: contributes nothing
  BARACUDA_HD static Partial identity() { return {minus_infinity<A>(), A(0)}; }
  BARACUDA_HD static Partial combine(const Partial& a, const Partial& b) { return merge_stats(a, b); }
  // The partial of N values (missing ones hold fill()).
  template <int N>
  BARACUDA_HD Partial partial(const A (&in)[kInputs][N]) const {
    A max = minus_infinity<A>();
    BARACUDA_UNROLL
    for (int i = 0; i < N; ++i) max = in[0][i] > max ? in[0][i] : max;  // a NaN never becomes the max
    A sum = 0;
    BARACUDA_UNROLL
    for (int i = 0; i < N; ++i) sum += softmax_term(in[0][i], max);
    return {max, sum};
  }

  // Each output element from the row's total.
  struct Writer {
    A max, scale;  // softmax: 1 / sum; log_softmax: log(sum)
    bool log;
    BARACUDA_HD A operator()(const A (&in)[kInputs]) const {
      // (x - max) - log(sum), not x - (max + log(sum)): with |x| ~ 1e30 the latter loses log(sum).
      return log ? (in[0] - max) - scale : softmax_term(in[0], max) * scale;
    }
  };
  BARACUDA_HD Writer writer(const Partial& total) const {
    const bool log = kind == SoftmaxKind::log_softmax;
    return {total.max, log ? softmax_log(total.sum) : A(1) / total.sum, log};
  }
};

// The backward: inputs (y, dy); a partial is the sum of dy y (softmax) or of dy (log_softmax).
template <class A>
struct SoftmaxBackwardMath {
  using Value = A;
  static constexpr int kInputs = 2;
  using Partial = A;
  SoftmaxKind kind = SoftmaxKind::softmax;

  BARACUDA_HD static A fill() { return A(0); }
  BARACUDA_HD static Partial identity() { return A(0); }
  BARACUDA_HD static Partial combine(Partial a, Partial b) { return a + b; }
  BARACUDA_HD A term(A y, A dy) const { return kind == SoftmaxKind::softmax ? dy * y : dy; }
  template <int N>
  BARACUDA_HD Partial partial(const A (&in)[kInputs][N]) const {
    A sum = 0;
    BARACUDA_UNROLL
    for (int i = 0; i < N; ++i) sum += term(in[0][i], in[1][i]);
    return sum;
  }

  struct Writer {
    A sum;
    bool log;
    BARACUDA_HD A operator()(const A (&in)[kInputs]) const {
      return log ? in[1] - softmax_exp(in[0]) * sum : in[0] * (in[1] - sum);
    }
  };
  BARACUDA_HD Writer writer(const Partial& total) const { return {total, kind == SoftmaxKind::log_softmax}; }
};

}  // namespace baracuda::detail

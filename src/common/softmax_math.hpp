#pragma once
// The softmax family's formulas, once for both backends. A row is reduced to a Partial (forward: the
// running max and the sum of exp(x - max); backward: one sum), partials of pieces of a row combine
// in any grouping (each kernel fixes its own order, so every run gives the same bits), and the
// row's total then gives each output element.
//
// Sparsemax and entmax15 (SparseForwardMath) need several reductions of a row in turn: a backend
// gives them a Fold (any number of reductions of the row, each with its own partial type) instead
// of one partial.
//
// Edge values follow from the formulas, as in PyTorch's two-pass softmax: exp(v - max) of a NaN is
// NaN and of a +inf is exp(inf - inf) = NaN, so such a row sums to NaN; a -inf contributes exactly 0
// (base_of and softmax_term guard -inf - -inf, so a -inf piece of a row never poisons the rest); a
// row of only -inf has max -inf and sum 0, so every output is NaN.
// (NVRTC reads it too: the CUDA kernels are compiled at select.)
#include "baracuda/ops/softmax_kind.hpp"
#include "common/hd.hpp"
#include "common/portable.hpp"

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
BARACUDA_HD A softmax_sqrt(A x) {
#if defined(__CUDA_ARCH__)
  return sqrt(x);
#else
  return std::sqrt(x);
#endif
}

// The larger of a and b, a NaN ignored (C's fmax). On the host a compare and a select: GCC calls
// libm's fmax for std::fmax (unless math is finite-only), a call an element in the rows' loops.
template <class A>
BARACUDA_HD A fmax_of(A a, A b) {
#if defined(__CUDA_ARCH__)
  return fmax(a, b);
#else
  return b > a || a != a ? b : a;
#endif
}

// Sparsemax and entmax15: the kinds whose forward needs several passes over a row.
BARACUDA_HD constexpr bool is_sparse(SoftmaxKind kind) {
  return kind == SoftmaxKind::sparsemax || kind == SoftmaxKind::entmax15;
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
  static constexpr bool kIterative = false;  // one partial per row (no Fold)
  using Partial = SoftmaxStats<A>;
  SoftmaxKind kind = SoftmaxKind::softmax;

  BARACUDA_HD static A fill() { return minus_infinity<A>(); }  // a missing element: contributes nothing
  BARACUDA_HD static Partial identity() { return {minus_infinity<A>(), A(0)}; }
  BARACUDA_HD static Partial combine(const Partial& a, const Partial& b) { return merge_stats(a, b); }
  // The partial of N values (missing ones hold fill()): four independent max and sum chains, so that
  // a thread's exps overlap, and no test for -inf an element (exp(-inf - base) is 0; base is 0 where
  // every value is -inf, not -inf: -inf - -inf is NaN). fmax, one instruction on the GPU (a compare
  // and a select take two), ignores a NaN, whose exp then makes the sum NaN all the same.
  template <int N>
  BARACUDA_HD Partial partial(const A (&in)[kInputs][N]) const {
    const A max = max_of(in), base = base_of(max);
    return {max, chained<N>(A(0), Plus{}, [&](int i) { return softmax_exp(in[0][i] - base); })};
  }
  struct Max {
    BARACUDA_HD A operator()(A a, A b) const { return fmax_of(a, b); }
  };
  struct Plus {
    BARACUDA_HD A operator()(A a, A b) const { return a + b; }
  };
  template <int N>
  BARACUDA_HD static A max_of(const A (&in)[kInputs][N]) {
    return chained<N>(minus_infinity<A>(), Max{}, [&](int i) { return in[0][i]; });
  }
  // What the exps subtract: the max, or 0 where every value is -inf (-inf - -inf would be NaN).
  BARACUDA_HD static A base_of(A max) { return max == minus_infinity<A>() ? A(0) : max; }
  // op over f(0) .. f(N - 1) in four independent chains, then across them.
  template <int N, class Op, class F>
  BARACUDA_HD static A chained(A identity, Op op, F f) {
    constexpr int K = N < 4 ? N : 4;
    A chain[K];
    BARACUDA_UNROLL
    for (int k = 0; k < K; ++k) chain[k] = identity;
    BARACUDA_UNROLL
    for (int i = 0; i < N; ++i) chain[i % K] = op(chain[i % K], f(i));
    A total = chain[0];
    BARACUDA_UNROLL
    for (int k = 1; k < K; ++k) total = op(total, chain[k]);
    return total;
  }

  // Each output element from the row's total.
  struct Writer {
    A max, scale;  // softmax: 1 / sum; log_softmax: log(sum)
    bool log;
    BARACUDA_HD A operator()(const A (&in)[kInputs]) const {
      // (x - max) - log(sum), not x - (max + log(sum)): with |x| ~ 1e30 the latter loses log(sum).
      // No test for -inf: exp(-inf - max) is 0, and where max is -inf too the row is all -inf and
      // NaN either way (exp(NaN), or 0 times 1 / 0).
      return log ? (in[0] - max) - scale : softmax_exp(in[0] - max) * scale;
    }
  };
  BARACUDA_HD Writer writer(const Partial& total) const {
    const bool log = kind == SoftmaxKind::log_softmax;
    return {total.max, log ? softmax_log(total.sum) : A(1) / total.sum, log};
  }

  // A row the GPU holds in registers: hold() gives the partial of N held values and, for softmax,
  // leaves exp(x - m) in their place (m: their own max), so that the HeldWriter only scales them by
  // exp(m - max) / sum: one exp an element instead of two, which is what bounded the bf16 forward
  // (H200: [8192, 1024] 20.2 -> 16.0 us). Edge values as the partial and Writer above: a piece of
  // only -inf has scale 0 (0 / 0 = NaN when the whole row is -inf). log_softmax keeps x.
  template <int N>
  BARACUDA_HD Partial hold(A (&in)[kInputs][N]) const {
    if (kind != SoftmaxKind::softmax) return partial(in);
    const A max = max_of(in), base = base_of(max);
    return {max, chained<N>(A(0), Plus{}, [&](int i) { return in[0][i] = softmax_exp(in[0][i] - base); })};
  }
  struct HeldWriter {
    A scale, max, log_sum;
    bool log;
    // The outputs in place of the N values hold() left.
    template <int N>
    BARACUDA_HD void apply(A (&in)[kInputs][N]) const {
      if (log) {
        BARACUDA_UNROLL
        for (int i = 0; i < N; ++i) in[0][i] = (in[0][i] - max) - log_sum;
      } else {
        BARACUDA_UNROLL
        for (int i = 0; i < N; ++i) in[0][i] *= scale;
      }
    }
  };
  // From the row's total and this thread's own partial (`local`, what hold() returned).
  BARACUDA_HD HeldWriter held_writer(const Partial& total, const Partial& local) const {
    if (kind == SoftmaxKind::log_softmax) return {A(0), total.max, softmax_log(total.sum), true};
    return {softmax_term(local.max, total.max) / total.sum, total.max, A(0), false};
  }
};

// The backward: inputs (y, dy); a partial is the sum of dy y (softmax) or of dy (log_softmax).
template <class A>
struct SoftmaxBackwardMath {
  using Value = A;
  static constexpr int kInputs = 2;
  static constexpr bool kIterative = false;
  using Partial = A;
  SoftmaxKind kind = SoftmaxKind::softmax;

  BARACUDA_HD static A fill() { return A(0); }
  BARACUDA_HD static Partial identity() { return A(0); }
  BARACUDA_HD static Partial combine(Partial a, Partial b) { return a + b; }
  BARACUDA_HD A term(A y, A dy) const { return kind == SoftmaxKind::softmax ? dy * y : dy; }
  // Four independent chains (the GPU's held rows: a thread's additions overlap).
  template <int N>
  BARACUDA_HD Partial partial(const A (&in)[kInputs][N]) const {
    constexpr int K = N < 4 ? N : 4;
    A sum_k[K];
    BARACUDA_UNROLL
    for (int k = 0; k < K; ++k) sum_k[k] = A(0);
    BARACUDA_UNROLL
    for (int i = 0; i < N; ++i) sum_k[i % K] += term(in[0][i], in[1][i]);
    A sum = sum_k[0];
    BARACUDA_UNROLL
    for (int k = 1; k < K; ++k) sum += sum_k[k];
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

// ---------------------------------------------------------------------------------------------
// Sparsemax and entmax15.
//
// Both map a row x to y = max(z - tau, 0)^kPower with z = (x - max) * scale (sparsemax: kPower 1,
// scale 1; entmax15: kPower 2, scale 1/2, as (alpha - 1) x with alpha = 1.5) and tau the one root of
//   f(t) = sum over {z > t} of (z - t)^kPower - 1,
// a convex, decreasing function. Shifted by the max (z <= 0, the max at 0), tau lies in [-1, 0).
// The exact support S = {z > tau} and tau come without a sort: passes over the row, each measuring
// the support {z > t} and the sums of (z - t) and (z - t)^2 over it at a few points t at once (four
// spread over [-1, 0) in the first pass, two after). A point with f(t) >= 0 is at or below tau
// (the highest such is lo, its support a superset of S); one with f(t) < 0 is past it (the lowest
// is hi). The next pass measures:
//   - the closed form of lo's support (tau itself once that support is S): sparsemax
//     (s1 - 1) / count from lo (Michelot's algorithm, never past tau), entmax15 the smaller root of
//     sum (z - t)^2 = 1;
//   - entmax15: Newton's step from lo (from below on a convex function: never past tau);
//   - sparsemax: the secant of f between lo and hi (f is convex: its root is past tau, so tau is
//     bracketed from both sides), every other pass a bisection of (lo, hi) in the compute type's
//     bit patterns instead, which bounds the passes by about twice the type's bits.
// The search ends when lo's support is S: when the closed form measured last holds the count it
// came from (no z in (lo, closed form]), or lo and hi hold the same count (no z between them). Tau
// is then the closed form from the nearer of those points: from a distant one it loses digits (sums
// of many (z - t) near 1, a difference of squares for entmax15); where neither is near, one more
// pass measures at tau itself. Typical rows take 3 to 6 passes, the worst we tried 13.
//
// Count: int64_t, or A where a backend knows rows are shorter than 2^24 elements (exact integers
// in f32): fewer instructions and shuffled words than a 64-bit count.
template <class A, int kPower, class Count, int kPoints>
struct ThresholdStats {
  Count count[kPoints];    // of {z > t}
  A sum[kPoints][kPower];  // of (z - t), and of (z - t)^2 for entmax15
};

// max with NaN sticky (a NaN row is NaN throughout).
template <class A>
BARACUDA_HD A nan_max(A a, A b) {
  return a != a ? a : b != b ? b : a > b ? a : b;
}

// The point halfway between a and b (a < b <= 0) in the order of the compute type's bit patterns:
// bisection by exponent first, then mantissa, as a sorted list of the type's values would be cut.
template <class A>
BARACUDA_HD A bit_midpoint(A a, A b) {
  using Bits = std::conditional_t<sizeof(A) == 4, uint32_t, uint64_t>;
  const A na = A(0) - a, nb = A(0) - b;  // 0 <= nb < na (b = -0 gives +0): positive values' bits are in order
  Bits ka, kb;
  memcpy(&ka, &na, sizeof(A));
  memcpy(&kb, &nb, sizeof(A));
  const Bits mid = kb + (ka - kb) / 2;
  A m;
  memcpy(&m, &mid, sizeof(A));
  return -m;
}

// The first fold's element: the row's max, NaN sticky. A named type, as ThresholdMeasure below, so
// that a backend may take it its own way.
template <class A>
struct MaxElement {
  BARACUDA_HD void operator()(A& m, A x) const { m = nan_max(m, x); }
};

// A pass's element: folds x into the stats of K points t, each the count of {z > t} and the sums
// of (z - t) (and (z - t)^2 for entmax15) over it. A named type, so that a backend may fold the row
// its own way (the CPU: vector lanes over a contiguous row, with z() and t).
template <class A, int kPower, int K>
struct ThresholdMeasure {
  A scale, shift;
  A t[K];
  BARACUDA_HD A z(A x) const { return x * scale + shift; }
  template <class Stats>
  BARACUDA_HD void operator()(Stats& s, A x) const {
    const A zx = z(x);
    BARACUDA_UNROLL
    for (int j = 0; j < K; ++j) {
      const A d = zx - t[j];
      if (d > A(0)) {
        s.count[j] += 1;
        s.sum[j][0] += d;
        if constexpr (kPower == 2) s.sum[j][1] += d * d;
      }
    }
  }
};

template <class A, int kPower>
struct SparseForwardMath {
  using Value = A;
  static constexpr int kInputs = 1;
  static constexpr bool kIterative = true;
  static constexpr int kFirstPoints = 4;
  // The widest value a fold reduces (what a backend's reduction scratch must hold).
  using Partial = ThresholdStats<A, kPower, int64_t, kFirstPoints>;
  // Enough passes for the bisection to pin any tau of the type; the search rarely nears it.
  static constexpr int kMaxPasses = sizeof(A) == 4 ? 72 : 136;
  SoftmaxKind kind = SoftmaxKind::sparsemax;

  BARACUDA_HD static A fill() { return minus_infinity<A>(); }  // never in a support

  struct Writer {
    A shift, scale, tau;  // z = x * scale + shift
    // z - tau (the CPU's vector loops clamp it their own way).
    BARACUDA_HD A excess(A x) const { return x * scale + shift - tau; }
    BARACUDA_HD A operator()(const A (&in)[kInputs]) const {
      A d = excess(in[0]);
      d = d < A(0) ? A(0) : d;  // -inf entries give 0; a NaN tau (a NaN row) gives NaN
      return kPower == 1 ? d : d * d;
    }
  };

  // The closed-form tau of the support measured at t (count > 0), and whether it is well
  // conditioned there (t near it, relative to the support's spread from t).
  struct Closed {
    A tau;
    bool near;
  };
  BARACUDA_HD static Closed closed_form(A t, A count, const A (&sum)[kPower]) {
    if constexpr (kPower == 1) {
      // sum[0] - 1 loses what the sum's rounding lost, relative to sum[0]: near while that is <= 2.
      return {t + (sum[0] - A(1)) / count, sum[0] <= A(2)};
    } else {
      // The smaller root u of count u^2 - 2 s1 u + s2 - 1 = 0, as (s2 - 1) / (s1 + sqrt(disc)), which
      // does not cancel when s2 is near 1; disc cancels unless u is small beside the mean of z - t.
      A disc = sum[0] * sum[0] - count * (sum[1] - A(1));
      disc = disc > A(0) ? disc : A(0);
      const A u = (sum[1] - A(1)) / (sum[0] + softmax_sqrt(disc));
      return {t + u, A(4) * u * count <= sum[0]};
    }
  }

  // fold(identity, element, combine): the reduction of the whole row, element(acc, x) folding each
  // value (missing ones are fill()) into a partial and combine(a, b) merging partials;
  // fold.any(p): whether p holds for any group whose reductions share this one's instructions.
  template <class Count = int64_t, class Fold>
  BARACUDA_HD Writer solve(Fold&& fold) const {
    const A max = fold(minus_infinity<A>(), MaxElement<A>{}, [](A a, A b) { return nan_max(a, b); });
    const A scale = kPower == 1 ? A(1) : A(0.5);
    const A shift = -max * scale;
    // The result, once `done`. Groups that share a fold's reductions (the rows of one warp) take
    // every pass together: a finished one measures along, its result kept (fold.any).
    Writer result{shift, scale, A(0)};
    bool done = !(max > minus_infinity<A>() && max < -minus_infinity<A>());  // NaN, +inf, or only -inf:
    if (done) result = {A(0), A(0), max - max};                              // NaN everywhere

    // lo = -1 is at or below tau (the max alone gives f(-1) >= 0); hi = 0 is past it (f(0) = -1).
    A lo = -1, lo_sum[kPower] = {}, hi = 0, hi_f = -1;
    Count lo_count = 0, hi_count = 0;
    // Measures at the K points t, then moves lo and hi; false when neither moved.
    auto measure = [&](const auto& t, auto& stats) {
      using Stats = std::remove_reference_t<decltype(stats)>;
      constexpr int K = sizeof(t) / sizeof(t[0]);
      ThresholdMeasure<A, kPower, K> element{scale, shift, {}};
      BARACUDA_UNROLL
      for (int j = 0; j < K; ++j) element.t[j] = t[j];
      stats = fold(Stats{}, element, [](const Stats& a, const Stats& b) {
        Stats c;
        BARACUDA_UNROLL
        for (int j = 0; j < K; ++j) {
          c.count[j] = a.count[j] + b.count[j];
          BARACUDA_UNROLL
          for (int k = 0; k < kPower; ++k) c.sum[j][k] = a.sum[j][k] + b.sum[j][k];
        }
        return c;
      });
      bool moved = false;
      BARACUDA_UNROLL
      for (int j = 0; j < K; ++j) {
        const A f = stats.sum[j][kPower - 1] - A(1);
        if (f >= A(0) && (t[j] > lo || lo_count == 0)) {
          lo = t[j];
          lo_count = stats.count[j];
          BARACUDA_UNROLL
          for (int k = 0; k < kPower; ++k) lo_sum[k] = stats.sum[j][k];
          moved = true;
        } else if (f < A(0) && t[j] < hi) {
          hi = t[j];
          hi_f = f;
          hi_count = stats.count[j];
          moved = true;
        }
      }
      return moved;
    };

    const A first[kFirstPoints] = {A(-1), A(-0.25), A(-0.0625), A(-0.015625)};
    ThresholdStats<A, kPower, Count, kFirstPoints> opening;
    measure(first, opening);
    // probe[kClosed] is the closed form of lo's support (a fixed index: registers, not local memory).
    constexpr int kClosed = kPower == 1 ? 0 : 1;
    A probe[2];
    Count closed_base = -1;  // the count of the support probe[kClosed] came from
    for (int pass = 0; pass < kMaxPasses; ++pass) {
      const Closed c = closed_form(lo, A(lo_count), lo_sum);
      if (!done && lo_count == hi_count && c.near) {  // no z in (lo, hi]
        result.tau = c.tau;
        done = true;
      }
      if (!fold.any(!done)) return result;
      closed_base = lo_count;
      probe[kClosed] = c.tau;
      if (lo_count == hi_count) {
        probe[1 - kClosed] = c.tau;  // only tau's precision is left to gain
      } else if constexpr (kPower == 1) {
        const A from = c.tau > lo ? c.tau : lo, lo_f = lo_sum[0] - A(1);
        const A secant = lo + lo_f * ((hi - lo) / (lo_f - hi_f));
        probe[1] = !(c.tau < hi)                                   ? c.tau
                   : pass % 2 == 0 && secant > from && secant < hi ? secant
                                                                   : bit_midpoint(from, hi);
      } else {
        probe[0] = lo + (lo_sum[1] - A(1)) / (A(2) * lo_sum[0]);  // Newton's step
      }
      ThresholdStats<A, kPower, Count, 2> s;
      const bool moved = measure(probe, s);
      if (done) continue;
      if (s.count[kClosed] == closed_base) {  // the closed form holds its support: it is S
        const Closed refined = closed_form(probe[kClosed], A(s.count[kClosed]), s.sum[kClosed]);
        if (refined.near || c.near) {
          result.tau = c.near ? c.tau : refined.tau;
          done = true;
        }
      }
      if (!done && !moved) {  // stalled: lo's support is the best known
        result.tau = c.tau;
        done = true;
      }
    }
    if (!done) result.tau = closed_form(lo, A(lo_count), lo_sum).tau;
    return result;
  }
};

// The backward of sparsemax and entmax15: inputs (y, dy); a partial sums g dy and g with g = [y > 0]
// (sparsemax) or sqrt(y) (entmax15), and dx = g (dy - sum(g dy) / sum(g)).
template <class A>
struct SparseBackwardMath {
  using Value = A;
  static constexpr int kInputs = 2;
  static constexpr bool kIterative = false;
  struct Partial {
    A weighted, weight;  // sum of g dy, sum of g
  };
  SoftmaxKind kind = SoftmaxKind::sparsemax;

  BARACUDA_HD static A fill() { return A(0); }  // y = 0: off the support
  BARACUDA_HD static Partial identity() { return {A(0), A(0)}; }
  BARACUDA_HD static Partial combine(const Partial& a, const Partial& b) {
    return {a.weighted + b.weighted, a.weight + b.weight};
  }
  BARACUDA_HD static A gain(A y, bool entmax) {
    if (!(y > A(0))) return y != y ? y : A(0);  // a NaN y makes its row's gradient NaN
    return entmax ? softmax_sqrt(y) : A(1);
  }
  template <int N>
  BARACUDA_HD Partial partial(const A (&in)[kInputs][N]) const {
    Partial p = identity();
    BARACUDA_UNROLL
    for (int i = 0; i < N; ++i) {
      const A g = gain(in[0][i], kind == SoftmaxKind::entmax15);
      p.weighted += g * in[1][i];
      p.weight += g;
    }
    return p;
  }

  struct Writer {
    A mean;
    bool entmax;
    BARACUDA_HD A operator()(const A (&in)[kInputs]) const { return gain(in[0], entmax) * (in[1] - mean); }
  };
  BARACUDA_HD Writer writer(const Partial& total) const {
    return {total.weight > A(0) ? total.weighted / total.weight : A(0), kind == SoftmaxKind::entmax15};
  }
};

}  // namespace baracuda::detail

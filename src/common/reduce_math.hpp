#pragma once
// The reduction family's formulas, once for both backends. Each kind's forward is a Math:
//   using Acc, State;
//   State identity() const;                         the state of no element
//   void fold(State&, Acc x, int64_t i) const;      one more element (i: its index in the reduced set;
//                                                   one state folds its elements in increasing i)
//   State combine(const State& a, const State& b) const;   a's elements come first in the order
//   ReduceValue<Acc> finish(const State&) const;    the output (value, index; var_mean's mean)
// A kernel folds the elements of an output into states in an order it fixes, then combines them in
// a fixed tree: the same inputs give the same bits on every run. The extremes (with the index as
// tie-break) and the counts give the same result in any order.
//
// The backward of the kinds that need more than the forward's output (the ties of amax / amin, the
// mean of var / std, the zeros of prod) first reduces a statistic with one of the maths here
// (ReduceStats), then maps every element through ReduceGrad.
#include "baracuda/ops/reduce_kind.hpp"
#include "common/hd.hpp"
#include "common/portable.hpp"

namespace baracuda::detail {

namespace reduce_fn {
template <class A>
BARACUDA_HD A exp(A x) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(A) == 4)
    return __expf(x);
  else
    return ::exp(x);
#else
  return std::exp(x);
#endif
}
// a * b rounded on its own, never contracted with an add into an fma: a combine evaluated at
// several places (a scan whose pieces link in one pass, bench/NOTES.md) must give the same bits at
// each. Integers wrap as two's complement (as PyTorch's and JAX's do), computed in uint64_t, whose
// overflow is defined.
template <class A>
BARACUDA_HD A mul(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(A) == 4)
      return __fmul_rn(a, b);
    else
      return __dmul_rn(a, b);
#else
    return a * b;
#endif
  }
}
template <class A>
BARACUDA_HD A log(A x) {
#if defined(__CUDA_ARCH__)
  return ::log(x);
#else
  return std::log(x);
#endif
}
template <class A>
BARACUDA_HD A sqrt(A x) {
#if defined(__CUDA_ARCH__)
  return ::sqrt(x);
#else
  return std::sqrt(x);
#endif
}
template <class A>
BARACUDA_HD A pow(A x, A y) {
#if defined(__CUDA_ARCH__)
  return ::pow(x, y);
#else
  return std::pow(x, y);
#endif
}
template <class A>
BARACUDA_HD A abs(A x) {
  return x < A(0) ? -x : x == A(0) ? A(0) : x;  // |-0| = +0; NaN stays NaN
}
template <class A>
BARACUDA_HD bool isnan(A x) {
  if constexpr (std::is_integral_v<A>)
    return false;
  else
    return x != x;
}
template <class A>
BARACUDA_HD bool signbit(A x) {
#if defined(__CUDA_ARCH__)
  return ::signbit(x);
#else
  return std::signbit(x);
#endif
}
template <class A>
BARACUDA_HD A inf() {
  return std::numeric_limits<A>::infinity();
}
template <class A>
BARACUDA_HD A nan() {
  return std::numeric_limits<A>::quiet_NaN();
}
// The ends of A's order, which no element passes: +-inf, or an integer's extremes.
template <class A>
BARACUDA_HD A lowest() {
  if constexpr (std::is_integral_v<A>)
    return std::numeric_limits<A>::lowest();
  else
    return -inf<A>();
}
template <class A>
BARACUDA_HD A highest() {
  if constexpr (std::is_integral_v<A>)
    return std::numeric_limits<A>::max();
  else
    return inf<A>();
}
// a + b; integers wrap as mul's do.
template <class A>
BARACUDA_HD A add(A a, A b) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <class A>
BARACUDA_HD A sign(A x) {
  return x > A(0) ? A(1) : x < A(0) ? A(-1) : x;  // 0 and NaN stay
}
}  // namespace reduce_fn

// What every math may need besides the elements: from the descriptor, at select.
struct ReduceParams {
  ReduceKind kind = ReduceKind::sum;
  int64_t count = 0;        // elements per output
  double correction = 1.0;  // var, std
  double p = 2.0;           // norm
};

template <class Acc>
struct ReduceValue {
  Acc value = 0;
  int64_t index = 0;
  Acc mean = 0;  // var_mean: the mean beside the var
};

// What the backward reduces before its map (ReduceStats): per kind, see the stats maths.
template <class Acc>
struct GradStat {
  Acc value = 0;
  Acc scale = 1;
  int64_t count = 0;
};

// ---------------------------------------------------------------------------------------------
// Sums: sum, mean, and norm for finite p != inf (of |x|, x^2 or |x|^p).
enum class SumTerm : unsigned char { value, abs, square, pow };

template <class A, SumTerm kTerm>
struct SumMath {
  using Acc = A;
  using State = A;
  ReduceParams params;
  A p = 2;

  // (p only for kTerm pow: another kind's p may be anything, even past an integer A's range)
  BARACUDA_HD explicit SumMath(const ReduceParams& prm)
      : params(prm), p(static_cast<A>(kTerm == SumTerm::pow ? prm.p : 2.0)) {}
  BARACUDA_HD State identity() const { return A(0); }
  BARACUDA_HD A term(A x) const {
    if constexpr (kTerm == SumTerm::abs) return reduce_fn::abs(x);
    if constexpr (kTerm == SumTerm::square) return x * x;
    if constexpr (kTerm == SumTerm::pow) return reduce_fn::pow(reduce_fn::abs(x), p);
    return x;
  }
  BARACUDA_HD void fold(State& s, A x, int64_t) const { s = reduce_fn::add(s, term(x)); }
  BARACUDA_HD State combine(const State& a, const State& b) const { return reduce_fn::add(a, b); }
  BARACUDA_HD ReduceValue<A> finish(const State& s) const {
    if (params.kind == ReduceKind::mean) return {s / static_cast<A>(params.count), 0};
    if (params.kind == ReduceKind::norm) {
      if constexpr (kTerm == SumTerm::square) return {reduce_fn::sqrt(s), 0};
      if constexpr (kTerm == SumTerm::pow) return {reduce_fn::pow(s, A(1) / p), 0};
    }
    return {s, 0};
  }
};

template <class A>
struct ProdMath {
  using Acc = A;
  using State = A;
  BARACUDA_HD explicit ProdMath(const ReduceParams&) {}
  BARACUDA_HD State identity() const { return A(1); }
  BARACUDA_HD void fold(State& s, A x, int64_t) const { s = reduce_fn::mul(s, x); }
  BARACUDA_HD State combine(const State& a, const State& b) const { return reduce_fn::mul(a, b); }
  BARACUDA_HD ReduceValue<A> finish(const State& s) const { return {s, 0}; }
};

// ---------------------------------------------------------------------------------------------
// Extremes with their index: max, min, argmax, argmin (kAbs: the |x| that ExtremeValueMath's norm
// p = +-inf shares). A NaN beats every number and the smaller index breaks ties, so the result does
// not depend on the order.
template <class A, bool kMax, bool kAbs>
struct ExtremeMath {
  using Acc = A;
  struct State {
    A value;
    int64_t index;
  };
  BARACUDA_HD explicit ExtremeMath(const ReduceParams&) {}
  BARACUDA_HD static A key(A x) { return kAbs ? reduce_fn::abs(x) : x; }
  // Whether (a, i) comes before (b, j): the greater (kMax) or lesser value, NaN first, then the index.
  BARACUDA_HD static bool before(A a, int64_t i, A b, int64_t j) {
    const bool a_nan = reduce_fn::isnan(a), b_nan = reduce_fn::isnan(b);
    if (a_nan || b_nan) return a_nan && (!b_nan || i < j);
    if (a == b) return i < j;
    return kMax ? a > b : a < b;
  }
  BARACUDA_HD State identity() const {
    return {kMax ? reduce_fn::lowest<A>() : reduce_fn::highest<A>(), std::numeric_limits<int64_t>::max()};
  }
  // Elements come in increasing index, so a tie keeps the state, and so does anything after a NaN;
  // the identity (no element yet) is no tie: an element equal to its value (-inf for max) replaces it.
  BARACUDA_HD void fold(State& s, A x, int64_t i) const {
    const A k = key(x);
    const bool better = kMax ? k > s.value : k < s.value;
    const bool none = s.index == std::numeric_limits<int64_t>::max();
    if (better || none || (reduce_fn::isnan(k) && !reduce_fn::isnan(s.value))) s = {k, i};
  }
  BARACUDA_HD State combine(const State& a, const State& b) const {
    return before(b.value, b.index, a.value, a.index) ? b : a;
  }
  BARACUDA_HD ReduceValue<A> finish(const State& s) const { return {s.value, s.index}; }
};

// amax, amin and norm's p = +-inf: the extreme value alone (no index to carry: a third of the
// registers and half the instructions of ExtremeMath's fold). A NaN beats every number, and +0 is
// above -0 (the max of {-0, +0} is +0, the min -0, as IEEE 754's maximum / minimum), so the result
// is one value whatever the order of the fold.
template <class A, bool kMax, bool kAbs>
struct ExtremeValueMath {
  using Acc = A;
  struct State {
    A value;
  };
  BARACUDA_HD explicit ExtremeValueMath(const ReduceParams&) {}
  // Whether a comes before b in the order: the greater (kMax) or lesser, +0 above -0.
  BARACUDA_HD static bool beats(A a, A b) {
    if constexpr (std::is_floating_point_v<A>) {
      if (a == b)
        return a == A(0) && (kMax ? !reduce_fn::signbit(a) && reduce_fn::signbit(b)
                                  : reduce_fn::signbit(a) && !reduce_fn::signbit(b));
    }
    return kMax ? a > b : a < b;
  }
  BARACUDA_HD State identity() const { return {kMax ? reduce_fn::lowest<A>() : reduce_fn::highest<A>()}; }
  BARACUDA_HD void fold(State& s, A x, int64_t) const {
    const A k = ExtremeMath<A, kMax, kAbs>::key(x);
    if (beats(k, s.value) || reduce_fn::isnan(k)) s.value = k;
  }
  BARACUDA_HD State combine(const State& a, const State& b) const {
    const bool b_first = reduce_fn::isnan(a.value) ? false : reduce_fn::isnan(b.value) || beats(b.value, a.value);
    return b_first ? b : a;
  }
  BARACUDA_HD ReduceValue<A> finish(const State& s) const { return {s.value}; }
};

// ---------------------------------------------------------------------------------------------
// var, std and var_mean: Welford's running mean and sum of squared deviations, pieces merged by
// Chan's formula. var_mean's mean is the state's (NaN over an empty set, as mean's).
template <class A>
struct VarMath {
  using Acc = A;
  struct State {
    A mean;
    A m2;
    int64_t n;
  };
  ReduceParams params;
  BARACUDA_HD explicit VarMath(const ReduceParams& prm) : params(prm) {}
  BARACUDA_HD State identity() const { return {A(0), A(0), 0}; }
  BARACUDA_HD void fold(State& s, A x, int64_t) const {
    s.n += 1;
    const A delta = x - s.mean;
#if defined(__CUDA_ARCH__)
    // f32 on the GPU: the approximate division (2 ulp) instead of the IEEE one (a dozen instructions
    // per element, which made var compute-bound); the mean's rounding is of the same order.
    if constexpr (sizeof(A) == 4)
      s.mean += __fdividef(delta, static_cast<A>(s.n));
    else
      s.mean += delta / static_cast<A>(s.n);
#else
    s.mean += delta / static_cast<A>(s.n);
#endif
    s.m2 += delta * (x - s.mean);
  }
  BARACUDA_HD State combine(const State& a, const State& b) const {
    if (b.n == 0) return a;
    if (a.n == 0) return b;
    const int64_t n = a.n + b.n;
    const A delta = b.mean - a.mean;
    const A wb = static_cast<A>(b.n) / static_cast<A>(n);
    return {a.mean + delta * wb, a.m2 + b.m2 + delta * delta * static_cast<A>(a.n) * wb, n};
  }
  // n - correction, at least 0 (as PyTorch's): m2 / 0 is inf, or NaN when m2 is 0 (one element, none).
  BARACUDA_HD A divisor(const State& s) const {
    const double d = static_cast<double>(s.n) - params.correction;
    return static_cast<A>(d > 0 ? d : 0.0);
  }
  BARACUDA_HD ReduceValue<A> finish(const State& s) const {
    const A var = s.m2 / divisor(s);
    return {params.kind == ReduceKind::std ? reduce_fn::sqrt(var) : var, 0, s.n ? s.mean : reduce_fn::nan<A>()};
  }
  // The backward's statistic: the mean, and what (x - mean) dout divides by.
  BARACUDA_HD GradStat<A> stat(const State& s) const {
    const A d = divisor(s);
    return {s.mean, params.kind == ReduceKind::std ? d * reduce_fn::sqrt(s.m2 / d) : d / A(2), s.n};
  }
};

// ---------------------------------------------------------------------------------------------
// logsumexp: the running max and the sum of exp(x - max). A -inf adds nothing; +inf makes the
// result +inf; NaN propagates.
template <class A>
struct LogSumExpMath {
  using Acc = A;
  struct State {
    A max;
    A sum;
  };
  BARACUDA_HD explicit LogSumExpMath(const ReduceParams&) {}
  // exp(v - max) for v <= max, with -inf contributing 0 even when max is -inf or +inf.
  BARACUDA_HD static A term(A v, A max) {
    if (v == -reduce_fn::inf<A>()) return A(0);
    if (max == reduce_fn::inf<A>()) return v == max ? A(1) : A(0);
    return reduce_fn::exp(v - max);
  }
  BARACUDA_HD State identity() const { return {-reduce_fn::inf<A>(), A(0)}; }
  // The common case (x <= max, both finite) costs a subtraction, an exp and an add; x - max is NaN
  // only where both are the same infinity (their terms do not matter: finish answers that infinity)
  // or one is NaN (then max becomes NaN and stays).
  BARACUDA_HD void fold(State& s, A x, int64_t) const {
    if (x > s.max) {
      s.sum = s.sum * term(s.max, x) + A(1);
      s.max = x;
      return;
    }
    const A d = x - s.max;
    s.sum += d == d ? reduce_fn::exp(d) : A(0);
    if (reduce_fn::isnan(x)) s.max = x;
  }
  // A run of elements at once (the GPU kernels' loads in flight): their max first, one rescale, then
  // a branch-free exp each while the max is finite (a -inf element gives exp(-inf) = 0). The same
  // value as folding them one by one, rounded differently; the per-element fold's branch on each
  // new max cost more than the exp (bf16 logsumexp at 15% of copy along dim 0).
  template <int N>
  BARACUDA_HD void fold_block(State& s, const A (&x)[N]) const {
    A max = s.max;
    bool nan = false;
    for (int k = 0; k < N; ++k) {
      max = x[k] > max ? x[k] : max;
      nan = nan || reduce_fn::isnan(x[k]);
    }
    if (max > s.max) {
      s.sum *= term(s.max, max);
      s.max = max;
    }
    if (s.max > -reduce_fn::inf<A>() && s.max < reduce_fn::inf<A>()) {
      for (int k = 0; k < N; ++k) s.sum += reduce_fn::exp(x[k] - s.max);
    } else if (!reduce_fn::isnan(s.max)) {
      for (int k = 0; k < N; ++k) s.sum += term(x[k], s.max);
    }
    if (nan) s.max = reduce_fn::nan<A>();
  }
  BARACUDA_HD State combine(const State& a, const State& b) const {
    if (reduce_fn::isnan(a.max) || reduce_fn::isnan(b.max)) return {reduce_fn::nan<A>(), A(0)};
    const A max = a.max > b.max ? a.max : b.max;
    return {max, reduce_fn::mul(a.sum, term(a.max, max)) + reduce_fn::mul(b.sum, term(b.max, max))};
  }
  BARACUDA_HD ReduceValue<A> finish(const State& s) const {
    if (reduce_fn::isnan(s.max)) return {s.max, 0};
    if (s.max == reduce_fn::inf<A>() || s.max == -reduce_fn::inf<A>()) return {s.max, 0};
    return {s.max + reduce_fn::log(s.sum), 0};
  }
};

// ---------------------------------------------------------------------------------------------
// any, all, count_nonzero: an exact count (of nonzero elements; of zeros for all). NaN is nonzero.
template <class A>
struct CountMath {
  using Acc = A;
  using State = int64_t;
  ReduceParams params;
  BARACUDA_HD explicit CountMath(const ReduceParams& prm) : params(prm) {}
  BARACUDA_HD State identity() const { return 0; }
  BARACUDA_HD void fold(State& s, A x, int64_t) const {
    const bool zero = x == A(0);
    s += params.kind == ReduceKind::all ? zero : !zero;
  }
  BARACUDA_HD State combine(const State& a, const State& b) const { return a + b; }
  BARACUDA_HD ReduceValue<A> finish(const State& s) const {
    if (params.kind == ReduceKind::any) return {s > 0 ? A(1) : A(0), 0};
    if (params.kind == ReduceKind::all) return {s == 0 ? A(1) : A(0), 0};
    return {static_cast<A>(s), s};  // count_nonzero (exact in the index slot), norm's p = 0
  }
};

// ---------------------------------------------------------------------------------------------
// The backward's statistics.

// The extreme and how many elements attain it (amax / amin, norm's +-inf): the gradient is split
// evenly among the ties, as PyTorch's.
template <class A, bool kMax, bool kAbs>
struct TiesMath {
  using Acc = A;
  struct State {
    A value;
    int64_t ties;
  };
  BARACUDA_HD explicit TiesMath(const ReduceParams&) {}
  BARACUDA_HD static A key(A x) { return kAbs ? reduce_fn::abs(x) : x; }
  BARACUDA_HD static bool beats(A a, A b) {
    if (reduce_fn::isnan(a) || reduce_fn::isnan(b)) return reduce_fn::isnan(a) && !reduce_fn::isnan(b);
    return kMax ? a > b : a < b;
  }
  BARACUDA_HD State identity() const { return {kMax ? -reduce_fn::inf<A>() : reduce_fn::inf<A>(), 0}; }
  BARACUDA_HD void fold(State& s, A x, int64_t) const {
    const A k = key(x);
    if (k == s.value) {
      s.ties += 1;
    } else if (beats(k, s.value)) {
      s = {k, 1};
    }
  }
  BARACUDA_HD State combine(const State& a, const State& b) const {
    if (beats(b.value, a.value)) return b;
    if (beats(a.value, b.value)) return a;
    return {a.value, a.ties + b.ties};
  }
  BARACUDA_HD ReduceValue<A> finish(const State& s) const { return {s.value, s.ties}; }
  BARACUDA_HD GradStat<A> stat(const State& s) const { return {s.value, A(1), s.ties}; }
};

// prod's backward: the product of the nonzero elements and how many are zero.
template <class A>
struct ZerosMath {
  using Acc = A;
  struct State {
    A product;
    int64_t zeros;
  };
  BARACUDA_HD explicit ZerosMath(const ReduceParams&) {}
  BARACUDA_HD State identity() const { return {A(1), 0}; }
  BARACUDA_HD void fold(State& s, A x, int64_t) const {
    if (x == A(0))
      s.zeros += 1;
    else
      s.product *= x;
  }
  BARACUDA_HD State combine(const State& a, const State& b) const { return {a.product * b.product, a.zeros + b.zeros}; }
  BARACUDA_HD ReduceValue<A> finish(const State& s) const { return {s.product, s.zeros}; }
  BARACUDA_HD GradStat<A> stat(const State& s) const { return {s.product, A(1), s.zeros}; }
};

// Calls f(std::type_identity<Math>{}) with the forward math of the kind (compute type A): the one
// map from kinds to maths. An integer A has only the kinds integers take (reduce_takes_integers):
// the others' maths are not compiled for it.
template <class A, class F>
decltype(auto) with_reduce_math(const ReduceParams& prm, F&& f) {
  constexpr bool kFloat = !std::is_integral_v<A>;
  switch (prm.kind) {
    case ReduceKind::sum:
    case ReduceKind::mean:
      break;
    case ReduceKind::norm:
      if constexpr (kFloat) {
        if (prm.p == 1.0) return f(std::type_identity<SumMath<A, SumTerm::abs>>{});
        if (prm.p == 2.0) return f(std::type_identity<SumMath<A, SumTerm::square>>{});
        if (prm.p == INFINITY) return f(std::type_identity<ExtremeValueMath<A, true, true>>{});
        if (prm.p == -INFINITY) return f(std::type_identity<ExtremeValueMath<A, false, true>>{});
        if (prm.p == 0.0) return f(std::type_identity<CountMath<A>>{});
        return f(std::type_identity<SumMath<A, SumTerm::pow>>{});
      }
      break;
    case ReduceKind::prod:
      return f(std::type_identity<ProdMath<A>>{});
    case ReduceKind::amax:
      return f(std::type_identity<ExtremeValueMath<A, true, false>>{});
    case ReduceKind::amin:
      return f(std::type_identity<ExtremeValueMath<A, false, false>>{});
    case ReduceKind::max:
    case ReduceKind::argmax:
      return f(std::type_identity<ExtremeMath<A, true, false>>{});
    case ReduceKind::min:
    case ReduceKind::argmin:
      return f(std::type_identity<ExtremeMath<A, false, false>>{});
    case ReduceKind::var:
    case ReduceKind::std:
    case ReduceKind::var_mean:
      if constexpr (kFloat) return f(std::type_identity<VarMath<A>>{});
      break;
    case ReduceKind::logsumexp:
      if constexpr (kFloat) return f(std::type_identity<LogSumExpMath<A>>{});
      break;
    case ReduceKind::any:
    case ReduceKind::all:
    case ReduceKind::count_nonzero:
      return f(std::type_identity<CountMath<A>>{});
  }
  return f(std::type_identity<SumMath<A, SumTerm::value>>{});
}

// The kinds integer inputs take (sums and products wrap in int64; PyTorch refuses the mean, var,
// norm or logsumexp of integers too), and those bool inputs take.
BARACUDA_HD constexpr bool reduce_takes_integers(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::mean:
    case ReduceKind::var:
    case ReduceKind::std:
    case ReduceKind::var_mean:
    case ReduceKind::norm:
    case ReduceKind::logsumexp:
      return false;
    default:
      return true;
  }
}
BARACUDA_HD constexpr bool reduce_takes_bools(ReduceKind kind) {
  return kind == ReduceKind::any || kind == ReduceKind::all || kind == ReduceKind::count_nonzero;
}

// The kinds whose result is one of the elements (an ExtremeMath; none exists for an empty set).
BARACUDA_HD constexpr bool picks_element(ReduceKind kind, double p) {
  switch (kind) {
    case ReduceKind::amax:
    case ReduceKind::amin:
    case ReduceKind::max:
    case ReduceKind::min:
    case ReduceKind::argmax:
    case ReduceKind::argmin:
      return true;
    case ReduceKind::norm:
      return p == INFINITY || p == -INFINITY;
    default:
      return false;
  }
}

// The kinds whose outputs count (their value is exact in the index slot): count_nonzero, norm p = 0.
BARACUDA_HD constexpr bool counts(ReduceKind kind, double p) {
  return kind == ReduceKind::count_nonzero || (kind == ReduceKind::norm && p == 0.0);
}

// The backward's statistic of a kind, or none (sum, mean, max, min, finite-p norm and logsumexp read
// only the forward's outputs). Calls f(std::type_identity<Math>{}) or returns `none()`.
enum class ReduceStats : unsigned char { none, ties, zeros, moments };

BARACUDA_HD constexpr ReduceStats reduce_stats(ReduceKind kind, double p) {
  switch (kind) {
    case ReduceKind::amax:
    case ReduceKind::amin:
      return ReduceStats::ties;
    case ReduceKind::norm:
      return p == INFINITY || p == -INFINITY ? ReduceStats::ties : ReduceStats::none;
    case ReduceKind::prod:
      return ReduceStats::zeros;
    case ReduceKind::var:
    case ReduceKind::std:
    case ReduceKind::var_mean:
      return ReduceStats::moments;
    default:
      return ReduceStats::none;
  }
}

template <class A, class F>
decltype(auto) with_stats_math(const ReduceParams& prm, F&& f) {
  const bool abs = prm.kind == ReduceKind::norm;
  const bool max = prm.kind == ReduceKind::amax || (abs && prm.p > 0);
  switch (reduce_stats(prm.kind, prm.p)) {
    case ReduceStats::zeros:
      return f(std::type_identity<ZerosMath<A>>{});
    case ReduceStats::moments:
      return f(std::type_identity<VarMath<A>>{});
    case ReduceStats::ties:
    case ReduceStats::none:
      break;
  }
  if (abs)
    return max ? f(std::type_identity<TiesMath<A, true, true>>{}) : f(std::type_identity<TiesMath<A, false, true>>{});
  return max ? f(std::type_identity<TiesMath<A, true, false>>{}) : f(std::type_identity<TiesMath<A, false, false>>{});
}

// The kinds with a gradient (argmax, argmin, any, all, count_nonzero have none).
BARACUDA_HD constexpr bool differentiable(ReduceKind kind) {
  return kind != ReduceKind::argmax && kind != ReduceKind::argmin && kind != ReduceKind::any &&
         kind != ReduceKind::all && kind != ReduceKind::count_nonzero;
}

// One element of the gradient. `out` is the forward's output of its row (where the kind reads it;
// var_mean reads its mean's gradient dmean there instead, 0 where dmean is empty),
// `stat` the backward's statistic (the stats math's GradStat: ties: the extreme and how many attain
// it; zeros: the product of the nonzero elements and how many are zero; moments: the mean and what
// (x - mean) dout divides by), `mine` whether this element is the one `indices` names (max, min).
template <class A>
struct ReduceGrad {
  ReduceParams params;
  A p = 2, inv_count = 0;

  explicit ReduceGrad(const ReduceParams& prm)
      : params(prm), p(static_cast<A>(prm.p)), inv_count(A(1) / static_cast<A>(prm.count)) {}

  // The gradient's form of each kind: a kernel instantiated per form has no switch per element.
  enum class Form : unsigned char { scale, indexed, ties, zeros, moments, logsumexp, norm };
  BARACUDA_HD static Form form_of(ReduceKind kind) {
    switch (kind) {
      case ReduceKind::max:
      case ReduceKind::min:
        return Form::indexed;
      case ReduceKind::amax:
      case ReduceKind::amin:
        return Form::ties;
      case ReduceKind::prod:
        return Form::zeros;
      case ReduceKind::var:
      case ReduceKind::std:
      case ReduceKind::var_mean:
        return Form::moments;
      case ReduceKind::logsumexp:
        return Form::logsumexp;
      case ReduceKind::norm:
        return Form::norm;
      default:
        return Form::scale;
    }
  }

  template <Form kForm>
  BARACUDA_HD A apply(A x, A dout, A out, const GradStat<A>& stat, bool mine) const {
    if constexpr (kForm == Form::scale) return params.kind == ReduceKind::mean ? dout * inv_count : dout;
    if constexpr (kForm == Form::indexed) return mine ? dout : A(0);
    if constexpr (kForm == Form::ties) return x == stat.value ? dout / static_cast<A>(stat.count) : A(0);
    if constexpr (kForm == Form::zeros) {
      if (stat.count == 0) return dout * (stat.value / x);
      return stat.count == 1 && x == A(0) ? dout * stat.value : A(0);
    }
    if constexpr (kForm == Form::moments) {
      const A g = dout * (x - stat.value) / stat.scale;
      return params.kind == ReduceKind::var_mean ? g + out * inv_count : g;
    }
    if constexpr (kForm == Form::logsumexp) return x == -reduce_fn::inf<A>() ? A(0) : dout * reduce_fn::exp(x - out);
    if constexpr (kForm == Form::norm) return norm(x, dout, out, stat);
    return A(0);
  }
  // Calls f(std::integral_constant<Form, form>{}) with the kind's form.
  template <class F>
  static decltype(auto) with_form(ReduceKind kind, F&& f) {
    switch (form_of(kind)) {
      case Form::indexed:
        return f(std::integral_constant<Form, Form::indexed>{});
      case Form::ties:
        return f(std::integral_constant<Form, Form::ties>{});
      case Form::zeros:
        return f(std::integral_constant<Form, Form::zeros>{});
      case Form::moments:
        return f(std::integral_constant<Form, Form::moments>{});
      case Form::logsumexp:
        return f(std::integral_constant<Form, Form::logsumexp>{});
      case Form::norm:
        return f(std::integral_constant<Form, Form::norm>{});
      case Form::scale:
        break;
    }
    return f(std::integral_constant<Form, Form::scale>{});
  }
  BARACUDA_HD A norm(A x, A dout, A out, const GradStat<A>& stat) const {
    if (params.p == INFINITY || params.p == -INFINITY)
      return reduce_fn::abs(x) == stat.value ? dout * reduce_fn::sign(x) / static_cast<A>(stat.count) : A(0);
    if (params.p == 0.0 || out == A(0)) return A(0);
    if (params.p == 1.0) return dout * reduce_fn::sign(x);
    if (params.p == 2.0) return dout * x / out;
    return dout * reduce_fn::sign(x) * reduce_fn::pow(reduce_fn::abs(x) / out, p - A(1));
  }
};

}  // namespace baracuda::detail

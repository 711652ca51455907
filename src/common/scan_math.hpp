#pragma once
// The scans' formulas, once for both backends. A scan folds its elements in order with a Math of
// src/common/reduce_math.hpp (identity / fold / combine / finish; combine(a, b): a's elements come
// first), and writes finish() of the state after each element: cumsum is SumMath, cumprod ProdMath,
// logcumsumexp LogSumExpMath, and cummax / cummin ScanExtremeMath below (PyTorch's ties: the later
// element wins).
//
// Every backward is one reversed scan of an affine map, s[i] = b[i] + a[i] s[next], and
// dx[i] = c[i] s[i] (ScanGrad gives a, b, c from the views at i and its neighbours): compositions of
// affine maps are associative, so the same kernels scan them, with no division (cumprod's gradient
// is exact with zeros) and factors a <= 1 for logcumsumexp (no overflow).
#include "baracuda/ops/scan_kind.hpp"
#include "common/reduce_math.hpp"

namespace baracuda::detail {

// cummax (kMax) and cummin: the extreme so far and its index; a NaN beats every number, and on a tie
// (two NaNs included) the later element wins (torch.cummax's >=). index < 0: no element yet.
template <class A, bool kMax>
struct ScanExtremeMath {
  using Acc = A;
  static constexpr bool kIndexed = true;  // the scans write the state's index beside its value
  struct State {
    A value;
    int64_t index;
  };
  BARACUDA_HD explicit ScanExtremeMath(const ReduceParams&) {}
  // Whether b, coming after a, takes its place.
  BARACUDA_HD static bool later_wins(A a, A b) {
    if (reduce_fn::isnan(b)) return true;
    if (reduce_fn::isnan(a)) return false;
    return kMax ? b >= a : b <= a;
  }
  BARACUDA_HD State identity() const { return {kMax ? -reduce_fn::inf<A>() : reduce_fn::inf<A>(), -1}; }
  BARACUDA_HD void fold(State& s, A x, int64_t i) const {
    if (s.index < 0 || later_wins(s.value, x)) s = {x, i};
  }
  BARACUDA_HD State combine(const State& a, const State& b) const {
    if (b.index < 0) return a;
    if (a.index < 0) return b;
    return later_wins(a.value, b.value) ? b : a;
  }
  BARACUDA_HD ReduceValue<A> finish(const State& s) const { return {s.value, s.index}; }
};

// The backward's affine maps s -> b + a s. A state is the composition of the elements folded so far
// (applied in fold order), whose value at s = 0 is b.
template <class A>
struct AffineMath {
  using Acc = A;
  struct State {
    A a;
    A b;
  };
  BARACUDA_HD State identity() const { return {A(1), A(0)}; }
  BARACUDA_HD void fold(State& s, const State& e) const { s = combine(s, e); }
  // A factor of 0 cuts the line: nothing before it reaches past it, not even a NaN or an inf
  // (cummax's runs of one index; cumprod past a zero).
  BARACUDA_HD State combine(const State& first, const State& second) const {
    // (the identity first: second's a times its b = 0 would be NaN for an infinite a)
    if (second.a == A(0) || (first.a == A(1) && first.b == A(0))) return second;
    return {reduce_fn::mul(second.a, first.a), second.b + reduce_fn::mul(second.a, first.b)};
  }
};

// Calls f(std::type_identity<Math>{}) with the forward math of the kind (compute type A). An
// integer A takes cumsum alone (the others' maths are not compiled for it).
template <class A, class F>
decltype(auto) with_scan_math(ScanKind kind, F&& f) {
  if constexpr (!std::is_integral_v<A>) {
    switch (kind) {
      case ScanKind::cumprod:
        return f(std::type_identity<ProdMath<A>>{});
      case ScanKind::cummax:
        return f(std::type_identity<ScanExtremeMath<A, true>>{});
      case ScanKind::cummin:
        return f(std::type_identity<ScanExtremeMath<A, false>>{});
      case ScanKind::logcumsumexp:
        return f(std::type_identity<LogSumExpMath<A>>{});
      case ScanKind::cumsum:
        break;
    }
  }
  return f(std::type_identity<SumMath<A, SumTerm::value>>{});
}

// What the backward reads at an element i besides dout[i]: the views at i, at `next` (the element
// after i in the forward's order) and at `prev` (before it). has_next / has_prev: they exist.
template <class A>
struct ScanGradInput {
  A dout = 0;
  A x = 0, x_next = 0;
  A out = 0, out_next = 0, out_prev = 1;
  int64_t index = 0, index_next = 0;  // cummax / cummin: the forward's indices
  int64_t i = 0;                      // i's index along the dim
  bool has_next = false;
};

// One element's affine map (a multiplies the state of `next`) and the factor c of dx[i] = c s[i].
struct ScanGrad {
  template <class A>
  BARACUDA_HD static void element(ScanKind kind, const ScanGradInput<A>& in, typename AffineMath<A>::State& e, A& c) {
    e.b = in.dout;
    c = A(1);
    A a = A(1);
    switch (kind) {
      case ScanKind::cumsum:
        break;
      case ScanKind::cumprod:
        a = in.x_next;
        c = in.out_prev;
        break;
      case ScanKind::cummax:
      case ScanKind::cummin:
        a = in.index_next == in.index ? A(1) : A(0);
        c = in.index == in.i ? A(1) : A(0);
        break;
      case ScanKind::logcumsumexp:
        // out[i] <= out[next]: exp of a difference <= 0 (equal infinities: 1; a NaN: NaN).
        a = in.out_next == in.out ? A(1) : reduce_fn::exp(in.out - in.out_next);
        c = in.x == -reduce_fn::inf<A>() ? A(0) : reduce_fn::exp(in.x - in.out);
        break;
    }
    e.a = in.has_next ? a : A(0);  // the first map of the reversed scan: nothing after it
  }
};

}  // namespace baracuda::detail

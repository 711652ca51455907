// The CPU kernels of the cross-entropy plans: rows in parallel, each row by one thread in a fixed
// order (so its bits never depend on the thread count or the other rows). A row is two passes over
// its logits: the max (and, with label smoothing, the sum of w_c x_c), then the sum of exp(x - max),
// each folded into kLanes independent sums in a fixed order, which the compiler vectorizes the same
// way on every ISA. The sum and mean reductions add the rows' terms in row order afterwards.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "common/convert.hpp"
#include "common/dispatch.hpp"
#include "common/simd_math.hpp"
#include "cpu/parallel.hpp"
#include "cpu/vector_math.hpp"
#include "cuda/device/cross_entropy.h"
#include "ops/loss_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

constexpr int kLanes = kSumLanes;  // (vector_math.hpp's lanes_sum folds them)

// What a row's passes return: the max, the sum of exp(x - max) and the sum of w_c x_c.
template <class A>
struct RowStats {
  A max, sum, weighted_logits;
};

// A row of n logits `step` apart (kUnit: step 1), its weights `wstep` apart (null: 1, read only
// with `smoothing`).
template <class A, class T, class W, bool kUnit>
BARACUDA_CPU_CLONES RowStats<A> row_stats(const T* x, int64_t n, int64_t step, const W* w, int64_t wstep,
                                          bool smoothing) {
  auto at = [&](int64_t j) { return convert<A>(x[kUnit ? j : j * step]); };
  const int64_t body = n - n % kLanes;
  A max_lane[kLanes], wx_lane[kLanes];
  for (int u = 0; u < kLanes; ++u) max_lane[u] = device::loss_minus_infinity<A>(), wx_lane[u] = A(0);
  for (int64_t i = 0; i < body; i += kLanes)
#pragma omp simd
    for (int u = 0; u < kLanes; ++u) {
      const A v = at(i + u);
      max_lane[u] = v > max_lane[u] ? v : max_lane[u];
    }
  for (int64_t i = body; i < n; ++i) {
    const A v = at(i);
    max_lane[i - body] = v > max_lane[i - body] ? v : max_lane[i - body];
  }
  A max = max_lane[0];
  for (int u = 1; u < kLanes; ++u) max = max_lane[u] > max ? max_lane[u] : max;
  if (smoothing) {
    for (int64_t j = 0; j < n; ++j) wx_lane[j % kLanes] += (w ? convert<A>(w[j * wstep]) : A(1)) * at(j);
  }
  // exp(x - base): base is 0 where every value is -inf (whose exps are then exactly 0); a NaN value
  // (the max ignores it) or a +inf max makes the sum NaN, as PyTorch's log_softmax.
  const A base = max == device::loss_minus_infinity<A>() ? A(0) : max;
  A sum_lane[kLanes] = {};
  for (int64_t i = 0; i < body; i += kLanes)
#pragma omp simd
    for (int u = 0; u < kLanes; ++u) sum_lane[u] += simd_math::exp_nonpositive(at(i + u) - base);
  for (int64_t i = body; i < n; ++i) sum_lane[i - body] += simd_math::exp_nonpositive(at(i) - base);
  return {max, lanes_sum(sum_lane), lanes_sum(wx_lane)};
}

// A soft-target row's sums, kLanes at a time in a fixed order: the target mass sum_c w_c y_c and
// sum_c w_c y_c x_c (a class of w_c y_c = 0 left out: a -inf logit there adds nothing).
template <class A>
struct SoftSums {
  A target_mass, target_logits;
};
template <class A, class T, class W, bool kUnit>
BARACUDA_CPU_CLONES SoftSums<A> soft_row_sums(const T* x, const T* y, int64_t n, int64_t step, int64_t ystep,
                                              const W* w, int64_t wstep, bool read_x) {
  A m_lane[kLanes] = {}, mx_lane[kLanes] = {};
  auto add = [&](int u, int64_t j) {
    const A wy = (w ? convert<A>(w[j * wstep]) : A(1)) * convert<A>(y[kUnit ? j : j * ystep]);
    m_lane[u] += wy;
    if (read_x) mx_lane[u] += wy != A(0) ? wy * convert<A>(x[kUnit ? j : j * step]) : A(0);
  };
  const int64_t body = n - n % kLanes;
  for (int64_t i = 0; i < body; i += kLanes)
#pragma omp simd
    for (int u = 0; u < kLanes; ++u) add(u, i + u);
  for (int64_t i = body; i < n; ++i) add(static_cast<int>(i - body), i);
  return {lanes_sum(m_lane), lanes_sum(mx_lane)};
}

// The sum of the weights (W) in order, or C without a weight.
template <class A, class W>
A weight_total(const W* w, int64_t classes, int64_t wstep) {
  if (!w) return static_cast<A>(classes);
  A total = 0;
  for (int64_t c = 0; c < classes; ++c) total += convert<A>(w[c * wstep]);
  return total;
}

// Whether a target counts: not ignore_index, and in [0, C) (else bad: counted into `bad`).
template <class I>
bool target_counts(I t, int64_t ignore_index, int64_t classes, int64_t& bad) {
  if (static_cast<int64_t>(t) == ignore_index) return false;
  if (t < 0 || static_cast<int64_t>(t) >= classes) {
    ++bad;
    return false;
  }
  return true;
}

// Rows in parallel, each its max, sum of exps and smoothing sum (row_stats), then its target's terms
// (soft targets: its target sums, soft_row_sums).
template <class T, class W, class I, bool kUnit>
Status forward(const CrossEntropyForwardProblem& p, void* scratch) {
  using A = acc_t<T>;
  const LossGeometry& g = p.geometry;
  const CrossEntropyArgs& a = p.args;
  const CrossEntropyDescriptor& d = p.desc;
  const T* logits = static_cast<const T*>(a.logits.data);
  // class indices, or with soft_targets probabilities of the logits' dtype
  const I* targets = d.soft_targets ? nullptr : static_cast<const I*>(a.targets.data);
  const T* soft = d.soft_targets ? static_cast<const T*>(a.targets.data) : nullptr;
  const W* w = d.has_weight ? static_cast<const W*>(a.weight.data) : nullptr;
  const int64_t wstep = w ? a.weight.strides[0] : 0;
  const bool none = d.reduction == LossReduction::none, smoothing = d.label_smoothing != 0;
  T* loss = static_cast<T*>(a.loss.data);
  A* lse_out = static_cast<A*>(a.lse.data);
  const A e = static_cast<A>(d.label_smoothing), z = static_cast<A>(d.z_loss), classes = static_cast<A>(g.classes);
  const A weights = weight_total<A>(w, g.classes, wstep);
  A* terms = static_cast<A*>(scratch);  // sum, mean: [rows][kTermCount], the plan's workspace
  int64_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad) if (g.rows * g.classes > kParallelThreshold)
  for (int64_t row = 0; row < g.rows; ++row) {
    int64_t off[kLossRowTensors];
    g.row.offsets(row, off);
    const T* x = logits + off[0];
    // log_probs (F.nll_loss): the row is not read, lse is 0.
    const RowStats<A> s = d.log_probs ? RowStats<A>{A(0), A(1), A(0)}
                                      : row_stats<A, T, W, kUnit>(x, g.classes, g.class_stride, w, wstep, smoothing);
    const A base = s.max == device::loss_minus_infinity<A>() ? A(0) : s.max;
    const A lse = base + std::log(s.sum);
    if (lse_out) lse_out[off[4]] = lse;
    device::CrossEntropyTerms<A> r{A(0), A(0), A(0), A(0)};
    if (soft) {
      const SoftSums<A> m = soft_row_sums<A, T, W, kUnit>(x, soft + off[2], g.classes, g.class_stride,
                                                          g.target_class_stride, w, wstep, true);
      r = device::soft_row_terms<A>(lse, m.target_mass, m.target_logits, s.weighted_logits, weights, e, classes, z);
    } else if (const I t = targets[off[2]]; target_counts(t, d.ignore_index, g.classes, bad)) {
      const int64_t c = static_cast<int64_t>(t);
      r = device::row_terms<A>(lse, convert<A>(x[c * g.class_stride]), w ? convert<A>(w[c * wstep]) : A(1),
                               s.weighted_logits, weights, e, classes, z);
    }
    if (none) {
      loss[off[3]] = convert<T>(r.ce + r.z);
    } else {
      A* to = terms + row * device::kTermCount;
      to[device::kTermCe] = r.ce, to[device::kTermZ] = r.z, to[device::kTermWeight] = r.weight,
      to[device::kTermCounted] = r.counted;
    }
  }
  if (!none) {
    A sums[device::kTermCount] = {};
    for (int64_t row = 0; row < g.rows; ++row)
      for (int k = 0; k < device::kTermCount; ++k) sums[k] += terms[row * device::kTermCount + k];
    *loss =
        convert<T>(device::reduced_loss<A>(static_cast<int>(d.reduction), sums[device::kTermCe], sums[device::kTermZ],
                                           sums[device::kTermWeight], sums[device::kTermCounted], d.z_loss != 0));
  }
  if (p.args.bad_index_count) *p.args.bad_index_count += bad;
  return Status::ok();
}

// A counted row's gradient without its target term: dx_c = exp(x_c - lse) * scale - class_term * w_c
// (w null: 1), in the widest vectors the host has. x may be dx itself (each element read, then
// written).
template <class A, class T, class W, bool kUnit>
BARACUDA_CPU_CLONES void row_gradient_values(const T* x, T* dx, int64_t n, int64_t step, int64_t dstep, const W* w,
                                             int64_t wstep, A lse, A scale, A class_term) {
  if (w) {
    for (int64_t c = 0; c < n; ++c)
      dx[kUnit ? c : c * dstep] =
          convert<T>(simd_math::exp_nonpositive(convert<A>(x[kUnit ? c : c * step]) - lse) * scale -
                     class_term * convert<A>(w[c * wstep]));
    return;
  }
#pragma omp simd
  for (int64_t c = 0; c < n; ++c)
    dx[kUnit ? c : c * dstep] =
        convert<T>(simd_math::exp_nonpositive(convert<A>(x[kUnit ? c : c * step]) - lse) * scale - class_term);
}

// A soft-target row's gradient: dx_c = exp(x_c - lse) * scale - g q_c. x may be dx itself.
template <class A, class T, class W, bool kUnit>
BARACUDA_CPU_CLONES void soft_gradient_values(const T* x, const T* y, T* dx, int64_t n, int64_t step, int64_t ystep,
                                              int64_t dstep, const W* w, int64_t wstep, A lse, A scale, A g, A e,
                                              A classes) {
  for (int64_t c = 0; c < n; ++c) {
    const A q = device::soft_target_share<A>(convert<A>(y[kUnit ? c : c * ystep]), w ? convert<A>(w[c * wstep]) : A(1),
                                             e, classes);
    dx[kUnit ? c : c * dstep] =
        convert<T>(simd_math::exp_nonpositive(convert<A>(x[kUnit ? c : c * step]) - lse) * scale - g * q);
  }
}

template <class T, class W, class I, bool kUnit>
Status backward(const CrossEntropyBackwardProblem& p) {
  using A = acc_t<T>;
  const LossGeometry& g = p.geometry;
  const CrossEntropyBackwardArgs& a = p.args;
  const CrossEntropyDescriptor& d = p.desc;
  const T* logits = static_cast<const T*>(a.logits.data);
  T* dlogits = static_cast<T*>(a.dlogits.data);
  // class indices, or with soft_targets probabilities of the logits' dtype
  const I* targets = d.soft_targets ? nullptr : static_cast<const I*>(a.targets.data);
  const T* soft = d.soft_targets ? static_cast<const T*>(a.targets.data) : nullptr;
  const A* lse_in = static_cast<const A*>(a.lse.data);
  const T* dloss = static_cast<const T*>(a.dloss.data);
  const W* w = d.has_weight ? static_cast<const W*>(a.weight.data) : nullptr;
  const int64_t wstep = w ? a.weight.strides[0] : 0;
  const bool none = d.reduction == LossReduction::none, mean = d.reduction == LossReduction::mean;
  const A e = static_cast<A>(d.label_smoothing), z = static_cast<A>(d.z_loss), classes = static_cast<A>(g.classes);
  const A weights = weight_total<A>(w, g.classes, wstep);
  // The mean's divisors: the targets' weights and the rows counted, summed in row order (soft
  // targets: every row counts, the rows divide both).
  A g_ce = none ? A(0) : convert<A>(dloss[0]), g_z = g_ce;
  int64_t bad = 0;
  if (mean && soft) {
    g_ce /= static_cast<A>(g.rows);
    g_z = g_ce;
  } else if (mean) {
    A weight_sum = 0, counted = 0;
    int64_t unused = 0;
    for (int64_t row = 0; row < g.rows; ++row) {
      int64_t off[kLossRowTensors];
      g.row.offsets(row, off);
      const I t = targets[off[2]];
      if (!target_counts(t, d.ignore_index, g.classes, unused)) continue;
      weight_sum += w ? convert<A>(w[static_cast<int64_t>(t) * wstep]) : A(1);
      counted += 1;
    }
    g_ce /= weight_sum;
    g_z /= counted;
  }
#pragma omp parallel for schedule(static) reduction(+ : bad) if (g.rows * g.classes > kParallelThreshold)
  for (int64_t row = 0; row < g.rows; ++row) {
    int64_t off[kLossRowTensors];
    g.row.offsets(row, off);
    T* dx = dlogits + off[1];
    if (soft) {
      const T* y = soft + off[2];
      const A gr = none ? convert<A>(dloss[off[3]]) : g_ce, lse = lse_in[off[4]];
      const SoftSums<A> m =
          soft_row_sums<A, T, W, kUnit>(nullptr, y, g.classes, g.class_stride, g.target_class_stride, w, wstep, false);
      const device::CrossEntropyGradient<A> k =
          device::soft_row_gradient<A>(lse, m.target_mass, weights, e, classes, z, gr, gr);
      soft_gradient_values<A, T, W, kUnit>(logits + off[0], y, dx, g.classes, g.class_stride, g.target_class_stride,
                                           g.dclass_stride, w, wstep, lse, k.scale, k.class_term, e, classes);
      continue;
    }
    const I t = targets[off[2]];
    if (!target_counts(t, d.ignore_index, g.classes, bad)) {
      for (int64_t c = 0; c < g.classes; ++c) dx[kUnit ? c : c * g.dclass_stride] = convert<T>(A(0));
      continue;
    }
    const A gr = none ? convert<A>(dloss[off[3]]) : g_ce, gz = none ? gr : g_z;
    if (d.log_probs) {  // F.nll_loss: -g w_t at the target, 0 elsewhere; x is not read
      const int64_t tc = static_cast<int64_t>(t);
      for (int64_t c = 0; c < g.classes; ++c) dx[kUnit ? c : c * g.dclass_stride] = convert<T>(A(0));
      dx[tc * g.dclass_stride] = convert<T>(A(0) - gr * (w ? convert<A>(w[tc * wstep]) : A(1)));
      continue;
    }
    const T* x = logits + off[0];
    const A lse = lse_in[off[4]];
    const device::CrossEntropyGradient<A> k =
        device::row_gradient<A>(lse, w ? convert<A>(w[t * wstep]) : A(1), weights, e, classes, z, gr, gz);
    // The target's element first: dlogits may be the logits, whose x_t the loop overwrites.
    const int64_t tc = static_cast<int64_t>(t);
    const A w_t = w ? convert<A>(w[tc * wstep]) : A(1);
    const A d_t =
        simd_math::exp(convert<A>(x[tc * g.class_stride]) - lse) * k.scale - k.target_term - k.class_term * w_t;
    row_gradient_values<A, T, W, kUnit>(x, dx, g.classes, g.class_stride, g.dclass_stride, w, wstep, lse, k.scale,
                                        k.class_term);
    dx[tc * g.dclass_stride] = convert<T>(d_t);
  }
  if (p.args.bad_index_count) *p.args.bad_index_count += bad;
  return Status::ok();
}

// Calls f(T, W, I) for the problem's dtypes (W is T or f32) and index dtype.
template <class Problem, class F>
Status dispatch(const Problem& p, F&& f) {
  return dispatch_float<half, bfloat16>(p.desc.dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    return dispatch_index(p.desc.index_dtype, [&](auto i) {
      if (p.weight_dtype == DType::f32 && !std::is_same_v<T, float>) return f(t, std::type_identity<float>{}, i);
      return f(t, t, i);
    });
  });
}

}  // namespace

Status launch(const LaunchContext& ctx, const CrossEntropyForwardProblem& p) {
  const bool unit = p.geometry.class_stride == 1 && (!p.desc.soft_targets || p.geometry.target_class_stride == 1);
  return dispatch(p, [&](auto t, auto w, auto i) {
    using T = typename decltype(t)::type;
    using W = typename decltype(w)::type;
    using I = typename decltype(i)::type;
    return unit ? forward<T, W, I, true>(p, ctx.workspace.data) : forward<T, W, I, false>(p, ctx.workspace.data);
  });
}

Status launch(const LaunchContext&, const CrossEntropyBackwardProblem& p) {
  const bool unit = p.geometry.class_stride == 1 && p.geometry.dclass_stride == 1 &&
                    (!p.desc.soft_targets || p.geometry.target_class_stride == 1);
  return dispatch(p, [&](auto t, auto w, auto i) {
    using T = typename decltype(t)::type;
    using W = typename decltype(w)::type;
    using I = typename decltype(i)::type;
    return unit ? backward<T, W, I, true>(p) : backward<T, W, I, false>(p);
  });
}

}  // namespace baracuda::detail::cpu

#pragma once
// The cross-entropy plans' formulas (include/baracuda/ops/loss.hpp), once for both backends: plain
// C++ that the host compiler (src/cpu/loss.cpp) and NVRTC (cuda/device/loss.cuh) both read. A row
// is reduced to a CrossEntropyRow (its running max and sum of exps, and the sums label smoothing
// needs), pieces of a row merge in any fixed order, and the finished row gives its loss terms and
// its gradient's coefficients. exp is the caller's (each backend has its fast one).
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define BARACUDA_LOSS_FN __host__ __device__ __forceinline__
#else
#define BARACUDA_LOSS_FN inline
#endif

namespace baracuda::device {

// The reductions, as CrossEntropyParams::reduction holds them (LossReduction's order).
enum : int { kReduceNone = 0, kReduceSum = 1, kReduceMean = 2 };

// What the sum and mean reductions add up per row (the workspace's [rows][kTermCount]).
enum : int { kTermCe = 0, kTermZ = 1, kTermWeight = 2, kTermCounted = 3, kTermCount = 4 };

template <class A>
BARACUDA_LOSS_FN A loss_minus_infinity() {
#if defined(__CUDA_ARCH__)
  if (sizeof(A) == 4) return static_cast<A>(-__int_as_float(0x7f800000));
  return static_cast<A>(-__longlong_as_double(0x7ff0000000000000LL));
#else
  return static_cast<A>(-__builtin_huge_val());
#endif
}

// A piece of a row: the max m of its logits, the sum s of exp(x - m) (exactly 0 where every x is
// -inf), for label smoothing the sum of w_c x_c and of w_c (w = 1 without a weight), and for soft
// targets y the sums of w_c y_c and of w_c y_c x_c (a class of w_c y_c = 0 left out). (Soft targets'
// shares q_c = w_c ((1 - e) y_c + e / C) are summed as these parts, never as q_c: a sum of C copies
// of e / C drifts by a part in 10^4 in f32.)
template <class A>
struct CrossEntropyRow {
  A max, sum, weighted_logits, weights, target_mass, target_logits;
};
// The values of a CrossEntropyRow, as the CUDA workspace keeps a chunk's piece.
enum : int { kRowValues = 6 };

template <class A>
BARACUDA_LOSS_FN CrossEntropyRow<A> empty_row() {
  return {loss_minus_infinity<A>(), A(0), A(0), A(0), A(0), A(0)};
}

// exp(v - max) for v <= max, with a -inf v contributing exactly 0 (even when max is -inf too).
template <class A, class Exp>
BARACUDA_LOSS_FN A rescale(A v, A max, Exp exp) {
  return v == loss_minus_infinity<A>() ? A(0) : exp(v - max);
}

// Two pieces of a row as one: commutative bit for bit (a max, then two products and one sum), so a
// butterfly leaves the same bits in every lane.
template <class A, class Exp>
BARACUDA_LOSS_FN CrossEntropyRow<A> merge_rows(const CrossEntropyRow<A>& a, const CrossEntropyRow<A>& b, Exp exp) {
  const A max = a.max > b.max ? a.max : b.max;
  // (A NaN max: neither compare holds; the NaN sums carry it.)
  const A m = a.max != a.max ? a.max : (b.max != b.max ? b.max : max);
  return {m,
          a.sum * rescale(a.max, m, exp) + b.sum * rescale(b.max, m, exp),
          a.weighted_logits + b.weighted_logits,
          a.weights + b.weights,
          a.target_mass + b.target_mass,
          a.target_logits + b.target_logits};
}

// What a finished row contributes: its ce and z-loss terms, the weight of its target, and whether it
// counts (a target in [0, C) other than ignore_index).
template <class A>
struct CrossEntropyTerms {
  A ce, z, weight, counted;
};

// The row's terms from its lse, its target's logit x_t and weight w_t; smoothing e over C classes;
// weighted_logits = sum_c w_c x_c and weights = W = sum_c w_c (read when e > 0).
template <class A>
BARACUDA_LOSS_FN CrossEntropyTerms<A> row_terms(A lse, A x_t, A w_t, A weighted_logits, A weights, A smoothing,
                                                A classes, A z) {
  A ce = (A(1) - smoothing) * w_t * (lse - x_t);
  if (smoothing != A(0)) ce += smoothing / classes * (weights * lse - weighted_logits);
  return {ce, z != A(0) ? z * lse * lse : A(0), w_t, A(1)};
}

// Soft targets: q_c = w_c ((1 - e) y_c + e / C), the class's share of the row's loss.
template <class A>
BARACUDA_LOSS_FN A soft_target_share(A y, A w, A smoothing, A classes) {
  return w * ((A(1) - smoothing) * y + smoothing / classes);
}

// A soft-target row's terms: ce = sum_c q_c (lse - x_c) = (1 - e) (M lse - sum_c w_c y_c x_c)
// + (e / C) (W lse - sum_c w_c x_c), M = target_mass = sum_c w_c y_c; every row counts once (the mean
// divides by the rows).
template <class A>
BARACUDA_LOSS_FN CrossEntropyTerms<A> soft_row_terms(A lse, A target_mass, A target_logits, A weighted_logits,
                                                     A weights, A smoothing, A classes, A z) {
  A ce = (A(1) - smoothing) * (target_mass * lse - target_logits);
  if (smoothing != A(0)) ce += smoothing / classes * (weights * lse - weighted_logits);
  return {ce, z != A(0) ? z * lse * lse : A(0), A(1), A(1)};
}

// The gradient of a row: dlogits_c = p_c * scale - (c == t ? target_term : 0) - class_term * w_c,
// p_c = exp(x_c - lse); g scales the ce terms, g_z the z-loss (their reductions' factors applied).
template <class A>
struct CrossEntropyGradient {
  A scale, target_term, class_term;
};
template <class A>
BARACUDA_LOSS_FN CrossEntropyGradient<A> row_gradient(A lse, A w_t, A weights, A smoothing, A classes, A z, A g,
                                                      A g_z) {
  const A smooth = smoothing / classes;
  A scale = g * ((A(1) - smoothing) * w_t + smooth * weights);
  if (z != A(0)) scale += g_z * A(2) * z * lse;
  return {scale, g * (A(1) - smoothing) * w_t, g * smooth};
}

// A soft-target row's gradient: dlogits_c = p_c * scale - q_c * g (as row_gradient's class_term,
// with q_c in place of w_c), Q = sum_c q_c = (1 - e) M + (e / C) W from the row's target mass M.
template <class A>
BARACUDA_LOSS_FN CrossEntropyGradient<A> soft_row_gradient(A lse, A target_mass, A weights, A smoothing, A classes, A z,
                                                           A g, A g_z) {
  A scale = g * ((A(1) - smoothing) * target_mass + smoothing / classes * weights);
  if (z != A(0)) scale += g_z * A(2) * z * lse;
  return {scale, A(0), g};
}

// The reduced loss from the rows' summed terms: sum, or the mean (ce over the targets' weights, the
// z-loss over the rows counted; 0 / 0 = NaN where none is).
template <class A>
BARACUDA_LOSS_FN A reduced_loss(int reduction, A ce, A z, A weight, A counted, bool has_z) {
  if (reduction == kReduceSum) return ce + z;
  const A mean = ce / weight;
  return has_z ? mean + z / counted : mean;
}

}  // namespace baracuda::device

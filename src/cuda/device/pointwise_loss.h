#pragma once
// The pointwise losses' formulas (include/baracuda/ops/loss.hpp), once for both backends: plain C++
// that the host compiler (cpu/pointwise_loss.cpp) and NVRTC (cuda/device/pointwise_loss.cuh) both
// read. A is the compute type (float or double).
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define BARACUDA_PLOSS_FN __host__ __device__ __forceinline__
#else
#include <math.h>
#define BARACUDA_PLOSS_FN inline
#endif

#include "cuda/device/cross_entropy.h"  // the reductions' numbers (kReduceNone, ...)

namespace baracuda::device {

// PointwiseLossKind's order.
enum : int { kMse = 0, kL1 = 1, kSmoothL1 = 2, kHuber = 3, kBce = 4, kBceWithLogits = 5, kKlDiv = 6 };

BARACUDA_PLOSS_FN float ploss_log(float v) { return logf(v); }
BARACUDA_PLOSS_FN double ploss_log(double v) { return log(v); }
BARACUDA_PLOSS_FN float ploss_log1p(float v) { return log1pf(v); }
BARACUDA_PLOSS_FN double ploss_log1p(double v) { return log1p(v); }
BARACUDA_PLOSS_FN float ploss_exp(float v) { return expf(v); }
BARACUDA_PLOSS_FN double ploss_exp(double v) { return exp(v); }

template <class A>
BARACUDA_PLOSS_FN A ploss_abs(A v) {
  return v < A(0) ? -v : v;
}
// sign(v), 0 at 0 and at NaN (PyTorch's sign(NaN) in l1_loss's gradient).
template <class A>
BARACUDA_PLOSS_FN A ploss_sign(A v) {
  return v > A(0) ? A(1) : v < A(0) ? A(-1) : A(0);
}

// The loss of one element: input x, target y; beta is smooth_l1's beta or huber's delta.
template <class A>
BARACUDA_PLOSS_FN A pointwise_loss(int kind, A x, A y, A beta, bool log_target) {
  const A d = x - y, a = ploss_abs(d);
  switch (kind) {
    case kMse:
      return d * d;
    case kL1:
      return a;
    case kSmoothL1:
      return beta == A(0) ? a : a < beta ? A(0.5) * d * d / beta : a - A(0.5) * beta;
    case kHuber:
      return a < beta ? A(0.5) * d * d : beta * (a - A(0.5) * beta);
    case kBce: {
      // PyTorch clamps each log at -100, so x = 0 or 1 gives a finite loss.
      A lx = ploss_log(x), l1x = ploss_log1p(-x);  // (log1p: exact for x near 0, as PyTorch)
      lx = lx < A(-100) ? A(-100) : lx;
      l1x = l1x < A(-100) ? A(-100) : l1x;
      return -(y * lx + (A(1) - y) * l1x);
    }
    case kBceWithLogits:
      return (x > A(0) ? x : A(0)) - x * y + ploss_log1p(ploss_exp(-ploss_abs(x)));
    default:  // kKlDiv
      if (log_target) return ploss_exp(y) * (y - x);
      return (y == A(0) ? A(0) : y * ploss_log(y)) - y * x;  // PyTorch's xlogy(y, y) - y x
  }
}

// bce_with_logits with a pos_weight pw (PyTorch's form): (1 - y) x + lw (log1p(exp(-|x|)) + max(-x, 0)),
// lw = 1 + (pw - 1) y; and its d / dx, (1 - y) - lw sigmoid(-x) (sigmoid(-x) = 1 / (1 + exp(x)): 0,
// not NaN, where exp(x) overflows).
template <class A>
BARACUDA_PLOSS_FN A bce_with_logits_pos(A x, A y, A pw) {
  const A lw = A(1) + (pw - A(1)) * y;
  return (A(1) - y) * x + lw * (ploss_log1p(ploss_exp(-ploss_abs(x))) + (x < A(0) ? -x : A(0)));
}
template <class A>
BARACUDA_PLOSS_FN A bce_with_logits_pos_gradient(A x, A y, A pw) {
  const A lw = A(1) + (pw - A(1)) * y;
  return (A(1) - y) - lw / (A(1) + ploss_exp(x));
}

// d loss / d x of one element.
template <class A>
BARACUDA_PLOSS_FN A pointwise_loss_gradient(int kind, A x, A y, A beta, bool log_target) {
  const A d = x - y, a = ploss_abs(d);
  switch (kind) {
    case kMse:
      return A(2) * d;
    case kL1:
      return ploss_sign(d);
    case kSmoothL1:
      return beta == A(0) ? ploss_sign(d) : a < beta ? d / beta : ploss_sign(d);
    case kHuber:
      return a < beta ? d : beta * ploss_sign(d);
    case kBce: {
      const A denom = x * (A(1) - x);
      return d / (denom > A(1e-12) ? denom : A(1e-12));
    }
    case kBceWithLogits:
      return A(1) / (A(1) + ploss_exp(-x)) - y;
    default:  // kKlDiv
      return log_target ? -ploss_exp(y) : -y;
  }
}

}  // namespace baracuda::device

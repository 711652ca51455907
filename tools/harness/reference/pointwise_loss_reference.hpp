#pragma once
// Naive double-precision references of the pointwise loss plans, independent of both backends: each
// element's loss and gradient written out as include/baracuda/ops/loss.hpp defines them, the
// reductions in f64.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "baracuda/ops/loss.hpp"
#include "harness/op_table.hpp"

namespace baracuda::reference {

inline double pointwise_loss_value(const PointwiseLossDescriptor& d, double x, double y) {
  const double diff = x - y, a = std::fabs(diff), beta = d.beta;
  switch (d.kind) {
    case PointwiseLossKind::mse:
      return diff * diff;
    case PointwiseLossKind::l1:
      return a;
    case PointwiseLossKind::smooth_l1:
      if (beta == 0) return a;
      return a < beta ? 0.5 * diff * diff / beta : a - 0.5 * beta;
    case PointwiseLossKind::huber:
      return a < beta ? 0.5 * diff * diff : beta * (a - 0.5 * beta);
    case PointwiseLossKind::bce:
      return -(y * std::max(std::log(x), -100.0) + (1 - y) * std::max(std::log1p(-x), -100.0));
    case PointwiseLossKind::bce_with_logits:
      return (1 - y) * x + std::log1p(std::exp(-x));  // (the inputs here stay small)
    case PointwiseLossKind::kl_div:
      if (d.log_target) return std::exp(y) * (y - x);
      return (y == 0 ? 0.0 : y * std::log(y)) - y * x;
  }
  return std::nan("");
}

inline double pointwise_loss_derivative(const PointwiseLossDescriptor& d, double x, double y) {
  const double diff = x - y, a = std::fabs(diff), beta = d.beta;
  const double sign = diff > 0 ? 1.0 : diff < 0 ? -1.0 : 0.0;
  switch (d.kind) {
    case PointwiseLossKind::mse:
      return 2 * diff;
    case PointwiseLossKind::l1:
      return sign;
    case PointwiseLossKind::smooth_l1:
      return beta == 0 ? sign : a < beta ? diff / beta : sign;
    case PointwiseLossKind::huber:
      return a < beta ? diff : beta * sign;
    case PointwiseLossKind::bce:
      return diff / std::max(x * (1 - x), 1e-12);
    case PointwiseLossKind::bce_with_logits:
      return 1 / (1 + std::exp(-x)) - y;
    case PointwiseLossKind::kl_div:
      return d.log_target ? -std::exp(y) : -y;
  }
  return std::nan("");
}

// PyTorch's bce_with_logits with a pos_weight p, and its derivative.
inline double bce_with_logits_pos_value(double x, double y, double p) {
  return (1 - y) * x + (1 + (p - 1) * y) * (std::log1p(std::exp(-std::fabs(x))) + std::max(-x, 0.0));
}
inline double bce_with_logits_pos_derivative(double x, double y, double p) {
  return (1 - y) - (1 + (p - 1) * y) / (1 + std::exp(x));
}

// Element i's loss (derivative: d loss / dx) with its weight and pos_weight, where the descriptor has them.
inline double weighted_pointwise_loss(const PointwiseLossDescriptor& d, harness::RefIO& io, int64_t i,
                                      bool derivative) {
  const double x = io.in("input").at(i), y = io.in("target").at(i);
  double v;
  if (d.has_pos_weight) {
    const double p = io.in("pos_weight").at(i);
    v = derivative ? bce_with_logits_pos_derivative(x, y, p) : bce_with_logits_pos_value(x, y, p);
  } else {
    v = derivative ? pointwise_loss_derivative(d, x, y) : pointwise_loss_value(d, x, y);
  }
  return d.has_weight ? v * io.in("weight").at(i) : v;
}

// The scale an element's rounding errors are relative to: its inputs' and its value's.
inline double pointwise_loss_magnitude(double x, double y, double v) {
  const double s = std::fabs(x) + std::fabs(y) + 1;
  return std::fabs(v) + s * s;
}

inline void pointwise_loss_forward(const PointwiseLossDescriptor& d, harness::RefIO& io) {
  const harness::HostView &x = io.in("input"), &y = io.in("target");
  harness::RefOutput& loss = io.out("loss");
  const int64_t n = d.shape.numel();
  double sum = 0, magnitude = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double xi = x.at(i), yi = y.at(i), v = weighted_pointwise_loss(d, io, i, false);
    double m = pointwise_loss_magnitude(xi, yi, v);
    if (d.has_pos_weight) m *= 1 + std::fabs(io.in("pos_weight").at(i));
    if (d.has_weight) m *= std::fabs(io.in("weight").at(i));
    if (d.reduction == LossReduction::none) {
      if (loss.wanted(i)) loss.set(i, v, m, 1);
    } else {
      sum += v;
      magnitude += m;
    }
  }
  if (d.reduction == LossReduction::sum) loss.set(0, sum, magnitude, std::max<int64_t>(1, n));
  if (d.reduction == LossReduction::mean)
    loss.set(0, sum / static_cast<double>(n), magnitude / static_cast<double>(std::max<int64_t>(1, n)),
             std::max<int64_t>(1, n));
}

inline void pointwise_loss_backward(const PointwiseLossDescriptor& d, harness::RefIO& io) {
  const harness::HostView &x = io.in("input"), &y = io.in("target"), &dloss = io.in("dloss");
  harness::RefOutput& dx = io.out("dinput");
  const int64_t n = d.shape.numel();
  const double scale = d.reduction == LossReduction::mean ? 1.0 / static_cast<double>(n) : 1.0;
  for (int64_t i = 0; i < n; ++i) {
    if (!dx.wanted(i)) continue;
    const double g = d.reduction == LossReduction::none ? dloss.at(i) : dloss.at(0) * scale;
    const double xi = x.at(i), yi = y.at(i), v = g * weighted_pointwise_loss(d, io, i, true);
    double m = pointwise_loss_magnitude(xi, yi, 0);
    if (d.has_pos_weight) m *= 1 + std::fabs(io.in("pos_weight").at(i));
    if (d.has_weight) m *= std::fabs(io.in("weight").at(i));
    dx.set(i, v, std::fabs(v) + std::fabs(g) * m, 1);
  }
}

}  // namespace baracuda::reference

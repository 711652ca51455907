#pragma once
// Naive double-precision references for the unary family, on the C library's <cmath>, independent of
// both backends (nothing here calls src/common/unary_math.hpp): f(x) and the gradient PyTorch's
// autograd gives, dout * f'(x), with its choices at the points where f is not differentiable.
#include <cmath>
#include <limits>

#include "baracuda/ops/unary.hpp"
#include "harness/op_table.hpp"
#include "harness/reference/integer_reference.hpp"

namespace baracuda::reference {

namespace unary_detail {

constexpr double kPi = 3.141592653589793238462643383279502884;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;

inline double sign(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }  // 0 for NaN, as PyTorch
inline double sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }
inline double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

// erfinv by bisection on erf (and erfc near +-1, where erf has no digits left): 200 halvings reach
// the spacing of doubles anywhere in the range.
inline double erfinv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return kNaN;
  if (y == 1) return kInf;
  if (y == -1) return -kInf;
  if (y < 0) return -erfinv(-y);
  double lo = 0, hi = 10;
  for (int i = 0; i < 200 && lo < hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (mid == lo || mid == hi) break;
    // erf(mid) < y, compared as erfc(mid) > 1 - y where y > 1/2 (1 - y is exact there).
    const bool below = y > 0.5 ? std::erfc(mid) > 1.0 - y : std::erf(mid) < y;
    (below ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// psi(x): the recurrence up to 20, then the asymptotic series (its terms past x^-12 are below
// double's precision there); the reflection formula below 0; PyTorch's values at 0 and the poles.
inline double digamma(double x) {
  if (x == 0) return std::signbit(x) ? kInf : -kInf;
  if (x < 0) {
    if (x == std::floor(x)) return kNaN;
    // tan has period pi: its argument from x less its nearest integer is exact (and tiny x stays tiny).
    return digamma(1 - x) - kPi / std::tan(kPi * (x - std::round(x)));
  }
  double shift = 0;
  while (x < 20) {
    shift += 1 / x;
    x += 1;
  }
  const double z = 1 / (x * x);
  const double series = z / 12 - z * z / 120 + z * z * z / 252 - z * z * z * z / 240 + std::pow(z, 5) / 132 -
                        691 * std::pow(z, 6) / 32760;
  return std::log(x) - 0.5 / x - series - shift;
}

}  // namespace unary_detail

// f(x) for the kind.
inline double unary(UnaryKind kind, double x, const UnaryParameters& p) {
  using namespace unary_detail;
  switch (kind) {
    case UnaryKind::abs:
      return std::fabs(x);
    case UnaryKind::neg:
      return -x;
    case UnaryKind::sign:
      return sign(x);
    case UnaryKind::reciprocal:
      return 1 / x;
    case UnaryKind::square:
      return x * x;
    case UnaryKind::sqrt:
      return std::sqrt(x);
    case UnaryKind::rsqrt:
      return 1 / std::sqrt(x);
    case UnaryKind::exp:
      return std::exp(x);
    case UnaryKind::exp2:
      return std::exp2(x);
    case UnaryKind::expm1:
      return std::expm1(x);
    case UnaryKind::log:
      return std::log(x);
    case UnaryKind::log2:
      return std::log2(x);
    case UnaryKind::log10:
      return std::log10(x);
    case UnaryKind::log1p:
      return std::log1p(x);
    case UnaryKind::sin:
      return std::sin(x);
    case UnaryKind::cos:
      return std::cos(x);
    case UnaryKind::tan:
      return std::tan(x);
    case UnaryKind::asin:
      return std::asin(x);
    case UnaryKind::acos:
      return std::acos(x);
    case UnaryKind::atan:
      return std::atan(x);
    case UnaryKind::sinh:
      return std::sinh(x);
    case UnaryKind::cosh:
      return std::cosh(x);
    case UnaryKind::tanh:
      return std::tanh(x);
    case UnaryKind::asinh:
      return std::asinh(x);
    case UnaryKind::acosh:
      return std::acosh(x);
    case UnaryKind::atanh:
      return std::atanh(x);
    case UnaryKind::erf:
      return std::erf(x);
    case UnaryKind::erfc:
      return std::erfc(x);
    case UnaryKind::erfinv:
      return erfinv(x);
    case UnaryKind::lgamma:
      return std::lgamma(x);
    case UnaryKind::floor:
      return std::floor(x);
    case UnaryKind::ceil:
      return std::ceil(x);
    case UnaryKind::round:
      return std::nearbyint(x);
    case UnaryKind::trunc:
      return std::trunc(x);
    case UnaryKind::frac:
      return x - std::trunc(x);
    case UnaryKind::relu:
      return std::isnan(x) ? x : std::max(x, 0.0);
    case UnaryKind::relu6:
      return std::isnan(x) ? x : std::min(std::max(x, 0.0), 6.0);
    case UnaryKind::leaky_relu:
      return x > 0 ? x : p.negative_slope * x;
    case UnaryKind::elu:
      return x > 0 ? x : p.alpha * std::expm1(x);
    case UnaryKind::selu:
      return kSeluScale * (x > 0 ? x : kSeluAlpha * std::expm1(x));
    case UnaryKind::celu:
      return x > 0 ? x : p.alpha * std::expm1(x / p.alpha);
    case UnaryKind::gelu:
      return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case UnaryKind::gelu_tanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / kPi) * (x + 0.044715 * x * x * x)));
    case UnaryKind::silu:
      return x * sigmoid(x);
    case UnaryKind::mish:
      return x * std::tanh(softplus(x));
    case UnaryKind::softplus:
      return p.beta * x > p.threshold ? x : softplus(p.beta * x) / p.beta;
    case UnaryKind::softsign:
      return x / (1 + std::fabs(x));
    case UnaryKind::sigmoid:
      return sigmoid(x);
    case UnaryKind::logsigmoid:
      return -softplus(-x);
    case UnaryKind::hardtanh:
      return std::isnan(x) ? x : std::min(std::max(x, p.min_val), p.max_val);
    case UnaryKind::hardsigmoid:
      return std::isnan(x) ? x : std::min(std::max(x + 3, 0.0), 6.0) / 6;
    case UnaryKind::hardswish:
      return std::isnan(x) ? x : x * std::min(std::max(x + 3, 0.0), 6.0) / 6;
    case UnaryKind::isnan:
      return std::isnan(x);
    case UnaryKind::isinf:
      return std::isinf(x);
    case UnaryKind::isfinite:
      return std::isfinite(x);
    case UnaryKind::signbit:
      return std::signbit(x);
    case UnaryKind::logical_not:
      return x == 0;
    case UnaryKind::bitwise_not:  // integers alone (unary_integer)
      break;
  }
  return kNaN;
}

// f(x) for an integer (or bool) dtype, as PyTorch's integer tensors give it: wrapped to the dtype.
inline double unary_integer(UnaryKind kind, int64_t x, DType dtype) {
  const uint64_t u = static_cast<uint64_t>(x);
  switch (kind) {
    case UnaryKind::abs:
      return wrap_to(dtype, x < 0 ? 0 - u : u);
    case UnaryKind::neg:
      return wrap_to(dtype, 0 - u);
    case UnaryKind::square:
      return wrap_to(dtype, u * u);
    case UnaryKind::bitwise_not:
      return dtype == DType::boolean ? static_cast<double>(x == 0) : wrap_to(dtype, ~u);
    case UnaryKind::signbit:
      return x < 0;
    default:  // sign, relu, the roundings (the identity) and the predicates: as the floats' (exact here)
      return unary(kind, static_cast<double>(x), UnaryParameters{});
  }
}

// f'(x) as PyTorch's autograd takes it (see baracuda/ops/unary.hpp for the non-differentiable points).
inline double unary_derivative(UnaryKind kind, double x, const UnaryParameters& p) {
  using namespace unary_detail;
  switch (kind) {
    case UnaryKind::abs:
      return sign(x);
    case UnaryKind::neg:
      return -1;
    case UnaryKind::sign:
    case UnaryKind::floor:
    case UnaryKind::ceil:
    case UnaryKind::round:
    case UnaryKind::trunc:
      return 0;
    case UnaryKind::frac:
      return 1;
    case UnaryKind::reciprocal:
      return -1 / (x * x);
    case UnaryKind::square:
      return 2 * x;
    case UnaryKind::sqrt:
      return 0.5 / std::sqrt(x);
    case UnaryKind::rsqrt: {  // -r^3 / 2 (PyTorch: rsqrt'(-0) = +inf)
      const double r = 1 / std::sqrt(x);
      return -0.5 * r * r * r;
    }
    case UnaryKind::exp:
      return std::exp(x);
    case UnaryKind::exp2:
      return std::exp2(x) * std::log(2.0);
    case UnaryKind::expm1:
      return std::exp(x);
    case UnaryKind::log:
      return 1 / x;
    case UnaryKind::log2:
      return 1 / (x * std::log(2.0));
    case UnaryKind::log10:
      return 1 / (x * std::log(10.0));
    case UnaryKind::log1p:
      return 1 / (1 + x);
    case UnaryKind::sin:
      return std::cos(x);
    case UnaryKind::cos:
      return -std::sin(x);
    case UnaryKind::tan:
      return 1 / (std::cos(x) * std::cos(x));
    case UnaryKind::asin:
      return 1 / std::sqrt(1 - x * x);
    case UnaryKind::acos:
      return -1 / std::sqrt(1 - x * x);
    case UnaryKind::atan:
      return 1 / (1 + x * x);
    case UnaryKind::sinh:
      return std::cosh(x);
    case UnaryKind::cosh:
      return std::sinh(x);
    case UnaryKind::tanh:
      return 1 / (std::cosh(x) * std::cosh(x));
    case UnaryKind::asinh:
      return 1 / std::sqrt(x * x + 1);
    case UnaryKind::acosh:
      return 1 / std::sqrt(x * x - 1);
    case UnaryKind::atanh:
      return 1 / (1 - x * x);
    case UnaryKind::erf:
      return 2 / std::sqrt(kPi) * std::exp(-x * x);
    case UnaryKind::erfc:
      return -2 / std::sqrt(kPi) * std::exp(-x * x);
    case UnaryKind::erfinv: {
      const double y = erfinv(x);
      return std::sqrt(kPi) / 2 * std::exp(y * y);
    }
    case UnaryKind::lgamma:
      return digamma(x);
    case UnaryKind::relu:
      return x <= 0 ? 0 : 1;  // 1 for NaN, as PyTorch's threshold_backward
    case UnaryKind::relu6:
      return x <= 0 || x >= 6 ? 0 : 1;  // 1 for NaN, as PyTorch
    case UnaryKind::leaky_relu:
      return x > 0 ? 1 : p.negative_slope;
    case UnaryKind::elu:
      return x <= 0 ? p.alpha * std::exp(x) : 1;  // 1 for NaN, as PyTorch
    case UnaryKind::selu:
      return x <= 0 ? kSeluScale * kSeluAlpha * std::exp(x) : kSeluScale;
    case UnaryKind::celu:
      return x <= 0 ? std::exp(x / p.alpha) : 1;
    case UnaryKind::gelu:
      return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * kPi);
    case UnaryKind::gelu_tanh: {
      const double k = std::sqrt(2 / kPi), u = k * (x + 0.044715 * x * x * x), t = std::tanh(u);
      // Saturated tanh: the second term's limit, 0 (the kernels say so also where x^3 overflows).
      if (1 - t * t == 0) return 0.5 * (1 + t);
      return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
    }
    case UnaryKind::silu: {
      const double s = sigmoid(x);
      return s + x * s * (1 - s);
    }
    case UnaryKind::mish: {
      const double t = std::tanh(softplus(x));
      return t + x * (1 - t * t) * sigmoid(x);
    }
    case UnaryKind::softplus:
      return p.beta * x > p.threshold ? 1 : sigmoid(p.beta * x);
    case UnaryKind::softsign:
      return 1 / ((1 + std::fabs(x)) * (1 + std::fabs(x)));
    case UnaryKind::sigmoid:
      return sigmoid(x) * sigmoid(-x);
    case UnaryKind::logsigmoid:
      return sigmoid(-x);
    case UnaryKind::hardtanh:
      return x <= p.min_val || x >= p.max_val ? 0 : 1;
    case UnaryKind::hardsigmoid:
      return x > -3 && x < 3 ? 1.0 / 6 : 0;
    case UnaryKind::hardswish:
      return x < -3 ? 0 : (x <= 3 ? x / 3 + 0.5 : 1);
    case UnaryKind::bitwise_not:  // integers: no gradient
    case UnaryKind::isnan:        // bool outputs: no gradient (UnaryBackwardPlan rejects them)
    case UnaryKind::isinf:
    case UnaryKind::isfinite:
    case UnaryKind::signbit:
    case UnaryKind::logical_not:
      break;
  }
  return kNaN;
}

// The gradient: dout * f'(x), except for the kinds whose gradient is 0 whatever dout holds.
inline double unary_backward(UnaryKind kind, double dout, double x, const UnaryParameters& p) {
  const double d = unary_derivative(kind, x, p);
  return d == 0 ? 0.0 : dout * d;
}

// out = f(x) for every element; `loosen` widens the dtype's tolerance for this kind (a factor).
inline void unary_forward(const UnaryDescriptor& d, harness::RefIO& io, double loosen) {
  const harness::HostView& x = io.in("x");
  harness::RefOutput& out = io.out("out");
  for (int64_t i = 0, numel = d.shape.numel(); i < numel; ++i) {
    if (!out.wanted(i)) continue;
    const double v = is_floating(d.dtype) ? unary(d.kind, x.at(i), d.parameters)
                                          : unary_integer(d.kind, static_cast<int64_t>(x.at(i)), d.dtype);
    out.set(i, v, (1 + std::fabs(v)) * loosen - 1, 1);
  }
}

// dx = dout * f'(x) for every element.
inline void unary_backward(const UnaryDescriptor& d, harness::RefIO& io, double loosen) {
  const harness::HostView &dout = io.in("dout"), &x = io.in("x");
  harness::RefOutput& dx = io.out("dx");
  for (int64_t i = 0, numel = d.shape.numel(); i < numel; ++i) {
    if (!dx.wanted(i)) continue;
    const double v = unary_backward(d.kind, dout.at(i), x.at(i), d.parameters);
    dx.set(i, v, (1 + std::fabs(v)) * loosen - 1, 1);
  }
}

}  // namespace baracuda::reference

#pragma once
// The unary family's kinds (unary.hpp documents them): plain C++ with no include, which the kernels
// compiled at select (NVRTC) read as well as the host.
namespace baracuda {

enum class UnaryKind : unsigned char {
  // math
  abs,
  neg,
  sign,
  reciprocal,
  square,
  sqrt,
  rsqrt,
  exp,
  exp2,
  expm1,
  log,
  log2,
  log10,
  log1p,
  sin,
  cos,
  tan,
  asin,
  acos,
  atan,
  sinh,
  cosh,
  tanh,
  asinh,
  acosh,
  atanh,
  erf,
  erfc,
  erfinv,
  lgamma,
  floor,
  ceil,
  round,
  trunc,
  frac,
  // activations
  relu,
  relu6,
  leaky_relu,
  elu,
  selu,
  celu,
  gelu,
  gelu_tanh,
  silu,
  mish,
  softplus,
  softsign,
  sigmoid,
  logsigmoid,
  hardtanh,
  hardsigmoid,
  hardswish,
  // predicates: out is bool
  bitwise_not,  // integers and bool alone
  isnan,
  isinf,
  isfinite,
  signbit,
  logical_not,
};
inline constexpr int kUnaryKindCount = static_cast<int>(UnaryKind::logical_not) + 1;

}  // namespace baracuda

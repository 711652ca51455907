#pragma once
// The binary family's kinds (binary.hpp documents them): plain C++ with no include, which the kernels
// compiled at select (NVRTC) read as well as the host.
namespace baracuda {

enum class BinaryKind : unsigned char {
  add,
  sub,
  mul,
  div,
  div_floor,
  div_trunc,
  remainder,
  fmod,
  pow,
  atan2,
  hypot,
  maximum,
  minimum,
  fmax,
  fmin,
  copysign,
  logaddexp,
  xlogy,
  // integers and bool alone
  bitwise_and,
  bitwise_or,
  bitwise_xor,
  shift_left,
  shift_right,
  // predicates: out is bool
  eq,
  ne,
  lt,
  le,
  gt,
  ge,
  logical_and,
  logical_or,
  logical_xor,
};
inline constexpr int kBinaryKindCount = static_cast<int>(BinaryKind::logical_xor) + 1;

}  // namespace baracuda

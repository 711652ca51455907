#pragma once
// Naive double-precision references for the copy family, independent of both backends (nothing here
// calls src/common/convert.hpp): a value converted to a dtype by the rules of
// include/baracuda/ops/copy.hpp, with the rounding done on the double's exponent and significand.
#include <cmath>
#include <cstdint>
#include <limits>

#include "baracuda/ops/copy.hpp"
#include "harness/op_table.hpp"

namespace baracuda::reference {

namespace copy_detail {

// v rounded to nearest even at `digits` significant bits, exponents in [emin, emax] (subnormals
// below emin), +-inf past the largest finite value.
inline double round_to_format(double v, int digits, int emin, int emax) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  int e = 0;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  const int quantum = std::max(e - 1, emin) - (digits - 1);
  const double r = std::ldexp(std::nearbyint(std::ldexp(v, -quantum)), quantum);  // nearbyint: ties to even
  const double largest = std::ldexp(2.0 - std::ldexp(1.0, 1 - digits), emax);
  if (std::fabs(r) > largest) return std::copysign(std::numeric_limits<double>::infinity(), v);
  return r;
}

// An integer (exact in a double) wrapped into `bits` bits; 64 bits hold every such integer already.
inline double wrap(double whole, int bits, bool is_signed) {
  if (bits >= 64) return whole;
  const double modulus = std::ldexp(1.0, bits);
  double r = std::fmod(whole, modulus);
  if (r < 0) r += modulus;
  if (is_signed && r >= modulus / 2) r -= modulus;
  return r;
}

}  // namespace copy_detail

// The value v (an element of dtype `from`) as an element of dtype `to`.
inline double convert_value(double v, DType from, DType to) {
  using copy_detail::round_to_format;
  const bool from_integer = !is_floating(from);
  switch (to) {
    case DType::f16:
      return round_to_format(v, 11, -14, 15);
    case DType::bf16:
      return round_to_format(v, 8, -126, 127);
    case DType::f32:
      return round_to_format(v, 24, -126, 127);
    case DType::f64:
      return v;
    case DType::boolean:
      return v != 0 ? 1.0 : 0.0;
    default:
      break;
  }
  const int bits = to == DType::i8 || to == DType::u8 ? 8 : to == DType::i32 ? 32 : 64;
  const bool is_signed = to != DType::u8;
  if (from_integer) return copy_detail::wrap(v, bits, is_signed);
  if (std::isnan(v)) return 0;
  const double lowest = is_signed ? -std::ldexp(1.0, bits - 1) : 0.0;
  const double highest = is_signed ? std::ldexp(1.0, bits - 1) - 1 : std::ldexp(1.0, bits) - 1;
  return std::clamp(std::trunc(v), lowest, highest);
}

inline void cast(const CastDescriptor& d, harness::RefIO& io) {
  const harness::HostView& x = io.in("x");
  harness::RefOutput& y = io.out("y");
  for (int64_t i = 0, numel = d.shape.numel(); i < numel; ++i)
    if (y.wanted(i)) y.set(i, convert_value(x.at(i), d.dtype, d.out_dtype));
}

inline void fill(const FillDescriptor& d, harness::RefIO& io) {
  harness::RefOutput& y = io.out("y");
  const double v = d.integer_value ? static_cast<double>(*d.integer_value) : d.value;
  const double want = convert_value(v, d.integer_value ? DType::i64 : DType::f64, d.dtype);
  for (int64_t i = 0, numel = d.shape.numel(); i < numel; ++i)
    if (y.wanted(i)) y.set(i, want);
}

}  // namespace baracuda::reference

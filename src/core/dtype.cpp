#include "baracuda/core/dtype.hpp"

#include <cmath>

namespace baracuda {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::i8:
    case DType::u8:
    case DType::boolean:
      return 1;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::i8:
      return "i8";
    case DType::u8:
      return "u8";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

bool is_floating(DType dtype) {
  return dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::f32 || dtype == DType::f64;
}

bool is_index(DType dtype) { return dtype == DType::i32 || dtype == DType::i64; }

namespace {
uint32_t float_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}
float bits_float(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}
}  // namespace

half::half(float value) {
  const uint32_t x = float_bits(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or NaN (NaN stays quiet NaN)
    bits = static_cast<uint16_t>(sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u));
  } else if (absx >= 0x477ff000u) {  // 65520 and above round to infinity
    bits = static_cast<uint16_t>(sign | 0x7c00u);
  } else if (absx >= 0x38800000u) {  // normal half: rebias the exponent, round to nearest even
    uint32_t h = absx - (112u << 23);
    h += 0xfffu + ((h >> 13) & 1u);
    bits = static_cast<uint16_t>(sign | (h >> 13));
  } else if (absx < 0x33000000u) {  // below half the smallest subnormal: signed zero
    bits = static_cast<uint16_t>(sign);
  } else {  // subnormal half: value in units of 2^-24, rounded to nearest even
    const uint32_t exponent = absx >> 23;
    const uint32_t mantissa = (absx & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exponent;
    uint32_t r = mantissa >> shift;
    const uint32_t rem = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
    bits = static_cast<uint16_t>(sign | r);
  }
}

half::operator float() const {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

bfloat16::bfloat16(float value) {
  uint32_t x = float_bits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    bits = static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    return;
  }
  x += 0x7fffu + ((x >> 16) & 1u);
  bits = static_cast<uint16_t>(x >> 16);
}

bfloat16::operator float() const { return bits_float(static_cast<uint32_t>(bits) << 16); }

}  // namespace baracuda

#pragma once
// Element types and the host-side 16-bit float storage types.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace baracuda {

enum class DType : uint8_t { f16, bf16, f32, f64, i8, u8, i32, i64, boolean };

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
bool is_floating(DType dtype);
bool is_index(DType dtype);  // i32 or i64: the types an index tensor may have

// IEEE binary16, bit-compatible with CUDA's __half. Conversions round to nearest even.
struct half {
  uint16_t bits = 0;
  half() = default;
  explicit half(float value);
  explicit operator float() const;
  static half from_bits(uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
};

// bfloat16, bit-compatible with CUDA's __nv_bfloat16. Conversions round to nearest even.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float value);
  explicit operator float() const;
  static bfloat16 from_bits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
};

template <class T>
struct dtype_of;
template <>
struct dtype_of<half> {
  static constexpr DType value = DType::f16;
};
template <>
struct dtype_of<bfloat16> {
  static constexpr DType value = DType::bf16;
};
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::f64;
};
template <>
struct dtype_of<int8_t> {
  static constexpr DType value = DType::i8;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::u8;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::i64;
};
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::boolean;
};
template <class T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

// The conversions are inline: the CPU kernels convert every element they load or store, and an
// out-of-line call per element cost them more than the arithmetic (bf16 sums at a tenth of f32's rate).
namespace dtype_bits {
inline uint32_t of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}
inline float to_float(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}
}  // namespace dtype_bits

inline half::half(float value) {
  const uint32_t x = dtype_bits::of(value);
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

inline half::operator float() const {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;  // exact: mantissa < 2^10
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return dtype_bits::to_float(sign | 0x7f800000u | (mantissa << 13));
  return dtype_bits::to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline bfloat16::bfloat16(float value) {
  uint32_t x = dtype_bits::of(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    bits = static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    return;
  }
  x += 0x7fffu + ((x >> 16) & 1u);
  bits = static_cast<uint16_t>(x >> 16);
}

inline bfloat16::operator float() const { return dtype_bits::to_float(static_cast<uint32_t>(bits) << 16); }

}  // namespace baracuda

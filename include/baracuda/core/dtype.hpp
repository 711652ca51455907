#pragma once
// Element types and the host-side 16-bit float storage types.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "baracuda/core/dtype_kind.hpp"

namespace baracuda {

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
bool is_floating(DType dtype);
bool is_index(DType dtype);  // i32 or i64: the types an index tensor may have
// The dtype two tensors of dtypes a and b combine into (PyTorch's torch.promote_types): bool with x
// is x; integers with floats give the float; the wider of two integers or of two floats; f16 with
// bf16 gives f32. nullopt for u8 with i8, whose promotion (i16) is no dtype here.
std::optional<DType> promote_types(DType a, DType b);
// The dtype a tensor of dtype `tensor` and a scalar (a Python number, PyTorch's "wrapped number") of
// dtype `scalar` combine into, as PyTorch's result_type: the tensor's, unless the scalar is of a higher
// category (bool < integer < float); then i64 for an integer scalar and f32 (PyTorch's default float)
// for a float one. An i32 tensor + 2.5 is f32, an f16 tensor * 2.5 f16, a bool tensor + 3 i64.
DType promote_with_scalar(DType tensor, DType scalar);

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

// Each conversion computes every case's bits and picks one by integer selects (no branch), so that a
// loop of them vectorizes.
inline half::half(float value) {
  const uint32_t x = dtype_bits::of(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  // A normal half (|value| >= 2^-14): rebias the exponent, round to nearest even.
  const uint32_t rebiased = absx - (112u << 23);
  const uint32_t normal = (rebiased + 0xfffu + ((rebiased >> 13) & 1u)) >> 13;
  // A subnormal half (or zero): adding 0.5 leaves |value| in units of 2^-24 in the low bits of the
  // sum, rounded to nearest even by the addition (2^-14 rounds up to the smallest normal, 0x400).
  const uint32_t subnormal = dtype_bits::of(dtype_bits::to_float(absx) + 0.5f) - 0x3f000000u;
  uint32_t h = absx < 0x38800000u ? subnormal : normal;
  h = absx >= 0x477ff000u ? 0x7c00u : h;  // 65520 and above (and inf) round to infinity
  h = absx > 0x7f800000u ? 0x7e00u : h;   // NaN stays quiet NaN
  bits = static_cast<uint16_t>(sign | h);
}

inline half::operator float() const {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  const float subnormal = static_cast<float>(static_cast<int32_t>(mantissa)) * 0x1p-24f;  // exact: < 2^10
  uint32_t f = ((exponent + 112u) << 23) | (mantissa << 13);
  f = exponent == 31 ? (0x7f800000u | (mantissa << 13)) : f;
  f = exponent == 0 ? dtype_bits::of(subnormal) : f;
  return dtype_bits::to_float(sign | f);
}

inline bfloat16::bfloat16(float value) {
  const uint32_t x = dtype_bits::of(value);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (x >> 16) | 0x40u;
  bits = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

inline bfloat16::operator float() const { return dtype_bits::to_float(static_cast<uint32_t>(bits) << 16); }

}  // namespace baracuda

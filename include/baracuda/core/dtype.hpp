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

}  // namespace baracuda

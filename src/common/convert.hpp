#pragma once
// The one conversion between element types, for both backends (host 16-bit types on the CPU,
// __half / __nv_bfloat16 under CUDA): what a cast writes, and what every elementwise kernel uses to
// load its inputs into the compute type and store its results. Rules (also include/baracuda/ops/copy.hpp):
//  - to a floating type: round to nearest even, once. f64 and 64-bit / 32-bit integers go to f16 and
//    bf16 through a round-to-odd f32 (the f32 keeps a sticky bit), so the result is the correctly
//    rounded one, not a double rounding; past the largest finite value: +-inf; NaN stays NaN;
//  - floating to integer: toward zero, saturating at the type's range; NaN gives 0;
//  - integer to integer: two's complement wrap (as C++ and PyTorch);
//  - to bool: x != 0 (NaN is true); from bool: 0 or 1.
#include "common/hd.hpp"
#include "common/portable.hpp"

namespace baracuda::detail {

// f16 / bf16 under either backend's name (the only 2-byte element types that are not integers).
template <class T>
inline constexpr bool is_16bit_float_v = sizeof(T) == 2 && !std::is_integral_v<T>;
template <class T>
inline constexpr bool is_float_like_v = std::is_floating_point_v<T> || is_16bit_float_v<T>;

namespace convert_detail {

BARACUDA_HD uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
BARACUDA_HD float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// d rounded to f32 toward zero, with the lowest bit set where that was inexact (round to odd): a
// second rounding to a narrower type then rounds as d itself would.
BARACUDA_HD float round_to_odd(double d) {
  const float f = static_cast<float>(d);
  const double back = static_cast<double>(f);
  if (back == d || d != d) return f;
  uint32_t u = bits_of(f);
  if ((back < 0 ? -back : back) > (d < 0 ? -d : d)) --u;  // rounded away from zero: step back (inf to max)
  return float_of(u | 1u);
}

// |v| < 2^64 to f32 the same way (exact below 2^24).
BARACUDA_HD float round_to_odd(uint64_t v) {
#if defined(__CUDA_ARCH__)
  const int width = 64 - __clzll(static_cast<long long>(v));
#else
  const int width = v ? 64 - __builtin_clzll(v) : 0;
#endif
  if (width <= 24) return static_cast<float>(static_cast<uint32_t>(v));
  const int shift = width - 24;
  const uint64_t kept = (v >> shift) | ((v & ((uint64_t{1} << shift) - 1)) != 0);
  return static_cast<float>(static_cast<uint32_t>(kept)) * float_of(static_cast<uint32_t>(127 + shift) << 23);
}

}  // namespace convert_detail

template <class To, class From>
BARACUDA_HD To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_16bit_float_v<From>) {
    return convert<To>(static_cast<float>(v));  // exact
  } else if constexpr (std::is_same_v<From, bool>) {
    return convert<To>(static_cast<int32_t>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To>) {
    if constexpr (std::is_integral_v<From>) {
      return static_cast<To>(v);
    } else {
      // 2^digits (the first value past the maximum) and the minimum are powers of two: exact in From.
      constexpr From kLimit = static_cast<From>(std::numeric_limits<To>::max() / 2 + 1) * From(2);
      constexpr From kLowest = static_cast<From>(std::numeric_limits<To>::min());
      if (v != v) return To(0);
      if (v >= kLimit) return std::numeric_limits<To>::max();
      if (v < kLowest) return std::numeric_limits<To>::min();
      return static_cast<To>(v);
    }
  } else if constexpr (is_16bit_float_v<To>) {
    if constexpr (std::is_same_v<From, float>) {
      return static_cast<To>(v);
    } else if constexpr (std::is_same_v<From, double>) {
      return static_cast<To>(convert_detail::round_to_odd(v));
    } else if constexpr (sizeof(From) <= 2) {
      return static_cast<To>(static_cast<float>(v));  // exact
    } else {
      const bool negative = v < 0;
      const uint64_t magnitude = negative ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
      const float f = convert_detail::round_to_odd(magnitude);
      return static_cast<To>(negative ? -f : f);
    }
  } else {
    return static_cast<To>(v);  // to f32 / f64: one rounding to nearest even (exact from f32 to f64)
  }
}

}  // namespace baracuda::detail

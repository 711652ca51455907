#pragma once
// What NVRTC lacks of the standard library for the shared maths (common/portable.hpp includes this
// under NVRTC alone): fixed-width integers, the type traits, numeric_limits, a type-list tuple, and
// the C maths as the device functions NVRTC declares. The integer types are the host's (LP64), so a
// type the host spells ("long int") names the same type here. Also baracuda::half and
// baracuda::bfloat16, bit for bit the host's (baracuda/core/dtype.hpp), converting by PTX.
#if !defined(__CUDACC_RTC__)
#error "common/nvrtc_std.hpp is for NVRTC alone: include common/portable.hpp"
#endif

using int8_t = signed char;
using uint8_t = unsigned char;
using int16_t = short;
using uint16_t = unsigned short;
using int32_t = int;
using uint32_t = unsigned int;
using int64_t = long;
using uint64_t = unsigned long;
using size_t = decltype(sizeof(0));
using uintptr_t = unsigned long;

#define INFINITY __builtin_bit_cast(float, 0x7f800000u)
#define NAN __builtin_bit_cast(float, 0x7fc00000u)

namespace std {

using ::int8_t, ::uint8_t, ::int16_t, ::uint16_t, ::int32_t, ::uint32_t, ::int64_t, ::uint64_t, ::size_t;

template <class T, T v>
struct integral_constant {
  static constexpr T value = v;
  constexpr operator T() const { return v; }
  constexpr T operator()() const { return v; }
};
using true_type = integral_constant<bool, true>;
using false_type = integral_constant<bool, false>;

template <class A, class B>
inline constexpr bool is_same_v = false;
template <class A>
inline constexpr bool is_same_v<A, A> = true;

template <class T>
struct type_identity {
  using type = T;
};
template <class T>
using type_identity_t = typename type_identity<T>::type;

template <class T>
struct remove_cv {
  using type = T;
};
template <class T>
struct remove_cv<const T> {
  using type = T;
};
template <class T>
struct remove_cv<volatile T> {
  using type = T;
};
template <class T>
struct remove_cv<const volatile T> {
  using type = T;
};
template <class T>
using remove_cv_t = typename remove_cv<T>::type;

template <class T>
struct remove_reference {
  using type = T;
};
template <class T>
struct remove_reference<T&> {
  using type = T;
};
template <class T>
struct remove_reference<T&&> {
  using type = T;
};
template <class T>
using remove_reference_t = typename remove_reference<T>::type;

template <bool B, class T, class F>
struct conditional {
  using type = T;
};
template <class T, class F>
struct conditional<false, T, F> {
  using type = F;
};
template <bool B, class T, class F>
using conditional_t = typename conditional<B, T, F>::type;

template <bool B, class T = void>
struct enable_if {};
template <class T>
struct enable_if<true, T> {
  using type = T;
};
template <bool B, class T = void>
using enable_if_t = typename enable_if<B, T>::type;

namespace nvrtc_detail {
template <class T>
inline constexpr bool integral = false;
template <>
inline constexpr bool integral<bool> = true;
template <>
inline constexpr bool integral<char> = true;
template <>
inline constexpr bool integral<signed char> = true;
template <>
inline constexpr bool integral<unsigned char> = true;
template <>
inline constexpr bool integral<short> = true;
template <>
inline constexpr bool integral<unsigned short> = true;
template <>
inline constexpr bool integral<int> = true;
template <>
inline constexpr bool integral<unsigned> = true;
template <>
inline constexpr bool integral<long> = true;
template <>
inline constexpr bool integral<unsigned long> = true;
template <>
inline constexpr bool integral<long long> = true;
template <>
inline constexpr bool integral<unsigned long long> = true;
}  // namespace nvrtc_detail

template <class T>
inline constexpr bool is_integral_v = nvrtc_detail::integral<remove_cv_t<T>>;
template <class T>
inline constexpr bool is_floating_point_v = is_same_v<remove_cv_t<T>, float> || is_same_v<remove_cv_t<T>, double>;
template <class T>
inline constexpr bool is_arithmetic_v = is_integral_v<T> || is_floating_point_v<T>;
template <class T>
inline constexpr bool is_signed_v = is_arithmetic_v<T>&& T(-1) < T(0);
template <class T>
inline constexpr bool is_unsigned_v = is_arithmetic_v<T>&& T(0) < T(-1);

template <class T>
struct make_unsigned;
template <>
struct make_unsigned<signed char> {
  using type = unsigned char;
};
template <>
struct make_unsigned<unsigned char> {
  using type = unsigned char;
};
template <>
struct make_unsigned<char> {
  using type = unsigned char;
};
template <>
struct make_unsigned<short> {
  using type = unsigned short;
};
template <>
struct make_unsigned<unsigned short> {
  using type = unsigned short;
};
template <>
struct make_unsigned<int> {
  using type = unsigned;
};
template <>
struct make_unsigned<unsigned> {
  using type = unsigned;
};
template <>
struct make_unsigned<long> {
  using type = unsigned long;
};
template <>
struct make_unsigned<unsigned long> {
  using type = unsigned long;
};
template <>
struct make_unsigned<long long> {
  using type = unsigned long long;
};
template <>
struct make_unsigned<unsigned long long> {
  using type = unsigned long long;
};
template <class T>
using make_unsigned_t = typename make_unsigned<T>::type;

template <class T>
T&& declval() noexcept;

// The limits of the integer types (two's complement) and of float and double (IEEE).
template <class T>
struct numeric_limits {
  static constexpr bool is_signed = is_signed_v<T>;
  static constexpr int digits = static_cast<int>(sizeof(T) * 8) - (is_signed ? 1 : 0);
  static constexpr T min() {
    return is_signed ? static_cast<T>(static_cast<make_unsigned_t<T>>(1) << (sizeof(T) * 8 - 1)) : T(0);
  }
  static constexpr T max() { return is_signed ? static_cast<T>(~min()) : static_cast<T>(~T(0)); }
  static constexpr T lowest() { return min(); }
};
template <>
struct numeric_limits<bool> {
  static constexpr bool is_signed = false;
  static constexpr int digits = 1;
  static constexpr bool min() { return false; }
  static constexpr bool max() { return true; }
  static constexpr bool lowest() { return false; }
};
template <>
struct numeric_limits<float> {
  static constexpr bool is_signed = true;
  static constexpr int digits = 24;
  static constexpr float min() { return 0x1p-126f; }
  static constexpr float max() { return 0x1.fffffep127f; }
  static constexpr float lowest() { return -0x1.fffffep127f; }
  static constexpr float epsilon() { return 0x1p-23f; }
  static constexpr float denorm_min() { return 0x1p-149f; }
  static constexpr float infinity() { return __builtin_bit_cast(float, 0x7f800000u); }
  static constexpr float quiet_NaN() { return __builtin_bit_cast(float, 0x7fc00000u); }
};
template <>
struct numeric_limits<double> {
  static constexpr bool is_signed = true;
  static constexpr int digits = 53;
  static constexpr double min() { return 0x1p-1022; }
  static constexpr double max() { return 0x1.fffffffffffffp1023; }
  static constexpr double lowest() { return -0x1.fffffffffffffp1023; }
  static constexpr double epsilon() { return 0x1p-52; }
  static constexpr double denorm_min() { return 0x1p-1074; }
  static constexpr double infinity() { return __builtin_bit_cast(double, 0x7ff0000000000000ul); }
  static constexpr double quiet_NaN() { return __builtin_bit_cast(double, 0x7ff8000000000000ul); }
};

// A tuple as a list of types (the maths' groups): its size and elements, no values.
template <class... T>
struct tuple {};
template <class Tuple>
inline constexpr size_t tuple_size_v = 0;
template <class... T>
inline constexpr size_t tuple_size_v<tuple<T...>> = sizeof...(T);
template <size_t I, class Tuple>
struct tuple_element;
template <class Head, class... Tail>
struct tuple_element<0, tuple<Head, Tail...>> {
  using type = Head;
};
template <size_t I, class Head, class... Tail>
struct tuple_element<I, tuple<Head, Tail...>> : tuple_element<I - 1, tuple<Tail...>> {};
template <size_t I, class Tuple>
using tuple_element_t = typename tuple_element<I, Tuple>::type;

template <class T>
constexpr const T& min(const T& a, const T& b) {
  return b < a ? b : a;
}
template <class T>
constexpr const T& max(const T& a, const T& b) {
  return a < b ? b : a;
}
template <class T>
constexpr const T& clamp(const T& v, const T& lo, const T& hi) {
  return v < lo ? lo : hi < v ? hi : v;
}

// A name as a constant (the kinds' plan names, read by the host alone).
class string_view {
 public:
  constexpr string_view(const char* s) : data_(s), size_(0) {
    while (s[size_]) ++size_;
  }
  constexpr const char* data() const { return data_; }
  constexpr size_t size() const { return size_; }

 private:
  const char* data_;
  size_t size_;
};

// The C maths: NVRTC declares them (and their float overloads) in the global namespace.
using ::abs, ::fabs, ::sqrt, ::cbrt, ::exp, ::exp2, ::expm1, ::log, ::log2, ::log10, ::log1p, ::pow, ::hypot;
using ::copysign, ::signbit, ::isnan, ::isinf, ::isfinite, ::fmin, ::fmax, ::fma, ::ldexp, ::frexp, ::nextafter;
using ::erf, ::erfc, ::lgamma, ::tgamma, ::floor, ::ceil, ::trunc, ::round, ::rint, ::nearbyint, ::fmod, ::remainder;
using ::memcpy, ::memset;
using ::sin, ::cos, ::tan, ::asin, ::acos, ::atan, ::atan2, ::sinh, ::cosh, ::tanh, ::asinh, ::acosh, ::atanh;

}  // namespace std

namespace baracuda {

// IEEE binary16 and bfloat16 as their bits, converting with round to nearest even (sm_80+).
struct half {
  unsigned short bits;
  half() = default;
  __device__ explicit half(float v) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(v)); }
  __device__ explicit operator float() const {
    float r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(bits));
    return r;
  }
};
struct bfloat16 {
  unsigned short bits;
  bfloat16() = default;
  __device__ explicit bfloat16(float v) { asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(v)); }
  // (one instruction, as cuda_bf16.h's: a shift takes three, which slowed the bf16 kernels)
  __device__ explicit operator float() const {
    float r;
#if __CUDA_ARCH__ >= 900
    asm("cvt.f32.bf16 %0, %1;" : "=f"(r) : "h"(bits));
#else
    asm("mov.b32 %0, {0, %1};" : "=f"(r) : "h"(bits));
#endif
    return r;
  }
};

}  // namespace baracuda

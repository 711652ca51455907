#pragma once
// One dtype dispatch for every backend. Each backend names its own 16-bit storage types (the host
// types on the CPU, __half / __nv_bfloat16 under CUDA); f(std::type_identity<T>{}) is called with
// the element type.
namespace baracuda::detail {

// The dtypes a kind's Math takes besides the floats (forward only: an integer or bool result has no
// gradient): none (the default), the integers i8 u8 i32 i64, or those and bool. A Math with
// `kFloats = false` takes no float dtype (the bitwise ops).
enum class IntegerDTypes : unsigned char { none, integers, integers_and_bool };

}  // namespace baracuda::detail

// The dispatch itself is the host's (NVRTC reads the enum above alone: the Maths name it).
#if !defined(__CUDACC_RTC__)
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::detail {

// The floating types, and the types listed in `Also` (of int32_t, int64_t, bool: the ops that also
// take integers, as the reductions do); any other dtype is an unsupported error.
template <class Half, class BFloat16, class... Also, class F>
Status dispatch_float(DType dtype, F&& f) {
  Status status;
  [[maybe_unused]] auto also = [&](auto type) {
    if (dtype != dtype_of_v<typename decltype(type)::type>) return false;
    static_cast<void>(status = f(type));  // (nvcc counts operator='s Status& as a discarded Status)
    return true;
  };
  if ((also(std::type_identity<Also>{}) || ...)) return status;
  switch (dtype) {
    case DType::f16:
      return f(std::type_identity<Half>{});
    case DType::bf16:
      return f(std::type_identity<BFloat16>{});
    case DType::f32:
      return f(std::type_identity<float>{});
    case DType::f64:
      return f(std::type_identity<double>{});
    default:
      return Status::error(StatusCode::unsupported, "dtype " + std::string(dtype_name(dtype)) + " has no kernel here");
  }
}

// Families whose kinds are Maths split over translation units by group (unary, binary): `Groups` is a
// std::tuple of groups, each a std::tuple of Maths with a static kKind.
template <class Group>
struct GroupHas;
template <class... Maths>
struct GroupHas<std::tuple<Maths...>> {
  template <class Kind>
  static constexpr bool of(Kind kind) {
    return ((Maths::kKind == kind) || ...);
  }
};

// Calls f(std::integral_constant<int, G>{}) for the group G of `Groups` that holds the kind.
template <class Groups, class Kind, class F, int G = 0>
Status with_group(Kind kind, F&& f) {
  if constexpr (G < static_cast<int>(std::tuple_size_v<Groups>)) {
    if (GroupHas<std::tuple_element_t<G, Groups>>::of(kind)) return f(std::integral_constant<int, G>{});
    return with_group<Groups, Kind, F, G + 1>(kind, std::forward<F>(f));
  } else {
    return Status::error(StatusCode::invalid_problem, "no kind " + std::to_string(static_cast<int>(kind)));
  }
}

template <class Math>
constexpr IntegerDTypes integer_dtypes_of() {
  if constexpr (requires { Math::kIntegers; })
    return Math::kIntegers;
  else
    return IntegerDTypes::none;
}
template <class Math>
constexpr bool takes_floats() {
  if constexpr (requires { Math::kFloats; })
    return Math::kFloats;
  else
    return true;
}
// Whether the Math's forward takes `dtype` (select's check; the dispatch below follows it).
template <class Math>
constexpr bool math_takes(DType dtype) {
  switch (dtype) {
    case DType::f16:
    case DType::bf16:
    case DType::f32:
    case DType::f64:
      return takes_floats<Math>();
    case DType::boolean:
      return integer_dtypes_of<Math>() == IntegerDTypes::integers_and_bool;
    default:
      return integer_dtypes_of<Math>() != IntegerDTypes::none;
  }
}
// Whether the Math of `kind` in any group of `Groups` takes `dtype`.
template <class Groups, class Kind>
constexpr bool kind_takes(Kind kind, DType dtype) {
  return std::apply(
      [&](auto... group) {
        return (std::apply(
                    [&](auto... math) {
                      return ((decltype(math)::kKind == kind && math_takes<decltype(math)>(dtype)) || ...);
                    },
                    group) ||
                ...);
      },
      Groups{});
}

// Calls f(std::type_identity<Math>{}, std::type_identity<T>{}) for the kind's Math in `Group` and the
// element type of dtype (the backend's own 16-bit types): a float dtype where the Math takes floats;
// with kIntegers (a forward), also the integer dtypes (and bool) the Math takes.
template <class Group, class Half, class BFloat16, bool kIntegers = false, class Kind, class F, size_t I = 0>
Status dispatch_kind(Kind kind, DType dtype, F&& f) {
  if constexpr (I < std::tuple_size_v<Group>) {
    using Math = std::tuple_element_t<I, Group>;
    if (Math::kKind != kind)
      return dispatch_kind<Group, Half, BFloat16, kIntegers, Kind, F, I + 1>(kind, dtype, std::forward<F>(f));
    auto call = [&](auto element) { return f(std::type_identity<Math>{}, element); };
    constexpr IntegerDTypes kInts = kIntegers ? integer_dtypes_of<Math>() : IntegerDTypes::none;
    if constexpr (kInts != IntegerDTypes::none) {
      switch (dtype) {
        case DType::i8:
          return call(std::type_identity<int8_t>{});
        case DType::u8:
          return call(std::type_identity<uint8_t>{});
        case DType::i32:
          return call(std::type_identity<int32_t>{});
        case DType::i64:
          return call(std::type_identity<int64_t>{});
        case DType::boolean:
          if constexpr (kInts == IntegerDTypes::integers_and_bool) return call(std::type_identity<bool>{});
          break;
        default:
          break;
      }
    }
    if constexpr (takes_floats<Math>())
      return dispatch_float<Half, BFloat16>(dtype, call);
    else
      return Status::error(StatusCode::unsupported, "dtype " + std::string(dtype_name(dtype)) + " has no kernel here");
  } else {
    return Status::error(StatusCode::invalid_problem,
                         "kind " + std::to_string(static_cast<int>(kind)) + " is not in this group");
  }
}

// Index tensors are i32 or i64 (validated by the plans).
template <class F>
Status dispatch_index(DType index_dtype, F&& f) {
  if (index_dtype == DType::i32) return f(std::type_identity<int32_t>{});
  return f(std::type_identity<int64_t>{});
}

}  // namespace baracuda::detail
#endif

#pragma once
// One dtype dispatch for every backend. Each backend names its own 16-bit storage types (the host
// types on the CPU, __half / __nv_bfloat16 under CUDA); f(std::type_identity<T>{}) is called with
// the element type.
#include <cstddef>
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

// Calls f(std::type_identity<Math>{}, std::type_identity<T>{}) for the kind's Math in `Group` and the
// element type of a float dtype (the backend's own 16-bit types).
template <class Group, class Half, class BFloat16, class Kind, class F, size_t I = 0>
Status dispatch_kind(Kind kind, DType dtype, F&& f) {
  if constexpr (I < std::tuple_size_v<Group>) {
    using Math = std::tuple_element_t<I, Group>;
    if (Math::kKind == kind)
      return dispatch_float<Half, BFloat16>(dtype,
                                            [&](auto element) { return f(std::type_identity<Math>{}, element); });
    return dispatch_kind<Group, Half, BFloat16, Kind, F, I + 1>(kind, dtype, std::forward<F>(f));
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

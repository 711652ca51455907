#pragma once
// One dtype dispatch for every backend. Each backend names its own 16-bit storage types (the host
// types on the CPU, __half / __nv_bfloat16 under CUDA); f(std::type_identity<T>{}) is called with
// the element type.
#include <type_traits>

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

// Index tensors are i32 or i64 (validated by the plans).
template <class F>
Status dispatch_index(DType index_dtype, F&& f) {
  if (index_dtype == DType::i32) return f(std::type_identity<int32_t>{});
  return f(std::type_identity<int64_t>{});
}

}  // namespace baracuda::detail

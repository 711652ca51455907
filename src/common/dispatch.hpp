#pragma once
// One dtype dispatch for every backend. Each backend names its own 16-bit storage types (the host
// types on the CPU, __half / __nv_bfloat16 under CUDA); f(std::type_identity<T>{}) is called with
// the element type.
#include <type_traits>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::detail {

template <class Half, class BFloat16, class F>
Status dispatch_float(DType dtype, F&& f) {
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
      return Status::error(StatusCode::unsupported,
                           "dtype " + std::string(dtype_name(dtype)) + " has no floating-point kernel");
  }
}

// Index tensors are i32 or i64 (validated by the plans).
template <class F>
Status dispatch_index(DType index_dtype, F&& f) {
  if (index_dtype == DType::i32) return f(std::type_identity<int32_t>{});
  return f(std::type_identity<int64_t>{});
}

}  // namespace baracuda::detail

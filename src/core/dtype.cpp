#include "baracuda/core/dtype.hpp"

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

std::optional<DType> promote_types(DType a, DType b) {
  if (a == b || b == DType::boolean) return a;
  if (a == DType::boolean) return b;
  if (is_floating(a) != is_floating(b)) return is_floating(a) ? a : b;
  if (dtype_size(a) != dtype_size(b)) return dtype_size(a) > dtype_size(b) ? a : b;
  if (is_floating(a)) return DType::f32;  // f16 with bf16: neither holds the other
  return std::nullopt;                    // u8 with i8: i16
}

DType promote_with_scalar(DType tensor, DType scalar) {
  auto category = [](DType t) { return is_floating(t) ? 2 : (t == DType::boolean ? 0 : 1); };
  if (category(scalar) <= category(tensor)) return tensor;
  return category(scalar) == 2 ? DType::f32 : DType::i64;
}

}  // namespace baracuda

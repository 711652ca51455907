#pragma once
// The integer side of the elementwise references: PyTorch's integer tensor semantics computed in
// int64 through uint64 (two's complement, no undefined overflow) and wrapped to the dtype at the end.
// Independent of both backends (nothing here calls src/common/).
#include <cstdint>

#include "baracuda/core/dtype.hpp"

namespace baracuda::reference {

// v reduced to the dtype's width (two's complement wrap; bool: v != 0), as a double (exact below 2^53,
// where the samples stay but for pow's wrapped i64 results: those compare after the same rounding of
// both sides, so tests/test_integer_elementwise.cpp checks exact ones).
inline double wrap_to(DType dtype, uint64_t v) {
  switch (dtype) {
    case DType::boolean:
      return v != 0;
    case DType::i8:
      return static_cast<int8_t>(static_cast<uint8_t>(v));
    case DType::u8:
      return static_cast<uint8_t>(v);
    case DType::i32:
      return static_cast<int32_t>(static_cast<uint32_t>(v));
    default:
      return static_cast<double>(static_cast<int64_t>(v));
  }
}

// The dtype's width in bits (PyTorch's shift rules count it).
inline int64_t bit_width(DType dtype) { return 8 * static_cast<int64_t>(dtype_size(dtype)); }

}  // namespace baracuda::reference

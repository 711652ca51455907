#pragma once
// The element types (dtype.hpp has their sizes, names and promotions): plain C++ with no include,
// which the kernels compiled at select (NVRTC) read as well as the host.
namespace baracuda {

enum class DType : unsigned char { f16, bf16, f32, f64, i8, u8, i32, i64, boolean };

}  // namespace baracuda

#pragma once
// A tensor against an f64 reference output, element by element, as the op table judges it: NaN
// where the reference is NaN, exactly where it is infinite or an exact 0 of no scale, else within
// `tol` relative to the reference's scale (plus one accumulator rounding per summed term).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "harness/op_table.hpp"

namespace baracuda::testing {

inline ::testing::AssertionResult matches_reference(const harness::Tensor& got, const harness::RefOutput& want,
                                                    double tol, DType accumulator) {
  for (int64_t i = 0; i < got.shape.numel(); ++i) {
    const double g = got.at(i), w = want.value(i);
    bool ok = std::fabs(g - w) <= tol * (1 + want.verify_scale(i, tol, accumulator));
    if (std::isnan(w)) ok = std::isnan(g);
    if ((w == 0 && want.magnitude(i) == 0) || std::isinf(w)) ok = g == w;
    if (!ok)
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << g << ", want " << w << " (tolerance " << tol << ")";
  }
  return ::testing::AssertionSuccess();
}

// Every value of a 16-bit float dtype (f16, bf16), in the order of their bits: the infinities and
// NaNs included.
inline std::vector<double> every_16bit_value(DType dtype) {
  std::vector<double> v(65536);
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    v[b] =
        dtype == DType::f16 ? static_cast<float>(half::from_bits(bits)) : static_cast<float>(bfloat16::from_bits(bits));
  }
  return v;
}
// Whether g, a value of the 16-bit float dtype, is a nearest value of that dtype to the exact result
// `exact` (f64): neither of g's neighbours is nearer (NaN for NaN; where the rounding overflows or
// underflows to 0, that infinity or 0). Independent of how a double rounds to the dtype.
inline bool is_nearest_16bit(DType dtype, double g, double exact) {
  if (std::isnan(exact)) return std::isnan(g);
  const double rounded = harness::quantize(dtype, exact);
  if (std::isinf(rounded) || rounded == 0 || std::isnan(g) || std::isinf(g)) return g == rounded;
  const auto value = [dtype](uint16_t bits) {
    return dtype == DType::f16 ? static_cast<double>(static_cast<float>(half::from_bits(bits)))
                               : static_cast<double>(static_cast<float>(bfloat16::from_bits(bits)));
  };
  const uint16_t bits = dtype == DType::f16 ? half(static_cast<float>(g)).bits : bfloat16(static_cast<float>(g)).bits;
  const double error = std::fabs(g - exact);
  const double up = value(static_cast<uint16_t>(bits + 1));  // (bits + 1 past the largest: inf, farther)
  const double down = (bits & 0x7fff) == 0 ? -g : value(static_cast<uint16_t>(bits - 1));
  return error <= std::fabs(up - exact) && error <= std::fabs(down - exact);
}

}  // namespace baracuda::testing

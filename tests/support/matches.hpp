#pragma once
// A tensor against an f64 reference output, element by element, as the op table judges it: NaN
// where the reference is NaN, exactly where it is infinite or an exact 0 of no scale, else within
// `tol` relative to the reference's scale (plus one accumulator rounding per summed term).
#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace baracuda::testing

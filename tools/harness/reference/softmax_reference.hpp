#pragma once
// Naive double-precision references for the softmax family, independent of both backends: each row
// along dim in two passes (the max, then the sum of exp(x - max)), as PyTorch defines the edge
// values: a row with a NaN, a +inf or nothing but -inf is NaN throughout.
#include <cmath>
#include <cstdint>
#include <limits>

#include "baracuda/ops/softmax.hpp"
#include "harness/op_table.hpp"

namespace baracuda::reference {

// Calls f(index) where index(l) is the row-major linear index of element l of the row, for every
// row along `dim` of `shape`.
template <class F>
void for_each_softmax_row(const Shape& shape, int dim, F f) {
  if (dim < 0) dim += shape.rank;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= shape.dims[d];
  for (int d = dim + 1; d < shape.rank; ++d) inner *= shape.dims[d];
  const int64_t length = shape.dims[dim];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t n = 0; n < inner; ++n) f([=](int64_t l) { return (o * length + l) * inner + n; }, length);
}

inline void softmax_forward(const SoftmaxDescriptor& d, harness::RefIO& io) {
  const harness::HostView& x = io.in("x");
  harness::RefOutput& y = io.out("y");
  const bool log = d.kind == SoftmaxKind::log_softmax;
  for_each_softmax_row(d.shape, d.dim, [&](auto index, int64_t length) {
    double max = -std::numeric_limits<double>::infinity();
    bool nan = false;
    for (int64_t l = 0; l < length; ++l) {
      const double v = x.at(index(l));
      nan = nan || std::isnan(v);
      max = std::max(max, v);
    }
    double sum = 0;
    for (int64_t l = 0; l < length; ++l) sum += std::exp(x.at(index(l)) - max);
    const bool undefined = nan || std::isinf(max);  // +inf inside, or only -inf
    for (int64_t l = 0; l < length; ++l) {
      const int64_t i = index(l);
      if (!y.wanted(i)) continue;
      const double v = x.at(i);
      y.set(i, undefined ? std::nan("") : log ? (v - max) - std::log(sum) : std::exp(v - max) / sum);
    }
  });
}

// A value that is a sum: its scale is the sum of its terms' magnitudes (as RefOutput::add keeps it),
// given here in two halves so that the row's sum is not recomputed per element.
inline void set_sum(harness::RefOutput& out, int64_t i, double value, double magnitude) {
  out.add(i, (value + magnitude) / 2);
  out.add(i, (value - magnitude) / 2);
}

inline void softmax_backward(const SoftmaxDescriptor& d, harness::RefIO& io) {
  const harness::HostView &y = io.in("y"), &dy = io.in("dy");
  harness::RefOutput& dx = io.out("dx");
  const bool log = d.kind == SoftmaxKind::log_softmax;
  for_each_softmax_row(d.shape, d.dim, [&](auto index, int64_t length) {
    double sum = 0, magnitude = 0;  // of dy y (softmax) or dy (log_softmax)
    for (int64_t l = 0; l < length; ++l) {
      const double term = log ? dy.at(index(l)) : dy.at(index(l)) * y.at(index(l));
      sum += term;
      magnitude += std::fabs(term);
    }
    for (int64_t l = 0; l < length; ++l) {
      const int64_t i = index(l);
      if (!dx.wanted(i)) continue;
      const double yv = y.at(i), g = dy.at(i);
      if (log)
        set_sum(dx, i, g - std::exp(yv) * sum, std::fabs(g) + std::exp(yv) * magnitude);
      else
        set_sum(dx, i, yv * (g - sum), std::fabs(yv) * (std::fabs(g) + magnitude));
    }
  });
}

}  // namespace baracuda::reference

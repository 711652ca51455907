#pragma once
// Naive double-precision references for the softmax family, independent of both backends, each row
// along dim on its own: softmax and log_softmax in two passes (the max, then the sum of
// exp(x - max)); sparsemax and entmax15 by their sort-based definitions (sort the row, scan it for the
// support, whose closed form gives the threshold). Edge values as PyTorch defines them for softmax,
// for every kind: a row with a NaN, a +inf or nothing but -inf is NaN throughout; otherwise a -inf
// entry gives exactly 0 (log_softmax: -inf). Every kind shifts the row by its max first, so
// magnitudes such as 1e30 never overflow.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>
#include <vector>

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

// A value that is a sum: its scale is the sum of its terms' magnitudes (as RefOutput::add keeps it),
// given here in two halves so that the row's sum is not recomputed per element.
inline void set_sum(harness::RefOutput& out, int64_t i, double value, double magnitude) {
  out.add(i, (value + magnitude) / 2);
  out.add(i, (value - magnitude) / 2);
}

inline bool is_sparse_kind(SoftmaxKind kind) { return kind == SoftmaxKind::sparsemax || kind == SoftmaxKind::entmax15; }

// The kind as its function is named (test notes and traces).
inline std::string_view softmax_kind_name(SoftmaxKind kind) {
  switch (kind) {
    case SoftmaxKind::softmax:
      return "softmax";
    case SoftmaxKind::log_softmax:
      return "log_softmax";
    case SoftmaxKind::sparsemax:
      return "sparsemax";
    case SoftmaxKind::entmax15:
      return "entmax15";
  }
  return "an invalid kind";
}

// sparsemax's threshold tau over a row's finite entries z: with z sorted descending, the support is
// the first k entries, k the largest j with 1 + j z_j > z_1 + ... + z_j, and tau = (z_1 + ... + z_k - 1)
// / k, so that the y = z - tau of the support sum to 1. Tied entries pass or fail the test together
// (adding z_j to both sides of the test at j - 1 gives the test at j), so ties are all in or all out.
inline double sparsemax_threshold(std::vector<double> z) {
  std::sort(z.begin(), z.end(), std::greater<>());
  double sum = 0, tau = 0;
  for (size_t j = 1; j <= z.size(); ++j) {
    sum += z[j - 1];
    if (1 + static_cast<double>(j) * z[j - 1] > sum) tau = (sum - 1) / static_cast<double>(j);
  }
  return tau;
}

// entmax15's threshold tau over a row's finite entries z (x / 2): with z sorted descending, tau_j is
// the tau that makes the first j entries' (z - tau)^2 sum to 1, mean_j - sqrt((1 - ss_j) / j) (ss_j:
// the sum of their squared deviations from their mean); the support size k is the number of j with
// tau_j <= z_j (the rule of the `entmax` package's entmax15), and tau = tau_k.
inline double entmax15_threshold(std::vector<double> z) {
  std::sort(z.begin(), z.end(), std::greater<>());
  std::vector<double> tau(z.size());
  // Welford's running mean and ss: the textbook j (mean of squares - mean^2) cancels catastrophically
  // where the entries past the support are large.
  double mean = 0, ss = 0;
  size_t support = 0;
  for (size_t j = 1; j <= z.size(); ++j) {
    const double v = z[j - 1], before = v - mean;
    mean += before / static_cast<double>(j);
    ss += before * (v - mean);
    tau[j - 1] = mean - std::sqrt(std::max((1 - ss) / static_cast<double>(j), 0.0));
    support += tau[j - 1] <= v;
  }
  return tau[support - 1];  // j = 1 always counts: tau_1 = z_1 - 1
}

// One row of sparsemax or entmax15 into y. z = x - max (sparsemax) or (x - max) / 2 (entmax15); y =
// max(z - tau, 0) (sparsemax) or its square (entmax15). An output is a difference z - tau, so its error
// scale is |z| + |tau| (entmax15: times 2 (z - tau), the square's derivative, plus y); an entry below
// the threshold by less than ~2^-12 of that scale (2^-41 in f64), where the compute type's roundings
// of tau may put it on either side, is 0 within that scale. Entries clearly below the threshold, and
// -inf entries, are exactly 0.
template <class Index>
void sparse_row(const SoftmaxDescriptor& d, const std::vector<double>& x, double max, Index index,
                harness::RefOutput& y) {
  const bool entmax = d.kind == SoftmaxKind::entmax15;
  const double shrink = entmax ? 0.5 : 1.0;
  std::vector<double> finite;
  for (double v : x)
    if (v != -std::numeric_limits<double>::infinity()) finite.push_back((v - max) * shrink);
  const double tau = entmax ? entmax15_threshold(finite) : sparsemax_threshold(finite);
  const DType compute = d.dtype == DType::f64 ? DType::f64 : DType::f32;
  const double margin = 4096 * harness::unit_roundoff(compute);
  for (size_t l = 0; l < x.size(); ++l) {
    const int64_t i = index(static_cast<int64_t>(l));
    if (!y.wanted(i)) continue;
    if (x[l] == -std::numeric_limits<double>::infinity()) {
      y.set(i, 0.0);
      continue;
    }
    const double z = (x[l] - max) * shrink, above = z - tau, scale = std::fabs(z) + std::fabs(tau);
    if (above > 0)
      set_sum(y, i, entmax ? above * above : above, entmax ? 2 * above * scale + above * above : scale);
    else if (above >= -margin * scale)
      set_sum(y, i, 0.0, scale);
    else
      y.set(i, 0.0);
  }
}

inline void softmax_forward(const SoftmaxDescriptor& d, harness::RefIO& io) {
  const harness::HostView& x = io.in("x");
  harness::RefOutput& y = io.out("y");
  const bool log = d.kind == SoftmaxKind::log_softmax;
  for_each_softmax_row(d.shape, d.dim, [&](auto index, int64_t length) {
    std::vector<double> row(static_cast<size_t>(length));
    double max = -std::numeric_limits<double>::infinity();
    bool nan = false;
    for (int64_t l = 0; l < length; ++l) {
      const double v = row[l] = x.at(index(l));
      nan = nan || std::isnan(v);
      max = std::max(max, v);
    }
    if (nan || std::isinf(max)) {  // +inf inside, or only -inf
      for (int64_t l = 0; l < length; ++l)
        if (y.wanted(index(l))) y.set(index(l), std::nan(""));
      return;
    }
    if (is_sparse_kind(d.kind)) return sparse_row(d, row, max, index, y);
    double sum = 0;
    for (double v : row) sum += std::exp(v - max);
    for (int64_t l = 0; l < length; ++l) {
      const int64_t i = index(l);
      if (!y.wanted(i)) continue;
      const double v = row[l];
      y.set(i, log ? (v - max) - std::log(sum) : std::exp(v - max) / sum);
    }
  });
}

// The backward of every kind is dx = w (dy - sum(w dy) / sum(w)) for weights w of y (softmax: w = y,
// and sum(w) = 1; sparsemax: w = [y > 0]; entmax15: w = sqrt(y) where y > 0, else 0), except
// log_softmax: dx = dy - exp(y) sum(dy). A sparse kind's element whose weight is 0 gets exactly 0;
// a NaN y (the forward's NaN row) makes its row NaN throughout, as softmax's sum does.
inline void softmax_backward(const SoftmaxDescriptor& d, harness::RefIO& io) {
  const harness::HostView &y = io.in("y"), &dy = io.in("dy");
  harness::RefOutput& dx = io.out("dx");
  const bool log = d.kind == SoftmaxKind::log_softmax;
  auto weight = [&](double yv) {
    if (std::isnan(yv)) return yv;
    switch (d.kind) {
      case SoftmaxKind::sparsemax:
        return yv > 0 ? 1.0 : 0.0;
      case SoftmaxKind::entmax15:
        return yv > 0 ? std::sqrt(yv) : 0.0;
      default:
        return yv;
    }
  };
  for_each_softmax_row(d.shape, d.dim, [&](auto index, int64_t length) {
    double sum = 0, magnitude = 0;  // of w dy (log_softmax: dy)
    double weights = 0;             // sum(w), for the sparse kinds
    for (int64_t l = 0; l < length; ++l) {
      const double w = log ? 1.0 : weight(y.at(index(l))), term = w * dy.at(index(l));
      sum += term;
      magnitude += std::fabs(term);
      weights += w;
    }
    if (!is_sparse_kind(d.kind)) weights = 1;  // softmax's y sums to 1 (the backward does not divide)
    for (int64_t l = 0; l < length; ++l) {
      const int64_t i = index(l);
      if (!dx.wanted(i)) continue;
      const double yv = y.at(i), g = dy.at(i);
      if (log) {
        set_sum(dx, i, g - std::exp(yv) * sum, std::fabs(g) + std::exp(yv) * magnitude);
        continue;
      }
      const double w = weight(yv);
      if (w == 0 && is_sparse_kind(d.kind) && !std::isnan(sum)) {
        dx.set(i, 0.0);
        continue;
      }
      set_sum(dx, i, w * (g - sum / weights), std::fabs(w) * (std::fabs(g) + magnitude / weights));
    }
  });
}

}  // namespace baracuda::reference

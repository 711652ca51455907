#pragma once
// Naive double-precision references for the scans (include/baracuda/ops/scan.hpp), independent of
// both backends: each line along dim walked in the scan's order (index 0 first, or with reverse the
// last), every kind from its definition. Forward: running sums and products; cummax / cummin as
// PyTorch's (a tie and a later NaN take the index; a NaN beats every number); logcumsumexp shifted
// by the running max (-inf while nothing but -inf came, +inf after a +inf, NaN after a NaN).
// Backward, from the views the header says each kind reads, as dx[i] = the sum over the j at or
// after i of dout[j] * d out[j] / d x[i], never through the kernels' reversed affine scan:
//   cumsum         the sum of dout[j] over j >= i
//   cumprod        out[i-1] * sum_j dout[j] * x[i+1] ... x[j]   (each product multiplied out: exact
//                  with zeros; without them, prefix products divided, the same within f64's rounding)
//   cummax/cummin  the sum of dout[j] over the j whose indices[j] is i
//   logcumsumexp   sum_j dout[j] * exp(x[i] - out[j])   (0 where x[i] is -inf)
// (with reverse "j >= i" is "j <= i" and i-1 is i+1). An integer cumsum is exact, wrapping as
// reduce_reference.hpp's IntegerFold.
//
// Error scales (RefOutput): a running sum keeps its terms' magnitudes and count, as RefOutput::add
// would; a product, a logcumsumexp and a gradient get one accumulator rounding per element they
// take.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "baracuda/ops/scan.hpp"
#include "harness/op_table.hpp"
#include "harness/reference/reduce_reference.hpp"

namespace baracuda::reference {

inline std::string_view scan_kind_name(ScanKind kind) {
  constexpr std::string_view kNames[] = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"};
  const auto k = static_cast<size_t>(kind);
  return k < std::size(kNames) ? kNames[k] : "an invalid kind";
}

inline bool scan_has_indices(ScanKind kind) { return kind == ScanKind::cummax || kind == ScanKind::cummin; }
// The kinds whose backward reads x and out (the others read dout, and cummax / cummin indices).
inline bool scan_reads_saved(ScanKind kind) { return kind == ScanKind::cumprod || kind == ScanKind::logcumsumexp; }

// x's lines along the scanned dim: `lines` of `n` elements, `step` apart in row-major order (a
// scalar is one line of one element).
class ScanLayout {
 public:
  explicit ScanLayout(const ScanDescriptor& d) {
    if (d.shape.rank == 0) return;
    const int k = d.dim < 0 ? d.dim + d.shape.rank : d.dim;
    n_ = d.shape.dims[k];
    int64_t outer = 1;
    for (int j = 0; j < k; ++j) outer *= d.shape.dims[j];
    for (int j = k + 1; j < d.shape.rank; ++j) step_ *= d.shape.dims[j];
    lines_ = outer * step_;
  }
  int64_t lines() const { return lines_; }
  int64_t n() const { return n_; }
  // The row-major index of element e (its index along dim) of line l.
  int64_t linear(int64_t l, int64_t e) const { return (l / step_) * n_ * step_ + l % step_ + e * step_; }

 private:
  int64_t lines_ = 1, n_ = 1, step_ = 1;
};

// Calls f(at, n) for every line, at(t) the row-major index of the line's t-th element in the scan's
// order; skips lines with no element.
template <class F>
void for_each_scan_line(const ScanDescriptor& d, F&& f) {
  const ScanLayout layout(d);
  if (layout.n() == 0) return;
  const int64_t n = layout.n();
  for (int64_t l = 0; l < layout.lines(); ++l)
    f([&, l](int64_t t) { return layout.linear(l, d.reverse ? n - 1 - t : t); }, n);
}

// Whether b, coming after a in the scan's order, takes the place of the extreme a (PyTorch's cummax
// / cummin: a NaN beats every number and a later NaN the earlier one; a tie goes to the later
// element).
inline bool later_extreme_wins(double a, double b, bool max) {
  if (std::isnan(b)) return true;
  if (std::isnan(a)) return false;
  return max ? b >= a : b <= a;
}

inline void scan_forward(const ScanDescriptor& d, harness::RefIO& io) {
  const harness::HostView& x = io.in("x");
  harness::RefOutput& out = io.out("out");
  harness::RefOutput& indices = io.out("indices");
  const DType out_dtype = io.specs[static_cast<size_t>(io.index_of("out"))].dtype;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for_each_scan_line(d, [&](auto at, int64_t n) {
    if (!is_floating(d.dtype)) {  // an integer cumsum
      reference::IntegerFold sum;
      for (int64_t t = 0; t < n; ++t) {
        sum.fold(x.at(at(t)));
        out.set(at(t), sum.value(out_dtype));
      }
      return;
    }
    double sum = 0, magnitude = 0, product = 1;
    double extreme = 0, max = -kInf, shifted = 0;  // logcumsumexp: the finite max, sum of exp(x - max)
    bool nan = false, inf = false;
    int64_t index = -1;
    for (int64_t t = 0; t < n; ++t) {
      const int64_t i = at(t);
      const double v = x.at(i);
      switch (d.kind) {
        case ScanKind::cumsum:
          sum += v;
          magnitude += std::fabs(v);
          set_computed(out, i, sum, magnitude, t + 1);
          break;
        case ScanKind::cumprod:
          product *= v;
          set_computed(out, i, product, std::fabs(product), t + 1);
          break;
        case ScanKind::cummax:
        case ScanKind::cummin:
          if (index < 0 || later_extreme_wins(extreme, v, d.kind == ScanKind::cummax)) {
            extreme = v;
            index = d.reverse ? n - 1 - t : t;
          }
          out.set(i, extreme);
          indices.set(i, static_cast<double>(index));
          break;
        case ScanKind::logcumsumexp: {
          nan = nan || std::isnan(v);
          inf = inf || v == kInf;
          if (std::isfinite(v)) {
            if (v > max) {
              shifted = shifted * std::exp(max - v) + 1;
              max = v;
            } else {
              shifted += std::exp(v - max);
            }
          }
          const double value = nan ? std::nan("") : inf ? kInf : max == -kInf ? -kInf : max + std::log(shifted);
          set_computed(out, i, value, std::fabs(value), t + 1);
          break;
        }
      }
    }
  });
}

// cumprod's gradient along one line (scan order t): out[t-1] times the sum over u >= t of dout[u]
// times the product x[t+1] ... x[u].
template <class At>
void cumprod_gradient(const harness::HostView& x, const harness::HostView& out, const harness::HostView& dout,
                      harness::RefOutput& dx, At at, int64_t n) {
  // Without a zero, an inf or a NaN, and while the prefix products neither underflow nor overflow
  // f64 (the table's and the profiler's lines): x[t+1] ... x[u] = prefix[u] / prefix[t]. Otherwise
  // each product multiplied out.
  std::vector<double> prefix(static_cast<size_t>(n));
  bool divide = true;
  double p = 1;
  for (int64_t t = 0; t < n && divide; ++t) {
    prefix[t] = p *= x.at(at(t));
    divide = std::isfinite(p) && std::fabs(p) > 1e-280 && std::fabs(p) < 1e280;
  }
  std::vector<double> tail(static_cast<size_t>(n) + 1, 0.0), tail_magnitude(tail.size(), 0.0);
  std::vector<char> finite_after(static_cast<size_t>(n) + 1, 1);  // x finite past u
  for (int64_t u = n - 1; u >= 0; --u) {
    finite_after[u] = finite_after[u + 1] && (u + 1 >= n || std::isfinite(x.at(at(u + 1))));
    if (!divide) continue;
    tail[u] = tail[u + 1] + dout.at(at(u)) * prefix[u];
    tail_magnitude[u] = tail_magnitude[u + 1] + std::fabs(dout.at(at(u)) * prefix[u]);
  }
  for (int64_t t = 0; t < n; ++t) {
    const int64_t i = at(t);
    if (!dx.wanted(i)) continue;
    const double before = t == 0 ? 1.0 : out.at(at(t - 1));
    double sum = 0, magnitude = 0;
    if (divide) {
      sum = tail[t] / prefix[t];
      magnitude = tail_magnitude[t] / std::fabs(prefix[t]);
    } else {
      double q = 1;  // x[t+1] ... x[u]
      for (int64_t u = t; u < n; ++u) {
        if (u > t) q *= x.at(at(u));
        sum += dout.at(at(u)) * q;
        magnitude += std::fabs(dout.at(at(u)) * q);
        if (q == 0 && finite_after[u]) break;  // every later product is an exact 0
      }
    }
    set_computed(dx, i, before * sum, std::fabs(before) * magnitude, 2 * (n - t) + 2);
  }
}

// logcumsumexp's gradient along one line: sum over u >= t of dout[u] exp(x[t] - out[u]) (0 where
// x[t] is -inf); as one suffix sum shifted by the line's least finite out where x and out span
// little (the table's and the profiler's lines), else term by term. An out of -inf (only where
// every x so far is -inf) meets only elements whose gradient is 0.
template <class At>
void logcumsumexp_gradient(const harness::HostView& x, const harness::HostView& out, const harness::HostView& dout,
                           harness::RefOutput& dx, At at, int64_t n) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double low = kInf, high = -kInf;
  bool shifted = true, leading = true;  // leading: every x so far is -inf
  for (int64_t t = 0; t < n; ++t) {
    const double o = out.at(at(t)), v = x.at(at(t));
    leading = leading && v == -kInf;
    if (std::isfinite(v))
      high = std::max(high, v);
    else if (v != -kInf)
      shifted = false;
    if (std::isfinite(o)) {
      low = std::min(low, o);
      high = std::max(high, o);
    } else if (o != -kInf || !leading) {
      shifted = false;
    }
  }
  shifted = shifted && (low == kInf || high - low < 200);
  std::vector<double> tail, tail_magnitude;
  if (shifted) {
    tail.assign(static_cast<size_t>(n) + 1, 0.0);
    tail_magnitude.assign(tail.size(), 0.0);
    for (int64_t u = n - 1; u >= 0; --u) {
      const double o = out.at(at(u)), term = o == -kInf ? 0.0 : dout.at(at(u)) * std::exp(low - o);
      tail[u] = tail[u + 1] + term;
      tail_magnitude[u] = tail_magnitude[u + 1] + std::fabs(term);
    }
  }
  for (int64_t t = 0; t < n; ++t) {
    const int64_t i = at(t);
    if (!dx.wanted(i)) continue;
    const double v = x.at(i);
    if (v == -kInf) {
      dx.set(i, 0.0);
      continue;
    }
    double sum = 0, magnitude = 0;
    if (shifted) {
      sum = std::exp(v - low) * tail[t];
      magnitude = std::exp(v - low) * tail_magnitude[t];
    } else {
      for (int64_t u = t; u < n; ++u) {
        const double term = dout.at(at(u)) * std::exp(v - out.at(at(u)));
        sum += term;
        magnitude += std::fabs(term);
      }
    }
    set_computed(dx, i, sum, magnitude, 3 * (n - t) + 3);
  }
}

inline void scan_backward(const ScanDescriptor& d, harness::RefIO& io) {
  const harness::HostView& x = io.in("x");
  const harness::HostView& out = io.in("out");
  const harness::HostView& indices = io.in("indices");
  const harness::HostView& dout = io.in("dout");
  harness::RefOutput& dx = io.out("dx");
  for_each_scan_line(d, [&](auto at, int64_t n) {
    switch (d.kind) {
      case ScanKind::cumsum: {
        double sum = 0, magnitude = 0;
        for (int64_t t = n - 1; t >= 0; --t) {
          sum += dout.at(at(t));
          magnitude += std::fabs(dout.at(at(t)));
          set_computed(dx, at(t), sum, magnitude, n - t);
        }
        break;
      }
      case ScanKind::cumprod:
        cumprod_gradient(x, out, dout, dx, at, n);
        break;
      case ScanKind::cummax:
      case ScanKind::cummin: {
        // indices count along dim; one outside [0, n) names no element.
        auto element = [&](int64_t e) { return at(d.reverse ? n - 1 - e : e); };
        for (int64_t e = 0; e < n; ++e) dx.set(element(e), 0.0);
        for (int64_t t = 0; t < n; ++t) {
          const double index = indices.at(at(t));
          if (index >= 0 && index < static_cast<double>(n))
            dx.add(element(static_cast<int64_t>(index)), dout.at(at(t)));
        }
        break;
      }
      case ScanKind::logcumsumexp:
        logcumsumexp_gradient(x, out, dout, dx, at, n);
        break;
    }
  });
}

}  // namespace baracuda::reference

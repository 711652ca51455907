#pragma once
// Naive double-precision references for the reduction family (include/baracuda/ops/reduce.hpp),
// independent of both backends: each output's reduced elements walked in row-major order, every
// kind from its definition (two passes where the definition has them: the mean before the squared
// deviations, the max before the sum of exp). Edge values as the header documents them (PyTorch's):
// a NaN beats every number in the extremes (the first NaN's index), NaN propagates through the
// value kinds, logsumexp of nothing but -inf is -inf and of a row with +inf is +inf, an empty
// reduced set gives sum 0, prod 1, mean / var / std NaN, logsumexp -inf, norm 0, any false, all
// true, count 0; var / std divide by max(n - correction, 0); var_mean gives var's value and mean's.
// Integer sums and products are exact in two's complement: they wrap at 64 bits and again at out's 32
// when out is i32.
//
// Error scales (RefOutput): a sum of n terms keeps each term (RefOutput::add); a value the plan
// computes from n elements by other means (a product, a norm, a standard deviation, a logsumexp)
// is given its own scale and n terms, so that its tolerance grows by one rounding of the plan's
// accumulator per element, as a sum's does.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "baracuda/ops/reduce.hpp"
#include "harness/op_table.hpp"

namespace baracuda::reference {

inline std::string_view reduce_kind_name(ReduceKind kind) {
  constexpr std::string_view kNames[] = {"sum",       "mean",   "prod",   "amax",          "amin",    "max",
                                         "min",       "argmax", "argmin", "var",           "std",     "norm",
                                         "logsumexp", "any",    "all",    "count_nonzero", "var_mean"};
  const auto k = static_cast<size_t>(kind);
  return k < std::size(kNames) ? kNames[k] : "an invalid kind";
}

// The kinds with a gradient.
inline bool reduce_differentiable(ReduceKind kind) {
  return kind != ReduceKind::argmax && kind != ReduceKind::argmin && kind != ReduceKind::any &&
         kind != ReduceKind::all && kind != ReduceKind::count_nonzero;
}
// The kinds that write `indices` / `out`.
inline bool reduce_has_indices(ReduceKind kind) {
  return kind == ReduceKind::max || kind == ReduceKind::min || kind == ReduceKind::argmax || kind == ReduceKind::argmin;
}
inline bool reduce_has_values(ReduceKind kind) { return kind != ReduceKind::argmax && kind != ReduceKind::argmin; }
// The kinds whose result is one of the elements (select refuses them over an empty reduced set).
inline bool reduce_picks_element(ReduceKind kind, double p) {
  switch (kind) {
    case ReduceKind::amax:
    case ReduceKind::amin:
    case ReduceKind::max:
    case ReduceKind::min:
    case ReduceKind::argmax:
    case ReduceKind::argmin:
      return true;
    case ReduceKind::norm:
      return std::isinf(p);
    default:
      return false;
  }
}

// The dtypes x may have for a kind: floats; i32 and i64 for all but the means, var, std, var_mean,
// norm and logsumexp; bool for any, all and count_nonzero.
inline std::vector<DType> reduce_dtypes(ReduceKind kind) {
  const bool real = kind == ReduceKind::mean || kind == ReduceKind::var || kind == ReduceKind::std ||
                    kind == ReduceKind::var_mean || kind == ReduceKind::norm || kind == ReduceKind::logsumexp;
  const bool counts = kind == ReduceKind::any || kind == ReduceKind::all || kind == ReduceKind::count_nonzero;
  constexpr DType kAll[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64, DType::boolean};
  return {std::begin(kAll), std::end(kAll) - (real ? 3 : counts ? 0 : 1)};
}

// An integer sum (or product) of whole-number values, in 64-bit two's complement, and its value
// wrapped to `out` (i32 or i64).
struct IntegerFold {
  bool product = false;
  uint64_t bits = product ? 1 : 0;
  void fold(double x) {
    const auto b = static_cast<uint64_t>(static_cast<int64_t>(x));
    bits = product ? bits * b : bits + b;
  }
  double value(DType out) const {
    if (out == DType::i32) return static_cast<int32_t>(static_cast<uint32_t>(bits));
    return static_cast<double>(static_cast<int64_t>(bits));
  }
};

// x's dims split into kept and reduced; outputs row-major over the kept dims (with keepdim the
// inserted size-1 dims do not change an output's row-major index), each output's elements row-major
// over the reduced dims (an element's index in its reduced set, what `indices` holds).
class ReduceLayout {
 public:
  explicit ReduceLayout(const ReduceDescriptor& d) : shape_(d.shape) {
    std::array<bool, kMaxRank> reduced{};
    for (int k = 0; k < shape_.rank; ++k) reduced[k] = d.dims.count == 0;
    for (int i = 0; i < d.dims.count; ++i)
      reduced[d.dims.dims[i] < 0 ? d.dims.dims[i] + shape_.rank : d.dims.dims[i]] = true;
    int64_t step = 1;
    std::array<int64_t, kMaxRank> row_major{};
    for (int k = shape_.rank - 1; k >= 0; --k) {
      row_major[k] = step;
      step *= shape_.dims[k];
    }
    for (int k = 0; k < shape_.rank; ++k) {
      (reduced[k] ? reduced_ : kept_).push_back({shape_.dims[k], row_major[k]});
      (reduced[k] ? count_ : outputs_) *= shape_.dims[k];
    }
  }

  int64_t outputs() const { return outputs_; }  // the product of the kept sizes
  int64_t count() const { return count_; }      // the product of the reduced sizes

  // x's row-major index of output o's first element.
  int64_t base(int64_t o) const {
    int64_t linear = 0;
    for (size_t j = kept_.size(); j-- > 0;) {
      linear += (o % kept_[j].size) * kept_[j].step;
      o /= kept_[j].size;
    }
    return linear;
  }

  // Calls f(e, linear) for every element of output o: e its index in the reduced set, linear its
  // row-major index in x.
  template <class F>
  void for_each(int64_t o, F&& f) const {
    if (count_ == 0) return;
    const int64_t first = base(o);
    std::array<int64_t, kMaxRank> coord{};
    int64_t linear = first;
    for (int64_t e = 0; e < count_; ++e) {
      f(e, linear);
      for (size_t j = reduced_.size(); j-- > 0;) {
        if (++coord[j] < reduced_[j].size) {
          linear += reduced_[j].step;
          break;
        }
        linear -= (reduced_[j].size - 1) * reduced_[j].step;
        coord[j] = 0;
      }
    }
  }

 private:
  struct Dim {
    int64_t size, step;
  };
  Shape shape_;
  std::vector<Dim> kept_, reduced_;
  int64_t outputs_ = 1, count_ = 1;
};

// A value the plan computes from `terms` elements otherwise than as their sum: its error scale
// `magnitude` (at least |value|) and one rounding of the accumulator per term beyond the first
// (RefOutput::verify_scale), as a sum of that many terms would have. Non-finite values are set as
// they are.
inline void set_computed(harness::RefOutput& out, int64_t i, double value, double magnitude, int64_t terms) {
  if (!std::isfinite(value) || !std::isfinite(magnitude)) return out.set(i, value);
  out.set(i, value, std::max(magnitude, std::fabs(value)), std::max<int64_t>(terms, 1));
}

// Of one output's elements: the extreme (NaN first, then the greater (max) or lesser value, then
// the smaller index) and its index; of |x| for norm's +-inf.
struct Extreme {
  double value = std::numeric_limits<double>::quiet_NaN();
  int64_t index = -1;
  int64_t ties = 0;  // how many elements equal it (0 for NaN)
};

template <class Values>
Extreme extreme_of(int64_t count, Values value, bool max) {
  Extreme best;
  for (int64_t e = 0; e < count; ++e) {
    const double v = value(e);
    if (best.index >= 0 && std::isnan(best.value)) break;  // the first NaN wins
    if (best.index < 0 || std::isnan(v) || (max ? v > best.value : v < best.value)) {
      best.value = v;
      best.index = e;
    }
  }
  if (!std::isnan(best.value))
    for (int64_t e = 0; e < count; ++e) best.ties += value(e) == best.value;
  return best;
}

// The two-pass mean and sum of squared deviations, and var's divisor max(n - correction, 0).
struct Moments {
  double mean = 0, m2 = 0, divisor = 0;
};
template <class Values>
Moments moments_of(int64_t count, Values value, double correction) {
  Moments m;
  for (int64_t e = 0; e < count; ++e) m.mean += value(e);
  m.mean /= static_cast<double>(count);
  for (int64_t e = 0; e < count; ++e) m.m2 += (value(e) - m.mean) * (value(e) - m.mean);
  m.divisor = std::max(static_cast<double>(count) - correction, 0.0);
  return m;
}

// logsumexp of one output's elements: +inf with a +inf, -inf with nothing but -inf (or nothing),
// NaN with a NaN; else shifted by the max.
template <class Values>
double logsumexp_of(int64_t count, Values value) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double max = -kInf;
  for (int64_t e = 0; e < count; ++e) {
    const double v = value(e);
    if (std::isnan(v)) return v;
    max = std::max(max, v);
  }
  if (std::isinf(max)) return max;
  double sum = 0;
  for (int64_t e = 0; e < count; ++e) sum += std::exp(value(e) - max);
  return max + std::log(sum);
}

// The terms a norm's value takes: a root of a sum magnifies the sum's error by |1 / p|.
inline int64_t norm_terms(int64_t count, double p) {
  return count * static_cast<int64_t>(std::max(1.0, std::ceil(std::fabs(1.0 / p)))) + 2;
}

inline void reduce_forward(const ReduceDescriptor& d, harness::RefIO& io) {
  const harness::HostView& x = io.in("x");
  harness::RefOutput& out = io.out("out");
  harness::RefOutput& indices = io.out("indices");
  harness::RefOutput& mean = io.out("mean");  // var_mean's
  const DType out_dtype = io.specs[static_cast<size_t>(io.index_of("out"))].dtype;
  const ReduceLayout layout(d);
  const int64_t n = layout.count();
  const double nd = static_cast<double>(n);
  std::vector<int64_t> linear(static_cast<size_t>(n));  // one output's elements (reused)
  for (int64_t o = 0; o < layout.outputs(); ++o) {
    if (!out.wanted(o) && !indices.wanted(o) && !mean.wanted(o)) continue;
    layout.for_each(o, [&](int64_t e, int64_t l) { linear[e] = l; });
    auto value = [&](int64_t e) { return x.at(linear[e]); };
    auto magnitude = [&](int64_t e) { return std::fabs(x.at(linear[e])); };
    if (!is_floating(d.dtype) && (d.kind == ReduceKind::sum || d.kind == ReduceKind::prod)) {
      IntegerFold fold{d.kind == ReduceKind::prod};
      for (int64_t e = 0; e < n; ++e) fold.fold(value(e));
      out.set(o, fold.value(out_dtype));
      continue;
    }
    switch (d.kind) {
      case ReduceKind::sum:
      case ReduceKind::mean: {
        const double scale = d.kind == ReduceKind::mean ? 1.0 / nd : 1.0;
        if (n == 0) out.set(o, d.kind == ReduceKind::mean ? std::nan("") : 0.0);
        for (int64_t e = 0; e < n; ++e) out.add(o, value(e) * scale);
        break;
      }
      case ReduceKind::prod: {
        double product = 1;
        for (int64_t e = 0; e < n; ++e) product *= value(e);
        set_computed(out, o, product, std::fabs(product), n);
        break;
      }
      case ReduceKind::amax:
      case ReduceKind::amin:
      case ReduceKind::max:
      case ReduceKind::min:
      case ReduceKind::argmax:
      case ReduceKind::argmin: {
        const bool max = d.kind == ReduceKind::amax || d.kind == ReduceKind::max || d.kind == ReduceKind::argmax;
        const Extreme best = extreme_of(n, value, max);
        out.set(o, best.value);
        indices.set(o, static_cast<double>(best.index));
        break;
      }
      case ReduceKind::var:
      case ReduceKind::std:
      case ReduceKind::var_mean: {
        const Moments m = moments_of(n, value, d.correction);
        if (d.kind == ReduceKind::var_mean) {
          if (n == 0) mean.set(o, std::nan(""));
          for (int64_t e = 0; e < n; ++e) mean.add(o, value(e) / nd);
        }
        if (n == 0 || m.divisor == 0) {
          out.set(o, m.m2 / m.divisor);  // NaN (0 / 0, or an empty set's NaN mean), or inf
          break;
        }
        const double var = m.m2 / m.divisor;
        if (d.kind == ReduceKind::std) {
          set_computed(out, o, std::sqrt(var), std::sqrt(var), n);
          break;
        }
        if (!std::isfinite(var)) {
          out.set(o, var);
          break;
        }
        for (int64_t e = 0; e < n; ++e) out.add(o, (value(e) - m.mean) * (value(e) - m.mean) / m.divisor);
        break;
      }
      case ReduceKind::norm: {
        if (std::isinf(d.p)) {
          out.set(o, extreme_of(n, magnitude, d.p > 0).value);
        } else if (d.p == 0) {
          int64_t nonzero = 0;
          for (int64_t e = 0; e < n; ++e) nonzero += value(e) != 0;  // NaN counts
          out.set(o, static_cast<double>(nonzero));
        } else if (d.p == 1) {
          if (n == 0) out.set(o, 0.0);
          for (int64_t e = 0; e < n; ++e) out.add(o, magnitude(e));
        } else {
          double sum = 0;
          for (int64_t e = 0; e < n; ++e) sum += std::pow(magnitude(e), d.p);
          const double norm = n == 0 ? 0.0 : std::pow(sum, 1.0 / d.p);
          set_computed(out, o, norm, std::fabs(norm), norm_terms(n, d.p));
        }
        break;
      }
      case ReduceKind::logsumexp: {
        const double lse = logsumexp_of(n, value);
        set_computed(out, o, lse, std::fabs(lse), n);
        break;
      }
      case ReduceKind::any:
      case ReduceKind::all:
      case ReduceKind::count_nonzero: {
        int64_t nonzero = 0;
        for (int64_t e = 0; e < n; ++e) nonzero += value(e) != 0;  // NaN counts as nonzero
        const double v = d.kind == ReduceKind::any   ? nonzero > 0
                         : d.kind == ReduceKind::all ? nonzero == n
                                                     : static_cast<double>(nonzero);
        out.set(o, v);
        break;
      }
    }
  }
}

// dx of every element, from the views the header says each kind reads: x (prod, amax / amin,
// var / std / var_mean, norm, logsumexp), out (norm, logsumexp), indices (max, min), dout and
// var_mean's dmean (empty: zeros). prod, amax / amin and std take their statistic (the product, the
// extreme and its ties, the standard deviation) from x. An index outside [0, count) names no element: its output's
// gradient is 0 throughout.
inline void reduce_backward(const ReduceDescriptor& d, harness::RefIO& io) {
  const harness::HostView& x = io.in("x");
  const harness::HostView& out = io.in("out");
  const harness::HostView& indices = io.in("indices");
  const harness::HostView& dout = io.in("dout");
  const harness::HostView& dmean = io.in("dmean");
  const bool has_dmean = dmean.values || dmean.bytes;
  harness::RefOutput& dx = io.out("dx");
  const ReduceLayout layout(d);
  const int64_t n = layout.count();
  const double nd = static_cast<double>(n);
  std::vector<int64_t> linear(static_cast<size_t>(n));
  for (int64_t o = 0; o < layout.outputs(); ++o) {
    layout.for_each(o, [&](int64_t e, int64_t l) { linear[e] = l; });
    bool wanted = false;
    for (int64_t e = 0; e < n && !wanted; ++e) wanted = dx.wanted(linear[e]);
    if (!wanted) continue;
    auto value = [&](int64_t e) { return x.at(linear[e]); };
    auto magnitude = [&](int64_t e) { return std::fabs(x.at(linear[e])); };
    const double g = dout.at(o);
    auto sign = [](double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : v; };
    // The gradient of element e (its scale, and the terms its statistic takes).
    auto each = [&](auto&& f) {
      for (int64_t e = 0; e < n; ++e)
        if (dx.wanted(linear[e])) f(e, linear[e]);
    };
    switch (d.kind) {
      case ReduceKind::sum:
        each([&](int64_t, int64_t i) { dx.set(i, g); });
        break;
      case ReduceKind::mean:
        each([&](int64_t, int64_t i) { dx.set(i, g / nd); });
        break;
      case ReduceKind::max:
      case ReduceKind::min: {
        const double index = indices.at(o);
        each([&](int64_t e, int64_t i) { dx.set(i, static_cast<double>(e) == index ? g : 0.0); });
        break;
      }
      case ReduceKind::amax:
      case ReduceKind::amin: {
        const Extreme best = extreme_of(n, value, d.kind == ReduceKind::amax);
        each([&](int64_t e, int64_t i) {
          dx.set(i, value(e) == best.value ? g / static_cast<double>(best.ties) : 0.0);
        });
        break;
      }
      case ReduceKind::prod: {
        // prod of the others: exact with zeros (one zero: only it has a gradient; two: none has).
        int64_t zeros = 0;
        double nonzero = 1;
        for (int64_t e = 0; e < n; ++e) {
          if (value(e) == 0)
            ++zeros;
          else
            nonzero *= value(e);
        }
        each([&](int64_t e, int64_t i) {
          double others = 0;
          if (zeros == 0)
            others = nonzero / value(e);
          else if (zeros == 1 && value(e) == 0)
            others = nonzero;
          set_computed(dx, i, g * others, std::fabs(g * others), n);
        });
        break;
      }
      case ReduceKind::var:
      case ReduceKind::std:
      case ReduceKind::var_mean: {
        const Moments m = moments_of(n, value, d.correction);
        const double stdev = std::sqrt(m.m2 / m.divisor);
        const double gmean = d.kind == ReduceKind::var_mean && has_dmean ? dmean.at(o) / nd : 0.0;
        each([&](int64_t e, int64_t i) {
          const double deviation = value(e) - m.mean, spread = std::fabs(value(e)) + std::fabs(m.mean);
          if (d.kind != ReduceKind::std)
            set_computed(dx, i, 2 * g * deviation / m.divisor + gmean,
                         2 * std::fabs(g) * spread / m.divisor + std::fabs(gmean), gmean != 0 ? 3 : 2);
          else
            set_computed(dx, i, g * deviation / (m.divisor * stdev), std::fabs(g) * spread / (m.divisor * stdev), n);
        });
        break;
      }
      case ReduceKind::norm: {
        const double norm = out.at(o);
        if (std::isinf(d.p)) {
          const Extreme best = extreme_of(n, magnitude, d.p > 0);
          each([&](int64_t e, int64_t i) {
            dx.set(i, magnitude(e) == best.value ? g * sign(value(e)) / static_cast<double>(best.ties) : 0.0);
          });
          break;
        }
        each([&](int64_t e, int64_t i) {
          const double v = value(e);
          if (d.p == 0 || norm == 0) return dx.set(i, 0.0);
          if (d.p == 1) return dx.set(i, g * sign(v));
          if (d.p == 2) return dx.set(i, g * v / norm);
          dx.set(i, g * sign(v) * std::pow(std::fabs(v), d.p - 1) / std::pow(norm, d.p - 1));
        });
        break;
      }
      case ReduceKind::logsumexp: {
        const double lse = out.at(o);
        each([&](int64_t e, int64_t i) {
          const double v = value(e);
          dx.set(i, v == -std::numeric_limits<double>::infinity() ? 0.0 : g * std::exp(v - lse));
        });
        break;
      }
      default:  // no gradient: select refuses these kinds
        break;
    }
  }
}

}  // namespace baracuda::reference

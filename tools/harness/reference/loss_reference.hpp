#pragma once
// Naive double-precision references of the cross-entropy plans, independent of both backends: each
// row on its own, the logsumexp in two passes (the max, then the sum of exp(x - max)), the loss
// written out term by term as include/baracuda/ops/loss.hpp defines it (PyTorch's label smoothing
// and weights, PaLM's z-loss; soft targets), the reductions in f64. A target that is ignore_index
// contributes nothing; one outside [0, C) contributes nothing and is counted as a bad index.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "baracuda/ops/loss.hpp"
#include "harness/op_table.hpp"

namespace baracuda::reference {

// The logits as rows: outer x classes x inner (the class dim 1, or 0 at rank 1).
struct LossSizes {
  int64_t outer = 1, classes = 1, inner = 1;
  int64_t rows() const { return outer * inner; }
  // Row r's class c, row-major in the logits.
  int64_t at(int64_t r, int64_t c) const { return ((r / inner) * classes + c) * inner + r % inner; }
};
inline LossSizes loss_sizes(const CrossEntropyDescriptor& d) {
  LossSizes s;
  const int cd = d.shape.rank >= 2 ? 1 : 0;
  for (int k = 0; k < d.shape.rank; ++k) {
    if (k < cd) s.outer *= d.shape.dims[k];
    if (k == cd) s.classes = d.shape.dims[k];
    if (k > cd) s.inner *= d.shape.dims[k];
  }
  return s;
}

// Row r's logsumexp (-inf for a row of -inf alone, NaN with a NaN or a +inf).
inline double row_logsumexp(const harness::HostView& x, const LossSizes& s, int64_t r) {
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < s.classes; ++c) max = std::max(max, x.at(s.at(r, c)));
  for (int64_t c = 0; c < s.classes; ++c)
    if (std::isnan(x.at(s.at(r, c)))) return std::nan("");
  if (max == -std::numeric_limits<double>::infinity()) return max;
  double sum = 0;
  for (int64_t c = 0; c < s.classes; ++c) sum += std::exp(x.at(s.at(r, c)) - max);
  return max + std::log(sum);
}

// Whether row r's target counts; a bad one is counted into io.bad_index_count.
inline bool target_counts(const CrossEntropyDescriptor& d, harness::RefIO& io, const LossSizes& s, int64_t r,
                          int64_t& t) {
  t = static_cast<int64_t>(io.in("targets").at(r));
  if (t == d.ignore_index) return false;
  if (t < 0 || t >= s.classes) {
    ++io.bad_index_count;
    return false;
  }
  return true;
}

inline double class_weight(const CrossEntropyDescriptor& d, const harness::RefIO& io, int64_t c) {
  return d.has_weight ? io.in("weight").at(c) : 1.0;
}

// The divisors of the mean: the counted targets' weights, and how many count.
struct LossTotals {
  double weight_sum = 0, counted = 0, weights = 0;  // weights: W = sum_c w_c
};
inline LossTotals loss_totals(const CrossEntropyDescriptor& d, harness::RefIO& io, const LossSizes& s) {
  LossTotals t;
  for (int64_t c = 0; c < s.classes; ++c) t.weights += class_weight(d, io, c);
  const int64_t bad = io.bad_index_count;
  for (int64_t r = 0; r < s.rows(); ++r) {
    int64_t target = 0;
    if (!target_counts(d, io, s, r, target)) continue;
    t.weight_sum += class_weight(d, io, target);
    t.counted += 1;
  }
  io.bad_index_count = bad;  // (counted by the pass over the rows proper)
  return t;
}

// Soft targets: q_c = w_c ((1 - e) y_c + e / C); a class of q_c = 0 adds nothing.
inline double soft_share(const CrossEntropyDescriptor& d, const harness::RefIO& io, const LossSizes& s, int64_t r,
                         int64_t c) {
  const double y = io.in("targets").at(s.at(r, c));
  return class_weight(d, io, c) * ((1 - d.label_smoothing) * y + d.label_smoothing / static_cast<double>(s.classes));
}

inline void soft_cross_entropy_forward(const CrossEntropyDescriptor& d, harness::RefIO& io) {
  const LossSizes s = loss_sizes(d);
  const harness::HostView& x = io.in("logits");
  harness::RefOutput& loss = io.out("loss");
  const bool lse_out = io.specs[static_cast<size_t>(io.index_of("lse"))].present;
  double sum = 0, magnitude_sum = 0;
  for (int64_t r = 0; r < s.rows(); ++r) {
    const double lse = row_logsumexp(x, s, r);
    if (lse_out && io.out("lse").wanted(r)) io.out("lse").set(r, lse, std::fabs(lse) + 1, 1);
    double ce = 0, magnitude = 0;
    for (int64_t c = 0; c < s.classes; ++c) {
      const double q = soft_share(d, io, s, r, c), v = x.at(s.at(r, c));
      if (q == 0) continue;
      ce += q * (lse - v);
      magnitude += std::fabs(q) * (std::fabs(lse) + std::fabs(v));
    }
    const double z = d.z_loss * lse * lse;
    if (d.reduction == LossReduction::none) {
      if (loss.wanted(r)) loss.set(r, ce + z, magnitude + z, s.classes);
    } else {
      sum += ce + z;
      magnitude_sum += magnitude + z;
    }
  }
  const double rows = static_cast<double>(s.rows());
  const int64_t terms = std::max<int64_t>(1, s.rows() * s.classes);
  if (d.reduction == LossReduction::sum) loss.set(0, sum, magnitude_sum, terms);
  if (d.reduction == LossReduction::mean) loss.set(0, sum / rows, magnitude_sum / rows, terms);
}

inline void soft_cross_entropy_backward(const CrossEntropyDescriptor& d, harness::RefIO& io) {
  const LossSizes s = loss_sizes(d);
  const harness::HostView& dloss = io.in("dloss");
  const harness::HostView& x = io.in("logits");
  harness::RefOutput& dx = io.out("dlogits");
  for (int64_t r = 0; r < s.rows(); ++r) {
    double g = d.reduction == LossReduction::none ? dloss.at(r) : dloss.at(0);
    if (d.reduction == LossReduction::mean) g /= static_cast<double>(s.rows());
    const double lse = io.in("lse").at(r);
    double mass = 0, mass_magnitude = 0;
    for (int64_t c = 0; c < s.classes; ++c) {
      mass += soft_share(d, io, s, r, c);
      mass_magnitude += std::fabs(soft_share(d, io, s, r, c));
    }
    for (int64_t c = 0; c < s.classes; ++c) {
      const int64_t i = s.at(r, c);
      if (!dx.wanted(i)) continue;
      const double p = std::exp(x.at(i) - lse), q = soft_share(d, io, s, r, c);
      const double z_part = g * 2 * d.z_loss * lse * p;
      dx.set(i, g * (mass * p - q) + z_part, std::fabs(g) * (mass_magnitude * p + std::fabs(q)) + std::fabs(z_part),
             s.classes);
    }
  }
}

inline void cross_entropy_forward(const CrossEntropyDescriptor& d, harness::RefIO& io) {
  if (d.soft_targets) return soft_cross_entropy_forward(d, io);
  const LossSizes s = loss_sizes(d);
  const harness::HostView& x = io.in("logits");
  const LossTotals totals = loss_totals(d, io, s);
  const double e = d.label_smoothing;
  harness::RefOutput& loss = io.out("loss");
  const bool lse_out = io.specs[static_cast<size_t>(io.index_of("lse"))].present;
  double ce_sum = 0, z_sum = 0, magnitude_sum = 0;
  for (int64_t r = 0; r < s.rows(); ++r) {
    const double lse = d.log_probs ? 0.0 : row_logsumexp(x, s, r);  // log_probs: F.nll_loss
    if (lse_out && io.out("lse").wanted(r)) io.out("lse").set(r, lse, std::fabs(lse) + 1, 1);
    int64_t t = 0;
    double ce = 0, z = 0, magnitude = 0;
    if (target_counts(d, io, s, r, t)) {
      const double w_t = class_weight(d, io, t), x_t = x.at(s.at(r, t));
      ce = (1 - e) * w_t * (lse - x_t);
      magnitude = (1 - e) * std::fabs(w_t) * (std::fabs(lse) + std::fabs(x_t));
      if (e != 0) {
        double smooth = 0, smooth_magnitude = 0;
        for (int64_t c = 0; c < s.classes; ++c) {
          const double w = class_weight(d, io, c), v = x.at(s.at(r, c));
          smooth += w * (lse - v);
          smooth_magnitude += std::fabs(w) * (std::fabs(lse) + std::fabs(v));
        }
        ce += e / static_cast<double>(s.classes) * smooth;
        magnitude += e / static_cast<double>(s.classes) * smooth_magnitude;
      }
      z = d.z_loss * lse * lse;
      magnitude += z;
    }
    if (d.reduction == LossReduction::none) {
      if (loss.wanted(r)) loss.set(r, ce + z, magnitude, s.classes);
    } else {
      ce_sum += ce;
      z_sum += z;
      magnitude_sum += magnitude;
    }
  }
  if (d.reduction == LossReduction::sum)
    loss.set(0, ce_sum + z_sum, magnitude_sum, std::max<int64_t>(1, s.rows() * s.classes));
  if (d.reduction == LossReduction::mean) {
    double mean = ce_sum / totals.weight_sum;
    if (d.z_loss != 0) mean += z_sum / totals.counted;
    loss.set(0, mean, magnitude_sum / std::fabs(totals.weight_sum), std::max<int64_t>(1, s.rows() * s.classes));
  }
}

inline void cross_entropy_backward(const CrossEntropyDescriptor& d, harness::RefIO& io) {
  if (d.soft_targets) return soft_cross_entropy_backward(d, io);
  const LossSizes s = loss_sizes(d);
  const harness::HostView& dloss = io.in("dloss");
  const harness::HostView* x = d.log_probs ? nullptr : &io.in("logits");  // (nll's gradient reads none)
  const LossTotals totals = loss_totals(d, io, s);
  const double e = d.label_smoothing, smooth = e / static_cast<double>(s.classes);
  harness::RefOutput& dx = io.out("dlogits");
  for (int64_t r = 0; r < s.rows(); ++r) {
    int64_t t = 0;
    if (!target_counts(d, io, s, r, t)) {
      for (int64_t c = 0; c < s.classes; ++c)
        if (dx.wanted(s.at(r, c))) dx.set(s.at(r, c), 0.0);
      continue;
    }
    double g = d.reduction == LossReduction::none ? dloss.at(r) : dloss.at(0), g_z = g;
    if (d.reduction == LossReduction::mean) {
      g /= totals.weight_sum;
      g_z /= totals.counted;
    }
    // log_probs (F.nll_loss): no lse, no probabilities: only the target's term.
    const double lse = d.log_probs ? 0.0 : io.in("lse").at(r), w_t = class_weight(d, io, t);
    for (int64_t c = 0; c < s.classes; ++c) {
      const int64_t i = s.at(r, c);
      if (!dx.wanted(i)) continue;
      const double p = x ? std::exp(x->at(i) - lse) : 0.0, w = class_weight(d, io, c);
      const double ce_part = g * ((1 - e) * w_t * (p - (c == t)) + smooth * (totals.weights * p - w));
      const double z_part = g_z * 2 * d.z_loss * lse * p;
      const double magnitude = std::fabs(g) * ((1 - e) * std::fabs(w_t) * (p + (c == t)) +
                                               smooth * (std::fabs(totals.weights) * p + std::fabs(w))) +
                               std::fabs(z_part);
      dx.set(i, ce_part + z_part, magnitude, 1);
    }
  }
}

}  // namespace baracuda::reference

#pragma once
// Naive double-precision references of LayerNorm and RmsNorm, forward and backward, independent of
// both backends: each row on its own, the mean and the variance in two passes. h = x + residual is
// rounded to the data's dtype first, as the plans (and an unfused add) do.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "baracuda/ops/norm.hpp"
#include "harness/op_table.hpp"

namespace baracuda::reference {

struct NormSizes {
  int64_t rows = 1, n = 1;
};
inline NormSizes norm_sizes(const NormDescriptor& d) {
  NormSizes s;
  for (int k = 0; k < d.shape.rank; ++k) (k < d.shape.rank - d.normalized_dims ? s.rows : s.n) *= d.shape.dims[k];
  return s;
}

inline bool present(const harness::RefIO& io, std::string_view name) {
  return io.specs[static_cast<size_t>(io.index_of(name))].present;
}

// The weight as applied (w + offset, or 1 without one).
inline double norm_weight(const NormDescriptor& d, const harness::RefIO& io, int64_t j) {
  return d.has_weight ? io.in("weight").at(j) + d.weight_offset : 1.0;
}

inline void norm_forward(const NormDescriptor& d, bool rms, harness::RefIO& io) {
  const auto [rows, n] = norm_sizes(d);
  const harness::HostView& x = io.in("x");
  const bool bias = !rms && d.has_bias;
  harness::RefOutput& y = io.out("y");
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> h(static_cast<size_t>(n));
    double sum = 0, sum_abs = 0;
    for (int64_t j = 0; j < n; ++j) {
      double v = x.at(r * n + j);
      if (d.residual) {
        v = harness::quantize(d.dtype, v + io.in("residual").at(r * n + j));
        if (io.out("h").wanted(r * n + j)) io.out("h").set(r * n + j, v);
      }
      h[static_cast<size_t>(j)] = v;
      sum += rms ? v * v : v;
      sum_abs += rms ? v * v : std::fabs(v);
    }
    const double count = static_cast<double>(std::max<int64_t>(n, 1));  // an empty row: mean 0, var 0
    const double mean = rms ? 0.0 : sum / count;
    double var = rms ? sum / count : 0.0;
    if (!rms) {
      for (double v : h) var += (v - mean) * (v - mean);
      var /= count;
    }
    const double rstd = 1.0 / std::sqrt(var + d.eps);
    const double scale = sum_abs / count;  // of the row's values (squares for RmsNorm)
    if (!rms && present(io, "mean") && io.out("mean").wanted(r)) io.out("mean").set(r, mean, scale, n);
    if (present(io, "rstd") && io.out("rstd").wanted(r)) io.out("rstd").set(r, rstd, std::fabs(rstd), n);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = r * n + j;
      if (!y.wanted(i)) continue;
      const double w = norm_weight(d, io, j), b = bias ? io.in("bias").at(j) : 0.0;
      const double v = h[static_cast<size_t>(j)];
      const double magnitude =
          (std::fabs(v) + std::fabs(mean) + (rms ? 0.0 : scale)) * std::fabs(rstd * w) + std::fabs(b);
      y.set(i, (v - mean) * rstd * w + b, magnitude, n);
    }
  }
}

inline void norm_backward(const NormDescriptor& d, bool rms, harness::RefIO& io) {
  const auto [rows, n] = norm_sizes(d);
  const harness::HostView &dy = io.in("dy"), &x = io.in("x"), &rstd_in = io.in("rstd");
  const bool want_dx = present(io, "dx"), want_dw = d.has_weight && present(io, "dweight");
  const bool want_db = !rms && d.has_bias && present(io, "dbias");
  for (int64_t j = 0; j < n && rows == 0; ++j) {  // no rows: zero sums
    if (want_dw && io.out("dweight").wanted(j)) io.out("dweight").set(j, 0.0);
    if (want_db && io.out("dbias").wanted(j)) io.out("dbias").set(j, 0.0);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const double mean = rms ? 0.0 : io.in("mean").at(r), rstd = rstd_in.at(r);
    std::vector<double> g(static_cast<size_t>(n)), xhat(static_cast<size_t>(n));
    double sum_gx = 0, sum_g = 0, scale_gx = 0, scale_g = 0;
    for (int64_t j = 0; j < n; ++j) {
      const size_t k = static_cast<size_t>(j);
      xhat[k] = (x.at(r * n + j) - mean) * rstd;
      g[k] = dy.at(r * n + j) * norm_weight(d, io, j);
      sum_gx += g[k] * xhat[k];
      sum_g += g[k];
      scale_gx += std::fabs(g[k] * xhat[k]);
      scale_g += std::fabs(g[k]);
      if (want_dw && io.out("dweight").wanted(j)) io.out("dweight").add(j, dy.at(r * n + j) * xhat[k]);
      if (want_db && io.out("dbias").wanted(j)) io.out("dbias").add(j, dy.at(r * n + j));
    }
    if (!want_dx) continue;
    const double a = sum_gx / static_cast<double>(n), b = rms ? 0.0 : sum_g / static_cast<double>(n);
    const double sa = scale_gx / static_cast<double>(n), sb = rms ? 0.0 : scale_g / static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = r * n + j;
      if (!io.out("dx").wanted(i)) continue;
      const size_t k = static_cast<size_t>(j);
      const double skip = d.residual && present(io, "dh") ? io.in("dh").at(i) : 0.0;
      const double magnitude = std::fabs(rstd) * (std::fabs(g[k]) + sb + std::fabs(xhat[k]) * sa) + std::fabs(skip);
      io.out("dx").set(i, rstd * (g[k] - b - xhat[k] * a) + skip, magnitude, n);
    }
  }
}

// GroupNorm: x [N, C, *] row-major (n, c, s); each (sample, group) over its C / groups channels and
// the spatial elements, two passes; the SiLU applied to the affine output with `silu`.
struct GroupNormSizes {
  int64_t samples = 0, channels = 0, group_channels = 0, spatial = 1;
  int64_t index(int64_t n, int64_t c, int64_t s) const { return (n * channels + c) * spatial + s; }
};
inline GroupNormSizes group_norm_sizes(const GroupNormDescriptor& d) {
  GroupNormSizes z;
  z.samples = d.shape.dims[0];
  z.channels = d.shape.dims[1];
  z.group_channels = z.channels / d.groups;
  for (int k = 2; k < d.shape.rank; ++k) z.spatial *= d.shape.dims[k];
  return z;
}
inline double reference_sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

inline void group_norm_forward(const GroupNormDescriptor& d, harness::RefIO& io) {
  const GroupNormSizes z = group_norm_sizes(d);
  const harness::HostView& x = io.in("x");
  harness::RefOutput& y = io.out("y");
  const int64_t size = z.group_channels * z.spatial;
  const double count = static_cast<double>(std::max<int64_t>(size, 1));
  for (int64_t n = 0; n < z.samples; ++n) {
    for (int64_t g = 0; g < d.groups; ++g) {
      const int64_t c0 = g * z.group_channels;
      double sum = 0, sum_abs = 0;
      for (int64_t c = c0; c < c0 + z.group_channels; ++c)
        for (int64_t s = 0; s < z.spatial; ++s) {
          sum += x.at(z.index(n, c, s));
          sum_abs += std::fabs(x.at(z.index(n, c, s)));
        }
      const double mean = sum / count, scale = sum_abs / count;
      double var = 0;
      for (int64_t c = c0; c < c0 + z.group_channels; ++c)
        for (int64_t s = 0; s < z.spatial; ++s)
          var += (x.at(z.index(n, c, s)) - mean) * (x.at(z.index(n, c, s)) - mean);
      var /= count;
      const double rstd = 1.0 / std::sqrt(var + d.eps);
      const int64_t stat = n * d.groups + g;
      if (present(io, "mean") && io.out("mean").wanted(stat)) io.out("mean").set(stat, mean, scale, size);
      if (present(io, "rstd") && io.out("rstd").wanted(stat)) io.out("rstd").set(stat, rstd, std::fabs(rstd), size);
      for (int64_t c = c0; c < c0 + z.group_channels; ++c) {
        const double w = d.has_weight ? io.in("weight").at(c) : 1.0, b = d.has_bias ? io.in("bias").at(c) : 0.0;
        for (int64_t s = 0; s < z.spatial; ++s) {
          const int64_t i = z.index(n, c, s);
          if (!y.wanted(i)) continue;
          const double v = x.at(i), affine = (v - mean) * rstd * w + b;
          const double magnitude = (std::fabs(v) + std::fabs(mean) + scale) * std::fabs(rstd * w) + std::fabs(b);
          // SiLU's slope is at most 1.1: the affine output's error scale bounds its output's.
          y.set(i, d.silu ? affine * reference_sigmoid(affine) : affine, d.silu ? 1.1 * magnitude : magnitude, size);
        }
      }
    }
  }
}

inline void group_norm_backward(const GroupNormDescriptor& d, harness::RefIO& io) {
  const GroupNormSizes z = group_norm_sizes(d);
  const harness::HostView &dy = io.in("dy"), &x = io.in("x");
  const bool want_dx = present(io, "dx"), want_dw = d.has_weight && present(io, "dweight");
  const bool want_db = d.has_bias && present(io, "dbias");
  for (int64_t c = 0; c < z.channels && z.samples == 0; ++c) {  // no samples: zero sums
    if (want_dw && io.out("dweight").wanted(c)) io.out("dweight").set(c, 0.0);
    if (want_db && io.out("dbias").wanted(c)) io.out("dbias").set(c, 0.0);
  }
  const int64_t size = z.group_channels * z.spatial;
  const double count = static_cast<double>(std::max<int64_t>(size, 1));
  for (int64_t n = 0; n < z.samples; ++n) {
    for (int64_t g = 0; g < d.groups; ++g) {
      const int64_t c0 = g * z.group_channels, stat = n * d.groups + g;
      const double mean = io.in("mean").at(stat), rstd = io.in("rstd").at(stat);
      std::vector<double> dz(static_cast<size_t>(size)), xhat(static_cast<size_t>(size));
      double sum_g = 0, sum_gx = 0, scale_g = 0, scale_gx = 0;
      for (int64_t c = c0; c < c0 + z.group_channels; ++c) {
        const double w = d.has_weight ? io.in("weight").at(c) : 1.0;
        const double b = d.has_bias && d.silu ? io.in("bias").at(c) : 0.0;
        for (int64_t s = 0; s < z.spatial; ++s) {
          const size_t k = static_cast<size_t>((c - c0) * z.spatial + s);
          const int64_t i = z.index(n, c, s);
          xhat[k] = (x.at(i) - mean) * rstd;
          dz[k] = dy.at(i);
          if (d.silu) {
            const double affine = xhat[k] * w + b, sig = reference_sigmoid(affine);
            dz[k] *= sig * (1.0 + affine * (1.0 - sig));
          }
          sum_g += dz[k] * w;
          sum_gx += dz[k] * w * xhat[k];
          scale_g += std::fabs(dz[k] * w);
          scale_gx += std::fabs(dz[k] * w * xhat[k]);
          if (want_dw && io.out("dweight").wanted(c)) io.out("dweight").add(c, dz[k] * xhat[k]);
          if (want_db && io.out("dbias").wanted(c)) io.out("dbias").add(c, dz[k]);
        }
      }
      if (!want_dx) continue;
      const double a = sum_gx / count, bm = sum_g / count, sa = scale_gx / count, sb = scale_g / count;
      for (int64_t c = c0; c < c0 + z.group_channels; ++c) {
        const double w = d.has_weight ? io.in("weight").at(c) : 1.0;
        for (int64_t s = 0; s < z.spatial; ++s) {
          const int64_t i = z.index(n, c, s);
          if (!io.out("dx").wanted(i)) continue;
          const size_t k = static_cast<size_t>((c - c0) * z.spatial + s);
          const double magnitude = std::fabs(rstd) * (std::fabs(dz[k] * w) + sb + std::fabs(xhat[k]) * sa);
          io.out("dx").set(i, rstd * (dz[k] * w - bm - xhat[k] * a), magnitude, size);
        }
      }
    }
  }
}

// BatchNorm: each channel (along channel_dim) over every other dim; the running statistics start
// from the outputs' initial contents (they accumulate), as the plan reads them.
struct BatchNormSizes {
  int64_t channels = 0, inner = 1, elements = 0;
  int64_t channel_of(int64_t i) const { return (i / inner) % channels; }
};
inline BatchNormSizes batch_norm_sizes(const BatchNormDescriptor& d) {
  BatchNormSizes z;
  z.channels = d.shape.dims[d.channel_dim];
  for (int k = d.channel_dim + 1; k < d.shape.rank; ++k) z.inner *= d.shape.dims[k];
  z.elements = z.channels > 0 ? d.shape.numel() / z.channels : 0;
  return z;
}

inline void batch_norm_forward(const BatchNormDescriptor& d, harness::RefIO& io) {
  const BatchNormSizes z = batch_norm_sizes(d);
  const harness::HostView& x = io.in("x");
  harness::RefOutput& y = io.out("y");
  const int64_t total = d.shape.numel();
  std::vector<double> sum(static_cast<size_t>(z.channels)), sum_abs(sum.size()), dev(sum.size());
  for (int64_t i = 0; i < total; ++i) {
    sum[static_cast<size_t>(z.channel_of(i))] += x.at(i);
    sum_abs[static_cast<size_t>(z.channel_of(i))] += std::fabs(x.at(i));
  }
  const double count = static_cast<double>(std::max<int64_t>(z.elements, 1));
  std::vector<double> mean(sum.size()), rstd(sum.size()), scale(sum.size());
  for (int64_t c = 0; c < z.channels; ++c) {
    const size_t k = static_cast<size_t>(c);
    if (d.training) {
      mean[k] = sum[k] / count;
      scale[k] = sum_abs[k] / count;
    } else {
      mean[k] = io.out("running_mean").value(c);
      scale[k] = std::fabs(mean[k]);
    }
  }
  for (int64_t i = 0; d.training && i < total; ++i) {
    const size_t k = static_cast<size_t>(z.channel_of(i));
    dev[k] += (x.at(i) - mean[k]) * (x.at(i) - mean[k]);
  }
  for (int64_t c = 0; c < z.channels; ++c) {
    const size_t k = static_cast<size_t>(c);
    if (!d.training) {
      rstd[k] = 1.0 / std::sqrt(io.out("running_var").value(c) + d.eps);
      continue;
    }
    const double var = dev[k] / count;
    rstd[k] = 1.0 / std::sqrt(var + d.eps);
    if (present(io, "save_mean") && io.out("save_mean").wanted(c))
      io.out("save_mean").set(c, mean[k], scale[k], z.elements);
    if (present(io, "save_rstd") && io.out("save_rstd").wanted(c))
      io.out("save_rstd").set(c, rstd[k], std::fabs(rstd[k]), z.elements);
    if (d.running_stats) {
      harness::RefOutput &rm = io.out("running_mean"), &rv = io.out("running_var");
      const double unbiased = dev[k] / static_cast<double>(z.elements - 1);
      if (rm.wanted(c)) {
        const double old = rm.value(c);
        rm.set(c, (1 - d.momentum) * old + d.momentum * mean[k],
               (1 - d.momentum) * std::fabs(old) + d.momentum * scale[k], z.elements);
      }
      if (rv.wanted(c)) {
        const double old = rv.value(c);
        rv.set(c, (1 - d.momentum) * old + d.momentum * unbiased,
               (1 - d.momentum) * std::fabs(old) + d.momentum * unbiased, z.elements);
      }
    }
  }
  for (int64_t i = 0; i < total; ++i) {
    if (!y.wanted(i)) continue;
    const int64_t c = z.channel_of(i);
    const size_t k = static_cast<size_t>(c);
    const double w = d.has_weight ? io.in("weight").at(c) : 1.0, b = d.has_bias ? io.in("bias").at(c) : 0.0;
    const double magnitude =
        (std::fabs(x.at(i)) + std::fabs(mean[k]) + scale[k]) * std::fabs(rstd[k] * w) + std::fabs(b);
    y.set(i, (x.at(i) - mean[k]) * rstd[k] * w + b, magnitude, d.training ? z.elements : 1);
  }
}

inline void batch_norm_backward(const BatchNormDescriptor& d, harness::RefIO& io) {
  const BatchNormSizes z = batch_norm_sizes(d);
  const harness::HostView &dy = io.in("dy"), &x = io.in("x");
  const int64_t total = d.shape.numel();
  const size_t n = static_cast<size_t>(z.channels);
  std::vector<double> mean(n), rstd(n), sum_dy(n), sum_dyx(n), abs_dy(n), abs_dyx(n);
  for (int64_t c = 0; c < z.channels; ++c) {
    const size_t k = static_cast<size_t>(c);
    if (d.training) {
      mean[k] = io.in("save_mean").at(c);
      rstd[k] = io.in("save_rstd").at(c);
    } else {
      mean[k] = io.in("running_mean").at(c);
      rstd[k] = 1.0 / std::sqrt(io.in("running_var").at(c) + d.eps);
    }
  }
  for (int64_t i = 0; i < total; ++i) {
    const size_t k = static_cast<size_t>(z.channel_of(i));
    const double xhat = (x.at(i) - mean[k]) * rstd[k];
    sum_dy[k] += dy.at(i);
    sum_dyx[k] += dy.at(i) * xhat;
    abs_dy[k] += std::fabs(dy.at(i));
    abs_dyx[k] += std::fabs(dy.at(i) * xhat);
    if (d.has_weight && present(io, "dweight") && io.out("dweight").wanted(z.channel_of(i)))
      io.out("dweight").add(z.channel_of(i), dy.at(i) * xhat);
    if (d.has_bias && present(io, "dbias") && io.out("dbias").wanted(z.channel_of(i)))
      io.out("dbias").add(z.channel_of(i), dy.at(i));
  }
  for (int64_t c = 0; c < z.channels && total == 0; ++c) {  // channels of no elements: zero sums
    if (d.has_weight && present(io, "dweight") && io.out("dweight").wanted(c)) io.out("dweight").set(c, 0.0);
    if (d.has_bias && present(io, "dbias") && io.out("dbias").wanted(c)) io.out("dbias").set(c, 0.0);
  }
  if (!present(io, "dx")) return;
  const double count = static_cast<double>(std::max<int64_t>(z.elements, 1));
  for (int64_t i = 0; i < total; ++i) {
    if (!io.out("dx").wanted(i)) continue;
    const int64_t c = z.channel_of(i);
    const size_t k = static_cast<size_t>(c);
    const double w = d.has_weight ? io.in("weight").at(c) : 1.0, xhat = (x.at(i) - mean[k]) * rstd[k];
    const double a = d.training ? sum_dy[k] / count : 0.0, b = d.training ? sum_dyx[k] / count : 0.0;
    const double sa = d.training ? abs_dy[k] / count : 0.0, sb = d.training ? abs_dyx[k] / count : 0.0;
    const double magnitude = std::fabs(w * rstd[k]) * (std::fabs(dy.at(i)) + sa + std::fabs(xhat) * sb);
    io.out("dx").set(i, w * rstd[k] * (dy.at(i) - a - xhat * b), magnitude, d.training ? z.elements : 1);
  }
}

}  // namespace baracuda::reference

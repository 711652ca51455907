#pragma once
// Naive double-precision references of the attention plans, independent of both backends: every
// score of a row computed in full, then a plain softmax over the keys the row sees (no tiles, no
// running max). The backward recomputes the probabilities from the lse it is given, as the plan does
// (its samples' lse and out are random inputs; the op table's finite differences feed it the
// forward's).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "baracuda/ops/attention.hpp"
#include "harness/op_table.hpp"

namespace baracuda::reference {

// An input's values, row-major over its shape (its view's strides read once).
inline std::vector<double> dense(const harness::HostView& v) {
  std::vector<double> out(static_cast<size_t>(v.numel()));
  for (int64_t i = 0; i < v.numel(); ++i) out[static_cast<size_t>(i)] = v.at(i);
  return out;
}

// The sizes and the scores of one (b, query head, query) row, as the descriptor defines them.
struct AttentionRows {
  const AttentionDescriptor& d;
  std::vector<double> q, k, v, bias;
  double scale = 1.0;
  int64_t group = 1;

  AttentionRows(const AttentionDescriptor& desc, const harness::RefIO& io) : d(desc) {
    q = dense(io.in("q"));
    k = dense(io.in("k"));
    v = dense(io.in("v"));
    if (d.has_bias) bias = dense(io.in("bias"));
    scale = d.scale != 0 ? d.scale : 1.0 / std::sqrt(static_cast<double>(d.head_dim));
    group = d.heads_q / d.heads_kv;
  }
  size_t qi(int64_t b, int64_t i, int64_t h, int64_t c) const {
    return static_cast<size_t>(((b * d.seq_q + i) * d.heads_q + h) * d.head_dim + c);
  }
  size_t ki(int64_t b, int64_t j, int64_t hk, int64_t c) const {
    return static_cast<size_t>(((b * d.seq_kv + j) * d.heads_kv + hk) * d.head_dim + c);
  }
  size_t vi(int64_t b, int64_t j, int64_t hk, int64_t c) const {
    return static_cast<size_t>(((b * d.seq_kv + j) * d.heads_kv + hk) * d.head_dim_v + c);
  }
  size_t oi(int64_t b, int64_t i, int64_t h, int64_t c) const {
    return static_cast<size_t>(((b * d.seq_q + i) * d.heads_q + h) * d.head_dim_v + c);
  }
  // Whether query i sees key j: within the window around its diagonal.
  bool visible(int64_t i, int64_t j) const {
    const int64_t diag = i + (d.alignment == CausalAlignment::bottom_right ? d.seq_kv - d.seq_q : 0);
    const int64_t right = d.causal ? 0 : d.window_right;
    return (d.window_left < 0 || j >= diag - d.window_left) && (right < 0 || j <= diag + right);
  }
  // Query i's scores against every key (-inf where masked); raw[j] = scale q . k, abs[j] = the
  // magnitude of its terms, t[j] = tanh(raw / softcap) where there is a soft-cap.
  void scores(int64_t b, int64_t h, int64_t i, std::vector<double>& s, std::vector<double>& abs,
              std::vector<double>& t) const {
    const int64_t hk = h / group;
    s.assign(static_cast<size_t>(d.seq_kv), -std::numeric_limits<double>::infinity());
    abs.assign(static_cast<size_t>(d.seq_kv), 0.0);
    t.assign(static_cast<size_t>(d.seq_kv), 0.0);
    for (int64_t j = 0; j < d.seq_kv; ++j) {
      const size_t u = static_cast<size_t>(j);
      double raw = 0, mag = 0;
      for (int64_t c = 0; c < d.head_dim; ++c) {
        raw += q[qi(b, i, h, c)] * k[ki(b, j, hk, c)];
        mag += std::fabs(q[qi(b, i, h, c)] * k[ki(b, j, hk, c)]);
      }
      raw *= scale;
      abs[u] = scale * mag;
      if (!visible(i, j)) continue;
      double x = raw;
      if (d.softcap > 0) {
        t[u] = std::tanh(raw / d.softcap);
        x = d.softcap * t[u];
      }
      if (d.has_bias) {
        const double bv = bias[static_cast<size_t>(((b * d.heads_q + h) * d.seq_q + i) * d.seq_kv + j)];
        x += bv;
        abs[u] += std::isfinite(bv) ? std::fabs(bv) : 0.0;
      }
      s[u] = x;
    }
  }
};

inline bool attention_present(const harness::RefIO& io, std::string_view name) {
  return io.specs[static_cast<size_t>(io.index_of(name))].present;
}

inline void attention_forward(const AttentionDescriptor& d, harness::RefIO& io) {
  const AttentionRows rows(d, io);
  harness::RefOutput& out = io.out("out");
  const bool want_lse = attention_present(io, "lse");
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> s, abs, t;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads_q; ++h)
      for (int64_t i = 0; i < d.seq_q; ++i) {
        rows.scores(b, h, i, s, abs, t);
        double mx = -kInf, smag = 0;
        for (size_t j = 0; j < s.size(); ++j) {
          mx = std::max(mx, s[j]);
          if (s[j] > -kInf) smag = std::max(smag, abs[j]);
        }
        const int64_t hk = h / rows.group;
        double sum = 0;
        std::vector<double> p(s.size(), 0.0);
        if (mx > -kInf)
          for (size_t j = 0; j < s.size(); ++j) sum += p[j] = std::exp(s[j] - mx);
        const int64_t li = (b * d.heads_q + h) * d.seq_q + i;
        if (want_lse && io.out("lse").wanted(li))
          io.out("lse").set(li, sum > 0 ? mx + std::log(sum) : -kInf, 1 + std::fabs(mx) + smag, d.seq_kv);
        for (int64_t c = 0; c < d.head_dim_v; ++c) {
          const int64_t oi = static_cast<int64_t>(rows.oi(b, i, h, c));
          if (!out.wanted(oi)) continue;
          double value = 0, magnitude = 0;
          for (int64_t j = 0; sum > 0 && j < d.seq_kv; ++j) {
            const double w = p[static_cast<size_t>(j)] / sum, x = rows.v[rows.vi(b, j, hk, c)];
            value += w * x;
            magnitude += w * std::fabs(x);
          }
          // A score's rounding moves the weights by about its size: the error scales with both.
          out.set(oi, value, magnitude * (1 + smag), d.seq_kv + d.head_dim);
        }
      }
}

inline void attention_backward(const AttentionDescriptor& d, harness::RefIO& io) {
  const AttentionRows rows(d, io);
  const std::vector<double> out = dense(io.in("out")), dout = dense(io.in("dout")), lse = dense(io.in("lse"));
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const int64_t D = d.head_dim, Dv = d.head_dim_v;
  std::vector<double> dq(rows.q.size(), 0.0), dq_mag(rows.q.size(), 0.0);
  std::vector<double> dk(rows.k.size(), 0.0), dk_mag(rows.k.size(), 0.0);
  std::vector<double> dv(rows.v.size(), 0.0), dv_mag(rows.v.size(), 0.0);
  std::vector<double> s, abs, t;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads_q; ++h)
      for (int64_t i = 0; i < d.seq_q; ++i) {
        const int64_t hk = h / rows.group;
        const double l = lse[static_cast<size_t>((b * d.heads_q + h) * d.seq_q + i)];
        if (l == -kInf) continue;  // a fully masked row: no gradient
        rows.scores(b, h, i, s, abs, t);
        double delta = 0, delta_mag = 0;
        for (int64_t c = 0; c < Dv; ++c) {
          delta += dout[rows.oi(b, i, h, c)] * out[rows.oi(b, i, h, c)];
          delta_mag += std::fabs(dout[rows.oi(b, i, h, c)] * out[rows.oi(b, i, h, c)]);
        }
        for (int64_t j = 0; j < d.seq_kv; ++j) {
          const size_t u = static_cast<size_t>(j);
          if (s[u] == -kInf) continue;
          const double p = std::exp(s[u] - l), err = 1 + abs[u];  // P's error scales with its score's
          double dp = 0, dp_mag = 0;
          for (int64_t c = 0; c < Dv; ++c) {
            dp += dout[rows.oi(b, i, h, c)] * rows.v[rows.vi(b, j, hk, c)];
            dp_mag += std::fabs(dout[rows.oi(b, i, h, c)] * rows.v[rows.vi(b, j, hk, c)]);
            dv[rows.vi(b, j, hk, c)] += p * dout[rows.oi(b, i, h, c)];
            dv_mag[rows.vi(b, j, hk, c)] += p * err * std::fabs(dout[rows.oi(b, i, h, c)]);
          }
          const double cap = d.softcap > 0 ? 1 - t[u] * t[u] : 1.0;
          const double ds = p * (dp - delta) * cap, ds_mag = p * (dp_mag + delta_mag) * err;
          for (int64_t c = 0; c < D; ++c) {
            dq[rows.qi(b, i, h, c)] += rows.scale * ds * rows.k[rows.ki(b, j, hk, c)];
            dq_mag[rows.qi(b, i, h, c)] += rows.scale * ds_mag * std::fabs(rows.k[rows.ki(b, j, hk, c)]);
            dk[rows.ki(b, j, hk, c)] += rows.scale * ds * rows.q[rows.qi(b, i, h, c)];
            dk_mag[rows.ki(b, j, hk, c)] += rows.scale * ds_mag * std::fabs(rows.q[rows.qi(b, i, h, c)]);
          }
        }
      }
  auto emit = [&](std::string_view name, const std::vector<double>& value, const std::vector<double>& mag,
                  int64_t terms) {
    if (!attention_present(io, name)) return;
    harness::RefOutput& o = io.out(name);
    for (size_t x = 0; x < value.size(); ++x)
      if (o.wanted(static_cast<int64_t>(x))) o.set(static_cast<int64_t>(x), value[x], mag[x], terms);
  };
  emit("dq", dq, dq_mag, d.seq_kv * (Dv + 1));
  emit("dk", dk, dk_mag, rows.group * d.seq_q * (Dv + 1));
  emit("dv", dv, dv_mag, rows.group * d.seq_q);
}

}  // namespace baracuda::reference

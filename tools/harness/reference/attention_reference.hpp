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
#include <tuple>
#include <vector>

#include "baracuda/ops/attention.hpp"
#include "baracuda/ops/kv_cache.hpp"
#include "harness/op_table.hpp"

namespace baracuda::reference {

// An input's values, row-major over its shape (its view's strides read once).
inline std::vector<double> dense(const harness::HostView& v) {
  std::vector<double> out(static_cast<size_t>(v.numel()));
  for (int64_t i = 0, numel = v.numel(); i < numel; ++i) out[static_cast<size_t>(i)] = v.at(i);
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
  // One score: x = the logit (-inf where query i does not see key j), abs = the magnitude of its
  // terms, t = tanh(raw / softcap) where there is a soft-cap.
  struct Score {
    double x, abs, t;
  };
  Score score(int64_t b, int64_t h, int64_t i, int64_t j) const {
    const int64_t hk = h / group;
    double raw = 0, mag = 0;
    for (int64_t c = 0; c < d.head_dim; ++c) {
      raw += q[qi(b, i, h, c)] * k[ki(b, j, hk, c)];
      mag += std::fabs(q[qi(b, i, h, c)] * k[ki(b, j, hk, c)]);
    }
    raw *= scale;
    Score sc{-std::numeric_limits<double>::infinity(), scale * mag, 0.0};
    if (!visible(i, j)) return sc;
    double x = raw;
    if (d.softcap > 0) {
      sc.t = std::tanh(raw / d.softcap);
      x = d.softcap * sc.t;
    }
    if (d.has_bias) {
      const double bv = bias[static_cast<size_t>(((b * d.heads_q + h) * d.seq_q + i) * d.seq_kv + j)];
      x += bv;
      sc.abs += std::isfinite(bv) ? std::fabs(bv) : 0.0;
    }
    sc.x = x;
    return sc;
  }
  // Query i's scores against every key.
  void scores(int64_t b, int64_t h, int64_t i, std::vector<Score>& s) const {
    s.resize(static_cast<size_t>(d.seq_kv));
    for (int64_t j = 0; j < d.seq_kv; ++j) s[static_cast<size_t>(j)] = score(b, h, i, j);
  }
};

// Whether any of the `count` elements of `o` from `first` on, `stride` apart, is to be checked.
inline bool any_wanted(const harness::RefOutput& o, int64_t first, int64_t count, int64_t stride = 1) {
  for (int64_t c = 0; c < count; ++c)
    if (o.wanted(first + c * stride)) return true;
  return false;
}

inline bool attention_present(const harness::RefIO& io, std::string_view name) {
  return io.specs[static_cast<size_t>(io.index_of(name))].present;
}

inline void attention_forward(const AttentionDescriptor& d, harness::RefIO& io) {
  const AttentionRows rows(d, io);
  harness::RefOutput& out = io.out("out");
  harness::RefOutput* lse = attention_present(io, "lse") ? &io.out("lse") : nullptr;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<AttentionRows::Score> s;
  std::vector<double> p;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads_q; ++h)
      for (int64_t i = 0; i < d.seq_q; ++i) {
        // Only the rows holding a checked element are computed (the profiler checks a sample).
        const int64_t li = (b * d.heads_q + h) * d.seq_q + i;
        const bool lse_wanted = lse && lse->wanted(li);
        if (!lse_wanted && !any_wanted(out, static_cast<int64_t>(rows.oi(b, i, h, 0)), d.head_dim_v)) continue;
        rows.scores(b, h, i, s);
        double mx = -kInf, smag = 0;
        for (const auto& sc : s) {
          mx = std::max(mx, sc.x);
          if (sc.x > -kInf) smag = std::max(smag, sc.abs);
        }
        const int64_t hk = h / rows.group;
        double sum = 0;
        p.assign(s.size(), 0.0);
        if (mx > -kInf)
          for (size_t j = 0; j < s.size(); ++j) sum += p[j] = std::exp(s[j].x - mx);
        if (lse_wanted) lse->set(li, sum > 0 ? mx + std::log(sum) : -kInf, 1 + std::fabs(mx) + smag, d.seq_kv);
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

// The backward by pairs (query i, key j): dq's rows from their keys, dk's and dv's rows from their
// queries, each computed only where it holds a checked element (the profiler checks a sample of
// shapes too large for every pair).
inline void attention_backward(const AttentionDescriptor& d, harness::RefIO& io) {
  const AttentionRows rows(d, io);
  const std::vector<double> out = dense(io.in("out")), dout = dense(io.in("dout")), lse = dense(io.in("lse"));
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const int64_t D = d.head_dim, Dv = d.head_dim_v;
  auto row_of = [&](int64_t b, int64_t h, int64_t i) { return static_cast<size_t>((b * d.heads_q + h) * d.seq_q + i); };
  // delta_i = dout_i . out_i, and the magnitude of its terms.
  std::vector<double> delta(lse.size(), 0.0), delta_mag(lse.size(), 0.0);
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads_q; ++h)
      for (int64_t i = 0; i < d.seq_q; ++i)
        for (int64_t c = 0; c < Dv; ++c) {
          const double t = dout[rows.oi(b, i, h, c)] * out[rows.oi(b, i, h, c)];
          delta[row_of(b, h, i)] += t;
          delta_mag[row_of(b, h, i)] += std::fabs(t);
        }
  // One pair's probability p (from the saved lse), its error scale and dS = p (dP - delta) cap.
  struct Pair {
    bool seen;
    double p, err, ds, ds_mag;
  };
  auto pair = [&](int64_t b, int64_t h, int64_t i, int64_t j) {
    const double l = lse[row_of(b, h, i)];
    if (l == -kInf) return Pair{false, 0, 0, 0, 0};  // a fully masked row: no gradient
    const AttentionRows::Score sc = rows.score(b, h, i, j);
    if (sc.x == -kInf) return Pair{false, 0, 0, 0, 0};
    const int64_t hk = h / rows.group;
    double dp = 0, dp_mag = 0;
    for (int64_t c = 0; c < Dv; ++c) {
      dp += dout[rows.oi(b, i, h, c)] * rows.v[rows.vi(b, j, hk, c)];
      dp_mag += std::fabs(dout[rows.oi(b, i, h, c)] * rows.v[rows.vi(b, j, hk, c)]);
    }
    const double p = std::exp(sc.x - l), err = 1 + sc.abs;  // P's error scales with its score's
    const double cap = d.softcap > 0 ? 1 - sc.t * sc.t : 1.0;
    return Pair{true, p, err, p * (dp - delta[row_of(b, h, i)]) * cap, p * (dp_mag + delta_mag[row_of(b, h, i)]) * err};
  };
  std::vector<double> value, mag;
  if (attention_present(io, "dq")) {
    harness::RefOutput& o = io.out("dq");
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t h = 0; h < d.heads_q; ++h)
        for (int64_t i = 0; i < d.seq_q; ++i) {
          if (!any_wanted(o, static_cast<int64_t>(rows.qi(b, i, h, 0)), D)) continue;
          value.assign(static_cast<size_t>(D), 0.0);
          mag.assign(static_cast<size_t>(D), 0.0);
          for (int64_t j = 0; j < d.seq_kv; ++j) {
            const Pair pr = pair(b, h, i, j);
            if (!pr.seen) continue;
            for (int64_t c = 0; c < D; ++c) {
              value[static_cast<size_t>(c)] += rows.scale * pr.ds * rows.k[rows.ki(b, j, h / rows.group, c)];
              mag[static_cast<size_t>(c)] +=
                  rows.scale * pr.ds_mag * std::fabs(rows.k[rows.ki(b, j, h / rows.group, c)]);
            }
          }
          for (int64_t c = 0; c < D; ++c)
            if (o.wanted(static_cast<int64_t>(rows.qi(b, i, h, c))))
              o.set(static_cast<int64_t>(rows.qi(b, i, h, c)), value[static_cast<size_t>(c)],
                    mag[static_cast<size_t>(c)], d.seq_kv * (Dv + 1));
        }
  }
  const bool want_dk = attention_present(io, "dk"), want_dv = attention_present(io, "dv");
  if (!want_dk && !want_dv) return;
  harness::RefOutput* dk = want_dk ? &io.out("dk") : nullptr;
  harness::RefOutput* dv = want_dv ? &io.out("dv") : nullptr;
  std::vector<double> kval, kmag;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t hk = 0; hk < d.heads_kv; ++hk)
      for (int64_t j = 0; j < d.seq_kv; ++j) {
        const bool k_rows = dk && any_wanted(*dk, static_cast<int64_t>(rows.ki(b, j, hk, 0)), D);
        const bool v_rows = dv && any_wanted(*dv, static_cast<int64_t>(rows.vi(b, j, hk, 0)), Dv);
        if (!k_rows && !v_rows) continue;
        kval.assign(static_cast<size_t>(D), 0.0);
        kmag.assign(static_cast<size_t>(D), 0.0);
        value.assign(static_cast<size_t>(Dv), 0.0);
        mag.assign(static_cast<size_t>(Dv), 0.0);
        for (int64_t h = hk * rows.group; h < (hk + 1) * rows.group; ++h)
          for (int64_t i = 0; i < d.seq_q; ++i) {
            const Pair pr = pair(b, h, i, j);
            if (!pr.seen) continue;
            for (int64_t c = 0; c < Dv; ++c) {
              value[static_cast<size_t>(c)] += pr.p * dout[rows.oi(b, i, h, c)];
              mag[static_cast<size_t>(c)] += pr.p * pr.err * std::fabs(dout[rows.oi(b, i, h, c)]);
            }
            for (int64_t c = 0; c < D; ++c) {
              kval[static_cast<size_t>(c)] += rows.scale * pr.ds * rows.q[rows.qi(b, i, h, c)];
              kmag[static_cast<size_t>(c)] += rows.scale * pr.ds_mag * std::fabs(rows.q[rows.qi(b, i, h, c)]);
            }
          }
        for (int64_t c = 0; k_rows && c < D; ++c)
          if (dk->wanted(static_cast<int64_t>(rows.ki(b, j, hk, c))))
            dk->set(static_cast<int64_t>(rows.ki(b, j, hk, c)), kval[static_cast<size_t>(c)],
                    kmag[static_cast<size_t>(c)], rows.group * d.seq_q * (Dv + 1));
        for (int64_t c = 0; v_rows && c < Dv; ++c)
          if (dv->wanted(static_cast<int64_t>(rows.vi(b, j, hk, c))))
            dv->set(static_cast<int64_t>(rows.vi(b, j, hk, c)), value[static_cast<size_t>(c)],
                    mag[static_cast<size_t>(c)], rows.group * d.seq_q);
      }
}

// The KV cache append: the caches start from their contents (accumulating outputs); each token in
// (sequence, token) order overwrites the row its position maps to, bad entries counted and skipped as
// the header says.
inline void kv_cache_append(const KvCacheAppendDescriptor& d, harness::RefIO& io) {
  const harness::HostView &seq_lens = io.in("seq_lens"), &table = io.in("block_table");
  const bool has_new_lens = io.in("new_lens").numel() > 0;
  int64_t bad = 0;
  for (int64_t b = 0; b < d.batch; ++b) {
    int64_t count = d.new_tokens;
    if (has_new_lens) {
      const auto n = static_cast<int64_t>(io.in("new_lens").at(b));
      count = n < 0 ? 0 : (n > d.new_tokens ? d.new_tokens : n);
      if (count != n) ++bad;
    }
    const auto start = static_cast<int64_t>(seq_lens.at(b));
    if (start < 0) {
      ++bad;
      continue;
    }
    for (int64_t i = 0; i < count; ++i) {
      const int64_t column = (start + i) / d.block_size, row = (start + i) % d.block_size;
      const int64_t block = column < d.max_blocks ? static_cast<int64_t>(table.at(b * d.max_blocks + column)) : -1;
      if (block < 0 || block >= d.num_blocks) {
        ++bad;
        continue;
      }
      for (auto [from, to, dim] :
           {std::tuple{"k_new", "k_cache", d.head_dim}, std::tuple{"v_new", "v_cache", d.head_dim_v}})
        for (int64_t h = 0; h < d.heads_kv; ++h)
          for (int64_t e = 0; e < dim; ++e) {
            const int64_t at = ((block * d.block_size + row) * d.heads_kv + h) * dim + e;
            if (io.out(to).wanted(at))
              io.out(to).set(at, io.in(from).at(((b * d.new_tokens + i) * d.heads_kv + h) * dim + e));
          }
    }
  }
  io.bad_index_count = bad;
}

}  // namespace baracuda::reference

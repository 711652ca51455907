#pragma once
// The naive double-precision reference of the rotary plans, independent of both backends: libm's
// pow, cos and sin of the angle position * inv_freq, each head's pairs rotated (the backward by the
// negated angle), the dims past rotary_dim copied.
#include <cmath>
#include <cstdint>
#include <string_view>

#include "baracuda/ops/rotary.hpp"
#include "harness/op_table.hpp"

namespace baracuda::reference {

// `in` -> `out` for one of the two tensors ("q" -> "q_out", ...), over heads of `heads`.
inline void rotary_tensor(const RotaryDescriptor& d, bool backward, harness::RefIO& io, std::string_view in,
                          std::string_view out, int64_t heads) {
  const harness::HostView& x = io.in(in);
  const harness::HostView& positions = io.in("positions");
  harness::RefOutput& y = io.out(out);
  const int64_t D = d.head_dim, rd = d.rotary_dim ? d.rotary_dim : D, half = rd / 2;
  for (int64_t token = 0; token < d.batch * d.seq_len; ++token) {
    const double position = positions.at(token);
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t base = (token * heads + h) * D;
      for (int64_t i = 0; i < half; ++i) {
        const double inv_freq =
            d.has_inv_freq ? io.in("inv_freq").at(i) : std::pow(d.base, -2.0 * static_cast<double>(i) / rd);
        const double angle = position * inv_freq, c = std::cos(angle), s = (backward ? -1 : 1) * std::sin(angle);
        const int64_t ea = d.layout == RotaryLayout::interleaved ? 2 * i : i;
        const int64_t eb = d.layout == RotaryLayout::interleaved ? ea + 1 : ea + half;
        const double a = x.at(base + ea), b = x.at(base + eb);
        if (y.wanted(base + ea)) y.set(base + ea, a * c - b * s, std::fabs(a * c) + std::fabs(b * s), 2);
        if (y.wanted(base + eb)) y.set(base + eb, b * c + a * s, std::fabs(b * c) + std::fabs(a * s), 2);
      }
      for (int64_t e = rd; e < D; ++e)
        if (y.wanted(base + e)) y.set(base + e, x.at(base + e));
    }
  }
}

inline void rotary(const RotaryDescriptor& d, bool backward, harness::RefIO& io) {
  rotary_tensor(d, backward, io, backward ? "dq_out" : "q", backward ? "dq" : "q_out", d.q_heads);
  if (d.k_heads > 0) rotary_tensor(d, backward, io, backward ? "dk_out" : "k", backward ? "dk" : "k_out", d.k_heads);
}

}  // namespace baracuda::reference

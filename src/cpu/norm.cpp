// The CPU kernels of the norm plans: rows in parallel, each pass over a row once for its mean, once
// for its squared deviations and once to write (the same two-pass statistics as the GPU's; a short
// 16-bit row converted once into f32 the later passes read); the backward's dweight and dbias
// summed by blocks of columns over the rows in order (deterministic, no scratch).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/convert.hpp"
#include "common/dispatch.hpp"
#include "cpu/norm_dtypes.hpp"
#include "cpu/parallel.hpp"
#include "cpu/scatter_order.hpp"
#include "cpu/vector_math.hpp"
#include "ops/norm_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

using norms::dispatch;
using norms::load;

template <class T, class Acc>
void store(T* p, int64_t i, Acc v) {
  p[i] = convert<T>(v);
}
// A value as T holds it (h = x + residual is rounded to x's dtype).
template <class T, class Acc>
Acc rounded(Acc v) {
  return convert<Acc>(convert<T>(v));
}

// Element j's offset in tensor t along the normalized dims; kUnit: every tensor is contiguous
// there, so the loops over a row are plain loops the compiler vectorizes.
template <bool kUnit, int NT>
int64_t inner_offset(const Walker<NT>& w, int t, int64_t j) {
  if constexpr (kUnit) return j;
  if (w.rank <= 1) return w.rank ? j * w.strides[t][0] : 0;
  int64_t off[NT];
  w.offsets(j, off);
  return off[t];
}

// Whether every tensor present (non-null) has unit stride along the (collapsed) normalized dims.
bool unit_inner(const NormGeometry& g, std::initializer_list<const void*> tensors) {
  if (g.inner.rank > 1) return false;
  int t = 0;
  for (const void* data : tensors) {
    if (data && g.inner.rank == 1 && g.inner.strides[t][0] != 1) return false;
    ++t;
  }
  return true;
}

// Calls f(std::bool_constant<kUnit>) for the problem's inner addressing.
template <class F>
Status with_inner(bool unit, F&& f) {
  return unit ? f(std::true_type{}) : f(std::false_type{});
}

// The passes over a contiguous row, in the widest vectors the machine has (BARACUDA_CPU_CLONES),
// sums in vector_math.hpp's fixed lanes (the same bits on every ISA).
constexpr int kLanes = kSumLanes;

// y = (x - mean) rstd (w + offset) + b over n, each factor where present (the general path's order).
template <class A, class W>
BARACUDA_CPU_CLONES void write_normalized(const A* x, int64_t n, A mean, A rstd, const W* weight, A offset,
                                          const W* bias, A* y) {
  if (weight && bias)
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      y[j] = (x[j] - mean) * rstd * (convert<A>(weight[j]) + offset) + convert<A>(bias[j]);
  else if (weight)
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd * (convert<A>(weight[j]) + offset);
  else if (bias)
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd + convert<A>(bias[j]);
  else
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd;
}

// The backward's sums over a contiguous row of the compute type: of g xhat and of g, with
// g = dy (w + offset) (dy without a weight) and xhat = (h - mean) rstd.
template <class A>
struct GradSums {
  A gx, g;
};
template <class A, class W>
BARACUDA_CPU_CLONES GradSums<A> row_grad_sums(const A* dy, const A* h, const W* weight, A offset, A mean, A rstd,
                                              int64_t n) {
  A gx[kLanes] = {}, gs[kLanes] = {};
  const int64_t body = n - n % kLanes;
  for (int64_t i = 0; i < body; i += kLanes)
#pragma omp simd
    for (int u = 0; u < kLanes; ++u) {
      const A g = weight ? dy[i + u] * (convert<A>(weight[i + u]) + offset) : dy[i + u];
      gx[u] += g * ((h[i + u] - mean) * rstd);
      gs[u] += g;
    }
  for (int64_t i = body; i < n; ++i) {
    const A g = weight ? dy[i] * (convert<A>(weight[i]) + offset) : dy[i];
    gx[i - body] += g * ((h[i] - mean) * rstd);
    gs[i - body] += g;
  }
  return {lanes_sum(gx), lanes_sum(gs)};
}

// dx = rstd (g - cb - xhat ca) (+ dh), over a contiguous row of the compute type (dx may be dy, h or
// dh).
template <class A, class W>
BARACUDA_CPU_CLONES void write_gradient(const A* dy, const A* h, const W* weight, A offset, A mean, A rstd, A ca, A cb,
                                        const A* dh, A* dx, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    const A g = weight ? dy[j] * (convert<A>(weight[j]) + offset) : dy[j];
    A out = rstd * (g - cb - ((h[j] - mean) * rstd) * ca);
    if (dh) out += dh[j];
    dx[j] = out;
  }
}

// One row's terms of dweight (dy xhat) and dbias (dy) added to sw and sb (each optional) over n
// contiguous columns of the compute type.
template <class A>
BARACUDA_CPU_CLONES void add_weight_gradients(const A* dy, const A* h, A mean, A rstd, int64_t n, A* sw, A* sb) {
  if (sw)
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) sw[j] += dy[j] * ((h[j] - mean) * rstd);
  if (sb)
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) sb[j] += dy[j];
}

// h = x + r over n contiguous values, added in the compute type A and stored as T (rounded: the value
// the passes then read back, as the general path rounds it).
template <class A, class T>
BARACUDA_CPU_CLONES void add_rows(const T* x, const T* r, int64_t n, T* h) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) h[j] = convert<T>(to_acc<A>(x[j]) + to_acc<A>(r[j]));
}

// n values of the compute type stored as T (16-bit: rounded), in a loop of their own (a conversion
// inside the math's loop narrowed GCC's vectors, as in cpu/softmax.cpp).
template <class A, class T>
BARACUDA_CPU_CLONES void narrow_row(const A* y, int64_t n, T* out) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) out[j] = convert<T>(y[j]);
}

// The longest 16-bit row the forward converts once and keeps (32 KB of f32: within L1).
inline constexpr int64_t kHeldRow = 8192;

template <class T, class W, bool kUnit>
Status forward(const NormForwardProblem& p) {
  using Acc = acc_t<T>;
  constexpr bool k16 = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
  const NormGeometry& g = p.geometry;
  const NormArgs& a = p.args;
  const bool rms = p.kind == NormKind::rms, residual = p.desc.residual;
  const W* weight = p.desc.has_weight ? static_cast<const W*>(a.weight.data) : nullptr;
  const W* bias = !rms && p.desc.has_bias ? static_cast<const W*>(a.bias.data) : nullptr;
  Acc* mean_out = rms ? nullptr : static_cast<Acc*>(a.mean.data);
  Acc* rstd_out = static_cast<Acc*>(a.rstd.data);
  const Acc n = static_cast<Acc>(std::max<int64_t>(g.n, 1)), eps = static_cast<Acc>(p.desc.eps);  // empty: 0, 0
  const Acc offset = static_cast<Acc>(p.desc.weight_offset);
#pragma omp parallel for schedule(static) if (g.rows * g.n > kParallelThreshold)
  for (int64_t row = 0; row < g.rows; ++row) {
    int64_t off[kNormRowTensors];
    g.row.offsets(row, off);
    const T* x = static_cast<const T*>(a.x.data) + off[0];
    const T* r = residual ? static_cast<const T*>(a.residual.data) + off[1] : nullptr;
    T* y = static_cast<T*>(a.y.data) + off[2];
    T* h = residual ? static_cast<T*>(a.h.data) + off[3] : nullptr;
    // A 16-bit row of up to kHeldRow elements is converted once, into f32 that stays in L1 for the
    // later passes; longer rows, and f32 / f64 ones, are read again.
    alignas(64) Acc held[k16 ? kHeldRow : 1];
    const bool hold = k16 && g.n <= kHeldRow;
    if constexpr (kUnit) {
      // Contiguous rows through the cloned passes: f32 / f64 read in place, 16-bit rows through f32
      // copies in `held` (the row's, or a piece's at a time, converted again for each pass). With a
      // residual, h = x + residual (rounded to T) is written first and read as the row (the values the
      // general path computes).
      const T* row_in = x;
      if (residual) {
        add_rows<Acc>(x, r, g.n, h);
        row_in = h;
      }
      constexpr bool kInPlace = std::is_same_v<T, Acc>;
      if (hold) convert_rows(row_in, 0, 1, 1, static_cast<int>(g.n), held);
      // The compute type's values of [c, c + m), m as many as a piece holds.
      const auto piece = [&](int64_t c, int64_t& m) -> const Acc* {
        m = kInPlace ? g.n - c : std::min(kHeldRow, g.n - c);
        if constexpr (kInPlace) {
          return row_in + c;
        } else {
          if (!hold) convert_rows(row_in + c, 0, 1, 1, static_cast<int>(m), held);
          return held;
        }
      };
      const auto moment = [&](bool squares, bool centered, Acc mean) {
        Acc total = 0;
        for (int64_t c = 0, m = 0; c < g.n; c += m) {
          const Acc* v = piece(c, m);  // (before m is read)
          const Acc part = lanes_moment(v, m, squares, centered, mean);
          total = c == 0 ? part : total + part;
        }
        return total;
      };
      const Acc mean = rms ? Acc(0) : moment(false, false, Acc(0)) / n;
      const Acc rstd = Acc(1) / std::sqrt(moment(rms, !rms, mean) / n + eps);
      if (mean_out) mean_out[off[4]] = mean;
      if (rstd_out) rstd_out[off[5]] = rstd;
      for (int64_t c = 0, m = 0; c < g.n; c += m) {
        const Acc* v = piece(c, m);
        const W *w = weight ? weight + c : nullptr, *b = bias ? bias + c : nullptr;
        if constexpr (kInPlace) {
          write_normalized(v, m, mean, rstd, w, offset, b, y + c);
        } else {
          write_normalized(v, m, mean, rstd, w, offset, b, held);
          narrow_row(held, m, y + c);
        }
      }
      continue;
    }
    auto value = [&](int64_t j) {  // h's value (x + residual rounded to T), as the GPU computes it
      const Acc v = load<Acc>(x, inner_offset<kUnit>(g.inner, 0, j));
      return r ? rounded<T>(v + load<Acc>(r, inner_offset<kUnit>(g.inner, 1, j))) : v;
    };
    Acc sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < g.n; ++j) {
      const Acc v = value(j);
      if (hold) held[j] = v;
      if (h) store(h, inner_offset<kUnit>(g.inner, 3, j), v);
      sum += rms ? v * v : v;
    }
    auto finish = [&](auto get) {
      Acc mean = 0, rstd;
      if (rms) {
        rstd = Acc(1) / std::sqrt(sum / n + eps);
      } else {
        mean = sum / n;
        Acc dev = 0;
#pragma omp simd reduction(+ : dev)
        for (int64_t j = 0; j < g.n; ++j) dev += (get(j) - mean) * (get(j) - mean);
        rstd = Acc(1) / std::sqrt(dev / n + eps);
      }
      if (mean_out) mean_out[off[4]] = mean;
      if (rstd_out) rstd_out[off[5]] = rstd;
      for (int64_t j = 0; j < g.n; ++j) {
        Acc out = (get(j) - mean) * rstd;
        if (weight) out *= load<Acc>(weight, inner_offset<kUnit>(g.inner, 4, j)) + offset;
        if (bias) out += load<Acc>(bias, inner_offset<kUnit>(g.inner, 5, j));
        store(y, inner_offset<kUnit>(g.inner, 2, j), out);
      }
    };
    if (hold)
      finish([&](int64_t j) { return held[j]; });
    else
      finish(value);
  }
  return Status::ok();
}

template <class T, class W, bool kUnit>
Status backward(const NormBackwardProblem& p) {
  using Acc = acc_t<T>;
  const NormGeometry& g = p.geometry;
  const NormBackwardArgs& a = p.args;
  const bool rms = p.kind == NormKind::rms;
  const W* weight = p.desc.has_weight ? static_cast<const W*>(a.weight.data) : nullptr;
  const Acc* mean = rms ? nullptr : static_cast<const Acc*>(a.mean.data);
  const Acc* rstd = static_cast<const Acc*>(a.rstd.data);
  const T* dh_base = p.desc.residual ? static_cast<const T*>(a.dh.data) : nullptr;
  const Acc n = static_cast<Acc>(g.n), offset = static_cast<Acc>(p.desc.weight_offset);
  // Row `row`'s pointers, mean and rstd.
  struct Row {
    const T *dy, *h, *dh;
    T* dx;
    Acc mean, rstd;
  };
  auto row_of = [&](int64_t row) {
    int64_t off[kNormRowTensors];
    g.row.offsets(row, off);
    return Row{static_cast<const T*>(a.dy.data) + off[0],
               static_cast<const T*>(a.x.data) + off[1],
               dh_base ? dh_base + off[2] : nullptr,
               a.dx.data ? static_cast<T*>(a.dx.data) + off[3] : nullptr,
               mean ? mean[off[4]] : Acc(0),
               rstd[off[5]]};
  };
  auto w_at = [&](int64_t j) {
    return weight ? load<Acc>(weight, inner_offset<kUnit>(g.inner, 4, j)) + offset : Acc(1);
  };
  W* dweight = static_cast<W*>(a.dweight.data);
  W* dbias = static_cast<W*>(a.dbias.data);
  // First (dx may be dy or h exactly, in place): columns in blocks, each block's rows in order, so
  // the sums' order is fixed.
  constexpr int64_t kColumns = 64;
  int64_t blocks = dweight || dbias ? (g.n + kColumns - 1) / kColumns : 0;
  if constexpr (kUnit) {
    // Contiguous rows: each thread a range of columns, the rows in order (the same sums), a row at a
    // time through the cloned loop (16-bit rows converted to f32 first, a loop of their own).
    if (blocks > 0) {
      blocks = 0;
#pragma omp parallel if (g.rows * g.n > kParallelThreshold)
      {
        int64_t c0, c1;
        owned_range(g.n, c0, c1);
        const int64_t width = c1 - c0;
        std::vector<Acc> sw(dweight ? width : 0), sb(dbias ? width : 0);
        std::vector<Acc> dy(std::is_same_v<T, Acc> ? 0 : width), h(std::is_same_v<T, Acc> ? 0 : width);
        for (int64_t row = 0; row < g.rows && width > 0; ++row) {
          const Row r = row_of(row);
          const Acc *dy_row, *h_row;
          if constexpr (std::is_same_v<T, Acc>) {
            dy_row = r.dy + c0, h_row = r.h + c0;
          } else {
            convert_rows(r.dy + c0, 0, 1, 1, static_cast<int>(width), dy.data());
            convert_rows(r.h + c0, 0, 1, 1, static_cast<int>(width), h.data());
            dy_row = dy.data(), h_row = h.data();
          }
          add_weight_gradients(dy_row, h_row, r.mean, r.rstd, width, dweight ? sw.data() : nullptr,
                               dbias ? sb.data() : nullptr);
        }
        for (int64_t j = c0; j < c1; ++j) {
          if (dweight) store(dweight, j, sw[j - c0]);
          if (dbias) store(dbias, j, sb[j - c0]);
        }
      }
    }
  }
#pragma omp parallel for schedule(static) if (g.rows * g.n > kParallelThreshold)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t j0 = b * kColumns, j1 = std::min(g.n, j0 + kColumns);
    Acc sw[kColumns] = {}, sb[kColumns] = {};
    for (int64_t row = 0; row < g.rows; ++row) {
      const Row r = row_of(row);
      for (int64_t j = j0; j < j1; ++j) {
        const Acc dy = load<Acc>(r.dy, inner_offset<kUnit>(g.inner, 0, j));
        sw[j - j0] += dy * ((load<Acc>(r.h, inner_offset<kUnit>(g.inner, 1, j)) - r.mean) * r.rstd);
        sb[j - j0] += dy;
      }
    }
    for (int64_t j = j0; j < j1; ++j) {
      if (dweight) store(dweight, inner_offset<kUnit>(g.inner, 5, j), sw[j - j0]);
      if (dbias) store(dbias, inner_offset<kUnit>(g.inner, 6, j), sb[j - j0]);
    }
  }
  if (a.dx.data) {
#pragma omp parallel for schedule(static) if (g.rows * g.n > kParallelThreshold)
    for (int64_t row = 0; row < g.rows; ++row) {
      const Row r = row_of(row);
      if constexpr (kUnit) {
        // Contiguous rows through the cloned passes: f32 / f64 read in place, 16-bit rows through f32
        // copies (the row's, or a piece's at a time, converted again for the second pass; dx computed
        // into dy's copy, then stored as T).
        constexpr bool kInPlace = std::is_same_v<T, Acc>;
        alignas(64) Acc dy[kInPlace ? 1 : kHeldRow], h[kInPlace ? 1 : kHeldRow], dh[kInPlace ? 1 : kHeldRow];
        const bool whole = kInPlace || g.n <= kHeldRow;
        // dy and h of [c, c + m) in the compute type, m as many as a piece holds (converted if `fresh`).
        const auto piece = [&](int64_t c, int64_t& m, bool fresh) -> std::pair<const Acc*, const Acc*> {
          m = kInPlace ? g.n - c : std::min(kHeldRow, g.n - c);
          if constexpr (kInPlace) {
            return {r.dy + c, r.h + c};
          } else {
            if (fresh) {
              convert_rows(r.dy + c, 0, 1, 1, static_cast<int>(m), dy);
              convert_rows(r.h + c, 0, 1, 1, static_cast<int>(m), h);
            }
            return {dy, h};
          }
        };
        GradSums<Acc> sums{0, 0};
        for (int64_t c = 0, m = 0; c < g.n; c += m) {
          const auto [dy_c, h_c] = piece(c, m, true);
          const GradSums<Acc> part = row_grad_sums(dy_c, h_c, weight ? weight + c : nullptr, offset, r.mean, r.rstd, m);
          sums = c == 0 ? part : GradSums<Acc>{sums.gx + part.gx, sums.g + part.g};
        }
        const Acc ca = sums.gx / n, cb = rms ? Acc(0) : sums.g / n;
        for (int64_t c = 0, m = 0; c < g.n; c += m) {
          const auto [dy_c, h_c] = piece(c, m, !whole);
          const W* w = weight ? weight + c : nullptr;
          if constexpr (kInPlace) {
            write_gradient(dy_c, h_c, w, offset, r.mean, r.rstd, ca, cb, r.dh ? r.dh + c : nullptr, r.dx + c, m);
          } else {
            if (r.dh) convert_rows(r.dh + c, 0, 1, 1, static_cast<int>(m), dh);  // (the skip path's gradient)
            write_gradient(dy_c, h_c, w, offset, r.mean, r.rstd, ca, cb, r.dh ? static_cast<const Acc*>(dh) : nullptr,
                           dy, m);
            narrow_row(dy, m, r.dx + c);
          }
        }
        continue;
      }
      auto xhat = [&](int64_t j) { return (load<Acc>(r.h, inner_offset<kUnit>(g.inner, 1, j)) - r.mean) * r.rstd; };
      auto grad = [&](int64_t j) { return load<Acc>(r.dy, inner_offset<kUnit>(g.inner, 0, j)) * w_at(j); };
      Acc sum_gx = 0, sum_g = 0;
#pragma omp simd reduction(+ : sum_gx, sum_g)
      for (int64_t j = 0; j < g.n; ++j) {
        sum_gx += grad(j) * xhat(j);
        sum_g += grad(j);
      }
      const Acc ca = sum_gx / n, cb = rms ? Acc(0) : sum_g / n;
      for (int64_t j = 0; j < g.n; ++j) {
        Acc out = r.rstd * (grad(j) - cb - xhat(j) * ca);
        if (r.dh) out += load<Acc>(r.dh, inner_offset<kUnit>(g.inner, 2, j));
        store(r.dx, inner_offset<kUnit>(g.inner, 3, j), out);
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status launch(const LaunchContext&, const NormForwardProblem& p) {
  const NormArgs& a = p.args;
  const bool unit = unit_inner(p.geometry, {a.x.data, a.residual.data, a.y.data, a.h.data, a.weight.data, a.bias.data});
  return dispatch(p, [&](auto t, auto w) {
    return with_inner(unit, [&](auto u) {
      return forward<typename decltype(t)::type, typename decltype(w)::type, decltype(u)::value>(p);
    });
  });
}
Status launch(const LaunchContext&, const NormBackwardProblem& p) {
  const NormBackwardArgs& a = p.args;
  const bool unit =
      unit_inner(p.geometry, {a.dy.data, a.x.data, a.dh.data, a.dx.data, a.weight.data, a.dweight.data, a.dbias.data});
  return dispatch(p, [&](auto t, auto w) {
    return with_inner(unit, [&](auto u) {
      return backward<typename decltype(t)::type, typename decltype(w)::type, decltype(u)::value>(p);
    });
  });
}

}  // namespace baracuda::detail::cpu

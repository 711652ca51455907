// The CPU kernels of the group norm plans: (sample, group) pairs in parallel, each group walked in
// memory order (channels fastest for channels-last views) once for its mean, once for its squared
// deviations and once to write; the backward sums dz and dz * xhat per (sample, channel) into the
// workspace, from which each group's means and, in sample order, dweight and dbias follow
// (deterministic).
#include <cmath>
#include <type_traits>
#include <vector>

#include "common/convert.hpp"
#include "common/dispatch.hpp"
#include "common/unary_math.hpp"
#include "cpu/norm_dtypes.hpp"
#include "cpu/parallel.hpp"
#include "cpu/vector_math.hpp"
#include "ops/group_norm_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

using norms::dispatch;
using norms::load;

// Offset of spatial element s in view t.
int64_t space_offset(const GroupNormGeometry& g, int t, int64_t s) {
  if (g.space.rank == 0) return 0;
  if (g.space.rank == 1) return s * g.space.strides[t][0];
  int64_t off[kGroupNormViews];
  g.space.offsets(s, off);
  return off[t];
}

// Calls f(c, s) for every element of a group (c: the channel within the group), in memory order.
template <class F>
void each_element(const GroupNormGeometry& g, F&& f) {
  if (g.group_size() == 0) return;  // (C = 0 with any spatial size: no loop over empty rows)
  if (g.channel_minor) {
    for (int64_t s = 0; s < g.spatial; ++s)
      for (int64_t c = 0; c < g.group_channels; ++c) f(c, s);
  } else {
    for (int64_t c = 0; c < g.group_channels; ++c)
      for (int64_t s = 0; s < g.spatial; ++s) f(c, s);
  }
}

// (f32's exp branch-free, so that the SiLU loops vectorize.)
template <class Acc>
Acc sigmoid(Acc z) {
  return unary_fn::sigmoid(z);
}

// The affine output z, and with kSilu z sigmoid(z).
template <bool kSilu, class A>
[[gnu::always_inline]] inline A activated(A z) {
  return kSilu ? z * sigmoid(z) : z;
}

// dz, the gradient reaching the norm's affine output z = xhat w + b, from dy (kSilu: through SiLU,
// recomputing z).
template <bool kSilu, class A>
[[gnu::always_inline]] inline A dz_of(A dy, A xhat, A w, A b) {
  if constexpr (!kSilu) return dy;
  const A z = xhat * w + b, sig = sigmoid(z);
  return dy * sig * (A(1) + z * (A(1) - sig));
}

// The unit-stride channels' loops (a channel's spatial elements contiguous), in the widest vectors
// the machine has (BARACUDA_CPU_CLONES), sums in vector_math.hpp's fixed lanes (the same bits on every
// ISA).
constexpr int kLanes = kSumLanes;

// y = (x - mean) rstd w + b (kSilu: its SiLU) over a channel's n values.
template <bool kSilu, class A, class T>
BARACUDA_CPU_CLONES void channel_normalized(const T* x, int64_t n, A mean, A rstd, A w, A b, T* y) {
#pragma omp simd
  for (int64_t s = 0; s < n; ++s) y[s] = convert<T>(activated<kSilu>((to_acc<A>(x[s]) - mean) * rstd * w + b));
}

// The backward's sums over a channel's n values: of dz and of dz xhat, xhat = (x - mean) rstd.
template <bool kSilu, class A, class T>
BARACUDA_CPU_CLONES void channel_gradient_sums(const T* dy, const T* x, int64_t n, A mean, A rstd, A w, A b, A& s_dz,
                                               A& s_dzx) {
  A dz[kLanes] = {}, dzx[kLanes] = {};
  const int64_t body = n - n % kLanes;
  for (int64_t i = 0; i < body; i += kLanes)
#pragma omp simd
    for (int u = 0; u < kLanes; ++u) {
      const A xhat = (to_acc<A>(x[i + u]) - mean) * rstd, g = dz_of<kSilu>(to_acc<A>(dy[i + u]), xhat, w, b);
      dz[u] += g;
      dzx[u] += g * xhat;
    }
  for (int64_t i = body; i < n; ++i) {
    const A xhat = (to_acc<A>(x[i]) - mean) * rstd, g = dz_of<kSilu>(to_acc<A>(dy[i]), xhat, w, b);
    dz[i - body] += g;
    dzx[i - body] += g * xhat;
  }
  s_dz = lanes_sum(dz);
  s_dzx = lanes_sum(dzx);
}

// dx = rstd (dz w - mean_g - xhat mean_gx) over a channel's n values.
template <bool kSilu, class A, class T>
BARACUDA_CPU_CLONES void channel_gradient(const T* dy, const T* x, int64_t n, A mean, A rstd, A w, A b, A mean_g,
                                          A mean_gx, T* dx) {
#pragma omp simd
  for (int64_t s = 0; s < n; ++s) {
    const A xhat = (to_acc<A>(x[s]) - mean) * rstd;
    dx[s] = convert<T>(rstd * (dz_of<kSilu>(to_acc<A>(dy[s]), xhat, w, b) * w - mean_g - xhat * mean_gx));
  }
}

// Channels-last data whose channels are unit-strided (x [N, *, C] as PyTorch's channels_last): a
// sample at a time, each spatial element's C channels one contiguous row, every loop vectorized
// along the channels, each channel's sums in spatial order and a group's in channel order (a
// group's channels interleave with the others' in memory, so walking a group alone would take a
// call for every spatial element's few channels). The per-channel arrays: the statistics of the
// channel's group, its weight and bias, its sums.

// acc[c] += x[c] (kCentered: (x[c] - mean[c])^2) over `rows` rows of n channels, `stride` apart.
template <bool kCentered, class A, class T>
BARACUDA_CPU_CLONES void rows_moment(const T* x, int64_t rows, int64_t stride, int64_t n, const A* mean, A* acc) {
  for (int64_t r = 0; r < rows; ++r, x += stride)
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) {
      const A v = kCentered ? to_acc<A>(x[c]) - mean[c] : to_acc<A>(x[c]);
      acc[c] += kCentered ? v * v : v;
    }
}

// y = (x - mean[c]) rstd[c] w[c] + b[c] (kSilu: its SiLU) over a row of n channels.
template <bool kSilu, class A, class T>
BARACUDA_CPU_CLONES void row_normalized(const T* x, int64_t n, const A* mean, const A* rstd, const A* w, const A* b,
                                        T* y) {
#pragma omp simd
  for (int64_t c = 0; c < n; ++c)
    y[c] = convert<T>(activated<kSilu>((to_acc<A>(x[c]) - mean[c]) * rstd[c] * w[c] + b[c]));
}

// s_dz[c] += dz, s_dzx[c] += dz xhat over `rows` rows of dy and x.
template <bool kSilu, class A, class T>
BARACUDA_CPU_CLONES void rows_gradient_sums(const T* dy, int64_t dy_stride, const T* x, int64_t x_stride, int64_t rows,
                                            int64_t n, const A* mean, const A* rstd, const A* w, const A* b, A* s_dz,
                                            A* s_dzx) {
  for (int64_t r = 0; r < rows; ++r, dy += dy_stride, x += x_stride)
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) {
      const A xhat = (to_acc<A>(x[c]) - mean[c]) * rstd[c], g = dz_of<kSilu>(to_acc<A>(dy[c]), xhat, w[c], b[c]);
      s_dz[c] += g;
      s_dzx[c] += g * xhat;
    }
}

// dx = rstd[c] (dz w[c] - mean_g[c] - xhat mean_gx[c]) over a row of n channels.
template <bool kSilu, class A, class T>
BARACUDA_CPU_CLONES void row_gradient(const T* dy, const T* x, int64_t n, const A* mean, const A* rstd, const A* w,
                                      const A* b, const A* mean_g, const A* mean_gx, T* dx) {
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) {
    const A xhat = (to_acc<A>(x[c]) - mean[c]) * rstd[c];
    dx[c] =
        convert<T>(rstd[c] * (dz_of<kSilu>(to_acc<A>(dy[c]), xhat, w[c], b[c]) * w[c] - mean_g[c] - xhat * mean_gx[c]));
  }
}

// Whether views `views` are channels-last rows: flat spatial dims of at least one element, or none
// ([N, C]: one row a sample), the channels unit-strided.
bool channel_rows(const GroupNormGeometry& g, std::initializer_list<int> views) {
  if (g.spatial == 0 || g.group_size() == 0 || g.space.rank > 1 || (g.space.rank == 1 && !g.channel_minor))
    return false;
  for (int t : views)
    if (g.c_stride[t] != 1) return false;
  return true;
}

// The step between a view's rows (spatial elements).
int64_t row_step(const GroupNormGeometry& g, int t) { return g.space.rank == 1 ? g.space.strides[t][0] : 0; }

// Each group's sum of per-channel values v, spread to its channels: out[c] = f(the sum over c's group).
template <class A, class F>
void per_group(const GroupNormGeometry& g, const std::vector<A>& v, std::vector<A>& out, F&& f) {
  for (int64_t group = 0; group < g.groups; ++group) {
    const int64_t c0 = group * g.group_channels;
    A sum = 0;
    for (int64_t c = c0; c < c0 + g.group_channels; ++c) sum += v[c];
    const A value = f(sum, group);
    for (int64_t c = c0; c < c0 + g.group_channels; ++c) out[c] = value;
  }
}

// The per-channel weight and bias (1 and 0 where there is none).
template <class A, class W>
void channel_affine(const GroupNormGeometry& g, const W* weight, const W* bias, std::vector<A>& w, std::vector<A>& b) {
  for (int64_t c = 0; c < g.channels; ++c) {
    w[c] = weight ? load<A>(weight, c * g.weight_stride) : A(1);
    b[c] = bias ? load<A>(bias, c * g.bias_stride) : A(0);
  }
}

template <class T, class W>
void forward_channel_rows(const GroupNormForwardProblem& p) {
  using Acc = acc_t<T>;
  const GroupNormGeometry& g = p.geometry;
  const GroupNormArgs& a = p.args;
  const int64_t C = g.channels, xs = row_step(g, 0), ys = row_step(g, 1);
  const Acc count = static_cast<Acc>(g.group_size()), eps = static_cast<Acc>(p.desc.eps);
  std::vector<Acc> w(C), b(C);
  channel_affine<Acc>(g, p.desc.has_weight ? static_cast<const W*>(a.weight.data) : nullptr,
                      p.desc.has_bias ? static_cast<const W*>(a.bias.data) : nullptr, w, b);
#pragma omp parallel for schedule(static) if (g.samples * C * g.spatial > kParallelThreshold)
  for (int64_t n = 0; n < g.samples; ++n) {
    const T* x = static_cast<const T*>(a.x.data) + n * g.n_stride[0];
    T* y = static_cast<T*>(a.y.data) + n * g.n_stride[1];
    std::vector<Acc> acc(C, Acc(0)), mean(C), rstd(C);
    rows_moment<false>(x, g.spatial, xs, C, static_cast<const Acc*>(nullptr), acc.data());
    per_group(g, acc, mean, [&](Acc sum, int64_t group) {
      if (Acc* out = static_cast<Acc*>(a.mean.data)) out[n * g.mean_stride[0] + group * g.mean_stride[1]] = sum / count;
      return sum / count;
    });
    std::fill(acc.begin(), acc.end(), Acc(0));
    rows_moment<true>(x, g.spatial, xs, C, mean.data(), acc.data());
    per_group(g, acc, rstd, [&](Acc dev, int64_t group) {
      const Acc r = Acc(1) / std::sqrt(dev / count + eps);
      if (Acc* out = static_cast<Acc*>(a.rstd.data)) out[n * g.rstd_stride[0] + group * g.rstd_stride[1]] = r;
      return r;
    });
    for (int64_t s = 0; s < g.spatial; ++s) {
      if (p.desc.silu)
        row_normalized<true>(x + s * xs, C, mean.data(), rstd.data(), w.data(), b.data(), y + s * ys);
      else
        row_normalized<false>(x + s * xs, C, mean.data(), rstd.data(), w.data(), b.data(), y + s * ys);
    }
  }
}

// The backward of channels-last rows: the per-(sample, channel) sums kept in `sums` as the item loop
// keeps them, dx where it is asked for.
template <bool kSilu, class T, class W>
void backward_channel_rows(const GroupNormBackwardProblem& p, acc_t<T>* sums) {
  using Acc = acc_t<T>;
  const GroupNormGeometry& g = p.geometry;
  const GroupNormBackwardArgs& a = p.args;
  const int64_t C = g.channels;
  const int64_t dys = row_step(g, 0), xs = row_step(g, 1), dxs = row_step(g, 2);
  const Acc count = static_cast<Acc>(g.group_size());
  std::vector<Acc> w(C), b(C);  // (the bias only with SiLU: z's)
  channel_affine<Acc>(g, p.desc.has_weight ? static_cast<const W*>(a.weight.data) : nullptr,
                      kSilu && p.desc.has_bias ? static_cast<const W*>(a.bias.data) : nullptr, w, b);
  const Acc* mean_in = static_cast<const Acc*>(a.mean.data);
  const Acc* rstd_in = static_cast<const Acc*>(a.rstd.data);
#pragma omp parallel for schedule(static) if (g.samples * C * g.spatial > kParallelThreshold)
  for (int64_t n = 0; n < g.samples; ++n) {
    const T* dy = static_cast<const T*>(a.dy.data) + n * g.n_stride[0];
    const T* x = static_cast<const T*>(a.x.data) + n * g.n_stride[1];
    std::vector<Acc> mean(C), rstd(C), s_dz(C, Acc(0)), s_dzx(C, Acc(0)), mean_g(C), mean_gx(C);
    for (int64_t c = 0; c < C; ++c) {
      const int64_t group = c / g.group_channels;
      mean[c] = mean_in[n * g.mean_stride[0] + group * g.mean_stride[1]];
      rstd[c] = rstd_in[n * g.rstd_stride[0] + group * g.rstd_stride[1]];
    }
    rows_gradient_sums<kSilu>(dy, dys, x, xs, g.spatial, C, mean.data(), rstd.data(), w.data(), b.data(), s_dz.data(),
                              s_dzx.data());
    if (sums)
      for (int64_t c = 0; c < C; ++c) {
        sums[n * C + c] = s_dzx[c];
        sums[(g.samples + n) * C + c] = s_dz[c];
      }
    if (!a.dx.data) continue;
    for (int64_t c = 0; c < C; ++c) {  // g = dz w, and g xhat
      s_dz[c] *= w[c];
      s_dzx[c] *= w[c];
    }
    per_group(g, s_dz, mean_g, [&](Acc sum, int64_t) { return sum / count; });
    per_group(g, s_dzx, mean_gx, [&](Acc sum, int64_t) { return sum / count; });
    T* dx = static_cast<T*>(a.dx.data) + n * g.n_stride[2];
    for (int64_t s = 0; s < g.spatial; ++s)
      row_gradient<kSilu>(dy + s * dys, x + s * xs, C, mean.data(), rstd.data(), w.data(), b.data(), mean_g.data(),
                          mean_gx.data(), dx + s * dxs);
  }
}

template <class T, class W>
Status forward(const GroupNormForwardProblem& p) {
  using Acc = acc_t<T>;
  const GroupNormGeometry& g = p.geometry;
  const GroupNormArgs& a = p.args;
  const W* weight = p.desc.has_weight ? static_cast<const W*>(a.weight.data) : nullptr;
  const W* bias = p.desc.has_bias ? static_cast<const W*>(a.bias.data) : nullptr;
  Acc* mean_out = static_cast<Acc*>(a.mean.data);
  Acc* rstd_out = static_cast<Acc*>(a.rstd.data);
  const Acc count = static_cast<Acc>(std::max<int64_t>(g.group_size(), 1)), eps = static_cast<Acc>(p.desc.eps);
  const bool silu = p.desc.silu;
  // (No spatial element: the element-wise path, which walks no channel of an empty group.)
  const bool unit = g.spatial > 0 && g.space.rank == 1 && !g.channel_minor && g.space.strides[0][0] == 1 &&
                    g.space.strides[1][0] == 1;
  // No channel or no spatial element: nothing to normalize, and only statistics asked for have
  // elements (a loop over N x groups empty groups could otherwise run for hours).
  if (g.group_size() == 0 && !mean_out && !rstd_out) return Status::ok();
  if (channel_rows(g, {0, 1})) {
    forward_channel_rows<T, W>(p);
    return Status::ok();
  }
  const int64_t items = g.samples * g.groups;
#pragma omp parallel for schedule(static) if (items * g.group_size() > kParallelThreshold)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t n = item / g.groups, group = item % g.groups, c0 = group * g.group_channels;
    const T* x = static_cast<const T*>(a.x.data) + n * g.n_stride[0] + c0 * g.c_stride[0];
    T* y = static_cast<T*>(a.y.data) + n * g.n_stride[1] + c0 * g.c_stride[1];
    if (unit) {  // a channel's spatial elements contiguous in x and y: the cloned loops
      Acc sum = 0;
      for (int64_t c = 0; c < g.group_channels; ++c)
        sum += lanes_moment(x + c * g.c_stride[0], g.spatial, false, false, Acc(0));
      const Acc mean = sum / count;
      Acc dev = 0;
      for (int64_t c = 0; c < g.group_channels; ++c)
        dev += lanes_moment(x + c * g.c_stride[0], g.spatial, false, true, mean);
      const Acc rstd = Acc(1) / std::sqrt(dev / count + eps);
      if (mean_out) mean_out[n * g.mean_stride[0] + group * g.mean_stride[1]] = mean;
      if (rstd_out) rstd_out[n * g.rstd_stride[0] + group * g.rstd_stride[1]] = rstd;
      for (int64_t c = 0; c < g.group_channels; ++c) {
        const T* xc = x + c * g.c_stride[0];
        T* yc = y + c * g.c_stride[1];
        const Acc w = weight ? load<Acc>(weight, (c0 + c) * g.weight_stride) : Acc(1);
        const Acc b = bias ? load<Acc>(bias, (c0 + c) * g.bias_stride) : Acc(0);
        if (silu)
          channel_normalized<true>(xc, g.spatial, mean, rstd, w, b, yc);
        else
          channel_normalized<false>(xc, g.spatial, mean, rstd, w, b, yc);
      }
      continue;
    }
    auto at = [&](int t, int64_t c, int64_t s) { return c * g.c_stride[t] + space_offset(g, t, s); };
    Acc sum = 0;
    each_element(g, [&](int64_t c, int64_t s) { sum += load<Acc>(x, at(0, c, s)); });
    const Acc mean = sum / count;
    Acc dev = 0;
    each_element(g, [&](int64_t c, int64_t s) {
      const Acc v = load<Acc>(x, at(0, c, s)) - mean;
      dev += v * v;
    });
    const Acc rstd = Acc(1) / std::sqrt(dev / count + eps);
    if (mean_out) mean_out[n * g.mean_stride[0] + group * g.mean_stride[1]] = mean;
    if (rstd_out) rstd_out[n * g.rstd_stride[0] + group * g.rstd_stride[1]] = rstd;
    each_element(g, [&](int64_t c, int64_t s) {
      const int64_t channel = c0 + c;
      const Acc w = weight ? load<Acc>(weight, channel * g.weight_stride) : Acc(1);
      const Acc b = bias ? load<Acc>(bias, channel * g.bias_stride) : Acc(0);
      Acc z = (load<Acc>(x, at(0, c, s)) - mean) * rstd * w + b;
      if (silu) z *= sigmoid(z);
      y[at(1, c, s)] = convert<T>(z);
    });
  }
  return Status::ok();
}

template <class T, class W>
Status backward(const LaunchContext& ctx, const GroupNormBackwardProblem& p) {
  using Acc = acc_t<T>;
  const GroupNormGeometry& g = p.geometry;
  const GroupNormBackwardArgs& a = p.args;
  const W* weight = p.desc.has_weight ? static_cast<const W*>(a.weight.data) : nullptr;
  const W* bias = p.desc.has_bias && p.desc.silu ? static_cast<const W*>(a.bias.data) : nullptr;
  const Acc* mean_in = static_cast<const Acc*>(a.mean.data);
  const Acc* rstd_in = static_cast<const Acc*>(a.rstd.data);
  W* dweight = static_cast<W*>(a.dweight.data);
  W* dbias = static_cast<W*>(a.dbias.data);
  T* dx_base = static_cast<T*>(a.dx.data);
  // Per (sample, channel): sum of dz * xhat, then sum of dz (the workspace holds 2 N C).
  Acc* sums = static_cast<Acc*>(ctx.workspace.data);
  const bool keep_sums = sums && (dweight || dbias);
  const Acc count = static_cast<Acc>(std::max<int64_t>(g.group_size(), 1));
  const bool silu = p.desc.silu;
  if (g.group_channels == 0) return Status::ok();  // no channel: dx, dweight and dbias are empty
  // No spatial element: dx is empty and dweight and dbias sum nothing (zeros), without a pass over
  // the groups' empty channels (billions of them in a valid view of no element).
  const bool elements = g.spatial > 0;
  const int64_t items = elements ? g.samples * g.groups : 0;
  // A channel's spatial elements contiguous in dy and x, and no SiLU: the cloned loops.
  const bool unit =
      elements && g.space.rank == 1 && !g.channel_minor && g.space.strides[0][0] == 1 && g.space.strides[1][0] == 1;
  const bool rows = channel_rows(g, {0, 1}) && (!dx_base || g.c_stride[2] == 1);
  if (rows && silu) backward_channel_rows<true, T, W>(p, keep_sums ? sums : nullptr);
  if (rows && !silu) backward_channel_rows<false, T, W>(p, keep_sums ? sums : nullptr);
#pragma omp parallel for schedule(static) if (items * g.group_size() > kParallelThreshold)
  for (int64_t item = 0; item < (rows ? 0 : items); ++item) {
    const int64_t n = item / g.groups, group = item % g.groups, c0 = group * g.group_channels;
    const T* dy = static_cast<const T*>(a.dy.data) + n * g.n_stride[0] + c0 * g.c_stride[0];
    const T* x = static_cast<const T*>(a.x.data) + n * g.n_stride[1] + c0 * g.c_stride[1];
    const Acc mean = mean_in[n * g.mean_stride[0] + group * g.mean_stride[1]];
    const Acc rstd = rstd_in[n * g.rstd_stride[0] + group * g.rstd_stride[1]];
    auto at = [&](int t, int64_t c, int64_t s) { return c * g.c_stride[t] + space_offset(g, t, s); };
    auto w_of = [&](int64_t c) { return weight ? load<Acc>(weight, (c0 + c) * g.weight_stride) : Acc(1); };
    auto b_of = [&](int64_t c) { return bias ? load<Acc>(bias, (c0 + c) * g.bias_stride) : Acc(0); };
    // dz and xhat of element (c, s).
    auto grad = [&](int64_t c, int64_t s, Acc w, Acc b, Acc& xhat) {
      xhat = (load<Acc>(x, at(1, c, s)) - mean) * rstd;
      const Acc dy_value = load<Acc>(dy, at(0, c, s));
      return silu ? dz_of<true>(dy_value, xhat, w, b) : dy_value;
    };
    Acc sum_g = 0, sum_gx = 0;
    for (int64_t c = 0; c < g.group_channels; ++c) {
      const Acc w = w_of(c), b = b_of(c);
      Acc s_dz = 0, s_dzx = 0;
      if (unit) {
        if (silu)
          channel_gradient_sums<true>(dy + c * g.c_stride[0], x + c * g.c_stride[1], g.spatial, mean, rstd, w, b, s_dz,
                                      s_dzx);
        else
          channel_gradient_sums<false>(dy + c * g.c_stride[0], x + c * g.c_stride[1], g.spatial, mean, rstd, w, b, s_dz,
                                       s_dzx);
      } else {
        for (int64_t s = 0; s < g.spatial; ++s) {
          Acc xhat;
          const Acc dz = grad(c, s, w, b, xhat);
          s_dz += dz;
          s_dzx += dz * xhat;
        }
      }
      if (keep_sums) {
        sums[n * g.channels + c0 + c] = s_dzx;
        sums[(g.samples + n) * g.channels + c0 + c] = s_dz;
      }
      sum_g += w * s_dz;
      sum_gx += w * s_dzx;
    }
    if (!dx_base) continue;
    T* dx = dx_base + n * g.n_stride[2] + c0 * g.c_stride[2];
    const Acc mean_g = sum_g / count, mean_gx = sum_gx / count;
    if (unit && g.space.strides[2][0] == 1) {
      for (int64_t c = 0; c < g.group_channels; ++c) {
        const T* dyc = dy + c * g.c_stride[0];
        const T* xc = x + c * g.c_stride[1];
        T* dxc = dx + c * g.c_stride[2];
        if (silu)
          channel_gradient<true>(dyc, xc, g.spatial, mean, rstd, w_of(c), b_of(c), mean_g, mean_gx, dxc);
        else
          channel_gradient<false>(dyc, xc, g.spatial, mean, rstd, w_of(c), b_of(c), mean_g, mean_gx, dxc);
      }
      continue;
    }
    each_element(g, [&](int64_t c, int64_t s) {
      const Acc w = w_of(c);
      Acc xhat;
      const Acc dz = grad(c, s, w, b_of(c), xhat);
      dx[at(2, c, s)] = convert<T>(rstd * (dz * w - mean_g - xhat * mean_gx));
    });
  }
  if (!dweight && !dbias) return Status::ok();
    // dweight and dbias: each channel's sums over the samples, in sample order (zeros with no samples,
    // when the workspace is empty, or with no spatial element).
#pragma omp parallel for schedule(static) if (g.samples * g.channels > kParallelThreshold)
  for (int64_t c = 0; c < g.channels; ++c) {
    Acc sw = 0, sb = 0;
    for (int64_t n = 0; n < g.samples && sums && elements; ++n) {
      sw += sums[n * g.channels + c];
      sb += sums[(g.samples + n) * g.channels + c];
    }
    if (dweight) dweight[c * g.dweight_stride] = convert<W>(sw);
    if (dbias) dbias[c * g.dbias_stride] = convert<W>(sb);
  }
  return Status::ok();
}

}  // namespace

Status launch(const LaunchContext&, const GroupNormForwardProblem& p) {
  return dispatch(p,
                  [&](auto t, auto w) { return forward<typename decltype(t)::type, typename decltype(w)::type>(p); });
}
Status launch(const LaunchContext& ctx, const GroupNormBackwardProblem& p) {
  return dispatch(
      p, [&](auto t, auto w) { return backward<typename decltype(t)::type, typename decltype(w)::type>(ctx, p); });
}

}  // namespace baracuda::detail::cpu

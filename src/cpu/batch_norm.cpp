// The CPU kernels of the batch norm plans: channels in parallel, each channel's elements walked in
// the order of the other dims (collapsed), once for the mean, once for the squared deviations and
// once to write (training); the backward's two sums, then dx. Deterministic.
#include <cmath>
#include <type_traits>

#include "common/convert.hpp"
#include "common/dispatch.hpp"
#include "cpu/norm_dtypes.hpp"
#include "cpu/parallel.hpp"
#include "ops/batch_norm_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

using norms::dispatch;
using norms::load;

// Calls f(offsets) for each of a channel's elements, in order: off[t] is view t's offset from the
// channel's first element.
template <class F>
void each_element(const BatchNormGeometry& g, F&& f) {
  const Walker<kBatchNormViews>& w = g.walk;
  int64_t off[kBatchNormViews] = {};
  if (w.rank <= 2) {
    const int64_t outer = w.rank == 2 ? w.sizes[0] : 1, inner = w.rank >= 1 ? w.sizes[w.rank - 1] : 1;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        for (int t = 0; t < kBatchNormViews; ++t)
          off[t] = (w.rank == 2 ? o * w.strides[t][0] : 0) + (w.rank >= 1 ? i * w.strides[t][w.rank - 1] : 0);
        f(off);
      }
    return;
  }
  for (int64_t j = 0; j < g.elements; ++j) {
    w.offsets(j, off);
    f(off);
  }
}

template <class T, class W>
Status forward(const BatchNormForwardProblem& p) {
  using Acc = acc_t<T>;
  const BatchNormGeometry& g = p.geometry;
  const BatchNormArgs& a = p.args;
  const BatchNormDescriptor& d = p.desc;
  const W* weight = d.has_weight ? static_cast<const W*>(a.weight.data) : nullptr;
  const W* bias = d.has_bias ? static_cast<const W*>(a.bias.data) : nullptr;
  W* running_mean = d.running_stats ? static_cast<W*>(a.running_mean.data) : nullptr;
  W* running_var = d.running_stats ? static_cast<W*>(a.running_var.data) : nullptr;
  Acc* save_mean = static_cast<Acc*>(a.save_mean.data);
  Acc* save_rstd = static_cast<Acc*>(a.save_rstd.data);
  const int64_t* cs = g.channel_stride;
  const Acc count = static_cast<Acc>(std::max<int64_t>(g.elements, 1)), eps = static_cast<Acc>(d.eps);
  const Acc momentum = static_cast<Acc>(d.momentum);
  // x and y contiguous along the innermost other dim (NCHW): rows of plain loops that vectorize.
  const Walker<kBatchNormViews>& wk = g.walk;
  const bool unit = wk.rank >= 1 && wk.rank <= 2 && wk.strides[0][wk.rank - 1] == 1 && wk.strides[1][wk.rank - 1] == 1;
  const int64_t rows = unit && wk.rank == 2 ? wk.sizes[0] : 1, len = unit ? wk.sizes[wk.rank - 1] : 0;
  auto row = [&](int t, int64_t r) { return wk.rank == 2 ? r * wk.strides[t][0] : 0; };
#pragma omp parallel for schedule(static) if (g.channels * g.elements > kParallelThreshold)
  for (int64_t c = 0; c < g.channels; ++c) {
    const T* x = static_cast<const T*>(a.x.data) + c * g.c_stride[0];
    T* y = static_cast<T*>(a.y.data) + c * g.c_stride[1];
    Acc mean, rstd;
    if (d.training) {
      Acc sum = 0, dev = 0;
      if (unit) {
        for (int64_t r = 0; r < rows; ++r) {
          const T* xr = x + row(0, r);
#pragma omp simd reduction(+ : sum)
          for (int64_t i = 0; i < len; ++i) sum += load<Acc>(xr, i);
        }
      } else {
        each_element(g, [&](const int64_t* off) { sum += load<Acc>(x, off[0]); });
      }
      mean = sum / count;
      if (unit) {
        for (int64_t r = 0; r < rows; ++r) {
          const T* xr = x + row(0, r);
#pragma omp simd reduction(+ : dev)
          for (int64_t i = 0; i < len; ++i) dev += (load<Acc>(xr, i) - mean) * (load<Acc>(xr, i) - mean);
        }
      } else {
        each_element(g, [&](const int64_t* off) {
          const Acc v = load<Acc>(x, off[0]) - mean;
          dev += v * v;
        });
      }
      const Acc var = dev / count;
      rstd = Acc(1) / std::sqrt(var + eps);
      if (save_mean) save_mean[c * cs[4]] = mean;
      if (save_rstd) save_rstd[c * cs[5]] = rstd;
      if (running_mean) {
        const Acc unbiased = dev / static_cast<Acc>(g.elements - 1);
        running_mean[c * cs[2]] =
            convert<W>((Acc(1) - momentum) * load<Acc>(running_mean, c * cs[2]) + momentum * mean);
        running_var[c * cs[3]] =
            convert<W>((Acc(1) - momentum) * load<Acc>(running_var, c * cs[3]) + momentum * unbiased);
      }
    } else {
      mean = load<Acc>(running_mean, c * cs[2]);
      rstd = Acc(1) / std::sqrt(load<Acc>(running_var, c * cs[3]) + eps);
    }
    const Acc w = weight ? load<Acc>(weight, c * cs[0]) : Acc(1), b = bias ? load<Acc>(bias, c * cs[1]) : Acc(0);
    if (unit) {
      for (int64_t r = 0; r < rows; ++r) {
        const T* xr = x + row(0, r);
        T* yr = y + row(1, r);
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) yr[i] = convert<T>((load<Acc>(xr, i) - mean) * rstd * w + b);
      }
    } else {
      each_element(g,
                   [&](const int64_t* off) { y[off[1]] = convert<T>((load<Acc>(x, off[0]) - mean) * rstd * w + b); });
    }
  }
  return Status::ok();
}

template <class T, class W>
Status backward(const BatchNormBackwardProblem& p) {
  using Acc = acc_t<T>;
  const BatchNormGeometry& g = p.geometry;
  const BatchNormBackwardArgs& a = p.args;
  const BatchNormDescriptor& d = p.desc;
  const W* weight = d.has_weight ? static_cast<const W*>(a.weight.data) : nullptr;
  W* dweight = static_cast<W*>(a.dweight.data);
  W* dbias = static_cast<W*>(a.dbias.data);
  const int64_t* cs = g.channel_stride;
  const Acc count = static_cast<Acc>(std::max<int64_t>(g.elements, 1)), eps = static_cast<Acc>(d.eps);
#pragma omp parallel for schedule(static) if (g.channels * g.elements > kParallelThreshold)
  for (int64_t c = 0; c < g.channels; ++c) {
    const T* dy = static_cast<const T*>(a.dy.data) + c * g.c_stride[0];
    const T* x = static_cast<const T*>(a.x.data) + c * g.c_stride[1];
    Acc mean, rstd;
    if (d.training) {
      mean = static_cast<const Acc*>(a.save_mean.data)[c * cs[1]];
      rstd = static_cast<const Acc*>(a.save_rstd.data)[c * cs[2]];
    } else {
      mean = load<Acc>(static_cast<const W*>(a.running_mean.data), c * cs[3]);
      rstd = Acc(1) / std::sqrt(load<Acc>(static_cast<const W*>(a.running_var.data), c * cs[4]) + eps);
    }
    Acc sum_dy = 0, sum_dyx = 0;
    each_element(g, [&](const int64_t* off) {
      const Acc v = load<Acc>(dy, off[0]);
      sum_dy += v;
      sum_dyx += v * (load<Acc>(x, off[1]) - mean) * rstd;
    });
    if (dweight) dweight[c * cs[5]] = convert<W>(sum_dyx);
    if (dbias) dbias[c * cs[6]] = convert<W>(sum_dy);
    if (!a.dx.data) continue;
    T* dx = static_cast<T*>(a.dx.data) + c * g.c_stride[2];
    const Acc scale = (weight ? load<Acc>(weight, c * cs[0]) : Acc(1)) * rstd;
    const Acc mean_dy = d.training ? sum_dy / count : Acc(0), mean_dyx = d.training ? sum_dyx / count : Acc(0);
    each_element(g, [&](const int64_t* off) {
      const Acc xhat = (load<Acc>(x, off[1]) - mean) * rstd;
      dx[off[2]] = convert<T>(scale * (load<Acc>(dy, off[0]) - mean_dy - xhat * mean_dyx));
    });
  }
  return Status::ok();
}

}  // namespace

Status launch(const LaunchContext&, const BatchNormForwardProblem& p) {
  return dispatch(p,
                  [&](auto t, auto w) { return forward<typename decltype(t)::type, typename decltype(w)::type>(p); });
}
Status launch(const LaunchContext&, const BatchNormBackwardProblem& p) {
  return dispatch(p,
                  [&](auto t, auto w) { return backward<typename decltype(t)::type, typename decltype(w)::type>(p); });
}

}  // namespace baracuda::detail::cpu

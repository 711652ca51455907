#pragma once
// GroupNorm forward and backward (include/baracuda/ops/norm.hpp), compiled at select. A block takes
// one (sample, group) at a time, groups strided over the grid. The forward walks its group three
// times, in memory order (channels fastest for channels-last views): the sum, the squared
// deviations (both block sums), then the output; the later passes mostly hit L2. The backward sums
// dz and dz * xhat channel by channel (block sums; each channel's pair is kept for dweight and
// dbias, and with the weight gives the group's means), then writes dx; norm.cuh's norm_finalize adds
// the kept pairs over the samples in order. Every sum's order is fixed by the group's shape, x's
// layout and the block size (chosen from the group's size alone): deterministic and batch-invariant.
#include "cuda/device/norm.cuh"

namespace baracuda::device {

// Elements a thread loads before using them: enough bytes in flight for HBM.
inline constexpr int kGroupUnroll = 4;

// Offset of element (c, s) of a group (c: its channel within the group) in x-shaped view t, from the
// group's first element. kFlat: the spatial dims are one (or none: then s is 0).
template <bool kFlat>
__device__ __forceinline__ int64 group_offset(const GroupNormParams& p, int t, int64 c, int64 s) {
  return c * p.c_stride[t] + (kFlat ? s * p.space.strides[t][0] : walk_offset(p.space, t, s));
}

// Calls use(c, s, load(c, s)) for the block's share of a group's elements: the group in memory order
// (channels fastest with channel_minor), element j to thread j mod blockDim; kGroupUnroll loads
// issued before their uses. The coordinates advance without a division.
template <class Load, class Use>
__device__ __forceinline__ void each_element(const GroupNormParams& p, Load&& load, Use&& use) {
  const int64 fast_n = p.channel_minor ? p.group_channels : p.spatial;
  const int64 total = p.group_channels * p.spatial;
  if (total == 0) return;
  const int64 threads = blockDim.x;
  int64 slow = threadIdx.x / fast_n, fast = threadIdx.x % fast_n;
  const int64 step_slow = threads / fast_n, step_fast = threads % fast_n;
  for (int64 j = threadIdx.x; j < total; j += kGroupUnroll * threads) {
    int64 c[kGroupUnroll], s[kGroupUnroll];
    for (int u = 0; u < kGroupUnroll; ++u) {
      c[u] = p.channel_minor ? fast : slow;
      s[u] = p.channel_minor ? slow : fast;
      fast += step_fast;
      slow += step_slow;
      if (fast >= fast_n) {
        fast -= fast_n;
        ++slow;
      }
    }
    decltype(load(c[0], s[0])) v[kGroupUnroll];
    for (int u = 0; u < kGroupUnroll; ++u)
      if (j + u * threads < total) v[u] = load(c[u], s[u]);
    for (int u = 0; u < kGroupUnroll; ++u)
      if (j + u * threads < total) use(c[u], s[u], v[u]);
  }
}

// The same over one channel's spatial elements (s = thread + k blockDim).
template <class Load, class Use>
__device__ __forceinline__ void each_spatial(const GroupNormParams& p, int64 c, Load&& load, Use&& use) {
  const int64 threads = blockDim.x;
  for (int64 s0 = threadIdx.x; s0 < p.spatial; s0 += kGroupUnroll * threads) {
    decltype(load(c, s0)) v[kGroupUnroll];
    for (int u = 0; u < kGroupUnroll; ++u)
      if (s0 + u * threads < p.spatial) v[u] = load(c, s0 + u * threads);
    for (int u = 0; u < kGroupUnroll; ++u)
      if (s0 + u * threads < p.spatial) use(c, s0 + u * threads, v[u]);
  }
}

template <class Acc>
__device__ __forceinline__ Acc sigmoid_of(Acc z) {
  return Acc(1) / (Acc(1) + exp(-z));
}

// A group's (sample n, group g) first element in view t.
template <class T>
__device__ __forceinline__ T* group_base(const GroupNormParams& p, const void* data, int t, int64 n, int64 g) {
  return static_cast<T*>(const_cast<void*>(data)) + n * p.n_stride[t] + g * p.group_channels * p.c_stride[t];
}

template <class T, class W, bool kSilu, bool kFlat>
__global__ void __launch_bounds__(512) group_norm_forward(const __grid_constant__ GroupNormParams p) {
  using Acc = acc_t<T>;
  __shared__ Acc shared[32];
  const W* weight = static_cast<const W*>(p.weight);
  const W* bias = static_cast<const W*>(p.bias);
  const int64 size = p.group_channels * p.spatial;
  const Acc count = static_cast<Acc>(size > 0 ? size : 1), eps = static_cast<Acc>(p.eps);
  for (int64 item = blockIdx.x; item < p.samples * p.groups; item += gridDim.x) {
    const int64 n = item / p.groups, g = item - n * p.groups;
    const T* x = group_base<const T>(p, p.x, 0, n, g);
    T* y = group_base<T>(p, p.y, 1, n, g);
    auto load_x = [&](int64 c, int64 s) { return to_acc<Acc>(x[group_offset<kFlat>(p, 0, c, s)]); };
    Acc sum[1] = {Acc(0)};
    each_element(p, load_x, [&](int64, int64, Acc v) { sum[0] += v; });
    block_sum(sum, shared);
    const Acc mean = sum[0] / count;
    Acc dev[1] = {Acc(0)};
    each_element(p, load_x, [&](int64, int64, Acc v) { dev[0] += (v - mean) * (v - mean); });
    block_sum(dev, shared);
    const Acc rstd = reciprocal_sqrt(dev[0] / count + eps);
    if (threadIdx.x == 0) {
      if (p.mean) static_cast<Acc*>(p.mean)[n * p.mean_stride[0] + g * p.mean_stride[1]] = mean;
      if (p.rstd) static_cast<Acc*>(p.rstd)[n * p.rstd_stride[0] + g * p.rstd_stride[1]] = rstd;
    }
    const int64 c0 = g * p.group_channels;
    each_element(p, load_x, [&](int64 c, int64 s, Acc v) {
      const Acc w = weight ? to_acc<Acc>(weight[(c0 + c) * p.weight_stride]) : Acc(1);
      const Acc b = bias ? to_acc<Acc>(bias[(c0 + c) * p.bias_stride]) : Acc(0);
      Acc z = (v - mean) * rstd * w + b;
      if (kSilu) z *= sigmoid_of(z);
      y[group_offset<kFlat>(p, 1, c, s)] = round_to<T>(z);
    });
  }
}

// dz (the gradient reaching the norm's affine output) and xhat of one element.
template <class Acc, bool kSilu>
__device__ __forceinline__ Acc group_grad(Acc dy, Acc x, Acc mean, Acc rstd, Acc w, Acc b, Acc& xhat) {
  xhat = (x - mean) * rstd;
  if (!kSilu) return dy;
  const Acc z = xhat * w + b, sig = sigmoid_of(z);
  return dy * sig * (Acc(1) + z * (Acc(1) - sig));
}

template <class T, class W, bool kSilu, bool kFlat>
__global__ void __launch_bounds__(512) group_norm_backward(const __grid_constant__ GroupNormParams p) {
  using Acc = acc_t<T>;
  __shared__ Acc shared[64];
  struct Pair {
    Acc dy, x;
  };
  const W* weight = static_cast<const W*>(p.weight);
  const W* bias = static_cast<const W*>(p.bias);
  Acc* partial = static_cast<Acc*>(p.partial);
  const int64 size = p.group_channels * p.spatial;
  const Acc count = static_cast<Acc>(size > 0 ? size : 1);
  for (int64 item = blockIdx.x; item < p.samples * p.groups; item += gridDim.x) {
    const int64 n = item / p.groups, g = item - n * p.groups, c0 = g * p.group_channels;
    const T* dy = group_base<const T>(p, p.dy, 0, n, g);
    const T* x = group_base<const T>(p, p.x, 1, n, g);
    const Acc mean = static_cast<const Acc*>(p.mean)[n * p.mean_stride[0] + g * p.mean_stride[1]];
    const Acc rstd = static_cast<const Acc*>(p.rstd)[n * p.rstd_stride[0] + g * p.rstd_stride[1]];
    auto w_of = [&](int64 c) { return weight ? to_acc<Acc>(weight[(c0 + c) * p.weight_stride]) : Acc(1); };
    auto b_of = [&](int64 c) { return bias ? to_acc<Acc>(bias[(c0 + c) * p.bias_stride]) : Acc(0); };
    auto load = [&](int64 c, int64 s) {
      return Pair{to_acc<Acc>(dy[group_offset<kFlat>(p, 0, c, s)]), to_acc<Acc>(x[group_offset<kFlat>(p, 1, c, s)])};
    };
    // Channel by channel: sum of dz, sum of dz * xhat; the group's sums of g = dz w and g xhat.
    Acc sum_g = Acc(0), sum_gx = Acc(0);
    for (int64 c = 0; c < p.group_channels; ++c) {
      const Acc w = w_of(c), b = b_of(c);
      Acc sums[2] = {Acc(0), Acc(0)};
      each_spatial(p, c, load, [&](int64, int64, Pair v) {
        Acc xhat;
        const Acc dz = group_grad<Acc, kSilu>(v.dy, v.x, mean, rstd, w, b, xhat);
        sums[0] += dz;
        sums[1] += dz * xhat;
      });
      block_sum(sums, shared);
      if (partial && threadIdx.x == 0) {
        partial[n * p.channels + c0 + c] = sums[1];
        partial[(p.samples + n) * p.channels + c0 + c] = sums[0];
      }
      sum_g += w * sums[0];
      sum_gx += w * sums[1];
    }
    if (!p.dx) continue;
    T* dx = group_base<T>(p, p.dx, 2, n, g);
    const Acc mean_g = sum_g / count, mean_gx = sum_gx / count;
    each_element(p, load, [&](int64 c, int64 s, Pair v) {
      const Acc w = w_of(c);
      Acc xhat;
      const Acc dz = group_grad<Acc, kSilu>(v.dy, v.x, mean, rstd, w, b_of(c), xhat);
      dx[group_offset<kFlat>(p, 2, c, s)] = round_to<T>(rstd * (dz * w - mean_g - xhat * mean_gx));
    });
  }
}

}  // namespace baracuda::device

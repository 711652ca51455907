#pragma once
// BatchNorm forward and backward (include/baracuda/ops/norm.hpp), compiled at select. A channel's M
// elements are cut into chunks (ops/batch_norm_problem.hpp), a block a (channel, chunk), blocks
// strided over the grid. Training forward: batch_norm_moments writes each chunk's moments (its
// vectors' means and squared deviations merged by Chan's formula, then over the block in a fixed
// order); batch_norm_apply merges the channel's chunks in order, the first chunk's block writes the
// saved and running statistics, and each block normalizes its chunk. Backward: batch_norm_sums
// writes each chunk's sums of dy and dy * xhat; batch_norm_dx adds the channel's in order (dweight,
// dbias from the first chunk's block) and writes dx. kFlat: the other dims collapse to at most two
// (outer, inner); kVec: 16-byte vectors along the inner dim.
#include "cuda/device/norm.cuh"
#include "cuda/device/params.h"

namespace baracuda::device {

inline constexpr int kBatchUnroll = 4;

// Offset of a channel's element (outer o, inner i) in view t; j its index when not kFlat.
template <bool kFlat>
__device__ __forceinline__ int64 batch_offset(const BatchNormParams& p, int t, int64 o, int64 i, int64 j) {
  if (!kFlat) return walk_offset(p.walk, t, j);
  const int r = p.walk.rank;
  return (r == 2 ? o * p.walk.strides[t][0] : 0) + (r >= 1 ? i * p.walk.strides[t][r - 1] : 0);
}

// Calls use(offset of each view, load(offsets)) for the block's share of the vectors of VW elements in
// a channel's chunk [j0, j1) (element indices, whole vectors), kBatchUnroll loads issued before their
// uses; (outer, inner) advance without a division.
template <int VW, bool kFlat, class Load, class Use>
__device__ __forceinline__ void each_chunk_vector(const BatchNormParams& p, int64 j0, int64 j1, Load&& load,
                                                  Use&& use) {
  const int64 inner_n = (p.walk.rank >= 1 ? p.walk.sizes[p.walk.rank - 1] : 1) / VW;
  const int64 threads = blockDim.x, first = j0 / VW + threadIdx.x, end = j1 / VW;
  int64 o = first / inner_n, i = first % inner_n;
  const int64 step_o = threads / inner_n, step_i = threads % inner_n;
  for (int64 v = first; v < end; v += kBatchUnroll * threads) {
    int64 off[kBatchUnroll][3];
    for (int u = 0; u < kBatchUnroll; ++u) {
      for (int t = 0; t < 3; ++t) off[u][t] = batch_offset<kFlat>(p, t, o, i * VW, (v + u * threads) * VW);
      i += step_i;
      o += step_o;
      if (i >= inner_n) {
        i -= inner_n;
        ++o;
      }
    }
    decltype(load(off[0])) val[kBatchUnroll];
    for (int u = 0; u < kBatchUnroll; ++u)
      if (v + u * threads < end) val[u] = load(off[u]);
    for (int u = 0; u < kBatchUnroll; ++u)
      if (v + u * threads < end) use(off[u], val[u]);
  }
}

template <class T>
__device__ __forceinline__ T* channel_base(const void* data, int64 c, int64 stride) {
  return static_cast<T*>(const_cast<void*>(data)) + c * stride;
}

template <class T, bool kFlat, bool kVec>
__global__ void __launch_bounds__(512) batch_norm_moments(const __grid_constant__ BatchNormParams p) {
  using Acc = acc_t<T>;
  constexpr int VW = kVec ? kVectorWidth<T> : 1;
  using Raw = Pack<T, VW>;
  __shared__ Acc shared[96];
  Acc* partial = static_cast<Acc*>(p.partial);
  for (int64 item = blockIdx.x; item < p.channels * p.chunks; item += gridDim.x) {
    const int64 c = item / p.chunks, k = item - c * p.chunks;
    const int64 j0 = k * p.chunk_len, j1 = j0 + p.chunk_len < p.elements ? j0 + p.chunk_len : p.elements;
    const T* x = channel_base<const T>(p.x, c, p.c_stride[0]);
    Moments<Acc> m{Acc(0), Acc(0), Acc(0)};
    each_chunk_vector<VW, kFlat>(
        p, j0, j1, [&](const int64* off) { return *reinterpret_cast<const Raw*>(x + off[0]); },
        [&](const int64*, const Raw& v) { m = merge(m, moments_of<Acc>(v)); });
    m = block_moments(m, shared);
    if (threadIdx.x == 0) {
      partial[3 * item] = m.n;
      partial[3 * item + 1] = m.mean;
      partial[3 * item + 2] = m.m2;
    }
  }
}

template <class T, class W, bool kFlat, bool kVec>
__global__ void __launch_bounds__(512) batch_norm_apply(const __grid_constant__ BatchNormParams p) {
  using Acc = acc_t<T>;
  constexpr int VW = kVec ? kVectorWidth<T> : 1;
  using Raw = Pack<T, VW>;
  const Acc* partial = static_cast<const Acc*>(p.partial);
  const W* weight = static_cast<const W*>(p.weight);
  const W* bias = static_cast<const W*>(p.bias);
  W* running_mean = static_cast<W*>(p.running_mean);
  W* running_var = static_cast<W*>(p.running_var);
  for (int64 item = blockIdx.x; item < p.channels * p.chunks; item += gridDim.x) {
    const int64 c = item / p.chunks, k = item - c * p.chunks;
    const int64 j0 = k * p.chunk_len, j1 = j0 + p.chunk_len < p.elements ? j0 + p.chunk_len : p.elements;
    Acc mean, rstd;
    if (p.training) {
      // The channel's chunks in order (every thread alike).
      Moments<Acc> m{Acc(0), Acc(0), Acc(0)};
      for (int64 q = 0; q < p.chunks; ++q) {
        const Acc* pq = partial + 3 * (c * p.chunks + q);
        m = merge(m, Moments<Acc>{pq[0], pq[1], pq[2]});
      }
      mean = m.mean;
      rstd = reciprocal_sqrt(m.m2 / m.n + static_cast<Acc>(p.eps));
      if (k == 0 && threadIdx.x == 0) {
        if (p.save_mean) static_cast<Acc*>(p.save_mean)[c * p.save_mean_stride] = mean;
        if (p.save_rstd) static_cast<Acc*>(p.save_rstd)[c * p.save_rstd_stride] = rstd;
        if (running_mean) {
          const Acc mo = static_cast<Acc>(p.momentum), unbiased = m.m2 / (m.n - Acc(1));
          W* rm = running_mean + c * p.running_mean_stride;
          W* rv = running_var + c * p.running_var_stride;
          *rm = round_to<W>((Acc(1) - mo) * to_acc<Acc>(*rm) + mo * mean);
          *rv = round_to<W>((Acc(1) - mo) * to_acc<Acc>(*rv) + mo * unbiased);
        }
      }
    } else {
      mean = to_acc<Acc>(running_mean[c * p.running_mean_stride]);
      rstd = reciprocal_sqrt(to_acc<Acc>(running_var[c * p.running_var_stride]) + static_cast<Acc>(p.eps));
    }
    const Acc w = weight ? to_acc<Acc>(weight[c * p.weight_stride]) : Acc(1);
    const Acc b = bias ? to_acc<Acc>(bias[c * p.bias_stride]) : Acc(0);
    const T* x = channel_base<const T>(p.x, c, p.c_stride[0]);
    T* y = channel_base<T>(p.y, c, p.c_stride[1]);
    each_chunk_vector<VW, kFlat>(
        p, j0, j1, [&](const int64* off) { return *reinterpret_cast<const Raw*>(x + off[0]); },
        [&](const int64* off, const Raw& v) {
          Raw out;
          for (int e = 0; e < VW; ++e) out.e[e] = round_to<T>((to_acc<Acc>(v.e[e]) - mean) * rstd * w + b);
          *reinterpret_cast<Raw*>(y + off[1]) = out;
        });
  }
}

// The statistics the backward normalizes by: the saved batch ones (training) or the running ones.
template <class Acc, class W>
__device__ __forceinline__ void backward_stats(const BatchNormParams& p, int64 c, Acc& mean, Acc& rstd) {
  if (p.training) {
    mean = static_cast<const Acc*>(p.save_mean)[c * p.save_mean_stride];
    rstd = static_cast<const Acc*>(p.save_rstd)[c * p.save_rstd_stride];
  } else {
    mean = to_acc<Acc>(static_cast<const W*>(p.running_mean)[c * p.running_mean_stride]);
    rstd = reciprocal_sqrt(to_acc<Acc>(static_cast<const W*>(p.running_var)[c * p.running_var_stride]) +
                           static_cast<Acc>(p.eps));
  }
}

template <class T, int VW>
struct BatchGradPair {
  Pack<T, VW> dy, x;
};

template <class T, class W, bool kFlat, bool kVec>
__global__ void __launch_bounds__(512) batch_norm_sums(const __grid_constant__ BatchNormParams p) {
  using Acc = acc_t<T>;
  constexpr int VW = kVec ? kVectorWidth<T> : 1;
  __shared__ Acc shared[64];
  Acc* partial = static_cast<Acc*>(p.partial);
  for (int64 item = blockIdx.x; item < p.channels * p.chunks; item += gridDim.x) {
    const int64 c = item / p.chunks, k = item - c * p.chunks;
    const int64 j0 = k * p.chunk_len, j1 = j0 + p.chunk_len < p.elements ? j0 + p.chunk_len : p.elements;
    Acc mean, rstd;
    backward_stats<Acc, W>(p, c, mean, rstd);
    const T* dy = channel_base<const T>(p.dy, c, p.c_stride[0]);
    const T* x = channel_base<const T>(p.x, c, p.c_stride[1]);
    Acc sums[2] = {Acc(0), Acc(0)};
    each_chunk_vector<VW, kFlat>(
        p, j0, j1,
        [&](const int64* off) {
          return BatchGradPair<T, VW>{*reinterpret_cast<const Pack<T, VW>*>(dy + off[0]),
                                      *reinterpret_cast<const Pack<T, VW>*>(x + off[1])};
        },
        [&](const int64*, const BatchGradPair<T, VW>& v) {
          for (int e = 0; e < VW; ++e) {
            const Acc g = to_acc<Acc>(v.dy.e[e]);
            sums[0] += g;
            sums[1] += g * (to_acc<Acc>(v.x.e[e]) - mean) * rstd;
          }
        });
    block_sum(sums, shared);
    if (threadIdx.x == 0) {
      partial[2 * item] = sums[0];
      partial[2 * item + 1] = sums[1];
    }
  }
}

template <class T, class W, bool kFlat, bool kVec>
__global__ void __launch_bounds__(512) batch_norm_dx(const __grid_constant__ BatchNormParams p) {
  using Acc = acc_t<T>;
  constexpr int VW = kVec ? kVectorWidth<T> : 1;
  const Acc* partial = static_cast<const Acc*>(p.partial);
  const W* weight = static_cast<const W*>(p.weight);
  const Acc count = static_cast<Acc>(p.elements > 0 ? p.elements : 1);
  for (int64 item = blockIdx.x; item < p.channels * p.chunks; item += gridDim.x) {
    const int64 c = item / p.chunks, k = item - c * p.chunks;
    const int64 j0 = k * p.chunk_len, j1 = j0 + p.chunk_len < p.elements ? j0 + p.chunk_len : p.elements;
    Acc sum_dy = Acc(0), sum_dyx = Acc(0);
    for (int64 q = 0; q < p.chunks; ++q) {
      sum_dy += partial[2 * (c * p.chunks + q)];
      sum_dyx += partial[2 * (c * p.chunks + q) + 1];
    }
    if (k == 0 && threadIdx.x == 0) {
      if (p.dweight) static_cast<W*>(p.dweight)[c * p.dweight_stride] = round_to<W>(sum_dyx);
      if (p.dbias) static_cast<W*>(p.dbias)[c * p.dbias_stride] = round_to<W>(sum_dy);
    }
    if (!p.dx) continue;
    Acc mean, rstd;
    backward_stats<Acc, W>(p, c, mean, rstd);
    const Acc scale = (weight ? to_acc<Acc>(weight[c * p.weight_stride]) : Acc(1)) * rstd;
    const Acc mean_dy = p.training ? sum_dy / count : Acc(0), mean_dyx = p.training ? sum_dyx / count : Acc(0);
    const T* dy = channel_base<const T>(p.dy, c, p.c_stride[0]);
    const T* x = channel_base<const T>(p.x, c, p.c_stride[1]);
    T* dx = channel_base<T>(p.dx, c, p.c_stride[2]);
    each_chunk_vector<VW, kFlat>(
        p, j0, j1,
        [&](const int64* off) {
          return BatchGradPair<T, VW>{*reinterpret_cast<const Pack<T, VW>*>(dy + off[0]),
                                      *reinterpret_cast<const Pack<T, VW>*>(x + off[1])};
        },
        [&](const int64* off, const BatchGradPair<T, VW>& v) {
          Pack<T, VW> out;
          for (int e = 0; e < VW; ++e) {
            const Acc xhat = (to_acc<Acc>(v.x.e[e]) - mean) * rstd;
            out.e[e] = round_to<T>(scale * (to_acc<Acc>(v.dy.e[e]) - mean_dy - xhat * mean_dyx));
          }
          *reinterpret_cast<Pack<T, VW>*>(dx + off[2]) = out;
        });
  }
}

}  // namespace baracuda::device

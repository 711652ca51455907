#pragma once
// GroupNorm forward and backward (include/baracuda/ops/norm.hpp), compiled at select. A block takes
// one (sample, group) at a time, groups strided over the grid, and walks the group in memory order
// (channels fastest for channels-last views), with kVec in 16-byte vectors along that fast axis.
// The forward holds a group in registers where it fits (group_norm_forward_held: x read once);
// otherwise it reads the group twice: once for its statistics (each vector's mean and squared
// deviations, merged into the thread's by Chan's formula, then over the block in a fixed order: as
// robust as two passes, constant groups giving variance 0), once to write the output. The backward
// sums dz and dz * xhat channel by channel (block sums; each channel's pair is kept for dweight and
// dbias, and with the weight gives the group's means), then writes dx; norm.cuh's norm_finalize
// adds the kept pairs over the samples in order. Every sum's order is fixed by the group's shape,
// x's layout and the block size (chosen from the group's size alone): deterministic and
// batch-invariant.
#include "cuda/device/norm.cuh"
#include "cuda/device/params.h"

namespace baracuda::device {

// Vectors a thread loads before using them: enough bytes in flight for HBM.
inline constexpr int kGroupUnroll = 4;

// Offset of element (c, s) of a group (c: its channel within the group) in x-shaped view t, from the
// group's first element. kFlat: the spatial dims are one (or none: then s is 0).
template <bool kFlat>
__device__ __forceinline__ int64 group_offset(const GroupNormParams& p, int t, int64 c, int64 s) {
  return c * p.c_stride[t] + (kFlat ? s * p.space.strides[t][0] : walk_offset(p.space, t, s));
}

// Calls use(c, s, load(c, s)) for the block's share of a group's vectors of VW elements along the fast
// axis (channels with channel_minor, else spatial elements): the group in memory order, vector j to
// thread j mod blockDim; kGroupUnroll loads issued before their uses. (c, s) is the vector's first
// element; the coordinates advance without a division.
template <int VW, class Load, class Use>
__device__ __forceinline__ void each_vector(const GroupNormParams& p, Load&& load, Use&& use) {
  const int64 fast_n = (p.channel_minor ? p.group_channels : p.spatial) / VW;
  const int64 total = p.group_channels * p.spatial / VW;
  if (total == 0) return;
  const int64 threads = blockDim.x;
  int64 slow = threadIdx.x / fast_n, fast = threadIdx.x % fast_n;
  const int64 step_slow = threads / fast_n, step_fast = threads % fast_n;
  for (int64 j = threadIdx.x; j < total; j += kGroupUnroll * threads) {
    int64 c[kGroupUnroll], s[kGroupUnroll];
    for (int u = 0; u < kGroupUnroll; ++u) {
      c[u] = p.channel_minor ? fast * VW : slow;
      s[u] = p.channel_minor ? slow : fast * VW;
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

// The same over one channel's spatial elements, VW at a time (s: a vector's first element).
template <int VW, class Load, class Use>
__device__ __forceinline__ void each_spatial(const GroupNormParams& p, int64 c, Load&& load, Use&& use) {
  const int64 threads = blockDim.x, total = p.spatial / VW;
  for (int64 j = threadIdx.x; j < total; j += kGroupUnroll * threads) {
    decltype(load(c, j)) v[kGroupUnroll];
    for (int u = 0; u < kGroupUnroll; ++u)
      if (j + u * threads < total) v[u] = load(c, (j + u * threads) * VW);
    for (int u = 0; u < kGroupUnroll; ++u)
      if (j + u * threads < total) use(c, (j + u * threads) * VW, v[u]);
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

// Lane e of a vector at (c, s): its channel within the group and its spatial element.
__device__ __forceinline__ int64 lane_channel(const GroupNormParams& p, int64 c, int e) {
  return p.channel_minor ? c + e : c;
}

// Two blocks an SM for 4- and 8-byte data: at 64 registers the forward spills a little but keeps
// twice the loads in flight of one block at the registers it takes unbounded; 16-bit data spilled
// more and ran slower so (bench/NOTES.md, "GroupNorm").
template <class T, class W, bool kSilu, bool kFlat, bool kVec>
__global__ void __launch_bounds__(512, sizeof(T) >= 4 ? 2 : 1)
    group_norm_forward(const __grid_constant__ GroupNormParams p) {
  using Acc = acc_t<T>;
  constexpr int VW = kVec ? kVectorWidth<T> : 1;
  using Raw = Pack<T, VW>;
  __shared__ Acc shared[96];
  const W* weight = static_cast<const W*>(p.weight);
  const W* bias = static_cast<const W*>(p.bias);
  const Acc eps = static_cast<Acc>(p.eps);
  for (int64 item = blockIdx.x; item < p.samples * p.groups; item += gridDim.x) {
    const int64 n = item / p.groups, g = item - n * p.groups, c0 = g * p.group_channels;
    const T* x = group_base<const T>(p, p.x, 0, n, g);
    T* y = group_base<T>(p, p.y, 1, n, g);
    auto load_x = [&](int64 c, int64 s) { return *reinterpret_cast<const Raw*>(x + group_offset<kFlat>(p, 0, c, s)); };
    // Each vector's moments (two passes over its registers), merged into the thread's.
    Moments<Acc> m{Acc(0), Acc(0), Acc(0)};
    each_vector<VW>(p, load_x, [&](int64, int64, const Raw& v) { m = merge(m, moments_of<Acc>(v)); });
    m = block_moments(m, shared);
    // (An empty group: mean 0, variance 0.)
    const Acc mean = m.mean, rstd = reciprocal_sqrt((m.n > Acc(0) ? m.m2 / m.n : Acc(0)) + eps);
    if (threadIdx.x == 0) {
      if (p.mean) static_cast<Acc*>(p.mean)[n * p.mean_stride[0] + g * p.mean_stride[1]] = mean;
      if (p.rstd) static_cast<Acc*>(p.rstd)[n * p.rstd_stride[0] + g * p.rstd_stride[1]] = rstd;
    }
    each_vector<VW>(p, load_x, [&](int64 c, int64 s, const Raw& v) {
      Raw out;
      for (int e = 0; e < VW; ++e) {
        const int64 channel = c0 + lane_channel(p, c, e);
        const Acc w = weight ? to_acc<Acc>(weight[channel * p.weight_stride]) : Acc(1);
        const Acc b = bias ? to_acc<Acc>(bias[channel * p.bias_stride]) : Acc(0);
        Acc z = (to_acc<Acc>(v.e[e]) - mean) * rstd * w + b;
        if (kSilu) z *= sigmoid_of(z);
        out.e[e] = round_to<T>(z);
      }
      *reinterpret_cast<Raw*>(y + group_offset<kFlat>(p, 1, c, s)) = out;
    });
  }
}

// The moments of a cluster's blocks (sm_90; the block's alone before), the same on every thread:
// each block's by block_moments, then the blocks' in rank order through distributed shared memory.
// `shared` holds 99 values: block_moments' 96, then the block's moments for the others to read.
template <class Acc>
__device__ __forceinline__ Moments<Acc> cluster_moments(Moments<Acc> m, Acc* shared) {
  m = block_moments(m, shared);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned blocks = __clusterSizeInBlocks();
  if (blocks == 1) return m;
  if (threadIdx.x == 0) {
    shared[96] = m.n;
    shared[97] = m.mean;
    shared[98] = m.m2;
  }
  __cluster_barrier_arrive();  // (release and acquire: the other blocks' moments are visible after)
  __cluster_barrier_wait();
  Moments<Acc> all{Acc(0), Acc(0), Acc(0)};
  for (unsigned rank = 0; rank < blocks; ++rank) {
    const Acc* theirs = static_cast<const Acc*>(__cluster_map_shared_rank(shared + 96, rank));
    all = merge(all, Moments<Acc>{theirs[0], theirs[1], theirs[2]});
  }
  __cluster_barrier_arrive();  // no block overwrites its moments, or exits, while another reads them
  __cluster_barrier_wait();
  return all;
#else
  return m;
#endif
}

// The forward of a group held in registers: a cluster of blocks (one block for groups that fit it)
// takes a (sample, group) at a time, kHeld 16-byte vectors a thread, so x is read once. Vector j of
// the group is thread j mod (the cluster's threads) of block rank j / blockDim mod the cluster's
// size: consecutive threads, consecutive vectors. For flat spatial dims with vectors along the fast
// axis (kernel_index 0 of cuda/group_norm.cpp), groups of at most kHeld vectors a thread.
template <class T, class W, bool kSilu, int kHeld>
__global__ void __launch_bounds__(512) group_norm_forward_held(const __grid_constant__ GroupNormParams p) {
  using Acc = acc_t<T>;
  constexpr int VW = kVectorWidth<T>;
  using Raw = Pack<T, VW>;
  __shared__ Acc shared[99];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int blocks = static_cast<int>(__clusterSizeInBlocks()), rank = static_cast<int>(__clusterRelativeBlockRank());
#else
  const int blocks = 1, rank = 0;
#endif
  const W* weight = static_cast<const W*>(p.weight);
  const W* bias = static_cast<const W*>(p.bias);
  const Acc eps = static_cast<Acc>(p.eps);
  // The thread's vectors, the same in every group: their channel (within the group) and spatial
  // element, found once (a group has at most 2^31 vectors here).
  const int total = static_cast<int>(p.group_channels * p.spatial / VW);
  const int fast_n = static_cast<int>((p.channel_minor ? p.group_channels : p.spatial) / VW);
  int c[kHeld], s[kHeld];
#pragma unroll
  for (int u = 0; u < kHeld; ++u) {
    const int j = (u * blocks + rank) * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
    const int slow = j / fast_n, fast = (j - slow * fast_n) * VW;
    c[u] = j < total ? (p.channel_minor ? fast : slow) : -1;  // -1: no vector
    s[u] = p.channel_minor ? slow : fast;
  }
  const int64 x_spatial = p.space.strides[0][0], y_spatial = p.space.strides[1][0];
  for (int64 item = blockIdx.x / blocks; item < p.samples * p.groups; item += gridDim.x / blocks) {
    const int64 n = item / p.groups, g = item - n * p.groups, c0 = g * p.group_channels;
    const T* x = group_base<const T>(p, p.x, 0, n, g);
    T* y = group_base<T>(p, p.y, 1, n, g);
    Raw v[kHeld];
#pragma unroll
    for (int u = 0; u < kHeld; ++u)
      if (c[u] >= 0) v[u] = *reinterpret_cast<const Raw*>(x + c[u] * p.c_stride[0] + s[u] * x_spatial);
    Moments<Acc> m{Acc(0), Acc(0), Acc(0)};
#pragma unroll
    for (int u = 0; u < kHeld; ++u)
      if (c[u] >= 0) m = merge(m, moments_of<Acc>(v[u]));
    m = cluster_moments(m, shared);
    const Acc mean = m.mean, rstd = reciprocal_sqrt(m.m2 / m.n + eps);
    if (rank == 0 && threadIdx.x == 0) {
      if (p.mean) static_cast<Acc*>(p.mean)[n * p.mean_stride[0] + g * p.mean_stride[1]] = mean;
      if (p.rstd) static_cast<Acc*>(p.rstd)[n * p.rstd_stride[0] + g * p.rstd_stride[1]] = rstd;
    }
#pragma unroll
    for (int u = 0; u < kHeld; ++u) {
      if (c[u] < 0) continue;
      // The affine's scale and shift: one channel's for the whole vector unless channels are fastest.
      Acc w[VW], b[VW];
      for (int e = 0; e < VW; ++e) {
        if (e > 0 && !p.channel_minor) {
          w[e] = w[0];
          b[e] = b[0];
          continue;
        }
        const int64 channel = c0 + c[u] + e;
        w[e] = weight ? to_acc<Acc>(weight[channel * p.weight_stride]) : Acc(1);
        b[e] = bias ? to_acc<Acc>(bias[channel * p.bias_stride]) : Acc(0);
      }
      Raw out;
      for (int e = 0; e < VW; ++e) {
        Acc z = (to_acc<Acc>(v[u].e[e]) - mean) * rstd * w[e] + b[e];
        if (kSilu) z *= sigmoid_of(z);
        out.e[e] = round_to<T>(z);
      }
      *reinterpret_cast<Raw*>(y + c[u] * p.c_stride[1] + s[u] * y_spatial) = out;
    }
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

template <class T, int VW>
struct GradPair {
  Pack<T, VW> dy, x;
};

// The backward's first pass over a group (sample n, channels from c0), a channel at a time, CW
// elements a load: each channel's sums of dz * xhat and dz, kept in `partial` (when kept) for dweight
// and dbias; the group's sums of g = dz w and g xhat added to sum_g, sum_gx (the same on every thread).
template <class T, class W, bool kSilu, bool kFlat, int CW, class Acc>
__device__ __forceinline__ void channel_sums(const GroupNormParams& p, const T* dy, const T* x, int64 n, int64 c0,
                                             Acc mean, Acc rstd, Acc* shared, Acc& sum_g, Acc& sum_gx) {
  const W* weight = static_cast<const W*>(p.weight);
  const W* bias = static_cast<const W*>(p.bias);
  Acc* partial = static_cast<Acc*>(p.partial);
  auto load = [&](int64 c, int64 s) {
    return GradPair<T, CW>{*reinterpret_cast<const Pack<T, CW>*>(dy + group_offset<kFlat>(p, 0, c, s)),
                           *reinterpret_cast<const Pack<T, CW>*>(x + group_offset<kFlat>(p, 1, c, s))};
  };
  for (int64 c = 0; c < p.group_channels; ++c) {
    const Acc w = weight ? to_acc<Acc>(weight[(c0 + c) * p.weight_stride]) : Acc(1);
    const Acc b = bias ? to_acc<Acc>(bias[(c0 + c) * p.bias_stride]) : Acc(0);
    Acc sums[2] = {Acc(0), Acc(0)};
    each_spatial<CW>(p, c, load, [&](int64, int64, const GradPair<T, CW>& v) {
      for (int e = 0; e < CW; ++e) {
        Acc xhat;
        const Acc dz = group_grad<Acc, kSilu>(to_acc<Acc>(v.dy.e[e]), to_acc<Acc>(v.x.e[e]), mean, rstd, w, b, xhat);
        sums[0] += dz;
        sums[1] += dz * xhat;
      }
    });
    block_sum(sums, shared);
    if (partial && threadIdx.x == 0) {
      partial[n * p.channels + c0 + c] = sums[1];
      partial[(p.samples + n) * p.channels + c0 + c] = sums[0];
    }
    sum_g += w * sums[0];
    sum_gx += w * sums[1];
  }
}

template <class T, class W, bool kSilu, bool kFlat, bool kVec>
__global__ void __launch_bounds__(512) group_norm_backward(const __grid_constant__ GroupNormParams p) {
  using Acc = acc_t<T>;
  constexpr int VW = kVec ? kVectorWidth<T> : 1;
  __shared__ Acc shared[64];
  const W* weight = static_cast<const W*>(p.weight);
  const W* bias = static_cast<const W*>(p.bias);
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
    // Channel by channel: sum of dz, sum of dz * xhat; the group's sums of g = dz w and g xhat. (A
    // channel's spatial elements are contiguous vectors only with the spatial elements fastest.)
    Acc sum_g = Acc(0), sum_gx = Acc(0);
    if (kVec && !p.channel_minor)
      channel_sums<T, W, kSilu, kFlat, VW>(p, dy, x, n, c0, mean, rstd, shared, sum_g, sum_gx);
    else
      channel_sums<T, W, kSilu, kFlat, 1>(p, dy, x, n, c0, mean, rstd, shared, sum_g, sum_gx);
    if (!p.dx) continue;
    T* dx = group_base<T>(p, p.dx, 2, n, g);
    const Acc mean_g = sum_g / count, mean_gx = sum_gx / count;
    auto load = [&](int64 c, int64 s) {
      return GradPair<T, VW>{*reinterpret_cast<const Pack<T, VW>*>(dy + group_offset<kFlat>(p, 0, c, s)),
                             *reinterpret_cast<const Pack<T, VW>*>(x + group_offset<kFlat>(p, 1, c, s))};
    };
    each_vector<VW>(p, load, [&](int64 c, int64 s, const GradPair<T, VW>& v) {
      Pack<T, VW> out;
      for (int e = 0; e < VW; ++e) {
        const int64 channel = lane_channel(p, c, e);
        const Acc w = w_of(channel);
        Acc xhat;
        const Acc dz =
            group_grad<Acc, kSilu>(to_acc<Acc>(v.dy.e[e]), to_acc<Acc>(v.x.e[e]), mean, rstd, w, b_of(channel), xhat);
        out.e[e] = round_to<T>(rstd * (dz * w - mean_g - xhat * mean_gx));
      }
      *reinterpret_cast<Pack<T, VW>*>(dx + group_offset<kFlat>(p, 2, c, s)) = out;
    });
  }
}

}  // namespace baracuda::device

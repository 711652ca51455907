#pragma once
// The pointwise loss kernels (include/baracuda/ops/loss.hpp), compiled at select per dtype. kContig:
// every view is contiguous in the same order (element i at offset i); otherwise each offset comes
// from the walk. none and the backward are elementwise (grid-stride); sum and mean give each chunk
// of `chunk` elements to a block, whose threads add their elements in order and block_sum merges in
// a fixed order, then one block adds the chunks' partials in a fixed order: deterministic.
#include "cuda/device/common.cuh"
#include "cuda/device/pointwise_loss.h"

namespace baracuda::device {

enum : int { kPlInput = 0, kPlTarget = 1, kPlOut = 2, kPlDloss = 3 };

template <bool kContig>
__device__ __forceinline__ int64 ploss_at(const PointwiseLossParams& p, int t, int64 i) {
  return kContig ? i : walk_offset(p.walk, t, i);
}

template <class T>
__device__ __forceinline__ acc_t<T> ploss_value(const PointwiseLossParams& p, const T* x, const T* y, int64 ix,
                                                int64 iy) {
  using A = acc_t<T>;
  return pointwise_loss<A>(p.kind, to_acc<A>(x[ix]), to_acc<A>(y[iy]), static_cast<A>(p.beta), p.log_target != 0);
}

template <class T, bool kContig>
__global__ void __launch_bounds__(256) pointwise_loss_none(const __grid_constant__ PointwiseLossParams p) {
  const T* x = static_cast<const T*>(p.input);
  const T* y = static_cast<const T*>(p.target);
  T* out = static_cast<T*>(p.out);
  for (int64 i = blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x; i < p.n;
       i += static_cast<int64>(gridDim.x) * blockDim.x)
    out[ploss_at<kContig>(p, kPlOut, i)] =
        round_to<T>(ploss_value(p, x, y, ploss_at<kContig>(p, kPlInput, i), ploss_at<kContig>(p, kPlTarget, i)));
}

template <class T, bool kContig>
__global__ void __launch_bounds__(256) pointwise_loss_chunks(const __grid_constant__ PointwiseLossParams p) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const T* x = static_cast<const T*>(p.input);
  const T* y = static_cast<const T*>(p.target);
  const int64 first = static_cast<int64>(blockIdx.x) * p.chunk;
  const int64 last = first + p.chunk < p.n ? first + p.chunk : p.n;
  A sum[1] = {A(0)};
  for (int64 i = first + threadIdx.x; i < last; i += blockDim.x)
    sum[0] += ploss_value(p, x, y, ploss_at<kContig>(p, kPlInput, i), ploss_at<kContig>(p, kPlTarget, i));
  block_sum(sum, shared);
  if (threadIdx.x == 0) static_cast<A*>(p.partial)[blockIdx.x] = sum[0];
}

// One block: the chunks' partials in a fixed order, then the sum or the mean into out[0].
template <class T>
__global__ void __launch_bounds__(1024) pointwise_loss_total(const __grid_constant__ PointwiseLossParams p) {
  using A = acc_t<T>;
  __shared__ A shared[32];
  const A* partial = static_cast<const A*>(p.partial);
  A sum[1] = {A(0)};
  for (int64 c = threadIdx.x; c < p.chunks; c += blockDim.x) sum[0] += partial[c];
  block_sum(sum, shared);
  if (threadIdx.x == 0)
    static_cast<T*>(p.out)[0] = round_to<T>(p.reduction == kReduceMean ? sum[0] / static_cast<A>(p.n) : sum[0]);
}

template <class T, bool kContig>
__global__ void __launch_bounds__(256) pointwise_loss_backward(const __grid_constant__ PointwiseLossParams p) {
  using A = acc_t<T>;
  const T* x = static_cast<const T*>(p.input);
  const T* y = static_cast<const T*>(p.target);
  const T* dloss = static_cast<const T*>(p.dloss);
  T* dx = static_cast<T*>(p.out);
  const A scale = p.reduction == kReduceMean ? A(1) / static_cast<A>(p.n) : A(1);
  const A whole = p.reduction == kReduceNone ? A(0) : to_acc<A>(dloss[0]) * scale;
  for (int64 i = blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x; i < p.n;
       i += static_cast<int64>(gridDim.x) * blockDim.x) {
    const A g = p.reduction == kReduceNone ? to_acc<A>(dloss[ploss_at<kContig>(p, kPlDloss, i)]) : whole;
    const A xi = to_acc<A>(x[ploss_at<kContig>(p, kPlInput, i)]), yi = to_acc<A>(y[ploss_at<kContig>(p, kPlTarget, i)]);
    dx[ploss_at<kContig>(p, kPlOut, i)] =
        round_to<T>(g * pointwise_loss_gradient<A>(p.kind, xi, yi, static_cast<A>(p.beta), p.log_target != 0));
  }
}

}  // namespace baracuda::device

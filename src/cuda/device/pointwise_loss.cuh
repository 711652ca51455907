#pragma once
// The pointwise loss kernels (include/baracuda/ops/loss.hpp), compiled at select per dtype. kContig:
// every view is contiguous in the same order (element i at offset i); otherwise each offset comes
// from the walk. none and the backward are elementwise (grid-stride); sum and mean give each chunk
// of `chunk` elements to a block, whose threads add their elements in order and block_sum merges in
// a fixed order, then one block adds the chunks' partials in a fixed order: deterministic, and the
// same bits whatever the views' strides and alignment. A weight or pos_weight (often a broadcast
// view) is read an element at a time.
#include "cuda/device/common.cuh"
#include "cuda/device/params.h"
#include "cuda/device/pointwise_loss.h"

namespace baracuda::device {

enum : int { kPlInput = 0, kPlTarget = 1, kPlOut = 2, kPlDloss = 3, kPlWeight = 4, kPlPosWeight = 5 };

template <bool kContig>
__device__ __forceinline__ int64 ploss_at(const PointwiseLossParams& p, int t, int64 i) {
  return kContig ? i : walk_offset(p.walk, t, i);
}

template <class T>
__device__ __forceinline__ acc_t<T> ploss_value(const PointwiseLossParams& p, T x, T y) {
  using A = acc_t<T>;
  return pointwise_loss<A>(p.kind, to_acc<A>(x), to_acc<A>(y), static_cast<A>(p.beta), p.log_target != 0);
}

template <class T>
__device__ __forceinline__ acc_t<T> ploss_gradient(const PointwiseLossParams& p, T x, T y) {
  using A = acc_t<T>;
  return pointwise_loss_gradient<A>(p.kind, to_acc<A>(x), to_acc<A>(y), static_cast<A>(p.beta), p.log_target != 0);
}

// Element i's loss (kGradient: d loss / dx) with its weight and pos_weight, where there are.
template <class T, bool kContig, bool kGradient>
__device__ __forceinline__ acc_t<T> ploss_element(const PointwiseLossParams& p, int64 i) {
  using A = acc_t<T>;
  const T x = static_cast<const T*>(p.input)[ploss_at<kContig>(p, kPlInput, i)];
  const T y = static_cast<const T*>(p.target)[ploss_at<kContig>(p, kPlTarget, i)];
  A v;
  if (p.pos_weight) {
    const A pw = to_acc<A>(static_cast<const T*>(p.pos_weight)[ploss_at<kContig>(p, kPlPosWeight, i)]);
    v = kGradient ? bce_with_logits_pos_gradient<A>(to_acc<A>(x), to_acc<A>(y), pw)
                  : bce_with_logits_pos<A>(to_acc<A>(x), to_acc<A>(y), pw);
  } else {
    v = kGradient ? ploss_gradient(p, x, y) : ploss_value(p, x, y);
  }
  if (p.weight) v *= to_acc<A>(static_cast<const T*>(p.weight)[ploss_at<kContig>(p, kPlWeight, i)]);
  return v;
}

// Whether every pointer is 16-byte aligned (a null one counts as aligned).
__device__ __forceinline__ bool ploss_aligned(const void* a, const void* b, const void* c, const void* d) {
  return ((reinterpret_cast<unsigned long long>(a) | reinterpret_cast<unsigned long long>(b) |
           reinterpret_cast<unsigned long long>(c) | reinterpret_cast<unsigned long long>(d)) &
          15) == 0;
}

// Work goes out by slots of V = kVectorWidth<T> elements (slot s: elements s V .. s V + V - 1), a
// thread a slot: one 16-byte access per tensor where the views are contiguous and aligned and the
// slot is whole, else the slot's elements one at a time; the same elements and the same order of
// addition either way, so the sums do not depend on the views.
template <class T, bool kContig>
__global__ void __launch_bounds__(256) pointwise_loss_none(const __grid_constant__ PointwiseLossParams p) {
  constexpr int V = kVectorWidth<T>;
  const T* x = static_cast<const T*>(p.input);
  const T* y = static_cast<const T*>(p.target);
  T* out = static_cast<T*>(p.out);
  const bool vec = kContig && !p.weight && !p.pos_weight && ploss_aligned(x, y, out, nullptr);
  for (int64 base = (blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x) * V; base < p.n;
       base += static_cast<int64>(gridDim.x) * blockDim.x * V) {
    if (vec && base + V <= p.n) {
      const Vector<T> a = load_vector(x + base), b = load_vector(y + base);
      Vector<T> r;
#pragma unroll
      for (int k = 0; k < V; ++k) r.e[k] = round_to<T>(ploss_value(p, a.e[k], b.e[k]));
      store_vector(out + base, r);
    } else {
      for (int64 i = base; i < base + V && i < p.n; ++i)
        out[ploss_at<kContig>(p, kPlOut, i)] = round_to<T>(ploss_element<T, kContig, false>(p, i));
    }
  }
}

template <class T, bool kContig>
__global__ void __launch_bounds__(256) pointwise_loss_chunks(const __grid_constant__ PointwiseLossParams p) {
  using A = acc_t<T>;
  constexpr int V = kVectorWidth<T>;
  __shared__ A shared[32];
  const T* x = static_cast<const T*>(p.input);
  const T* y = static_cast<const T*>(p.target);
  const bool vec = kContig && !p.weight && !p.pos_weight && ploss_aligned(x, y, nullptr, nullptr);
  const int64 first = static_cast<int64>(blockIdx.x) * p.chunk;
  const int64 last = first + p.chunk < p.n ? first + p.chunk : p.n;
  A sum[1] = {A(0)};
  for (int64 base = first + threadIdx.x * V; base < last; base += blockDim.x * V) {
    if (vec && base + V <= last) {
      const Vector<T> a = load_vector(x + base), b = load_vector(y + base);
#pragma unroll
      for (int k = 0; k < V; ++k) sum[0] += ploss_value(p, a.e[k], b.e[k]);
    } else {
      for (int64 i = base; i < base + V && i < last; ++i) sum[0] += ploss_element<T, kContig, false>(p, i);
    }
  }
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
  constexpr int V = kVectorWidth<T>;
  const T* x = static_cast<const T*>(p.input);
  const T* y = static_cast<const T*>(p.target);
  const T* dloss = static_cast<const T*>(p.dloss);
  T* dx = static_cast<T*>(p.out);
  const bool none = p.reduction == kReduceNone;
  const A scale = p.reduction == kReduceMean ? A(1) / static_cast<A>(p.n) : A(1);
  const A whole = none ? A(0) : to_acc<A>(dloss[0]) * scale;
  const bool vec = kContig && !p.weight && !p.pos_weight && ploss_aligned(x, y, dx, none ? dloss : nullptr);
  for (int64 base = (blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x) * V; base < p.n;
       base += static_cast<int64>(gridDim.x) * blockDim.x * V) {
    if (vec && base + V <= p.n) {
      const Vector<T> a = load_vector(x + base), b = load_vector(y + base);
      Vector<T> g, r;
      if (none) g = load_vector(dloss + base);
#pragma unroll
      for (int k = 0; k < V; ++k)
        r.e[k] = round_to<T>((none ? to_acc<A>(g.e[k]) : whole) * ploss_gradient(p, a.e[k], b.e[k]));
      store_vector(dx + base, r);
    } else {
      for (int64 i = base; i < base + V && i < p.n; ++i) {
        const A g = none ? to_acc<A>(dloss[ploss_at<kContig>(p, kPlDloss, i)]) : whole;
        dx[ploss_at<kContig>(p, kPlOut, i)] = round_to<T>(g * ploss_element<T, kContig, true>(p, i));
      }
    }
  }
}

}  // namespace baracuda::device

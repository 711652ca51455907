#pragma once
// The CUDA kernels of a BroadcastReduction (common/broadcast_reduction.hpp), which nvcc and NVRTC
// both read (the host's launcher: cuda/elementwise_launch.hpp): one launch for the items, one that
// sums each kept element's splits in order. Where the kept dims are innermost and every view steps
// through them contiguously from 16-byte aligned data (b = bias[D] over [N, D]), an item takes a
// 16-byte vector of kept elements and keeps kReductionUnroll rows of loads in flight. Where the
// reduced dims are innermost (b = scale[N, 1]), a warp takes a row. Each kernel picks its splits (at
// most the plan's) and its order of the sums from the views (and the vectors kernel from its
// occupancy, a property of the build and the device): the bits depend on those alone, never on the
// run.
#include "common/broadcast_reduction.hpp"
#include "common/portable.hpp"
#include "cuda/common/elementwise_shape.hpp"
#include "cuda/common/vector.cuh"

namespace baracuda::detail::cuda {

template <class Reduction>
__global__ void __launch_bounds__(kThreads) broadcast_reduction_items_kernel(Reduction k) {
  const int64_t items = k.items();
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; t < items; t += step) k.item(t);
}

// Each kept element's partials summed by a block of 32 warps for 32 neighbouring kept elements (a
// lane each: a warp's loads are 128 neighbouring bytes of one split): warp w folds splits w, w + 32,
// ... in that order, kFinalizeBatch loads in flight, and warp 0 adds the warps' sums in warp order.
// A fixed order, so the bits depend on s alone (not the host's order: the backends' s differ anyway).
// Against a thread a kept element folding all s in turn (the host's loop), a bf16 bias gradient of
// [65536, 768] (1408 splits) went 0.070 -> 0.048 ms in the lab; ncu, [16384, 4096]: this kernel 4.3 us
// (bench/NOTES.md, "Broadcast rows in lanes; the broadcast reduction's one reduced dim; ...").
template <class Reduction>
__global__ void __launch_bounds__(kFinalizeWarps * 32) broadcast_reduction_finalize_kernel(Reduction k) {
  using Acc = typename Reduction::Acc;
  constexpr int kBatch = Reduction::kFinalizeBatch, W = kFinalizeWarps;
  __shared__ Acc sums[W][33];
  const int lane = static_cast<int>(threadIdx.x % 32), w = static_cast<int>(threadIdx.x / 32);
  for (int64_t j0 = int64_t{blockIdx.x} * 32; j0 < k.m; j0 += int64_t{gridDim.x} * 32) {
    const int64_t j = j0 + lane;
    Acc sum = 0;
    if (j < k.m) {
      for (int64_t split = w; split < k.s; split += int64_t{W} * kBatch) {
        Acc batch[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          const int64_t at = split + int64_t{b} * W;
          batch[b] = at < k.s ? k.partial[at * k.m + j] : Acc(0);
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) sum += batch[b];
      }
    }
    sums[w][lane] = sum;
    __syncthreads();
    if (w == 0 && j < k.m) {
      Acc total = 0;
      for (int i = 0; i < W; ++i) total += sums[i][lane];
      int64_t base[Reduction::NT];
      k.kept.offsets(j, base);
      k.store(base, total);
    }
    __syncthreads();
  }
}

// kOneReducedDim: the reduced dims collapse to one (or none), whose offsets are a product (the walker's
// loop over dims cost registers: bf16 bias gradient 70 -> 54, 0.070 -> 0.058 ms on [16384, 4096]).
template <class T, class Body, class First, bool kOneReducedDim>
__global__ void __launch_bounds__(kThreads) broadcast_reduction_vectors_kernel(BroadcastReduction<T, Body, First> k) {
  using Acc = typename Body::Acc;
  constexpr int kV = Vec16<T>::kSize, kIn = Body::kIn, kOut = Body::kOut, NT = kIn + kOut + 1;
  constexpr int kU = kReductionUnroll<T, Body::kIn>;
  const int64_t vectors = k.m / kV, items = vectors * k.s;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  bool one_value[kIn];  // an input with inner stride 0: one value along the vector
#pragma unroll
  for (int i = 0; i < kIn; ++i) one_value[i] = k.kept.inner_stride(i) == 0;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; t < items; t += step) {
    const int64_t split = t / vectors, j0 = (t - split * vectors) * kV;
    int64_t base[NT];
    k.kept.offsets(j0, base);
    Acc sum[kV] = {};
    // A row's offsets are computed where they are used (twice) rather than kept: registers.
    auto offsets = [&](int64_t row, int64_t(&off)[NT]) {
      if constexpr (kOneReducedDim) {
#pragma unroll
        for (int i = 0; i < NT; ++i) off[i] = base[i] + row * k.reduced.strides[i][0];  // (no reduced dim: 0)
      } else {
        k.reduced.offsets(row, off);
#pragma unroll
        for (int i = 0; i < NT; ++i) off[i] += base[i];
      }
    };
    // kCount rows first, first + s, ..., all in range: every load issued before any use. A guard
    // between them, or a load's elements merged one by one with a repeated value, made the compiler
    // unpack each load as it landed before issuing the next (one in flight: bf16 bias gradient 0.054
    // -> 0.046 ms, a * b[D] backward 0.137 -> 0.107 in the lab once both went).
    auto rows = [&]<int kCount>(int64_t first) {
      uint4 raw[kCount][kIn];
#pragma unroll
      for (int u = 0; u < kCount; ++u) {
        int64_t off[NT];
        offsets(first + u * k.s, off);
#pragma unroll
        for (int i = 0; i < kIn; ++i) raw[u][i] = load_or_splat<uint4>(k.p.in[i] + off[i], one_value[i]);
      }
      Vec16<T> in[kCount][kIn];
#pragma unroll
      for (int u = 0; u < kCount; ++u)
#pragma unroll
        for (int i = 0; i < kIn; ++i) in[u][i] = as_vec16<T>(raw[u][i]);
#pragma unroll
      for (int u = 0; u < kCount; ++u) {
        Vec16<T> out[kOut > 0 ? kOut : 1];
#pragma unroll
        for (int e = 0; e < kV; ++e) {
          Acc x[kIn];
          Acc y[kOut > 0 ? kOut : 1];
#pragma unroll
          for (int i = 0; i < kIn; ++i) x[i] = static_cast<Acc>(in[u][i].v[e]);
          sum[e] += k.body(x, y);
#pragma unroll
          for (int o = 0; o < kOut; ++o) out[o].v[e] = static_cast<T>(y[o]);
        }
        int64_t off[NT];
        offsets(first + u * k.s, off);
#pragma unroll
        for (int o = 0; o < kOut; ++o)
          if (k.p.out[o]) store16(k.p.out[o] + off[kIn + o], out[o]);
      }
    };
    // The rows split, split + s, ... in order (kU at a time, then the last few one at a time).
    int64_t first = split;
    for (; first + (kU - 1) * k.s < k.r; first += kU * k.s) rows.template operator()<kU>(first);
    for (; first < k.r; first += k.s) rows.template operator()<1>(first);
    if (k.s == 1) {
      Vec16<T> total;
#pragma unroll
      for (int e = 0; e < kV; ++e) total.v[e] = static_cast<T>(sum[e]);
      store16(k.p.out[kOut] + base[NT - 1], total);
    } else {
#pragma unroll
      for (int e = 0; e < kV; ++e) k.partial[split * k.m + j0 + e] = sum[e];
    }
  }
}

// Reduced dims innermost (b = scale[N, 1] over [N, D]): a warp per kept element and piece of its
// row (k.s pieces of whole vectors), lanes on 16-byte vectors of the row, kReductionUnroll of them in
// flight; the lanes' sums are folded by a fixed shuffle tree.
template <class T, class Body, class First>
__global__ void __launch_bounds__(kThreads) broadcast_reduction_rows_kernel(BroadcastReduction<T, Body, First> k) {
  using Acc = typename Body::Acc;
  constexpr int kV = Vec16<T>::kSize, kIn = Body::kIn, kOut = Body::kOut, NT = kIn + kOut + 1;
  constexpr int kU = kReductionUnroll<T, Body::kIn>;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (kThreads / 32);
  const int64_t vectors = k.r / kV, per_piece = (vectors + k.s - 1) / k.s;
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32; w < k.m * k.s; w += warps) {
    const int64_t j = w / k.s, piece = w - j * k.s;
    int64_t base[NT];
    k.kept.offsets(j, base);
    const int64_t begin = piece * per_piece, end = std::min(vectors, begin + per_piece);
    bool one_value[kIn];  // an input with inner stride 0: one value along the row
#pragma unroll
    for (int i = 0; i < kIn; ++i) one_value[i] = k.reduced.inner_stride(i) == 0;
    Acc sum = 0;
    // kCount vectors first, first + 32, ..., all in range, loaded before any is used (as the vectors
    // kernel's rows; a guard between them left one load in flight: H200 lab, [16384, 4096] with b
    // [N, 1], bf16 a * b backward 0.1410 -> 0.1068 ms, 104 -> 59 registers; the bf16 row sums
    // 0.0654 -> 0.0432; f32 unchanged). The lane's sums keep their order, so their bits.
    auto vectors_at = [&]<int kCount>(int64_t first) {
      uint4 raw[kCount][kIn];
#pragma unroll
      for (int u = 0; u < kCount; ++u)
#pragma unroll
        for (int i = 0; i < kIn; ++i)
          raw[u][i] = load_or_splat<uint4>(k.p.in[i] + base[i] + (first + u * 32) * kV * k.reduced.inner_stride(i),
                                           one_value[i]);
#pragma unroll
      for (int u = 0; u < kCount; ++u) {
        Vec16<T> in[kIn];
#pragma unroll
        for (int i = 0; i < kIn; ++i) in[i] = as_vec16<T>(raw[u][i]);
        Vec16<T> out[kOut > 0 ? kOut : 1];
#pragma unroll
        for (int e = 0; e < kV; ++e) {
          Acc x[kIn];
          Acc y[kOut > 0 ? kOut : 1];
#pragma unroll
          for (int i = 0; i < kIn; ++i) x[i] = static_cast<Acc>(in[i].v[e]);
          sum += k.body(x, y);
#pragma unroll
          for (int o = 0; o < kOut; ++o) out[o].v[e] = static_cast<T>(y[o]);
        }
#pragma unroll
        for (int o = 0; o < kOut; ++o)
          if (k.p.out[o]) store16(k.p.out[o] + base[kIn + o] + (first + u * 32) * kV, out[o]);
      }
    };
    // The lane's vectors in order (kU at a time, then the last few one at a time).
    int64_t first = begin + lane;
    for (; first + (kU - 1) * 32 < end; first += kU * 32) vectors_at.template operator()<kU>(first);
    for (; first < end; first += 32) vectors_at.template operator()<1>(first);
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) {
      if (k.s == 1) {
        k.store(base, sum);
      } else {
        k.partial[piece * k.m + j] = sum;
      }
    }
  }
}

}  // namespace baracuda::detail::cuda

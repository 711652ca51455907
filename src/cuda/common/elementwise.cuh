#pragma once
// The CUDA elementwise launcher. Three kernel shapes reuse one functor:
//  - vectorized: contiguous, 16-byte aligned; each thread loads kUnroll 16-byte vectors of every
//    input before computing, so enough bytes are in flight to saturate HBM;
//  - contiguous: same layout, any alignment, one element per access;
//  - strided: offsets from the shared Walker (64-bit), zero strides broadcast.
#include <algorithm>

#include "common/elementwise.hpp"
#include "cuda/common/check.cuh"
#include "cuda/common/vector.cuh"
#include "ops/binary_param_problem.hpp"

namespace baracuda::detail::cuda {

inline constexpr int kThreads = 256;
inline constexpr int kUnroll = 4;
// Grid-stride kernels launch at most this many blocks per SM; each thread then loops.
inline constexpr int kBlocksPerSm = 8;

template <class T, class Op>
__global__ void __launch_bounds__(kThreads)
    elementwise_vectorized_kernel(Op op, Operands<T, Op::kIn, Op::kOut> p, int64_t n) {
  using Acc = typename Op::Acc;
  constexpr int kV = Vec16<T>::kSize;
  const int64_t vectors = n / kV;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads * kUnroll + threadIdx.x;
  Vec16<T> in[kUnroll][Op::kIn];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t v = first + u * kThreads;
    if (v < vectors) {
#pragma unroll
      for (int k = 0; k < Op::kIn; ++k) in[u][k] = load16(p.in[k] + v * kV);
    }
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t v = first + u * kThreads;
    if (v < vectors) {
      Vec16<T> out[Op::kOut];
#pragma unroll
      for (int e = 0; e < kV; ++e) {
        Acc x[Op::kIn];
        Acc y[Op::kOut];
#pragma unroll
        for (int k = 0; k < Op::kIn; ++k) x[k] = static_cast<Acc>(in[u][k].v[e]);
        op(x, y);
#pragma unroll
        for (int k = 0; k < Op::kOut; ++k) out[k].v[e] = static_cast<T>(y[k]);
      }
#pragma unroll
      for (int k = 0; k < Op::kOut; ++k) store16(p.out[k] + v * kV, out[k]);
    }
  }
  // The last n % kV elements (fewer than one vector) go to the first threads of block 0.
  if (blockIdx.x == 0) {
    const int64_t i = vectors * kV + threadIdx.x;
    if (i < n) apply_contiguous(op, p, i);
  }
}

template <class T, class Op>
__global__ void __launch_bounds__(kThreads)
    elementwise_contiguous_kernel(Op op, Operands<T, Op::kIn, Op::kOut> p, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += step)
    apply_contiguous(op, p, i);
}

template <class T, class Op>
__global__ void __launch_bounds__(kThreads) elementwise_strided_kernel(
    Op op, Operands<T, Op::kIn, Op::kOut> p, Walker<Op::kIn + Op::kOut> walker, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += step) {
    int64_t off[Op::kIn + Op::kOut];
    walker.offsets(i, off);
    apply_at(op, p, off);
  }
}

inline unsigned grid_stride_blocks(int64_t n, int sm_count) {
  const int64_t needed = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(needed, int64_t(sm_count) * kBlocksPerSm)));
}

template <class T, class Op, int kIn, int kOut>
Status run_elementwise(const Stream& stream, int sm_count, const Op& op, const ElementwiseTensors<kIn, kOut>& t) {
  static_assert(Op::kIn == kIn && Op::kOut == kOut, "functor arity must match the tensors");
  Operands<T, kIn, kOut> p;
  for (int k = 0; k < kIn; ++k) p.in[k] = static_cast<const T*>(t.in[k]);
  for (int k = 0; k < kOut; ++k) p.out[k] = static_cast<T*>(t.out[k]);
  const int64_t n = t.shape.numel();
  cudaStream_t s = native(stream);
  switch (t.path) {
    case ElementwisePath::vectorized: {
      const int64_t per_block = int64_t(kThreads) * kUnroll * Vec16<T>::kSize;
      const int64_t blocks = std::max<int64_t>(1, (n + per_block - 1) / per_block);
      elementwise_vectorized_kernel<T, Op><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(op, p, n);
      return last_launch_status("elementwise_vectorized_kernel");
    }
    case ElementwisePath::contiguous:
      elementwise_contiguous_kernel<T, Op><<<grid_stride_blocks(n, sm_count), kThreads, 0, s>>>(op, p, n);
      return last_launch_status("elementwise_contiguous_kernel");
    default: {
      const Strides* strides[kIn + kOut];
      for (int k = 0; k < kIn; ++k) strides[k] = &t.in_strides[k];
      for (int k = 0; k < kOut; ++k) strides[kIn + k] = &t.out_strides[k];
      const Walker<kIn + kOut> walker = make_walker<kIn + kOut>(t.shape, strides);
      elementwise_strided_kernel<T, Op><<<grid_stride_blocks(n, sm_count), kThreads, 0, s>>>(op, p, walker, n);
      return last_launch_status("elementwise_strided_kernel");
    }
  }
}

template <class Reduction>
__global__ void __launch_bounds__(kThreads) split_reduction_items_kernel(Reduction k) {
  const int64_t items = k.items();
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; t < items; t += step) k.item(t);
}

template <class Reduction>
__global__ void __launch_bounds__(kThreads) split_reduction_finalize_kernel(Reduction k) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; j < k.m; j += step) k.finalize(j);
}

// A deterministic split reduction (see LerpBackwardReduce): one launch for the items, one that sums
// each output's splits in order.
template <class Reduction>
Status run_split_reduction(const Stream& stream, int sm_count, const Reduction& k) {
  cudaStream_t s = native(stream);
  split_reduction_items_kernel<<<grid_stride_blocks(k.items(), sm_count), kThreads, 0, s>>>(k);
  if (Status st = last_launch_status("split_reduction_items_kernel"); !st) return st;
  if (k.s == 1) return Status::ok();
  split_reduction_finalize_kernel<<<grid_stride_blocks(k.m, sm_count), kThreads, 0, s>>>(k);
  return last_launch_status("split_reduction_finalize_kernel");
}

}  // namespace baracuda::detail::cuda

#pragma once
// The CUDA elementwise launcher, compiled ahead of time (the families not yet compiled at select).
// Every kernel shape reuses one functor:
//  - vectorized: contiguous, 16-byte aligned; each thread loads kUnroll 16-byte vectors of every
//    input before computing, so enough bytes are in flight to saturate HBM;
//  - contiguous: same layout, any alignment, one element per access;
//  - strided: offsets from the shared Walker (64-bit), zero strides broadcast; computed once per
//    row (the innermost collapsed dim) when rows are long, else per element;
//  - strided_vectorized: rows of 16-byte vectors, inputs broadcast along a row allowed: one flat
//    run of vectors over all rows where the walk has at most two dims, else a row at a time.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>

#include "cuda/common/check.cuh"
#include "cuda/common/elementwise_kernels.cuh"
#include "cuda/common/launch.cuh"
#include "ops/elementwise_layout.hpp"

namespace baracuda::detail::cuda {

template <class In, class Out, class First, class Op, int NT>
Status run_flat_rows(cudaStream_t s, const Op& op, Operands<In, Out, Op::kIn, Op::kOut, First> p,
                     const Walker<NT>& walker, int64_t rows) {
  constexpr int kIn = Op::kIn;
  const int64_t vectors_a_row = walker.inner_size() / kPackSize<In, Out>;
  if (rows == 0 || vectors_a_row == 0) return Status::ok();
  const int64_t rows_a_launch = kFlatLaunchVectors / vectors_a_row;
  FlatRows<NT> w;
  for (int t = 0; t < NT; ++t) {
    w.row_step[t] = walker.rank == 2 ? walker.strides[t][0] : 0;
    w.one_value[t] = walker.inner_stride(t) == 0;
  }
  w.vectors_a_row = U32Divisor(static_cast<uint32_t>(vectors_a_row));
  const int64_t per_block = int64_t{kThreads} * kPackUnroll<In, Out, Op>;
  for (int64_t first_row = 0; first_row < rows; first_row += rows_a_launch) {
    w.vectors = static_cast<uint32_t>(std::min(rows_a_launch, rows - first_row) * vectors_a_row);
    elementwise_flat_rows_kernel<In, Out, Op, First>
        <<<static_cast<unsigned>((w.vectors - 1) / per_block + 1), kThreads, 0, s>>>(op, p, w);
    if (Status st = last_launch_status("elementwise_flat_rows_kernel"); !st) return st;
    // (the first input may hold another type than In: moved in its own elements)
    for (int k = 0; k < kIn; ++k) {
      const int64_t step = rows_a_launch * w.row_step[k];
      p.in[k] = k == 0 ? reinterpret_cast<const In*>(reinterpret_cast<const First*>(p.in[k]) + step) : p.in[k] + step;
    }
    for (int k = 0; k < Op::kOut; ++k) p.out[k] += rows_a_launch * w.row_step[kIn + k];
  }
  return Status::ok();
}

// Walks of more than two dims (the flat rows kernel takes the others) with rows of whole vectors
// shorter than a block's worth (kThreads * kRowUnroll vectors): row lanes,
// rows_vectorized's blocks leaving threads idle (H200, a + b[D] [262144, 256]: f32 0.288 -> 0.142
// ms, bf16 0.184 -> 0.081; [65536, 768] 0.165 -> 0.108, 0.089 -> 0.061). Longer rows keep a block
// along a row: in lanes (one wave), f32 lerp weight [D] [16384, 4096] 0.193 -> 0.230 ms (four vectors
// a thread: 80 registers, spills under a bound of three blocks), bf16 swiglu 0.102 -> 0.110.
template <class In, class Out, class First, class Op, int NT>
Status run_row_lanes(cudaStream_t s, int sm_count, const Op& op, const Operands<In, Out, Op::kIn, Op::kOut, First>& p,
                     const Walker<NT>& walker, int64_t rows) {
  const int64_t vectors = walker.inner_size() / kPackSize<In, Out>;
  const int lane_bits = row_lane_bits(vectors);
  const int64_t grid_x = ((vectors - 1) >> lane_bits) + 1, row_blocks = (rows - 1) / (kThreads >> lane_bits) + 1;
  const auto kernel = elementwise_row_lanes_kernel<In, Out, Op, First>;
  unsigned wave = 0;
  if (Status st = one_wave_blocks(kernel, 0, grid_x * row_blocks, sm_count, wave); !st) return st;
  const dim3 grid(static_cast<unsigned>(grid_x),
                  static_cast<unsigned>(std::clamp<int64_t>(std::min<int64_t>(wave / grid_x, row_blocks), 1, 65535)));
  kernel<<<grid, kThreads, 0, s>>>(op, p, walker, static_cast<int>(rows), lane_bits);
  return last_launch_status("elementwise_row_lanes_kernel");
}

// Runs op over the tensors, inputs of element type In (the first of First) and outputs of Out.
template <class In, class Out = In, class First = In, class Op, int kIn, int kOut>
Status run_elementwise(const Stream& stream, int sm_count, const Op& op, const ElementwiseTensors<kIn, kOut>& t) {
  static_assert(Op::kIn == kIn && Op::kOut == kOut, "functor arity must match the tensors");
  Operands<In, Out, kIn, kOut, First> p{};
  for (int k = 0; k < kIn; ++k) p.in[k] = static_cast<const In*>(t.in[k]);
  for (int k = 0; k < kOut; ++k) p.out[k] = static_cast<Out*>(t.out[k]);
  const int64_t n = t.shape.numel();
  cudaStream_t s = native(stream);
  switch (t.path) {
    case ElementwisePath::vectorized: {
      const int64_t per_block = int64_t(kThreads) * kPackUnroll<In, Out, Op> * kPackSize<In, Out>;
      int64_t blocks = std::max<int64_t>(1, (n + per_block - 1) / per_block);
#if BARACUDA_PERSISTENT
      int resident = 0;
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, elementwise_vectorized_kernel<In, Out, Op, First>,
                                                    kThreads, 0);
      blocks = std::min<int64_t>(blocks, int64_t(std::max(resident, 1)) * sm_count * BARACUDA_PERSISTENT);
#endif
      elementwise_vectorized_kernel<In, Out, Op, First><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(op, p, n);
      return last_launch_status("elementwise_vectorized_kernel");
    }
    case ElementwisePath::contiguous:
      elementwise_contiguous_kernel<In, Out, Op, First><<<grid_stride_blocks(n, sm_count), kThreads, 0, s>>>(op, p, n);
      return last_launch_status("elementwise_contiguous_kernel");
    default: {
      const Strides* strides[kIn + kOut];
      for (int k = 0; k < kIn; ++k) strides[k] = &t.in_strides[k];
      for (int k = 0; k < kOut; ++k) strides[kIn + k] = &t.out_strides[k];
      const Walker<kIn + kOut> walker = make_walker<kIn + kOut>(t.shape, strides);
      const int64_t inner = walker.inner_size();
      const int64_t rows = n / inner;
      const unsigned grid_y = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
      if (t.path == ElementwisePath::strided_vectorized) {
        if (walker.rank <= 2 && inner / kPackSize<In, Out> <= kFlatLaunchVectors)
          return run_flat_rows<In, Out, First>(s, op, p, walker, rows);
        constexpr int kU = kRowUnroll<In, Out, Op>;
        const int64_t vectors = inner / kPackSize<In, Out>, per_block = int64_t{kThreads} * kU;
        if (vectors >= per_block) {
          const dim3 grid(static_cast<unsigned>((vectors + per_block - 1) / per_block), grid_y);
          elementwise_rows_vectorized_kernel<In, Out, Op, First><<<grid, kThreads, 0, s>>>(op, p, walker, rows);
          return last_launch_status("elementwise_rows_vectorized_kernel");
        }
        // (more than 2^30 rows, which the lanes count in 32 bits, take the row kernels below)
        if (rows <= int64_t{1} << 30) return run_row_lanes<In, Out, First>(s, sm_count, op, p, walker, rows);
      }
      if (inner >= kMinRowLength) {
        const dim3 grid(static_cast<unsigned>(std::min<int64_t>((inner + kThreads - 1) / kThreads, 1024)), grid_y);
        elementwise_rows_kernel<In, Out, Op, First><<<grid, kThreads, 0, s>>>(op, p, walker, rows);
        return last_launch_status("elementwise_rows_kernel");
      }
      elementwise_strided_kernel<In, Out, Op, First>
          <<<grid_stride_blocks(n, sm_count), kThreads, 0, s>>>(op, p, walker, n);
      return last_launch_status("elementwise_strided_kernel");
    }
  }
}

}  // namespace baracuda::detail::cuda

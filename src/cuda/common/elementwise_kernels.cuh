#pragma once
// The CUDA elementwise kernels, which nvcc and NVRTC (compiled at select) both read. Every kernel
// shape reuses one functor:
//  - vectorized: contiguous, 16-byte aligned; each thread loads kUnroll 16-byte vectors of every
//    input before computing, so enough bytes are in flight to saturate HBM;
//  - contiguous: same layout, any alignment, one element per access;
//  - strided: offsets from the shared Walker (64-bit), zero strides broadcast; computed once per
//    row (the innermost collapsed dim) when rows are long, else per element;
//  - strided_vectorized: rows of 16-byte vectors, inputs broadcast along a row allowed: one flat
//    run of vectors over all rows where the walk has at most two dims, else a row at a time.
#if !defined(__CUDACC_RTC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#include "common/divisor.hpp"
#include "common/elementwise.hpp"
#include "common/portable.hpp"
#include "cuda/common/elementwise_shape.hpp"
#include "cuda/common/vector.cuh"

namespace baracuda::detail::cuda {

// Applies op to every lane of a vector of each input, in the compute type.
template <class In, class Out, class Op, int N>
__device__ __forceinline__ void apply_pack(const Op& op, const Pack<In, N> (&in)[kSlots<Op::kIn>],
                                           Pack<Out, N> (&out)[Op::kOut]) {
  using Acc = typename Op::Acc;
#pragma unroll
  for (int e = 0; e < N; ++e) {
    Acc x[kSlots<Op::kIn>];
    Acc y[Op::kOut];
#pragma unroll
    for (int k = 0; k < Op::kIn; ++k) x[k] = convert<Acc>(in[k].v[e]);
    op(x, y);
#pragma unroll
    for (int k = 0; k < Op::kOut; ++k) out[k].v[e] = convert<Out>(y[k]);
  }
}

// bf16 under the compiler's name for it: nvcc's __nv_bfloat16, NVRTC's baracuda::bfloat16.
#if defined(__CUDACC_RTC__)
template <class T>
inline constexpr bool is_bfloat16_v = std::is_same_v<T, baracuda::bfloat16>;
#else
template <class T>
inline constexpr bool is_bfloat16_v = std::is_same_v<T, __nv_bfloat16>;
#endif

// A bool as In. For the 16-bit floats, 1.0's bits where b (0x3C00 f16, 0x3F80 bf16) rather than a
// conversion through f32: where's bf16 forward spent half its instructions converting its condition.
template <class In>
__device__ __forceinline__ In bool_as(bool b) {
  if constexpr (sizeof(In) == 2) {
    static_assert(is_16bit_float_v<In>);
    constexpr unsigned short kOne = is_bfloat16_v<In> ? 0x3F80 : 0x3C00;
    const unsigned short bits = b ? kOne : 0;
    In out;
    memcpy(&out, &bits, sizeof out);
    return out;
  } else {
    return convert<In>(b);
  }
}

// Input k's vector at element `at` as a pack of In: the first input of another type (where's bool
// condition) is loaded as its own narrower pack and converted.
template <int N, class In, class Out, int kIn, int kOut, class First>
__device__ __forceinline__ Pack<In, N> load_input_pack(const Operands<In, Out, kIn, kOut, First>& p, int k,
                                                       int64_t at) {
  if constexpr (!std::is_same_v<First, In>) {
    static_assert(sizeof(First) <= sizeof(In), "the first input's vector must not be the widest");
    if (k == 0) {
      const Pack<First, N> narrow = load_pack<N>(reinterpret_cast<const First*>(p.in[0]) + at);
      Pack<In, N> out;
#pragma unroll
      for (int e = 0; e < N; ++e) {
        if constexpr (std::is_same_v<First, bool>)
          out.v[e] = bool_as<In>(narrow.v[e]);
        else
          out.v[e] = convert<In>(narrow.v[e]);
      }
      return out;
    }
  }
  return load_pack<N>(p.in[k] + at);
}
// Input k's element at `off` as an In.
template <class In, class Out, int kIn, int kOut, class First>
__device__ __forceinline__ In load_input(const Operands<In, Out, kIn, kOut, First>& p, int k, int64_t off) {
  if constexpr (std::is_same_v<First, bool> && !std::is_same_v<In, bool>)
    if (k == 0) return bool_as<In>(reinterpret_cast<const bool*>(p.in[0])[off]);
  if constexpr (!std::is_same_v<First, In>)
    if (k == 0) return convert<In>(reinterpret_cast<const First*>(p.in[0])[off]);
  return p.in[k][off];
}
// Input k's vector v of a row whose offset is row_at, or where one_value (the input's inner stride
// is 0: one value along the row) its element at row_at in every lane, written as whole words: the
// value merged element by element made the compiler unpack each load as it landed before issuing
// the next (bf16 a * b[N, 1] [16384, 4096] 0.0867 -> 0.0764 ms in rows_lab.cu, as the broadcast
// reduction's kernels found).
template <int N, class In, class Out, int kIn, int kOut, class First>
__device__ __forceinline__ void load_row_pack(Pack<In, N>& out, const Operands<In, Out, kIn, kOut, First>& p, int k,
                                              int64_t row_at, int64_t v, bool one_value) {
  if constexpr (!std::is_same_v<First, In>) {
    if (k == 0) {
      if (!one_value) {
        out = load_input_pack<N>(p, 0, row_at + v * N);
      } else {
        const In value = load_input(p, 0, row_at);
#pragma unroll
        for (int e = 0; e < N; ++e) out.v[e] = value;
      }
      return;
    }
  }
  load_pack_or_splat(out, p.in[k] + row_at + (one_value ? 0 : v * N), one_value);
}

template <class In, class Out, class Op, class First>
__global__ void __launch_bounds__(kThreads)
    elementwise_vectorized_kernel(Op op, Operands<In, Out, Op::kIn, Op::kOut, First> p, int64_t n) {
  constexpr int kV = kPackSize<In, Out>;
  constexpr int kU = kPackUnroll<In, Out, Op>;
  const int64_t vectors = n / kV;
  const int64_t tiles = (vectors + int64_t(kThreads) * kU - 1) / (int64_t(kThreads) * kU);
  // Grid-stride over tiles of kThreads * kU vectors: the grid may be sized to what is resident.
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t first = tile * kThreads * kU + threadIdx.x;
    Pack<In, kV> in[kU][kSlots<Op::kIn>];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int64_t v = first + u * kThreads;
      if (v < vectors) {
#pragma unroll
        for (int k = 0; k < Op::kIn; ++k) in[u][k] = load_input_pack<kV>(p, k, v * kV);
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int64_t v = first + u * kThreads;
      if (v < vectors) {
        Pack<Out, kV> out[Op::kOut];
        apply_pack(op, in[u], out);
#pragma unroll
        for (int k = 0; k < Op::kOut; ++k) store_pack(p.out[k] + v * kV, out[k]);
      }
    }
  }
  // The last n % kV elements (fewer than one vector) go to the first threads of block 0.
  if (blockIdx.x == 0) {
    const int64_t i = vectors * kV + threadIdx.x;
    if (i < n) apply_contiguous(op, p, i);
  }
}

template <class In, class Out, class Op, class First>
__global__ void __launch_bounds__(kThreads)
    elementwise_contiguous_kernel(Op op, Operands<In, Out, Op::kIn, Op::kOut, First> p, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += step)
    apply_contiguous(op, p, i);
}

template <class In, class Out, class Op, class First>
__global__ void __launch_bounds__(kThreads)
    elementwise_strided_kernel(Op op, Operands<In, Out, Op::kIn, Op::kOut, First> p, Walker<Op::kIn + Op::kOut> walker,
                               int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += step) {
    int64_t off[Op::kIn + Op::kOut];
    walker.offsets(i, off);
    apply_at(op, p, off);
  }
}

// One row (the innermost collapsed dim) per blockIdx.y step: the row's offsets are computed once,
// then threads step along it with each tensor's inner stride.
template <class In, class Out, class Op, class First>
__global__ void __launch_bounds__(kThreads)
    elementwise_rows_kernel(Op op, Operands<In, Out, Op::kIn, Op::kOut, First> p, Walker<Op::kIn + Op::kOut> walker,
                            int64_t rows) {
  constexpr int NT = Op::kIn + Op::kOut;
  const int64_t inner = walker.inner_size();
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    int64_t base[NT];
    walker.offsets(row, base, walker.rank - 1);
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < inner;
         i += static_cast<int64_t>(gridDim.x) * kThreads) {
      int64_t off[NT];
      for (int t = 0; t < NT; ++t) off[t] = base[t] + i * walker.inner_stride(t);
      apply_at(op, p, off);
    }
  }
}

// Rows of vectors (see rows_vectorizable): blockIdx.y steps over rows, and each thread takes up to
// kRowUnroll vectors of a row a gridDim.x * kThreads apart, all loaded before any use (as the
// vectorized kernel's), so that a row's offsets are computed once and enough bytes are in flight.
// An input with inner stride 0 is one value per row, loaded once and used for every lane.
template <class In, class Out, class Op, class First>
__global__ void __launch_bounds__(kThreads)
    elementwise_rows_vectorized_kernel(Op op, Operands<In, Out, Op::kIn, Op::kOut, First> p,
                                       Walker<Op::kIn + Op::kOut> walker, int64_t rows) {
  constexpr int NT = Op::kIn + Op::kOut;
  constexpr int kV = kPackSize<In, Out>;
  constexpr int kU = kRowUnroll<In, Out, Op>;
  const int64_t vectors = walker.inner_size() / kV;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    int64_t base[NT];
    walker.offsets(row, base, walker.rank - 1);
    for (int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; first < vectors;
         first += stride * kU) {
      Pack<In, kV> in[kU][kSlots<Op::kIn>];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int64_t v = first + u * stride;
        if (v < vectors) {
#pragma unroll
          for (int k = 0; k < Op::kIn; ++k) load_row_pack(in[u][k], p, k, base[k], v, walker.inner_stride(k) == 0);
        }
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int64_t v = first + u * stride;
        if (v < vectors) {
          Pack<Out, kV> out[Op::kOut];
          apply_pack(op, in[u], out);
#pragma unroll
          for (int k = 0; k < Op::kOut; ++k) store_pack(p.out[k] + base[Op::kIn + k] + v * kV, out[k]);
        }
      }
    }
  }
}

// Rows of vectors (see rows_vectorizable) of a walk of at most two collapsed dims, as one flat run of
// vectors: the vectorized kernel's tiles (kPackUnroll vectors a thread, loaded before use) over every
// row at once, so that short rows leave no thread idle and no block waits on the end of a row. Each
// vector's row comes from a multiply-high (U32Divisor); a tensor's offset is the row times its row
// step plus, unless it is one value a row (inner stride 0), the vector's place in the row. H200, bf16
// (bench/labs/cost_lab.cu, medians of three runs, against the row kernels): [16384, 4096] a + b[N, 1]
// 0.0782 -> 0.0694 ms, a / b[D] 0.0844 -> 0.0741, lerp weight [D] 0.1056 -> 0.0962; [1048576, 8]
// a + b[D] 0.2041 -> 0.0135 (the row lanes left 31 of 32 lanes idle). Walks of more dims keep the row
// kernels: the same kernel walking them through divisors (an unrolled, guarded step a dim) ran bf16
// a + b[N, 1] at 0.0805 ms even where one dim needed no step (bench/NOTES.md, "Flat broadcast rows").
template <class In, class Out, class Op, class First>
__global__ void __launch_bounds__(kThreads)
    elementwise_flat_rows_kernel(Op op, Operands<In, Out, Op::kIn, Op::kOut, First> p, FlatRows<Op::kIn + Op::kOut> w) {
  constexpr int kIn = Op::kIn;
  constexpr int kV = kPackSize<In, Out>;
  constexpr int kU = kPackUnroll<In, Out, Op>;
  const uint32_t tiles = (w.vectors - 1) / (uint32_t{kThreads} * kU) + 1;
  for (uint32_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const uint32_t first = tile * kThreads * kU + threadIdx.x;
    Pack<In, kV> in[kU][kSlots<kIn>];
    uint32_t row[kU], at[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const uint32_t v = first + u * kThreads;
      row[u] = w.vectors_a_row.quotient(v);
      at[u] = v - row[u] * w.vectors_a_row.divisor();
      if (v < w.vectors) {
#pragma unroll
        for (int k = 0; k < kIn; ++k)
          load_row_pack(in[u][k], p, k, row[u] * w.row_step[k], int64_t{at[u]}, w.one_value[k]);
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      if (first + u * kThreads < w.vectors) {
        Pack<Out, kV> out[Op::kOut];
        apply_pack(op, in[u], out);
#pragma unroll
        for (int k = 0; k < Op::kOut; ++k)
          store_pack(p.out[k] + row[u] * w.row_step[kIn + k] + int64_t{at[u]} * kV, out[k]);
      }
    }
  }
}

// Rows of vectors (see rows_vectorizable) in a 2-D block: 2^lane_bits threads along a row, one
// vector each (gridDim.x * lanes apart), the block's other threads on the next rows; each thread then
// steps over rows a grid's worth apart (the grid is one wave: no block turnover). Rows and vectors
// are counted in 32 bits (the host sends larger problems to the row kernels) and the kernel held to
// 40 registers, six blocks an SM: a vector or a row more in flight a thread cost more registers, so
// resident threads, than it gained (bench/NOTES.md, "Broadcast rows in lanes; ...").
template <class In, class Out, class Op, class First>
__global__ void __launch_bounds__(kThreads, 6)
    elementwise_row_lanes_kernel(Op op, Operands<In, Out, Op::kIn, Op::kOut, First> p,
                                 Walker<Op::kIn + Op::kOut> walker, int rows, int lane_bits) {
  constexpr int kIn = Op::kIn, NT = kIn + Op::kOut;
  constexpr int kV = kPackSize<In, Out>;
  const int vectors = static_cast<int>(walker.inner_size() / kV);
  const int rows_a_block = kThreads >> lane_bits;
  const int row_step = static_cast<int>(gridDim.y) * rows_a_block;
  const int first_row = static_cast<int>(blockIdx.y) * rows_a_block + (static_cast<int>(threadIdx.x) >> lane_bits);
  for (int v = (static_cast<int>(blockIdx.x) << lane_bits) + (threadIdx.x & ((1 << lane_bits) - 1)); v < vectors;
       v += static_cast<int>(gridDim.x) << lane_bits) {
    for (int row = first_row; row < rows; row += row_step) {
      int64_t base[NT];
      walker.offsets(row, base, walker.rank - 1);
      Pack<In, kV> in[kSlots<kIn>];
#pragma unroll
      for (int k = 0; k < kIn; ++k) load_row_pack(in[k], p, k, base[k], int64_t{v}, walker.inner_stride(k) == 0);
      Pack<Out, kV> out[Op::kOut];
      apply_pack(op, in, out);
#pragma unroll
      for (int k = 0; k < Op::kOut; ++k) store_pack(p.out[k] + base[kIn + k] + int64_t{v} * kV, out[k]);
    }
  }
}

}  // namespace baracuda::detail::cuda

#pragma once
// The CUDA elementwise launcher. Every kernel shape reuses one functor:
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

#include "common/divisor.hpp"
#include "common/elementwise.hpp"
#include "cuda/common/check.cuh"
#include "cuda/common/launch.cuh"
#include "cuda/common/vector.cuh"
#include "ops/elementwise_layout.hpp"

namespace baracuda::detail::cuda {

// Vectors per input per thread, loaded before use: 128 bytes in flight per thread for one and two
// inputs (a single-input op needs twice the unroll to keep as many bytes in flight); but see
// kPackUnroll for a single input of 4 bytes or more.
template <int kIn>
#ifndef BARACUDA_UNROLL_ONE_INPUT
#define BARACUDA_UNROLL_ONE_INPUT 8
#endif
inline constexpr int kUnroll = kIn == 1 ? BARACUDA_UNROLL_ONE_INPUT : 4;
// Rows shorter than this go to the per-element strided kernel (a row kernel would idle threads).
inline constexpr int64_t kMinRowLength = 128;

// Elements a vector step moves: 16 bytes of the widest tensor (one access each; the narrower ones
// move 8, 4 or 2 bytes, still contiguous across a warp).
template <class In, class Out>
inline constexpr int kPackSize = static_cast<int>(16 / (sizeof(In) > sizeof(Out) ? sizeof(In) : sizeof(Out)));
// Vectors in flight a thread: kUnroll's (every vector is at most 16 bytes a tensor), but at most 32
// input elements a thread, counted over all inputs (fill has none: as one): the compiler keeps every
// element's compute-type value live. With 64 (one 16-bit input and output), bf16 silu and gelu held
// 94-102 registers, a quarter of the warps resident, 51-58% of the DRAM bandwidth; with 128 (two u8
// inputs), u8 bitwise_and held 148, an eighth resident, 40%; with 64 (two bf16 inputs, 4 vectors),
// gelu's gradient (erff and an exp an element) held 96 registers and took 0.1291 ms on [16384, 4096],
// 0.1130 with 2 vectors; addcdiv's three bf16 gradients (four inputs) 0.2110 -> 0.1984 ms with 1;
// memory-bound ops unchanged (bench/labs/binary_lab.cu).
//
// A single input takes one vector a thread, whose blocks turn over fastest, where the input and the
// output are both 4 bytes or more, or both 16-bit and the op is not heavy (common/elementwise.hpp's
// ElementCost): H200, [16384, 4096] rotated, queued runs, f32 x -> 1.5 x + 0.25 at 0.1290 ms with one
// (the device copy's 0.1289, torch.exp's 0.1297), 0.1335 with two, 0.1346 with four, 0.1356 with eight
// (bench/labs/unary_lab.cu); gelu, silu, exp f32 0.96x -> 0.98-1.01x PyTorch. bf16, four -> one
// (bench/labs/cost_lab.cu, medians of five runs): neg 0.0692 -> 0.0674 ms, relu 0.0699 -> 0.0679, exp
// 0.0700 -> 0.0685, silu 0.0705 -> 0.0690; heavy ops keep four (gelu 0.0728 -> 0.0841 with one; tanh,
// log even or slower), and so does a narrowing input (the f32 -> bf16 cast 0.0969 -> 0.0987 with one)
// (bench/NOTES.md, "Vectors a thread by the op's cost").
template <class In, class Out, class Op>
inline constexpr int kPackUnroll =
    Op::kIn == 1 && ((sizeof(In) >= 4 && sizeof(Out) >= 4) ||
                     (sizeof(In) == 2 && sizeof(Out) == 2 && element_cost<Op>() != ElementCost::heavy))
        ? 1
        : std::max(1, std::min(kUnroll<Op::kIn>, 32 / (std::max(Op::kIn, 1) * kPackSize<In, Out>)));

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

// A bool as In. For the 16-bit floats, 1.0's bits where b (0x3C00 f16, 0x3F80 bf16) rather than a
// conversion through f32: where's bf16 forward spent half its instructions converting its condition.
template <class In>
__device__ __forceinline__ In bool_as(bool b) {
  if constexpr (sizeof(In) == 2) {
    static_assert(std::is_same_v<In, __half> || std::is_same_v<In, __nv_bfloat16>);
    constexpr unsigned short kOne = std::is_same_v<In, __half> ? 0x3C00 : 0x3F80;
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

// Vectors a thread takes of a row in elementwise_rows_vectorized_kernel: kUnroll's, at most 32
// elements, for 4- and 8-byte elements (H200, [16384, 4096] f32: a + b[D] 88 -> 94% of copy; a
// single input's one vector of kPackUnroll was not measured on rows). For 16-bit elements two, loaded
// as whole words (load_row_pack: 46 registers), where the op is arithmetic (ElementCost), else one:
// with two, bf16 [16384, 4096] a + b[D] 0.0756 -> 0.0700 ms, a * b[D] 0.0755 -> 0.0700, maximum
// 0.0765 -> 0.0752, a + b[N, 1] 0.0818 -> 0.0827 and lerp weight [D] even (bench/labs/cost_lab.cu),
// but swiglu (silu an element) 0.0969 -> 0.1120 (bench/NOTES.md, "Broadcast rows of 16-bit
// elements"). Other narrow elements take one. (Measured on 2-D walks, which the flat rows kernel now
// takes; the row kernels keep walks of more dims and rows longer than kFlatLaunchVectors.)
// Rows of fewer than kThreads * kRowUnroll vectors take elementwise_row_lanes_kernel.
template <class In, class Out, class Op>
inline constexpr int kRowUnroll = sizeof(In) >= 4 && sizeof(Out) >= 4
                                      ? std::min(kUnroll<Op::kIn>, 32 / kPackSize<In, Out>)
                                  : sizeof(In) == 2 && sizeof(Out) == 2 && element_cost<Op>() == ElementCost::arithmetic
                                      ? 2
                                      : 1;

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
template <int NT>
struct FlatRows {
  int64_t row_step[NT] = {};
  bool one_value[NT] = {};
  U32Divisor vectors_a_row;
  uint32_t vectors = 0;  // the launch's: its rows * vectors a row
};
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

// The flat rows kernel over a walk of at most two dims whose rows hold at most kFlatLaunchVectors
// vectors: one launch per kFlatLaunchVectors vectors of whole rows (so that a launch counts them in
// 32 bits), each with the pointers moved to its first row.
inline constexpr int64_t kFlatLaunchVectors = int64_t{1} << 28;
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

// The lanes of a row in elementwise_row_lanes_kernel's block: the power of two in [32, 256] leaving
// the fewest lanes idle on a row of `vectors`, the largest of equals (fewer blocks a row). H200
// (bench/labs/rows_lab.cu): bf16 [65536, 768] (96 vectors) at 32 lanes 90.8% of copy, at 128 83.1%;
// [16384, 1000] (125) at 128 91.8%, at 32 78.7%.
inline int row_lane_bits(int64_t vectors) {
  int best = 8;
  int64_t best_slots = (vectors + 255) / 256 * 256;
  for (int bits = 7; bits >= 5; --bits) {
    const int64_t slots = ((vectors + (int64_t{1} << bits) - 1) >> bits) << bits;
    if (slots < best_slots) best = bits, best_slots = slots;
  }
  return best;
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

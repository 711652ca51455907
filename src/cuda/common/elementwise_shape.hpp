#pragma once
// The elementwise kernels' shapes (cuda/common/elementwise_kernels.cuh): their constants, which the
// kernels and the host's launcher (cuda/elementwise_launch.hpp) both read. Plain C++: nvcc, NVRTC
// and the host compiler all take it.
#include "common/divisor.hpp"
#include "common/elementwise.hpp"
#include "common/portable.hpp"
#include "cuda/common/threads.hpp"
#if !defined(__CUDACC_RTC__)
#include <algorithm>
#endif

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

// (elementwise_flat_rows_kernel's walk)
template <int NT>
struct FlatRows {
  int64_t row_step[NT] = {};
  bool one_value[NT] = {};
  U32Divisor vectors_a_row;
  uint32_t vectors = 0;  // the launch's: its rows * vectors a row
};
// The flat rows kernel over a walk of at most two dims whose rows hold at most kFlatLaunchVectors
// vectors: one launch per kFlatLaunchVectors vectors of whole rows (so that a launch counts them in
// 32 bits), each with the pointers moved to its first row.
inline constexpr int64_t kFlatLaunchVectors = int64_t{1} << 28;

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

// The transposed path's tiles (cuda/common/elementwise_transposed.cuh).
inline constexpr int kTransposeThreads = 256;
inline constexpr int kTransposeLanes = kTransposedLanes;  // threads of a tile along each of P and Q
template <class In, class Out>
inline constexpr int kTransposeSide = transposed_piece(sizeof(In) > sizeof(Out) ? sizeof(In) : sizeof(Out));
// Rows of the other inputs' pieces loaded before use, and the blocks an SM the registers must allow
// (0: no bound). At V = 8 (16- and 8-bit) with another input: two rows and three blocks (bf16 a +
// b.t(): 80 registers, no spills; four rows, unbounded: 118 registers, two blocks an SM, a warp
// waiting 9 of its 14 cycles an instruction on loads). A copy (one input) holds 62, four blocks.
template <class In, class Out>
inline constexpr int kTransposeRows = kTransposeSide<In, Out> == 8 ? 2 : kTransposeSide<In, Out>;
template <class In, class Out, int kIn>
inline constexpr int kTransposeMinBlocks = kTransposeSide<In, Out> == 8 && kIn > 1 ? 3 : 0;

// The walk, and whether each tensor's accesses are whole aligned pieces (the staged input's along Q,
// the others' along P; an input with stride 0 along P is one value a row, any alignment).
template <int NT>
struct TransposedArgs : TransposedWalk<NT> {
  bool pieces[NT] = {};
  bool all_pieces = false;  // every tensor's
};

// The broadcast reduction's kernels (cuda/common/broadcast_reduction.cuh): the finalize kernel's warps a
// block, and:
inline constexpr int kFinalizeWarps = 32;
// Vectors of loads in flight per item (per lane of the rows kernel): 4, or 2 of 16-bit elements with
// several inputs, whose eight sums and conversions per vector would otherwise take registers enough to
// halve the threads an SM holds (H200 lab, vectors kernel: bf16 a * b[D] backward 64 registers at 2,
// 97 at 4, no faster; the bias gradient, one input, 40 at 2 and 44 at 4, 0.048 -> 0.046 ms).
template <class T, int kIn>
inline constexpr int kReductionUnroll = sizeof(T) >= 4 || kIn == 1 ? 4 : 2;

// The splits a kernel uses, at most the plan's (whose workspace holds that many partials per kept
// element): enough items to fill the device, `per_item` kept elements each, but each split at least
// kMinSplitWork steps of its loop (`steps` of them in all): more would only add partials.
inline constexpr int64_t kMinSplitWork = 16;
inline int64_t kernel_splits(int64_t planned, int64_t m, int64_t per_item, int64_t items_wanted, int64_t steps) {
  const int64_t items_per_split = std::max<int64_t>(1, m / per_item);
  const int64_t most = std::max<int64_t>(1, std::min(planned, steps / kMinSplitWork));
  return std::clamp<int64_t>((items_wanted + items_per_split - 1) / items_per_split, 1, most);
}

}  // namespace baracuda::detail::cuda

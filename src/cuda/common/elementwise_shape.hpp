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
inline constexpr int kUnroll = kIn == 1 ? 8 : 4;
// Rows shorter than this go to the per-element strided kernel (a row kernel would idle threads).
inline constexpr int64_t kMinRowLength = 128;

// Elements a vector step moves: 16 bytes of the widest tensor (one access each; the narrower ones
// move 8, 4 or 2 bytes, still contiguous across a warp).
template <class In, class Out>
inline constexpr int kPackSize = static_cast<int>(16 / (sizeof(In) > sizeof(Out) ? sizeof(In) : sizeof(Out)));
// Vectors in flight a thread: kUnroll's (every vector is at most 16 bytes a tensor), but at most 32
// input elements a thread, counted over all inputs (fill has none: as one): the compiler keeps every
// element's compute-type value live, and more held so many registers that too few warps stayed
// resident to fill the DRAM bandwidth.
//
// A single input takes one vector a thread, whose blocks turn over fastest, where the input and the
// output are both 4 bytes or more, or both 16-bit and the op is not heavy (common/elementwise.hpp's
// ElementCost); heavy ops and a narrowing input keep more in flight (bench/NOTES.md, "Vectors a
// thread by the op's cost", and "Figures once in source comments").
template <class In, class Out, class Op>
inline constexpr int kPackUnroll =
    Op::kIn == 1 && ((sizeof(In) >= 4 && sizeof(Out) >= 4) ||
                     (sizeof(In) == 2 && sizeof(Out) == 2 && element_cost<Op>() != ElementCost::heavy))
        ? 1
        : std::max(1, std::min(kUnroll<Op::kIn>, 32 / (std::max(Op::kIn, 1) * kPackSize<In, Out>)));

// Vectors a thread takes of a row in elementwise_rows_vectorized_kernel: kUnroll's, at most 32
// elements, for 4- and 8-byte elements. For 16-bit elements two, loaded as whole words
// (load_row_pack), where the op is arithmetic (ElementCost): the arithmetic ones gained, an op with
// a special function an element lost (bench/NOTES.md, "Broadcast rows of 16-bit elements"). Other
// narrow elements take one.
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
// the fewest lanes idle on a row of `vectors`, the largest of equals (fewer blocks a row): idle lanes,
// not the lane count, decided the speed (bench/NOTES.md, "Broadcast rows in lanes; ...").
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
// (0: no bound). At V = 8 (16- and 8-bit) with another input: one row and three blocks, no spills
// under NVRTC with the tile addressed in 32 bits (two rows spilled); four rows, unbounded,
// left two blocks an SM, a warp waiting on loads most of its cycles (bench/NOTES.md, "Transposed
// operands", "NVRTC's 64-bit shared pointers").
// The two at V = 8 are macros so that a device run can time others through BARACUDA_JIT_OPTIONS
// (-DBARACUDA_TRANSPOSE_ROWS8=4): the device code alone reads them.
#ifndef BARACUDA_TRANSPOSE_ROWS8
#define BARACUDA_TRANSPOSE_ROWS8 1
#endif
#ifndef BARACUDA_TRANSPOSE_BLOCKS8
#define BARACUDA_TRANSPOSE_BLOCKS8 3
#endif
template <class In, class Out>
inline constexpr int kTransposeRows = kTransposeSide<In, Out> == 8 ? BARACUDA_TRANSPOSE_ROWS8 : kTransposeSide<In, Out>;
template <class In, class Out, int kIn>
inline constexpr int kTransposeMinBlocks = kTransposeSide<In, Out> == 8 && kIn > 1 ? BARACUDA_TRANSPOSE_BLOCKS8 : 0;

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
// halve the threads an SM holds (bench/NOTES.md, "Figures once in source comments").
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

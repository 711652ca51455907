#pragma once
// The CPU elementwise launcher: OpenMP across chunks of elements. The contiguous path runs a chunk
// in blocks through buffers of the compute type, each step a loop the compiler vectorizes, built per
// ISA; the strided one walks offsets with the shared Walker.
#include <algorithm>
#include <type_traits>

#include "common/elementwise.hpp"
#include "cpu/parallel.hpp"
#include "cpu/vector_math.hpp"
#include "ops/elementwise_layout.hpp"

namespace baracuda::detail::cpu {

// Elements of one work item (a row's share of it on the strided path).
inline constexpr int64_t kChunk = 4096;
// Elements of one block of the contiguous path: its operands in Acc fit in L1.
inline constexpr int kBlock = 256;

// Everything the function calls inlined into it (GCC left f32 gelu's backward a call: scalar, of the
// baseline ISA, 40x slower).
#if defined(__GNUC__)
#define BARACUDA_CPU_FLATTEN __attribute__((flatten))
#else
#define BARACUDA_CPU_FLATTEN
#endif

// Elements [begin, end) of contiguous operands. Where In and Out are the compute type (f32, f64),
// one loop over the elements (through buffers, f32 lerp and its backward ran 3x slower), `omp simd`
// so that GCC needs no runtime alias checks (it gives up past 10 of them: tensor-weight lerp's
// backward, 7 operands, stayed scalar). Otherwise (16-bit types, casts) a block at a time: the inputs
// converted into buffers of Acc (16-bit conversions in integer form: they vectorize), the functor
// applied over the block, the results converted into the outputs; these loops GCC vectorizes unasked,
// and `omp simd` would make the functor's x and y (and a 16-bit store's temporary) arrays of one slot
// per lane, read back by gathers: scalar loops. Either way the functor's math is inlined (f32 exp /
// erf / ... being simd_math's vectorizable ones). An output may be an input exactly: each element
// (each block) reads all its inputs before it writes.
template <class In, class Out, class Op, class First>
BARACUDA_CPU_CLONES BARACUDA_CPU_FLATTEN void apply_contiguous_chunk(
    const Op& op, const Operands<In, Out, Op::kIn, Op::kOut, First>& p, int64_t begin, int64_t end) {
  using Acc = typename Op::Acc;
  if constexpr (std::is_same_v<In, Acc> && std::is_same_v<Out, Acc> && std::is_same_v<First, In>) {
    // Local copies: the stores cannot change the pointers or the functor's fields (through a
    // reference GCC reloaded a ternary functor's scalars every element and did not vectorize).
    const Operands<In, Out, Op::kIn, Op::kOut> q = p;
    const Op f = op;
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) apply_contiguous(f, q, i);
  } else {
    const Op f = op;
    Acc in[kSlots<Op::kIn>][kBlock], out[Op::kOut][kBlock];
    for (int64_t b = begin; b < end; b += kBlock) {
      const int n = static_cast<int>(std::min<int64_t>(kBlock, end - b));
      const Acc* from_block[kSlots<Op::kIn>];  // input k's block in Acc: its own values, or in[k]
      for (int k = 0; k < Op::kIn; ++k) {
        Acc* __restrict to = in[k];
        from_block[k] = to;
        if (std::is_same_v<In, Acc> && (std::is_same_v<First, In> || k > 0)) {
          // (an f32 input beside a bool one: read in place; a copy's rep movsq took 40% of the time)
          from_block[k] = reinterpret_cast<const Acc*>(p.in[k]) + b;
          continue;
        }
        if (!std::is_same_v<First, In> && k == 0) {
          if constexpr (std::is_same_v<First, bool>) {  // as bytes: GCC does not vectorize loads of bool
            const uint8_t* __restrict from = reinterpret_cast<const uint8_t*>(p.in[0]) + b;
            for (int j = 0; j < n; ++j) to[j] = static_cast<Acc>(from[j] != 0);
          } else {
            const First* __restrict from = reinterpret_cast<const First*>(p.in[0]) + b;
            for (int j = 0; j < n; ++j) to[j] = convert<Acc>(from[j]);
          }
          continue;
        }
        const In* __restrict from = p.in[k] + b;
        for (int j = 0; j < n; ++j) to[j] = convert<Acc>(from[j]);
      }
      // Outputs of the compute type are written in place (a copy from the block, GCC's rep movsq,
      // took 22% of a mixed-dtype add and where's f32 forward ran at half JAX's speed).
      Acc* to_block[Op::kOut];
      for (int k = 0; k < Op::kOut; ++k) {
        if constexpr (std::is_same_v<Out, Acc>)
          to_block[k] = p.out[k] + b;
        else
          to_block[k] = out[k];
      }
      for (int j = 0; j < n; ++j) {
        Acc x[kSlots<Op::kIn>], y[Op::kOut];
        for (int k = 0; k < Op::kIn; ++k) x[k] = from_block[k][j];
        f(x, y);
        for (int k = 0; k < Op::kOut; ++k) to_block[k][j] = y[k];
      }
      if constexpr (!std::is_same_v<Out, Acc>) {
        for (int k = 0; k < Op::kOut; ++k) {
          const Acc* __restrict from = out[k];
          Out* __restrict to = p.out[k] + b;
          for (int j = 0; j < n; ++j) to[j] = convert<Out>(from[j]);
        }
      }
    }
  }
}

// Runs op over the tensors, inputs of element type In (the first of First) and outputs of Out.
template <class In, class Out = In, class First = In, class Op, int kIn, int kOut>
Status run_elementwise(const Op& op, const ElementwiseTensors<kIn, kOut>& t) {
  static_assert(Op::kIn == kIn && Op::kOut == kOut, "functor arity must match the tensors");
  Operands<In, Out, kIn, kOut, First> p{};
  for (int k = 0; k < kIn; ++k) p.in[k] = static_cast<const In*>(t.in[k]);
  for (int k = 0; k < kOut; ++k) p.out[k] = static_cast<Out*>(t.out[k]);
  const int64_t n = t.shape.numel();
  if (t.path != ElementwisePath::contiguous) {
    const Strides* strides[kIn + kOut];
    for (int k = 0; k < kIn; ++k) strides[k] = &t.in_strides[k];
    for (int k = 0; k < kOut; ++k) strides[kIn + k] = &t.out_strides[k];
    const Walker<kIn + kOut> walker = make_walker<kIn + kOut>(t.shape, strides);
    // Row by row (the innermost collapsed dim), in chunks so that one long row still spreads over
    // the cores: the offsets are computed once per chunk, then stepped by the inner strides.
    const int64_t inner = walker.inner_size();
    const int64_t chunks_per_row = (inner + kChunk - 1) / kChunk;
    const int64_t chunks = n / inner * chunks_per_row;
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
    for (int64_t c = 0; c < chunks; ++c) {
      int64_t base[kIn + kOut];
      walker.offsets(c / chunks_per_row, base, walker.rank - 1);
      const int64_t begin = (c % chunks_per_row) * kChunk, end = std::min(inner, begin + kChunk);
      for (int64_t i = begin; i < end; ++i) {
        int64_t off[kIn + kOut];
        for (int k = 0; k < kIn + kOut; ++k) off[k] = base[k] + i * walker.inner_stride(k);
        apply_at(op, p, off);
      }
    }
    return Status::ok();
  }
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (int64_t c = 0; c < chunks; ++c) apply_contiguous_chunk(op, p, c * kChunk, std::min(n, (c + 1) * kChunk));
  return Status::ok();
}

// Kept elements a work item of the row-wise reduction sums at once.
inline constexpr int kReductionBlock = 256;

// A BroadcastReduction (common/broadcast_reduction.hpp): items in parallel, then each output
// sums its splits in order. Where the kept dims are innermost (b = bias[D] over [N, D]), an item's
// column walk would touch one element a cache line: a work item instead takes a block of up to
// kReductionBlock neighbouring kept elements of one split and walks the reduced rows once, each
// element's terms still summed in the item's order (rows split, split + S, ...): the same bits.
// (f32 [1024, 4096] * b[4096] backward on one core: 31 ms column by column.)
template <class Reduction>
Status run_split_reduction(const Reduction& k) {
  if (!k.lanes_on_split && k.kept.rank > 0 && k.m > 0 && k.r > 1) {
    constexpr int NT = Reduction::NT;
    using Acc = typename Reduction::Acc;
    const int64_t inner = k.kept.inner_size();
    const int64_t per_row = (inner + kReductionBlock - 1) / kReductionBlock;
    const int64_t blocks = k.m / inner * per_row;
#pragma omp parallel for schedule(static) if (k.m * k.r > kParallelThreshold)
    for (int64_t t = 0; t < blocks * k.s; ++t) {
      const int64_t split = t / blocks, b = t % blocks;
      const int64_t first = (b % per_row) * kReductionBlock;
      const int64_t j0 = b / per_row * inner + first;
      const int len = static_cast<int>(std::min<int64_t>(kReductionBlock, inner - first));
      int64_t base[NT];
      k.kept.offsets(j0, base);
      Acc sums[kReductionBlock] = {};
      for (int64_t ri = split; ri < k.r; ri += k.s) {
        int64_t row[NT];
        k.reduced.offsets(ri, row);
        for (int q = 0; q < NT; ++q) row[q] += base[q];
        for (int e = 0; e < len; ++e) {
          int64_t off[NT];
          for (int q = 0; q < NT; ++q) off[q] = row[q] + e * k.kept.inner_stride(q);
          sums[e] += k.term_at(off);
        }
      }
      for (int e = 0; e < len; ++e) {
        if (k.s == 1) {
          int64_t off[NT];
          for (int q = 0; q < NT; ++q) off[q] = base[q] + e * k.kept.inner_stride(q);
          k.store(off, sums[e]);
        } else {
          k.partial[split * k.m + j0 + e] = sums[e];
        }
      }
    }
  } else {
    const int64_t items = k.items();
#pragma omp parallel for schedule(static) if (items * k.r / k.s > kParallelThreshold)
    for (int64_t t = 0; t < items; ++t) k.item(t);
  }
  if (k.s > 1) {
#pragma omp parallel for schedule(static) if (k.m * k.s > kParallelThreshold)
    for (int64_t j = 0; j < k.m; ++j) k.finalize(j);
  }
  return Status::ok();
}

}  // namespace baracuda::detail::cpu

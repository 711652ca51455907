// CUDA kernels of the scans, over any Step of ops/scan_problem.hpp (the forward's maths, the
// backward's affine maps), compiled at select (NVRTC; cuda/scan.cpp launches them). A block is `lanes` units of lines
// by `slices` threads along them (scan_geometry); it walks its piece of the lines a tile at a time:
//   1. each thread loads `items` consecutive elements of each line of its unit (16-byte loads where
//      the views allow) and folds them in order;
//   2. a scan over the slices of each lane (warp shuffles, then the warps' totals through shared
//      memory, in a fixed order) gives each thread the state before its run, the carry from the
//      earlier tiles included;
//   3. each thread folds its run again from there, writing every element's output.
// Pieces of a split line (rows: a warp a piece): a first launch writes each piece's total to the
// workspace, last piece first (so that the second launch finds the first pieces in L2), `partials`
// turns the totals of each line into exclusive prefixes (the same scan over threads), and the second
// launch starts each piece from its prefix. Every order is fixed: the same bits on every run.
// cummax / cummin write their indices 16 bytes at a time where the view allows (4x fewer sectors
// than 8-byte stores 128 bytes apart).
#include "cuda/common/reduce.cuh"
#include "cuda/common/vector.cuh"
#include "ops/scan_problem.hpp"

namespace baracuda::detail::cuda::scan {

// The states of a thread's unit of lines, combined line by line.
template <class State, int kWidth>
struct Pack {
  State s[kWidth];
};

template <class Math, class P>
__device__ __forceinline__ P combine(const Math& m, const P& a, const P& b) {
  P r;
#pragma unroll
  for (int j = 0; j < static_cast<int>(sizeof(P::s) / sizeof(P::s[0])); ++j) r.s[j] = m.combine(a.s[j], b.s[j]);
  return r;
}

// Threads of a block as `lanes` independent scans of `slices` threads each, in the order `rank`
// (the slice, or its mirror for a descending walk). by_slice: a lane's slices are consecutive threads
// (rows); otherwise its slices are `lanes` threads apart (columns).
struct Scanner {
  int lanes, slices, lane, rank;
  bool by_slice, down;

  // The states of this thread's run (`mine`) become the state before it, starting from `carry`,
  // which becomes the lane's state after all of them. Every thread of the block calls it.
  template <class Math, class P>
  __device__ P exclusive(const Math& m, const P& mine, P& carry, P* scratch) const {
    const int step = by_slice ? 1 : lanes;
    const int warp_slices = by_slice ? min(32, slices) : 32 / lanes;  // a lane's slices in one warp
    const int in_warp = rank % warp_slices, group = rank / warp_slices, groups = slices / warp_slices;
    auto from = [&](const P& v, int d) {  // the value of the thread d ranks earlier
      const unsigned delta = static_cast<unsigned>(d * step);
      return shuffle_words(v, [&](unsigned w) {
        return down ? __shfl_down_sync(0xffffffffu, w, delta) : __shfl_up_sync(0xffffffffu, w, delta);
      });
    };
    P inclusive = mine;
    for (int d = 1; d < warp_slices; d *= 2) {
      const P other = from(inclusive, d);
      if (in_warp >= d) inclusive = combine(m, other, inclusive);
    }
    P before = from(inclusive, 1);
    P prefix = carry;
    if (groups > 1) {
      __syncthreads();  // the previous call's readers are done
      if (in_warp == warp_slices - 1) scratch[group * lanes + lane] = inclusive;
      __syncthreads();
      for (int k = 0; k < groups; ++k) {
        const P total = scratch[k * lanes + lane];
        if (k < group) prefix = combine(m, prefix, total);
        carry = combine(m, carry, total);
      }
    } else {
      // One warp holds each lane's slices (by_slice: `slices` consecutive threads): the last rank's
      // inclusive state is the lane's total.
      const int last = (static_cast<int>(threadIdx.x) % 32) / warp_slices * warp_slices + (down ? 0 : warp_slices - 1);
      carry =
          combine(m, carry, shuffle_words(inclusive, [&](unsigned w) { return __shfl_sync(0xffffffffu, w, last); }));
    }
    return in_warp == 0 ? prefix : combine(m, prefix, before);
  }
};

template <class Step, bool kColumns>
struct Layout {
  using X = typename Step::Input;
  static constexpr int kVector = 16 / static_cast<int>(sizeof(X));
  static constexpr int kWidth = kColumns ? kVector : 1;
  static constexpr int kItems =
      kColumns ? (kVector <= 4 ? 4 : 2)
               : scan_row_items(Step::kOutput == kScanDx || Step::kIndexed, kVector);  // as scan_geometry
  using P = Pack<typename Step::State, kWidth>;
};

// Writes the indices of kCount consecutive elements from `offset`, in 16-byte stores where they
// make whole ones (the view allows them: ScanHooks::vectorizable).
template <int kCount>
__device__ __forceinline__ void store_indices(void* base, DType dtype, int64_t offset, const int64_t (&index)[kCount]) {
  if (dtype == DType::i32 && kCount % 4 == 0) {
#pragma unroll
    for (int v = 0; v < kCount / 4; ++v) {
      Vec16<int32_t> raw;
#pragma unroll
      for (int c = 0; c < 4; ++c) raw.v[c] = static_cast<int32_t>(index[v * 4 + c]);
      store16(static_cast<int32_t*>(base) + offset + v * 4, raw);
    }
  } else if (dtype == DType::i64 && kCount % 2 == 0) {
#pragma unroll
    for (int v = 0; v < kCount / 2; ++v)
      store16(static_cast<int64_t*>(base) + offset + v * 2, Vec16<int64_t>{{index[v * 2], index[v * 2 + 1]}});
  } else {
    for (int c = 0; c < kCount; ++c) store_index(base, dtype, offset + c, index[c]);
  }
}

// One pass over every block's piece of its lines: totals (the first launch of a split) or outputs.
template <class Step, bool kColumns>
// The blocks an SM holds, as scan_geometry counts them (rows 80 registers, columns 128).
__global__ void __launch_bounds__(kScanBlock, scan_blocks_per_sm(kColumns ? ScanVariant::columns : ScanVariant::rows))
    scan_kernel(const ScanProblem p, bool emit) {
  using L = Layout<Step, kColumns>;
  using X = typename L::X;
  using A = acc_t<X>;
  using P = typename L::P;
  using Element = typename Step::Element;
  constexpr int kWidth = L::kWidth, kItems = L::kItems, kVector = L::kVector;
  __shared__ P scratch[kScanBlock];

  const Step step{p};
  const ScanGeometry& g = p.geometry;
  const int tid = static_cast<int>(threadIdx.x);
  const bool down = descending(p);
  const int lane = kColumns ? tid % g.lanes : tid / g.slices, slice = kColumns ? tid / g.lanes : tid % g.slices;
  const Scanner scanner{g.lanes, g.slices, lane, down ? g.slices - 1 - slice : slice, !kColumns, down};
  // The block's piece, or with piece_lanes the lane's. The first pass takes the pieces last to
  // first, so that the second finds the first ones in L2. A lane past the last piece has no work.
  const int64_t rank = g.piece_lanes ? int64_t{blockIdx.y} * g.lanes + lane : blockIdx.y;
  const int64_t piece = emit ? rank : g.pieces - 1 - rank;
  const bool some = piece >= 0 && piece < g.pieces;
  const int64_t lo = some ? piece * g.piece : 0, hi = some ? std::min(p.n, lo + g.piece) : 0;
  const int64_t tiles = ceil_div(hi - lo, g.tile);
  const int vector_view = step.vector_view();
  const bool vector_in = vector_view >= 0 && p.vector[vector_view], vector_out = p.vector[Step::kOutput];
  const bool vector_indices = Step::kIndexed && p.indices && p.vector[kScanIndices];
  // Calls f(m) for the thread's items in the walk's order, m a constant after unrolling (an index
  // computed from `down` would put the items' arrays in local memory).
  auto in_order = [&](auto&& f) {
    if (down) {
#pragma unroll
      for (int m = kItems - 1; m >= 0; --m) f(m);
    } else {
#pragma unroll
      for (int m = 0; m < kItems; ++m) f(m);
    }
  };

  for (int64_t block = blockIdx.x; block < g.line_blocks; block += gridDim.x) {
    const int64_t first = (g.piece_lanes ? block : block * g.lanes + lane) * g.unit;
    const int width = some ? static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(g.unit, p.lines - first))) : 0;
    int64_t base[kScanTensors] = {};
    if (width > 0) p.walk.offsets(first, base);
    auto line_of = [&](int j, int64_t(&off)[kScanTensors]) {
      for (int t = 0; t < kScanTensors; ++t) off[t] = base[t] + j * p.walk.inner_stride(t);
    };
    P carry;
    for (int j = 0; j < kWidth; ++j)
      carry.s[j] = emit && g.pieces > 1 && j < width
                       ? static_cast<const typename Step::State*>(p.partials)[(first + j) * g.pieces + piece]
                       : step.math.identity();

    for (int64_t k = 0; k < tiles; ++k) {
      const int64_t i0 = lo + (down ? tiles - 1 - k : k) * g.tile + int64_t{slice} * kItems;
      // 1. Load.
      Element e[kItems][kWidth];
      // Every element of the thread's unit there (a lane past the last line has none).
      const bool whole = kColumns ? width == kWidth : width > 0 && i0 + kItems <= hi;
      if (vector_in && whole) {
        const X* in = static_cast<const X*>(vector_view == kScanX ? p.x : p.dout) + base[vector_view];
#pragma unroll
        for (int v = 0; v < (kColumns ? kItems : kItems / kVector); ++v) {
          if (kColumns && i0 + v >= hi) break;
          const Vec16<X> raw = load16(in + (kColumns ? (i0 + v) * p.along[vector_view] : i0 + v * kVector));
#pragma unroll
          for (int c = 0; c < kVector; ++c) {
            const int m = kColumns ? v : v * kVector + c, j = kColumns ? c : 0;
            e[m][j] = step.element_from(to_acc<A>(raw.v[c]), i0 + m);
          }
        }
      } else {
#pragma unroll
        for (int m = 0; m < kItems; ++m)
#pragma unroll
          for (int j = 0; j < kWidth; ++j)
            if (j < width && i0 + m < hi) {
              int64_t off[kScanTensors];
              line_of(j, off);
              e[m][j] = step.element(off, i0 + m);
            }
      }
      // 2. The run's states, then the state before it.
      P mine;
#pragma unroll
      for (int j = 0; j < kWidth; ++j) {
        mine.s[j] = step.math.identity();
        in_order([&](int m) {
          if (j < width && i0 + m < hi) step.fold(mine.s[j], e[m][j], i0 + m);
        });
      }
      P state = scanner.exclusive(step.math, mine, carry, scratch);
      if (!emit) continue;
      // 3. Fold again from there, writing each element's output.
      A result[kItems][kWidth];
      int64_t indices[Step::kIndexed ? kItems : 1][kWidth];  // cummax / cummin
#pragma unroll
      for (int j = 0; j < kWidth; ++j)
        in_order([&](int m) {
          if (j < width && i0 + m < hi) {
            step.fold(state.s[j], e[m][j], i0 + m);
            result[m][j] = step.output(state.s[j], e[m][j]);
            int64_t off[kScanTensors];
            line_of(j, off);
            if (!(vector_out && whole)) step.emit(off, i0 + m, state.s[j], e[m][j]);
            if constexpr (Step::kIndexed) {
              indices[m][j] = step.index_of(state.s[j]);
              if (!(vector_indices && whole)) step.emit_index(off, i0 + m, state.s[j]);
            }
          }
        });
      if constexpr (Step::kIndexed)
        if (vector_indices && whole) {
#pragma unroll
          for (int v = 0; v < (kColumns ? kItems : kItems / kVector); ++v) {
            int64_t run[kVector];  // the indices of the 16-byte access v of the values
#pragma unroll
            for (int c = 0; c < kVector; ++c) run[c] = kColumns ? indices[v][c] : indices[v * kVector + c][0];
            if (!kColumns || i0 + v < hi)
              store_indices(p.indices, p.index_dtype,
                            base[kScanIndices] + (kColumns ? (i0 + v) * p.along[kScanIndices] : i0 + v * kVector), run);
          }
        }
      if (vector_out && whole) {
        X* out = static_cast<X*>(Step::kOutput == kScanOut ? p.out : p.dx) + base[Step::kOutput];
#pragma unroll
        for (int v = 0; v < (kColumns ? kItems : kItems / kVector); ++v) {
          if (kColumns && i0 + v >= hi) break;
          Vec16<X> raw;
#pragma unroll
          for (int c = 0; c < kVector; ++c) {
            const A value = kColumns ? result[v][c] : result[v * kVector + c][0];
            if constexpr (std::is_arithmetic_v<X>)
              raw.v[c] = static_cast<X>(value);
            else
              raw.v[c] = X(static_cast<float>(value));
          }
          store16(out + (kColumns ? (i0 + v) * p.along[Step::kOutput] : i0 + v * kVector), raw);
        }
      }
    }
    if (!emit && scanner.rank == 0)
      for (int j = 0; j < width; ++j)
        static_cast<typename Step::State*>(p.partials)[(first + j) * g.pieces + piece] = carry.s[j];
  }
}

// The pieces' totals of each line become exclusive prefixes, in the walk's order: `slices` threads
// a line, each over `per` consecutive pieces.
template <class Step>
__global__ void __launch_bounds__(kScanBlock) partials_kernel(const ScanProblem p, int slices, int64_t per) {
  using State = typename Step::State;
  using P = Pack<State, 1>;
  __shared__ P scratch[kScanBlock];
  const Step step{p};
  const int lanes = kScanBlock / slices, lane = static_cast<int>(threadIdx.x) / slices;
  const int slice = static_cast<int>(threadIdx.x) % slices;
  const bool down = descending(p);
  const Scanner scanner{lanes, slices, lane, slice, true, false};
  const int64_t pieces = p.geometry.pieces, blocks = ceil_div(p.lines, lanes);
  for (int64_t block = blockIdx.x; block < blocks; block += gridDim.x) {
    const int64_t line = block * lanes + lane;
    State* totals = static_cast<State*>(p.partials) + (line < p.lines ? line * pieces : 0);
    // Rank r of the walk is piece r, or pieces - 1 - r for a descending walk.
    auto at = [&](int64_t r) -> State& { return totals[down ? pieces - 1 - r : r]; };
    const int64_t begin = slice * per, end = line < p.lines ? std::min(pieces, begin + per) : 0;
    P mine{{step.math.identity()}};
    for (int64_t r = begin; r < end; ++r) mine.s[0] = step.math.combine(mine.s[0], at(r));
    P carry{{step.math.identity()}};
    P before = scanner.exclusive(step.math, mine, carry, scratch);
    for (int64_t r = begin; r < end; ++r) {
      const State total = at(r);
      at(r) = before.s[0];
      before.s[0] = step.math.combine(before.s[0], total);
    }
  }
}

}  // namespace baracuda::detail::cuda::scan

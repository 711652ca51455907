// CUDA kernels of the scans, over any Step of ops/scan_problem.hpp (the forward's maths, the
// backward's affine maps). A block is `lanes` units of lines by `slices` threads along them
// (scan_geometry); it walks its piece of the lines a tile at a time:
//   1. each thread loads `items` consecutive elements of each line of its unit (16-byte loads where
//      the views allow) and folds them in order;
//   2. a scan over the slices of each lane (warp shuffles, then the warps' totals through shared
//      memory, in a fixed order) gives each thread the state before its run, the carry from the
//      earlier tiles included;
//   3. each thread folds its run again from there, writing every element's output.
// Split lines (scan_geometry): a block scans one piece (one tile) of its lines, taking the pieces
// in the walk's order from a ticket counter. The pieces' aggregates form a Fenwick tree: piece c
// publishes the aggregate of pieces [c + 1 - 2^k, c], k the trailing ones of c, combining the ones
// published by pieces c - 1, c - 2, ..., c - 2^(k-1) with its own; its prefix combines, left to
// right, those of the aligned blocks that [0, c) splits into (one per bit of c). Each tree's shape
// and each combine's order depend on c alone, so every run gives the same bits, and no piece waits
// on another's prefix (the counter hands out pieces; no atomic touches a value).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>

#include "cuda/common/check.cuh"
#include "cuda/common/reduce.cuh"
#include "cuda/common/vector.cuh"
#include "ops/scan_problem.hpp"

namespace baracuda::detail::cuda {
namespace scan {
namespace {

using Half = __half;
using BFloat16 = __nv_bfloat16;

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

// The workspace of split lines (ScanGeometry): a ticket counter, a flag per block of lines and
// piece, then every line's tree aggregate of each piece.

// The flags' memory order: a piece's states, then (one lane, after the warp's barrier) its flag
// with release; flags read relaxed while waiting, then one acquire fence before the states.
__device__ __forceinline__ unsigned load_relaxed(const unsigned* flag) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
  return v;
}
__device__ __forceinline__ void store_release(unsigned* flag, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(v) : "memory");
}
__device__ __forceinline__ void fence_acquire() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
// A state another block published, from L2 (never a stale L1 line).
template <class T>
__device__ __forceinline__ T load_published(const T* from) {
  static_assert(sizeof(T) % 4 == 0, "states are whole 32-bit words");
  unsigned words[sizeof(T) / 4];
#pragma unroll
  for (int w = 0; w < static_cast<int>(sizeof(T) / 4); ++w)
    words[w] = __ldcg(reinterpret_cast<const unsigned*>(from) + w);
  T out;
  memcpy(&out, words, sizeof(T));
  return out;
}

template <class State>
struct Chain {
  unsigned long long* counter;
  unsigned* flags;  // line blocks x pieces: the piece's tree aggregates are out
  State* trees;     // lines x pieces
  int64_t pieces;

  __device__ explicit Chain(const ScanProblem& p) : pieces(p.geometry.pieces) {
    char* base = static_cast<char*>(p.chain);
    counter = reinterpret_cast<unsigned long long*>(base);
    flags = reinterpret_cast<unsigned*>(base + 16);
    trees = reinterpret_cast<State*>(base + p.geometry.flag_bytes);
  }

  // The next piece of work for the block (every thread calls it; `ticket` is shared).
  __device__ int64_t take(int64_t& ticket) const {
    __syncthreads();  // every thread has read the last one
    if (threadIdx.x == 0) ticket = static_cast<int64_t>(atomicAdd(counter, 1ull));
    __syncthreads();
    return ticket;
  }

  // Warp 0: until the pieces each lane names (none: -1) have their tree aggregates out.
  __device__ static void wait_for(const unsigned* flag, int64_t piece) {
    while (!__all_sync(0xffffffffu, piece < 0 || load_relaxed(flag + piece) != 0)) __nanosleep(32);
    __syncwarp();
    fence_acquire();
  }

  // Piece c of the block's lines: every thread calls it with its lane's aggregate of the piece and
  // gets the lane's prefix, the combine of the earlier pieces (`lanes` units of `unit` lines a
  // block). Thread t < lanes of warp 0 (lane t: split rows have one lane) does lane t's lines.
  template <class Math, class P>
  __device__ P prefix(const Math& m, const P& aggregate, int64_t block, int64_t c, int64_t lines, int lanes, int unit,
                      int lane, P* shared) const {
    constexpr int kWidth = sizeof(P::s) / sizeof(P::s[0]);
    if (threadIdx.x < 32) {
      const int t = static_cast<int>(threadIdx.x);
      const unsigned* flag = flags + block * pieces;
      const int64_t line0 = (block * lanes + t) * unit;
      const int count = t < lanes ? static_cast<int>(std::clamp<int64_t>(lines - line0, 0, unit)) : 0;
      auto tree = [&](int j, int64_t piece) { return load_published(trees + (line0 + j) * pieces + piece); };
      // 1. The tree aggregate of pieces [c + 1 - 2^k, c]: those of c - 2^i, i < k, before its own.
      const int k = __ffsll(static_cast<long long>(c + 1)) - 1;
      for (int i = t; i < 32 * ((k + 31) / 32); i += 32) wait_for(flag, i < k ? c - (int64_t{1} << i) : -1);
      for (int j = 0; j < count; ++j) {
        typename Math::State s = aggregate.s[j];
        for (int i = 0; i < k; ++i) s = m.combine(tree(j, c - (int64_t{1} << i)), s);
        trees[(line0 + j) * pieces + c] = s;
      }
      __syncwarp();
      if (t == 0) store_release(flags + block * pieces + c, 1);
      // 2. The prefix: [0, c) as aligned blocks, one per bit of c from the top, each the tree
      // aggregate of its last piece; lane t waits for the t-th.
      for (int n0 = 0; n0 < __popcll(static_cast<unsigned long long>(c)); n0 += 32) {
        int64_t start = 0, mine = -1;
        for (int b = 62, n = 0; b >= 0; --b)
          if ((c >> b) & 1) {
            if (n++ == n0 + t) mine = start + (int64_t{1} << b) - 1;
            start += int64_t{1} << b;
          }
        wait_for(flag, mine);
      }
      P p;
      for (int j = 0; j < kWidth; ++j) p.s[j] = m.identity();
      for (int j = 0; j < count; ++j) {
        bool first = true;
        int64_t start = 0;
        for (int b = 62; b >= 0; --b)
          if ((c >> b) & 1) {
            const typename Math::State s = tree(j, start + (int64_t{1} << b) - 1);
            p.s[j] = first ? s : m.combine(p.s[j], s);
            first = false;
            start += int64_t{1} << b;
          }
      }
      if (t < lanes) shared[t] = p;
    }
    __syncthreads();
    return shared[lane];  // (piece 0's: unused)
  }
};

template <class Step, bool kColumns>
struct Layout {
  using X = typename Step::Input;
  static constexpr int kVector = 16 / static_cast<int>(sizeof(X));
  static constexpr int kWidth = kColumns ? kVector : 1;
  static constexpr int kItems =
      kColumns ? (kVector <= 4 ? 4 : 2) : scan_row_items(Step::kOutput == kScanDx, kVector);  // as scan_geometry
  using P = Pack<typename Step::State, kWidth>;
};

// The scan of every block's lines, or (kChained) of its piece of them, taken in order. Two kernels:
// the chain's registers would spill the arrays of the other's tiles.
template <class Step, bool kColumns, bool kChained>
// At least 3 blocks an SM on rows (80 registers), 2 on columns (128), for loads in flight.
__global__ void __launch_bounds__(kScanBlock, scan_blocks_per_sm(kColumns ? ScanVariant::columns : ScanVariant::rows))
    scan_kernel(const ScanProblem p) {
  using L = Layout<Step, kColumns>;
  using X = typename L::X;
  using A = acc_t<X>;
  using P = typename L::P;
  using Element = typename Step::Element;
  constexpr int kWidth = L::kWidth, kItems = L::kItems, kVector = L::kVector;
  __shared__ P scratch[kScanBlock];
  __shared__ P lane_prefix[32];
  __shared__ int64_t ticket;

  const Step step{p};
  const ScanGeometry& g = p.geometry;
  const int tid = static_cast<int>(threadIdx.x);
  const bool down = descending(p);
  const int lane = kColumns ? tid % g.lanes : tid / g.slices, slice = kColumns ? tid / g.lanes : tid % g.slices;
  const Scanner scanner{g.lanes, g.slices, lane, down ? g.slices - 1 - slice : slice, !kColumns, down};
  const int vector_view = step.vector_view();
  const bool vector_in = vector_view >= 0 && p.vector[vector_view], vector_out = p.vector[Step::kOutput];
  const int64_t units = ceil_div(p.lines, p.unit), line_blocks = ceil_div(units, g.lanes);
  const Chain<typename Step::State> chain(p);
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

  // Work item = the piece's rank in the walk x line_blocks + the block of lines.
  for (int64_t item = kChained ? chain.take(ticket) : blockIdx.x; item < line_blocks * g.pieces;
       item = kChained ? chain.take(ticket) : item + gridDim.x) {
    const int64_t block = item % line_blocks, c = item / line_blocks, piece = down ? g.pieces - 1 - c : c;
    const int64_t lo = piece * g.piece, hi = std::min(p.n, lo + g.piece), tiles = ceil_div(hi - lo, g.tile);
    const int64_t first = (block * g.lanes + lane) * p.unit;
    const int width = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(p.unit, p.lines - first)));
    int64_t base[kScanTensors] = {};
    if (width > 0) p.walk.offsets(first, base);
    auto line_of = [&](int j, int64_t(&off)[kScanTensors]) {
      for (int t = 0; t < kScanTensors; ++t) off[t] = base[t] + j * p.walk.inner_stride(t);
    };
    P carry;
    for (int j = 0; j < kWidth; ++j) carry.s[j] = step.math.identity();

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
      if constexpr (kChained) {  // one tile: carry is its aggregate
        const P before = chain.prefix(step.math, carry, block, c, p.lines, g.lanes, p.unit, lane, lane_prefix);
        if (c > 0) state = combine(step.math, before, state);
      }
      // 3. Fold again from there, writing each element's output.
      A result[kItems][kWidth];
#pragma unroll
      for (int j = 0; j < kWidth; ++j)
        in_order([&](int m) {
          if (j < width && i0 + m < hi) {
            step.fold(state.s[j], e[m][j], i0 + m);
            result[m][j] = step.output(state.s[j], e[m][j]);
            int64_t off[kScanTensors];
            line_of(j, off);
            step.emit_index(off, i0 + m, state.s[j]);
            if (!(vector_out && whole)) step.emit(off, i0 + m, state.s[j], e[m][j]);
          }
        });
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
  }
}

unsigned capped(int64_t blocks) { return static_cast<unsigned>(std::min<int64_t>(blocks, INT_MAX)); }

template <class Step, bool kColumns>
Status run(const LaunchContext& ctx, const ScanProblem& p) {
  cudaStream_t stream = native(ctx.stream);
  const ScanGeometry& g = p.geometry;
  const int64_t line_blocks = ceil_div(ceil_div(p.lines, p.unit), g.lanes);
  const unsigned grid = capped(line_blocks * g.pieces);
  if (g.pieces == 1) {
    scan_kernel<Step, kColumns, false><<<grid, kScanBlock, 0, stream>>>(p);
  } else {  // tickets and flags from 0
    if (Status s = cuda_status(cudaMemsetAsync(p.chain, 0, static_cast<size_t>(g.flag_bytes), stream), "scan flags");
        !s)
      return s;
    scan_kernel<Step, kColumns, true><<<grid, kScanBlock, 0, stream>>>(p);
  }
  return last_launch_status("scan");
}

}  // namespace
}  // namespace scan

Status launch(const LaunchContext& ctx, const ScanProblem& p) {
  if (p.lines == 0 || p.n == 0) return Status::ok();
  return dispatch_scan<scan::Half, scan::BFloat16>(p, [&](auto step) {
    using Step = typename decltype(step)::type;
    return p.variant == ScanVariant::columns ? scan::run<Step, true>(ctx, p) : scan::run<Step, false>(ctx, p);
  });
}

}  // namespace baracuda::detail::cuda

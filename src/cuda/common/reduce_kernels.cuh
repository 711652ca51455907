#pragma once
// CUDA kernels of the reduction family, over any Math of src/common/reduce_math.hpp, compiled at
// select (NVRTC; cuda/reduce.cpp launches them). Each output's elements are folded into states in a
// fixed order, the states combined in a fixed tree:
//   rows:       a group of `group` threads per output (a sub-warp, a warp, or a block), thread
//               `lane` folding vectors lane, lane + group, ... of the output's elements, element j of
//               a vector into state j % kRowSlots (independent chains in flight); then the thread's
//               states pairwise, then the group's (common/reduce.cuh). Without 16-byte loads (strided
//               elements) the threads read the same elements one at a time: the same order, the same
//               bits.
//   split_rows: the rows kernel over pieces of each output's elements, a block per piece; the pieces'
//               states go to the workspace and a second kernel folds them in order.
//   columns:    `lanes` threads across units of outputs (a 16-byte vector of neighbouring outputs, or
//               one), `slices` threads along the reduced elements (slice s folds elements s, s +
//               slices, ...), the slices' states combined pairwise in shared memory; long walks split
//               over blocks as split_rows.
// The backward's statistic runs through the same kernels into the workspace; then `map` writes dx.
#include "cuda/common/reduce.cuh"
#include "cuda/common/vector.cuh"
#include "ops/reduce_problem.hpp"

namespace baracuda::detail::cuda::reduce {

// Where a whole state goes: the forward's outputs, or the backward's statistics.
struct OutputSink {
  template <class Math>
  __device__ void operator()(const ReduceProblem& p, const Math& m, int64_t, const int64_t (&off)[3],
                             const typename Math::State& s) const {
    store_output<half, bfloat16>(p, off, m.finish(s));
  }
};
struct StatsSink {
  template <class Math>
  __device__ void operator()(const ReduceProblem& p, const Math& m, int64_t o, const int64_t (&)[3],
                             const typename Math::State& s) const {
    static_cast<GradStat<typename Math::Acc>*>(p.stats)[o] = m.stat(s);
  }
};

// Element e of an output's reduced set, from the output's first element.
__device__ __forceinline__ int64_t element_offset(const Walker<1>& w, int64_t e) {
  if (w.rank <= 1) return e * (w.rank ? w.strides[0][0] : 0);
  int64_t off[1];
  w.offsets(e, off);
  return off[0];
}

// A row thread's states: element j of a vector goes to state j % kRowSlots (independent chains in
// flight; for 16-bit inputs two elements share one, which keeps the registers of 8-element vectors).
template <class X>
inline constexpr int kRowSlots = Vec16<X>::kSize < 4 ? Vec16<X>::kSize : 4;

template <class State, class Math, int N>
__device__ __forceinline__ State combine_pairwise(const Math& m, State (&s)[N]) {
#pragma unroll
  for (int width = 1; width < N; width *= 2)
#pragma unroll
    for (int j = 0; j < N; j += 2 * width) s[j] = m.combine(s[j], s[j + width]);
  return s[0];
}

// Maths that fold a run of elements at once (LogSumExpMath: one rescale a run). The others fold
// element by element, the loads' elements in their order across the states (independent chains
// interleaved: argmax bf16 slower by 8% with each state's run folded in turn).
template <class Math>
inline constexpr bool kFoldsBlocks = requires(const Math& m, typename Math::State& s,
                                              const typename Math::Acc (&v)[4]) {
  m.fold_block(s, v);
};

// The fold of elements [begin, end) of the output whose first element is at `base`, by thread `lane`
// of a group of `group` (begin is a multiple of the vector; with kVec, x + base is 16-byte aligned and
// the elements are unit-stride).
template <class X, class Math, bool kVec>
__device__ __forceinline__ typename Math::State fold_row(const ReduceProblem& p, const Math& m, int64_t base,
                                                         int64_t begin, int64_t end, int lane, int group) {
  using A = typename Math::Acc;
  using State = typename Math::State;
  constexpr int V = Vec16<X>::kSize;
  const X* x = static_cast<const X*>(p.x) + base;
  State slot[kRowSlots<X>];
#pragma unroll
  for (State& st : slot) st = m.identity();
  const int64_t full = end / V;  // vectors wholly inside
  int64_t v = begin / V + lane;
  if constexpr (kVec) {
    constexpr int kUnroll = 4;  // loads in flight per thread
    for (; v + int64_t(kUnroll - 1) * group < full; v += int64_t(kUnroll) * group) {
      Vec16<X> in[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) in[u] = load16(x + (v + int64_t(u) * group) * V);
      if constexpr (kFoldsBlocks<Math>) {
        // Slot k's elements of the loads, in order: j = k, k + kRowSlots, ... of each vector.
        constexpr int R = kRowSlots<X>, kPer = V / R;
#pragma unroll
        for (int k = 0; k < R; ++k) {
          A run[kUnroll * kPer];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u)
#pragma unroll
            for (int t = 0; t < kPer; ++t) run[u * kPer + t] = to_acc<A>(in[u].v[k + t * R]);
          m.fold_block(slot[k], run);
        }
      } else {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
          for (int j = 0; j < V; ++j)
            m.fold(slot[j % kRowSlots<X>], to_acc<A>(in[u].v[j]), (v + int64_t(u) * group) * V + j);
      }
    }
    for (; v < full; v += group) {
      const Vec16<X> in = load16(x + v * V);
#pragma unroll
      for (int j = 0; j < V; ++j) m.fold(slot[j % kRowSlots<X>], to_acc<A>(in.v[j]), v * V + j);
    }
    if (v == full && full * V < end) {  // the last, partial vector
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (full * V + j < end) m.fold(slot[j % kRowSlots<X>], to_acc<A>(x[full * V + j]), full * V + j);
    }
  } else {
    for (; v * V < end; v += group) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const int64_t e = v * V + j;
        if (e < end) m.fold(slot[j % kRowSlots<X>], to_acc<A>(x[element_offset(p.reduced, e)]), e);
      }
    }
  }
  return combine_pairwise(m, slot);
}

// rows: a group per output, grid-stride over the outputs. Every lane of a warp runs every round
// (the group reductions shuffle with every lane).
template <class X, class Math, class Sink, bool kVec>
__global__ void __launch_bounds__(kReduceBlock) rows_kernel(const ReduceProblem p, const Math m, const Sink sink) {
  using State = typename Math::State;
  const int group = p.geometry.group;
  const int per_block = blockDim.x / group;
  const int lane = threadIdx.x % group;
  __shared__ ReduceScratch<State> scratch;
  for (int64_t first = int64_t(blockIdx.x) * per_block; first < p.outputs; first += int64_t(gridDim.x) * per_block) {
    const int64_t o = first + threadIdx.x / group;
    const bool active = o < p.outputs;
    int64_t off[3] = {};
    State s = m.identity();
    if (active) {
      p.kept.offsets(o, off);
      s = fold_row<X, Math, kVec>(p, m, off[0], 0, p.params.count, lane, group);
    }
    auto combine = [&](const State& a, const State& b) { return m.combine(a, b); };
    if (group <= 32)
      s = warp_allreduce(s, combine, group);
    else
      s = block_allreduce(s, combine, m.identity(), scratch);
    if (active && lane == 0) sink(p, m, o, off, s);
  }
}

// split_rows: block (o, split) folds piece `split` of output o into the workspace.
template <class X, class Math, bool kVec>
__global__ void __launch_bounds__(kReduceBlock) split_kernel(const ReduceProblem p, const Math m) {
  using State = typename Math::State;
  __shared__ ReduceScratch<State> scratch;
  const int64_t begin = int64_t(blockIdx.y) * p.geometry.piece;
  const int64_t end = std::min(p.params.count, begin + p.geometry.piece);
  State* partial = static_cast<State*>(p.partials) + int64_t(blockIdx.y) * p.outputs;
  for (int64_t o = blockIdx.x; o < p.outputs; o += gridDim.x) {
    int64_t off[3];
    p.kept.offsets(o, off);
    State s = fold_row<X, Math, kVec>(p, m, off[0], begin, end, threadIdx.x, blockDim.x);
    s = block_allreduce(
        s, [&](const State& a, const State& b) { return m.combine(a, b); }, m.identity(), scratch);
    if (threadIdx.x == 0) partial[o] = s;
  }
}

// The pieces' states of every output: `group` threads per output (as many as there are splits, up
// to a block), thread t folding splits t, t + group, ... in order, then the group's states in its
// fixed tree.
template <class Math, class Sink>
__global__ void __launch_bounds__(kReduceBlock)
    finish_kernel(const ReduceProblem p, const Math m, const Sink sink, int group) {
  using State = typename Math::State;
  __shared__ ReduceScratch<State> scratch;
  const State* partial = static_cast<const State*>(p.partials);
  const int per_block = blockDim.x / group, lane = threadIdx.x % group;
  auto combine = [&](const State& a, const State& b) { return m.combine(a, b); };
  for (int64_t first = int64_t(blockIdx.x) * per_block; first < p.outputs; first += int64_t(gridDim.x) * per_block) {
    const int64_t o = first + threadIdx.x / group;
    State s = m.identity();
    if (o < p.outputs)
      for (int split = lane; split < p.geometry.splits; split += group)
        s = m.combine(s, partial[int64_t(split) * p.outputs + o]);
    s = group <= 32 ? warp_allreduce(s, combine, group) : block_allreduce(s, combine, m.identity(), scratch);
    if (o < p.outputs && lane == 0) {
      int64_t off[3];
      p.kept.offsets(o, off);
      sink(p, m, o, off, s);
    }
  }
}

// kUnit neighbouring elements: loaded as one where vectorized (8 or 16 bytes, the views checked
// aligned), else one at a time.
template <class X, int kUnit>
struct alignas(sizeof(X) * kUnit) Elements {
  X v[kUnit];
};

// columns: tile blockIdx.x of lanes x units, split blockIdx.y of the reduced elements.
template <class X, class Math, class Sink, int kUnit, bool kVec>
__device__ __forceinline__ void fold_columns(const ReduceProblem& p, const Math& m, const Sink& sink) {
  using A = typename Math::Acc;
  using State = typename Math::State;
  __shared__ State shared[kReduceBlock][kUnit];
  const int lanes = p.geometry.lanes, slices = p.geometry.slices;
  const int lane = threadIdx.x % lanes, slice = threadIdx.x / lanes;
  const int64_t begin = int64_t(blockIdx.y) * p.geometry.piece;
  const int64_t end = std::min(p.params.count, begin + p.geometry.piece);
  const int64_t units = ceil_div(p.outputs, kUnit);
  const X* x = static_cast<const X*>(p.x);
  const int64_t step = p.kept.inner_stride(0);  // between neighbouring outputs of a unit
  for (int64_t tile = blockIdx.x; tile * lanes < units; tile += gridDim.x) {
    const int64_t unit = tile * lanes + lane;
    const bool active = unit < units;
    const int64_t o = unit * kUnit;
    State s[kUnit];
#pragma unroll
    for (int j = 0; j < kUnit; ++j) s[j] = m.identity();
    int64_t off[3] = {};
    if (active) {
      p.kept.offsets(o, off);
      // The unit's elements at `at`, as loaded (converted when folded: 16-bit values keep half the
      // registers in flight). A unit of several outputs is always whole: the dispatch takes one only
      // where the innermost kept size is a multiple of it.
      auto load = [&](const X* at) {
        Elements<X, kUnit> in;
        if constexpr (kVec) {
          in = *reinterpret_cast<const Elements<X, kUnit>*>(at);
        } else {
#pragma unroll
          for (int j = 0; j < kUnit; ++j) in.v[j] = at[j * step];
        }
        return in;
      };
      // Slice `slice`'s elements, at(e) the address of the unit's element e: loads of kUnroll
      // elements in flight, then their folds in order.
      auto walk = [&](auto at) {
        constexpr int kUnroll = kUnit * sizeof(X) >= 16 ? 4 : 8;  // 64 bytes in flight per thread
        int64_t e = begin + slice;
        for (; e + int64_t(kUnroll - 1) * slices < end; e += int64_t(kUnroll) * slices) {
          Elements<X, kUnit> in[kUnroll];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) in[u] = load(at(e + u * int64_t(slices)));
          if constexpr (kFoldsBlocks<Math>) {
#pragma unroll
            for (int j = 0; j < kUnit; ++j) {
              A run[kUnroll];
#pragma unroll
              for (int u = 0; u < kUnroll; ++u) run[u] = to_acc<A>(in[u].v[j]);
              m.fold_block(s[j], run);
            }
          } else {
#pragma unroll
            for (int u = 0; u < kUnroll; ++u)
#pragma unroll
              for (int j = 0; j < kUnit; ++j) m.fold(s[j], to_acc<A>(in[u].v[j]), e + u * int64_t(slices));
          }
        }
        for (; e < end; e += slices) {
          const Elements<X, kUnit> in = load(at(e));
#pragma unroll
          for (int j = 0; j < kUnit; ++j) m.fold(s[j], to_acc<A>(in.v[j]), e);
        }
      };
      // One reduced dim (the common case) is a stride the compiler steps by; more go through the
      // walker's divisions.
      const X* first = x + off[0];
      if (p.reduced.rank <= 1) {
        const int64_t stride = p.reduced.rank ? p.reduced.strides[0][0] : 0;
        walk([&](int64_t e) { return first + e * stride; });
      } else {
        walk([&](int64_t e) { return first + element_offset(p.reduced, e); });
      }
    }
#pragma unroll
    for (int j = 0; j < kUnit; ++j) shared[threadIdx.x][j] = s[j];
    __syncthreads();
    for (int half = slices / 2; half > 0; half /= 2) {
      if (slice < half)
#pragma unroll
        for (int j = 0; j < kUnit; ++j)
          shared[threadIdx.x][j] = m.combine(shared[threadIdx.x][j], shared[threadIdx.x + half * lanes][j]);
      __syncthreads();
    }
    if (active && slice == 0) {
      for (int j = 0; j < kUnit; ++j) {
        if (gridDim.y > 1) {
          static_cast<State*>(p.partials)[int64_t(blockIdx.y) * p.outputs + o + j] = shared[threadIdx.x][j];
        } else {
          int64_t at[3];
          for (int t = 0; t < 3; ++t) at[t] = off[t] + j * p.kept.inner_stride(t);
          sink(p, m, o + j, at, shared[threadIdx.x][j]);
        }
      }
    }
    __syncthreads();  // shared is rewritten by the next tile
  }
}

template <class X, class Math, class Sink, int kUnit, bool kVec>
__global__ void __launch_bounds__(kReduceBlock) columns_kernel(const ReduceProblem p, const Math m, const Sink sink) {
  fold_columns<X, Math, Sink, kUnit, kVec>(p, m, sink);
}
// The same, bound to four blocks an SM, for the folds the host names (columns_at_four_blocks in
// cuda/reduce.cpp says why).
template <class X, class Math, class Sink, int kUnit, bool kVec>
__global__ void __launch_bounds__(kReduceBlock, 4)
    columns_four_blocks_kernel(const ReduceProblem p, const Math m, const Sink sink) {
  fold_columns<X, Math, Sink, kUnit, kVec>(p, m, sink);
}

// ---------------------------------------------------------------------------------------------
// The backward's map.

template <class Out, class A>
__device__ __forceinline__ A load_out(const void* base, int64_t off) {
  return base ? to_acc<A>(static_cast<const Out*>(base)[off]) : A(0);
}

__device__ __forceinline__ int64_t load_index(const ReduceProblem& p, int64_t off) {
  return p.indices ? detail::load_index(p.indices, p.index_dtype, off) : -1;
}

// What the map reads beside x at one element (or, along a line of one output, once per line).
template <class A>
struct MapInputs {
  A dout = 0, out = 0;
  GradStat<A> stat;
  int64_t index = -1;  // the element `indices` names (max, min)
};

template <class Out, class A>
__device__ __forceinline__ MapInputs<A> map_inputs(const ReduceProblem& p, const int64_t (&at)[kMapTensors]) {
  MapInputs<A> in;
  in.dout = load_out<Out, A>(p.dout, at[kMapDout]);
  in.out = load_out<Out, A>(p.out, at[kMapOut]);
  if (p.stats) in.stat = static_cast<const GradStat<A>*>(p.stats)[at[kMapStats]];
  in.index = load_index(p, at[kMapIndices]);
  return in;
}

// Each block takes a chunk of kReduceBlock x kMapVectors vectors of one line (the map's innermost
// dim): the line's offsets once, then the elements. With kVec, x and dx move in 16-byte vectors.
// Where the line is along the reduced dims (every output-shaped view steps 0 along it), what those
// views hold is read once per line.
template <class X, class Out, bool kVec, class FormTag>
__global__ void __launch_bounds__(kReduceBlock)
    map_kernel(const ReduceProblem p, const ReduceGrad<acc_t<X>> grad, int64_t chunks, bool line_reduced) {
  using A = acc_t<X>;
  constexpr auto kForm = FormTag::value;  // (a type: the host names it by its spelling)
  constexpr int V = kVec ? Vec16<X>::kSize : 1;
  const Walker<kMapTensors>& w = p.map;
  const int64_t inner = w.inner_size(), lines = w.numel() / inner;
  const X* x = static_cast<const X*>(p.x);
  X* dx = static_cast<X*>(p.dx);
  for (int64_t item = blockIdx.x; item < lines * chunks; item += gridDim.x) {
    const int64_t line = item / chunks, chunk = item % chunks;
    int64_t off[kMapTensors];
    w.offsets(line * inner, off);
    MapInputs<A> shared_in;
    if (line_reduced) shared_in = map_inputs<Out, A>(p, off);
#pragma unroll
    for (int u = 0; u < kMapVectors; ++u) {
      const int64_t i0 = (chunk * kMapVectors + u) * int64_t(kReduceBlock) * V + int64_t(threadIdx.x) * V;
      if (i0 >= inner) break;
      A xv[V];
      if constexpr (kVec) {
        Vec16<X> in{};
        if (x) in = load16(x + off[kMapX] + i0);
#pragma unroll
        for (int j = 0; j < V; ++j) xv[j] = to_acc<A>(in.v[j]);
      } else {
        xv[0] = x ? to_acc<A>(x[off[kMapX] + i0 * w.inner_stride(kMapX)]) : A(0);
      }
      Vec16<X> result;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const int64_t i = i0 + j;
        MapInputs<A> in = shared_in;
        if (!line_reduced) {
          int64_t at[kMapTensors];
#pragma unroll
          for (int t = 0; t < kMapTensors; ++t) at[t] = off[t] + i * w.inner_stride(t);
          in = map_inputs<Out, A>(p, at);
        }
        const bool mine = in.index == off[kMapReducedIndex] + i * w.inner_stride(kMapReducedIndex);
        result.v[j] = static_cast<X>(grad.template apply<kForm>(xv[j], in.dout, in.out, in.stat, mine));
      }
      if constexpr (kVec)
        store16(dx + off[kMapDx] + i0, result);
      else
        dx[off[kMapDx] + i0 * w.inner_stride(kMapDx)] = result.v[0];
    }
  }
}

}  // namespace baracuda::detail::cuda::reduce

// CPU kernels of the reduction family. Work is cut the same way whatever the thread count, so the
// bits never depend on it: each output's reduced elements in pieces of kPiece, each piece folded
// into its own states, the pieces' states combined in order.
//   rows:    an output at a time: a piece is folded into kSlots states (element e into slot
//            e % kSlots, so the compiler can keep independent sums in flight), combined pairwise.
//   columns: kColumns neighbouring outputs (along the innermost kept dim) at a time: a piece's
//            elements are read row by row, each column folding its own state.
// The backward reduces its statistic the same way into the workspace, then maps every element.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "cpu/parallel.hpp"
#include "ops/reduce_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

constexpr int64_t kPiece = 8192;  // reduced elements per work item
constexpr int kSlots = 8;
constexpr int kColumns = 64;

template <class X, class Math>
struct Reducer {
  using A = typename Math::Acc;
  using State = typename Math::State;

  const ReduceProblem& p;
  Math math{p.params};
  const X* x = static_cast<const X*>(p.x);
  int64_t count = p.params.count;
  int64_t pieces = std::max<int64_t>(1, ceil_div(p.params.count, kPiece));

  // Element e of an output's reduced set, from the output's first element's offset.
  int64_t element(int64_t e) const {
    if (p.reduced.rank <= 1) return e * (p.reduced.rank ? p.reduced.strides[0][0] : 0);
    int64_t off[1];
    p.reduced.offsets(e, off);
    return off[0];
  }
  A at(int64_t offset) const { return to_acc<A>(x[offset]); }

  State fold_row(int64_t base, int64_t begin, int64_t end) const {
    State slot[kSlots];
    for (State& s : slot) s = math.identity();
    int64_t e = begin;
    if (p.reduced.rank <= 1) {
      const int64_t stride = p.reduced.rank ? p.reduced.strides[0][0] : 0;
      for (; e + kSlots <= end; e += kSlots)
        for (int j = 0; j < kSlots; ++j) math.fold(slot[j], at(base + (e + j) * stride), e + j);
    }
    for (; e < end; ++e) math.fold(slot[(e - begin) % kSlots], at(base + element(e)), e);
    for (int width = 1; width < kSlots; width *= 2)
      for (int j = 0; j < kSlots; j += 2 * width) slot[j] = math.combine(slot[j], slot[j + width]);
    return slot[0];
  }

  // `columns` outputs from `base`, `step` apart in x: each folds its piece in order.
  void fold_columns(int64_t base, int64_t step, int columns, int64_t begin, int64_t end, State* states) const {
    for (int j = 0; j < columns; ++j) states[j] = math.identity();
    for (int64_t e = begin; e < end; ++e) {
      const int64_t row = base + element(e);
      for (int j = 0; j < columns; ++j) math.fold(states[j], at(row + j * step), e);
    }
  }

  // Calls sink(o, offsets, state) once per output with its whole state.
  template <class Sink>
  void run(Sink&& sink) const {
    const bool columns = p.variant == ReduceVariant::columns && p.kept.rank > 0;
    const int64_t line = columns ? p.kept.inner_size() : 1;
    const int64_t per_line = ceil_div(line, kColumns);
    const int64_t blocks = columns ? p.outputs / line * per_line : p.outputs;
    const int64_t items = blocks * pieces;
    std::vector<State> partial(pieces > 1 ? static_cast<size_t>(p.outputs * pieces) : 0);
    const bool parallel = p.outputs * std::max<int64_t>(count, 1) > kParallelThreshold;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t block = item / pieces, piece = item % pieces;
      const int64_t begin = piece * kPiece, end = std::min(count, begin + kPiece);
      const int64_t first = columns ? block / per_line * line + block % per_line * kColumns : block;
      const int width = columns ? static_cast<int>(std::min<int64_t>(kColumns, line - block % per_line * kColumns)) : 1;
      int64_t off[3];
      p.kept.offsets(first, off);
      State states[kColumns];
      if (columns)
        fold_columns(off[0], p.kept.inner_stride(0), width, begin, end, states);
      else
        states[0] = fold_row(off[0], begin, end);
      for (int j = 0; j < width; ++j) {
        if (pieces > 1) {
          partial[(first + j) * pieces + piece] = states[j];
          continue;
        }
        int64_t at_j[3];
        for (int t = 0; t < 3; ++t) at_j[t] = off[t] + j * p.kept.inner_stride(t) * columns;
        sink(first + j, at_j, states[j]);
      }
    }
    if (pieces == 1) return;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t o = 0; o < p.outputs; ++o) {
      State total = partial[o * pieces];
      for (int64_t c = 1; c < pieces; ++c) total = math.combine(total, partial[o * pieces + c]);
      int64_t off[3];
      p.kept.offsets(o, off);
      sink(o, off, total);
    }
  }
};

template <class X, class Math>
void forward(const ReduceProblem& p) {
  const Reducer<X, Math> r{p};
  r.run([&](int64_t, const int64_t(&off)[3], const typename Math::State& s) {
    store_output<half, bfloat16>(p, off, r.math.finish(s));
  });
}

template <class X, class Math>
void statistics(const ReduceProblem& p) {
  using A = typename Math::Acc;
  const Reducer<X, Math> r{p};
  auto* stats = static_cast<GradStat<A>*>(p.stats);
  r.run([&](int64_t o, const int64_t(&)[3], const typename Math::State& s) { stats[o] = r.math.stat(s); });
}

// dx of every element: lines along the map's innermost dim in parallel.
template <class X>
void gradient(const ReduceProblem& p) {
  using A = acc_t<X>;
  const ReduceGrad<A> grad(p.params);
  const X* x = static_cast<const X*>(p.x);
  X* dx = static_cast<X*>(p.dx);
  const auto* stats = static_cast<const GradStat<A>*>(p.stats);
  const Walker<kMapTensors>& w = p.map;
  const int64_t inner = w.inner_size(), lines = w.numel() / std::max<int64_t>(inner, 1);
  auto load = [&](const void* base, int64_t off) {
    return base ? load_as<half, bfloat16, A>(base, p.out_dtype, off) : A(0);
  };
  auto index_at = [&](int64_t off) { return p.indices ? load_index(p.indices, p.index_dtype, off) : int64_t{-1}; };
  ReduceGrad<A>::with_form(p.params.kind, [&](auto form) {
#pragma omp parallel for schedule(static) if (w.numel() > kParallelThreshold)
    for (int64_t l = 0; l < lines; ++l) {
      int64_t off[kMapTensors];
      w.offsets(l * inner, off);
      for (int64_t i = 0; i < inner; ++i) {
        int64_t at[kMapTensors];
        for (int t = 0; t < kMapTensors; ++t) at[t] = off[t] + i * w.inner_stride(t);
        const A xv = x ? to_acc<A>(x[at[kMapX]]) : A(0);
        const GradStat<A> stat = stats ? stats[at[kMapStats]] : GradStat<A>{};
        const bool mine = index_at(at[kMapIndices]) == at[kMapReducedIndex];
        const A g = grad.template apply<decltype(form)::value>(xv, load(p.dout, at[kMapDout]), load(p.out, at[kMapOut]),
                                                               stat, mine);
        if constexpr (std::is_arithmetic_v<X>)
          dx[at[kMapDx]] = static_cast<X>(g);
        else
          dx[at[kMapDx]] = X(static_cast<float>(g));
      }
    }
  });
}

}  // namespace

Status launch(const LaunchContext&, const ReduceProblem& problem) {
  if (!problem.backward)
    return dispatch_reduce<false, half, bfloat16>(problem, [&](auto x, auto math) {
      forward<typename decltype(x)::type, typename decltype(math)::type>(problem);
      return Status::ok();
    });
  if (problem.has_stats) {
    Status s = dispatch_reduce<true, half, bfloat16>(problem, [&](auto x, auto math) {
      statistics<typename decltype(x)::type, typename decltype(math)::type>(problem);
      return Status::ok();
    });
    if (!s) return s;
  }
  return dispatch_float<half, bfloat16>(problem.dtype, [&](auto x) {
    gradient<typename decltype(x)::type>(problem);
    return Status::ok();
  });
}

}  // namespace baracuda::detail::cpu

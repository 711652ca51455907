// CPU kernels of the reduction family. Work is cut the same way whatever the thread count, so the
// bits never depend on it: each output's reduced elements in pieces of kPiece (longer where the
// outputs' pieces would pass kMaxPartials), each piece folded into its own states, the pieces' states
// combined in order.
//   rows:    an output at a time: a piece is folded into kLanes states (element e into lane
//            e % kLanes, so the compiler can keep independent sums in flight), merged in a fixed
//            tree (merge_lanes).
//   columns: kColumns neighbouring outputs (along the innermost kept dim) at a time: a piece's
//            elements are read row by row, each column folding its own state.
// Either way the elements are first loaded (and converted) into a tile of kTile values, rows by
// columns (rows: kLanes columns, the lanes), and each math folds a whole tile: the tile's loops
// vectorize where one fold per element through a strided view does not. The tile loops are built
// per ISA (BARACUDA_CPU_CLONES); none reassociates a column's fold, so the bits do not depend on the
// vector width either.
// The backward reduces its statistic the same way into the workspace, then maps every element, a
// chunk at a time.
#include <omp.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/parallel.hpp"
#include "cpu/vector_math.hpp"
#include "ops/reduce_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

constexpr int64_t kPiece = 8192;  // reduced elements per work item (at least)
// The most pieces' states held at once (the host scratch of a run): bounded, whatever the count, so
// that a broadcast x of many more elements than memory holds never sizes an allocation.
constexpr int64_t kMaxPartials = int64_t{1} << 12;
constexpr int kSlots = 8;
constexpr int kColumns = 64;
constexpr int kTile = 2048;  // values loaded at once (8 KiB of f32)

// A tile of values v[r * ld + c]: column c folds rows 0..rows-1 in order into its state;
// element (r, c) is element first + r * row_step + c * col_step of its output's reduced set.
// kCols > 0 fixes cols at compile time (rows' slots, full column blocks): loops over a handful of
// columns with a runtime bound cost more in their prologues than in their work.
template <class A, int kCols = 0>
struct Tile {
  const A* v;
  int rows, runtime_cols;
  int64_t ld;  // between rows in v
  int64_t first, row_step, col_step;
  int cols() const { return kCols ? kCols : runtime_cols; }
  int64_t index(int r, int c) const { return first + r * row_step + c * col_step; }
  A at(int r, int c) const { return v[r * ld + c]; }
};

// Column c of a tile, one fold per element.
template <class Math, int kCols>
BARACUDA_CPU_CLONES void fold_column(const Math& math, const Tile<typename Math::Acc, kCols>& t, int c,
                                     typename Math::State& s) {
  for (int r = 0; r < t.rows; ++r) math.fold(s, t.at(r, c), t.index(r, c));
}

// Any math: one fold per element, the columns innermost (sums vectorize across them).
template <class Math, int kCols>
BARACUDA_CPU_CLONES void fold_tile(const Math& math, const Tile<typename Math::Acc, kCols>& t,
                                   typename Math::State* __restrict states) {
  const typename Math::Acc* __restrict v = t.v;
  for (int r = 0; r < t.rows; ++r)
    for (int c = 0; c < t.cols(); ++c) math.fold(states[c], v[r * t.ld + c], t.index(r, c));
}

// var / std: each column's rows in two passes (their mean, then the squared deviations from it),
// merged into the state by the math's own combine (Chan's formula): a division per column, not per
// element.
template <class A, int kCols>
BARACUDA_CPU_CLONES void fold_tile(const VarMath<A>& math, const Tile<A, kCols>& t,
                                   typename VarMath<A>::State* states) {
  A mean[kColumns], m2[kColumns];
  for (int c = 0; c < t.cols(); ++c) mean[c] = A(0), m2[c] = A(0);
  for (int r = 0; r < t.rows; ++r)
#pragma omp simd
    for (int c = 0; c < t.cols(); ++c) mean[c] += t.at(r, c);
  for (int c = 0; c < t.cols(); ++c) mean[c] /= static_cast<A>(t.rows);
  for (int r = 0; r < t.rows; ++r)
#pragma omp simd
    for (int c = 0; c < t.cols(); ++c) {
      const A d = t.at(r, c) - mean[c];
      m2[c] += d * d;
    }
  for (int c = 0; c < t.cols(); ++c) states[c] = math.combine(states[c], {mean[c], m2[c], t.rows});
}

// logsumexp: each column's running max over the state's and the tile's, the state's sum rescaled to
// it and the tile's exp(x - max) added, all with the vectorized exp (the math's combine would take
// two scalar exps a column). A column with a NaN or an infinity, or a state whose max is NaN or +inf,
// folds element by element.
template <class A, int kCols>
BARACUDA_CPU_CLONES void fold_tile(const LogSumExpMath<A>& math, const Tile<A, kCols>& t,
                                   typename LogSumExpMath<A>::State* states) {
  A old[kColumns], max[kColumns], sum[kColumns], probe[kColumns];
  for (int c = 0; c < t.cols(); ++c) old[c] = max[c] = states[c].max, sum[c] = A(0), probe[c] = A(0);
  for (int r = 0; r < t.rows; ++r)
#pragma omp simd
    for (int c = 0; c < t.cols(); ++c) {
      const A x = t.at(r, c);
      max[c] = x > max[c] ? x : max[c];
      probe[c] += x - x;
    }
  for (int r = 0; r < t.rows; ++r)
#pragma omp simd
    for (int c = 0; c < t.cols(); ++c) sum[c] += simd_math::exp_nonpositive(t.at(r, c) - max[c]);
#pragma omp simd
  for (int c = 0; c < t.cols(); ++c) old[c] = simd_math::exp_nonpositive(old[c] - max[c]);  // -inf (none yet): 0
  for (int c = 0; c < t.cols(); ++c) {
    if (probe[c] != A(0) || !(states[c].max < reduce_fn::inf<A>()))
      fold_column(math, t, c, states[c]);
    else
      states[c] = {max[c], states[c].sum * old[c] + sum[c]};
  }
}

// The rows kernel's lanes merged into one state: in a fixed tree by the math's combine, or for
// logsumexp (64 lanes, two scalar exps each by the combine) every lane rescaled to the greatest max
// with the vectorized exp, where every max is a number or -inf and one is a number.
template <class Math>
typename Math::State combine_tree(const Math& math, typename Math::State* lanes, int n) {
  for (int width = 1; width < n; width *= 2)
    for (int j = 0; j < n; j += 2 * width) lanes[j] = math.combine(lanes[j], lanes[j + width]);
  return lanes[0];
}
template <class Math>
typename Math::State merge_lanes(const Math& math, typename Math::State* lanes, int n) {
  return combine_tree(math, lanes, n);
}
template <class A>
typename LogSumExpMath<A>::State merge_lanes(const LogSumExpMath<A>& math, typename LogSumExpMath<A>::State* lanes,
                                             int n) {
  A max = -reduce_fn::inf<A>(), term[kColumns];
  bool plain = true;
  for (int j = 0; j < n; ++j) {
    plain = plain && lanes[j].max < reduce_fn::inf<A>();
    max = lanes[j].max > max ? lanes[j].max : max;
  }
  if (!plain || max == -reduce_fn::inf<A>()) return combine_tree(math, lanes, n);
  for (int j = 0; j < n; ++j) term[j] = lanes[j].sum * simd_math::exp(lanes[j].max - max);
  for (int width = 1; width < n; width *= 2)
    for (int j = 0; j < n; j += 2 * width) term[j] += term[j + width];
  return {max, term[0]};
}

// The extremes' order as integers, so that a column's best is an integer compare and two selects,
// which vectorize (a float compare does not, under GCC's trapping math): a float's magnitude bits,
// negated for a negative value (so -0 and +0 tie, as they compare), NaN above every number, the
// whole order reversed (~) for the minimum.
// kZeroSign: -0 below +0 (ExtremeValueMath's order); without it they tie (ExtremeMath's, whose ties
// go to the first index).
template <bool kMax, bool kAbs, bool kZeroSign = false, class A>
auto order_key(A x) {
  if constexpr (std::is_integral_v<A>) {
    return kMax ? x : ~x;
  } else {
    using I = std::conditional_t<sizeof(A) == 4, int32_t, int64_t>;
    const I bits = std::bit_cast<I>(x), mag = bits & std::numeric_limits<I>::max();
    const I ord = kAbs || bits >= 0 ? mag : (kZeroSign ? ~mag : -mag);
    const I key = kMax ? ord : ~ord;
    return mag > std::bit_cast<I>(reduce_fn::inf<A>()) ? std::numeric_limits<I>::max() : key;
  }
}

// Each column's first row holding its greatest order key (a strict compare: the first on ties).
template <bool kMax, bool kAbs, bool kZeroSign, class A, int kCols, class Key>
BARACUDA_CPU_CLONES void column_best(const Tile<A, kCols>& t, Key* __restrict best, Key* __restrict row) {
  for (int c = 0; c < t.cols(); ++c) best[c] = order_key<kMax, kAbs, kZeroSign>(t.at(0, c)), row[c] = 0;
  for (int r = 1; r < t.rows; ++r)
#pragma omp simd
    for (int c = 0; c < t.cols(); ++c) {
      const Key k = order_key<kMax, kAbs, kZeroSign>(t.at(r, c));
      const bool better = k > best[c];
      best[c] = better ? k : best[c];
      row[c] = better ? Key(r) : row[c];
    }
}

// The extremes: each column's best replaces the state where its key is greater or the state has
// none: the tile's elements come after the state's, and the keys follow the math's order (NaN first,
// then the value, then the index), so this is the state one fold per element gives, without the
// combine's branches on NaN (half the tile's time).
template <class A, bool kMax, bool kAbs, int kCols>
void fold_tile(const ExtremeMath<A, kMax, kAbs>& math, const Tile<A, kCols>& t,
               typename ExtremeMath<A, kMax, kAbs>::State* states) {
  using Key = decltype(order_key<kMax, kAbs>(A()));
  Key best[kColumns], row[kColumns];  // row as wide as the key: one vector width for both
  column_best<kMax, kAbs, false>(t, best, row);
  for (int c = 0; c < t.cols(); ++c) {
    const int r = static_cast<int>(row[c]);
    auto& s = states[c];
    const bool take = best[c] > order_key<kMax, kAbs>(s.value) || s.index == math.identity().index;
    s.value = take ? math.key(t.at(r, c)) : s.value;
    s.index = take ? t.index(r, c) : s.index;
  }
}
// amax, amin, norm +-inf: the value alone. The state holds key(x) (|x| for norm) or the identity
// (-inf for the max, +inf for the min), ordered as a plain value: the identity's key is the least.
template <class A, bool kMax, bool kAbs, int kCols>
void fold_tile(const ExtremeValueMath<A, kMax, kAbs>&, const Tile<A, kCols>& t,
               typename ExtremeValueMath<A, kMax, kAbs>::State* states) {
  using Key = decltype(order_key<kMax, kAbs>(A()));
  Key best[kColumns], row[kColumns];
  column_best<kMax, kAbs, true>(t, best, row);
  for (int c = 0; c < t.cols(); ++c)
    if (best[c] > order_key<kMax, false, true>(states[c].value))
      states[c].value = ExtremeMath<A, kMax, kAbs>::key(t.at(static_cast<int>(row[c]), c));
}

// n values `stride` apart from src (0: one, broadcast), as A: the contiguous loop vectorizes (16-bit
// conversions too).
template <class A, class X>
BARACUDA_CPU_CLONES void convert(const X* __restrict src, int64_t stride, int n, A* __restrict to) {
  if (stride == 0)
    std::fill_n(to, n, to_acc<A>(src[0]));
  else if (stride == 1)
    for (int i = 0; i < n; ++i) to[i] = to_acc<A>(src[i]);
  else
    for (int i = 0; i < n; ++i) to[i] = to_acc<A>(src[i * stride]);
}

// The rows kernel's lanes: kSlots (sums: the compiler's vector of them), or kColumns where the math's
// tile loops are the work (a tile as 32 rows of 64 columns fills four AVX-512 vectors a row).
template <class Math>
constexpr int kLanes = kSlots;
template <class A, bool kMax, bool kAbs>
constexpr int kLanes<ExtremeMath<A, kMax, kAbs>> = kColumns;
template <class A, bool kMax, bool kAbs>
constexpr int kLanes<ExtremeValueMath<A, kMax, kAbs>> = kColumns;
template <class A>
constexpr int kLanes<LogSumExpMath<A>> = kColumns;

template <class X, class Math>
struct Reducer {
  using A = typename Math::Acc;
  using State = typename Math::State;

  const ReduceProblem& p;
  Math math{p.params};
  const X* x = static_cast<const X*>(p.x);
  int64_t count = p.params.count;
  // Pieces of a multiple of kPiece elements, at most kMaxPartials of them over all the outputs (one
  // each past that: the outputs alone keep the threads busy).
  int64_t piece = kPiece * ceil_div(ceil_div(std::max<int64_t>(count, 1), kPiece),
                                    std::max<int64_t>(1, kMaxPartials / std::max<int64_t>(p.outputs, 1)));
  int64_t pieces = std::max<int64_t>(1, ceil_div(count, piece));

  // Element e of an output's reduced set, from the output's first element's offset.
  int64_t element(int64_t e) const {
    if (p.reduced.rank <= 1) return e * (p.reduced.rank ? p.reduced.strides[0][0] : 0);
    int64_t off[1];
    p.reduced.offsets(e, off);
    return off[0];
  }
  A at(int64_t offset) const { return to_acc<A>(x[offset]); }

  // n elements of an output's reduced set from e on, as A: in place where x is contiguous and of
  // type A (a copy would cost as much as the fold), else loaded into v.
  const A* load(int64_t base, int64_t e, int n, A* v) const {
    const int64_t stride = p.reduced.rank ? p.reduced.strides[0][0] : 0;
    if (p.reduced.rank <= 1) {
      const X* src = x + base + e * stride;
      if constexpr (std::is_same_v<X, A>)
        if (stride == 1) return src;
      convert(src, stride, n, v);
    } else {
      for (int i = 0; i < n; ++i) v[i] = at(base + element(e + i));
    }
    return v;
  }

  State fold_row(int64_t base, int64_t begin, int64_t end) const {
    constexpr int kL = kLanes<Math>;
    State lane[kL];
    for (State& s : lane) s = math.identity();
    A buffer[kTile];
    for (int64_t e = begin; e < end; e += kTile) {
      const int n = static_cast<int>(std::min<int64_t>(kTile, end - e)), rows = n / kL;
      const A* v = load(base, e, n, buffer);
      if (rows) fold_tile(math, Tile<A, kL>{v, rows, kL, kL, e, kL, 1}, lane);
      if (n % kL) fold_tile(math, Tile<A>{v + rows * kL, 1, n % kL, 0, e + rows * kL, 0, 1}, lane);
    }
    return merge_lanes(math, lane, kL);
  }

  // `columns` outputs from `base`, `step` apart in x: each folds its piece in order, a tile of rows
  // at a time (in place where the rows are contiguous runs of A, as load()).
  void fold_columns(int64_t base, int64_t step, int columns, int64_t begin, int64_t end, State* states) const {
    for (int j = 0; j < columns; ++j) states[j] = math.identity();
    A buffer[kTile];
    const int rows_per_tile = kTile / columns;
    const bool in_place = std::is_same_v<X, A> && step == 1 && p.reduced.rank <= 1;
    const int64_t ld = in_place ? (p.reduced.rank ? p.reduced.strides[0][0] : 0) : columns;
    for (int64_t e = begin; e < end; e += rows_per_tile) {
      const int rows = static_cast<int>(std::min<int64_t>(rows_per_tile, end - e));
      const A* v = buffer;
      if (in_place) {
        v = reinterpret_cast<const A*>(x + base + element(e));
      } else if (p.reduced.rank <= 1) {
        convert_rows(x + base + element(e), p.reduced.rank ? p.reduced.strides[0][0] : 0, step, rows, columns, buffer);
      } else {
        for (int r = 0; r < rows; ++r) convert(x + base + element(e + r), step, columns, buffer + r * columns);
      }
      if (columns == kColumns)
        fold_tile(math, Tile<A, kColumns>{v, rows, columns, ld, e, 1, 0}, states);
      else
        fold_tile(math, Tile<A>{v, rows, columns, ld, e, 1, 0}, states);
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
      const int64_t block = item / pieces, at = item % pieces;
      const int64_t begin = at * piece, end = std::min(count, begin + piece);
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
          partial[(first + j) * pieces + at] = states[j];
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

// n values of a floating view (out's or dout's dtype) from off, `stride` apart (0: one broadcast),
// as A; zeros where the view is absent.
template <class A>
void gather(const void* base, DType dtype, int64_t off, int64_t stride, int n, A* to) {
  if (!base) {
    std::fill_n(to, n, A(0));
    return;
  }
  static_cast<void>(dispatch_float<half, bfloat16>(dtype, [&](auto t) {
    convert(static_cast<const typename decltype(t)::type*>(base) + off, stride, n, to);
    return Status::ok();
  }));
}

template <auto kForm, class A>
BARACUDA_CPU_CLONES void apply_chunk(const ReduceGrad<A>& grad, const A* x, const A* dout, const A* out,
                                     const GradStat<A>* stat, const bool* mine, int n, A* __restrict g) {
  for (int i = 0; i < n; ++i) g[i] = grad.template apply<kForm>(x[i], dout[i], out[i], stat[i], mine[i]);
}

template <class X, class A>
BARACUDA_CPU_CLONES void store(const A* __restrict g, int n, X* __restrict to, int64_t stride) {
  for (int i = 0; i < n; ++i) {
    if constexpr (std::is_arithmetic_v<X>)
      to[i * stride] = static_cast<X>(g[i]);
    else
      to[i * stride] = X(static_cast<float>(g[i]));
  }
}

// dx of every element: lines along the map's innermost dim in parallel, each in chunks: every view
// of a chunk loaded into a buffer of A (one dtype switch a chunk, not one a view and element), the
// chunk's gradient in a loop the compiler vectorizes, then stored.
template <class X>
void gradient(const ReduceProblem& p) {
  using A = acc_t<X>;
  constexpr int kChunk = 1024;
  const ReduceGrad<A> grad(p.params);
  const X* x = static_cast<const X*>(p.x);
  X* dx = static_cast<X*>(p.dx);
  const auto* stats = static_cast<const GradStat<A>*>(p.stats);
  const Walker<kMapTensors>& w = p.map;
  const int64_t inner = w.inner_size(), lines = w.numel() / std::max<int64_t>(inner, 1);
  ReduceGrad<A>::with_form(p.params.kind, [&](auto form) {
#pragma omp parallel if (w.numel() > kParallelThreshold)
    {
      A xs[kChunk], douts[kChunk], outs[kChunk], g[kChunk];
      GradStat<A> stat[kChunk];
      bool mine[kChunk];
      std::fill_n(xs, kChunk, A(0));
      std::fill_n(stat, kChunk, GradStat<A>{});
      std::fill_n(mine, kChunk, false);  // no indices: no element is the one they name
#pragma omp for schedule(static)
      for (int64_t l = 0; l < lines; ++l) {
        int64_t off[kMapTensors];
        w.offsets(l * inner, off);
        for (int64_t i0 = 0; i0 < inner; i0 += kChunk) {
          const int n = static_cast<int>(std::min<int64_t>(kChunk, inner - i0));
          auto at = [&](int t) { return off[t] + i0 * w.inner_stride(t); };
          if (x) convert(x + at(kMapX), w.inner_stride(kMapX), n, xs);
          gather(p.dout, p.out_dtype, at(kMapDout), w.inner_stride(kMapDout), n, douts);
          gather(p.out, p.out_dtype, at(kMapOut), w.inner_stride(kMapOut), n, outs);
          if (stats)
            for (int i = 0; i < n; ++i) stat[i] = stats[at(kMapStats) + i * w.inner_stride(kMapStats)];
          if (p.indices)
            for (int i = 0; i < n; ++i)
              mine[i] = load_index(p.indices, p.index_dtype, at(kMapIndices) + i * w.inner_stride(kMapIndices)) ==
                        at(kMapReducedIndex) + i * w.inner_stride(kMapReducedIndex);
          apply_chunk<decltype(form)::value>(grad, xs, douts, outs, stat, mine, n, g);
          store(g, n, dx + at(kMapDx), w.inner_stride(kMapDx));
        }
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

// CPU kernels of the softmax family. Both read a row twice (its partial, then its outputs) in
// pieces of kBlock elements: each piece's partial (common/softmax_math.hpp) folds into the row's in
// order, so the bits never depend on the thread count. The multi-pass forward (sparsemax, entmax15)
// reads its row once per pass of its solve, in the same pieces, by rows only.
//   rows:  rows in parallel; with fewer rows than threads, the pieces of one row in parallel.
//   outer: kColumns neighbouring rows (in memory order, the columns of a dim that is not innermost)
//          per work item, each tile of kBlock positions x kColumns loaded row by row.
// Every kind has a tiled fast path for rows where every view steps by 1 along dim, softmax and
// log_softmax also for outer where they step by 1 along the columns: plain pointer loops over values
// converted to the compute type once, folded into kLanes independent sums (rows) or one sum per
// column (outer) in a fixed order, with the vectorized exp (vector_math.hpp). A row of one piece is
// read once and softmax's exps kept for its outputs; a longer row keeps them in y where y is f32.
// The sparse forward's solve takes each fold of such a row in lanes too (measure_row, row_max),
// over the row converted once where it is one piece, else over each piece converted per pass.
// An offset computed per element, a conversion per element and pass, a bounds test per element
// and one serial chain of sums cost the generic loops ten times XLA's time, more than the exp
// itself (bench/NOTES.md).
#include <omp.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "cpu/parallel.hpp"
#include "cpu/vector_math.hpp"
#include "ops/softmax_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

constexpr int kBlock = 16;           // elements per partial
constexpr int64_t kRowPiece = 4096;  // elements per parallel piece of a long row (a multiple of kBlock)
constexpr int kColumns = 64;
constexpr int64_t kKeptInBuffer = int64_t{1} << 20;  // 16-bit softmax rows whose exps a buffer keeps (4 MiB)
constexpr int kLanes = 16;          // a contiguous piece's independent sums: element i into lane i % kLanes
constexpr int kOuterColumns = 128;  // the outer fast path's columns per work item at most ...
constexpr int kOuterTile = 8192;    // ... and values per tile (positions along dim x columns): each
                                    // column's merge (two exps) spread over kOuterTile / columns

template <class A, class T>
A load_as(const T& v) {
  if constexpr (std::is_arithmetic_v<T>)
    return static_cast<A>(v);
  else
    return static_cast<A>(static_cast<float>(v));  // half, bfloat16
}
template <class T, class A>
T store_as(A v) {
  if constexpr (std::is_arithmetic_v<T>)
    return static_cast<T>(v);
  else
    return T(static_cast<float>(v));
}

// ---------------------------------------------------------------------------------------------
// The tiled fast paths: rows of every math (softmax, log_softmax, sparsemax, entmax15; forward and
// backward); dims that are not innermost for softmax and log_softmax.
template <class Math>
inline constexpr bool kTiledColumns = false;
template <class A>
inline constexpr bool kTiledColumns<SoftmaxForwardMath<A>> = true;
template <class A>
inline constexpr bool kTiledColumns<SoftmaxBackwardMath<A>> = true;

template <class Element>
inline constexpr bool kThresholdMeasure = false;
template <class A, int kPower, int K>
inline constexpr bool kThresholdMeasure<ThresholdMeasure<A, kPower, K>> = true;

template <class A>
bool finite(A v) {
  return v > -std::numeric_limits<A>::infinity() && v < std::numeric_limits<A>::infinity();
}

// Bit-pattern tests the loops vectorize (a float compare in a select keeps GCC from vectorizing):
// with b an element's bits as a signed integer, kInfBits - (b & kAbs) is negative for a NaN only.
template <class A>
using SignedBits = std::conditional_t<sizeof(A) == 4, int32_t, int64_t>;
template <class A>
constexpr SignedBits<A> kAbs = std::numeric_limits<SignedBits<A>>::max();
template <class A>
constexpr SignedBits<A> kInfBits = std::bit_cast<SignedBits<A>>(std::numeric_limits<A>::infinity());

// The same values in place where T is the compute type (ld kept), else converted into `buffer`.
template <class A, class T>
const A* as_compute(const T* src, int64_t& ld, int rows, int cols, A* buffer) {
  if constexpr (std::is_same_v<T, A>) return src;
  convert_rows(src, ld, 1, rows, cols, buffer);  // rows of cols values, cols apart
  ld = cols;
  return buffer;
}

// Sums kLanes lanes pairwise, halves folded onto halves (loops of fixed counts, kept in registers:
// a loop through the array in memory stalled on store forwarding, 1/5 of a 128-element row's time).
template <int kHalf = kLanes / 2, class A>
[[gnu::always_inline]] inline A lane_total(A (&lane)[kLanes]) {
  if constexpr (kHalf == 0) {
    return lane[0];
  } else {
    for (int u = 0; u < kHalf; ++u) lane[u] += lane[u + kHalf];
    return lane_total<kHalf / 2>(lane);
  }
}

// n contiguous values in blocks of kLanes, the last n % kLanes padded with -inf (no max, an exp of
// exactly 0) to a whole block, so that one loop body (one inlined exp) serves every block.
template <class A>
struct Blocks {
  const A* v;
  int n, body = n - n % kLanes;
  A pad[kLanes];
  Blocks(const A* values, int count) : v(values), n(count) {
    for (int u = 0; u < kLanes; ++u) pad[u] = body + u < n ? v[body + u] : -std::numeric_limits<A>::infinity();
  }
  const A* operator()(int i) const { return i < body ? v + i : pad; }
};

// The max of the values in lanes, and whether any is NaN (the max then is another value's).
template <class A>
[[gnu::always_inline]] inline std::pair<A, bool> lanes_max(const Blocks<A>& block) {
  A lane[kLanes];
  SignedBits<A> nan[kLanes];
  for (int u = 0; u < kLanes; ++u) lane[u] = -std::numeric_limits<A>::infinity(), nan[u] = 0;
  for (int i = 0; i < block.n; i += kLanes) {
    const A* x = block(i);
#pragma omp simd
    for (int u = 0; u < kLanes; ++u) {
      lane[u] = x[u] > lane[u] ? x[u] : lane[u];
      nan[u] |= kInfBits<A> - (std::bit_cast<SignedBits<A>>(x[u]) & kAbs<A>);
    }
  }
  A max = lane[0];
  SignedBits<A> any_nan = 0;
  for (int u = 0; u < kLanes; ++u) max = lane[u] > max ? lane[u] : max, any_nan |= nan[u];
  return {max, any_nan < 0};
}

// The forward partial of n contiguous values: the max, then the sum of exp(v - max) in lanes, the
// exps also stored into e where one is given (softmax's outputs; log_softmax's and a piece's partial
// need none; each a loop of its own, so that GCC inlines its exp). Declines (nullopt: the math's own
// partial takes the piece) a NaN, or a max of +-inf.
template <class A>
BARACUDA_CPU_CLONES std::optional<SoftmaxStats<A>> row_stats(const A* v, int n, A* e) {
  const Blocks<A> block(v, n);
  const int body = block.body;
  const auto [max, nan] = lanes_max(block);
  if (nan || !finite(max)) return std::nullopt;
  A lane[kLanes];
  for (A& l : lane) l = A(0);
  if (!e) {
    for (int i = 0; i < n; i += kLanes) {
      const A* x = block(i);
#pragma omp simd
      for (int u = 0; u < kLanes; ++u) lane[u] += simd_math::exp_nonpositive(x[u] - max);
    }
    return SoftmaxStats<A>{max, lane_total(lane)};
  }
  A tail[kLanes];  // (e may be y itself: nothing past n is written)
  for (int i = 0; i < n; i += kLanes) {
    const A* x = block(i);
    A* to = i < body ? e + i : tail;
#pragma omp simd
    for (int u = 0; u < kLanes; ++u) lane[u] += to[u] = simd_math::exp_nonpositive(x[u] - max);
  }
  for (int i = body; i < n; ++i) e[i] = tail[i - body];
  return SoftmaxStats<A>{max, lane_total(lane)};
}

// n outputs e * scale (softmax's, from the exps row_stats kept).
template <class A, class T>
BARACUDA_CPU_CLONES void scale_row(const A* e, int n, A scale, T* out);

// SparseBackwardMath::gain in bit masks (a float select does not vectorize under trapping math):
// where y > 0, 1 (sparsemax) or sqrt(y) (entmax15); a NaN y itself; otherwise +0.
template <bool kEntmax, class A>
A sparse_gain(A y) {
  const SignedBits<A> in = y > A(0) ? SignedBits<A>(-1) : 0, nan = y != y ? SignedBits<A>(-1) : 0;
  const A g = kEntmax ? std::sqrt(y) : A(1);  // (a NaN where y < 0: masked off)
  return std::bit_cast<A>((std::bit_cast<SignedBits<A>>(g) & in) | (std::bit_cast<SignedBits<A>>(y) & nan));
}

// The backward partial of n contiguous (y, dy), in lanes: the sum of dy y (softmax) or dy
// (log_softmax); for sparsemax and entmax15 the sums of g dy and g (sparse_gain).
template <class Math, class A>
BARACUDA_CPU_CLONES typename Math::Partial row_sum(const Math& math, const A* y, const A* dy, int n) {
  const int body = n - n % kLanes;
  if constexpr (std::is_same_v<Math, SparseBackwardMath<A>>) {
    A weighted[kLanes] = {}, weight[kLanes] = {};
    auto sums = [&](auto entmax) {
      for (int i = 0; i < body; i += kLanes)
#pragma omp simd
        for (int u = 0; u < kLanes; ++u) {
          const A g = sparse_gain<entmax()>(y[i + u]);
          weighted[u] += g * dy[i + u], weight[u] += g;
        }
      for (int i = body; i < n; ++i) {
        const A g = sparse_gain<entmax()>(y[i]);
        weighted[i - body] += g * dy[i], weight[i - body] += g;
      }
    };
    if (math.kind == SoftmaxKind::entmax15)
      sums(std::true_type{});
    else
      sums(std::false_type{});
    return {lane_total(weighted), lane_total(weight)};
  } else {
    const bool log = math.kind == SoftmaxKind::log_softmax;
    A lane[kLanes] = {};
    for (int i = 0; i < body; i += kLanes)
      if (log)
#pragma omp simd
        for (int u = 0; u < kLanes; ++u) lane[u] += dy[i + u];
      else
#pragma omp simd
        for (int u = 0; u < kLanes; ++u) lane[u] += dy[i + u] * y[i + u];
    for (int i = body; i < n; ++i) lane[i - body] += log ? dy[i] : dy[i] * y[i];
    return lane_total(lane);
  }
}

// The sparse forward's fold of n contiguous values at a pass's K points (ThresholdMeasure), element
// i into lane i % kLanes: the same sums as the measure's own fold in another order, its test d > 0
// a bit mask (adding +0 where it fails leaves a sum's bits: every sum starts at +0), counts integers.
template <class Stats, class A, int kPower, int K>
BARACUDA_CPU_CLONES Stats measure_row(const ThresholdMeasure<A, kPower, K>& m, const A* v, int n) {
  using Bits = SignedBits<A>;
  Bits count[K][kLanes] = {};
  A sum[K][kPower][kLanes] = {};
  auto add = [&](int u, A x) {
    const A z = m.z(x);
#pragma GCC unroll 4
    for (int j = 0; j < K; ++j) {
      const A d = z - m.t[j];
      const Bits in = d > A(0) ? Bits(-1) : Bits(0);
      const A kept = std::bit_cast<A>(std::bit_cast<Bits>(d) & in);  // d, or +0
      count[j][u] -= in;
      sum[j][0][u] += kept;
      if constexpr (kPower == 2) sum[j][1][u] += kept * kept;
    }
  };
  const int body = n - n % kLanes;
  for (int i = 0; i < body; i += kLanes)
#pragma omp simd
    for (int u = 0; u < kLanes; ++u) add(u, v[i + u]);
  for (int i = body; i < n; ++i) add(i - body, v[i]);
  Stats s;
  for (int j = 0; j < K; ++j) {
    s.count[j] = lane_total(count[j]);
    for (int k = 0; k < kPower; ++k) s.sum[j][k] = lane_total(sum[j][k]);
  }
  return s;
}

// The sparse forward's max of n contiguous values (MaxElement's fold: NaN where any value is NaN),
// as softmax's partial takes it: a plain max and a NaN test per lane, not MaxElement's chain of
// dependent compares and selects.
template <class A>
BARACUDA_CPU_CLONES A row_max(const A* v, int n) {
  const auto [max, nan] = lanes_max(Blocks<A>(v, n));
  return nan ? std::numeric_limits<A>::quiet_NaN() : max;
}

// Folds a tile of rows x cols values (v[r * ld + c]) into its columns' (max, sum) states, rows in
// order: the tile's max of each column, the sum of exp(v - max) under it, then a merge with the
// state (as merge_stats, with the vectorized exp). A column with a NaN or an infinite max (in the
// tile or its state) folds element by element through the math instead.
template <class A>
BARACUDA_CPU_CLONES void column_stats(const SoftmaxForwardMath<A>& math, const A* v, int64_t ld, int rows, int cols,
                                      A* state_max, A* state_sum) {
  A max[kOuterColumns], sum[kOuterColumns];
  SignedBits<A> nan[kOuterColumns];
  for (int c = 0; c < cols; ++c) max[c] = -std::numeric_limits<A>::infinity(), sum[c] = A(0), nan[c] = 0;
  for (int r = 0; r < rows; ++r)
#pragma omp simd
    for (int c = 0; c < cols; ++c) {
      const A x = v[r * ld + c];
      max[c] = x > max[c] ? x : max[c];
      nan[c] |= kInfBits<A> - (std::bit_cast<SignedBits<A>>(x) & kAbs<A>);
    }
  bool fast = true;
  for (int c = 0; c < cols; ++c)
    fast = fast && nan[c] >= 0 && finite(max[c]) && !(state_max[c] >= std::numeric_limits<A>::infinity());
  if (!fast) {  // rare: every column of the tile through the math
    for (int c = 0; c < cols; ++c) {
      SoftmaxStats<A> s{state_max[c], state_sum[c]};
      for (int r = 0; r < rows; ++r) {
        const A one[1][1] = {{v[r * ld + c]}};
        s = math.combine(s, math.partial(one));
      }
      state_max[c] = s.max, state_sum[c] = s.sum;
    }
    return;
  }
  for (int r = 0; r < rows; ++r)
#pragma omp simd
    for (int c = 0; c < cols; ++c) sum[c] += simd_math::exp_nonpositive(v[r * ld + c] - max[c]);
#pragma omp simd
  for (int c = 0; c < cols; ++c) {  // the state's max is finite or -inf (its sum then 0)
    const A merged = max[c] > state_max[c] ? max[c] : state_max[c];
    state_sum[c] = state_sum[c] * simd_math::exp_nonpositive(state_max[c] - merged) +
                   sum[c] * simd_math::exp_nonpositive(max[c] - merged);
    state_max[c] = merged;
  }
}

// The backward's sums of a tile's columns, rows in order.
template <class A>
BARACUDA_CPU_CLONES void column_sums(const A* y, int64_t ld_y, const A* dy, int64_t ld_dy, int rows, int cols, bool log,
                                     A* sum) {
  for (int r = 0; r < rows; ++r)
    if (log)
#pragma omp simd
      for (int c = 0; c < cols; ++c) sum[c] += dy[r * ld_dy + c];
    else
#pragma omp simd
      for (int c = 0; c < cols; ++c) sum[c] += dy[r * ld_dy + c] * y[r * ld_y + c];
}

// A row of outputs is computed in the compute type, into out itself where T is A, else into a
// buffer converted to T after, in a loop of its own (a conversion inside the math's loop narrowed
// GCC's vectors to half width). No helper takes a lambda here: a call out of a cloned function
// (BARACUDA_CPU_CLONES) that is not inlined runs in the baseline build.
template <class A, class T>
A* outputs(T* out, A* buffer) {
  if constexpr (std::is_same_v<T, A>)
    return out;
  else
    return buffer;
}
template <class A, class T>
void narrow(const A* y, int cols, T* out) {
  if constexpr (!std::is_same_v<T, A>)
#pragma omp simd
    for (int c = 0; c < cols; ++c) out[c] = store_as<T>(y[c]);
}

template <class A, class T>
BARACUDA_CPU_CLONES void scale_row(const A* e, int n, A scale, T* out) {
  A buffer[kRowPiece];
  A* y = outputs(out, buffer);
#pragma omp simd
  for (int c = 0; c < n; ++c) y[c] = e[c] * scale;
  narrow(y, n, out);
}

// The outputs of a tile of rows x cols values from each column's writer (kShared: one writer for
// all, and up to kRowPiece columns), into out[r * out_ld + c]. A softmax column of a max of +-inf
// (a row of only -inf, or a +inf) writes through the math's writer instead; a NaN row's sum is NaN,
// so its outputs are NaN here too.
template <bool kShared, class A, class T>
BARACUDA_CPU_CLONES void write_tile(const typename SoftmaxForwardMath<A>::Writer* w, const A* v, int64_t ld, int rows,
                                    int cols, T* out, int64_t out_ld) {
  constexpr int kCols = kShared ? 1 : kOuterColumns;
  A max[kCols], scale[kCols];
  bool fast = true;
  for (int c = 0; c < (kShared ? 1 : cols); ++c) {
    max[c] = w[c].max, scale[c] = w[c].scale;
    fast = fast && (w[c].log || finite(max[c]));
  }
  auto at = [&](int c) { return kShared ? 0 : c; };
  for (int r = 0; r < rows; ++r) {
    const A* x = v + r * ld;
    if (!fast) {
      for (int c = 0; c < cols; ++c) out[r * out_ld + c] = store_as<T>(w[at(c)]({x[c]}));
      continue;
    }
    A buffer[kShared ? kRowPiece : kOuterColumns];
    A* y = outputs(out + r * out_ld, buffer);
    if (w[0].log)
#pragma omp simd
      for (int c = 0; c < cols; ++c) y[c] = (x[c] - max[at(c)]) - scale[at(c)];
    else
#pragma omp simd
      for (int c = 0; c < cols; ++c) y[c] = simd_math::exp_nonpositive(x[c] - max[at(c)]) * scale[at(c)];
    narrow(y, cols, out + r * out_ld);
  }
}

// exp(x) for log_softmax's backward, f32 vectorized: simd_math's fused exp without subnormal results
// (under 2^-126, x < -87, it gives 0: a term exp(y) sum moves dx by under 2^-126 |sum|): no subnormal
// path, where the exp is most of the row's time (bench/NOTES.md).
template <class A>
[[gnu::always_inline]] inline A exp_or_zero(A x) {
  if constexpr (std::is_same_v<A, float>) {
    using namespace simd_math::f32;
    const FusedExp t = fused_exp_parts(select(x < -87.0f, -87.0f, x));  // NaN stays NaN
    const float e = to_float(t.e + (static_cast<uint32_t>(t.n) << 23));
    return select(!(x <= 88.72283172607421875f), x + to_float(0x7f800000u), select(x < -87.0f, 0.0f, e));
  } else {
    return std::exp(x);
  }
}

// The backward's outputs: softmax dy y - y sum, log_softmax dy - exp(y) sum.
template <bool kShared, class A, class T>
BARACUDA_CPU_CLONES void write_tile(const typename SoftmaxBackwardMath<A>::Writer* w, const A* y, int64_t ld_y,
                                    const A* dy, int64_t ld_dy, int rows, int cols, T* out, int64_t out_ld) {
  constexpr int kCols = kShared ? 1 : kOuterColumns;
  A sum[kCols];
  for (int c = 0; c < (kShared ? 1 : cols); ++c) sum[c] = w[c].sum;
  auto at = [&](int c) { return kShared ? 0 : c; };
  for (int r = 0; r < rows; ++r) {
    const A *a = y + r * ld_y, *b = dy + r * ld_dy;
    A buffer[kShared ? kRowPiece : kOuterColumns];
    A* dx = outputs(out + r * out_ld, buffer);
    if (!w[0].log)
#pragma omp simd
      for (int c = 0; c < cols; ++c) dx[c] = a[c] * (b[c] - sum[at(c)]);
    else
#pragma omp simd
      for (int c = 0; c < cols; ++c) dx[c] = b[c] - exp_or_zero(a[c]) * sum[at(c)];
    narrow(dx, cols, out + r * out_ld);
  }
}

// The sparse backward's n outputs of a row, g (dy - mean) with g the gain (sparse_gain).
template <class A, class T>
BARACUDA_CPU_CLONES void sparse_gradient_row(const typename SparseBackwardMath<A>::Writer& w, const A* y, const A* dy,
                                             int n, T* out) {
  A buffer[kRowPiece];
  A* dx = outputs(out, buffer);
  if (w.entmax)
#pragma omp simd
    for (int c = 0; c < n; ++c) dx[c] = sparse_gain<true>(y[c]) * (dy[c] - w.mean);
  else
#pragma omp simd
    for (int c = 0; c < n; ++c) dx[c] = sparse_gain<false>(y[c]) * (dy[c] - w.mean);
  narrow(dx, n, out);
}

// The sparse forward's n outputs max(z - tau, 0)^kPower from its Writer, the clamp a bit mask that
// keeps -0 and a NaN as the Writer's select does.
template <int kPower, class Writer, class A, class T>
BARACUDA_CPU_CLONES void sparse_row(const Writer& w, const A* v, int n, T* out) {
  A buffer[kRowPiece];
  A* y = outputs(out, buffer);
#pragma omp simd
  for (int c = 0; c < n; ++c) {
    const A d = w.excess(v[c]);
    const SignedBits<A> off = d < A(0) ? SignedBits<A>(-1) : 0;
    const A kept = std::bit_cast<A>(std::bit_cast<SignedBits<A>>(d) & ~off);
    y[c] = kPower == 1 ? kept : kept * kept;
  }
  narrow(y, n, out);
}

template <class Math, class Load, class Store>
struct Kernel {
  using A = typename Math::Value;
  using Partial = typename Math::Partial;
  static constexpr int kIn = Math::kInputs;
  static constexpr int kPower = std::is_same_v<Math, SparseForwardMath<A, 2>> ? 2 : 1;  // the sparse forward's

  const SoftmaxProblem& p;
  Math math{p.kind};
  const Load* in[2] = {static_cast<const Load*>(p.in[0]), static_cast<const Load*>(p.in[1])};
  Store* out = static_cast<Store*>(p.out);

  A at(int t, int64_t offset) const { return load_as<A>(in[t][offset]); }

  // One row: its first elements' offsets `base` and its steps along dim (1 when kUnit, so that the
  // loops over a contiguous row vectorize).
  template <bool kUnit>
  struct Row {
    const Kernel& k;
    const int64_t* base;
    const int64_t* stride;
    // Where given (softmax, kKeeps), each piece's partial: the stats pass then leaves softmax's exps
    // exp(x - piece max) in y, and the write pass scales them by exp(piece max - row max) / sum
    // instead of computing a second exp per element. (A piece that declined the tiled path, a NaN
    // or a max of +-inf, writes nothing before the write pass, which then reads its x.)
    std::vector<Partial>* kept = nullptr;
    // Where the kept exps go: y itself where it is of the compute type, else a buffer of the row's
    // length (16-bit outputs: the exps rounded would lose bits; recomputed, they cost a second exp).
    A* exps = nullptr;
    int64_t offset(int t, int64_t i) const { return base[t] + i * (kUnit ? 1 : stride[t]); }
    static constexpr bool kKeeps = kUnit && std::is_same_v<Math, SoftmaxForwardMath<A>>;

    Partial piece(int64_t begin, int64_t end) const {
      if constexpr (kUnit) {
        A buffer[kIn][kRowPiece];
        const A* v[kIn];
        const int n = load(begin, end, buffer, v);
        if constexpr (kIn == 2)
          return row_sum(k.math, v[0], v[1], n);
        else {
          A* e = nullptr;  // (the partial alone, unless the exps are kept for the outputs)
          if constexpr (kKeeps)
            if (kept) e = exps + begin;
          if (const std::optional<SoftmaxStats<A>> s = row_stats(v[0], n, e)) return *s;
        }
      }
      Partial total = Math::identity();
      for (int64_t i0 = begin; i0 < end; i0 += kBlock) {
        A v[kIn][kBlock];
        for (int t = 0; t < kIn; ++t)
          for (int u = 0; u < kBlock; ++u) v[t][u] = i0 + u < end ? k.at(t, offset(t, i0 + u)) : Math::fill();
        total = Math::combine(total, k.math.partial(v));
      }
      return total;
    }
    // The fold of the row's pieces of kRowPiece elements (piece(begin, end) gives one's partial),
    // in parallel when `parallel`, combined in order: the same bits either way.
    template <class P, class Piece, class Combine>
    P fold_pieces(P identity, Piece piece, Combine combine, bool parallel) const {
      const int64_t length = k.p.length, pieces = ceil_div(length, kRowPiece);
      auto piece_at = [&](int64_t c) { return piece(c * kRowPiece, std::min(length, (c + 1) * kRowPiece)); };
      P total = identity;
      if (!parallel) {  // (no omp construct at all: this runs once per row inside a parallel loop)
        for (int64_t c = 0; c < pieces; ++c) total = combine(total, piece_at(c));
        return total;
      }
      std::vector<P> partial(static_cast<size_t>(pieces));
#pragma omp parallel for schedule(static)
      for (int64_t c = 0; c < pieces; ++c) partial[c] = piece_at(c);
      for (const P& part : partial) total = combine(total, part);
      return total;
    }
    // The multi-pass forward's Fold (common/softmax_math.hpp), over the row's pieces: on a
    // contiguous row, in lanes (measure_row, row_max) over `values` (the whole row in the compute
    // type) where given, else over each piece loaded anew.
    struct Fold {
      const Row& row;
      bool parallel;
      const A* values = nullptr;
      static bool any(bool p) { return p; }  // one row per fold
      template <class P, class Element, class Combine>
      P operator()(P identity, Element element, Combine combine) const {
        auto piece = [&](int64_t begin, int64_t end) {
          if constexpr (kUnit) {
            A buffer[kIn][kRowPiece];
            const A* v[kIn] = {values};
            const int n = values ? static_cast<int>(end - begin) : row.load(begin, end, buffer, v);
            if (values) v[0] += begin;
            if constexpr (kThresholdMeasure<Element>) {
              return measure_row<P>(element, v[0], n);
            } else {
              static_assert(std::is_same_v<Element, MaxElement<A>>, "a fold the lanes do not take");
              return row_max(v[0], n);
            }
          } else {
            P acc = identity;
            for (int64_t i = begin; i < end; ++i) element(acc, row.k.at(0, row.offset(0, i)));
            return acc;
          }
        };
        return row.fold_pieces(identity, piece, combine, parallel);
      }
    };
    typename Math::Writer writer(bool parallel, const A* values = nullptr) const {
      if constexpr (Math::kIterative) {
        return k.math.solve(Fold{*this, parallel, values});
      } else {
        auto part = [&](int64_t begin, int64_t end) {
          const Partial q = piece(begin, end);
          if (kept) (*kept)[begin / kRowPiece] = q;
          return q;
        };
        return k.math.writer(fold_pieces(Math::identity(), part, Math::combine, parallel));
      }
    }

    // The tiled paths' values of [begin, end) (at most kRowPiece) in the compute type; returns their count.
    int load(int64_t begin, int64_t end, A (&buffer)[kIn][kRowPiece], const A* (&v)[kIn]) const {
      const int n = static_cast<int>(end - begin);
      for (int t = 0; t < kIn; ++t) {
        int64_t ld = n;
        v[t] = as_compute(k.in[t] + base[t] + begin, ld, 1, n, buffer[t]);
      }
      return n;
    }

    // The tiled path of a row of at most kRowPiece elements: loaded once, softmax's exps kept for
    // its outputs (the same bits as the two passes of writer() and write(): the one piece's partial
    // is the row's). NaN rows and maxes of +-inf take those two passes.
    void whole() const {
      A buffer[kIn][kRowPiece];
      const A* v[kIn];
      const int n = load(0, k.p.length, buffer, v);
      Store* y = k.out + base[2];
      if constexpr (Math::kIterative) {
        sparse_row<kPower>(writer(false, v[0]), v[0], n, y);
      } else if constexpr (kIn == 1) {
        A e[kRowPiece];  // (softmax's exps, scaled into its outputs; log_softmax's are not kept)
        const std::optional<SoftmaxStats<A>> s =
            row_stats(v[0], n, k.math.kind == SoftmaxKind::log_softmax ? nullptr : e);
        if (!s) return write(writer(false), 0, n);
        const typename Math::Writer w = k.math.writer(*s);
        if (!w.log) return scale_row(e, n, w.scale, y);
        write_tile<true>(&w, v[0], n, 1, n, y, n);
      } else {
        gradient_row(k.math.writer(row_sum(k.math, v[0], v[1], n)), v[0], v[1], n, y);
      }
    }

    // The backward's outputs of n contiguous (y, dy).
    static void gradient_row(const typename Math::Writer& w, const A* y, const A* dy, int n, Store* out) {
      if constexpr (std::is_same_v<Math, SparseBackwardMath<A>>)
        sparse_gradient_row(w, y, dy, n, out);
      else
        write_tile<true>(&w, y, n, dy, n, 1, n, out, n);
    }

    void write(const typename Math::Writer& w, int64_t begin, int64_t end) const {
      if constexpr (kUnit) {
        for (int64_t b = begin; b < end; b += kRowPiece) {
          A buffer[kIn][kRowPiece];
          const A* v[kIn];
          const int64_t piece_end = std::min(end, b + kRowPiece);
          if constexpr (kKeeps) {
            if (kept) {
              const Partial& q = (*kept)[b / kRowPiece];
              if (finite(q.max) && q.sum == q.sum)  // the piece's exps are kept
                scale_row(exps + b, static_cast<int>(piece_end - b), softmax_term(q.max, w.max) * w.scale,
                          k.out + base[2] + b);
              else
                write_elements(w, b, piece_end);
              continue;
            }
          }
          const int n = load(b, piece_end, buffer, v);
          if constexpr (Math::kIterative)
            sparse_row<kPower>(w, v[0], n, k.out + base[2] + b);
          else if constexpr (kIn == 1)
            write_tile<true>(&w, v[0], n, 1, n, k.out + base[2] + b, n);
          else
            gradient_row(w, v[0], v[1], n, k.out + base[2] + b);
        }
        return;
      }
      write_elements(w, begin, end);
    }
    void write_elements(const typename Math::Writer& w, int64_t begin, int64_t end) const {
      for (int64_t i = begin; i < end; ++i) {
        A v[kIn];
        for (int t = 0; t < kIn; ++t) v[t] = k.at(t, offset(t, i));
        k.out[offset(2, i)] = store_as<Store>(w(v));
      }
    }
  };

  template <bool kUnit>
  void rows() const {
    const int64_t pieces = ceil_div(p.length, kRowPiece);
    auto piece_end = [&](int64_t c) { return std::min(p.length, (c + 1) * kRowPiece); };
    // Softmax's exps kept from the stats pass for the outputs: in y itself, or (16-bit outputs) in a
    // buffer of the row's length, for rows up to kKeptInBuffer elements.
    const bool in_buffer = !std::is_same_v<Store, A>;
    const bool keeps_exps =
        Row<kUnit>::kKeeps && p.kind == SoftmaxKind::softmax && pieces > 1 && (!in_buffer || p.length <= kKeptInBuffer);
    const auto exps_of = [&](const int64_t(&base)[kSoftmaxTensors], std::vector<A>& buffer) -> A* {
      if (!keeps_exps) return nullptr;
      if constexpr (std::is_same_v<Store, A>) return out + base[2];
      return buffer.data();
    };
    if (p.rows >= omp_get_max_threads() || pieces == 1) {
#pragma omp parallel if (p.rows * p.length > kParallelThreshold)
      {
        std::vector<A> buffer(keeps_exps && in_buffer ? static_cast<size_t>(p.length) : 0);
#pragma omp for schedule(static)
        for (int64_t r = 0; r < p.rows; ++r) {
          int64_t base[kSoftmaxTensors];
          p.walk.offsets(r, base);
          if constexpr (kUnit) {
            if (pieces == 1) {
              Row<kUnit>{*this, base, p.dim_stride}.whole();
              continue;
            }
          }
          std::vector<Partial> kept(keeps_exps ? static_cast<size_t>(pieces) : 0);
          const Row<kUnit> row{*this, base, p.dim_stride, keeps_exps ? &kept : nullptr, exps_of(base, buffer)};
          row.write(row.writer(false), 0, p.length);
        }
      }
      return;
    }
    std::vector<A> buffer(keeps_exps && in_buffer ? static_cast<size_t>(p.length) : 0);
    for (int64_t r = 0; r < p.rows; ++r) {  // few long rows: the pieces of each in parallel
      int64_t base[kSoftmaxTensors];
      p.walk.offsets(r, base);
      std::vector<Partial> kept(keeps_exps ? static_cast<size_t>(pieces) : 0);
      const Row<kUnit> row{*this, base, p.dim_stride, keeps_exps ? &kept : nullptr, exps_of(base, buffer)};
      const typename Math::Writer w = row.writer(true);
#pragma omp parallel for schedule(static)
      for (int64_t c = 0; c < pieces; ++c) row.write(w, c * kRowPiece, piece_end(c));
    }
  }

  // The outer fast path, where every view steps by 1 along the walk's innermost dim: kCols
  // neighbouring columns of one line of it per work item (256 bytes of each input row), tiles of
  // kTileRows positions x columns read row by row (unit-stride runs), each column's state folded
  // across the tiles in order.
  static constexpr int kCols = std::clamp<int>(256 / sizeof(Load), 64, kOuterColumns);
  static constexpr int kTileRows = kOuterTile / kCols;
  void outer_tiled() const {
    const int64_t line = p.walk.inner_size(), per_line = ceil_div(line, kCols), items = p.rows / line * per_line;
#pragma omp parallel for schedule(static) if (p.rows * p.length > kParallelThreshold)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t first = item / per_line * line + item % per_line * kCols;
      const int cols = static_cast<int>(std::min<int64_t>(kCols, line - item % per_line * kCols));
      int64_t base[kSoftmaxTensors];
      p.walk.offsets(first, base);
      A buffer[kIn][kOuterTile];
      const A* v[kIn];
      int64_t ld[kIn];
      auto load = [&](int64_t l0, int rows) {
        for (int t = 0; t < kIn; ++t) {
          ld[t] = p.dim_stride[t];
          v[t] = as_compute(in[t] + base[t] + l0 * ld[t], ld[t], rows, cols, buffer[t]);
        }
      };
      typename Math::Writer w[kCols];
      A max[kCols], sum[kCols];
      for (int c = 0; c < cols; ++c) max[c] = -std::numeric_limits<A>::infinity(), sum[c] = A(0);
      for (int64_t l0 = 0; l0 < p.length; l0 += kTileRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kTileRows, p.length - l0));
        load(l0, rows);
        if constexpr (kIn == 1)
          column_stats(math, v[0], ld[0], rows, cols, max, sum);
        else
          column_sums(v[0], ld[0], v[1], ld[1], rows, cols, math.kind == SoftmaxKind::log_softmax, sum);
      }
      for (int c = 0; c < cols; ++c) {
        if constexpr (kIn == 1)
          w[c] = math.writer({max[c], sum[c]});
        else
          w[c] = math.writer(sum[c]);
      }
      for (int64_t l0 = 0; l0 < p.length; l0 += kTileRows) {
        const int rows = static_cast<int>(std::min<int64_t>(kTileRows, p.length - l0));
        load(l0, rows);
        Store* y = out + base[2] + l0 * p.dim_stride[2];
        if constexpr (kIn == 1)
          write_tile<false>(w, v[0], ld[0], rows, cols, y, p.dim_stride[2]);
        else
          write_tile<false>(w, v[0], ld[0], v[1], ld[1], rows, cols, y, p.dim_stride[2]);
      }
    }
  }

  void outer() const {
    if constexpr (kTiledColumns<Math>) {
      bool unit = p.walk.rank > 0;
      for (int t = 0; t < kSoftmaxTensors; ++t) unit = unit && p.walk.inner_stride(t) == 1;
      if (unit) return outer_tiled();
    }
    const int64_t items = ceil_div(p.rows, kColumns);
#pragma omp parallel for schedule(dynamic) if (p.rows * p.length > kParallelThreshold)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t first = item * kColumns;
      const int columns = static_cast<int>(std::min<int64_t>(kColumns, p.rows - first));
      int64_t base[kColumns][kSoftmaxTensors];
      Partial total[kColumns];
      for (int j = 0; j < columns; ++j) {
        p.walk.offsets(first + j, base[j]);
        total[j] = Math::identity();
      }
      A tile[kColumns][kIn][kBlock];  // [column][input][position]: a column's block is one partial
      for (int64_t l0 = 0; l0 < p.length; l0 += kBlock) {
        for (int u = 0; u < kBlock; ++u)
          for (int t = 0; t < kIn; ++t)
            for (int j = 0; j < columns; ++j)
              tile[j][t][u] = l0 + u < p.length ? at(t, base[j][t] + (l0 + u) * p.dim_stride[t]) : Math::fill();
        for (int j = 0; j < columns; ++j) total[j] = Math::combine(total[j], math.partial(tile[j]));
      }
      typename Math::Writer w[kColumns];
      for (int j = 0; j < columns; ++j) w[j] = math.writer(total[j]);
      for (int64_t l = 0; l < p.length; ++l)
        for (int j = 0; j < columns; ++j) {
          A v[kIn];
          for (int t = 0; t < kIn; ++t) v[t] = at(t, base[j][t] + l * p.dim_stride[t]);
          out[base[j][2] + l * p.dim_stride[2]] = store_as<Store>(w[j](v));
        }
    }
  }
};

}  // namespace

Status launch(const LaunchContext&, const SoftmaxProblem& problem) {
  return dispatch_softmax<half, bfloat16>(problem, [&](auto math, auto load, auto store) {
    const Kernel<typename decltype(math)::type, typename decltype(load)::type, typename decltype(store)::type> k{
        problem};
    if (problem.variant == SoftmaxVariant::outer) {
      if constexpr (decltype(math)::type::kIterative)
        return Status::error(StatusCode::unsupported, "softmax: the outer variant has no multi-pass forward");
      else
        k.outer();
    } else {
      bool unit = true;
      for (int64_t s : problem.dim_stride) unit = unit && s == 1;
      if (unit)
        k.template rows<true>();
      else
        k.template rows<false>();
    }
    return Status::ok();
  });
}

}  // namespace baracuda::detail::cpu

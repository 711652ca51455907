#pragma once
// What the scan plans hand to a backend: x seen as `lines` lines of `n` elements along the scanned
// dim (a Walker over the other dims gives each line's first offsets, one stride per view along the
// dim), the kernel the plan chose at select and its geometry. The forward folds each line with its
// kind's math (common/scan_math.hpp); the backward scans AffineMath states the other way.
// The problem and the passes' Steps are read by NVRTC too (the kernels compiled at select); the
// dispatch and the geometry are the host's.
#include "baracuda/ops/scan_kind.hpp"
#include "common/checked.hpp"
#include "common/dispatch.hpp"
#include "common/elementwise.hpp"
#include "common/scan_math.hpp"
#include "ops/reduce_problem.hpp"  // to_acc, store_value, store_index
#if !defined(__CUDACC_RTC__)
#include <algorithm>
#include <vector>

#include "baracuda/ops/scan.hpp"
#include "ops/launch.hpp"
#endif

namespace baracuda::detail {

// In schema order (src/ops/scan.cpp lists them with their backends).
enum class ScanVariant : unsigned char { rows, columns };

// The views, in Walker order (the forward has x, out, indices; the backward all five).
enum ScanTensor : int { kScanX, kScanOut, kScanIndices, kScanDout, kScanDx, kScanTensors };

// The sizes that decide a kernel, from the descriptor alone.
struct ScanShape {
  int64_t lines = 0;      // product of the other dims
  int64_t n = 0;          // the scanned dim's size
  bool innermost = true;  // the scanned dim is the last of size > 1 (or none is): lines are contiguous
  int vector = 1;         // elements per 16-byte access of x
  int column_vector =
      1;  // columns: lines per unit (the largest power of 2 up to the vector dividing the innermost other size)
  int64_t state_bytes = 0;  // sizeof the math's State (the partials of a split line)
  bool backward = false;    // its elements are 3 values (an affine map and a factor), not 1
  bool indexed = false;     // cummax / cummin: each element's state and output carry an index
};

// CUDA rows: elements a thread folds per tile, in whole 16-byte vectors: 16 (f64 8; 64 bytes of f32
// in flight); wide elements 8 (f64 4): the backward's take 3 registers each, cummax's a value and
// two of index (16 spilled 628 bytes of f32 cummax). More spill past the 80 registers of 3 blocks
// an SM.
constexpr int scan_row_items(bool wide, int vector) { return std::min(4 * vector, 16) / (wide ? 2 : 1); }

// How the CUDA kernels cover the problem (src/cuda/common/scan_kernels.cuh): blocks of kScanBlock threads,
// `lanes` units of lines (rows: one line; columns: a 16-byte vector of neighbouring lines, or one)
// by `slices` threads along them, each thread folding `items` consecutive elements of its unit per
// tile. When the blocks of whole lines would leave the device's threads idle, the lines are cut into
// `pieces` of `piece` elements (whole tiles), each piece's total through the workspace.
struct ScanGeometry {
  int lanes = 1;
  int slices = 1;
  int items = 1;
  int64_t tile = 1;  // slices x items: the elements of a unit a block scans at once
  int64_t piece = 0;
  int64_t pieces = 1;
  bool piece_lanes = false;  // rows of a split: the lanes are consecutive pieces of one line, a warp each
  int unit = 1;              // lines a thread scans at once (columns: the 16-byte vector of them, or 1)
  int64_t line_blocks = 1;   // the grid: blocks across the units of lines (the kernel loops past 2^31 - 1)
  int64_t piece_blocks = 1;  // and along them (a block a piece, or with piece_lanes `lanes` pieces)
  CheckedSize workspace;     // lines x pieces states (split lines only)
};
// What a backend runs.
struct ScanProblem {
  bool backward = false;
  ScanKind kind = ScanKind::cumsum;
  bool reverse = false;
  DType dtype = DType::f32;        // x (and dx)
  DType out_dtype = DType::f32;    // out (and dout)
  DType index_dtype = DType::i64;  // indices
  ScanVariant variant = ScanVariant::rows;
  ScanGeometry geometry;
  int64_t n = 0;
  int64_t lines = 0;
  Walker<kScanTensors> walk;         // the lines: every view's offsets of a line's element 0
  int64_t along[kScanTensors] = {};  // every view's stride along the scanned dim
  bool vector[kScanTensors] = {};    // CUDA: 16-byte accesses of the view (rows: along its lines;
                                     // columns: across a unit of lines)
  const void* x = nullptr;
  void* out = nullptr;  // the backward reads it
  void* indices = nullptr;
  const void* dout = nullptr;
  void* dx = nullptr;
  void* partials = nullptr;  // in the workspace: lines x pieces states
};

// Whether the kernel walks a line from its last element to its first: the forward with reverse, the
// backward (a reversed scan) without.
BARACUDA_HD bool descending(const ScanProblem& p) { return p.backward != p.reverse; }

// The per-element work of a pass, written once for both backends: element() reads what element i
// of a line contributes (`line`: every view's offset of the line's element 0), fold() adds it to a
// state, emit() writes the output of element i from the state after it (emit_index() its index).
//   ScanForward:  the element is x[i]; the output finish(state) (and its index).
//   ScanBackward: the element is ScanGrad's affine map and factor; the output dx[i] = c s[i].
template <class Half, class BFloat16, class X, class MathT>
struct ScanForward {
  using Math = MathT;
  using A = typename Math::Acc;
  using State = typename Math::State;
  using Element = A;
  using Input = X;
  static constexpr int kOutput = kScanOut;                        // the view output() goes to
  static constexpr bool kIndexed = requires { Math::kIndexed; };  // cummax / cummin: indices too
  const ScanProblem& p;
  Math math{ReduceParams{}};

  // The view a CUDA kernel may load 16 bytes at a time, and the element of one of its values.
  BARACUDA_HD int vector_view() const { return kScanX; }
  BARACUDA_HD Element element_from(A x, int64_t) const { return x; }
  BARACUDA_HD A output(const State& s, const Element&) const { return math.finish(s).value; }
  BARACUDA_HD int64_t index_of(const State& s) const { return math.finish(s).index; }
  BARACUDA_HD void emit_index(const int64_t (&line)[kScanTensors], int64_t i, const State& s) const {
    if (p.indices) store_index(p.indices, p.index_dtype, line[kScanIndices] + i * p.along[kScanIndices], index_of(s));
  }

  BARACUDA_HD Element element(const int64_t (&line)[kScanTensors], int64_t i) const {
    return to_acc<A>(static_cast<const X*>(p.x)[line[kScanX] + i * p.along[kScanX]]);
  }
  BARACUDA_HD void fold(State& s, const Element& e, int64_t i) const { math.fold(s, e, i); }
  BARACUDA_HD void emit(const int64_t (&line)[kScanTensors], int64_t i, const State& s, const Element&) const {
    store_value<Half, BFloat16>(p.out, p.out_dtype, line[kScanOut] + i * p.along[kScanOut], math.finish(s));
  }
};

template <class Half, class BFloat16, class X>
struct ScanBackward {
  using A = acc_t<X>;
  using Math = AffineMath<A>;
  using State = typename Math::State;
  struct Element {
    State map;
    A c;
  };
  using Input = X;
  static constexpr int kOutput = kScanDx;
  static constexpr bool kIndexed = false;
  const ScanProblem& p;
  Math math{};

  // cumsum's elements are dout alone: 16-byte loads of it (the other kinds read neighbours).
  BARACUDA_HD int vector_view() const { return p.kind == ScanKind::cumsum ? kScanDout : -1; }
  BARACUDA_HD Element element_from(A dout, int64_t i) const {
    const bool has_next = p.reverse ? i > 0 : i + 1 < p.n;
    return {{has_next ? A(1) : A(0), dout}, A(1)};
  }
  // c = 0 (not the element a run of cummax's indices names; x = -inf) gives 0 whatever s is.
  BARACUDA_HD A output(const State& s, const Element& e) const { return e.c == A(0) ? A(0) : e.c * s.b; }
  BARACUDA_HD void emit_index(const int64_t (&)[kScanTensors], int64_t, const State&) const {}

  BARACUDA_HD A value(const void* base, int t, const int64_t (&line)[kScanTensors], int64_t i) const {
    return load_as<Half, BFloat16, A>(base, t == kScanX ? p.dtype : p.out_dtype, line[t] + i * p.along[t]);
  }
  BARACUDA_HD int64_t index(const int64_t (&line)[kScanTensors], int64_t i) const {
    return load_index(p.indices, p.index_dtype, line[kScanIndices] + i * p.along[kScanIndices]);
  }
  BARACUDA_HD Element element(const int64_t (&line)[kScanTensors], int64_t i) const {
    ScanGradInput<A> in;
    const int64_t next = p.reverse ? i - 1 : i + 1, prev = p.reverse ? i + 1 : i - 1;
    in.i = i;
    in.has_next = next >= 0 && next < p.n;
    in.dout = value(p.dout, kScanDout, line, i);
    switch (p.kind) {
      case ScanKind::cumprod:
        if (in.has_next) in.x_next = value(p.x, kScanX, line, next);
        if (prev >= 0 && prev < p.n) in.out_prev = value(p.out, kScanOut, line, prev);
        break;
      case ScanKind::logcumsumexp:
        in.x = value(p.x, kScanX, line, i);
        in.out = value(p.out, kScanOut, line, i);
        if (in.has_next) in.out_next = value(p.out, kScanOut, line, next);
        break;
      case ScanKind::cummax:
      case ScanKind::cummin:
        in.index = index(line, i);
        if (in.has_next) in.index_next = index(line, next);
        break;
      case ScanKind::cumsum:
        break;
    }
    Element e;
    ScanGrad::element(p.kind, in, e.map, e.c);
    return e;
  }
  BARACUDA_HD void fold(State& s, const Element& e, int64_t) const { math.fold(s, e.map); }
  BARACUDA_HD void emit(const int64_t (&line)[kScanTensors], int64_t i, const State& s, const Element& e) const {
    const A g = output(s, e);
    X* dx = static_cast<X*>(p.dx) + line[kScanDx] + i * p.along[kScanDx];
    if constexpr (std::is_arithmetic_v<X>)
      *dx = static_cast<X>(g);
    else
      *dx = X(static_cast<float>(g));
  }
};

inline constexpr int kScanBlock = 256;
inline constexpr int64_t kScanResidentThreads = 2048;  // per SM
// Blocks an SM holds (the kernels' __launch_bounds__): rows 3 (80 registers), columns 2 (128).
constexpr int scan_blocks_per_sm(ScanVariant v) { return v == ScanVariant::columns ? 2 : 3; }

#if !defined(__CUDACC_RTC__)
// Calls f(std::type_identity<Step>{}) with the pass's Step, over the backend's own 16-bit types:
// the forward's x also i32 or i64 (cumsum), the backward's floating only.
template <class Half, class BFloat16, class F>
Status dispatch_scan(const ScanProblem& p, F&& f) {
  if (p.backward)
    return dispatch_float<Half, BFloat16>(p.dtype, [&](auto x) {
      return f(std::type_identity<ScanBackward<Half, BFloat16, typename decltype(x)::type>>{});
    });
  return dispatch_float<Half, BFloat16, int32_t, int64_t>(p.dtype, [&](auto x) {
    using X = typename decltype(x)::type;
    return with_scan_math<acc_t<X>>(p.kind, [&](auto math) {
      return f(std::type_identity<ScanForward<Half, BFloat16, X, typename decltype(math)::type>>{});
    });
  });
}

// The CUDA kernels' geometry. rows: a unit is one line, each thread scan_row_items of it a tile; a
// warp a line where the lines alone fill the device's threads (no barrier in the scan), more threads
// a line (up to the block) where they do not, never more than its tile needs; the rest of the block
// on other lines. columns: 32 units across a warp (fewer where there are fewer), 4 elements of each
// a thread a tile (2 of 16-bit units of 8 lines).
// Blocks that leave the device's threads idle cut their lines into pieces until the blocks (rows: a
// warp a piece) fill it twice (two passes: the pieces' totals, then their scans from the prefixes: a
// single pass linking the pieces through the workspace was 2-4x slower, bench/NOTES.md).
inline ScanGeometry scan_geometry(ScanVariant variant, const ScanShape& s, int sm_count) {
  ScanGeometry g;
  const int64_t resident = int64_t{std::max(sm_count, 1)} * scan_blocks_per_sm(variant) * kScanBlock;  // threads
  const int64_t n = std::max<int64_t>(s.n, 1), lines = std::max<int64_t>(s.lines, 1);
  int64_t units = 0;
  if (variant == ScanVariant::rows) {
    g.items = scan_row_items(s.backward || s.indexed, s.vector);
    const int64_t wanted = std::clamp<int64_t>(pow2_at_least(ceil_div(resident, lines)), 32, kScanBlock);
    g.slices = static_cast<int>(std::min(wanted, pow2_at_least(ceil_div(n, g.items))));
    g.lanes = kScanBlock / g.slices;
    units = lines;
  } else {
    g.items = s.vector <= 4 ? 4 : 2;  // of 4 to 8 lines each: 16 elements a thread
    units = ceil_div(lines, s.column_vector);
    g.lanes = static_cast<int>(std::min<int64_t>(32, pow2_at_least(units)));
    g.slices = kScanBlock / g.lanes;
  }
  g.tile = int64_t{g.slices} * g.items;
  int64_t line_blocks = ceil_div(units, g.lanes), tiles = ceil_div(n, g.tile);
  const bool split = tiles > 1 && line_blocks * kScanBlock < resident;
  int64_t fill = int64_t{std::max(sm_count, 1)} * kScanResidentThreads / kScanBlock;  // blocks
  if (split && variant == ScanVariant::rows) {
    // A warp a piece (the block's 8 warps on consecutive pieces of a line): no barrier in the
    // pieces' scans (one line of 2^26: 0.312 ms against 0.347 with a block a piece, bench/NOTES.md).
    g.piece_lanes = true;
    g.slices = 32;
    g.lanes = kScanBlock / 32;
    g.tile = int64_t{g.slices} * g.items;
    tiles = ceil_div(n, g.tile);
    line_blocks = units;
    fill *= g.lanes;  // warps
  }
  const int64_t wanted = split ? std::min(tiles, ceil_div(2 * fill, line_blocks)) : 1;
  g.piece = g.tile * ceil_div(tiles, wanted);
  g.pieces = ceil_div(n, g.piece);
  g.unit = variant == ScanVariant::columns ? s.column_vector : 1;
  g.line_blocks = line_blocks;
  g.piece_blocks = g.piece_lanes ? ceil_div(g.pieces, g.lanes) : g.pieces;
  if (g.pieces > 1) g.workspace = CheckedSize(lines) * g.pieces * s.state_bytes;
  return g;
}

namespace cpu {
Status launch(const LaunchContext& ctx, const ScanProblem& problem);
}  // namespace cpu
namespace cuda {  // (the kernels are compiled at select)
Status launch(const LaunchContext& ctx, const ScanProblem& problem);
// Compiles (or finds in the caches) the kernels of the problem's dtypes, kind and variant: select's part.
Status prepare_scan(const PlanTarget& target, const ScanProblem& problem);
}  // namespace cuda
#endif

}  // namespace baracuda::detail

#if !defined(__CUDACC_RTC__)
namespace baracuda::detail::jit {
struct Program;
// Every scan program: each dtype, kind, direction and variant (cuda/scan.cpp).
std::vector<Program> scan_programs();
}  // namespace baracuda::detail::jit
#endif

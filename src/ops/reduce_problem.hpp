#pragma once
// What the reduction plans hand to a backend: x seen as `outputs` rows of `count` reduced elements
// (a Walker over the kept dims gives each output's offsets, one over the reduced dims each element's),
// the kernel the plan chose at select and its geometry, and the dispatch from dtypes and kind to the
// typed math. The backward first reduces its statistic (where its kind has one) with the same kernels
// into the workspace, then maps every element of x (a Walker over all of x's dims).
// The problem and its loads and stores are read by NVRTC too (the kernels compiled at select); the
// dispatch and the geometry are the host's.
#include "baracuda/core/dtype_kind.hpp"
#include "common/checked.hpp"
#include "common/dispatch.hpp"
#include "common/elementwise.hpp"
#include "common/reduce_math.hpp"
#if !defined(__CUDACC_RTC__)
#include <algorithm>
#include <optional>
#include <type_traits>
#include <vector>

#include "baracuda/ops/reduce.hpp"
#include "ops/launch.hpp"
#endif

namespace baracuda::detail {

// In schema order (src/ops/reduce.cpp lists them with their backends).
enum class ReduceVariant : unsigned char { rows, split_rows, columns };

// The sizes that decide a kernel, from the descriptor alone.
struct ReduceShape {
  int64_t outputs = 0;      // product of the kept sizes
  int64_t count = 0;        // product of the reduced sizes
  bool innermost = true;    // the last dim of size > 1 is reduced (or none is > 1): rows are contiguous
  int vector = 1;           // elements per 16-byte access of x
  int column_vector = 1;    // columns: outputs per unit (the vector when the innermost kept size is a multiple)
  int64_t state_bytes = 0;  // sizeof the (forward's or the backward's statistic's) math State
};

// How the CUDA kernels cover the problem (see src/cuda/common/reduce_kernels.cuh).
struct ReduceGeometry {
  int group = 1;          // rows: threads per output (1..32 in a warp, or a block of 128..1024)
  int splits = 1;         // split_rows, columns: blocks along each output's reduced elements
  int64_t piece = 0;      // split_rows, columns: reduced elements per split
  int lanes = 1;          // columns: threads across outputs (each a 16-byte vector of them, or one)
  int slices = 1;         // columns: threads along the reduced elements
  CheckedSize workspace;  // partial states: splits x outputs (and the backward's statistics)
};

// Tensors of the backward's map, in Walker order.
enum ReduceMapTensor : int { kMapX, kMapDx, kMapOut, kMapDout, kMapIndices, kMapStats, kMapReducedIndex, kMapTensors };

// What a backend runs.
struct ReduceProblem {
  bool backward = false;
  ReduceParams params;
  DType dtype = DType::f32;        // x (and dx)
  DType out_dtype = DType::f32;    // out (and dout)
  DType index_dtype = DType::i64;  // indices
  ReduceVariant variant = ReduceVariant::rows;
  ReduceGeometry geometry;
  int64_t outputs = 0;
  Walker<3> kept;           // the outputs: x, out, indices or var_mean's mean (forward; no kind has both)
  Walker<1> reduced;        // an output's elements: x
  bool vectorized = false;  // CUDA rows / columns: 16-byte accesses of x
  const void* x = nullptr;
  void* out = nullptr;  // the backward's: out where the kind reads it, or var_mean's dmean (kMapOut)
  void* indices = nullptr;
  void* mean = nullptr;  // var_mean's, in out's dtype
  // The backward: the views of its map over x's shape (out, dout, indices broadcast along the reduced
  // dims; the statistics, one GradStat per output in the workspace; the reduced index, a virtual
  // tensor whose offset is an element's index in its reduced set).
  Walker<kMapTensors> map;
  const void* dout = nullptr;
  void* dx = nullptr;
  void* stats = nullptr;     // in the workspace: outputs x sizeof(GradStat)
  void* partials = nullptr;  // in the workspace, after the statistics
  bool has_stats = false;
};

// Loads and stores through the backend's own 16-bit types (Half, BFloat16 convert from and to float).
template <class A, class T>
BARACUDA_HD A to_acc(const T& v) {
  if constexpr (std::is_arithmetic_v<T>)
    return static_cast<A>(v);
  else
    return static_cast<A>(static_cast<float>(v));
}

// One output: its value in `dtype` (bool is value != 0; an integer wraps; a floating math's i64 is a
// count kind's, exact in the index slot).
template <class Half, class BFloat16, class A>
BARACUDA_HD void store_value(void* base, DType dtype, int64_t offset, const ReduceValue<A>& r) {
  switch (dtype) {
    case DType::f16:
      static_cast<Half*>(base)[offset] = Half(static_cast<float>(r.value));
      break;
    case DType::bf16:
      static_cast<BFloat16*>(base)[offset] = BFloat16(static_cast<float>(r.value));
      break;
    case DType::f32:
      static_cast<float*>(base)[offset] = static_cast<float>(r.value);
      break;
    case DType::f64:
      static_cast<double*>(base)[offset] = static_cast<double>(r.value);
      break;
    case DType::boolean:
      static_cast<bool*>(base)[offset] = r.value != A(0);
      break;
    case DType::i32:
      if constexpr (std::is_integral_v<A>) static_cast<int32_t*>(base)[offset] = static_cast<int32_t>(r.value);
      break;
    case DType::i64:
      static_cast<int64_t*>(base)[offset] = std::is_integral_v<A> ? static_cast<int64_t>(r.value) : r.index;
      break;
    default:
      break;
  }
}
BARACUDA_HD void store_index(void* base, DType dtype, int64_t offset, int64_t index) {
  if (dtype == DType::i32)
    static_cast<int32_t*>(base)[offset] = static_cast<int32_t>(index);
  else
    static_cast<int64_t*>(base)[offset] = index;
}

// A value of a view of a floating dtype (x's, or out's) in the compute type A.
template <class Half, class BFloat16, class A>
BARACUDA_HD A load_as(const void* base, DType dtype, int64_t offset) {
  switch (dtype) {
    case DType::f16:
      return to_acc<A>(static_cast<const Half*>(base)[offset]);
    case DType::bf16:
      return to_acc<A>(static_cast<const BFloat16*>(base)[offset]);
    case DType::f64:
      return static_cast<A>(static_cast<const double*>(base)[offset]);
    default:
      return static_cast<A>(static_cast<const float*>(base)[offset]);
  }
}
BARACUDA_HD int64_t load_index(const void* base, DType dtype, int64_t offset) {
  return dtype == DType::i32 ? static_cast<const int32_t*>(base)[offset] : static_cast<const int64_t*>(base)[offset];
}

// Writes a finished output of the forward (value and, for the indexed kinds, its index; var_mean's
// mean where the indexed kinds' index goes).
template <class Half, class BFloat16, class A>
BARACUDA_HD void store_output(const ReduceProblem& p, const int64_t (&offsets)[3], const ReduceValue<A>& r) {
  if (p.out) store_value<Half, BFloat16>(p.out, p.out_dtype, offsets[1], r);
  if (p.indices) store_index(p.indices, p.index_dtype, offsets[2], r.index);
  if (p.mean) store_value<Half, BFloat16>(p.mean, p.out_dtype, offsets[2], ReduceValue<A>{r.mean});
}

// Neighbouring outputs a columns thread folds at once: a 16-byte vector of them where their states
// are small (8 bytes at most: sums, products, logsumexp, counts), else at most 4 (bf16 var with 8
// states of 16 bytes ran at 11% of copy on H200).
BARACUDA_HD constexpr int column_unit(int element_bytes, int64_t state_bytes) {
  const int vector = 16 / element_bytes;
  return state_bytes <= 8 || vector < 4 ? vector : 4;
}

inline constexpr int kReduceBlock = 256;  // threads of a split, a column tile, the map
inline constexpr int kMapVectors = 4;     // vectors per thread per block of the map

#if !defined(__CUDACC_RTC__)
inline int vector_of(DType dtype) { return static_cast<int>(16 / dtype_size(dtype)); }

// Calls f(std::type_identity<X>{}, std::type_identity<Math>{}) with x's element type (the backend's
// own 16-bit types; the forward's also i32, i64 and bool) and the math the pass reduces with: the
// kind's forward math, or with kStats its backward's statistic (floating x only: integers have no
// gradient).
template <bool kStats, class Half, class BFloat16, class F>
Status dispatch_reduce(const ReduceProblem& p, F&& f) {
  auto each = [&](auto x) {
    using Acc = acc_t<typename decltype(x)::type>;
    auto run = [&](auto math) { return f(x, math); };
    if constexpr (kStats)
      return with_stats_math<Acc>(p.params, run);
    else
      return with_reduce_math<Acc>(p.params, run);
  };
  if constexpr (kStats)
    return dispatch_float<Half, BFloat16>(p.dtype, each);
  else
    return dispatch_float<Half, BFloat16, int32_t, int64_t, bool>(p.dtype, each);
}

// sizeof the State the pass reduces (its partials' size).
inline int64_t state_bytes(const ReduceParams& params, DType dtype, bool stats) {
  auto size = [](auto math) { return int64_t{sizeof(typename decltype(math)::type::State)}; };
  if (stats) return dtype == DType::f64 ? with_stats_math<double>(params, size) : with_stats_math<float>(params, size);
  return with_acc_type(dtype, [&](auto a) { return with_reduce_math<typename decltype(a)::type>(params, size); });
}

inline constexpr int kReduceMaxGroup = 256;         // threads of the widest rows group (a block)
inline constexpr int64_t kReduceMaxSplits = 65535;  // a grid's y extent
inline constexpr int64_t kResidentThreads = 2048;   // per SM

// The CUDA kernels' geometry of a variant (the CPU's needs none). Every variant runs every shape;
// each takes the threads and splits that fill the device with several vectors per thread.
inline ReduceGeometry reduce_geometry(ReduceVariant variant, const ReduceShape& s, int sm_count) {
  ReduceGeometry g;
  const int64_t v = s.vector, vectors = ceil_div(s.count, v), outputs = std::max<int64_t>(s.outputs, 1);
  const int64_t resident = int64_t{std::max(sm_count, 1)} * kResidentThreads;
  switch (variant) {
    case ReduceVariant::rows:
      // A (sub-)warp per output with about 4 vectors a lane; a wider group (up to a block) while the
      // outputs leave half the device idle and each thread keeps 16 vectors (fewer make the group's
      // reduction the cost: bf16 [8192, 4096] sum at 64 threads an output, 8 vectors each, 73% of copy).
      g.group = static_cast<int>(std::min<int64_t>(32, pow2_at_least(ceil_div(vectors, 4))));
      while (g.group < kReduceMaxGroup && outputs * g.group < resident / 2 && vectors >= int64_t{g.group} * 32)
        g.group *= 2;
      return g;
    case ReduceVariant::split_rows: {
      // Blocks of kReduceBlock threads along each output, enough of them to fill the device twice,
      // each thread with 16 vectors at least; pieces in whole blocks of vectors.
      g.group = kReduceBlock;
      const int64_t step = int64_t{kReduceBlock} * v;
      const int64_t wanted = std::clamp<int64_t>(ceil_div(2 * resident / kReduceBlock, outputs), 1,
                                                 std::max<int64_t>(1, vectors / (kReduceBlock * 16)));
      g.piece = step * std::max({int64_t{1}, ceil_div(ceil_div(s.count, wanted), step),
                                 ceil_div(s.count, step * kReduceMaxSplits)});
      g.splits = static_cast<int>(std::max<int64_t>(1, ceil_div(s.count, g.piece)));
      break;
    }
    case ReduceVariant::columns: {
      // A warp across 32 units of outputs (16-byte vectors of them, or single ones: a row's 512 bytes
      // at a time), fewer only where there are fewer units; the rest of the block along the reduced
      // elements; splits along them until the tiles fill the device twice, each slice keeping 32
      // elements (fewer make the partials' traffic and their finish the cost).
      const int64_t units = ceil_div(outputs, s.column_vector);
      g.lanes = static_cast<int>(std::min<int64_t>(32, pow2_at_least(units)));
      g.slices = kReduceBlock / g.lanes;
      const int64_t tiles = ceil_div(units, g.lanes);
      const int64_t wanted = std::clamp<int64_t>(ceil_div(2 * resident / kReduceBlock, tiles), 1,
                                                 std::max<int64_t>(1, s.count / (int64_t{g.slices} * 32)));
      g.piece = std::max(ceil_div(std::max<int64_t>(s.count, 1), wanted), ceil_div(s.count, kReduceMaxSplits));
      g.splits = static_cast<int>(std::max<int64_t>(1, ceil_div(s.count, g.piece)));
      break;
    }
  }
  // split_rows always folds through the workspace (one split included); columns only when split.
  if (g.splits > 1 || variant == ReduceVariant::split_rows)
    g.workspace = CheckedSize(g.splits) * s.outputs * s.state_bytes;
  return g;
}

namespace cpu {
Status launch(const LaunchContext& ctx, const ReduceProblem& problem);
}  // namespace cpu
namespace cuda {  // (the kernels are compiled at select)
Status launch(const LaunchContext& ctx, const ReduceProblem& problem);
// Compiles (or finds in the caches) the kernels of the problem's dtypes and kind: select's part.
Status prepare_reduce(const PlanTarget& target, const ReduceProblem& problem);
}  // namespace cuda
#endif

}  // namespace baracuda::detail

#if !defined(__CUDACC_RTC__)
namespace baracuda::detail::jit {
struct Program;
// Every reduction program: each dtype, kind (norm's p) and direction (cuda/reduce.cpp).
std::vector<Program> reduce_programs();
}  // namespace baracuda::detail::jit
#endif

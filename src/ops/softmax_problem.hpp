#pragma once
// What the softmax plans hand to a backend: a tensor seen as `rows` rows of `length` elements along
// dim (the rows walked by a Walker over the other dims), the kernel the plan chose at select and its
// geometry, and the dispatch from dtypes to the typed math. The kernel shapes (which variant holds
// how long a row, with how many threads) are decided here, from the shape alone, for select (which
// must know whether a forced variant fits and how much workspace it needs) and for the CUDA launcher.
// NVRTC reads the constants, the kernels' arguments and the maths too (the kernels are compiled at
// select); the shapes, the geometry and the dispatch are the host's.
#include "baracuda/ops/softmax_kind.hpp"
#include "common/checked.hpp"
#include "common/elementwise.hpp"
#include "common/softmax_math.hpp"
#if !defined(__CUDACC_RTC__)
#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "baracuda/ops/softmax.hpp"
#include "common/dispatch.hpp"
#include "ops/launch.hpp"
#endif

namespace baracuda::detail {

// In schema order (src/ops/softmax.cpp lists them with their backends).
// pass_row last: the backward's schema lists the variants before it.
enum class SoftmaxVariant : unsigned char { warp_row, block_row, cluster_row, split_row, outer, rows, pass_row };

// Tensors of a problem, in Walker order: forward (x, -, y), backward (y, dy, dx).
inline constexpr int kSoftmaxTensors = 3;

inline constexpr int kWarpRowThreads = 128;
inline constexpr int64_t kMultiPassValues = 16;
#ifndef BARACUDA_SOFTMAX_LANE_VECTORS
#define BARACUDA_SOFTMAX_LANE_VECTORS 2
#endif
inline constexpr int64_t kOnePassLaneVectors = BARACUDA_SOFTMAX_LANE_VECTORS;
inline constexpr int kMaxBlockThreads = 1024;
inline constexpr int kMaxCluster = 8;  // the portable cluster size
inline constexpr int64_t kClusterBlockThreads = 512;
// split_row: blocks of kSplitThreads, two an SM (64 registers a thread), a piece of kSplitMinLength
// to kSplitMaxLength elements each: pieces long enough that folding the row's partials costs little
// beside reading the piece, and at least kSplitPiecesPerSm an SM where the rows allow.
inline constexpr int kSplitThreads = 512;
inline constexpr int kSplitMinBlocks = 2;
inline constexpr int64_t kSplitMinLength = 8192, kSplitMaxLength = 131072, kSplitPiecesPerSm = 4;
inline constexpr int kOuterThreads = 256;
inline constexpr int kPassThreads = 512;

// Everything a CUDA kernel reads of the problem: its one argument, by value (the host fills it).
struct SoftmaxKernelArgs {
  const void* in[2];
  void* out;
  Walker<kSoftmaxTensors> walk;
  int64_t stride[kSoftmaxTensors];  // along dim
  int64_t length, rows;
  SoftmaxKind kind;
  bool vectorized;
  int lanes;                     // warp_row: threads per row; outer: threads across columns
  int64_t splits, split_length;  // split_row
  void* partials;                // split_row: one per piece (the workspace)
};

// A kernel's access sizes, from its math and the element types it loads and stores (the host picks
// the kernels by them).
template <class Math, class Load, class Store>
struct SoftmaxTypes {
  using A = typename Math::Value;
  using Partial = typename Math::Partial;
  static constexpr int kIn = Math::kInputs;
  // Elements per access: 16 bytes of the narrower type (two 16-byte accesses of the wider).
  static constexpr int kVector = static_cast<int>(16 / (sizeof(Load) < sizeof(Store) ? sizeof(Load) : sizeof(Store)));
  // Vectors of each input a thread holds at most: 128 bytes of A values (SoftmaxShape::held).
  static constexpr int kMaxChunks = 128 / (static_cast<int>(sizeof(A)) * kIn) / kVector;
};

#if !defined(__CUDACC_RTC__)
// The sizes that decide a kernel.
struct SoftmaxShape {
  int64_t length = 0;           // elements along dim
  int64_t rows = 0;             // the product of the other sizes
  bool innermost = true;        // no dim after `dim` has a size > 1
  int vector = 1;               // elements per 16-byte access of the narrower dtype (the wider takes two)
  int held = 0;                 // elements of each input one thread holds at most in registers (128 bytes)
  int64_t partial_bytes = 0;    // sizeof the math's Partial (what split_row keeps per piece)
  bool multi_pass = false;      // the sparsemax / entmax15 forward: several reductions of each row
  bool narrow_forward = false;  // softmax / log_softmax forward, x and y both 16-bit
};

// Calls f(std::type_identity<Math>{}) with the math of a kind and direction in compute type Acc:
// the one place that maps kinds to maths (the backends' dispatch and the partials' size use it).
template <class Acc, class F>
decltype(auto) with_math(SoftmaxKind kind, bool backward, F&& f) {
  if (backward)
    return is_sparse(kind) ? f(std::type_identity<SparseBackwardMath<Acc>>{})
                           : f(std::type_identity<SoftmaxBackwardMath<Acc>>{});
  if (kind == SoftmaxKind::sparsemax) return f(std::type_identity<SparseForwardMath<Acc, 1>>{});
  if (kind == SoftmaxKind::entmax15) return f(std::type_identity<SparseForwardMath<Acc, 2>>{});
  return f(std::type_identity<SoftmaxForwardMath<Acc>>{});
}

inline SoftmaxShape softmax_shape(const SoftmaxDescriptor& d, int dim, bool backward) {
  const DType out = d.out_dtype.value_or(d.dtype);
  const int64_t in_size = static_cast<int64_t>(dtype_size(d.dtype)), out_size = static_cast<int64_t>(dtype_size(out));
  const int64_t acc = d.dtype == DType::f64 ? 8 : 4;
  const int inputs = backward ? 2 : 1;
  SoftmaxShape s;
  s.length = d.shape.dims[dim];
  s.rows = 1;
  for (int k = 0; k < d.shape.rank; ++k) {
    if (k != dim) s.rows *= d.shape.dims[k];  // below kMaxElements: check_shape bounded the product
    if (k > dim && d.shape.dims[k] > 1) s.innermost = false;
  }
  s.vector = static_cast<int>(16 / std::min(in_size, out_size));
  s.held = static_cast<int>(128 / (acc * inputs));
  auto partial_size = [](auto math) { return int64_t{sizeof(typename decltype(math)::type::Partial)}; };
  s.partial_bytes = d.dtype == DType::f64 ? with_math<double>(d.kind, backward, partial_size)
                                          : with_math<float>(d.kind, backward, partial_size);
  s.multi_pass = !backward && is_sparse(d.kind);
  s.narrow_forward = !backward && !s.multi_pass && in_size == 2 && out_size == 2;
  return s;
}

// How the CUDA kernels of a variant cover the rows (see src/cuda/common/softmax_kernels.cuh).
struct SoftmaxGeometry {
  int threads = 0;            // per block
  int lanes = 0;              // warp_row: threads per row (a power of two <= 32); outer: threads across columns
  int cluster = 1;            // cluster_row: blocks per row; outer: blocks per tile of columns
  int chunks = 0;             // warp/block/cluster_row: 16-byte vectors of each input held per thread
  int slices = 0;             // outer: threads along dim per column
  int64_t splits = 0;         // split_row: pieces (blocks) per row
  int64_t split_length = 0;   // split_row: elements per piece (a multiple of the vector)
  CheckedSize workspace = 0;  // bytes (split_row: the pieces' partials)
};

// The longest row a held variant keeps in registers: (blocks per row) x threads x held elements.
inline int64_t held_capacity(SoftmaxVariant v, const SoftmaxShape& s) {
  const int64_t threads = v == SoftmaxVariant::warp_row ? 32 : kMaxBlockThreads;
  return threads * s.held * (v == SoftmaxVariant::cluster_row ? kMaxCluster : 1);
}

// The geometry of `variant` for this shape, or nullopt when the variant cannot run it (a held
// variant whose row does not fit; a cluster before sm_90).
inline std::optional<SoftmaxGeometry> softmax_geometry(SoftmaxVariant variant, const SoftmaxShape& s, int arch,
                                                       int sm_count) {
  SoftmaxGeometry g;
  const int64_t v = s.vector, length = std::max<int64_t>(s.length, 1);
  switch (variant) {
    case SoftmaxVariant::warp_row:
    case SoftmaxVariant::block_row:
    case SoftmaxVariant::cluster_row: {
      if (length > held_capacity(variant, s) || (variant == SoftmaxVariant::cluster_row && arch < 90))
        return std::nullopt;
      if (variant == SoftmaxVariant::warp_row) {
        g.threads = kWarpRowThreads;
        // The fewest lanes that cover the row with kOnePassLaneVectors vectors each (short rows
        // then put several rows in a warp: fewer shuffles an element, more loads in flight a lane);
        // the multi-pass forward takes about 16 values a lane: more rows to a warp share each pass's
        // shuffles and steps of the search.
        const int64_t per_lane = s.multi_pass ? kMultiPassValues : kOnePassLaneVectors * v;
        g.lanes = static_cast<int>(std::min<int64_t>(32, pow2_at_least(ceil_div(length, per_lane))));
        g.chunks = static_cast<int>(pow2_at_least(ceil_div(length, g.lanes * v)));
        return g;
      }
      // The fewest blocks per row (a cluster has two at least), then the fewest vectors per thread,
      // then threads in whole warps.
      // A row that needs a cluster of 4 or 8 blocks of 1024 threads takes blocks of
      // kClusterBlockThreads where 8 of them hold it: two blocks then share an SM, one's loads in
      // flight while the other reduces and stores. Measured on H100: f32 [4096, 131072] forward
      // 4 x 1024 2.135 ms, 8 x 512 1.897 ms; but bf16 [1024, 32000] backward 2 x 1024 0.122 ms,
      // 4 x 512 0.145 ms (more cluster barriers for a short row), so two blocks stay as they are.
      int64_t block_threads = kMaxBlockThreads;
      if (variant == SoftmaxVariant::cluster_row) {
        if (length > 2 * kMaxBlockThreads * s.held && length <= int64_t{kMaxCluster} * kClusterBlockThreads * s.held)
          block_threads = kClusterBlockThreads;
        g.cluster = 2;
        while (g.cluster < kMaxCluster && length > g.cluster * block_threads * s.held) g.cluster *= 2;
      }
      const int64_t group = g.cluster * block_threads * v;
      g.chunks = static_cast<int>(pow2_at_least(ceil_div(length, group)));
      g.threads = static_cast<int>(32 * ceil_div(ceil_div(length, int64_t{g.cluster} * v * g.chunks), 32));
      return g;
    }
    case SoftmaxVariant::split_row: {
      g.threads = kSplitThreads;
      const int64_t wanted = ceil_div(kSplitPiecesPerSm * std::max(sm_count, 1), std::max<int64_t>(s.rows, 1));
      g.split_length = v * ceil_div(std::clamp(ceil_div(length, wanted), kSplitMinLength, kSplitMaxLength), v);
      g.splits = ceil_div(length, g.split_length);
      g.workspace = CheckedSize(s.rows) * g.splits * s.partial_bytes;
      return g;
    }
    case SoftmaxVariant::outer: {
      // Narrow column groups (down to a 32-byte sector per row) until there are tiles for every SM;
      // then, with still too few tiles to fill the device and a long dim, a cluster per tile.
      const int64_t column_vectors = ceil_div(std::max<int64_t>(s.rows, 1), v);
      int lanes = 32;
      while (lanes > 2 && ceil_div(column_vectors, lanes) < 2 * int64_t{sm_count}) lanes /= 2;
      g.lanes = static_cast<int>(std::min<int64_t>(lanes, pow2_at_least(column_vectors)));
      g.slices = static_cast<int>(std::min<int64_t>(kOuterThreads / g.lanes, pow2_at_least(ceil_div(length, 4))));
      g.threads = g.lanes * g.slices;
      const int64_t tiles = ceil_div(column_vectors, g.lanes), resident = int64_t{sm_count} * (2048 / g.threads);
      while (arch >= 90 && g.cluster < kMaxCluster && tiles * g.cluster < resident &&
             length >= int64_t{g.cluster} * 2 * g.slices * 8)
        g.cluster *= 2;
      return g;
    }
    case SoftmaxVariant::pass_row:
      g.threads = kPassThreads;
      return g;
    case SoftmaxVariant::rows:
      return g;
  }
  return std::nullopt;
}

// Whether `variant` runs the direction and kind of this shape: the multi-pass forward has no split
// or outer kernel (their one partial per piece or column does not iterate), and pass_row is its own.
inline bool variant_runs(SoftmaxVariant variant, const SoftmaxShape& s) {
  if (variant == SoftmaxVariant::pass_row) return s.multi_pass;
  return !s.multi_pass || (variant != SoftmaxVariant::split_row && variant != SoftmaxVariant::outer);
}

// What a backend runs.
struct SoftmaxProblem {
  bool backward = false;
  SoftmaxKind kind = SoftmaxKind::softmax;
  DType in_dtype = DType::f32;   // x (forward) / dx (backward)
  DType out_dtype = DType::f32;  // y (forward) / y and dy (backward)
  SoftmaxVariant variant = SoftmaxVariant::rows;
  SoftmaxGeometry geometry;
  int64_t length = 0;
  int64_t rows = 0;
  Walker<kSoftmaxTensors> walk;  // the rows: every dim but `dim`, collapsed
  int64_t dim_stride[kSoftmaxTensors] = {};
  const void* in[2] = {};   // forward: x, x; backward: y, dy
  void* out = nullptr;      // forward: y; backward: dx
  bool vectorized = false;  // CUDA: 16-byte accesses along the variant's contiguous direction
  void* workspace = nullptr;
};

// Calls f(std::type_identity<Math>{}, std::type_identity<Load>{}, std::type_identity<Store>{}) with the
// problem's math (in its compute type; the kind picks it) and the element types it loads and stores
// (the backend's own 16-bit types). Only out_dtype == in_dtype or f32 exist (select checked).
template <class Half, class BFloat16, class F>
Status dispatch_softmax(const SoftmaxProblem& p, F&& f) {
  return dispatch_float<Half, BFloat16>(p.in_dtype, [&](auto in) {
    using X = typename decltype(in)::type;
    using Acc = acc_t<X>;
    auto with = [&](auto out) {
      using Y = typename decltype(out)::type;
      auto run = [&](auto math) {
        if (p.backward) return f(math, std::type_identity<Y>{}, std::type_identity<X>{});
        return f(math, std::type_identity<X>{}, std::type_identity<Y>{});
      };
      return with_math<Acc>(p.kind, p.backward, run);
    };
    return p.out_dtype == p.in_dtype ? with(std::type_identity<X>{}) : with(std::type_identity<float>{});
  });
}

namespace cpu {
Status launch(const LaunchContext& ctx, const SoftmaxProblem& problem);
}  // namespace cpu
namespace cuda {  // (the kernels are compiled at select)
Status launch(const LaunchContext& ctx, const SoftmaxProblem& problem);
// Compiles (or finds in the caches) the kernels of the problem's dtypes, kind, variant and geometry,
// both access forms (select does not know the views): select's part.
Status prepare_softmax(const PlanTarget& target, const SoftmaxProblem& problem);
}  // namespace cuda
#endif

}  // namespace baracuda::detail

#if !defined(__CUDACC_RTC__)
namespace baracuda::detail::jit {
struct Program;
// Every softmax program: each kind, dtype pair, direction, variant and kernel constants
// (cuda/softmax.cpp).
std::vector<Program> softmax_programs();
}  // namespace baracuda::detail::jit
#endif

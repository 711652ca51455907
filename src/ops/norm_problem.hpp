#pragma once
// What the norm plans hand to a backend: the views, the rows (x's leading dims) and each row's
// length n (the normalized dims), and the walks over both, built once here for both backends.
#include <algorithm>
#include <vector>

#include "baracuda/ops/norm.hpp"
#include "common/elementwise.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

enum class NormKind : unsigned char { layer, rms };

// Tensor slots of the walks, as the CUDA kernels' params (cuda/device/params.h) number them.
inline constexpr int kNormRowTensors = 6;    // 4 of x's shape, then the two statistics
inline constexpr int kNormInnerTensors = 7;  // 4 of x's shape, then weight, bias / dweight, dbias

// Values a thread of a held row keeps (cuda/device/norm.cuh): the forward keeps h as stored (a 16-bit
// value takes half a register, so twice as many), the backward dy and xhat and the two partial
// sums of each; f64 half as many (their registers are twice as wide). Sized for 1024 threads an SM
// at 64 registers each (measured against 8, and 1536 or 2048 threads an SM: bench/NOTES.md). A row
// has up to 1024 threads, which bounds the rows held; longer rows are streamed (read again for each
// pass, mostly from L2).
inline int norm_held_values(bool backward, DType dtype) {
  if (backward) return dtype == DType::f64 ? 4 : 8;
  return dtype == DType::f64 ? 8 : dtype_size(dtype) == 2 ? 32 : 16;
}
inline int64_t norm_held_limit(bool backward, DType dtype) { return 1024 * norm_held_values(backward, dtype); }

// How a CUDA norm kernel lays rows of n elements, read vw at a time, over its threads: row_threads
// threads a row, `held` vectors each (0: streamed), `rows` rows a block. Rows of up to 32 threads
// share a warp (8 warps a block); longer rows take a block each.
struct NormBlockShape {
  int row_threads = 32, rows = 1, held = 0;
  int threads() const { return row_threads * rows; }
};
inline NormBlockShape norm_block_shape(int64_t n, int vw, bool held, bool backward, DType dtype) {
  const int64_t vectors = std::max<int64_t>(1, (n + vw - 1) / vw);
  auto warps_for = [](int64_t threads) {
    return static_cast<int>(std::clamp<int64_t>((threads + 31) / 32 * 32, 32, 1024));
  };
  if (!held) return {warps_for((vectors + 7) / 8), 1, 0};
  const int64_t most = std::max(1, norm_held_values(backward, dtype) / vw);
  if (vectors <= 32) {
    int threads = 1;
    while (threads < vectors) threads *= 2;
    return {threads, 256 / threads, 1};
  }
  if (vectors <= 32 * most) return {32, 8, static_cast<int>((vectors + 31) / 32)};
  const int threads = warps_for((vectors + most - 1) / most);
  return {threads, 1, static_cast<int>((vectors + threads - 1) / threads)};
}

struct NormGeometry {
  int64_t rows = 0, n = 0;
  Walker<kNormRowTensors> row;
  Walker<kNormInnerTensors> inner;
};

// Builds the walks from the views in slot order: `full` of x's shape, `inner_only` of the normalized
// shape, `stats` of the leading shape (null data: absent, strides ignored).
NormGeometry norm_geometry(const NormDescriptor& d, std::initializer_list<AnyTensorRef> full,
                           std::initializer_list<AnyTensorRef> inner_only, std::initializer_list<AnyTensorRef> stats);

// The rows a CUDA backward block takes (dweight / dbias partials per chunk): fixed by the shape, the
// dtype, the variant and the device (its shape read as 16-byte vectors), so the sums' order is fixed
// for the plan.
struct NormChunks {
  int64_t chunks = 1, rows_per_chunk = 1;
};
NormChunks norm_chunks(int64_t rows, int64_t n, int sm_count, bool partials, DType dtype, bool held);

struct NormForwardProblem {
  NormKind kind = NormKind::layer;
  NormDescriptor desc;
  DType weight_dtype = DType::f32;
  NormArgs args;
  NormGeometry geometry;
};

struct NormBackwardProblem {
  NormKind kind = NormKind::layer;
  NormDescriptor desc;
  DType weight_dtype = DType::f32;
  NormBackwardArgs args;
  NormGeometry geometry;
  NormChunks chunks{};
};

namespace cpu {
Status launch(const LaunchContext& ctx, const NormForwardProblem& problem);
Status launch(const LaunchContext& ctx, const NormBackwardProblem& problem);
}  // namespace cpu
namespace cuda {
Status launch(const LaunchContext& ctx, const NormForwardProblem& problem);
Status launch(const LaunchContext& ctx, const NormBackwardProblem& problem);
// The kernels a plan of this descriptor runs, compiled (or found in the caches) for the target's
// arch: a jit::Module, owned by the process-wide cache.
Expected<const void*> norm_kernels(const PlanTarget& target, NormKind kind, DType dtype, DType weight_dtype,
                                   bool backward, bool held, int64_t n, bool add, std::string_view plan);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
// The norm family's programs for rows of these lengths: every kind, direction, dtype pair and
// variant (cuda/norm.cpp).
std::vector<Program> norm_programs(const std::vector<int64_t>& row_lengths);
}  // namespace baracuda::detail::jit

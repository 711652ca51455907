#pragma once
// What the norm plans hand to a backend: the views, the rows (x's leading dims) and each row's
// length n (the normalized dims), and the walks over both, built once here for both backends.
#include <vector>

#include "baracuda/ops/norm.hpp"
#include "common/elementwise.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

enum class NormKind : unsigned char { layer, rms };

// Tensor slots of the walks, as the CUDA kernels' params (cuda/device/params.h) number them.
inline constexpr int kNormRowTensors = 6;    // 4 of x's shape, then the two statistics
inline constexpr int kNormInnerTensors = 7;  // 4 of x's shape, then weight, bias / dweight, dbias

// Values a thread of a held row keeps (cuda/device/norm.cuh): the forward keeps h, the backward dy,
// xhat and two partial sums of each; f64 half as many (their registers are twice as wide). A block
// has up to 1024 threads, which bounds the rows held.
inline int norm_held_values(bool backward, DType dtype) { return (backward ? 8 : 32) / (dtype == DType::f64 ? 2 : 1); }
inline int64_t norm_held_limit(bool backward, DType dtype) { return 1024 * norm_held_values(backward, dtype); }

struct NormGeometry {
  int64_t rows = 0, n = 0;
  Walker<kNormRowTensors> row;
  Walker<kNormInnerTensors> inner;
};

// Builds the walks from the views in slot order: `full` of x's shape, `inner_only` of the normalized
// shape, `stats` of the leading shape (null data: absent, strides ignored).
NormGeometry norm_geometry(const NormDescriptor& d, std::initializer_list<AnyTensorRef> full,
                           std::initializer_list<AnyTensorRef> inner_only, std::initializer_list<AnyTensorRef> stats);

// The rows a CUDA backward block takes (dweight / dbias partials per chunk): fixed by the shape and
// the device, so the sums' order is fixed for the plan.
struct NormChunks {
  int64_t chunks = 1, rows_per_chunk = 1;
};
NormChunks norm_chunks(int64_t rows, int64_t n, int sm_count, bool partials);

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
                                   bool backward, bool held, int64_t n, std::string_view plan);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
// The norm family's programs for rows of these lengths: every kind, direction, dtype pair and
// variant (cuda/norm.cpp).
std::vector<Program> norm_programs(const std::vector<int64_t>& row_lengths);
}  // namespace baracuda::detail::jit

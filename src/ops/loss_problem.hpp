#pragma once
// What the cross-entropy plans hand to a backend: the views, the rows (every position of the logits
// but the class dim) and their walk, the class dim's strides, built once here for both backends.
#include <vector>

#include "baracuda/ops/loss.hpp"
#include "common/elementwise.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

// Tensor slots of the row walk, as the CUDA kernels' params (cuda/device/params.h) number them.
inline constexpr int kLossRowTensors = 5;  // logits, dlogits, targets, loss / dloss (none), lse

// The class dim: 1, or 0 for rank-1 logits (one row).
inline int class_dim(const CrossEntropyDescriptor& d) { return d.shape.rank >= 2 ? 1 : 0; }
inline int64_t class_count(const CrossEntropyDescriptor& d) { return d.shape.dims[class_dim(d)]; }
// The logits' shape without the class dim: the targets', lse's and (reduction none) the loss's.
Shape row_shape(const CrossEntropyDescriptor& d);

// Rows of more classes than this are split into chunks of this many (a block each, the pieces merged
// in chunk order by a second pass): fixed by C alone, so a row's bits never depend on the row count.
inline constexpr int64_t kLossChunk = 32768;
inline int64_t loss_chunks(int64_t classes) {
  return classes <= kLossChunk ? 1 : (classes + kLossChunk - 1) / kLossChunk;
}

// The options every cross-entropy plan takes (the fused linear one too): reduction, smoothing, z-loss.
Status check_cross_entropy_options(std::string_view plan, LossReduction reduction, double label_smoothing,
                                   double z_loss);

struct LossGeometry {
  int64_t rows = 0, classes = 0;
  int64_t class_stride = 0, dclass_stride = 0;  // of logits and dlogits along the class dim
  int64_t target_class_stride = 0;              // of soft targets along the class dim
  Walker<kLossRowTensors> row;
};

// The weight's dtype: weight_dtype, or dtype where unset.
inline DType weight_dtype_of(const CrossEntropyDescriptor& d) { return d.weight_dtype.value_or(d.dtype); }

// The walk from the views in slot order: logits and dlogits of the logits' shape, the rest of the
// rows' shape (soft targets, the first of row_views: the logits' shape); null data: absent, strides
// ignored.
LossGeometry loss_geometry(const CrossEntropyDescriptor& d, const AnyTensorRef& logits, const AnyTensorRef& dlogits,
                           std::initializer_list<AnyTensorRef> row_views);

struct CrossEntropyForwardProblem {
  CrossEntropyDescriptor desc;
  DType weight_dtype = DType::f32;
  CrossEntropyArgs args;
  LossGeometry geometry;
};

struct CrossEntropyBackwardProblem {
  CrossEntropyDescriptor desc;
  DType weight_dtype = DType::f32;
  CrossEntropyBackwardArgs args;
  LossGeometry geometry;
};

// The CUDA workspace: the rows' terms (sum, mean: [rows][4]) and the chunks' pieces ([rows][chunks][6]),
// in the compute type; the backward's totals (4 values) and, for soft targets, each row's target mass.
size_t cross_entropy_workspace(const CrossEntropyDescriptor& d, bool backward);

namespace cpu {
Status launch(const LaunchContext& ctx, const CrossEntropyForwardProblem& problem);
Status launch(const LaunchContext& ctx, const CrossEntropyBackwardProblem& problem);
}  // namespace cpu
namespace cuda {
Status launch(const LaunchContext& ctx, const CrossEntropyForwardProblem& problem);
Status launch(const LaunchContext& ctx, const CrossEntropyBackwardProblem& problem);
// The kernels a plan of this descriptor runs, compiled (or found in the caches) for the target's
// arch: a jit::Module, owned by the process-wide cache.
Expected<const void*> cross_entropy_kernels(const PlanTarget& target, const CrossEntropyDescriptor& d, bool backward,
                                            std::string_view plan);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
// The cross-entropy programs of the common vocabularies: both directions, every dtype, weight dtype
// and index dtype (cuda/loss.cpp).
std::vector<Program> cross_entropy_programs();
}  // namespace baracuda::detail::jit

#pragma once
// What the batch norm plans hand to a backend: the channels (C, along channel_dim) and each channel's
// M elements, walked by `walk` over every other dim (collapsed) for the x-shaped views, each view's
// channel stride, the per-channel tensors' strides, and the chunks a CUDA channel is cut into.
#include <algorithm>

#include "baracuda/ops/norm.hpp"
#include "common/elementwise.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

// x-shaped views: the forward's x, y; the backward's dy, x, dx.
inline constexpr int kBatchNormViews = 3;
// Per-channel tensors: the forward's weight, bias, running_mean, running_var, save_mean, save_rstd;
// the backward's weight, save_mean, save_rstd, running_mean, running_var, dweight, dbias.
inline constexpr int kBatchNormChannelTensors = 7;

struct BatchNormGeometry {
  int64_t channels = 0, elements = 0;  // C, and M = numel / C a channel
  int64_t c_stride[kBatchNormViews] = {};
  Walker<kBatchNormViews> walk;  // a channel's elements (rank 0: one)
  int64_t channel_stride[kBatchNormChannelTensors] = {};
  // CUDA: a channel's elements in `chunks` runs of chunk_len (the last shorter), a block each.
  int64_t chunks = 1, chunk_len = 1;
};

// Views in slot order: `full` of x's shape (absent: null data), `channel` the per-channel tensors.
BatchNormGeometry batch_norm_geometry(const BatchNormDescriptor& d, std::initializer_list<AnyTensorRef> full,
                                      std::initializer_list<AnyTensorRef> channel);

// The chunks a CUDA channel of M elements is cut into: enough (channel, chunk) blocks to fill the
// device four times over, but chunks of at least 4096 elements; whole vectors of `vector` elements.
// Fixed by the shape and the device, so the sums' order is fixed for the plan.
inline void batch_norm_chunks(BatchNormGeometry& g, int sm_count, int64_t vector) {
  const int64_t want = std::max<int64_t>(1, 4 * std::max(sm_count, 1) / std::max<int64_t>(g.channels, 1));
  const int64_t most = std::max<int64_t>(1, g.elements / 4096);
  g.chunks = std::min({want, most, int64_t{1} << 16});
  g.chunk_len = (g.elements + g.chunks - 1) / g.chunks;
  g.chunk_len = std::max<int64_t>(vector, (g.chunk_len + vector - 1) / vector * vector);
  g.chunks = std::max<int64_t>(1, (g.elements + g.chunk_len - 1) / g.chunk_len);
}

struct BatchNormForwardProblem {
  BatchNormDescriptor desc;
  DType weight_dtype = DType::f32;
  BatchNormArgs args;
  BatchNormGeometry geometry;
};

struct BatchNormBackwardProblem {
  BatchNormDescriptor desc;
  DType weight_dtype = DType::f32;
  BatchNormBackwardArgs args;
  BatchNormGeometry geometry;
};

namespace cpu {
Status launch(const LaunchContext& ctx, const BatchNormForwardProblem& problem);
Status launch(const LaunchContext& ctx, const BatchNormBackwardProblem& problem);
}  // namespace cpu
namespace cuda {
Status launch(const LaunchContext& ctx, const BatchNormForwardProblem& problem);
Status launch(const LaunchContext& ctx, const BatchNormBackwardProblem& problem);
Expected<const void*> batch_norm_kernels(const PlanTarget& target, DType dtype, DType weight_dtype, bool backward,
                                         std::string_view plan);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
// The batch norm's programs: every direction and dtype pair (cuda/batch_norm.cpp).
std::vector<Program> batch_norm_programs();
}  // namespace baracuda::detail::jit

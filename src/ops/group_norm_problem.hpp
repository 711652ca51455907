#pragma once
// What the group norm plans hand to a backend: x's sizes as samples x groups x (channels of a group
// x spatial elements), each x-shaped view's strides along N and C, one walk over the spatial dims
// for all of them, and the strides of the per-channel and per-group tensors; built once here.
#include <algorithm>

#include "baracuda/ops/norm.hpp"
#include "common/elementwise.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

// x-shaped views: the forward's x, y; the backward's dy, x, dx.
inline constexpr int kGroupNormViews = 3;

struct GroupNormGeometry {
  int64_t samples = 0, channels = 0, groups = 1, group_channels = 0, spatial = 1;
  int64_t n_stride[kGroupNormViews] = {}, c_stride[kGroupNormViews] = {};
  Walker<kGroupNormViews> space;                     // the spatial dims (rank 0: none)
  int64_t weight_stride = 0, bias_stride = 0;        // the forward's weight, bias; the backward's weight, bias
  int64_t dweight_stride = 0, dbias_stride = 0;      // the backward's
  int64_t mean_stride[2] = {}, rstd_stride[2] = {};  // along N, along the groups
  // The first view's channels lie closer together than its spatial elements (channels-last): a
  // group is walked channels fastest, else spatial elements fastest; in memory order either way.
  bool channel_minor = false;
  int64_t group_size() const { return group_channels * spatial; }
};

// Views in slot order: `full` of x's shape (absent: null data; x in slot x_slot), `channel` the weight
// and bias (then dweight and dbias), `stats` mean and rstd.
GroupNormGeometry group_norm_geometry(const GroupNormDescriptor& d, int x_slot,
                                      std::initializer_list<AnyTensorRef> full,
                                      std::initializer_list<AnyTensorRef> channel,
                                      std::initializer_list<AnyTensorRef> stats);

// Threads of a CUDA block (one group): about 16 elements each, 64 to 512.
inline int group_norm_threads(int64_t elements) {
  return static_cast<int>(std::clamp<int64_t>((elements / 16 + 31) / 32 * 32, 64, 512));
}

// CUDA blocks: a group each at a time, striding over the rest; at most 2^20. (Capping the groups in
// flight so that the forward's second read finds them in L2 was slower: bench/NOTES.md.)
inline int64_t group_norm_blocks(int64_t groups) { return std::min<int64_t>(groups, int64_t{1} << 20); }

struct GroupNormForwardProblem {
  GroupNormDescriptor desc;
  DType weight_dtype = DType::f32;
  GroupNormArgs args;
  GroupNormGeometry geometry;
};

struct GroupNormBackwardProblem {
  GroupNormDescriptor desc;
  DType weight_dtype = DType::f32;
  GroupNormBackwardArgs args;
  GroupNormGeometry geometry;
};

namespace cpu {
Status launch(const LaunchContext& ctx, const GroupNormForwardProblem& problem);
Status launch(const LaunchContext& ctx, const GroupNormBackwardProblem& problem);
}  // namespace cpu
namespace cuda {
Status launch(const LaunchContext& ctx, const GroupNormForwardProblem& problem);
Status launch(const LaunchContext& ctx, const GroupNormBackwardProblem& problem);
// The plan's kernels, compiled (or found in the caches) for the target's arch: a jit::Module.
Expected<const void*> group_norm_kernels(const PlanTarget& target, DType dtype, DType weight_dtype, bool backward,
                                         bool silu, std::string_view plan);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
// The group norm's programs: every direction, dtype pair and activation (cuda/group_norm.cpp).
std::vector<Program> group_norm_programs();
}  // namespace baracuda::detail::jit

#pragma once
// What the pointwise loss plans hand to a backend: the kernels' parameters (cuda/device/params.h),
// filled once here for both backends, and the dtype they are read in.
#include <string_view>
#include <vector>

#include "baracuda/ops/loss.hpp"
#include "common/elementwise.hpp"
#include "cuda/device/params.h"
#include "ops/launch.hpp"

namespace baracuda::detail {

// Elements a chunk of the sum and mean reductions: fixed, so the order of the sum depends on the
// element count alone.
inline constexpr int64_t kPointwiseLossChunk = 8192;
inline int64_t pointwise_loss_chunks(int64_t n) { return (n + kPointwiseLossChunk - 1) / kPointwiseLossChunk; }

// The walk's tensors: input, target, out (elementwise outputs), dloss (none), weight, pos_weight.
inline constexpr int kPointwiseLossTensors = 6;

struct PointwiseLossProblem {
  DType dtype = DType::f32;
  bool backward = false;
  device::PointwiseLossParams params{};
  Walker<kPointwiseLossTensors> walk;  // params.walk, for the host
};

namespace cpu {
Status launch(const LaunchContext& ctx, const PointwiseLossProblem& problem);
}  // namespace cpu
namespace cuda {
Status launch(const LaunchContext& ctx, const PointwiseLossProblem& problem);
// The kernels of a dtype, compiled (or found in the caches) for the target's arch: a jit::Module.
Expected<const void*> pointwise_loss_kernels(const PlanTarget& target, DType dtype, std::string_view plan);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
std::vector<Program> pointwise_loss_programs();  // every dtype's (cuda/pointwise_loss.cpp)
}  // namespace baracuda::detail::jit

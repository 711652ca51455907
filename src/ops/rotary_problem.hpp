#pragma once
// What the rotary plans hand to a backend: the kernels' parameters (cuda/device/params.h), filled
// once here for both backends, and the dtypes they are read in.
#include <string_view>
#include <vector>

#include "baracuda/ops/rotary.hpp"
#include "cuda/device/params.h"
#include "ops/launch.hpp"

namespace baracuda::detail {

struct RotaryProblem {
  DType dtype = DType::f32;
  DType index_dtype = DType::i64;
  RotaryLayout layout = RotaryLayout::half_split;
  device::RotaryParams params{};
};

namespace cpu {
Status launch(const LaunchContext& ctx, const RotaryProblem& problem);
}  // namespace cpu
namespace cuda {
Status launch(const LaunchContext& ctx, const RotaryProblem& problem);
// The kernels of a dtype and index dtype (both layouts), compiled (or found in the caches) for the
// target's arch: a jit::Module, owned by the process-wide cache.
Expected<const void*> rotary_kernels(const PlanTarget& target, DType dtype, DType index_dtype, std::string_view plan);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
std::vector<Program> rotary_programs();  // every dtype and index dtype's (cuda/rotary.cpp)
}  // namespace baracuda::detail::jit

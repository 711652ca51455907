#pragma once
// What the random plans hand to a backend: the output (and input) views walked over the logical
// shape, and the draw's parameters as the kernels take them (cuda/device/params.h), filled once here.
#include <string_view>
#include <vector>

#include "baracuda/ops/random.hpp"
#include "cuda/device/params.h"
#include "ops/launch.hpp"

namespace baracuda::detail {

struct RandomProblem {
  RandomKind kind = RandomKind::uniform;
  DType dtype = DType::f32;
  device::RandomParams params{};
};

struct DropoutProblem {
  DType dtype = DType::f32;
  device::DropoutParams params{};
};

// The bits below which bernoulli(p) gives 1 and dropout(p) drops: floor(p 2^32), p in [0, 1].
inline unsigned long long random_threshold(double p) { return static_cast<unsigned long long>(p * 4294967296.0); }

namespace cpu {
Status launch(const LaunchContext& ctx, const RandomProblem& problem);
Status launch(const LaunchContext& ctx, const DropoutProblem& problem);
}  // namespace cpu
namespace cuda {
Status launch(const LaunchContext& ctx, const RandomProblem& problem);
Status launch(const LaunchContext& ctx, const DropoutProblem& problem);
Expected<const void*> random_kernels(const PlanTarget& target, DType dtype, std::string_view plan);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
std::vector<Program> random_programs();  // every dtype's (cuda/random.cpp)
}  // namespace baracuda::detail::jit

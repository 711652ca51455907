#pragma once
// What MultinomialPlan hands to a backend: the weights and the output as rows (a 1-D problem is one
// row), the draw's parameters, and where the workspace holds a row's keys.
#include <string_view>
#include <vector>

#include "baracuda/ops/random.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

struct MultinomialProblem {
  MultinomialDescriptor desc;
  int64_t rows = 1, categories = 0;
  const void* probs = nullptr;
  int64_t probs_row_stride = 0, probs_stride = 1;  // elements
  void* out = nullptr;
  int64_t out_row_stride = 0, out_stride = 1;
};

// The CPU draws without replacement in this many rows at once, each in its own slice of the workspace.
inline constexpr int64_t kMultinomialCpuRowSlots = 16;
// On CUDA, without replacement, up to this many samples a row are picked with no sort
// (cuda/device/multinomial.cuh's multinomial_few, which holds as many pairs a thread).
inline constexpr int64_t kMultinomialFewSamples = 16;

namespace cpu {
Status launch(const LaunchContext& ctx, const MultinomialProblem& problem);
size_t multinomial_workspace(const MultinomialDescriptor& d, int64_t rows, int64_t categories);
}  // namespace cpu
namespace cuda {
Status launch(const LaunchContext& ctx, const MultinomialProblem& problem);
size_t multinomial_workspace(const MultinomialDescriptor& d, int64_t rows, int64_t categories);
Expected<const void*> multinomial_kernels(const PlanTarget& target, const MultinomialDescriptor& d,
                                          std::string_view plan);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
std::vector<Program> multinomial_programs();  // (cuda/multinomial.cpp)
}  // namespace baracuda::detail::jit

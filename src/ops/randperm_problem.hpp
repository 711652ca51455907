#pragma once
// What RandpermPlan hands to a backend, and the workspace each backend sorts in.
#include <string_view>
#include <vector>

#include "baracuda/ops/random.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

struct RandpermProblem {
  RandpermDescriptor desc;
  void* out = nullptr;
  int64_t out_stride = 1;
};

// Bytes of one array of n 8-byte words, rounded up to 256.
inline size_t randperm_array_bytes(int64_t n) { return (static_cast<size_t>(n) * 8 + 255) / 256 * 256; }

namespace cpu {
Status launch(const LaunchContext& ctx, const RandpermProblem& problem);
size_t randperm_workspace(int64_t n);  // (key, value) pairs
}  // namespace cpu
namespace cuda {
Status launch(const LaunchContext& ctx, const RandpermProblem& problem);
// Keys and values in and out, then CUB's scratch for n (cuda/randperm_sort.cu).
size_t randperm_workspace(int64_t n);
Status randperm_sort(const Stream& stream, const Workspace& workspace, int64_t n);
Expected<const void*> randperm_kernels(const PlanTarget& target, DType dtype, std::string_view plan);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
std::vector<Program> randperm_programs();  // (cuda/randperm.cpp)
}  // namespace baracuda::detail::jit

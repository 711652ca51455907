#pragma once
// What the KV cache append plan hands to a backend: the descriptor and the views.
#include "baracuda/ops/kv_cache.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

struct KvCacheAppendProblem {
  KvCacheAppendDescriptor desc;
  KvCacheAppendArgs args;
};

namespace cpu {
Status launch(const LaunchContext& ctx, const KvCacheAppendProblem& problem);
}  // namespace cpu
namespace cuda {
// The claim and copy kernels (cuda/paged_attention.cpp), compiled at select for the element size.
Expected<const void*> kv_cache_kernels(const PlanTarget& target, DType dtype, std::string_view plan);
Status launch(const LaunchContext& ctx, const KvCacheAppendProblem& problem);
}  // namespace cuda

// CUDA's workspace: the owner of each cache row (u32, zeroed each run), so that of two tokens mapped
// to one row the later wins. (num_blocks * block_size at most 2^40 on CUDA: select refuses more.)
inline size_t kv_cache_workspace(const KvCacheAppendDescriptor& d) {
  return static_cast<size_t>(d.num_blocks * d.block_size) * sizeof(unsigned);
}

}  // namespace baracuda::detail

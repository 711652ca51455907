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
Status launch(const LaunchContext& ctx, const KvCacheAppendProblem& problem);  // refused at select
}  // namespace cuda

}  // namespace baracuda::detail

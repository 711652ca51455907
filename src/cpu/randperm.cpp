// randperm on the CPU: the (key, value) pairs in the workspace, sorted by key then value (the order
// CUB's stable radix sort gives on CUDA), the values written out.
#include <algorithm>
#include <cmath>  // (philox.h's normals use sqrt)
#include <utility>

#include "cuda/device/philox.h"
#include "ops/randperm_problem.hpp"

namespace baracuda::detail::cpu {

size_t randperm_workspace(int64_t n) { return static_cast<size_t>(n) * sizeof(std::pair<uint64_t, int64_t>); }

Status launch(const LaunchContext& ctx, const RandpermProblem& p) {
  const int64_t n = p.desc.n;
  auto* pairs = static_cast<std::pair<uint64_t, int64_t>*>(ctx.workspace.data);
  for (int64_t i = 0; i < n; ++i)
    pairs[i] = {device::philox_randperm_key(p.desc.seed, p.desc.offset + static_cast<uint64_t>(i)), i};
  std::sort(pairs, pairs + n);
  if (p.desc.dtype == DType::i32) {
    auto* out = static_cast<int32_t*>(p.out);
    for (int64_t i = 0; i < n; ++i) out[i * p.out_stride] = static_cast<int32_t>(pairs[i].second);
  } else {
    auto* out = static_cast<int64_t*>(p.out);
    for (int64_t i = 0; i < n; ++i) out[i * p.out_stride] = pairs[i].second;
  }
  return Status::ok();
}

}  // namespace baracuda::detail::cpu

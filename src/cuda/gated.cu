// The CUDA kernels of the gated plans: the gated functors through the shared elementwise launcher
// (x's halves are rows of 16-byte vectors where D allows: strided_vectorized).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/common/elementwise.cuh"
#include "ops/gated_problem.hpp"

namespace baracuda::detail::cuda {

template <class Problem>
Status launch_gated(const LaunchContext& ctx, const Problem& problem) {
  return dispatch_gated<__half, __nv_bfloat16>(problem.desc, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return gated_typed<typename decltype(math)::type, T>(problem, [&](const auto& op, const auto& tensors) {
      return run_elementwise<T>(ctx.stream, ctx.target.sm_count, op, tensors);
    });
  });
}

Status launch(const LaunchContext& ctx, const GatedForwardProblem& problem) { return launch_gated(ctx, problem); }
Status launch(const LaunchContext& ctx, const GatedBackwardProblem& problem) { return launch_gated(ctx, problem); }

}  // namespace baracuda::detail::cuda

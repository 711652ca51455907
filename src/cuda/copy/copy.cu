// The CUDA entry points of the copy family: a cast goes to the translation unit of x's dtype; a fill
// is the fill functor through the elementwise launcher (no input: stores alone).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/common/elementwise.cuh"
#include "ops/copy_problem.hpp"

namespace baracuda::detail::cuda {

Status launch(const LaunchContext& ctx, const CastProblem& problem) {
  return is_floating(problem.desc.dtype) ? launch_cast<true>(ctx, problem) : launch_cast<false>(ctx, problem);
}

Status launch(const LaunchContext& ctx, const FillProblem& problem) {
  return dispatch_any<__half, __nv_bfloat16>(problem.desc.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    return run_elementwise<T>(ctx.stream, ctx.target.sm_count, FillFunctor<T>{fill_value<T>(problem.desc)},
                              fill_tensors(problem));
  });
}

}  // namespace baracuda::detail::cuda

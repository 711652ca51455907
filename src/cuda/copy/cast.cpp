// The CUDA entry point of the cast: the translation unit of x's dtype (cast_float.cu, cast_integer.cu).
#include "ops/copy_problem.hpp"

namespace baracuda::detail::cuda {

Status launch(const LaunchContext& ctx, const CastProblem& problem) {
  return is_floating(problem.desc.dtype) ? launch_cast<true>(ctx, problem) : launch_cast<false>(ctx, problem);
}

}  // namespace baracuda::detail::cuda

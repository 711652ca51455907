// CUDA casts from f16, bf16, f32 and f64.
#include "cuda/copy/cast.cuh"

namespace baracuda::detail::cuda {
template Status launch_cast<true>(const LaunchContext&, const CastProblem&);
}  // namespace baracuda::detail::cuda

// CUDA casts from i8, u8, i32, i64 and bool.
#include "cuda/copy/cast.cuh"

namespace baracuda::detail::cuda {
template Status launch_cast<false>(const LaunchContext&, const CastProblem&);
}  // namespace baracuda::detail::cuda

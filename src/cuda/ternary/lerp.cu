// CUDA kernels of the ternary kind lerp.
#include "cuda/ternary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kTernaryLerp>(const LaunchContext&, const TernaryForwardProblem&);
template Status launch_group<kTernaryLerp>(const LaunchContext&, const TernaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

// CUDA kernels of the ternary kind clamp.
#include "cuda/ternary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kTernaryClamp>(const LaunchContext&, const TernaryForwardProblem&);
template Status launch_group<kTernaryClamp>(const LaunchContext&, const TernaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

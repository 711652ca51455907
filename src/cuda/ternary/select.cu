// CUDA kernels of the ternary kinds where and clamp.
#include "cuda/ternary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kTernarySelect>(const LaunchContext&, const TernaryForwardProblem&);
template Status launch_group<kTernarySelect>(const LaunchContext&, const TernaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

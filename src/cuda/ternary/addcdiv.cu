// CUDA kernels of the ternary kind addcdiv.
#include "cuda/ternary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kTernaryAddcdiv>(const LaunchContext&, const TernaryForwardProblem&);
template Status launch_group<kTernaryAddcdiv>(const LaunchContext&, const TernaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

// CUDA kernels of the ternary kind addcmul.
#include "cuda/ternary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kTernaryAddcmul>(const LaunchContext&, const TernaryForwardProblem&);
template Status launch_group<kTernaryAddcmul>(const LaunchContext&, const TernaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

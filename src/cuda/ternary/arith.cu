// CUDA kernels of the ternary kinds addcmul, addcdiv and lerp.
#include "cuda/ternary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kTernaryArith>(const LaunchContext&, const TernaryForwardProblem&);
template Status launch_group<kTernaryArith>(const LaunchContext&, const TernaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

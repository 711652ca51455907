// CUDA kernels of the ternary kind where.
#include "cuda/ternary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kTernaryWhere>(const LaunchContext&, const TernaryForwardProblem&);
template Status launch_group<kTernaryWhere>(const LaunchContext&, const TernaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

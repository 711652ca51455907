// CUDA kernels of the unary kinds sin, cos, tan, asin, acos, atan and the hyperbolic kinds.
#include "cuda/unary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kUnaryTrig>(const LaunchContext&, const UnaryForwardProblem&);
template Status launch_group<kUnaryTrig>(const LaunchContext&, const UnaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

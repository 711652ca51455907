// CUDA kernels of the unary kinds exp, exp2, expm1, log, log2, log10, log1p, erf, erfc, erfinv, lgamma.
#include "cuda/unary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kUnaryExpLog>(const LaunchContext&, const UnaryForwardProblem&);
template Status launch_group<kUnaryExpLog>(const LaunchContext&, const UnaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

// CUDA kernels of the unary predicates isnan, isinf, isfinite, signbit, logical_not (out bool).
#include "cuda/unary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kUnaryPredicate>(const LaunchContext&, const UnaryForwardProblem&);
template Status launch_group<kUnaryPredicate>(const LaunchContext&, const UnaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

// CUDA kernels of the unary kinds abs, neg, sign, reciprocal, square, sqrt, rsqrt, floor, ceil, round, trunc, frac,
// bitwise_not.
#include "cuda/unary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kUnaryBasic>(const LaunchContext&, const UnaryForwardProblem&);
template Status launch_group<kUnaryBasic>(const LaunchContext&, const UnaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

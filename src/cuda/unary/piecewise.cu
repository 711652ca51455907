// CUDA kernels of the unary kinds relu, relu6, leaky_relu, elu, selu, celu, hardtanh, hardsigmoid, hardswish, softsign.
#include "cuda/unary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kUnaryPiecewise>(const LaunchContext&, const UnaryForwardProblem&);
template Status launch_group<kUnaryPiecewise>(const LaunchContext&, const UnaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

// CUDA kernels of the unary kinds gelu, gelu_tanh, silu, mish, softplus, sigmoid, logsigmoid.
#include "cuda/unary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kUnarySmooth>(const LaunchContext&, const UnaryForwardProblem&);
template Status launch_group<kUnarySmooth>(const LaunchContext&, const UnaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

// CUDA kernels of the unary kinds gelu, gelu_tanh, silu, mish, softplus, sigmoid, logsigmoid.
#include "cuda/unary/group.cuh"

namespace baracuda::detail::cuda {
BARACUDA_UNARY_GROUP_INSTANCES(kUnarySmooth)
}  // namespace baracuda::detail::cuda

// CUDA kernels of the unary kinds relu, relu6, leaky_relu, elu, selu, celu, hardtanh, hardsigmoid, hardswish, softsign.
#include "cuda/unary/group.cuh"

namespace baracuda::detail::cuda {
BARACUDA_UNARY_GROUP_INSTANCES(kUnaryPiecewise)
}  // namespace baracuda::detail::cuda

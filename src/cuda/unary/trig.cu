// CUDA kernels of the unary kinds sin, cos, tan, asin, acos, atan and the hyperbolic kinds.
#include "cuda/unary/group.cuh"

namespace baracuda::detail::cuda {
BARACUDA_UNARY_GROUP_INSTANCES(kUnaryTrig)
}  // namespace baracuda::detail::cuda

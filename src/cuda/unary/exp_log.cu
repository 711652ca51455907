// CUDA kernels of the unary kinds exp, exp2, expm1, log, log2, log10, log1p, erf, erfc, erfinv, lgamma.
#include "cuda/unary/group.cuh"

namespace baracuda::detail::cuda {
BARACUDA_UNARY_GROUP_INSTANCES(kUnaryExpLog)
}  // namespace baracuda::detail::cuda

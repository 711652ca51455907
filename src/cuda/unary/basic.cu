// CUDA kernels of the unary kinds abs, neg, sign, reciprocal, square, sqrt, rsqrt, floor, ceil, round, trunc, frac.
#include "cuda/unary/group.cuh"

namespace baracuda::detail::cuda {
BARACUDA_UNARY_GROUP_INSTANCES(kUnaryBasic)
}  // namespace baracuda::detail::cuda

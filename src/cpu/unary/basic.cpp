// CPU kernels of the unary kinds abs, neg, sign, reciprocal, square, sqrt, rsqrt, floor, ceil, round, trunc, frac.
#include "cpu/unary/group.hpp"

namespace baracuda::detail::cpu {
BARACUDA_UNARY_GROUP_INSTANCES(kUnaryBasic)
}  // namespace baracuda::detail::cpu

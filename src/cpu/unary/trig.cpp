// CPU kernels of the unary kinds sin, cos, tan, asin, acos, atan and the hyperbolic kinds.
#include "cpu/unary/group.hpp"

namespace baracuda::detail::cpu {
BARACUDA_UNARY_GROUP_INSTANCES(kUnaryTrig)
}  // namespace baracuda::detail::cpu

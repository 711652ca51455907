// CPU kernels of the unary kinds exp, exp2, expm1, log, log2, log10, log1p, erf, erfc, erfinv, lgamma.
#include "cpu/unary/group.hpp"

namespace baracuda::detail::cpu {
BARACUDA_UNARY_GROUP_INSTANCES(kUnaryExpLog)
}  // namespace baracuda::detail::cpu

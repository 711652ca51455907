// CPU kernels of the unary kinds relu, relu6, leaky_relu, elu, selu, celu, hardtanh, hardsigmoid, hardswish, softsign.
#include "cpu/unary/group.hpp"

namespace baracuda::detail::cpu {
BARACUDA_UNARY_GROUP_INSTANCES(kUnaryPiecewise)
}  // namespace baracuda::detail::cpu

// CPU kernels of the unary kinds gelu, gelu_tanh, silu, mish, softplus, sigmoid, logsigmoid.
#include "cpu/unary/group.hpp"

namespace baracuda::detail::cpu {
BARACUDA_UNARY_GROUP_INSTANCES(kUnarySmooth)
}  // namespace baracuda::detail::cpu

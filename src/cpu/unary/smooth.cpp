// CPU kernels of the unary kinds gelu, gelu_tanh, silu, mish, softplus, sigmoid, logsigmoid.
#include "cpu/unary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kUnarySmooth>(const LaunchContext&, const UnaryForwardProblem&);
template Status launch_group<kUnarySmooth>(const LaunchContext&, const UnaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

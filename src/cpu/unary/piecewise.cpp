// CPU kernels of the unary kinds relu, relu6, leaky_relu, elu, selu, celu, hardtanh, hardsigmoid, hardswish, softsign.
#include "cpu/unary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kUnaryPiecewise>(const LaunchContext&, const UnaryForwardProblem&);
template Status launch_group<kUnaryPiecewise>(const LaunchContext&, const UnaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

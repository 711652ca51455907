// CPU kernels of the unary kinds sin, cos, tan, asin, acos, atan and the hyperbolic kinds.
#include "cpu/unary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kUnaryTrig>(const LaunchContext&, const UnaryForwardProblem&);
template Status launch_group<kUnaryTrig>(const LaunchContext&, const UnaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

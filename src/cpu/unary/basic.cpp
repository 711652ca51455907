// CPU kernels of the unary kinds abs, neg, sign, reciprocal, square, sqrt, rsqrt, floor, ceil, round, trunc, frac,
// bitwise_not.
#include "cpu/unary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kUnaryBasic>(const LaunchContext&, const UnaryForwardProblem&);
template Status launch_group<kUnaryBasic>(const LaunchContext&, const UnaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

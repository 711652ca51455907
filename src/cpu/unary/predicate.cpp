// CPU kernels of the unary predicates isnan, isinf, isfinite, signbit, logical_not (out bool).
#include "cpu/unary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kUnaryPredicate>(const LaunchContext&, const UnaryForwardProblem&);
template Status launch_group<kUnaryPredicate>(const LaunchContext&, const UnaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

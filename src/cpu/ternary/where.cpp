// CPU kernels of the ternary kind where.
#include "cpu/ternary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kTernaryWhere>(const LaunchContext&, const TernaryForwardProblem&);
template Status launch_group<kTernaryWhere>(const LaunchContext&, const TernaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

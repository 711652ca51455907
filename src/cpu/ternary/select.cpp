// CPU kernels of the ternary kinds where and clamp.
#include "cpu/ternary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kTernarySelect>(const LaunchContext&, const TernaryForwardProblem&);
template Status launch_group<kTernarySelect>(const LaunchContext&, const TernaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

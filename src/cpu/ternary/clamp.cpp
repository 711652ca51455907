// CPU kernels of the ternary kind clamp.
#include "cpu/ternary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kTernaryClamp>(const LaunchContext&, const TernaryForwardProblem&);
template Status launch_group<kTernaryClamp>(const LaunchContext&, const TernaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

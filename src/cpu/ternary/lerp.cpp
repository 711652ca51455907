// CPU kernels of the ternary kind lerp.
#include "cpu/ternary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kTernaryLerp>(const LaunchContext&, const TernaryForwardProblem&);
template Status launch_group<kTernaryLerp>(const LaunchContext&, const TernaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

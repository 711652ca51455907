// CPU kernels of the ternary kind addcdiv.
#include "cpu/ternary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kTernaryAddcdiv>(const LaunchContext&, const TernaryForwardProblem&);
template Status launch_group<kTernaryAddcdiv>(const LaunchContext&, const TernaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

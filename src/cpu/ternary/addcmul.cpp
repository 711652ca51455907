// CPU kernels of the ternary kind addcmul.
#include "cpu/ternary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kTernaryAddcmul>(const LaunchContext&, const TernaryForwardProblem&);
template Status launch_group<kTernaryAddcmul>(const LaunchContext&, const TernaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

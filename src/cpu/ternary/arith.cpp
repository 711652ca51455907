// CPU kernels of the ternary kinds addcmul, addcdiv and lerp.
#include "cpu/ternary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kTernaryArith>(const LaunchContext&, const TernaryForwardProblem&);
template Status launch_group<kTernaryArith>(const LaunchContext&, const TernaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

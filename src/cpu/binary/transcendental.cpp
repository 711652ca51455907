// CPU kernels of the binary kinds pow, atan2, hypot, logaddexp, xlogy.
#include "cpu/binary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kBinaryTranscendental>(const LaunchContext&, const BinaryForwardProblem&);
template Status launch_group<kBinaryTranscendental>(const LaunchContext&, const BinaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

// CPU kernels of the binary kinds maximum, minimum, fmax, fmin.
#include "cpu/binary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kBinaryExtreme>(const LaunchContext&, const BinaryForwardProblem&);
template Status launch_group<kBinaryExtreme>(const LaunchContext&, const BinaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

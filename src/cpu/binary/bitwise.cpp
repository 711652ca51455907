// CPU kernels of the binary kinds bitwise_and, bitwise_or, bitwise_xor, shift_left, shift_right.
#include "cpu/binary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kBinaryBitwise>(const LaunchContext&, const BinaryForwardProblem&);
template Status launch_group<kBinaryBitwise>(const LaunchContext&, const BinaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

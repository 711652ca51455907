// CUDA kernels of the binary kinds bitwise_and, bitwise_or, bitwise_xor, shift_left, shift_right.
#include "cuda/binary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kBinaryBitwise>(const LaunchContext&, const BinaryForwardProblem&);
template Status launch_group<kBinaryBitwise>(const LaunchContext&, const BinaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

// CUDA kernels of the binary kinds pow, atan2, hypot, logaddexp, xlogy.
#include "cuda/binary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kBinaryTranscendental>(const LaunchContext&, const BinaryForwardProblem&);
template Status launch_group<kBinaryTranscendental>(const LaunchContext&, const BinaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

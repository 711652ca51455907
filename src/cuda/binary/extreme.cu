// CUDA kernels of the binary kinds maximum, minimum, fmax, fmin.
#include "cuda/binary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kBinaryExtreme>(const LaunchContext&, const BinaryForwardProblem&);
template Status launch_group<kBinaryExtreme>(const LaunchContext&, const BinaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

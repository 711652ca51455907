// CUDA kernels of the binary kinds add, sub, mul, div, div_floor, div_trunc, remainder, fmod, copysign.
#include "cuda/binary/group.cuh"

namespace baracuda::detail::cuda {
template Status launch_group<kBinaryArith>(const LaunchContext&, const BinaryForwardProblem&);
template Status launch_group<kBinaryArith>(const LaunchContext&, const BinaryBackwardProblem&);
}  // namespace baracuda::detail::cuda

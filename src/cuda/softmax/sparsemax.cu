// Kernels of the sparsemax forward (the multi-pass search of common/softmax_math.hpp).
#include "cuda/softmax/kernels.cuh"

namespace baracuda::detail::cuda::softmax {

Status launch_sparsemax_forward(const LaunchContext& ctx, const SoftmaxProblem& problem) {
  return launch_maths<SparseForwardMath<float, 1>, SparseForwardMath<double, 1>>(ctx, problem);
}

}  // namespace baracuda::detail::cuda::softmax

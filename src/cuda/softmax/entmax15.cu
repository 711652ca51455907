// Kernels of the entmax15 forward (the multi-pass search of common/softmax_math.hpp).
#include "cuda/softmax/kernels.cuh"

namespace baracuda::detail::cuda::softmax {

Status launch_entmax15_forward(const LaunchContext& ctx, const SoftmaxProblem& problem) {
  return launch_maths<SparseForwardMath<float, 2>, SparseForwardMath<double, 2>>(ctx, problem);
}

}  // namespace baracuda::detail::cuda::softmax

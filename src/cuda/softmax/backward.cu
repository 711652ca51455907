// Kernels of every backward of the family (one reduction per row each).
#include "cuda/softmax/kernels.cuh"

namespace baracuda::detail::cuda::softmax {

Status launch_backward(const LaunchContext& ctx, const SoftmaxProblem& problem) {
  return launch_maths<SoftmaxBackwardMath<float>, SoftmaxBackwardMath<double>, SparseBackwardMath<float>,
                      SparseBackwardMath<double>>(ctx, problem);
}

}  // namespace baracuda::detail::cuda::softmax

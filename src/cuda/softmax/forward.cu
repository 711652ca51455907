// Kernels of the softmax and log_softmax forward.
#include "cuda/softmax/kernels.cuh"

namespace baracuda::detail::cuda::softmax {

Status launch_softmax_forward(const LaunchContext& ctx, const SoftmaxProblem& problem) {
  return launch_maths<SoftmaxForwardMath<float>, SoftmaxForwardMath<double>>(ctx, problem);
}

}  // namespace baracuda::detail::cuda::softmax

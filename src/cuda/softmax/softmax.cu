// The CUDA entry of the softmax family: the kernel file of the problem's math.
#include "cuda/softmax/kernels.cuh"

namespace baracuda::detail::cuda {

Status launch(const LaunchContext& ctx, const SoftmaxProblem& problem) {
  if (problem.backward) return softmax::launch_backward(ctx, problem);
  if (problem.kind == SoftmaxKind::sparsemax) return softmax::launch_sparsemax_forward(ctx, problem);
  if (problem.kind == SoftmaxKind::entmax15) return softmax::launch_entmax15_forward(ctx, problem);
  return softmax::launch_softmax_forward(ctx, problem);
}

}  // namespace baracuda::detail::cuda

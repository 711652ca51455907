// The CUDA entry of the reduction family: the kernel file of the problem's kind.
#include "cuda/reduce/kernels.cuh"

namespace baracuda::detail::cuda {

Status launch(const LaunchContext& ctx, const ReduceProblem& p) {
  if (p.backward) return reduce::launch_backward(ctx, p);
  if (picks_element(p.params.kind, p.params.p)) return reduce::launch_forward_extremes(ctx, p);
  switch (p.params.kind) {
    case ReduceKind::prod:
    case ReduceKind::var:
    case ReduceKind::std:
    case ReduceKind::var_mean:
    case ReduceKind::logsumexp:
      return reduce::launch_forward_moments(ctx, p);
    default:
      return reduce::launch_forward_sums(ctx, p);
  }
}

}  // namespace baracuda::detail::cuda

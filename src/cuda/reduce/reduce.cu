// The CUDA entry of the reduction family: the kernel file of the problem's kind.
#include "cuda/reduce/kernels.cuh"

namespace baracuda::detail::cuda {

Status launch(const LaunchContext& ctx, const ReduceProblem& p) {
  if (p.backward) return reduce::launch_backward(ctx, p);
  switch (p.params.kind) {
    case ReduceKind::amax:
    case ReduceKind::amin:
    case ReduceKind::max:
    case ReduceKind::min:
    case ReduceKind::argmax:
    case ReduceKind::argmin:
      return reduce::launch_forward_extremes(ctx, p);
    case ReduceKind::prod:
    case ReduceKind::var:
    case ReduceKind::std:
    case ReduceKind::logsumexp:
      return reduce::launch_forward_moments(ctx, p);
    case ReduceKind::norm:
      return p.params.p == INFINITY || p.params.p == -INFINITY ? reduce::launch_forward_extremes(ctx, p)
                                                               : reduce::launch_forward_sums(ctx, p);
    default:
      return reduce::launch_forward_sums(ctx, p);
  }
}

}  // namespace baracuda::detail::cuda

// Kernels of prod, var, std, var_mean and logsumexp.
#include "cuda/reduce/kernels.cuh"

namespace baracuda::detail::cuda::reduce {
namespace {
template <class Math>
struct Moments : std::false_type {};
template <class A>
struct Moments<ProdMath<A>> : std::true_type {};
template <class A>
struct Moments<VarMath<A>> : std::true_type {};
template <class A>
struct Moments<LogSumExpMath<A>> : std::true_type {};
}  // namespace

Status launch_forward_moments(const LaunchContext& ctx, const ReduceProblem& p) {
  return launch_forward_group<Moments>(ctx, p);
}

}  // namespace baracuda::detail::cuda::reduce

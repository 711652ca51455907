// Kernels of sum, mean, norm (finite p), any, all and count_nonzero.
#include "cuda/reduce/kernels.cuh"

namespace baracuda::detail::cuda::reduce {
namespace {
template <class Math>
struct Sums : std::false_type {};
template <class A, SumTerm kTerm>
struct Sums<SumMath<A, kTerm>> : std::true_type {};
template <class A>
struct Sums<CountMath<A>> : std::true_type {};
}  // namespace

Status launch_forward_sums(const LaunchContext& ctx, const ReduceProblem& p) {
  return launch_forward_group<Sums>(ctx, p);
}

}  // namespace baracuda::detail::cuda::reduce

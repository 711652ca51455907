// Kernels of amax, amin, max, min, argmax, argmin and norm's p = +-inf.
#include "cuda/reduce/kernels.cuh"

namespace baracuda::detail::cuda::reduce {
namespace {
template <class Math>
struct Extremes : std::false_type {};
template <class A, bool kMax, bool kAbs>
struct Extremes<ExtremeMath<A, kMax, kAbs>> : std::true_type {};
template <class A, bool kMax, bool kAbs>
struct Extremes<ExtremeValueMath<A, kMax, kAbs>> : std::true_type {};
}  // namespace

Status launch_forward_extremes(const LaunchContext& ctx, const ReduceProblem& p) {
  return launch_forward_group<Extremes>(ctx, p);
}

}  // namespace baracuda::detail::cuda::reduce

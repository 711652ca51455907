// The CPU entry points of the copy family: a cast goes to the translation unit of x's dtype; a fill
// is the fill functor through the elementwise launcher.
#include "cpu/elementwise.hpp"
#include "ops/copy_problem.hpp"

namespace baracuda::detail::cpu {

Status launch(const LaunchContext&, const CastProblem& problem) {
  return is_floating(problem.desc.dtype) ? launch_cast<true>(problem) : launch_cast<false>(problem);
}

Status launch(const LaunchContext&, const FillProblem& problem) {
  return dispatch_any<half, bfloat16>(problem.desc.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    return run_elementwise<T>(FillFunctor<T>{fill_value<T>(problem.desc)}, fill_tensors(problem));
  });
}

}  // namespace baracuda::detail::cpu

// The CPU kernels of the gated plans: the gated functors through the shared CPU elementwise launcher.
#include "cpu/elementwise.hpp"
#include "ops/gated_problem.hpp"

namespace baracuda::detail::cpu {

template <class Problem>
Status launch_gated(const Problem& problem) {
  return dispatch_gated<half, bfloat16>(problem.desc, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return gated_typed<typename decltype(math)::type, T>(
        problem, [](const auto& op, const auto& tensors) { return run_elementwise<T>(op, tensors); });
  });
}

Status launch(const LaunchContext&, const GatedForwardProblem& problem) { return launch_gated(problem); }
Status launch(const LaunchContext&, const GatedBackwardProblem& problem) { return launch_gated(problem); }

}  // namespace baracuda::detail::cpu

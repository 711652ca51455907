// The CUDA side of the gated plans: the gated functors through the elementwise kernels compiled at
// select (cuda/elementwise_launch.hpp); x's halves are rows of 16-byte vectors where D allows
// (strided_vectorized).
#include "cuda/elementwise_launch.hpp"
#include "ops/gated_problem.hpp"

namespace baracuda::detail::cuda {
namespace {

constexpr std::string_view kMaths = "common/gated_math.hpp";

template <class Problem>
Status run(const ElementwiseRun& r, const Problem& problem) {
  return dispatch_gated<half, bfloat16>(problem.desc, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return gated_typed<typename decltype(math)::type, T>(
        problem, [&](const auto& op, const auto& tensors) { return run_elementwise<T>(r, op, tensors); });
  });
}

constexpr std::string_view plan_of(bool backward) { return backward ? "GatedBackwardPlan" : "GatedPlan"; }

}  // namespace

Status launch(const LaunchContext& ctx, const GatedForwardProblem& problem) {
  return run({ctx.target, ctx.stream, plan_of(false), kMaths}, problem);
}
Status launch(const LaunchContext& ctx, const GatedBackwardProblem& problem) {
  return run({ctx.target, ctx.stream, plan_of(true), kMaths}, problem);
}

Status prepare_gated(const PlanTarget& target, const GatedDescriptor& desc, bool backward) {
  const Stream stream = Stream::cuda();
  const ElementwiseRun r{target, stream, plan_of(backward), kMaths, ElementwiseMode::load};
  return backward ? run(r, GatedBackwardProblem{desc, ElementwisePath::vectorized, {}, {}, {}, {}, {}, {}})
                  : run(r, GatedForwardProblem{desc, ElementwisePath::vectorized, {}, {}, {}, {}});
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

std::vector<Program> gated_programs() {
  std::vector<Program> out;
  const PlanTarget target{Backend::cuda};
  const Stream stream = Stream::cuda();
  for (int k = 0; k < kGatedKindCount; ++k)
    for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
      for (bool backward : {false, true}) {
        GatedDescriptor d;
        d.kind = static_cast<GatedKind>(k);
        d.dtype = t;
        const cuda::ElementwiseRun r{target, stream, cuda::plan_of(backward), cuda::kMaths, cuda::ElementwiseMode::list,
                                     &out};
        (void)(backward ? cuda::run(r, GatedBackwardProblem{d, ElementwisePath::vectorized, {}, {}, {}, {}, {}, {}})
                        : cuda::run(r, GatedForwardProblem{d, ElementwisePath::vectorized, {}, {}, {}, {}}));
      }
  return out;
}

}  // namespace baracuda::detail::jit

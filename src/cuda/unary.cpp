// The CUDA side of the unary plans: the elementwise kernels of the kind's Math and element type,
// compiled at select (cuda/elementwise_launch.hpp), with the host's 16-bit types as the device's.
#include "cuda/elementwise_launch.hpp"
#include "ops/unary_problem.hpp"

namespace baracuda::detail::cuda {
namespace {

constexpr std::string_view kMaths = "common/unary_math.hpp";

Status run(const ElementwiseRun& r, const UnaryForwardProblem& problem) {
  return with_unary_group(problem.desc.kind, [&](auto group) {
    return dispatch_unary<group(), true, half, bfloat16>(problem.desc, [&](auto math, auto element) {
      using T = typename decltype(element)::type;
      using Math = typename decltype(math)::type;
      return unary_typed<Math, T>(problem, [&](const auto& op, const auto& tensors) {
        return run_elementwise<T, math_output_t<Math, T>>(r, op, tensors);
      });
    });
  });
}

Status run(const ElementwiseRun& r, const UnaryBackwardProblem& problem) {
  return with_unary_group(problem.desc.kind, [&](auto group) {
    return dispatch_unary<group(), false, half, bfloat16>(problem.desc, [&](auto math, auto element) -> Status {
      using T = typename decltype(element)::type;
      return unless_predicate<typename decltype(math)::type>(r.plan, [&](auto gradient_math) {
        return unary_typed<typename decltype(gradient_math)::type, T>(
            problem, [&](const auto& op, const auto& tensors) { return run_elementwise<T>(r, op, tensors); });
      });
    });
  });
}

constexpr std::string_view plan_of(bool backward) { return backward ? "UnaryBackwardPlan" : "UnaryPlan"; }

}  // namespace

Status launch(const LaunchContext& ctx, const UnaryForwardProblem& problem) {
  return run({ctx.target, ctx.stream, plan_of(false), kMaths}, problem);
}
Status launch(const LaunchContext& ctx, const UnaryBackwardProblem& problem) {
  return run({ctx.target, ctx.stream, plan_of(true), kMaths}, problem);
}

Status prepare_unary(const PlanTarget& target, const UnaryDescriptor& desc, bool backward) {
  const Stream stream = Stream::cuda();
  const ElementwiseRun r{target, stream, plan_of(backward), kMaths, ElementwiseMode::load};
  return backward ? run(r, UnaryBackwardProblem{desc, ElementwisePath::vectorized, {}, {}, {}})
                  : run(r, UnaryForwardProblem{desc, ElementwisePath::vectorized, {}, {}});
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

std::vector<Program> unary_programs() {
  std::vector<Program> out;
  const PlanTarget target{Backend::cuda};
  const Stream stream = Stream::cuda();
  for (int k = 0; k < kUnaryKindCount; ++k)
    for (int t = 0; t <= static_cast<int>(DType::boolean); ++t) {
      UnaryDescriptor d;
      d.kind = static_cast<UnaryKind>(k);
      d.dtype = static_cast<DType>(t);
      if (!unary_kind_takes(d.kind, d.dtype)) continue;
      for (bool backward : {false, true}) {
        if (backward && (unary_kind_is_predicate(d.kind) || !is_floating(d.dtype))) continue;
        const cuda::ElementwiseRun r{target, stream, cuda::plan_of(backward), cuda::kMaths, cuda::ElementwiseMode::list,
                                     &out};
        (void)(backward ? cuda::run(r, UnaryBackwardProblem{d, ElementwisePath::vectorized, {}, {}, {}})
                        : cuda::run(r, UnaryForwardProblem{d, ElementwisePath::vectorized, {}, {}}));
      }
    }
  return out;
}

}  // namespace baracuda::detail::jit

// The CUDA side of the ternary plans: the kind's functors through the elementwise kernels compiled at
// select or first use (cuda/elementwise_launch.hpp), and the backward's reductions of broadcast
// operands' gradients.
#include "cuda/elementwise_launch.hpp"
#include "ops/ternary_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {
namespace {

constexpr std::string_view kMaths = "common/ternary_math.hpp";

Status run(const ElementwiseRun& r, const TernaryForwardProblem& problem) {
  return with_ternary_group(problem.desc.kind, [&](auto group) {
    return dispatch_ternary<group(), true, half, bfloat16>(problem.desc, [&](auto math, auto element) {
      using T = typename decltype(element)::type;
      return ternary_typed<typename decltype(math)::type, T>(problem, [&](auto first, const auto& op, const auto& t) {
        return run_elementwise<T, T, typename decltype(first)::type>(r, op, t);
      });
    });
  });
}

Status run(const ElementwiseRun& r, const TernaryBackwardProblem& problem) {
  return with_ternary_group(problem.desc.kind, [&](auto group) {
    return dispatch_ternary<group(), false, half, bfloat16>(problem.desc, [&](auto math, auto element) {
      using T = typename decltype(element)::type;
      return ternary_typed<typename decltype(math)::type, T>(
          problem,
          [&](auto first, const auto& op, const auto& t) {
            return run_elementwise<T, T, typename decltype(first)::type>(r, op, t);
          },
          [&](auto, const auto& reduction) { return run_split_reduction(r, reduction); });
    });
  });
}

constexpr std::string_view plan_of(bool backward) { return backward ? "TernaryBackwardPlan" : "TernaryPlan"; }

}  // namespace

Status launch(const LaunchContext& ctx, const TernaryForwardProblem& problem) {
  return run({ctx.target, ctx.stream, plan_of(false), kMaths}, problem);
}
Status launch(const LaunchContext& ctx, const TernaryBackwardProblem& problem) {
  return run({ctx.target, ctx.stream, plan_of(true), kMaths}, problem);
}

Status prepare_ternary(const PlanTarget& target, const TernaryDescriptor& desc) {
  const Stream stream = Stream::cuda();
  TernaryForwardProblem p{};
  p.desc = desc;
  p.shape = {1};
  p.path = ElementwisePath::vectorized;
  return run({target, stream, plan_of(false), kMaths, ElementwiseMode::load}, p);
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

// Every functor a ternary plan may run: each set of scalar operands, wanted gradients and reduced
// ones (listing touches no data: the pointers only say which gradients are wanted).
std::vector<Program> ternary_programs() {
  std::vector<Program> out;
  const PlanTarget target{Backend::cuda};
  const Stream stream = Stream::cuda();
  void* const some = reinterpret_cast<void*>(256);
  for (int k = 0; k < kTernaryKindCount; ++k)
    for (DType t : kEveryDType) {
      const TernaryKind kind = static_cast<TernaryKind>(k);
      if (!ternary_kind_takes(kind, t)) continue;
      const cuda::ElementwiseRun fw{target, stream, cuda::plan_of(false), cuda::kMaths, cuda::ElementwiseMode::list,
                                    &out};
      const cuda::ElementwiseRun bw{target, stream, cuda::plan_of(true), cuda::kMaths, cuda::ElementwiseMode::list,
                                    &out};
      for (int scalars = 0; scalars < 8; ++scalars) {
        if (kind == TernaryKind::where && scalars & 1) continue;  // (the condition is a tensor)
        TernaryForwardProblem p{};
        p.desc.kind = kind;
        p.desc.dtype = t;
        if (scalars & 1) p.desc.a_scalar = 1.0;
        if (scalars & 2) p.desc.b_scalar = 1.0;
        if (scalars & 4) p.desc.c_scalar = 1.0;
        p.shape = {2};
        (void)cuda::run(fw, p);
        if (!is_floating(t)) continue;
        TernaryBackwardProblem b{};
        b.desc = p.desc;
        b.shape = {2};
        for (int wants = 1; wants < 8; ++wants)
          for (int splits = 0; splits < 8; ++splits) {
            for (int i = 0; i < 3; ++i) {
              b.grad[i].data = wants >> i & 1 ? some : nullptr;
              b.splits[i] = splits >> i & 1;
            }
            (void)cuda::run(bw, b);
          }
      }
    }
  return cuda::unique_programs(std::move(out));
}

}  // namespace baracuda::detail::jit

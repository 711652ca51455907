// The CUDA side of the copy plans: the cast functor (x's dtype to y's, the transposed path included:
// x.t().contiguous()) and the fill functor (no input: stores alone) through the elementwise kernels
// compiled at select (cuda/elementwise_launch.hpp).
#include "cuda/elementwise_launch.hpp"
#include "ops/copy_problem.hpp"

namespace baracuda::detail::cuda {
namespace {

constexpr std::string_view kMaths = "common/copy_math.hpp";

Status run(const ElementwiseRun& r, const CastProblem& problem) {
  return dispatch_any<half, bfloat16>(problem.desc.dtype, [&](auto in) {
    using In = typename decltype(in)::type;
    return dispatch_any<half, bfloat16>(problem.desc.out_dtype, [&](auto out) -> Status {
      using Out = typename decltype(out)::type;
      const CastFunctor<cast_acc_t<In>> op;
      if (problem.path == ElementwisePath::transposed)
        return run_elementwise_transposed<In, Out>(r, op, cast_tensors(problem));
      if (r.mode == ElementwiseMode::list)
        if (Status s = run_elementwise_transposed<In, Out>(r, op, cast_tensors(problem)); !s) return s;
      return run_elementwise<In, Out>(r, op, cast_tensors(problem));
    });
  });
}

Status run(const ElementwiseRun& r, const FillProblem& problem) {
  return dispatch_any<half, bfloat16>(problem.desc.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    return run_elementwise<T>(r, FillFunctor<T>{fill_value<T>(problem.desc)}, fill_tensors(problem));
  });
}

}  // namespace

Status launch(const LaunchContext& ctx, const CastProblem& problem) {
  return run({ctx.target, ctx.stream, "CastPlan", kMaths}, problem);
}
Status launch(const LaunchContext& ctx, const FillProblem& problem) {
  return run({ctx.target, ctx.stream, "FillPlan", kMaths}, problem);
}

Status prepare_cast(const PlanTarget& target, const CastDescriptor& desc) {
  const Stream stream = Stream::cuda();
  CastProblem p{};
  p.desc = desc;
  p.path = ElementwisePath::vectorized;
  return run({target, stream, "CastPlan", kMaths, ElementwiseMode::load}, p);
}
Status prepare_fill(const PlanTarget& target, const FillDescriptor& desc) {
  const Stream stream = Stream::cuda();
  FillProblem p{};
  p.desc = desc;
  p.path = ElementwisePath::vectorized;
  return run({target, stream, "FillPlan", kMaths, ElementwiseMode::load}, p);
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

// Every cast (each pair of dtypes, both paths) and fill (each dtype).
std::vector<Program> copy_programs() {
  std::vector<Program> out;
  const PlanTarget target{Backend::cuda};
  const Stream stream = Stream::cuda();
  const cuda::ElementwiseRun r{target, stream, "CastPlan", cuda::kMaths, cuda::ElementwiseMode::list, &out};
  for (int from = 0; from <= static_cast<int>(DType::boolean); ++from) {
    for (int to = 0; to <= static_cast<int>(DType::boolean); ++to) {
      CastProblem p{};
      p.desc.dtype = static_cast<DType>(from);
      p.desc.out_dtype = static_cast<DType>(to);
      (void)cuda::run(r, p);
    }
    FillProblem f{};
    f.desc.dtype = static_cast<DType>(from);
    (void)cuda::run(r, f);
  }
  return out;
}

}  // namespace baracuda::detail::jit

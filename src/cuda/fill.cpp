// The CUDA side of the fill plan: the fill functor (no input: stores alone) through the elementwise
// kernels compiled at select (cuda/elementwise_launch.hpp).
#include "cuda/elementwise_launch.hpp"
#include "ops/copy_problem.hpp"

namespace baracuda::detail::cuda {
namespace {

constexpr std::string_view kMaths = "common/copy_math.hpp";

Status run(const ElementwiseRun& r, const FillProblem& problem) {
  return dispatch_any<half, bfloat16>(problem.desc.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    return run_elementwise<T>(r, FillFunctor<T>{fill_value<T>(problem.desc)}, fill_tensors(problem));
  });
}

}  // namespace

Status launch(const LaunchContext& ctx, const FillProblem& problem) {
  return run({ctx.target, ctx.stream, "FillPlan", kMaths}, problem);
}

Status prepare_fill(const PlanTarget& target, const FillDescriptor& desc) {
  const Stream stream = Stream::cuda();
  return run({target, stream, "FillPlan", kMaths, ElementwiseMode::load}, FillProblem{desc, ElementwisePath::vectorized, {}});
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

std::vector<Program> fill_programs() {
  std::vector<Program> out;
  const PlanTarget target{Backend::cuda};
  const Stream stream = Stream::cuda();
  for (int t = 0; t <= static_cast<int>(DType::boolean); ++t) {
    FillDescriptor d;
    d.dtype = static_cast<DType>(t);
    (void)cuda::run({target, stream, "FillPlan", cuda::kMaths, cuda::ElementwiseMode::list, &out}, FillProblem{d, ElementwisePath::vectorized, {}});
  }
  return out;
}

}  // namespace baracuda::detail::jit

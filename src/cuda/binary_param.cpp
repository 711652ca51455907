// The CUDA side of the BinaryParam plans (lerp, addcmul): their functors through the elementwise
// kernels compiled at first use (cuda/elementwise_launch.hpp), and the weight gradient's reduction.
#include "cuda/elementwise_launch.hpp"
#include "ops/binary_param_problem.hpp"

namespace baracuda::detail::cuda {
namespace {

constexpr std::string_view kMaths = "common/binary_param_math.hpp";

Status run(const ElementwiseRun& r, const BinaryParamForwardProblem& problem) {
  return dispatch_binary_param<half, bfloat16>(problem, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return binary_param_forward_typed<typename decltype(math)::type, T>(
        problem, [&](const auto& op, const auto& tensors) { return run_elementwise<T>(r, op, tensors); });
  });
}

Status run(const ElementwiseRun& r, const BinaryParamBackwardProblem& problem) {
  return dispatch_binary_param<half, bfloat16>(problem, [&](auto math, auto element) {
    using T = typename decltype(element)::type;
    return binary_param_backward_typed<typename decltype(math)::type, T>(
        problem, [&](const auto& op, const auto& tensors) { return run_elementwise<T>(r, op, tensors); },
        [&](const auto& reduction) { return run_split_reduction(r, reduction); });
  });
}

}  // namespace

Status launch(const LaunchContext& ctx, const BinaryParamForwardProblem& problem) {
  return run({ctx.target, ctx.stream, "BinaryParamPlan", kMaths}, problem);
}
Status launch(const LaunchContext& ctx, const BinaryParamBackwardProblem& problem) {
  return run({ctx.target, ctx.stream, "BinaryParamBackwardPlan", kMaths}, problem);
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

// Every functor: each op, float dtype and weight mode, and the backward's elementwise and reduced
// weight gradients.
std::vector<Program> binary_param_programs() {
  std::vector<Program> out;
  const PlanTarget target{Backend::cuda};
  const Stream stream = Stream::cuda();
  const cuda::ElementwiseRun r{target, stream, "BinaryParamPlan", cuda::kMaths, cuda::ElementwiseMode::list, &out};
  for (int math = 0; math < static_cast<int>(std::tuple_size_v<BinaryParamMaths>); ++math)
    for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
      for (WeightMode mode : {WeightMode::scalar, WeightMode::tensor}) {
        BinaryParamForwardProblem p{};
        p.desc.dtype = t;
        p.desc.weight_mode = mode;
        p.math = math;
        (void)cuda::run(r, p);
        for (ElementwisePath path : {ElementwisePath::vectorized, ElementwisePath::broadcast_reduce}) {
          BinaryParamBackwardProblem b{};
          b.desc = p.desc;
          b.math = math;
          b.path = path;
          (void)cuda::run(r, b);
        }
      }
  return cuda::unique_programs(std::move(out));
}

}  // namespace baracuda::detail::jit

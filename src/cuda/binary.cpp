// The CUDA side of the binary plans: the kind's functors through the elementwise kernels compiled at
// select or first use (cuda/elementwise_launch.hpp); the arithmetic kinds' transposed path, and the
// backward's reductions of broadcast operands' gradients.
#include "cuda/elementwise_launch.hpp"
#include "ops/binary_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {
namespace {

constexpr std::string_view kMaths = "common/binary_math.hpp";

Status run(const ElementwiseRun& r, const BinaryForwardProblem& problem) {
  return with_binary_group(problem.desc.kind, [&](auto group) {
    constexpr int G = group();
    return dispatch_binary_forward<G, half, bfloat16>(problem.desc, [&](auto math, auto element, auto first) {
      using T = typename decltype(element)::type;
      using Math = typename decltype(math)::type;
      using First = typename decltype(first)::type;
      using Out = math_output_t<Math, T>;
      return binary_typed<Math, T, First>(problem, [&](const auto& op, const auto& tensors) -> Status {
        // The transposed path: the arithmetic kinds only (ops/binary.cpp offers it to them alone).
        if constexpr (G == kBinaryArith) {
          if (tensors.path == ElementwisePath::transposed)
            return run_elementwise_transposed<T, Out, First>(r, op, tensors);
          if (r.mode == ElementwiseMode::list)
            if (Status s = run_elementwise_transposed<T, Out, First>(r, op, tensors); !s) return s;
        }
        return run_elementwise<T, Out, First>(r, op, tensors);
      });
    });
  });
}

Status run(const ElementwiseRun& r, const BinaryBackwardProblem& problem) {
  return with_binary_group(problem.desc.kind, [&](auto group) {
    return dispatch_binary_backward<group(), half, bfloat16>(problem.desc, [&](auto math, auto element) -> Status {
      using T = typename decltype(element)::type;
      return unless_predicate<typename decltype(math)::type>(r.plan, [&](auto gradient_math) {
        return binary_typed<typename decltype(gradient_math)::type, T>(
            problem, [&](const auto& op, const auto& tensors) { return run_elementwise<T>(r, op, tensors); },
            [&](const auto& reduction) { return run_split_reduction(r, reduction); });
      });
    });
  });
}

constexpr std::string_view plan_of(bool backward) { return backward ? "BinaryBackwardPlan" : "BinaryPlan"; }

}  // namespace

Status launch(const LaunchContext& ctx, const BinaryForwardProblem& problem) {
  return run({ctx.target, ctx.stream, plan_of(false), kMaths}, problem);
}
Status launch(const LaunchContext& ctx, const BinaryBackwardProblem& problem) {
  return run({ctx.target, ctx.stream, plan_of(true), kMaths}, problem);
}

Status prepare_binary(const PlanTarget& target, const BinaryDescriptor& desc) {
  const Stream stream = Stream::cuda();
  BinaryForwardProblem p{};
  p.desc = desc;
  p.shape = {1};
  p.path = ElementwisePath::vectorized;
  return run({target, stream, plan_of(false), kMaths, ElementwiseMode::load}, p);
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

// Every functor a binary plan may run, by descriptors and views that take each branch of the
// dispatch (listing touches no data: the pointers only say which gradients are wanted).
std::vector<Program> binary_programs() {
  std::vector<Program> out;
  const PlanTarget target{Backend::cuda};
  const Stream stream = Stream::cuda();
  void* const some = reinterpret_cast<void*>(256);
  for (int k = 0; k < kBinaryKindCount; ++k)
    for (DType t : kEveryDType) {
      const BinaryKind kind = static_cast<BinaryKind>(k);
      if (!binary_kind_takes(kind, t)) continue;
      const cuda::ElementwiseRun fw{target, stream, cuda::plan_of(false), cuda::kMaths, cuda::ElementwiseMode::list,
                                    &out};
      const cuda::ElementwiseRun bw{target, stream, cuda::plan_of(true), cuda::kMaths, cuda::ElementwiseMode::list,
                                    &out};
      for (int scalar = 0; scalar < 3; ++scalar) {
        BinaryForwardProblem p{};
        p.desc.kind = kind;
        p.desc.dtype = t;
        p.shape = {2};
        if (scalar == 1) p.desc.a_scalar = 1.0;
        if (scalar == 2) p.desc.b_scalar = 1.0;
        (void)cuda::run(fw, p);
        if (!is_floating(t) || binary_kind_is_predicate(kind)) continue;
        BinaryBackwardProblem b{};
        b.desc = p.desc;
        b.shape = {2};
        for (int wants = 1; wants < 4; ++wants)
          for (int splits = 0; splits < 4; ++splits) {
            b.da.data = wants & 1 ? some : nullptr;
            b.db.data = wants & 2 ? some : nullptr;
            b.splits_a = splits & 1;
            b.splits_b = splits >> 1;
            (void)cuda::run(bw, b);
          }
      }
      // The 16-bit operand loaded by the kernels beside an f32 one.
      if (t == DType::f16 || t == DType::bf16) {
        BinaryForwardProblem p{};
        p.desc.kind = kind;
        p.desc.dtype = DType::f32;
        p.desc.b_dtype = t;
        p.shape = {2};
        if (binary_kind_takes(kind, DType::f32)) (void)cuda::run(fw, p);
      }
    }
  // One program per key (the branches above meet the same functors many times).
  return cuda::unique_programs(std::move(out));
}

}  // namespace baracuda::detail::jit

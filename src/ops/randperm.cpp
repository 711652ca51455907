// RandpermPlan: validation, the workspace and the problem, shared by both backends, as hooks of the
// one plan life cycle (ops/plan_impl.hpp). On CUDA, select also compiles the keys and write kernels
// (cuda::randperm_kernels: NVRTC, cached) and sizes CUB's sort.
#include <string>

#include "baracuda/ops/random.hpp"
#include "ops/arg_views.hpp"
#include "ops/randperm_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda::detail {
namespace {

constexpr DType kRandpermDTypes[] = {DType::i32, DType::i64};
constexpr VariantInfo kRandpermVariants[] = {
    {"sort", true, true, true,
     "the values 0..n-1 sorted by Philox keys (CUDA: CUB's radix sort; CPU: std::sort): the same permutation on "
     "every backend"},
};
// CUB's sort counts its items in an int.
constexpr int64_t kMaxRandperm = (int64_t{1} << 31) - 1;

struct RandpermHooks {
  using Descriptor = RandpermDescriptor;
  using Args = RandpermArgs;
  static constexpr std::string_view kPlan = "RandpermPlan";
  static constexpr OpSchema kSchema{kPlan, "randperm", "random", kRandpermDTypes, {}, kRandpermVariants};
  static constexpr std::array<ArgField<Args>, 1> kFields{{{"out", nullptr, &Args::out}}};

  static Status check(const Descriptor& d) {
    if (d.dtype != DType::i32 && d.dtype != DType::i64)
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.dtype",
                        std::string(valid_dtype(d.dtype) ? dtype_name(d.dtype) : "?") + " is not i32 or i64");
    if (d.n < 0)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.n", std::to_string(d.n) + " is negative");
    if (d.n > kMaxRandperm)
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.n",
                        std::to_string(d.n) + " is past 2^31 - 1 (the sort counts its items in 32 bits)");
    return Status::ok();
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    specs[0].dtype = d.dtype;
    specs[0].shape = Shape{d.n};
  }

  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int>) {
    PlanChoice c;
    c.variant = 0;
    if (t.backend == Backend::cpu) {
      c.workspace = cpu::randperm_workspace(d.n);
      return c;
    }
#if BARACUDA_HAS_CUDA
    Expected<const void*> kernels = cuda::randperm_kernels(t, d.dtype, kPlan);
    if (!kernels) return kernels.status();
    c.kernels = *kernels;
    c.workspace = cuda::randperm_workspace(d.n);
#endif
    return c;
  }

  static bool nothing_to_do(const Descriptor& d) { return d.n == 0; }

  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = d.dtype;  // integers, exact
    return g;
  }

  static KernelShape kernel(const PlanTarget&, const Descriptor&, const PlanChoice&, const Args* a) {
    KernelShape k{"sort", Layout::contiguous};
    if (a) k.layout = layout_of(given_views<Args>(kFields, *a));
    return k;
  }

  static RandpermProblem problem(const LaunchContext&, const Descriptor& d, const Args& a) {
    return RandpermProblem{d, a.out.data, a.out.strides[0]};
  }
};

}  // namespace

template <>
struct OpHooks<RandpermOp> : RandpermHooks {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<RandpermOp>;
}  // namespace baracuda

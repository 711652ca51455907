// MultinomialPlan: validation, the workspace and the problem, shared by both backends, as hooks of
// the one plan life cycle (ops/plan_impl.hpp). On CUDA, select also compiles the kernels
// (cuda::multinomial_kernels: NVRTC, cached) and, without replacement, sizes CUB's sort.
#include <string>

#include "baracuda/ops/random.hpp"
#include "ops/arg_views.hpp"
#include "ops/multinomial_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda::detail {
namespace {

constexpr DType kMultinomialDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
constexpr DType kMultinomialIndexDTypes[] = {DType::i32, DType::i64};
constexpr VariantInfo kMultinomialVariants[] = {
    {"philox", true, true, true,
     "without replacement the exponential race (keys sorted: CUB's radix sort on CUDA), with replacement the "
     "running sum in a fixed order searched: the same indices on every backend"},
};
// The CUDA sort counts its items (rows x categories) in an int; a key pairs a category in 32 bits.
constexpr int64_t kMaxSorted = (int64_t{1} << 31) - 1;

int64_t rows_of(const MultinomialDescriptor& d) { return d.shape.rank == 2 ? d.shape.dims[0] : 1; }
int64_t categories_of(const MultinomialDescriptor& d) { return d.shape.rank >= 1 ? d.shape.dims[d.shape.rank - 1] : 0; }

struct MultinomialHooks {
  using Descriptor = MultinomialDescriptor;
  using Args = MultinomialArgs;
  static constexpr std::string_view kPlan = "MultinomialPlan";
  static constexpr OpSchema kSchema{
      kPlan, "multinomial", "random", kMultinomialDTypes, kMultinomialIndexDTypes, kMultinomialVariants};
  static constexpr std::array<ArgField<Args>, 2> kFields{{{"probs", &Args::probs}, {"out", nullptr, &Args::out}}};

  static Status check(const Descriptor& d) {
    if (Status s = check_shape(kPlan, "descriptor.shape", d.shape); !s) return s;
    if (d.shape.rank != 1 && d.shape.rank != 2)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.shape",
                        d.shape.to_string() + " is not [categories] or [rows, categories]");
    if (categories_of(d) < 1)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.shape",
                        d.shape.to_string() + " has no category to draw from");
    if (d.samples < 0)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.samples",
                        std::to_string(d.samples) + " is negative");
    if (!d.replacement && d.samples > categories_of(d))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.samples",
                        std::to_string(d.samples) + " is more than the " + std::to_string(categories_of(d)) +
                            " categories to draw from without replacement");
    if (Status s = check_shape(kPlan, "descriptor.samples", out_shape(d)); !s) return s;
    if (categories_of(d) > kMaxSorted)
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.shape",
                        d.shape.to_string() + " has more than 2^31 - 1 categories (indices are paired in 32 bits)");
    if (!d.replacement && d.samples > kMultinomialFewSamples && rows_of(d) * categories_of(d) > kMaxSorted)
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.shape",
                        d.shape.to_string() + " holds more than 2^31 - 1 weights to sort for more than " +
                            std::to_string(kMultinomialFewSamples) + " samples (the sort counts them in 32 bits)");
    return Status::ok();
  }

  static Shape out_shape(const Descriptor& d) {
    return d.shape.rank == 2 ? Shape{d.shape.dims[0], d.samples} : Shape{d.samples};
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    specs[0].dtype = d.dtype;
    specs[0].shape = d.shape;
    specs[1].dtype = d.index_dtype;
    specs[1].shape = out_shape(d);
  }

  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int>) {
    PlanChoice c;
    c.variant = 0;
    if (t.backend == Backend::cpu) {
      c.workspace = cpu::multinomial_workspace(d, rows_of(d), categories_of(d));
      return c;
    }
#if BARACUDA_HAS_CUDA
    Expected<const void*> kernels = cuda::multinomial_kernels(t, d, kPlan);
    if (!kernels) return kernels.status();
    c.kernels = *kernels;
    c.workspace = cuda::multinomial_workspace(d, rows_of(d), categories_of(d));
#endif
    return c;
  }

  static bool nothing_to_do(const Descriptor& d) { return d.samples == 0 || rows_of(d) == 0; }

  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = d.replacement ? DType::f64 : (d.dtype == DType::f64 ? DType::f64 : DType::f32);
    return g;
  }

  static KernelShape kernel(const PlanTarget&, const Descriptor&, const PlanChoice&, const Args* a) {
    KernelShape k{"philox", Layout::contiguous};
    if (a) k.layout = layout_of(given_views<Args>(kFields, *a));
    return k;
  }

  static MultinomialProblem problem(const LaunchContext&, const Descriptor& d, const Args& a) {
    MultinomialProblem p;
    p.desc = d;
    p.rows = rows_of(d);
    p.categories = categories_of(d);
    p.probs = a.probs.data;
    p.out = a.out.data;
    const int last = d.shape.rank - 1;
    p.probs_stride = a.probs.strides[last];
    p.out_stride = a.out.strides[last];
    if (d.shape.rank == 2) {
      p.probs_row_stride = a.probs.strides[0];
      p.out_row_stride = a.out.strides[0];
    }
    return p;
  }
};

}  // namespace

template <>
struct OpHooks<MultinomialOp> : MultinomialHooks {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<MultinomialOp>;
}  // namespace baracuda

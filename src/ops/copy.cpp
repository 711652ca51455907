// The copy plans (CastPlan, FillPlan): validation and kernel choice, shared by both backends, as
// hooks of the one plan life cycle (ops/plan_impl.hpp).
#include "baracuda/ops/copy.hpp"

#include <cmath>
#include <string>

#include "ops/copy_problem.hpp"
// (after the problem header, whose launch overloads it calls)
#include "ops/plan_impl.hpp"

namespace baracuda::detail {

ElementwisePath cast_path(Backend backend, const Shape& shape, const AnyTensorRef& x, const AnyTensorRef& y) {
  return layout_path(backend, shape, {x, y}, 1, true);
}

namespace {

DType compute_dtype(DType d) { return d == DType::f16 || d == DType::bf16 ? DType::f32 : d; }

std::string dtype_pair(const CastDescriptor& d) {
  return std::string(dtype_name(d.dtype)) + "_to_" + std::string(dtype_name(d.out_dtype));
}

struct CastHooks {
  using Descriptor = CastDescriptor;
  using Args = CastArgs;
  static constexpr OpSchema kSchema{"CastPlan", "cast", "copy", kEveryDType, {}, kCastVariants, true};
  static constexpr ArgField<Args> kFields[] = {{"x", &Args::x}, {"y", nullptr, &Args::y}};
  static constexpr InPlace kInPlace[] = {{"y", "x"}};  // where the dtypes match (check_alias)

  static Status check(const Descriptor& d) {
    if (!valid_dtype(d.out_dtype))
      return plan_error(StatusCode::invalid_problem, kSchema.plan, "descriptor.out_dtype",
                        std::to_string(static_cast<int>(d.out_dtype)) + " is not a DType");
    return check_shape(kSchema.plan, "descriptor.shape", d.shape);
  }
  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    specs[0].dtype = d.dtype;
    specs[1].dtype = d.out_dtype;
    for (ArgSpec& s : specs) s.shape = d.shape;
  }
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int> forced) {
#if BARACUDA_HAS_CUDA
    if (t.backend == Backend::cuda)
      if (Status s = cuda::prepare_cast(t, d); !s) return s;
#else
    (void)t, (void)d;
#endif
    return PlanChoice{forced.value_or(-1), 0, 0};
  }
  static bool nothing_to_do(const Descriptor& d) { return d.shape.numel() == 0; }
  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = compute_dtype(d.dtype);
    return g;
  }
  // The forced path, else the one the views allow (without views: the one contiguous aligned views get).
  static ElementwisePath path(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    if (c.variant >= 0) return variant_path(kCastVariants, c.variant);
    if (!a) return t.backend == Backend::cuda ? ElementwisePath::vectorized : ElementwisePath::contiguous;
    return cast_path(t.backend, d.shape, a->x, a->y);
  }
  static Status check_args(const PlanTarget&, const Descriptor& d, const PlanChoice& c, const Args& a) {
    if (c.variant < 0) return Status::ok();
    return check_forced_path(kSchema.plan, variant_path(kCastVariants, c.variant), d.shape, {a.x, a.y}, 1);
  }
  static KernelShape kernel(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    const ElementwisePath p = path(t, d, c, a);
    return {std::string(path_name(p)) + "." + dtype_pair(d), layout_of_path(p)};
  }
  static CastProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    return {d, path(ctx.target, d, ctx.choice, &a), a.x, a.y};
  }
};

// The range of an integer dtype, as doubles (the fill value is checked against it).
bool fits_integer(DType d, double v) {
  switch (d) {
    case DType::i8:
      return v > -129.0 && v < 128.0;
    case DType::u8:
      return v > -1.0 && v < 256.0;
    case DType::i32:
      return v > -2147483649.0 && v < 2147483648.0;
    case DType::i64:
      return v >= -0x1p63 && v < 0x1p63;
    default:
      return true;
  }
}
bool fits_integer(DType d, int64_t v) {
  switch (d) {
    case DType::i8:
      return v >= -128 && v <= 127;
    case DType::u8:
      return v >= 0 && v <= 255;
    case DType::i32:
      return v >= INT32_MIN && v <= INT32_MAX;
    default:
      return true;
  }
}
// The largest finite value of a float dtype (a finite fill value beyond it, rounded, is an error).
double float_max(DType d) {
  switch (d) {
    case DType::f16:
      return 65504.0;
    case DType::bf16:
      return 0x1.fep127;
    case DType::f32:
      return 0x1.fffffep127;
    default:
      return INFINITY;
  }
}

struct FillHooks {
  using Descriptor = FillDescriptor;
  using Args = FillArgs;
  static constexpr OpSchema kSchema{"FillPlan", "fill", "copy", kEveryDType, {}, kElementwiseVariants, true};
  static constexpr ArgField<Args> kFields[] = {{"y", nullptr, &Args::y}};

  static Status check(const Descriptor& d) {
    if (Status s = check_shape(kSchema.plan, "descriptor.shape", d.shape); !s) return s;
    const bool integer = !is_floating(d.dtype) && d.dtype != DType::boolean;
    auto overflow = [&](std::string_view field, const std::string& value) {
      return plan_error(StatusCode::invalid_problem, kSchema.plan, field,
                        value + " cannot be converted to " + std::string(dtype_name(d.dtype)) + " without overflow");
    };
    if (d.integer_value) {
      if (integer && !fits_integer(d.dtype, *d.integer_value))
        return overflow("descriptor.integer_value", std::to_string(*d.integer_value));
      return Status::ok();
    }
    if (integer && (!std::isfinite(d.value) || !fits_integer(d.dtype, d.value)))
      return overflow("descriptor.value", std::to_string(d.value));
    // A finite value that rounds past the largest finite one (PyTorch's check: 1e6 into f16).
    if (is_floating(d.dtype) && std::isfinite(d.value) && std::fabs(d.value) > float_max(d.dtype)) {
      const double max = float_max(d.dtype);
      const double half_ulp = d.dtype == DType::f16 ? 16.0 : d.dtype == DType::bf16 ? 0x1p119 : 0x1p103;
      if (std::fabs(d.value) >= max + half_ulp) return overflow("descriptor.value", std::to_string(d.value));
    }
    return Status::ok();
  }
  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    specs[0].dtype = d.dtype;
    specs[0].shape = d.shape;
  }
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int> forced) {
#if BARACUDA_HAS_CUDA
    if (t.backend == Backend::cuda)
      if (Status s = cuda::prepare_fill(t, d); !s) return s;
#else
    (void)t, (void)d;
#endif
    return PlanChoice{forced.value_or(-1), 0, 0};
  }
  static bool nothing_to_do(const Descriptor& d) { return d.shape.numel() == 0; }
  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = d.dtype;
    return g;
  }
  static ElementwisePath path(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    if (c.variant >= 0) return static_cast<ElementwisePath>(c.variant);
    if (!a) return t.backend == Backend::cuda ? ElementwisePath::vectorized : ElementwisePath::contiguous;
    return layout_path(t.backend, d.shape, {a->y}, 0);
  }
  static Status check_args(const PlanTarget&, const Descriptor& d, const PlanChoice& c, const Args& a) {
    if (c.variant < 0) return Status::ok();
    return check_forced_path(kSchema.plan, static_cast<ElementwisePath>(c.variant), d.shape, {a.y}, 0);
  }
  static KernelShape kernel(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    const ElementwisePath p = path(t, d, c, a);
    return {std::string(path_name(p)), layout_of_path(p)};
  }
  static FillProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    return {d, path(ctx.target, d, ctx.choice, &a), a.y};
  }
};

}  // namespace

template <>
struct OpHooks<CastOp> : CastHooks {};
template <>
struct OpHooks<FillOp> : FillHooks {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<CastOp>;
template class Plan<FillOp>;
}  // namespace baracuda

// The unary plans (every UnaryKind, forward and backward): validation and kernel choice, shared by
// both backends, as hooks of the one plan life cycle (ops/plan_impl.hpp). A kind is a Math struct
// (common/unary_math.hpp), its name below and its place in a group of UnaryGroups.
#include "baracuda/ops/unary.hpp"

#include <cmath>

#include "ops/unary_problem.hpp"
// (after the problem header, whose launch overloads it calls)
#include "ops/plan_impl.hpp"

namespace baracuda {

bool unary_kind_takes(UnaryKind kind, DType dtype) { return detail::kind_takes<detail::UnaryGroups>(kind, dtype); }

std::string_view unary_kind_name(UnaryKind kind) {
  static constexpr std::string_view kNames[] = {
      "abs",      "neg",        "sign",    "reciprocal", "square",   "sqrt",        "rsqrt",     "exp",         "exp2",
      "expm1",    "log",        "log2",    "log10",      "log1p",    "sin",         "cos",       "tan",         "asin",
      "acos",     "atan",       "sinh",    "cosh",       "tanh",     "asinh",       "acosh",     "atanh",       "erf",
      "erfc",     "erfinv",     "lgamma",  "floor",      "ceil",     "round",       "trunc",     "frac",        "relu",
      "relu6",    "leaky_relu", "elu",     "selu",       "celu",     "gelu",        "gelu_tanh", "silu",        "mish",
      "softplus", "softsign",   "sigmoid", "logsigmoid", "hardtanh", "hardsigmoid", "hardswish", "bitwise_not", "isnan",
      "isinf",    "isfinite",   "signbit", "logical_not"};
  static_assert(std::size(kNames) == kUnaryKindCount);
  const auto k = static_cast<size_t>(kind);
  return k < std::size(kNames) ? kNames[k] : "?";
}

}  // namespace baracuda

namespace baracuda::detail {
namespace {

// The parameters a kind reads: NaN in any of them is an error, and so are the values PyTorch
// rejects or divides by (celu's alpha 0, softplus's beta <= 0) and an empty hardtanh range.
Status check_parameters(std::string_view plan, const UnaryDescriptor& d) {
  const UnaryParameters& p = d.parameters;
  auto bad = [&](std::string_view name, std::string_view what) {
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.parameters." + std::string(name),
                      std::string(what) + " (kind " + std::string(unary_kind_name(d.kind)) + ")");
  };
  auto number = [&](std::string_view name, double v) { return std::isnan(v) ? bad(name, "is NaN") : Status::ok(); };
  switch (d.kind) {
    case UnaryKind::leaky_relu:
      return number("negative_slope", p.negative_slope);
    case UnaryKind::elu:
      return number("alpha", p.alpha);
    case UnaryKind::celu:
      if (p.alpha == 0) return bad("alpha", "is 0 (celu divides by it)");
      return number("alpha", p.alpha);
    case UnaryKind::softplus:
      if (p.beta == 0 || static_cast<float>(p.beta) == 0.0f)  // PyTorch takes any other beta, negative too
        return bad("beta", "is 0 (softplus divides by it; also in f32), is " + std::to_string(p.beta));
      if (Status s = number("beta", p.beta); !s) return s;
      return number("threshold", p.threshold);
    case UnaryKind::hardtanh:
      if (Status s = number("min_val", p.min_val); !s) return s;
      if (Status s = number("max_val", p.max_val); !s) return s;
      if (p.min_val > p.max_val)
        return bad("min_val", std::to_string(p.min_val) + " exceeds max_val " + std::to_string(p.max_val));
      return Status::ok();
    default:
      return Status::ok();
  }
}

// What both directions share: `Hooks` supplies kSchema, kFields and with_views (the views in launch
// order and how many are inputs).
template <class Hooks>
struct UnaryHooksBase {
  using Descriptor = UnaryDescriptor;
  static Status check(const Descriptor& d) {
    const std::string_view plan = Hooks::kSchema.plan;
    if (static_cast<int>(d.kind) >= kUnaryKindCount)
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.kind",
                        std::to_string(static_cast<int>(d.kind)) + " is not a UnaryKind");
    if (Status s = check_shape(plan, "descriptor.shape", d.shape); !s) return s;
    if (Status s = check_kind_dtype(plan, unary_kind_name(d.kind), d.dtype,
                                    [&](DType t) { return unary_kind_takes(d.kind, t); });
        !s)
      return s;
    return check_parameters(plan, d);
  }
  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    for (ArgSpec& s : specs) {
      s.dtype = d.dtype;
      s.shape = d.shape;
    }
    if (Hooks::kForward && unary_kind_is_predicate(d.kind)) specs.back().dtype = DType::boolean;
  }
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int> forced) {
#if BARACUDA_HAS_CUDA
    if (t.backend == Backend::cuda)
      if (Status s = cuda::prepare_unary(t, d, !Hooks::kForward); !s) return s;
#else
    (void)t, (void)d;
#endif
    return PlanChoice{forced.value_or(-1), 0, 0};
  }
  static bool nothing_to_do(const Descriptor& d) { return d.shape.numel() == 0; }
  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = elementwise_compute_dtype(d.dtype);
    return g;
  }
  // The forced variant, else the one the views allow (or, with no views, the one contiguous aligned
  // views get).
  template <class Args>
  static ElementwisePath path(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    if (c.variant >= 0) return static_cast<ElementwisePath>(c.variant);
    if (!a) return t.backend == Backend::cuda ? ElementwisePath::vectorized : ElementwisePath::contiguous;
    return Hooks::with_views(*a, [&](std::initializer_list<AnyTensorRef> v, int inputs) {
      return layout_path(t.backend, d.shape, v, inputs);
    });
  }
  // A forced variant must fit the views (the overlap rule is every plan's: plan_impl.hpp).
  template <class Args>
  static Status check_args(const PlanTarget&, const Descriptor& d, const PlanChoice& c, const Args& a) {
    const std::string_view plan = Hooks::kSchema.plan;
    if (c.variant < 0) return Status::ok();
    return Hooks::with_views(a, [&](std::initializer_list<AnyTensorRef> v, int inputs) {
      return check_forced_path(plan, static_cast<ElementwisePath>(c.variant), d.shape, v, inputs);
    });
  }
  // The path and the kind: "vectorized.gelu".
  template <class Args>
  static KernelShape kernel(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    const ElementwisePath p = path(t, d, c, a);
    return {std::string(path_name(p)) + "." + std::string(unary_kind_name(d.kind)), layout_of_path(p)};
  }
};

struct UnaryForwardHooks : UnaryHooksBase<UnaryForwardHooks> {
  using Args = UnaryArgs;
  static constexpr bool kForward = true;
  static constexpr OpSchema kSchema{"UnaryPlan", "unary", "elementwise", kEveryDType, {}, kElementwiseVariants, true};
  static constexpr ArgField<Args> kFields[] = {{"x", &Args::x}, {"out", nullptr, &Args::out}};
  static constexpr InPlace kInPlace[] = {{"out", "x"}};
  template <class F>
  static auto with_views(const Args& a, F&& f) {
    return f({a.x, a.out}, 1);
  }
  static UnaryForwardProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    return {d, path(ctx.target, d, ctx.choice, &a), a.x, a.out};
  }
};

struct UnaryBackwardHooks : UnaryHooksBase<UnaryBackwardHooks> {
  using Args = UnaryBackwardArgs;
  static constexpr bool kForward = false;
  static Status check(const Descriptor& d) {
    if (Status s = UnaryHooksBase::check(d); !s) return s;
    if (unary_kind_is_predicate(d.kind))
      return plan_error(StatusCode::unsupported, kSchema.plan, "descriptor.kind",
                        std::string(unary_kind_name(d.kind)) + " gives bool: it has no gradient");
    return Status::ok();
  }
  static constexpr OpSchema kSchema{
      "UnaryBackwardPlan", "unary_backward", "elementwise", kFloats, {}, kElementwiseVariants, true};
  static constexpr ArgField<Args> kFields[] = {{"dout", &Args::dout}, {"x", &Args::x}, {"dx", nullptr, &Args::dx}};
  static constexpr InPlace kInPlace[] = {{"dx", "dout"}, {"dx", "x"}};
  template <class F>
  static auto with_views(const Args& a, F&& f) {
    return f({a.dout, a.x, a.dx}, 2);
  }
  static UnaryBackwardProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    return {d, path(ctx.target, d, ctx.choice, &a), a.dout, a.x, a.dx};
  }
};

}  // namespace

template <>
struct OpHooks<UnaryOp> : UnaryForwardHooks {};
template <>
struct OpHooks<UnaryBackwardOp> : UnaryBackwardHooks {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<UnaryOp>;
template class Plan<UnaryBackwardOp>;
}  // namespace baracuda

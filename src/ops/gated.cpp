// The gated plans (GatedPlan, GatedBackwardPlan): validation and kernel choice, shared by both
// backends, as hooks of the one plan life cycle (ops/plan_impl.hpp). The kernels see x (and dx) as its
// two halves, views of the output's shape, so every elementwise path of both backends serves.
#include "baracuda/ops/gated.hpp"

#include <string>

#include "ops/gated_problem.hpp"
// (after the problem header, whose launch overloads it calls)
#include "ops/plan_impl.hpp"

namespace baracuda {

std::string_view gated_kind_name(GatedKind kind) {
  static constexpr std::string_view kNames[] = {"glu", "swiglu", "geglu", "geglu_tanh", "reglu"};
  static_assert(std::size(kNames) == kGatedKindCount);
  const auto k = static_cast<size_t>(kind);
  return k < std::size(kNames) ? kNames[k] : "?";
}

}  // namespace baracuda

namespace baracuda::detail {
namespace {

// The output's shape: x's with the last dim halved.
Shape half_shape(const GatedDescriptor& d) {
  Shape s = d.shape;
  if (s.rank > 0) s.dims[s.rank - 1] /= 2;
  return s;
}

// The first or second half of x (or dx) along its last dim.
AnyTensorRef half_of(const AnyTensorRef& x, bool second) {
  AnyTensorRef h = x;
  if (x.rank() == 0) return h;
  const int last = x.rank() - 1;
  const int64_t d = x.shape.dims[last] / 2;
  h.shape.dims[last] = d;
  if (second && d > 0 && x.numel() > 0) {
    const int64_t offset = d * x.strides[last];
    h.data = static_cast<const char*>(x.data) + offset * static_cast<int64_t>(dtype_size(x.dtype));
    h.capacity = std::max<int64_t>(0, x.capacity - offset);
  }
  return h;
}
AnyTensorMut half_of(const AnyTensorMut& x, bool second) {
  const AnyTensorRef h = half_of(AnyTensorRef(x), second);
  return {const_cast<void*>(h.data), h.dtype, h.shape, h.strides, h.capacity};
}

// What both directions share: `Hooks` supplies kSchema, kFields and with_views (the elementwise
// views in launch order, and how many are inputs).
template <class Hooks>
struct GatedHooksBase {
  using Descriptor = GatedDescriptor;
  static Status check(const Descriptor& d) {
    const std::string_view plan = Hooks::kSchema.plan;
    if (static_cast<int>(d.kind) >= kGatedKindCount)
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.kind",
                        std::to_string(static_cast<int>(d.kind)) + " is not a GatedKind");
    if (Status s = check_shape(plan, "descriptor.shape", d.shape); !s) return s;
    if (d.shape.rank < 1)
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.shape.rank",
                        "a gated unit halves the last dim: rank 0 has none");
    const int64_t last = d.shape.dims[d.shape.rank - 1];
    if (last % 2 != 0)
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.shape[" + std::to_string(d.shape.rank - 1) + "]",
                        "the last dim (" + std::to_string(last) + ") must be even: x = [a, b]");
    return Status::ok();
  }
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int> forced) {
#if BARACUDA_HAS_CUDA
    if (t.backend == Backend::cuda)
      if (Status s = cuda::prepare_gated(t, d, Hooks::kSchema.plan == std::string_view("GatedBackwardPlan")); !s)
        return s;
#else
    (void)t, (void)d;
#endif
    return PlanChoice{forced.value_or(-1), 0, 0};
  }
  static bool nothing_to_do(const Descriptor& d) { return d.shape.numel() == 0; }
  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = d.dtype == DType::f64 ? DType::f64 : DType::f32;
    return g;
  }
  template <class Args>
  static ElementwisePath path(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    if (c.variant >= 0) return static_cast<ElementwisePath>(c.variant);
    if (!a)  // contiguous aligned views: halves are rows of vectors where D allows
      return t.backend == Backend::cuda ? ElementwisePath::strided_vectorized : ElementwisePath::strided;
    return Hooks::with_views(*a, [&](std::initializer_list<AnyTensorRef> v, int inputs) {
      return layout_path(t.backend, half_shape(d), v, inputs);
    });
  }
  // A forced variant must fit the halves (the overlap rule, dx = x in place, is every plan's: plan_impl.hpp).
  template <class Args>
  static Status check_args(const PlanTarget&, const Descriptor& d, const PlanChoice& c, const Args& a) {
    const std::string_view plan = Hooks::kSchema.plan;
    if (c.variant < 0) return Status::ok();
    return Hooks::with_views(a, [&](std::initializer_list<AnyTensorRef> v, int inputs) {
      return check_forced_path(plan, static_cast<ElementwisePath>(c.variant), half_shape(d), v, inputs);
    });
  }
  template <class Args>
  static KernelShape kernel(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    const ElementwisePath p = path(t, d, c, a);
    return {std::string(path_name(p)) + "." + std::string(gated_kind_name(d.kind)), layout_of_path(p)};
  }
};

struct GatedForwardHooks : GatedHooksBase<GatedForwardHooks> {
  using Args = GatedArgs;
  static constexpr OpSchema kSchema{"GatedPlan", "gated", "elementwise", kFloats, {}, kElementwiseVariants, true};
  static constexpr ArgField<Args> kFields[] = {{"x", &Args::x}, {"out", nullptr, &Args::out}};
  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    for (ArgSpec& s : specs) s.dtype = d.dtype;
    specs[0].shape = d.shape;
    specs[1].shape = half_shape(d);
  }
  template <class F>
  static auto with_views(const Args& a, F&& f) {
    return f({half_of(a.x, false), half_of(a.x, true), a.out}, 2);
  }
  static GatedForwardProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    return {d, path(ctx.target, d, ctx.choice, &a), half_shape(d), half_of(a.x, false), half_of(a.x, true), a.out};
  }
};

struct GatedBackwardHooks : GatedHooksBase<GatedBackwardHooks> {
  using Args = GatedBackwardArgs;
  static constexpr OpSchema kSchema{
      "GatedBackwardPlan", "gated_backward", "elementwise", kFloats, {}, kElementwiseVariants, true};
  static constexpr ArgField<Args> kFields[] = {{"dout", &Args::dout}, {"x", &Args::x}, {"dx", nullptr, &Args::dx}};
  static constexpr InPlace kInPlace[] = {{"dx", "x"}};
  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    for (ArgSpec& s : specs) s.dtype = d.dtype;
    specs[0].shape = half_shape(d);
    specs[1].shape = specs[2].shape = d.shape;
  }
  template <class F>
  static auto with_views(const Args& a, F&& f) {
    const AnyTensorMut da = half_of(a.dx, false), db = half_of(a.dx, true);
    return f({a.dout, half_of(a.x, false), half_of(a.x, true), da, db}, 3);
  }
  static GatedBackwardProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    return {d,
            path(ctx.target, d, ctx.choice, &a),
            half_shape(d),
            a.dout,
            half_of(a.x, false),
            half_of(a.x, true),
            half_of(a.dx, false),
            half_of(a.dx, true)};
  }
};

}  // namespace

template <>
struct OpHooks<GatedOp> : GatedForwardHooks {};
template <>
struct OpHooks<GatedBackwardOp> : GatedBackwardHooks {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<GatedOp>;
template class Plan<GatedBackwardOp>;
}  // namespace baracuda

// The BinaryParam plans (lerp, addcmul, and their backward): validation and kernel choice, shared by
// both backends, as hooks of the one plan life cycle (ops/plan_impl.hpp). An op of the family is a
// Math struct (common/binary_param_math.hpp) and the OpHooks lines at the end of this file.
#include "baracuda/ops/binary_param.hpp"

#include <algorithm>

#include "ops/binary_param_problem.hpp"
#include "ops/plan_impl.hpp"

namespace baracuda::detail {
namespace {

bool weight_is_broadcast(const BinaryParamDescriptor& desc) {
  return desc.weight_mode == WeightMode::tensor && desc.weight_shape.numel() != desc.shape.numel();
}

Status check_descriptor(std::string_view plan, const BinaryParamDescriptor& desc) {
  if (Status s = check_shape(plan, "descriptor.shape", desc.shape); !s) return s;
  if (desc.weight_mode == WeightMode::scalar) return Status::ok();
  if (desc.weight_mode != WeightMode::tensor)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.weight_mode", "is not a WeightMode");
  if (Status s = check_shape(plan, "descriptor.weight_shape", desc.weight_shape); !s) return s;
  if (desc.weight_shape.rank > desc.shape.rank)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.weight_shape",
                      "rank " + std::to_string(desc.weight_shape.rank) + " exceeds the output's rank " +
                          std::to_string(desc.shape.rank));
  const int offset = desc.shape.rank - desc.weight_shape.rank;
  for (int d = 0; d < desc.weight_shape.rank; ++d) {
    const int64_t w = desc.weight_shape.dims[d], o = desc.shape.dims[d + offset];
    if (w != 1 && w != o)
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.weight_shape[" + std::to_string(d) + "]",
                        "size " + std::to_string(w) + " does not broadcast to output size " + std::to_string(o));
  }
  return Status::ok();
}

// The weight view expanded to the output's rank: zero strides where it is broadcast.
template <class View>
View expand_weight(const BinaryParamDescriptor& desc, const View& weight) {
  View out = weight;
  out.shape = desc.shape;
  out.strides = {};
  const int offset = desc.shape.rank - desc.weight_shape.rank;
  for (int d = 0; d < desc.weight_shape.rank; ++d)
    out.strides[d + offset] = desc.weight_shape.dims[d] == 1 ? 0 : weight.strides[d];
  return out;
}

template <class Math>
constexpr int math_index() {
  return []<size_t... I>(std::index_sequence<I...>) {
    int index = -1;
    ((std::is_same_v<Math, std::tuple_element_t<I, BinaryParamMaths>> ? index = static_cast<int>(I) : 0), ...);
    return index;
  }
  (std::make_index_sequence<std::tuple_size_v<BinaryParamMaths>>{});
}

// What the two directions share: every view has the descriptor's dtype; the weight is a tensor only
// in tensor mode; nothing is accumulated; no atomics anywhere in this family. The views' path is
// picked the same way in both: `Hooks` supplies kSchema and with_views (its views in launch order,
// the weight expanded, and how many are inputs).
template <class Hooks>
struct BinaryParamHooksBase {
  using Descriptor = BinaryParamDescriptor;
  static bool nothing_to_do(const Descriptor& d) { return d.shape.numel() == 0; }
  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = d.dtype == DType::f64 ? DType::f64 : DType::f32;
    return g;
  }
  // Fills every spec with the output shape and dtype; the weight-shaped and weight-mode-only ones
  // are the caller's to adjust.
  static void fill(const Descriptor& d, std::span<ArgSpec> specs) {
    for (ArgSpec& s : specs) {
      s.dtype = d.dtype;
      s.shape = d.shape;
    }
  }
  // The forced variant, else the one the views allow (or, with no views, the one contiguous aligned
  // views get).
  template <class Args>
  static ElementwisePath path(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    if (c.variant >= 0) return static_cast<ElementwisePath>(c.variant);
    if (!a) {
      const bool broadcast = weight_is_broadcast(d);
      if (t.backend == Backend::cuda)
        return broadcast ? ElementwisePath::strided_vectorized : ElementwisePath::vectorized;
      return broadcast ? ElementwisePath::strided : ElementwisePath::contiguous;
    }
    return Hooks::with_views(d, *a, [&](std::initializer_list<AnyTensorRef> v, int inputs) {
      return layout_path(t.backend, d.shape, v, inputs);
    });
  }
  // A forced variant must fit the views.
  template <class Args>
  static Status check_args(const PlanTarget&, const Descriptor& d, const PlanChoice& c, const Args& a) {
    if (c.variant < 0) return Status::ok();
    return Hooks::with_views(d, a, [&](std::initializer_list<AnyTensorRef> v, int inputs) {
      return check_forced_path(Hooks::kSchema.plan, static_cast<ElementwisePath>(c.variant), d.shape, v, inputs);
    });
  }
  template <class Args>
  static KernelShape kernel(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    const ElementwisePath p = path(t, d, c, a);
    return {std::string(path_name(p)), layout_of_path(p)};
  }
};

template <class Math>
struct BinaryParamForwardHooks : BinaryParamHooksBase<BinaryParamForwardHooks<Math>> {
  using Base = BinaryParamHooksBase<BinaryParamForwardHooks<Math>>;
  using typename Base::Descriptor;
  using Args = BinaryParamArgs;
  static constexpr OpSchema kSchema{Math::kPlan, Math::kOp, "elementwise", kFloats, {}, kElementwiseVariants, true};
  static constexpr ArgField<Args> kFields[] = {
      {"a", &Args::a}, {"b", &Args::b}, {"weight", &Args::weight}, {"out", nullptr, &Args::out}};
  static constexpr InPlace kInPlace[] = {{"out", "a"}, {"out", "b"}, {"out", "weight"}};

  static Status check(const Descriptor& d) { return check_descriptor(kSchema.plan, d); }
  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    Base::fill(d, specs);
    specs[2].shape = d.weight_shape;
    specs[2].present = d.weight_mode == WeightMode::tensor;
  }
  static Expected<PlanChoice> choose(const PlanTarget&, const Descriptor&, const PlanPreference&,
                                     std::optional<int> forced) {
    return PlanChoice{forced.value_or(-1), 0, 0};
  }
  // The views in launch order (the weight expanded), and how many are inputs.
  template <class F>
  static auto with_views(const Descriptor& d, const Args& a, F&& f) {
    if (d.weight_mode == WeightMode::tensor) return f({a.a, a.b, expand_weight(d, a.weight), a.out}, 3);
    return f({a.a, a.b, a.out}, 2);
  }
  static BinaryParamForwardProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    BinaryParamForwardProblem p{d, math_index<Math>(), Base::path(ctx.target, d, ctx.choice, &a), a.a, a.b, {}, a.out};
    if (d.weight_mode == WeightMode::tensor) p.weight = expand_weight(d, a.weight);
    return p;
  }
};

template <class Math>
struct BinaryParamBackwardHooks : BinaryParamHooksBase<BinaryParamBackwardHooks<Math>> {
  using Base = BinaryParamHooksBase<BinaryParamBackwardHooks<Math>>;
  using typename Base::Descriptor;
  using Args = BinaryParamBackwardArgs;
  static constexpr OpSchema kSchema{
      Math::kBackwardPlan, Math::kBackwardOp, "elementwise", kFloats, {}, kElementwiseBackwardVariants, true};
  static constexpr ArgField<Args> kFields[] = {{"dout", &Args::dout},
                                               {"a", &Args::a},
                                               {"b", &Args::b},
                                               {"weight", &Args::weight},
                                               {"da", nullptr, &Args::da},
                                               {"db", nullptr, &Args::db},
                                               {"dweight", nullptr, &Args::dweight}};
  // One elementwise pass reads every input's element before it writes the outputs' (a broadcast
  // weight's dweight is reduced after it: check_args).
  static constexpr InPlace kInPlace[] = {
      {"da", "dout"}, {"da", "a"},      {"da", "b"},         {"da", "weight"}, {"db", "dout"},   {"db", "a"},
      {"db", "b"},    {"db", "weight"}, {"dweight", "dout"}, {"dweight", "a"}, {"dweight", "b"}, {"dweight", "weight"}};
  static constexpr int kBroadcastReduce = static_cast<int>(ElementwisePath::broadcast_reduce);
  // An empty output still has a dweight to write (zeros: a sum of nothing) when the weight is not empty.
  static bool nothing_to_do(const Descriptor& d) {
    return d.shape.numel() == 0 && (d.weight_mode == WeightMode::scalar || d.weight_shape.numel() == 0);
  }

  static Status check(const Descriptor& d) { return check_descriptor(kSchema.plan, d); }
  // With a broadcast weight, dweight's reduction may read dout, a and b after the elementwise pass
  // wrote da and db: when dweight is asked for, no gradient may be an input, not even exactly.
  static Status check_args(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args& a) {
    if (weight_is_broadcast(d) && a.dweight.data)
      if (Status s = check_no_alias<Args>(kSchema.plan, kFields, a, [](size_t, size_t) { return true; }); !s) return s;
    return Base::check_args(t, d, c, a);
  }
  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    Base::fill(d, specs);
    const bool tensor = d.weight_mode == WeightMode::tensor;
    specs[3].shape = specs[6].shape = d.weight_shape;
    specs[1].present = specs[2].present = specs[3].present = specs[6].present = tensor;
  }
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference& pref,
                                     std::optional<int> forced) {
    const std::string_view plan = kSchema.plan;
    const bool broadcast = weight_is_broadcast(d);
    if (forced && (broadcast != (*forced == kBroadcastReduce) ||
                   (*forced == kBroadcastReduce && d.weight_mode != WeightMode::tensor)))
      return plan_error(StatusCode::unsupported, plan, "preference.variant",
                        "'" + pref.variant + "' cannot run this problem (a broadcast weight needs broadcast_reduce, " +
                            "which needs a tensor weight)");
    PlanChoice c{forced.value_or(-1), 0, 1};
    if (!broadcast && c.variant != kBroadcastReduce) return c;
    c.variant = kBroadcastReduce;
    int64_t m = 0, r = 0;
    weight_reduce_sizes(d, m, r);
    c.knob = reduction_splits(t, m, r, d.dtype, pref.workspace_limit, c.workspace);
    return c;
  }
  template <class F>
  static auto with_views(const Descriptor& d, const Args& a, F&& f) {
    if (d.weight_mode == WeightMode::scalar) return f({a.dout, a.da, a.db}, 1);
    return f({a.dout, a.a, a.b, expand_weight(d, a.weight), a.da, a.db, expand_weight(d, a.dweight)}, 4);
  }
  static BinaryParamBackwardProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    const ElementwisePath p = Base::path(ctx.target, d, ctx.choice, &a);
    BinaryParamBackwardProblem problem{d,
                                       math_index<Math>(),
                                       p,
                                       a.dout,
                                       a.a,
                                       a.b,
                                       {},
                                       a.da,
                                       a.db,
                                       {},
                                       p == ElementwisePath::broadcast_reduce ? ctx.choice.knob : 1,
                                       ctx.workspace.data};
    if (d.weight_mode == WeightMode::tensor) {
      problem.weight = expand_weight(d, a.weight);
      problem.dweight = expand_weight(d, a.dweight);
    }
    return problem;
  }
};

}  // namespace

template <>
struct OpHooks<LerpOp> : BinaryParamForwardHooks<LerpMath> {};
template <>
struct OpHooks<LerpBackwardOp> : BinaryParamBackwardHooks<LerpMath> {};
template <>
struct OpHooks<AddcmulOp> : BinaryParamForwardHooks<AddcmulMath> {};
template <>
struct OpHooks<AddcmulBackwardOp> : BinaryParamBackwardHooks<AddcmulMath> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<LerpOp>;
template class Plan<LerpBackwardOp>;
template class Plan<AddcmulOp>;
template class Plan<AddcmulBackwardOp>;
}  // namespace baracuda

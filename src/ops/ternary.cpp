// The ternary plans (where and clamp, forward and backward): validation,
// broadcasting of three operands and kernel choice, shared by both backends, as hooks of the one plan
// life cycle (ops/plan_impl.hpp). A kind is a Math struct (common/ternary_math.hpp), its name below and
// its place in a group of TernaryGroups.
#include "baracuda/ops/ternary.hpp"

#include "ops/ternary_problem.hpp"
// (after the problem header, whose launch overloads it calls)
#include "ops/broadcast_hooks.hpp"
#include "ops/plan_impl.hpp"

namespace baracuda {

std::string_view ternary_kind_name(TernaryKind kind) {
  static constexpr std::string_view kNames[] = {"where", "clamp", "addcdiv"};
  static_assert(std::size(kNames) == kTernaryKindCount);
  const auto k = static_cast<size_t>(kind);
  return k < std::size(kNames) ? kNames[k] : "?";
}

bool ternary_kind_takes(TernaryKind kind, DType dtype) {
  return detail::kind_takes<detail::TernaryGroups>(kind, dtype);
}

namespace {
// The operands' shapes, a scalar as rank 0.
std::array<Shape, 3> operand_shapes(const TernaryDescriptor& d) {
  return {d.a_scalar ? Shape{} : d.a_shape, d.b_scalar ? Shape{} : d.b_shape, d.c_scalar ? Shape{} : d.c_shape};
}
}  // namespace

std::optional<Shape> ternary_output_shape(const TernaryDescriptor& desc) {
  const std::array<Shape, 3> shapes = operand_shapes(desc);
  Shape out;
  for (const Shape& s : shapes) {
    if (s.rank < 0 || s.rank > kMaxRank) return std::nullopt;
    for (int d = 0; d < s.rank; ++d)
      if (s.dims[d] < 0) return std::nullopt;
    out.rank = std::max(out.rank, s.rank);
  }
  for (int d = 0; d < out.rank; ++d) out.dims[d] = 1;
  for (const Shape& s : shapes)
    for (int d = 0; d < s.rank; ++d) {
      int64_t& o = out.dims[d + out.rank - s.rank];
      const int64_t x = s.dims[d];
      if (x != o && x != 1 && o != 1) return std::nullopt;
      if (o == 1) o = x;
    }
  return out;
}

}  // namespace baracuda

namespace baracuda::detail {
namespace {

constexpr int kBroadcastReduce = static_cast<int>(ElementwisePath::broadcast_reduce);
constexpr std::string_view kOperandNames[3] = {"a", "b", "c"};
constexpr std::string_view kGradientNames[3] = {"da", "db", "dc"};

Shape output_shape(const TernaryDescriptor& d) { return ternary_output_shape(d).value_or(Shape{}); }
// Whether the kind's Math takes scalar operands (takes_scalar_operands).
bool kind_takes_scalars(TernaryKind kind) {
  return std::apply(
      [&](auto... group) {
        return (std::apply(
                    [&](auto... math) {
                      return ((decltype(math)::kKind == kind && takes_scalar_operands<decltype(math)>) || ...);
                    },
                    group) ||
                ...);
      },
      TernaryGroups{});
}

bool is_scalar(const TernaryDescriptor& d, int i) {
  return (i == 0 ? d.a_scalar : i == 1 ? d.b_scalar : d.c_scalar).has_value();
}
const Shape& shape_of(const TernaryDescriptor& d, int i) { return i == 0 ? d.a_shape : i == 1 ? d.b_shape : d.c_shape; }
DType dtype_of(const TernaryDescriptor& d, int i) {
  return i == 0 && d.kind == TernaryKind::where ? DType::boolean : d.dtype;
}

// An operand's view expanded to the output's shape: zero strides where it is broadcast. A scalar
// operand (no tensor) stays empty.
template <class View>
View expand(const Shape& out, const TernaryDescriptor& d, int i, const View& view) {
  if (is_scalar(d, i)) return View{};
  const Shape& shape = shape_of(d, i);
  View e = view;
  e.shape = out;
  e.strides = {};
  const int offset = out.rank - shape.rank;
  for (int k = 0; k < shape.rank; ++k) e.strides[k + offset] = shape.dims[k] == 1 ? 0 : view.strides[k];
  return e;
}

std::array<AnyTensorRef, 3> expand_operands(const TernaryDescriptor& d, const AnyTensorRef& a, const AnyTensorRef& b,
                                            const AnyTensorRef& c) {
  const Shape out = output_shape(d);
  return {expand(out, d, 0, a), expand(out, d, 1, b), expand(out, d, 2, c)};
}

// Is tensor operand i broadcast along some dim of the output (its gradient then a reduction)?
bool reduces(const TernaryDescriptor& d, int i) {
  if (is_scalar(d, i)) return false;
  bool broadcast[kMaxRank];
  return broadcast_dims(output_shape(d), shape_of(d, i), broadcast);
}
bool any_reduces(const TernaryDescriptor& d) { return reduces(d, 0) || reduces(d, 1) || reduces(d, 2); }

Status check_descriptor(std::string_view plan, const TernaryDescriptor& d) {
  if (static_cast<int>(d.kind) >= kTernaryKindCount)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.kind",
                      std::to_string(static_cast<int>(d.kind)) + " is not a TernaryKind");
  if (!kind_takes_scalars(d.kind))
    for (int i = 0; i < 3; ++i)
      if (is_scalar(d, i))
        return plan_error(StatusCode::invalid_problem, plan, "descriptor." + std::string(kOperandNames[i]) + "_scalar",
                          "is set, but " + std::string(ternary_kind_name(d.kind)) + " takes three tensors");
  if (d.kind == TernaryKind::where && d.a_scalar)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.a_scalar",
                      "is set: where's condition must be a bool tensor");
  if (d.a_scalar && d.b_scalar && d.c_scalar)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.c_scalar",
                      "is set as a_scalar and b_scalar are: at least one operand must be a tensor");
  if (Status s = check_kind_dtype(plan, ternary_kind_name(d.kind), d.dtype,
                                  [&](DType t) { return ternary_kind_takes(d.kind, t); });
      !s)
    return s;
  // An integer dtype's numbers: whole and within its range.
  const std::optional<double>* scalars[3] = {&d.a_scalar, &d.b_scalar, &d.c_scalar};
  for (int i = 0; i < 3; ++i)
    if (*scalars[i])
      if (Status s =
              check_scalar_fits(plan, "descriptor." + std::string(kOperandNames[i]) + "_scalar", **scalars[i], d.dtype);
          !s)
        return s;
  if (Status s = check_scalar_fits(plan, "descriptor.value", d.value, d.dtype); !s) return s;
  for (int i = 0; i < 3; ++i)
    if (!is_scalar(d, i))
      if (Status s = check_shape(plan, "descriptor." + std::string(kOperandNames[i]) + "_shape", shape_of(d, i)); !s)
        return s;
  if (!ternary_output_shape(d)) {
    // Name the first dim that meets a different size in an earlier operand.
    const std::array<Shape, 3> shapes = operand_shapes(d);
    int rank = 0;
    for (const Shape& s : shapes) rank = std::max(rank, s.rank);
    for (int i = 1; i < 3; ++i)
      for (int k = 0; k < shapes[i].rank; ++k)
        for (int j = 0; j < i; ++j) {
          const int kj = k + (rank - shapes[i].rank) - (rank - shapes[j].rank);  // j's dim aligned with k
          if (kj < 0 || kj >= shapes[j].rank) continue;
          const int64_t x = shapes[j].dims[kj], y = shapes[i].dims[k];
          if (x != y && x != 1 && y != 1)
            return plan_error(StatusCode::invalid_problem, plan,
                              "descriptor." + std::string(kOperandNames[i]) + "_shape[" + std::to_string(k) + "]",
                              "size " + std::to_string(y) + " does not broadcast against " +
                                  std::string(kOperandNames[j]) + "_shape[" + std::to_string(kj) + "] of size " +
                                  std::to_string(x));
        }
  }
  // Each operand within the limit, their broadcast may still not be ([247, 1] with [1, 2^61]): the
  // error names the last tensor operand.
  int last = 2;
  while (last > 0 && is_scalar(d, last)) --last;
  return check_shape(plan, "descriptor." + std::string(kOperandNames[last]) + "_shape", output_shape(d));
}

// The family's side of the shared hooks (ops/broadcast_hooks.hpp).
struct TernaryFamily {
  using Descriptor = TernaryDescriptor;
  static Status check(std::string_view plan, const Descriptor& d) { return check_descriptor(plan, d); }
  static Shape output_shape(const Descriptor& d) { return detail::output_shape(d); }
  static bool any_reduces(const Descriptor& d) { return detail::any_reduces(d); }
  static std::string_view kind_name(const Descriptor& d) { return ternary_kind_name(d.kind); }
  static DType compute_dtype(const Descriptor& d) { return elementwise_compute_dtype(d.dtype); }
};
template <class Hooks>
using TernaryHooksBase = BroadcastHooksBase<Hooks, TernaryFamily>;

struct TernaryForwardHooks : TernaryHooksBase<TernaryForwardHooks> {
  using Args = TernaryArgs;
  static constexpr OpSchema kSchema{"TernaryPlan",        "ternary", "elementwise", kEveryDType, {},
                                    kElementwiseVariants, true};
  static constexpr ArgField<Args> kFields[] = {
      {"a", &Args::a}, {"b", &Args::b}, {"c", &Args::c}, {"out", nullptr, &Args::out}};
  // out may be an operand of its dtype exactly (in place; only an operand of the output's shape can be).
  static constexpr InPlace kInPlace[] = {{"out", "a"}, {"out", "b"}, {"out", "c"}};
  static bool may_alias(const Descriptor& d, const Args&, int, int input) { return dtype_of(d, input) == d.dtype; }

  static bool nothing_to_do(const Descriptor& d) { return output_shape(d).numel() == 0; }
  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    for (int i = 0; i < 3; ++i) {
      specs[i].dtype = dtype_of(d, i);
      specs[i].shape = shape_of(d, i);
      specs[i].present = !is_scalar(d, i);
    }
    specs[3].dtype = d.dtype;
    specs[3].shape = output_shape(d);
  }
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int> forced) {
#if BARACUDA_HAS_CUDA
    if (t.backend == Backend::cuda)
      if (Status s = cuda::prepare_ternary(t, d); !s) return s;
#else
    (void)t, (void)d;
#endif
    return PlanChoice{forced.value_or(-1), 0, 0};
  }
  // The tensor operands, then out.
  template <class F>
  static auto elementwise_views(const Descriptor& d, const Args& args, F&& f) {
    const std::array<AnyTensorRef, 3> e = expand_operands(d, args.a, args.b, args.c);
    const bool s[3] = {is_scalar(d, 0), is_scalar(d, 1), is_scalar(d, 2)};
    if (s[0] && s[1]) return f({e[2], args.out}, 1);
    if (s[0] && s[2]) return f({e[1], args.out}, 1);
    if (s[1] && s[2]) return f({e[0], args.out}, 1);
    if (s[0]) return f({e[1], e[2], args.out}, 2);
    if (s[1]) return f({e[0], e[2], args.out}, 2);
    if (s[2]) return f({e[0], e[1], args.out}, 2);
    return f({e[0], e[1], e[2], args.out}, 3);
  }
  static TernaryForwardProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& args) {
    return {d, output_shape(d), path(ctx.target, d, ctx.choice, &args), expand_operands(d, args.a, args.b, args.c),
            args.out};
  }
};

struct TernaryBackwardHooks : TernaryHooksBase<TernaryBackwardHooks> {
  using Args = TernaryBackwardArgs;
  static constexpr OpSchema kSchema{
      "TernaryBackwardPlan", "ternary_backward", "elementwise", kFloats, {}, kElementwiseBackwardVariants, true};
  static constexpr ArgField<Args> kFields[] = {{"dout", &Args::dout},
                                               {"a", &Args::a},
                                               {"b", &Args::b},
                                               {"c", &Args::c},
                                               {"da", nullptr, &Args::da},
                                               {"db", nullptr, &Args::db},
                                               {"dc", nullptr, &Args::dc}};
  // The gradients may be dout exactly, unless a gradient asked for is reduced (its operand
  // broadcasts): the reduction reads dout after the elementwise pass wrote the others. Never an
  // operand (read by the reductions too).
  static constexpr InPlace kInPlace[] = {{"da", "dout"}, {"db", "dout"}, {"dc", "dout"}};
  static bool may_alias(const Descriptor& d, const Args& a, int, int) {
    return !((a.da.data && reduces(d, 0)) || (a.db.data && reduces(d, 1)) || (a.dc.data && reduces(d, 2)));
  }

  // An empty output may still have a gradient to write: zeros for an operand broadcast along a dim
  // of size 0.
  static bool nothing_to_do(const Descriptor& d) {
    if (output_shape(d).numel() != 0) return false;
    for (int i = 0; i < 3; ++i)
      if (!is_scalar(d, i) && shape_of(d, i).numel() != 0) return false;
    return true;
  }
  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    specs[0].dtype = d.dtype;
    specs[0].shape = output_shape(d);
    for (int i = 0; i < 3; ++i) {
      ArgSpec &operand = specs[1 + i], &grad = specs[4 + i];
      operand.dtype = dtype_of(d, i);
      grad.dtype = d.dtype;
      operand.shape = grad.shape = shape_of(d, i);
      operand.present = grad.present = !is_scalar(d, i);
      grad.optional = true;
    }
    // where's condition has no gradient.
    if (d.kind == TernaryKind::where) specs[4].present = false;
  }
  // A broadcast operand's gradient is a reduction: the broadcast_reduce variant, split at select.
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference& pref,
                                     std::optional<int> forced) {
    const bool broadcast = any_reduces(d);
    if (forced && broadcast != (*forced == kBroadcastReduce))
      return plan_error(StatusCode::unsupported, kSchema.plan, "preference.variant",
                        "'" + pref.variant + "' cannot run this problem (" +
                            (broadcast ? "a broadcast operand's gradient needs broadcast_reduce"
                                       : "no operand is broadcast: broadcast_reduce has nothing to reduce") +
                            ")");
    PlanChoice c{forced.value_or(-1), 0, 0};
    if (!broadcast) return c;
    c.variant = kBroadcastReduce;
    const Shape out = output_shape(d);
    int64_t knob = 0;
    for (int i = 0; i < 3; ++i) {
      if (!reduces(d, i)) continue;
      bool b[kMaxRank];
      broadcast_dims(out, shape_of(d, i), b);
      int64_t m = 1, r = 1;
      for (int k = 0; k < out.rank; ++k) (b[k] ? r : m) *= out.dims[k];
      const int64_t splits = reduction_splits(t, m, r, d.dtype, pref.workspace_limit, c.workspace);
      // Each at most m + a few 2^20 (common/...: reduction_splits), below 2^21 where m is small; a
      // large m gives 1 split. 21 bits each.
      knob |= std::min<int64_t>(splits, (int64_t{1} << 21) - 1) << (21 * i);
    }
    c.knob = knob;
    return c;
  }
  // The elementwise passes' views: the tensor operands, dout, and the gradients written elementwise
  // (of operands with the output's shape; a gradient not written elementwise stands in as dout).
  template <class F>
  static auto elementwise_views(const Descriptor& d, const Args& args, F&& f) {
    const std::array<AnyTensorRef, 3> e = expand_operands(d, args.a, args.b, args.c);
    const AnyTensorMut* grads[3] = {&args.da, &args.db, &args.dc};
    AnyTensorRef g[3];
    for (int i = 0; i < 3; ++i)
      g[i] = grads[i]->data && !reduces(d, i) && !is_scalar(d, i) ? AnyTensorRef(*grads[i]) : args.dout;
    const bool s[3] = {is_scalar(d, 0), is_scalar(d, 1), is_scalar(d, 2)};
    if (s[0] && s[1]) return f({e[2], args.dout, g[2]}, 2);
    if (s[0] && s[2]) return f({e[1], args.dout, g[1]}, 2);
    if (s[1] && s[2]) return f({e[0], args.dout, g[0]}, 2);
    if (s[0]) return f({e[1], e[2], args.dout, g[1], g[2]}, 3);
    if (s[1]) return f({e[0], e[2], args.dout, g[0], g[2]}, 3);
    if (s[2]) return f({e[0], e[1], args.dout, g[0], g[1]}, 3);
    return f({e[0], e[1], e[2], args.dout, g[0], g[1], g[2]}, 4);
  }
  static TernaryBackwardProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& args) {
    TernaryBackwardProblem p;
    p.desc = d;
    p.shape = output_shape(d);
    p.path = path(ctx.target, d, ctx.choice, &args);
    p.dout = args.dout;
    p.operand = expand_operands(d, args.a, args.b, args.c);
    const AnyTensorMut* grads[3] = {&args.da, &args.db, &args.dc};
    for (int i = 0; i < 3; ++i)
      if (grads[i]->data && !is_scalar(d, i) && !(i == 0 && d.kind == TernaryKind::where))
        p.grad[i] = expand(p.shape, d, i, *grads[i]);
    if (ctx.choice.variant == kBroadcastReduce)
      for (int i = 0; i < 3; ++i) p.splits[i] = reduces(d, i) ? (ctx.choice.knob >> (21 * i)) & ((1 << 21) - 1) : 0;
    p.workspace = ctx.workspace.data;
    return p;
  }
};

}  // namespace

template <>
struct OpHooks<TernaryOp> : TernaryForwardHooks {};
template <>
struct OpHooks<TernaryBackwardOp> : TernaryBackwardHooks {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<TernaryOp>;
template class Plan<TernaryBackwardOp>;
}  // namespace baracuda

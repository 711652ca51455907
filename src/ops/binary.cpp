// The binary plans (every BinaryKind, forward and backward): validation, broadcasting and kernel
// choice, shared by both backends, as hooks of the one plan life cycle (ops/plan_impl.hpp). A kind is
// a Math struct (common/binary_math.hpp), its name below and its place in a group of BinaryGroups.
#include "baracuda/ops/binary.hpp"

#include "ops/binary_problem.hpp"
// (after the problem header, whose launch overloads it calls)
#include "ops/broadcast_hooks.hpp"
#include "ops/plan_impl.hpp"

namespace baracuda {

std::string_view binary_kind_name(BinaryKind kind) {
  static constexpr std::string_view kNames[] = {
      "add",       "sub",   "mul",         "div",        "div_floor",   "div_trunc",   "remainder",   "fmod",
      "pow",       "atan2", "hypot",       "maximum",    "minimum",     "fmax",        "fmin",        "copysign",
      "logaddexp", "xlogy", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",  "shift_right", "eq",
      "ne",        "lt",    "le",          "gt",         "ge",          "logical_and", "logical_or",  "logical_xor"};
  static_assert(std::size(kNames) == kBinaryKindCount);
  const auto k = static_cast<size_t>(kind);
  return k < std::size(kNames) ? kNames[k] : "?";
}

bool binary_kind_takes(BinaryKind kind, DType dtype) { return detail::kind_takes<detail::BinaryGroups>(kind, dtype); }

DType binary_output_dtype(const BinaryDescriptor& desc) {
  if (binary_kind_is_predicate(desc.kind)) return DType::boolean;
  if (desc.kind == BinaryKind::div && !is_floating(desc.dtype)) return DType::f32;
  if (desc.b_dtype && *desc.b_dtype != desc.dtype) return DType::f32;
  return desc.dtype;
}

std::optional<Shape> binary_output_shape(const BinaryDescriptor& desc) {
  const Shape a = desc.a_scalar ? Shape{} : desc.a_shape, b = desc.b_scalar ? Shape{} : desc.b_shape;
  if (a.rank < 0 || a.rank > kMaxRank || b.rank < 0 || b.rank > kMaxRank) return std::nullopt;
  for (const Shape* s : {&a, &b})
    for (int d = 0; d < s->rank; ++d)
      if (s->dims[d] < 0) return std::nullopt;
  Shape out;
  out.rank = std::max(a.rank, b.rank);
  for (int d = 0; d < out.rank; ++d) {
    const int da = d - (out.rank - a.rank), db = d - (out.rank - b.rank);
    const int64_t x = da >= 0 ? a.dims[da] : 1, y = db >= 0 ? b.dims[db] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out.dims[d] = x == 1 ? y : x;
  }
  return out;
}

}  // namespace baracuda

namespace baracuda::detail {
namespace {

constexpr int kBroadcastReduce = static_cast<int>(ElementwisePath::broadcast_reduce);

Shape output_shape(const BinaryDescriptor& d) { return binary_output_shape(d).value_or(Shape{}); }

// An operand's view expanded to the output's shape: zero strides where it is broadcast. A scalar
// operand (no tensor) stays empty.
template <class View>
View expand(const Shape& out, bool scalar, const Shape& shape, const View& view) {
  if (scalar) return View{};
  View e = view;
  e.shape = out;
  e.strides = {};
  const int offset = out.rank - shape.rank;
  for (int d = 0; d < shape.rank; ++d) e.strides[d + offset] = shape.dims[d] == 1 ? 0 : view.strides[d];
  return e;
}

struct Expanded {
  Shape shape;
  AnyTensorRef a, b;
};
Expanded expand_operands(const BinaryDescriptor& d, const AnyTensorRef& a, const AnyTensorRef& b) {
  const Shape out = output_shape(d);
  return {out, expand(out, d.a_scalar.has_value(), d.a_shape, a), expand(out, d.b_scalar.has_value(), d.b_shape, b)};
}

// Is a tensor operand broadcast along some dim of the output (its gradient then a reduction)?
bool reduces(const BinaryDescriptor& d, bool of_b) {
  if (of_b ? d.b_scalar.has_value() : d.a_scalar.has_value()) return false;
  bool broadcast[kMaxRank];
  return broadcast_dims(output_shape(d), of_b ? d.b_shape : d.a_shape, broadcast);
}

Status check_descriptor(std::string_view plan, const BinaryDescriptor& d) {
  if (static_cast<int>(d.kind) >= kBinaryKindCount)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.kind",
                      std::to_string(static_cast<int>(d.kind)) + " is not a BinaryKind");
  if (d.a_scalar && d.b_scalar)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.b_scalar",
                      "is set as a_scalar is: at least one operand must be a tensor");
  if (Status s = check_kind_dtype(plan, binary_kind_name(d.kind), d.dtype,
                                  [&](DType t) { return binary_kind_takes(d.kind, t); });
      !s)
    return s;
  if (d.b_dtype && *d.b_dtype != d.dtype) {
    if (d.a_scalar || d.b_scalar)
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.b_dtype",
                        "is set with a scalar operand: mixed dtypes need two tensors");
    const bool narrow_a = d.dtype == DType::f16 || d.dtype == DType::bf16;
    const bool narrow_b = *d.b_dtype == DType::f16 || *d.b_dtype == DType::bf16;
    if (!((narrow_a && *d.b_dtype == DType::f32) || (narrow_b && d.dtype == DType::f32)))
      return plan_error(StatusCode::unsupported, plan, "descriptor.b_dtype",
                        std::string(dtype_name(*d.b_dtype)) + " with dtype " + std::string(dtype_name(d.dtype)) +
                            ": mixed dtypes are f16 or bf16 with f32 (cast an operand first)");
    if (!binary_kind_takes(d.kind, DType::f32))
      return plan_error(StatusCode::unsupported, plan, "descriptor.b_dtype",
                        std::string(binary_kind_name(d.kind)) + " takes no float dtype");
  }
  // An integer dtype's numbers: whole and within its range (true division computes in f32).
  if (d.kind != BinaryKind::div) {
    if (d.a_scalar)
      if (Status s = check_scalar_fits(plan, "descriptor.a_scalar", *d.a_scalar, d.dtype); !s) return s;
    if (d.b_scalar)
      if (Status s = check_scalar_fits(plan, "descriptor.b_scalar", *d.b_scalar, d.dtype); !s) return s;
    if (d.kind == BinaryKind::add || d.kind == BinaryKind::sub)
      if (Status s = check_scalar_fits(plan, "descriptor.alpha", d.alpha, d.dtype); !s) return s;
  }
  if (!d.a_scalar)
    if (Status s = check_shape(plan, "descriptor.a_shape", d.a_shape); !s) return s;
  if (!d.b_scalar)
    if (Status s = check_shape(plan, "descriptor.b_shape", d.b_shape); !s) return s;
  if (!binary_output_shape(d)) {
    const int offset = d.b_shape.rank - d.a_shape.rank;
    for (int i = 0; i < d.b_shape.rank; ++i) {
      const int j = i - offset;  // a's dim right-aligned with b's dim i
      if (j < 0 || j >= d.a_shape.rank) continue;
      const int64_t x = d.a_shape.dims[j], y = d.b_shape.dims[i];
      if (x != y && x != 1 && y != 1)
        return plan_error(StatusCode::invalid_problem, plan, "descriptor.b_shape[" + std::to_string(i) + "]",
                          "size " + std::to_string(y) + " does not broadcast against a_shape[" + std::to_string(j) +
                              "] of size " + std::to_string(x));
    }
  }
  return Status::ok();
}

// The family's side of the shared hooks (ops/broadcast_hooks.hpp).
struct BinaryFamily {
  using Descriptor = BinaryDescriptor;
  static Status check(std::string_view plan, const Descriptor& d) { return check_descriptor(plan, d); }
  static Shape output_shape(const Descriptor& d) { return detail::output_shape(d); }
  static bool any_reduces(const Descriptor& d) { return reduces(d, false) || reduces(d, true); }
  static std::string_view kind_name(const Descriptor& d) { return binary_kind_name(d.kind); }
  static DType compute_dtype(const Descriptor& d) {
    const bool promoted = d.kind == BinaryKind::div || (d.b_dtype && *d.b_dtype != d.dtype);
    return elementwise_compute_dtype(promoted ? binary_output_dtype(d) : d.dtype);
  }
};
template <class Hooks>
using BinaryHooksBase = BroadcastHooksBase<Hooks, BinaryFamily>;

struct BinaryForwardHooks : BinaryHooksBase<BinaryForwardHooks> {
  using Args = BinaryArgs;
  static constexpr OpSchema kSchema{"BinaryPlan", "binary", "elementwise", kEveryDType, {}, kElementwiseVariants, true};
  static constexpr ArgField<Args> kFields[] = {{"a", &Args::a}, {"b", &Args::b}, {"out", nullptr, &Args::out}};
  // out may be a or b exactly (in place; only an operand of the output's shape can be).
  static constexpr bool may_alias(const Descriptor&, int, int) { return true; }

  static bool nothing_to_do(const Descriptor& d) { return output_shape(d).numel() == 0; }
  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    for (ArgSpec& s : specs) s.dtype = d.dtype;
    specs[0].shape = d.a_shape;
    specs[0].present = !d.a_scalar;
    specs[1].dtype = d.b_dtype.value_or(d.dtype);
    specs[1].shape = d.b_shape;
    specs[1].present = !d.b_scalar;
    specs[2].shape = output_shape(d);
    specs[2].dtype = binary_output_dtype(d);
  }
  static Expected<PlanChoice> choose(const PlanTarget&, const Descriptor&, const PlanPreference&,
                                     std::optional<int> forced) {
    return PlanChoice{forced.value_or(-1), 0, 0};
  }
  template <class F>
  static auto elementwise_views(const Descriptor& d, const Args& args, F&& f) {
    const Expanded e = expand_operands(d, args.a, args.b);
    if (d.a_scalar) return f({e.b, args.out}, 1);
    if (d.b_scalar) return f({e.a, args.out}, 1);
    return f({e.a, e.b, args.out}, 2);
  }
  static BinaryForwardProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& args) {
    const Expanded e = expand_operands(d, args.a, args.b);
    return {d, e.shape, path(ctx.target, d, ctx.choice, &args), e.a, e.b, args.out};
  }
};

struct BinaryBackwardHooks : BinaryHooksBase<BinaryBackwardHooks> {
  using Args = BinaryBackwardArgs;
  static constexpr OpSchema kSchema{
      "BinaryBackwardPlan", "binary_backward", "elementwise", kFloats, {}, kElementwiseBackwardVariants, true};
  static constexpr ArgField<Args> kFields[] = {
      {"dout", &Args::dout}, {"a", &Args::a}, {"b", &Args::b}, {"da", nullptr, &Args::da}, {"db", nullptr, &Args::db}};
  // da and db may be dout exactly; never a or b (a reduction reads them after another pass wrote).
  static constexpr bool may_alias(const Descriptor&, int, int input) { return input == 0; }

  static Status check(const Descriptor& d) {
    if (Status s = check_descriptor(kSchema.plan, d); !s) return s;
    if (binary_kind_is_predicate(d.kind))
      return plan_error(StatusCode::unsupported, kSchema.plan, "descriptor.kind",
                        std::string(binary_kind_name(d.kind)) + " gives bool: it has no gradient");
    if (d.b_dtype && *d.b_dtype != d.dtype)
      return plan_error(StatusCode::unsupported, kSchema.plan, "descriptor.b_dtype",
                        "mixed dtypes have no backward here yet (cast the narrower operand, or its gradient)");
    return Status::ok();
  }
  // An empty output may still have a gradient to write: zeros for an operand broadcast along a
  // dim of size 0.
  static bool nothing_to_do(const Descriptor& d) {
    return output_shape(d).numel() == 0 && (d.a_scalar || d.a_shape.numel() == 0) &&
           (d.b_scalar || d.b_shape.numel() == 0);
  }
  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    for (ArgSpec& s : specs) s.dtype = d.dtype;
    specs[0].shape = output_shape(d);
    specs[1].shape = specs[3].shape = d.a_shape;
    specs[2].shape = specs[4].shape = d.b_shape;
    specs[1].present = specs[3].present = !d.a_scalar;
    specs[2].present = specs[4].present = !d.b_scalar;
    specs[3].optional = specs[4].optional = true;
  }
  // A broadcast operand's gradient is a reduction: the broadcast_reduce variant, split at select.
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference& pref,
                                     std::optional<int> forced) {
    const bool broadcast = reduces(d, false) || reduces(d, true);
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
    int64_t splits[2] = {0, 0};
    for (const bool of_b : {false, true}) {
      if (!reduces(d, of_b)) continue;
      bool b[kMaxRank];
      broadcast_dims(out, of_b ? d.b_shape : d.a_shape, b);
      int64_t m = 1, r = 1;
      for (int i = 0; i < out.rank; ++i) (b[i] ? r : m) *= out.dims[i];
      splits[of_b] = reduction_splits(t, m, r, d.dtype, pref.workspace_limit, c.workspace);
    }
    c.knob = splits[0] | (splits[1] << 32);  // each at most m + a few 2^20: far below 2^31
    return c;
  }
  // The elementwise passes' views: dout, a, b, and the gradients written elementwise (of operands
  // with the output's shape).
  template <class F>
  static auto elementwise_views(const Descriptor& d, const Args& args, F&& f) {
    const Expanded e = expand_operands(d, args.a, args.b);
    // (A gradient not written elementwise stands in as dout, which is in the list anyway.)
    const AnyTensorRef da = args.da.data && !reduces(d, false) ? AnyTensorRef(args.da) : args.dout;
    const AnyTensorRef db = args.db.data && !reduces(d, true) ? AnyTensorRef(args.db) : args.dout;
    if (d.a_scalar) return f({args.dout, e.b, db}, 2);
    if (d.b_scalar) return f({args.dout, e.a, da}, 2);
    return f({args.dout, e.a, e.b, da, db}, 3);
  }
  static BinaryBackwardProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& args) {
    const Expanded e = expand_operands(d, args.a, args.b);
    BinaryBackwardProblem p;
    p.desc = d;
    p.shape = e.shape;
    p.path = path(ctx.target, d, ctx.choice, &args);
    p.dout = args.dout;
    p.a = e.a;
    p.b = e.b;
    if (args.da.data) p.da = expand(e.shape, d.a_scalar.has_value(), d.a_shape, args.da);
    if (args.db.data) p.db = expand(e.shape, d.b_scalar.has_value(), d.b_shape, args.db);
    if (ctx.choice.variant == kBroadcastReduce) {
      p.splits_a = ctx.choice.knob & 0xffffffff;
      p.splits_b = ctx.choice.knob >> 32;
    }
    p.workspace = ctx.workspace.data;
    return p;
  }
};

}  // namespace

template <>
struct OpHooks<BinaryOp> : BinaryForwardHooks {};
template <>
struct OpHooks<BinaryBackwardOp> : BinaryBackwardHooks {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<BinaryOp>;
template class Plan<BinaryBackwardOp>;
}  // namespace baracuda

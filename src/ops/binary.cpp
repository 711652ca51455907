// The binary plans (every BinaryKind, forward and backward): validation, broadcasting and kernel
// choice, shared by both backends, as hooks of the one plan life cycle (ops/plan_impl.hpp). A kind is
// a Math struct (common/binary_math.hpp), its name below and its place in a group of BinaryGroups.
#include "baracuda/ops/binary.hpp"

#include "common/checked.hpp"
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

DType binary_operand_dtype(const BinaryDescriptor& desc) {
  if (desc.b_dtype && *desc.b_dtype != desc.dtype) return promote_types(desc.dtype, *desc.b_dtype).value_or(desc.dtype);
  if (desc.scalar_dtype && (desc.a_scalar || desc.b_scalar)) return promote_with_scalar(desc.dtype, *desc.scalar_dtype);
  return desc.dtype;
}

DType binary_output_dtype(const BinaryDescriptor& desc) {
  if (binary_kind_is_predicate(desc.kind)) return DType::boolean;
  const DType operands = binary_operand_dtype(desc);
  return desc.kind == BinaryKind::div && !is_floating(operands) ? DType::f32 : operands;
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

// Mixed dtypes (b_dtype, or a scalar_dtype of a higher category): a and b compute in their promoted
// dtype (binary_operand_dtype). The forward of f16 or bf16 with f32 loads the 16-bit operand in its
// kernels; every other pair, and every backward, first casts each tensor operand of another dtype
// into the workspace (and the backward casts its gradient back), then runs as one dtype.
DType tensor_dtype(const BinaryDescriptor& d, bool of_b) { return of_b ? d.b_dtype.value_or(d.dtype) : d.dtype; }
bool mixed(const BinaryDescriptor& d) { return binary_operand_dtype(d) != d.dtype || tensor_dtype(d, true) != d.dtype; }
bool loads_mixed(const BinaryDescriptor& d) {
  auto half = [](DType t) { return t == DType::f16 || t == DType::bf16; };
  return d.b_dtype && ((half(d.dtype) && *d.b_dtype == DType::f32) || (half(*d.b_dtype) && d.dtype == DType::f32));
}
bool casts_operand(const BinaryDescriptor& d, bool of_b, bool backward) {
  if ((of_b ? d.b_scalar : d.a_scalar) || (!backward && loads_mixed(d))) return false;
  return tensor_dtype(d, of_b) != binary_operand_dtype(d);
}

// Where the casts' buffers lie, from the workspace's start: a's and b's values in the promoted dtype,
// then (backward) their gradients; -1 where there is none. `end`: the bytes they take.
struct PromotionBuffers {
  int64_t at[4] = {-1, -1, -1, -1};  // a, b, da, db
  CheckedSize end;
};
PromotionBuffers promotion_buffers(const BinaryDescriptor& d, bool backward) {
  PromotionBuffers b;
  const int64_t element = static_cast<int64_t>(dtype_size(binary_operand_dtype(d)));
  for (int k = 0; k < (backward ? 4 : 2); ++k) {
    const bool of_b = k % 2 == 1;
    if (!casts_operand(d, of_b, backward)) continue;
    if (k < 2 && backward && !binary_gradient_reads_operands(d.kind)) continue;  // (see promote_operands)
    b.at[k] = b.end.saturated();
    b.end = round_up_to(b.end + CheckedSize((of_b ? d.b_shape : d.a_shape).numel()) * element, 256);
  }
  return b;
}
Status check_promotion_workspace(std::string_view plan, const BinaryDescriptor& d, const CheckedSize& bytes) {
  if (bytes.below(kMaxBytes)) return Status::ok();
  return plan_error(StatusCode::invalid_problem, plan, d.b_dtype ? "descriptor.b_dtype" : "descriptor.scalar_dtype",
                    "the casts of the type promotion would need 2^63 bytes of workspace");
}

// Rewrites a problem whose operands are cast (casts_operand) into one of the promoted dtype: each
// such operand's cast into its buffer runs first, and the operand becomes the buffer.
void promote_operands(const LaunchContext& ctx, BinaryDescriptor& d, AnyTensorRef& a, AnyTensorRef& b, bool backward,
                      PromotionCasts& casts) {
  const PromotionBuffers buffers = promotion_buffers(d, backward);
  const DType to = binary_operand_dtype(d);
  for (const bool of_b : {false, true}) {
    // (a backward that reads no operand, add's or sub's, casts none: they may have no data)
    if (!casts_operand(d, of_b, backward) || (backward && !binary_gradient_reads_operands(d.kind))) continue;
    AnyTensorRef& x = of_b ? b : a;
    const Shape& shape = of_b ? d.b_shape : d.a_shape;
    const AnyTensorMut buffer =
        AnyTensorMut::contiguous(static_cast<char*>(ctx.workspace.data) + buffers.at[of_b], to, shape);
    casts.before[casts.before_count++] = {
        {x.dtype, to, shape}, cast_path(ctx.target.backend, shape, x, buffer), x, buffer};
    x = buffer;
  }
  d.dtype = to;
  d.b_dtype.reset();
  d.scalar_dtype.reset();
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
  if (d.scalar_dtype) {
    if (!valid_dtype(*d.scalar_dtype))
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.scalar_dtype",
                        std::to_string(static_cast<int>(*d.scalar_dtype)) + " is not a DType");
    if (!d.a_scalar && !d.b_scalar)
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.scalar_dtype",
                        "is set without a scalar operand (a_scalar or b_scalar)");
    // An integer or bool scalar is one: whole and within its dtype's range (bool's 0 or 1).
    if (!is_floating(*d.scalar_dtype))
      if (Status s = check_scalar_fits(plan, d.a_scalar ? "descriptor.a_scalar" : "descriptor.b_scalar",
                                       d.a_scalar ? *d.a_scalar : *d.b_scalar, *d.scalar_dtype);
          !s)
        return s;
  }
  const bool b_differs = d.b_dtype && *d.b_dtype != d.dtype;  // (b_dtype equal to dtype: as unset)
  if (!b_differs && binary_operand_dtype(d) == d.dtype) {
    if (Status s = check_kind_dtype(plan, binary_kind_name(d.kind), d.dtype,
                                    [&](DType t) { return binary_kind_takes(d.kind, t); });
        !s)
      return s;
  } else if (!b_differs) {  // (a scalar of a higher category: the kind must take the promoted dtype)
    if (!valid_dtype(d.dtype))
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.dtype",
                        std::to_string(static_cast<int>(d.dtype)) + " is not a DType");
    const DType to = binary_operand_dtype(d);
    if (!binary_kind_takes(d.kind, to))
      return plan_error(StatusCode::unsupported, plan, "descriptor.scalar_dtype",
                        std::string(dtype_name(d.dtype)) + " with a " + std::string(dtype_name(*d.scalar_dtype)) +
                            " scalar promote to " + std::string(dtype_name(to)) + ", which " +
                            std::string(binary_kind_name(d.kind)) + " does not take");
  } else {  // (mixed dtypes: the kind must take the promoted one)
    if (d.a_scalar || d.b_scalar)
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.b_dtype",
                        "is set with a scalar operand: mixed dtypes need two tensors");
    if (!valid_dtype(*d.b_dtype))
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.b_dtype",
                        std::to_string(static_cast<int>(*d.b_dtype)) + " is not a DType");
    const std::string pair =
        std::string(dtype_name(d.dtype)) + " with " + std::string(dtype_name(*d.b_dtype)) + " promote to ";
    const std::optional<DType> to = promote_types(d.dtype, *d.b_dtype);
    if (!to)
      return plan_error(StatusCode::unsupported, plan, "descriptor.b_dtype",
                        pair + "i16, which is no dtype here (cast one operand first)");
    if (!binary_kind_takes(d.kind, *to))
      return plan_error(
          StatusCode::unsupported, plan, "descriptor.b_dtype",
          pair + std::string(dtype_name(*to)) + ", which " + std::string(binary_kind_name(d.kind)) + " does not take");
  }
  // An integer dtype's numbers: whole and within its range (true division computes in f32).
  if (d.kind != BinaryKind::div) {
    if (d.a_scalar)
      if (Status s = check_scalar_fits(plan, "descriptor.a_scalar", *d.a_scalar, binary_operand_dtype(d)); !s) return s;
    if (d.b_scalar)
      if (Status s = check_scalar_fits(plan, "descriptor.b_scalar", *d.b_scalar, binary_operand_dtype(d)); !s) return s;
    if (d.kind == BinaryKind::add || d.kind == BinaryKind::sub)
      if (Status s = check_scalar_fits(plan, "descriptor.alpha", d.alpha, binary_operand_dtype(d)); !s) return s;
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
  // Each operand within the limit, their broadcast may still not be ([247, 1] with [1, 2^61]).
  return check_shape(plan, d.b_scalar ? "descriptor.a_shape" : "descriptor.b_shape", output_shape(d));
}

// The family's side of the shared hooks (ops/broadcast_hooks.hpp).
struct BinaryFamily {
  using Descriptor = BinaryDescriptor;
  static Status check(std::string_view plan, const Descriptor& d) { return check_descriptor(plan, d); }
  static Shape output_shape(const Descriptor& d) { return detail::output_shape(d); }
  static bool any_reduces(const Descriptor& d) { return reduces(d, false) || reduces(d, true); }
  static std::string_view kind_name(const Descriptor& d) { return binary_kind_name(d.kind); }
  static DType compute_dtype(const Descriptor& d) {
    const DType operands = binary_operand_dtype(d);  // (integer true division computes in f32)
    return elementwise_compute_dtype(d.kind == BinaryKind::div && !is_floating(operands) ? DType::f32 : operands);
  }
};
template <class Hooks>
using BinaryHooksBase = BroadcastHooksBase<Hooks, BinaryFamily>;

struct BinaryForwardHooks : BinaryHooksBase<BinaryForwardHooks> {
  using Args = BinaryArgs;
  static constexpr OpSchema kSchema{"BinaryPlan", "binary", "elementwise", kEveryDType, {}, kBinaryVariants, true};
  static constexpr ArgField<Args> kFields[] = {{"a", &Args::a}, {"b", &Args::b}, {"out", nullptr, &Args::out}};
  // out may be a or b exactly (in place; only an operand of the output's shape can be).
  static constexpr InPlace kInPlace[] = {{"out", "a"}, {"out", "b"}};
  static constexpr bool may_alias(const Descriptor&, const Args&, int, int) { return true; }
  // The transposed path serves the arithmetic kinds (add, sub, mul, div, ...: the one group whose
  // translation unit compiles it, to keep the build's cost where a transposed operand is common).
  static bool transposes(const Descriptor& d) {
    return GroupHas<std::tuple_element_t<kBinaryArith, BinaryGroups>>::of(d.kind);
  }

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
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int> forced) {
    if (forced && variant_path(kSchema.variants, *forced) == ElementwisePath::transposed && !transposes(d))
      return plan_error(StatusCode::unsupported, kSchema.plan, "preference.variant",
                        "'transposed' serves the arithmetic kinds (add, sub, mul, div, div_floor, div_trunc, "
                        "remainder, fmod, copysign), not " +
                            std::string(binary_kind_name(d.kind)));
    const CheckedSize workspace = promotion_buffers(d, false).end;
    if (Status s = check_promotion_workspace(kSchema.plan, d, workspace); !s) return s;
#if BARACUDA_HAS_CUDA
    if (t.backend == Backend::cuda) {
      Descriptor run = d;  // (as problem() rewrites it where the operands are cast first)
      if (mixed(d) && !loads_mixed(d)) {
        for (const bool of_b : {false, true})
          if (casts_operand(d, of_b, false))
            if (Status s = cuda::prepare_cast(t, {tensor_dtype(d, of_b), binary_operand_dtype(d), {}}); !s) return s;
        run.dtype = binary_operand_dtype(d), run.b_dtype.reset(), run.scalar_dtype.reset();
      }
      if (Status s = cuda::prepare_binary(t, run); !s) return s;
    }
#else
    (void)t;
#endif
    return PlanChoice{forced.value_or(-1), static_cast<size_t>(workspace.value()), 0};
  }
  template <class F>
  static auto elementwise_views(const Descriptor& d, const Args& args, F&& f) {
    const Expanded e = expand_operands(d, args.a, args.b);
    if (d.a_scalar) return f({e.b, args.out}, 1);
    if (d.b_scalar) return f({e.a, args.out}, 1);
    return f({e.a, e.b, args.out}, 2);
  }
  static BinaryForwardProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& args) {
    Descriptor run = d;
    Args views = args;
    PromotionCasts casts;
    if (mixed(d) && !loads_mixed(d)) promote_operands(ctx, run, views.a, views.b, false, casts);
    const Expanded e = expand_operands(run, views.a, views.b);
    return {run, e.shape, fitting_path(ctx, run, views), e.a, e.b, args.out, casts};
  }
};

struct BinaryBackwardHooks : BinaryHooksBase<BinaryBackwardHooks> {
  using Args = BinaryBackwardArgs;
  static constexpr OpSchema kSchema{
      "BinaryBackwardPlan", "binary_backward", "elementwise", kFloats, {}, kElementwiseBackwardVariants, true};
  static constexpr ArgField<Args> kFields[] = {
      {"dout", &Args::dout}, {"a", &Args::a}, {"b", &Args::b}, {"da", nullptr, &Args::da}, {"db", nullptr, &Args::db}};
  // da and db may be dout exactly, unless a gradient asked for is reduced (its operand broadcasts):
  // the reduction reads dout after the elementwise pass wrote the other. Never a or b (read by the
  // reductions too).
  static constexpr InPlace kInPlace[] = {{"da", "dout"}, {"db", "dout"}};
  static bool may_alias(const Descriptor& d, const Args& a, int, int) {
    return !((a.da.data && reduces(d, false)) || (a.db.data && reduces(d, true)));
  }

  static Status check(const Descriptor& d) {
    if (Status s = check_descriptor(kSchema.plan, d); !s) return s;
    if (binary_kind_is_predicate(d.kind))
      return plan_error(StatusCode::unsupported, kSchema.plan, "descriptor.kind",
                        std::string(binary_kind_name(d.kind)) + " gives bool: it has no gradient");
    if (d.b_dtype && !is_floating(*d.b_dtype))
      return plan_error(StatusCode::unsupported, kSchema.plan, "descriptor.b_dtype",
                        std::string(dtype_name(*d.b_dtype)) + " has no gradient (the backward takes float dtypes)");
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
    specs[0].dtype = binary_output_dtype(d);
    specs[2].dtype = specs[4].dtype = d.b_dtype.value_or(d.dtype);
    specs[0].shape = output_shape(d);
    specs[1].shape = specs[3].shape = d.a_shape;
    specs[2].shape = specs[4].shape = d.b_shape;
    specs[1].present = specs[3].present = !d.a_scalar;
    specs[2].present = specs[4].present = !d.b_scalar;
    specs[3].optional = specs[4].optional = true;
    // add's and sub's gradients are dout's alone: a and b are neither read nor required
    if (!binary_gradient_reads_operands(d.kind)) specs[1].present = specs[2].present = false;
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
    // The casts' buffers first, then the reductions' partials.
    const CheckedSize promotion = promotion_buffers(d, true).end;
    if (Status s = check_promotion_workspace(kSchema.plan, d, promotion); !s) return s;
    PlanChoice c{forced.value_or(-1), static_cast<size_t>(promotion.value()), 0};
    if (!broadcast) return c;
    c.variant = kBroadcastReduce;
    const Shape out = output_shape(d);
    int64_t splits[2] = {0, 0};
    size_t reduction = 0;
    for (const bool of_b : {false, true}) {
      if (!reduces(d, of_b)) continue;
      bool b[kMaxRank];
      broadcast_dims(out, of_b ? d.b_shape : d.a_shape, b);
      int64_t m = 1, r = 1;
      for (int i = 0; i < out.rank; ++i) (b[i] ? r : m) *= out.dims[i];
      size_t partials = 0;
      splits[of_b] = reduction_splits(t, m, r, binary_operand_dtype(d), pref.workspace_limit, partials);
      reduction = std::max(reduction, partials);
    }
    c.knob = splits[0] | (splits[1] << 32);  // each at most m + a few 2^20: far below 2^31
    c.workspace += reduction;
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
    if (!binary_gradient_reads_operands(d.kind)) {  // dout alone (a and b may have no data)
      if (d.a_scalar) return f({args.dout, db}, 1);
      if (d.b_scalar) return f({args.dout, da}, 1);
      return f({args.dout, da, db}, 1);
    }
    if (d.a_scalar) return f({args.dout, e.b, db}, 2);
    if (d.b_scalar) return f({args.dout, e.a, da}, 2);
    return f({args.dout, e.a, e.b, da, db}, 3);
  }
  static BinaryBackwardProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& args) {
    BinaryBackwardProblem p;
    Descriptor run = d;
    Args views = args;
    const PromotionBuffers buffers = promotion_buffers(d, true);
    char* const workspace = static_cast<char*>(ctx.workspace.data);
    if (mixed(d)) {
      const DType to = binary_operand_dtype(d);
      // A gradient of an operand that was cast: computed into its buffer, then cast back to it.
      for (const bool of_b : {false, true}) {
        AnyTensorMut& gradient = of_b ? views.db : views.da;
        if (!casts_operand(d, of_b, true) || !gradient.data) continue;
        const Shape& shape = of_b ? d.b_shape : d.a_shape;
        const AnyTensorMut buffer = AnyTensorMut::contiguous(workspace + buffers.at[2 + of_b], to, shape);
        p.casts.after[p.casts.after_count++] = {
            {to, gradient.dtype, shape}, cast_path(ctx.target.backend, shape, buffer, gradient), buffer, gradient};
        gradient = buffer;
      }
      promote_operands(ctx, run, views.a, views.b, true, p.casts);
    }
    const Expanded e = expand_operands(run, views.a, views.b);
    p.desc = run;
    p.shape = e.shape;
    p.path = fitting_path(ctx, run, views);
    p.dout = views.dout;
    p.a = e.a;
    p.b = e.b;
    if (views.da.data) p.da = expand(e.shape, d.a_scalar.has_value(), d.a_shape, views.da);
    if (views.db.data) p.db = expand(e.shape, d.b_scalar.has_value(), d.b_shape, views.db);
    if (ctx.choice.variant == kBroadcastReduce) {
      p.splits_a = ctx.choice.knob & 0xffffffff;
      p.splits_b = ctx.choice.knob >> 32;
    }
    p.workspace = workspace ? workspace + buffers.end.saturated() : nullptr;
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

#pragma once
// The plan hooks that the elementwise families with broadcast operands share (binary, ternary): the
// precision, the path of the elementwise passes, the overlap and forced-variant checks, and the
// kernel's name. `Hooks` (one direction of a family) supplies
//   kSchema, kFields                     the schema and the argument table
//   arg_specs(d, specs)                  every view's dtype, shape and presence
//   may_alias(d, args, output, input)    whether these args may use kInPlace's pair (field indices)
//   elementwise_views(d, args, f)        f(views of the elementwise passes, expanded, in launch order;
//                                        how many are inputs)
//   transposes(d) (optional)             whether the transposed path serves d (its schema lists it)
// and `Family` (both directions)
//   check(plan, d), output_shape(d), any_reduces(d) (a broadcast operand: a backward reduces its
//   gradient), kind_name(d), compute_dtype(d) (the precision guarantee's)
#include <initializer_list>
#include <iterator>
#include <string>

#include "ops/elementwise_layout.hpp"
#include "ops/launch.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail {

template <class Hooks, class Family>
struct BroadcastHooksBase {
  using Descriptor = typename Family::Descriptor;
  // The broadcast_reduce variant's index (a backward's), -1 where the schema has none (a forward's).
  static constexpr int kBroadcastReduce =
      variant_index(Hooks::kSchema.variants, path_name(ElementwisePath::broadcast_reduce));
  static ElementwisePath forced_path(int variant) { return variant_path(Hooks::kSchema.variants, variant); }
  static bool transposes(const PlanTarget& t, const Descriptor& d) {
    if constexpr (requires { Hooks::transposes(d); }) {
      const int v = variant_index(Hooks::kSchema.variants, path_name(ElementwisePath::transposed));
      return v >= 0 && Hooks::kSchema.variants[v].on(t.backend) && Hooks::transposes(d);
    } else {
      return false;
    }
  }

  static Status check(const Descriptor& d) { return Family::check(Hooks::kSchema.plan, d); }
  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = Family::compute_dtype(d);
    return g;
  }
  // The elementwise passes' path: the forced one, else the one the views allow (or, with no views,
  // the one contiguous aligned views get).
  template <class Args>
  static ElementwisePath path(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    if (c.variant >= 0 && c.variant != kBroadcastReduce) return forced_path(c.variant);
    if (!a) {
      const bool broadcast = Family::any_reduces(d);
      if (t.backend == Backend::cuda)
        return broadcast ? ElementwisePath::strided_vectorized : ElementwisePath::vectorized;
      return broadcast ? ElementwisePath::strided : ElementwisePath::contiguous;
    }
    return Hooks::elementwise_views(d, *a, [&](std::initializer_list<AnyTensorRef> v, int inputs) {
      return layout_path(t.backend, Family::output_shape(d), v, inputs, transposes(t, d));
    });
  }
  // The path a problem runs its views in (a binary promotion's casts rewrite them after select): the
  // forced one where they fit it, else their own.
  template <class Args>
  static ElementwisePath fitting_path(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    PlanChoice c = ctx.choice;
    if (c.variant >= 0 && c.variant != kBroadcastReduce) {
      const Status fits = Hooks::elementwise_views(d, a, [&](std::initializer_list<AnyTensorRef> v, int inputs) {
        return check_forced_path(Hooks::kSchema.plan, forced_path(c.variant), Family::output_shape(d), v, inputs);
      });
      if (!fits) c.variant = -1;
    }
    return path(ctx.target, d, c, &a);
  }
  // An output may be an input exactly only where Hooks allows it for these args (every other
  // overlap, and every pair kInPlace does not list, is refused by every plan's rule: plan_impl.hpp);
  // a forced elementwise variant must fit the views. A view the descriptor does not use (a scalar
  // operand's) was never checked: it is no memory.
  template <class Args>
  static Status check_args(const PlanTarget&, const Descriptor& d, const PlanChoice& c, const Args& a) {
    const std::string_view plan = Hooks::kSchema.plan;
    constexpr int kCount = static_cast<int>(std::size(Hooks::kFields));
    ArgSpec specs[kCount];
    Hooks::arg_specs(d, specs);
    const Status s = check_no_alias<Args>(plan, Hooks::kFields, a, [&](size_t o, size_t i) {
      return specs[o].present && specs[i].present && !Hooks::may_alias(d, a, static_cast<int>(o), static_cast<int>(i));
    });
    if (!s) return s;
    if (c.variant < 0 || c.variant == kBroadcastReduce) return Status::ok();
    return Hooks::elementwise_views(d, a, [&](std::initializer_list<AnyTensorRef> v, int inputs) {
      return check_forced_path(plan, forced_path(c.variant), Family::output_shape(d), v, inputs);
    });
  }
  // The path and the kind: "vectorized.add", "broadcast_reduce.where".
  template <class Args>
  static KernelShape kernel(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    const ElementwisePath p =
        c.variant >= 0 && c.variant == kBroadcastReduce ? ElementwisePath::broadcast_reduce : path(t, d, c, a);
    return {std::string(path_name(p)) + "." + std::string(Family::kind_name(d)), layout_of_path(p)};
  }
};

}  // namespace baracuda::detail

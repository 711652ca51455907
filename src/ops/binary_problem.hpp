#pragma once
// What the binary plans hand to a backend: the validated views expanded to the output's shape (zero
// strides where an operand is broadcast), the path the plan chose and the backward's reduction
// splits. The dispatch from (kind, dtype) to functors is written here once. The CPU compiles one
// translation unit per group of kinds (common/binary_math.hpp's BinaryGroups): each defines
// launch_group<G> with its launchers, and its launch routes a problem to its kind's group; CUDA
// compiles the functors' kernels at select or first use (cuda/binary.cpp).
#include <array>
#include <utility>
#include <vector>

#include "baracuda/ops/binary.hpp"
#include "common/binary_math.hpp"
#include "common/dispatch.hpp"
#include "ops/copy_problem.hpp"
#include "ops/elementwise_layout.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

// Type promotion by casting (mixed dtypes but the pairs the kernels load themselves): the casts
// into the workspace that run before the problem (an operand of another dtype than the promoted
// one) and after it (the backward's gradient of such an operand, computed in the promoted dtype,
// back to the operand's).
struct PromotionCasts {
  CastProblem before[2], after[2];
  int before_count = 0, after_count = 0;
};

// The casts before, the problem itself (run()), then the casts after; cast(c) launches one (the plan
// life cycle runs them: ops/plan_impl.hpp). An empty operand has nothing to cast (the launchers
// take no empty problem: CastPlan's run never gives them one).
template <class Cast, class Run>
Status run_with_casts(const PromotionCasts& casts, Cast&& cast, Run&& run) {
  for (int i = 0; i < casts.before_count; ++i)
    if (casts.before[i].desc.shape.numel() != 0)
      if (Status s = cast(casts.before[i]); !s) return s;
  if (Status s = run(); !s) return s;
  for (int i = 0; i < casts.after_count; ++i)
    if (casts.after[i].desc.shape.numel() != 0)
      if (Status s = cast(casts.after[i]); !s) return s;
  return Status::ok();
}

struct BinaryForwardProblem {
  BinaryDescriptor desc;
  Shape shape;  // the output's
  ElementwisePath path = ElementwisePath::strided;
  AnyTensorRef a, b;  // expanded to shape; no data where the operand is a scalar
  AnyTensorMut out;
  PromotionCasts casts;  // (then desc has the promoted dtype and no b_dtype, a and b the casts' outputs)
};

struct BinaryBackwardProblem {
  BinaryDescriptor desc;
  Shape shape;
  ElementwisePath path = ElementwisePath::strided;  // of the elementwise passes
  AnyTensorRef dout, a, b;                          // expanded to shape
  AnyTensorMut da, db;                              // expanded; no data where not computed
  // The splits of the reduction of da and db over the dims their operand is broadcast along; 0 where
  // it is not broadcast (its gradient is written elementwise).
  int64_t splits_a = 0, splits_b = 0;
  void* workspace = nullptr;
  PromotionCasts casts;  // (as the forward's; da and db then the casts' inputs)
};

// For each dim of `out`: is `operand` (right-aligned to it) broadcast there (size 1 against a size
// other than 1, or missing)? Decided from the shapes alone, never from strides.
inline bool broadcast_dims(const Shape& out, const Shape& operand, bool (&broadcast)[kMaxRank]) {
  const int offset = out.rank - operand.rank;
  bool any = false;
  for (int d = 0; d < kMaxRank; ++d) {
    broadcast[d] = d < out.rank && out.dims[d] != 1 && (d < offset || operand.dims[d - offset] == 1);
    any = any || broadcast[d];
  }
  return any;
}

// Calls f(std::integral_constant<int, G>{}) for the group of the kind.
template <class F>
Status with_binary_group(BinaryKind kind, F&& f) {
  return with_group<BinaryGroups>(kind, std::forward<F>(f));
}

// The backward's dispatch: f(std::type_identity<Math>{}, std::type_identity<T>{}) for the kind (a
// Math of group G) and the float element type (the backend's own 16-bit types).
template <int G, class Half, class BFloat16, class F>
Status dispatch_binary_backward(const BinaryDescriptor& desc, F&& f) {
  return dispatch_kind<std::tuple_element_t<G, BinaryGroups>, Half, BFloat16>(desc.kind, desc.dtype,
                                                                              std::forward<F>(f));
}

// The forward's dispatch: f(type_identity<Math>, type_identity<T>, type_identity<First>) with the
// element type T of the inputs and First that of the first input, T's but for the mixed dtypes the
// kernels load themselves (b_dtype f16 or bf16 with f32; other pairs were cast to one dtype first):
// then T is f32 and First the narrower operand's 16-bit type (binary_typed puts that operand first).
template <int G, class Half, class BFloat16, class F>
Status dispatch_binary_forward(const BinaryDescriptor& desc, F&& f) {
  using Group = std::tuple_element_t<G, BinaryGroups>;
  if (!desc.b_dtype || *desc.b_dtype == desc.dtype)
    return dispatch_kind<Group, Half, BFloat16, true>(
        desc.kind, desc.dtype, [&](auto math, auto element) { return f(math, element, element); });
  const DType narrow = desc.dtype == DType::f32 ? *desc.b_dtype : desc.dtype;
  return dispatch_kind<Group, Half, BFloat16>(desc.kind, DType::f32, [&](auto math, auto element) -> Status {
    if constexpr (std::is_same_v<typename decltype(element)::type, float>) {  // (the other floats: not compiled)
      if (narrow == DType::f16) return f(math, element, std::type_identity<Half>{});
      return f(math, element, std::type_identity<BFloat16>{});
    } else {
      return Status::error(StatusCode::invalid_problem, "mixed dtypes compute in f32");
    }
  });
}

// The forward with its Math, element type T and first input's type First (dispatch_binary_forward):
// launch(functor, ElementwiseTensors).
template <class Math, class T, class First, class Launch>
Status binary_typed(const BinaryForwardProblem& p, Launch&& launch) {
  using Acc = math_compute_t<Math, T>;
  const Acc alpha = scalar_as<Acc>(p.desc.alpha);
  if constexpr (!std::is_same_v<First, T>) {  // mixed dtypes: the narrower operand first
    const bool swapped = p.desc.dtype == DType::f32;
    const AnyTensorRef &first = swapped ? p.b : p.a, &second = swapped ? p.a : p.b;
    const ElementwiseTensors<2, 1> t{
        p.path, p.shape, {first.data, second.data}, {first.strides, second.strides}, {p.out.data}, {p.out.strides}};
    return launch(BinaryForward<Math, Acc>{alpha, swapped}, t);
  } else if (p.desc.a_scalar || p.desc.b_scalar) {
    const bool scalar_is_a = p.desc.a_scalar.has_value();
    const AnyTensorRef& x = scalar_is_a ? p.b : p.a;
    const ElementwiseTensors<1, 1> t{p.path, p.shape, {x.data}, {x.strides}, {p.out.data}, {p.out.strides}};
    const Acc scalar = scalar_as<Acc>(scalar_is_a ? *p.desc.a_scalar : *p.desc.b_scalar);
    return launch(BinaryScalarForward<Math, Acc, kUses16BitMath<T>>{alpha, scalar, scalar_is_a}, t);
  } else {
    const ElementwiseTensors<2, 1> t{p.path,       p.shape,        {p.a.data, p.b.data}, {p.a.strides, p.b.strides},
                                     {p.out.data}, {p.out.strides}};
    return launch(BinaryForward<Math, Acc, kUses16BitMath<T>>{alpha}, t);
  }
}

// The backward: one elementwise pass where neither operand is broadcast; else a reduction for each
// broadcast operand's gradient (the other gradient written on the way where it can be), then an
// elementwise pass for a wanted gradient no reduction wrote.
template <class Math, class T, class Launch, class Reduce>
Status binary_typed(const BinaryBackwardProblem& p, Launch&& launch, Reduce&& reduce) {
  using Acc = acc_t<T>;
  const Acc alpha = static_cast<Acc>(p.desc.alpha);
  const int64_t n = p.shape.numel();
  if (p.desc.a_scalar || p.desc.b_scalar) {  // the tensor operand has the output's shape
    const bool scalar_is_a = p.desc.a_scalar.has_value();
    const AnyTensorRef& x = scalar_is_a ? p.b : p.a;
    const AnyTensorMut& dx = scalar_is_a ? p.db : p.da;
    if (!dx.data || n == 0) return Status::ok();
    const Acc scalar = static_cast<Acc>(scalar_is_a ? *p.desc.a_scalar : *p.desc.b_scalar);
    using Gradient = BinaryScalarGradient<Math, Acc>;  // (dout, x), or dout alone where x is not read
    ElementwiseTensors<Gradient::kIn, 1> t{p.path, p.shape, {p.dout.data}, {p.dout.strides}, {dx.data}, {dx.strides}};
    if constexpr (Gradient::kIn == 2) t.in[1] = x.data, t.in_strides[1] = x.strides;
    return launch(Gradient{alpha, scalar, scalar_is_a}, t);
  }
  const bool want_a = p.da.data != nullptr, want_b = p.db.data != nullptr;
  const bool reduce_a = want_a && p.splits_a > 0, reduce_b = want_b && p.splits_b > 0;
  // The inputs the kind's gradient reads: (dout, a, b) or dout alone.
  constexpr int kIn = gradient_inputs<Math>();
  auto tensors = [&]<size_t kOut>(const std::array<void*, kOut>& outputs, const std::array<Strides, kOut>& strides) {
    ElementwiseTensors<kIn, static_cast<int>(kOut)> t{p.path, p.shape};
    const void* data[3] = {p.dout.data, p.a.data, p.b.data};
    const Strides in_strides[3] = {p.dout.strides, p.a.strides, p.b.strides};
    for (int i = 0; i < kIn; ++i) t.in[i] = data[i], t.in_strides[i] = in_strides[i];
    for (size_t o = 0; o < kOut; ++o) t.out[o] = outputs[o], t.out_strides[o] = strides[o];
    return t;
  };
  if (want_a && want_b && !reduce_a && !reduce_b) {
    if (n == 0) return Status::ok();
    return launch(BinaryGradients<Math, Acc>{alpha}, tensors(std::array<void*, 2>{p.da.data, p.db.data},
                                                             std::array<Strides, 2>{p.da.strides, p.db.strides}));
  }
  bool written_a = !want_a, written_b = !want_b;
  for (const bool of_b : {false, true}) {
    if (!(of_b ? reduce_b : reduce_a)) continue;
    // The other gradient is written on the way if wanted and its operand is not broadcast.
    const bool write_other = of_b ? !written_a && !reduce_a : !written_b && !reduce_b;
    const AnyTensorMut &target = of_b ? p.db : p.da, &other = of_b ? p.da : p.db;
    const auto t = tensors(std::array<void*, 2>{write_other ? other.data : nullptr, target.data},
                           std::array<Strides, 2>{other.strides, target.strides});
    bool broadcast[kMaxRank];
    broadcast_dims(p.shape, of_b ? p.desc.b_shape : p.desc.a_shape, broadcast);
    const int64_t splits = of_b ? p.splits_b : p.splits_a;
    if (Status s = reduce(make_broadcast_reduction<T>(BinaryReducedGradient<Math, Acc>{alpha, of_b}, t, broadcast,
                                                      splits, p.workspace));
        !s)
      return s;
    (of_b ? written_b : written_a) = true;
    if (write_other) (of_b ? written_a : written_b) = true;
  }
  for (const bool of_b : {false, true}) {
    if ((of_b ? written_b : written_a) || n == 0) continue;
    const AnyTensorMut& dx = of_b ? p.db : p.da;
    const auto one = tensors(std::array<void*, 1>{dx.data}, std::array<Strides, 1>{dx.strides});
    if (Status s = launch(BinaryGradient<Math, Acc>{alpha, of_b}, one); !s) return s;
  }
  return Status::ok();
}

// Backend entry points: launch routes to the kind's group; launch_group<G> is compiled per group.
namespace cpu {
Status launch(const LaunchContext& ctx, const BinaryForwardProblem& problem);
Status launch(const LaunchContext& ctx, const BinaryBackwardProblem& problem);
template <int G>
Status launch_group(const LaunchContext& ctx, const BinaryForwardProblem& problem);
template <int G>
Status launch_group(const LaunchContext& ctx, const BinaryBackwardProblem& problem);
}  // namespace cpu
namespace cuda {  // (no groups: the kernels are compiled at select or first use)
Status launch(const LaunchContext& ctx, const BinaryForwardProblem& problem);
Status launch(const LaunchContext& ctx, const BinaryBackwardProblem& problem);
// Compiles (or finds in the caches) the forward's kernels of the descriptor: select's part (the
// transposed path and the backward's functors, which the views decide, compile at first use).
Status prepare_binary(const PlanTarget& target, const BinaryDescriptor& desc);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
// Every binary program (cuda/binary.cpp).
std::vector<Program> binary_programs();
}  // namespace baracuda::detail::jit

#pragma once
// What the unary plans hand to a backend: the validated views and the path the plan chose. The
// dispatch from (kind, dtype) to a functor is written here once. A backend compiles one translation
// unit per group of kinds (common/unary_math.hpp's UnaryGroups): each defines launch_group<G> with
// the backend's elementwise launcher, and the backend's launch routes a problem to its kind's group.
#include <utility>

#include "baracuda/ops/unary.hpp"
#include "common/dispatch.hpp"
#include "common/unary_math.hpp"
#include "ops/elementwise_layout.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

struct UnaryForwardProblem {
  UnaryDescriptor desc;
  ElementwisePath path = ElementwisePath::strided;
  AnyTensorRef x;
  AnyTensorMut out;
};

struct UnaryBackwardProblem {
  UnaryDescriptor desc;
  ElementwisePath path = ElementwisePath::strided;
  AnyTensorRef dout, x;
  AnyTensorMut dx;
};

// Whether a group (a std::tuple of Maths) holds `kind`.
template <class Group>
struct UnaryGroupHas;
template <class... Maths>
struct UnaryGroupHas<std::tuple<Maths...>> {
  static constexpr bool of(UnaryKind kind) { return ((Maths::kKind == kind) || ...); }
};

// Calls f(std::integral_constant<int, G>{}) for the group of the kind.
template <class F, int G = 0>
Status with_unary_group(UnaryKind kind, F&& f) {
  if constexpr (G < kUnaryGroupCount) {
    if (UnaryGroupHas<std::tuple_element_t<G, UnaryGroups>>::of(kind)) return f(std::integral_constant<int, G>{});
    return with_unary_group<F, G + 1>(kind, std::forward<F>(f));
  } else {
    return Status::error(StatusCode::invalid_problem, "no unary kind " + std::to_string(static_cast<int>(kind)));
  }
}

// Calls f(std::type_identity<Math>{}, std::type_identity<T>{}) for the kind (a Math of group G) and
// the element type (the backend's own 16-bit types).
template <int G, class Half, class BFloat16, class F, size_t I = 0>
Status dispatch_unary(const UnaryDescriptor& desc, F&& f) {
  using Group = std::tuple_element_t<G, UnaryGroups>;
  if constexpr (I < std::tuple_size_v<Group>) {
    using Math = std::tuple_element_t<I, Group>;
    if (Math::kKind == desc.kind)
      return dispatch_float<Half, BFloat16>(desc.dtype,
                                            [&](auto element) { return f(std::type_identity<Math>{}, element); });
    return dispatch_unary<G, Half, BFloat16, F, I + 1>(desc, std::forward<F>(f));
  } else {
    return Status::error(StatusCode::invalid_problem, "unary kind " + std::string(unary_kind_name(desc.kind)) +
                                                          " is not in group " + std::to_string(G));
  }
}

// The launch of a problem with its Math and element type T: launch(functor, ElementwiseTensors).
template <class Math, class T, class Launch>
Status unary_typed(const UnaryForwardProblem& p, Launch&& launch) {
  using Acc = acc_t<T>;
  const ElementwiseTensors<1, 1> t{p.path, p.desc.shape, {p.x.data}, {p.x.strides}, {p.out.data}, {p.out.strides}};
  return launch(UnaryForward<Math, Acc>{unary_params<Acc>(p.desc.parameters)}, t);
}
template <class Math, class T, class Launch>
Status unary_typed(const UnaryBackwardProblem& p, Launch&& launch) {
  using Acc = acc_t<T>;
  const ElementwiseTensors<2, 1> t{p.path,      p.desc.shape,  {p.dout.data, p.x.data}, {p.dout.strides, p.x.strides},
                                   {p.dx.data}, {p.dx.strides}};
  return launch(UnaryBackward<Math, Acc>{unary_params<Acc>(p.desc.parameters)}, t);
}

// Backend entry points: launch routes to the kind's group; launch_group<G> is compiled per group.
namespace cpu {
Status launch(const LaunchContext& ctx, const UnaryForwardProblem& problem);
Status launch(const LaunchContext& ctx, const UnaryBackwardProblem& problem);
template <int G>
Status launch_group(const LaunchContext& ctx, const UnaryForwardProblem& problem);
template <int G>
Status launch_group(const LaunchContext& ctx, const UnaryBackwardProblem& problem);
}  // namespace cpu
namespace cuda {
Status launch(const LaunchContext& ctx, const UnaryForwardProblem& problem);
Status launch(const LaunchContext& ctx, const UnaryBackwardProblem& problem);
template <int G>
Status launch_group(const LaunchContext& ctx, const UnaryForwardProblem& problem);
template <int G>
Status launch_group(const LaunchContext& ctx, const UnaryBackwardProblem& problem);
}  // namespace cuda

}  // namespace baracuda::detail

#pragma once
// What the unary plans hand to a backend: the validated views and the path the plan chose. The
// dispatch from (kind, dtype) to a functor is written here once. The CPU compiles one translation
// unit per group of kinds (common/unary_math.hpp's UnaryGroups): each defines launch_group<G> with
// its elementwise launcher, and its launch routes a problem to its kind's group; CUDA compiles the
// functor's kernels at select (cuda/unary.cpp).
#include <utility>
#include <vector>

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

// Calls f(std::integral_constant<int, G>{}) for the group of the kind.
template <class F>
Status with_unary_group(UnaryKind kind, F&& f) {
  return with_group<UnaryGroups>(kind, std::forward<F>(f));
}

// Calls f(std::type_identity<Math>{}, std::type_identity<T>{}) for the kind (a Math of group G) and
// the element type (the backend's own 16-bit types).
template <int G, bool kForward, class Half, class BFloat16, class F>
Status dispatch_unary(const UnaryDescriptor& desc, F&& f) {
  return dispatch_kind<std::tuple_element_t<G, UnaryGroups>, Half, BFloat16, kForward>(desc.kind, desc.dtype,
                                                                                       std::forward<F>(f));
}

// The launch of a problem with its Math and element type T: launch(functor, ElementwiseTensors).
template <class Math, class T, class Launch>
Status unary_typed(const UnaryForwardProblem& p, Launch&& launch) {
  using Acc = math_compute_t<Math, T>;
  const ElementwiseTensors<1, 1> t{p.path, p.desc.shape, {p.x.data}, {p.x.strides}, {p.out.data}, {p.out.strides}};
  return launch(UnaryForward<Math, Acc, kUses16BitMath<T>>{unary_params<Acc>(p.desc.parameters)}, t);
}
template <class Math, class T, class Launch>
Status unary_typed(const UnaryBackwardProblem& p, Launch&& launch) {
  using Acc = acc_t<T>;
  const ElementwiseTensors<2, 1> t{p.path,      p.desc.shape,  {p.dout.data, p.x.data}, {p.dout.strides, p.x.strides},
                                   {p.dx.data}, {p.dx.strides}};
  return launch(UnaryBackward<Math, Acc, kUses16BitMath<T>>{unary_params<Acc>(p.desc.parameters)}, t);
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
namespace cuda {  // (no groups: the kernels are compiled at select)
Status launch(const LaunchContext& ctx, const UnaryForwardProblem& problem);
Status launch(const LaunchContext& ctx, const UnaryBackwardProblem& problem);
// Compiles (or finds in the caches) the kernels a plan of the descriptor runs: select's part.
Status prepare_unary(const PlanTarget& target, const UnaryDescriptor& desc, bool backward);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
// Every unary program: each kind, dtype and direction (cuda/unary.cpp).
std::vector<Program> unary_programs();
}  // namespace baracuda::detail::jit

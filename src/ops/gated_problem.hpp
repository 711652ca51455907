#pragma once
// What the gated plans hand to a backend: x's halves as views of the output's shape, the path, and
// the functors (common/gated_math.hpp).
#include <vector>

#include "baracuda/ops/gated.hpp"
#include "common/dispatch.hpp"
#include "common/gated_math.hpp"
#include "ops/elementwise_layout.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

// The problem in the output's shape: a and b (and da, db) are the halves of x (and dx).
struct GatedForwardProblem {
  GatedDescriptor desc;
  ElementwisePath path = ElementwisePath::strided;
  Shape shape;  // the output's
  AnyTensorRef a, b;
  AnyTensorMut out;
};
struct GatedBackwardProblem {
  GatedDescriptor desc;
  ElementwisePath path = ElementwisePath::strided;
  Shape shape;
  AnyTensorRef dout, a, b;
  AnyTensorMut da, db;
};

// Calls f(std::type_identity<Math>{}, std::type_identity<T>{}) for the kind and the element type.
template <class Half, class BFloat16, class F>
Status dispatch_gated(const GatedDescriptor& desc, F&& f) {
  return dispatch_kind<GatedMaths, Half, BFloat16>(desc.kind, desc.dtype, std::forward<F>(f));
}

template <class Math, class T, class Launch>
Status gated_typed(const GatedForwardProblem& p, Launch&& launch) {
  using Acc = acc_t<T>;
  const ElementwiseTensors<2, 1> t{p.path,       p.shape,        {p.a.data, p.b.data}, {p.a.strides, p.b.strides},
                                   {p.out.data}, {p.out.strides}};
  return launch(GatedForward<Math, Acc, kUses16BitMath<T>>{unary_params<Acc>(UnaryParameters{})}, t);
}
template <class Math, class T, class Launch>
Status gated_typed(const GatedBackwardProblem& p, Launch&& launch) {
  using Acc = acc_t<T>;
  const ElementwiseTensors<3, 2> t{p.path,
                                   p.shape,
                                   {p.dout.data, p.a.data, p.b.data},
                                   {p.dout.strides, p.a.strides, p.b.strides},
                                   {p.da.data, p.db.data},
                                   {p.da.strides, p.db.strides}};
  return launch(GatedBackward<Math, Acc, kUses16BitMath<T>>{unary_params<Acc>(UnaryParameters{})}, t);
}

namespace cpu {
Status launch(const LaunchContext& ctx, const GatedForwardProblem& problem);
Status launch(const LaunchContext& ctx, const GatedBackwardProblem& problem);
}  // namespace cpu
namespace cuda {
Status launch(const LaunchContext& ctx, const GatedForwardProblem& problem);
Status launch(const LaunchContext& ctx, const GatedBackwardProblem& problem);
// Compiles (or finds in the caches) the kernels a plan of the descriptor runs: select's part.
Status prepare_gated(const PlanTarget& target, const GatedDescriptor& desc, bool backward);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
// Every gated program: each kind, float dtype and direction (cuda/gated.cpp).
std::vector<Program> gated_programs();
}  // namespace baracuda::detail::jit

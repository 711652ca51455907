#pragma once
// What the gated plans hand to a backend: x's halves as views of the output's shape, the path, and
// the functors, which reuse the unary activations (common/unary_math.hpp): a kind is a unary Math.
#include <tuple>

#include "baracuda/ops/gated.hpp"
#include "common/dispatch.hpp"
#include "common/unary_math.hpp"
#include "ops/elementwise_layout.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

// A gated kind's activation: the unary Math under the gated kind's tag.
template <class Unary, GatedKind K>
struct GatedMath : Unary {
  static constexpr GatedKind kKind = K;
};
using GatedMaths = std::tuple<GatedMath<SigmoidMath, GatedKind::glu>, GatedMath<SiluMath, GatedKind::swiglu>,
                              GatedMath<GeluMath, GatedKind::geglu>, GatedMath<GeluTanhMath, GatedKind::geglu_tanh>,
                              GatedMath<ReluMath, GatedKind::reglu>>;

// (a, b) -> a act(b) (k16: as unary_math.hpp's UnaryForward)
template <class Math, class Acc_, bool k16 = false>
struct GatedForward {
  using Acc = Acc_;
  static constexpr int kIn = 2, kOut = 1;
  static constexpr ElementCost kCost = element_cost<Math>();
  UnaryParams<Acc> p;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    y[0] = x[0] * forward_of<Math, k16>(x[1], p);
  }
};
// (dout, a, b) -> (dout act(b), dout a act'(b))
template <class Math, class Acc_, bool k16 = false>
struct GatedBackward {
  using Acc = Acc_;
  static constexpr int kIn = 3, kOut = 2;
  UnaryParams<Acc> p;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    y[0] = x[0] * forward_of<Math, k16>(x[2], p);
    y[1] = backward_of<Math, k16>(x[0] * x[1], x[2], p);
  }
};

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
}  // namespace cuda

}  // namespace baracuda::detail

#pragma once
// The gated functors (GLU and its kin), which reuse the unary activations (common/unary_math.hpp): a
// kind is a unary Math. Read by both backends and by NVRTC (the kernels compiled at select).
#include "baracuda/ops/gated_kind.hpp"
#include "common/portable.hpp"
#include "common/unary_math.hpp"

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

}  // namespace baracuda::detail

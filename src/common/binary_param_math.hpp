#pragma once
// The math of the BinaryParam family, written once for both backends. An op of the family is one
// Math struct:
//   forward(a, b, w)                          -> out
//   backward(dout, a, b, w, da, db, dw_term)  da and db (which may depend on dout and w only: the
//                                             scalar-weight backward reads dout alone) and the term
//                                             of dweight that is summed where w is broadcast
// and every functor and kernel shape below is reused by every op.
#include "common/broadcast_reduction.hpp"
#include "common/elementwise.hpp"
#include "common/portable.hpp"

namespace baracuda::detail {

struct LerpMath : ArithmeticCost {
  static constexpr std::string_view kPlan = "LerpPlan", kOp = "lerp";
  static constexpr std::string_view kBackwardPlan = "LerpBackwardPlan", kBackwardOp = "lerp_backward";
  // a + w (b - a), evaluated from the nearer end so that w = 1 gives b exactly (as torch.lerp does).
  template <class Acc>
  BARACUDA_HD static Acc forward(Acc a, Acc b, Acc w) {
    const Acc diff = b - a;
    return (w < Acc(0.5)) ? a + w * diff : b - diff * (Acc(1) - w);
  }
  template <class Acc>
  BARACUDA_HD static void backward(Acc dout, Acc a, Acc b, Acc w, Acc& da, Acc& db, Acc& dw) {
    da = (Acc(1) - w) * dout;
    db = w * dout;
    dw = (b - a) * dout;
  }
};

struct AddcmulMath : ArithmeticCost {  // a + w b
  static constexpr std::string_view kPlan = "AddcmulPlan", kOp = "addcmul";
  static constexpr std::string_view kBackwardPlan = "AddcmulBackwardPlan", kBackwardOp = "addcmul_backward";
  template <class Acc>
  BARACUDA_HD static Acc forward(Acc a, Acc b, Acc w) {
    return a + w * b;
  }
  template <class Acc>
  BARACUDA_HD static void backward(Acc dout, Acc, Acc b, Acc w, Acc& da, Acc& db, Acc& dw) {
    da = dout;
    db = w * dout;
    dw = b * dout;
  }
};

// Every op of the family, in the order of BinaryParamMathId: the backends instantiate each.
using BinaryParamMaths = std::tuple<LerpMath, AddcmulMath>;

template <class Math, class Acc_>
struct ScalarWeightForward {  // (a, b) -> out
  using Acc = Acc_;
  static constexpr int kIn = 2, kOut = 1;
  static constexpr ElementCost kCost = element_cost<Math>();
  Acc w;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const { y[0] = Math::forward(x[0], x[1], w); }
};

template <class Math, class Acc_>
struct TensorWeightForward {  // (a, b, w) -> out
  using Acc = Acc_;
  static constexpr int kIn = 3, kOut = 1;
  static constexpr ElementCost kCost = element_cost<Math>();
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const { y[0] = Math::forward(x[0], x[1], x[2]); }
};

template <class Math, class Acc_>
struct ScalarWeightBackward {  // dout -> (da, db)
  using Acc = Acc_;
  static constexpr int kIn = 1, kOut = 2;
  Acc w;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    Acc dw;
    Math::backward(x[0], Acc(0), Acc(0), w, y[0], y[1], dw);
  }
};

template <class Math, class Acc_>
struct TensorWeightBackward {  // (dout, a, b, w) -> (da, db, dw), weight not broadcast
  using Acc = Acc_;
  static constexpr int kIn = 4, kOut = 3;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    Math::backward(x[0], x[1], x[2], x[3], y[0], y[1], y[2]);
  }
};

// Backward with a broadcast weight: the body of a BroadcastReduction (common/broadcast_reduction.hpp)
// over the dims the weight is broadcast along: (dout, a, b, w) -> (da, db), and dweight's term.
template <class Math, class Acc_>
struct BroadcastWeightGradient {
  using Acc = Acc_;
  static constexpr int kIn = 4, kOut = 2;
  BARACUDA_HD Acc operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    Acc dw;
    Math::backward(x[0], x[1], x[2], x[3], y[0], y[1], dw);
    return dw;
  }
};

}  // namespace baracuda::detail

#pragma once
// The math of the BinaryParam family, written once for both backends. An op of the family is one
// Math struct:
//   forward(a, b, w)                          -> out
//   backward(dout, a, b, w, da, db, dw_term)  da and db (which may depend on dout and w only: the
//                                             scalar-weight backward reads dout alone) and the term
//                                             of dweight that is summed where w is broadcast
// and every functor and kernel shape below is reused by every op.
#include <string_view>
#include <tuple>

#include "common/elementwise.hpp"

namespace baracuda::detail {

struct LerpMath {
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

struct AddcmulMath {  // a + w b
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
  Acc w;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const { y[0] = Math::forward(x[0], x[1], w); }
};

template <class Math, class Acc_>
struct TensorWeightForward {  // (a, b, w) -> out
  using Acc = Acc_;
  static constexpr int kIn = 3, kOut = 1;
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

// Backward with a broadcast weight. The output index space is split into `kept` dims (those of the
// weight, M elements) and `reduced` dims (along which the weight is broadcast, R elements); the
// reduction over R is cut into S splits. Work item t covers one (j, s): it writes da and db for the
// elements r = s, s + S, ... of weight element j and sums the dweight terms over them, in that
// fixed order. Its sum goes to dweight directly when S == 1, else to partial[j * S + s], summed in
// order of s by finalize. So the result does not depend on scheduling.
// Tensor order in the walkers: dout, a, b, w, da, db, dw.
inline constexpr int kBinaryParamBackwardTensors = 7;

template <class Math, class T>
struct BroadcastWeightBackward {
  using Acc = acc_t<T>;
  const T* dout;
  const T* a;
  const T* b;
  const T* w;
  T* da;
  T* db;
  T* dw;
  Acc* partial;  // M * S sums when S > 1
  Walker<kBinaryParamBackwardTensors> kept;
  Walker<kBinaryParamBackwardTensors> reduced;
  int64_t m, r, s;
  bool lanes_on_split;  // consecutive items take consecutive splits (reduced dim innermost)

  BARACUDA_HD int64_t items() const { return m * s; }

  BARACUDA_HD void item(int64_t t) const {
    const int64_t j = lanes_on_split ? t / s : t % m;
    const int64_t split = lanes_on_split ? t % s : t / m;
    int64_t base[kBinaryParamBackwardTensors];
    kept.offsets(j, base);
    const Acc wj = static_cast<Acc>(w[base[3]]);
    Acc sum = 0;
    for (int64_t ri = split; ri < r; ri += s) {
      int64_t off[kBinaryParamBackwardTensors];
      reduced.offsets(ri, off);
      Acc ga, gb, gw;
      Math::backward(static_cast<Acc>(dout[base[0] + off[0]]), static_cast<Acc>(a[base[1] + off[1]]),
                     static_cast<Acc>(b[base[2] + off[2]]), wj, ga, gb, gw);
      da[base[4] + off[4]] = static_cast<T>(ga);
      db[base[5] + off[5]] = static_cast<T>(gb);
      sum += gw;
    }
    if (s == 1) {
      dw[base[6]] = static_cast<T>(sum);
    } else {
      partial[j * s + split] = sum;
    }
  }

  BARACUDA_HD void finalize(int64_t j) const {
    Acc sum = 0;
    for (int64_t split = 0; split < s; ++split) sum += partial[j * s + split];
    int64_t base[kBinaryParamBackwardTensors];
    kept.offsets(j, base);
    dw[base[6]] = static_cast<T>(sum);
  }
};

}  // namespace baracuda::detail

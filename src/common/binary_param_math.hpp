#pragma once
// The math of the BinaryParam family, written once for both backends.
#include "common/elementwise.hpp"

namespace baracuda::detail {

// a + w (b - a), evaluated from the nearer end so that w = 1 gives b exactly (as torch.lerp does).
template <class Acc>
BARACUDA_HD Acc lerp(Acc a, Acc b, Acc w) {
  const Acc diff = b - a;
  return (w < Acc(0.5)) ? a + w * diff : b - diff * (Acc(1) - w);
}

template <class Acc_>
struct LerpScalarForward {  // (a, b) -> out
  using Acc = Acc_;
  static constexpr int kIn = 2, kOut = 1;
  Acc w;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const { y[0] = lerp(x[0], x[1], w); }
};

template <class Acc_>
struct LerpTensorForward {  // (a, b, w) -> out
  using Acc = Acc_;
  static constexpr int kIn = 3, kOut = 1;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const { y[0] = lerp(x[0], x[1], x[2]); }
};

template <class Acc_>
struct LerpScalarBackward {  // dout -> (da, db)
  using Acc = Acc_;
  static constexpr int kIn = 1, kOut = 2;
  Acc w;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    y[0] = (Acc(1) - w) * x[0];
    y[1] = w * x[0];
  }
};

template <class Acc_>
struct LerpTensorBackward {  // (dout, a, b, w) -> (da, db, dw), weight not broadcast
  using Acc = Acc_;
  static constexpr int kIn = 4, kOut = 3;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    const Acc dout = x[0], w = x[3];
    y[0] = (Acc(1) - w) * dout;
    y[1] = w * dout;
    y[2] = (x[2] - x[1]) * dout;
  }
};

// Backward with a broadcast weight. The output index space is split into `kept` dims (those of the
// weight, M elements) and `reduced` dims (along which the weight is broadcast, R elements); the
// reduction over R is cut into S splits. Work item t covers one (j, s): it writes da and db for the
// elements r = s, s + S, ... of weight element j and sums (b - a) * dout over them, in that fixed
// order. Its sum goes to dweight directly when S == 1, else to partial[j * S + s], summed in
// order of s by lerp_backward_finalize. So the result does not depend on scheduling.
// Tensor order in the walkers: dout, a, b, w, da, db, dw.
inline constexpr int kLerpBackwardTensors = 7;

template <class T>
struct LerpBackwardReduce {
  using Acc = acc_t<T>;
  const T* dout;
  const T* a;
  const T* b;
  const T* w;
  T* da;
  T* db;
  T* dw;
  Acc* partial;  // M * S sums when S > 1
  Walker<kLerpBackwardTensors> kept;
  Walker<kLerpBackwardTensors> reduced;
  int64_t m, r, s;
  bool lanes_on_split;  // consecutive items take consecutive splits (reduced dim innermost)

  BARACUDA_HD int64_t items() const { return m * s; }

  BARACUDA_HD void item(int64_t t) const {
    const int64_t j = lanes_on_split ? t / s : t % m;
    const int64_t split = lanes_on_split ? t % s : t / m;
    int64_t base[kLerpBackwardTensors];
    kept.offsets(j, base);
    const Acc wj = static_cast<Acc>(w[base[3]]);
    Acc sum = 0;
    for (int64_t ri = split; ri < r; ri += s) {
      int64_t off[kLerpBackwardTensors];
      reduced.offsets(ri, off);
      const Acc g = static_cast<Acc>(dout[base[0] + off[0]]);
      const Acc av = static_cast<Acc>(a[base[1] + off[1]]);
      const Acc bv = static_cast<Acc>(b[base[2] + off[2]]);
      da[base[4] + off[4]] = static_cast<T>((Acc(1) - wj) * g);
      db[base[5] + off[5]] = static_cast<T>(wj * g);
      sum += (bv - av) * g;
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
    int64_t base[kLerpBackwardTensors];
    kept.offsets(j, base);
    dw[base[6]] = static_cast<T>(sum);
  }
};

}  // namespace baracuda::detail

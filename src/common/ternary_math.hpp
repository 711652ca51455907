#pragma once
// The math of the ternary family, written once for both backends. A kind is one Math struct:
//   kKind
//   forward(a, b, c, value)                          -> f(a, b, c) in the compute type A
//   backward(dout, a, b, c, value, da, db, dc)       the gradients PyTorch's autograd gives
//                                                    (include/baracuda/ops/ternary.hpp lists them)
// and the functors below run every Math on every kernel shape of both backends. Operands that are
// scalars in the descriptor are not loaded: a functor takes the tensor operands' values (in operand
// order) and fills in the scalars.
#include "baracuda/ops/ternary_kind.hpp"
#include "common/dispatch.hpp"
#include "common/elementwise.hpp"
#include "common/portable.hpp"

namespace baracuda::detail {

// `b` where `take_b`, else `a`, by masking bits rather than a select: GCC turns a select between
// two loaded values into a load through a selected pointer, which its vectorizer rejects (the CPU's
// loops over elements then ran scalar, 4-9x slower). On CUDA it is one LOP3; written as a select
// there, it kept cicc busy for over 14 minutes on where.cu (14 s this way).
template <class Acc>
BARACUDA_HD Acc blend(Acc a, Acc b, bool take_b) {
  if constexpr (sizeof(Acc) < 4) return take_b ? b : a;  // bool
  using Bits = std::conditional_t<sizeof(Acc) == 8, uint64_t, uint32_t>;
  Bits x, y;
  memcpy(&x, &a, sizeof x);
  memcpy(&y, &b, sizeof y);
  const Bits m = Bits{0} - static_cast<Bits>(take_b);
  const Bits r = (x & ~m) | (y & m);
  Acc out;
  memcpy(&out, &r, sizeof out);
  return out;
}

struct WhereMath : ArithmeticCost {  // a ? b : c; a is the condition (bool, 0 or 1 in A)
  static constexpr TernaryKind kKind = TernaryKind::where;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers_and_bool;
  static constexpr bool kGradientReadsValues = false;  // its backward reads the condition and dout alone
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A c, A) {
    return blend(c, b, a != A(0));
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A, A, A, A& da, A& db, A& dc) {
    const bool take_b = a != A(0);
    da = A(0);
    db = blend(A(0), dy, take_b);
    dc = blend(dy, A(0), take_b);
  }
};

struct ClampMath : ArithmeticCost {  // min(max(a, b), c), NaN from any operand (torch.clamp's kernel)
  static constexpr TernaryKind kKind = TernaryKind::clamp;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A c, A) {
    const A low = blend(a, b, a < b);
    A r = blend(low, c, low > c);
    r = blend(r, c, c != c);  // NaN: a's first, then b's, then c's
    r = blend(r, b, b != b);
    return blend(r, a, a != a);
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A c, A, A& da, A& db, A& dc) {
    da = (a >= b && a <= c) ? dy : A(0);
    db = (a < b && b < c) ? dy : A(0);
    dc = (a > c || c < b) ? dy : A(0);
  }
};

struct AddcdivMath : SpecialCost {  // a + value (b / c), as PyTorch's kernels (floats alone: PyTorch rejects integers)
  static constexpr TernaryKind kKind = TernaryKind::addcdiv;
  static constexpr bool kTensorsOnly = true;  // (torch.addcdiv's operands are tensors)
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A c, A value) {
    return a + value * (b / c);
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A, A b, A c, A value, A& da, A& db, A& dc) {
    const A q = value * dy / c;
    da = dy;
    db = q;
    dc = -q * b / c;
  }
};

// The kinds by translation unit of the CPU backend (src/cpu/ternary/: one file per kind; CUDA
// compiles each kind at select).
using TernaryGroups = std::tuple<std::tuple<WhereMath>, std::tuple<ClampMath>, std::tuple<AddcdivMath>>;
enum TernaryGroupIndex : int { kTernaryWhere, kTernaryClamp, kTernaryAddcdiv };

// Where each of the three operands comes from: the tensor values of an element (the tensor operands
// in order, from x[0]), or the descriptor's scalar. A value is picked by selects over fixed indices
// (an index computed at run time would put the values in local memory on CUDA).
template <class Acc>
struct TernaryOperands {
  Acc scalar[3] = {};
  bool is_scalar[3] = {};

  // x: the kTensors tensor operands' values first (a backward's dout follows them).
  template <int kTensors, int kIn>
  BARACUDA_HD void fill(const Acc (&x)[kIn], Acc (&v)[3]) const {
    static_assert(kTensors >= 1 && kTensors <= 3 && kTensors <= kIn);
    if constexpr (kTensors == 3) {  // no scalar: the values in order
      v[0] = x[0], v[1] = x[1], v[2] = x[2];
      return;
    }
    // (blended, not selected: see blend)
    constexpr int k1 = kTensors > 1 ? 1 : 0, k2 = kTensors > 2 ? 2 : k1;
    const int slot1 = is_scalar[0] ? 0 : 1, slot2 = slot1 + (is_scalar[1] ? 0 : 1);
    v[0] = blend(x[0], scalar[0], is_scalar[0]);
    v[1] = blend(blend(x[k1], x[0], slot1 == 0), scalar[1], is_scalar[1]);
    v[2] = blend(blend(blend(x[k2], x[k1], slot2 == 1), x[0], slot2 == 0), scalar[2], is_scalar[2]);
  }
};

template <class Acc>
BARACUDA_HD Acc pick(const Acc (&d)[3], int k) {
  return k == 0 ? d[0] : k == 1 ? d[1] : d[2];
}

// (tensor operands) -> out
template <class Math, class Acc_, int kIn_>
struct TernaryForward {
  using Acc = Acc_;
  static constexpr int kIn = kIn_, kOut = 1;
  static constexpr ElementCost kCost = element_cost<Math>();
  TernaryOperands<Acc> operands;
  Acc value;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    Acc v[3];
    operands.template fill<kIn>(x, v);
    y[0] = Math::forward(v[0], v[1], v[2], value);
  }
};

// The backward's inputs are the tensor operands in order, then dout (so that where's bool condition
// is the first input, the one the launchers may load as another type).
// (tensor operands, dout) -> the gradients of the operands listed in `of` (kOut of them).
template <class Math, class Acc_, int kIn_, int kOut_>
struct TernaryGradients {
  using Acc = Acc_;
  static constexpr int kIn = kIn_, kOut = kOut_;
  TernaryOperands<Acc> operands;
  Acc value;
  int of[kOut];
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    Acc v[3], d[3];
    operands.template fill<kIn - 1>(x, v);
    Math::backward(x[kIn - 1], v[0], v[1], v[2], value, d[0], d[1], d[2]);
    // (written out: a loop here kept the CPU's loop over elements from vectorizing)
    y[0] = pick(d, of[0]);
    if constexpr (kOut > 1) y[1] = pick(d, of[1]);
    if constexpr (kOut > 2) y[2] = pick(d, of[2]);
  }
};

// The gradient of operand `of`, broadcast along some dims, summed over them (a BroadcastReduction
// body, common/broadcast_reduction.hpp): (tensor operands, dout) -> the other two operands' gradients
// in order (written where their views have data), and operand `of`'s term.
template <class Math, class Acc_, int kIn_>
struct TernaryReducedGradient {
  using Acc = Acc_;
  static constexpr int kIn = kIn_, kOut = 2;
  TernaryOperands<Acc> operands;
  Acc value;
  int of;
  BARACUDA_HD Acc operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    Acc v[3], d[3];
    operands.template fill<kIn - 1>(x, v);
    Math::backward(x[kIn - 1], v[0], v[1], v[2], value, d[0], d[1], d[2]);
    y[0] = of == 0 ? d[1] : d[0];  // the others: (1, 2), (0, 2) or (0, 1)
    y[1] = of == 2 ? d[1] : d[2];
    return of == 0 ? d[0] : of == 1 ? d[1] : d[2];
  }
};

// Whether a kind takes scalar operands (those without kTensorsOnly): a kind of tensors alone compiles
// one functor arity, not three (addcdiv's CUDA translation unit spent over 8 minutes in cicc with all
// three).
template <class Math>
inline constexpr bool takes_scalar_operands = !requires {
  Math::kTensorsOnly;
};

// Whether a kind's backward reads b and c (where's does not: the condition picks dout's way).
template <class Math>
constexpr bool gradient_reads_values_of() {
  if constexpr (requires { Math::kGradientReadsValues; })
    return Math::kGradientReadsValues;
  else
    return true;
}
template <class Math>
inline constexpr bool gradient_reads_values = gradient_reads_values_of<Math>();

// The element type of a kind's first input: where's condition is bool.
template <class Math, class T>
using ternary_first_t = std::conditional_t<std::is_same_v<Math, WhereMath>, bool, T>;

}  // namespace baracuda::detail

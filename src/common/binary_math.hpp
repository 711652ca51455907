#pragma once
// The math of the binary family, written once for both backends. A kind is one Math struct:
//   kKind                                             its BinaryKind
//   forward(a, b, alpha)              -> f(a, b)      in the compute type A (f32 for 16-bit and f32, f64)
//   backward(dout, a, b, alpha, da, db)               dout df/da and dout df/db, as PyTorch's autograd
//                                                     gives them (binary.hpp lists the points where f
//                                                     is not differentiable)
// Every kernel shape of both backends runs every Math; the groups at the end split the kinds over
// translation units (one per group and backend) so that the build parallelizes.
#include "baracuda/ops/binary_kind.hpp"
#include "common/arith16.hpp"
#include "common/broadcast_reduction.hpp"
#include "common/dispatch.hpp"
#include "common/elementwise.hpp"
#include "common/math16.hpp"
#include "common/portable.hpp"
#include "common/simd_math.hpp"

namespace baracuda::detail {

namespace binary_fn {

// PyTorch's floor division of floats (c10's div_floor_floating): from fmod, so that a == q b + r
// holds exactly where it can, and the quotient rounded to the nearer integer where a / b is within
// rounding of one; b == 0 gives the IEEE quotient.
template <class A>
BARACUDA_HD A div_floor(A a, A b) {
  if (b == A(0)) return a / b;
  const A mod = std::fmod(a, b);
  A div = (a - mod) / b;
  if (mod != A(0) && ((b < A(0)) != (mod < A(0)))) div -= A(1);
  if (div == A(0)) return std::copysign(A(0), a / b);
  A floordiv = std::floor(div);
  if (div - floordiv > A(0.5)) floordiv += A(1);
  return floordiv;
}

// Python's %: the remainder with b's sign.
template <class A>
BARACUDA_HD A remainder(A a, A b) {
  A mod = std::fmod(a, b);
  if (mod != A(0) && ((b < A(0)) != (mod < A(0)))) mod += b;
  return mod;
}

template <class A>
BARACUDA_HD bool isnan(A x) {
  return x != x;
}

// The integer quotients and remainders (A int32 or int64), with results defined where C++'s are not:
// by 0 every one gives 0 (NumPy's; PyTorch's CPU raises, its GPU gives all ones); the quotient of the
// most negative value by -1 wraps to itself (its remainder is 0).
template <class A>
BARACUDA_HD A int_div_trunc(A a, A b) {
  if (b == A(0)) return A(0);
  if (b == A(-1)) return wrapping::neg(a);
  return a / b;
}
template <class A>
BARACUDA_HD A int_div_floor(A a, A b) {
  if (b == A(0)) return A(0);
  if (b == A(-1)) return wrapping::neg(a);
  const A q = a / b;
  return (a % b != A(0) && ((a < A(0)) != (b < A(0)))) ? q - A(1) : q;
}
template <class A>
BARACUDA_HD A int_fmod(A a, A b) {  // the sign of a
  if (b == A(0) || b == A(-1)) return A(0);
  return a % b;
}
template <class A>
BARACUDA_HD A int_remainder(A a, A b) {  // the sign of b
  const A r = int_fmod(a, b);
  return (r != A(0) && ((r < A(0)) != (b < A(0)))) ? r + b : r;
}
// a^b by squaring, wrapping as the products do (PyTorch's powi); a negative exponent gives what the
// real power truncates to: 1 for a == 1, +-1 for a == -1, else 0 (0^-n too, where PyTorch's CPU
// raises for a scalar exponent and otherwise gives 0 as well).
template <class A>
BARACUDA_HD A int_pow(A a, A b) {
  if (b < A(0)) return a == A(1) ? A(1) : (a == A(-1) ? ((b & A(1)) ? A(-1) : A(1)) : A(0));
  A result = A(1);
  for (; b != A(0); b >>= 1) {  // at most 63 steps
    if (b & A(1)) result = wrapping::mul(result, a);
    a = wrapping::mul(a, a);
  }
  return result;
}

// log1p(t) for t in [0, 1], as logaddexp needs it. On the GPU in f32: 2 atanh(s), s = t / (2 + t) <=
// 1/3, by its odd series to s^13 (truncation below 2e-8 relative; about 3 ulp in all, from the fast
// division), a third of log1pf's instructions: bf16 logaddexp was compute-bound there (66% of copy,
// 0.95x PyTorch). Elsewhere (the host's vectorized f32, f64) simd_math's log1p.
template <class A>
BARACUDA_HD A log1p_of_unit(A t) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<A, float>) {
    const float s = __fdividef(t, 2.0f + t), u = s * s;
    float p = 1.0f / 13.0f;
    p = fmaf(p, u, 1.0f / 11.0f);
    p = fmaf(p, u, 1.0f / 9.0f);
    p = fmaf(p, u, 1.0f / 7.0f);
    p = fmaf(p, u, 1.0f / 5.0f);
    p = fmaf(p, u, 1.0f / 3.0f);
    p = fmaf(p, u, 1.0f);
    return 2.0f * s * p;
  }
#endif
  return simd_math::log1p(t);
}

}  // namespace binary_fn

// How many inputs a kind's backward reads: dout, a and b, or dout alone
// (binary_gradient_reads_operands, which the plan's arg specs follow too).
template <class Math>
constexpr int gradient_inputs() {
  return binary_gradient_reads_operands(Math::kKind) ? 3 : 1;
}

// ---------------------------------------------------------------------------------------------
// arithmetic

struct AddMath : ArithmeticCost {
  static constexpr BinaryKind kKind = BinaryKind::add;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers_and_bool;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A alpha) {
    return wrapping::add(a, wrapping::mul(alpha, b));
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A, A, A alpha, A& da, A& db) {
    da = dy;
    db = alpha * dy;
  }
};
struct SubMath : ArithmeticCost {
  static constexpr BinaryKind kKind = BinaryKind::sub;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A alpha) {
    return wrapping::sub(a, wrapping::mul(alpha, b));
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A, A, A alpha, A& da, A& db) {
    da = dy;
    db = -alpha * dy;
  }
};
struct MulMath : ArithmeticCost {
  static constexpr BinaryKind kKind = BinaryKind::mul;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers_and_bool;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    return wrapping::mul(a, b);
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A, A& da, A& db) {
    da = dy * b;
    db = dy * a;
  }
};
struct DivMath : SpecialCost {
  static constexpr BinaryKind kKind = BinaryKind::div;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  static constexpr bool kIntegerToFloat = true;  // int / int is f32 (PyTorch's true division)
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    return a / b;
  }
  BARACUDA_HD static float forward16(float a, float b, float) { return arith16::div(a, b); }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A, A& da, A& db) {
    da = dy / b;
    db = -dy * ((a / b) / b);  // (a / b) / b: b^2 would overflow first
  }
};
// The rounded quotients and nothing else are piecewise constant: a zero gradient for both.
struct RoundedQuotient {
  template <class A>
  BARACUDA_HD static void backward(A, A, A, A, A& da, A& db) {
    da = db = A(0);
  }
};
struct DivFloorMath : RoundedQuotient {
  static constexpr BinaryKind kKind = BinaryKind::div_floor;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    if constexpr (std::is_integral_v<A>)
      return binary_fn::int_div_floor(a, b);
    else
      return binary_fn::div_floor(a, b);
  }
};
struct DivTruncMath : RoundedQuotient {
  static constexpr BinaryKind kKind = BinaryKind::div_trunc;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    if constexpr (std::is_integral_v<A>)
      return binary_fn::int_div_trunc(a, b);
    else
      return std::trunc(a / b);
  }
};
struct RemainderMath {
  static constexpr BinaryKind kKind = BinaryKind::remainder;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    if constexpr (std::is_integral_v<A>)
      return binary_fn::int_remainder(a, b);
    else
      return binary_fn::remainder(a, b);
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A, A& da, A& db) {
    da = dy;
    db = -dy * binary_fn::div_floor(a, b);
  }
};
struct FmodMath {
  static constexpr BinaryKind kKind = BinaryKind::fmod;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    if constexpr (std::is_integral_v<A>)
      return binary_fn::int_fmod(a, b);
    else
      return std::fmod(a, b);
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A, A& da, A& db) {
    da = dy;
    db = -dy * std::trunc(a / b);
  }
};
struct CopysignMath : ArithmeticCost {
  static constexpr BinaryKind kKind = BinaryKind::copysign;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    return std::copysign(a, b);
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A, A& da, A& db) {
    // +-dout: the sign of copysign(a, b) / a, 0 at a == 0 (PyTorch's ratio gives NaN at a = +-inf).
    da = a == A(0) ? A(0) : (std::signbit(a) == std::signbit(b) ? dy : -dy);
    db = A(0);
  }
};

// ---------------------------------------------------------------------------------------------
// transcendental

struct PowMath {
  static constexpr BinaryKind kKind = BinaryKind::pow;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    if constexpr (std::is_integral_v<A>)
      return binary_fn::int_pow(a, b);
    else
      return std::pow(a, b);
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A, A& da, A& db) {
    da = b == A(0) ? A(0) : dy * (b * std::pow(a, b - A(1)));
    db = (a == A(0) && b >= A(0)) ? A(0) : dy * (std::pow(a, b) * std::log(a));
  }
};
struct Atan2Math {
  static constexpr BinaryKind kKind = BinaryKind::atan2;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    return std::atan2(a, b);
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A, A& da, A& db) {
    // b / (a^2 + b^2) as (b / h) / h, h = hypot(a, b): a^2 + b^2 would underflow (or overflow) first.
    const A h = std::hypot(a, b);
    da = dy * ((b / h) / h);
    db = -dy * ((a / h) / h);
  }
};
struct HypotMath {
  static constexpr BinaryKind kKind = BinaryKind::hypot;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    return std::hypot(a, b);
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A, A& da, A& db) {
    const A h = std::hypot(a, b);
    da = dy * a / h;
    db = dy * b / h;
  }
};
struct LogaddexpMath {
  static constexpr BinaryKind kKind = BinaryKind::logaddexp;
  template <class A>
  // (simd_math and selects, no branch: the host's f32 loops vectorize; the same libdevice calls on
  // the device)
  BARACUDA_HD static A forward(A a, A b, A) {
    const A m = a < b ? b : a;
    const A r = m + binary_fn::log1p_of_unit(simd_math::exp(-std::fabs(a - b)));
    return simd_math::select(a == b && a - b != A(0), a, r);  // equal infinities: inf - inf would be NaN
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A, A& da, A& db) {
    da = dy / (A(1) + simd_math::exp(b - a));
    db = dy / (A(1) + simd_math::exp(a - b));
  }
};
struct XlogyMath {
  static constexpr BinaryKind kKind = BinaryKind::xlogy;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {  // (selects: as logaddexp's)
    return simd_math::select(binary_fn::isnan(b), b, simd_math::select(a == A(0), A(0), a * simd_math::log(b)));
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A, A& da, A& db) {
    // PyTorch: xlogy(dout, b), masked to 0 where a == 0 and b <= 0.
    if (a == A(0) && b <= A(0)) {
      da = A(0);
    } else {
      da = binary_fn::isnan(b) ? b : (dy == A(0) ? A(0) : dy * std::log(b));
    }
    db = dy * a / b;
  }
};

// ---------------------------------------------------------------------------------------------
// extremes

struct MaximumMath : ArithmeticCost {  // NaN propagates; a tie splits the gradient
  static constexpr BinaryKind kKind = BinaryKind::maximum;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers_and_bool;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    if (binary_fn::isnan(a)) return a;
    if (binary_fn::isnan(b)) return b;
    return a < b ? b : a;
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A, A& da, A& db) {
    const A g = a == b ? dy / A(2) : dy;
    da = a < b ? A(0) : g;
    db = a > b ? A(0) : g;
  }
};
struct MinimumMath : ArithmeticCost {
  static constexpr BinaryKind kKind = BinaryKind::minimum;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers_and_bool;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    if (binary_fn::isnan(a)) return a;
    if (binary_fn::isnan(b)) return b;
    return b < a ? b : a;
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A, A& da, A& db) {
    const A g = a == b ? dy / A(2) : dy;
    da = a > b ? A(0) : g;
    db = a < b ? A(0) : g;
  }
};
struct FmaxMath : ArithmeticCost {  // NaN ignored; a tie sends the gradient to a
  static constexpr BinaryKind kKind = BinaryKind::fmax;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers_and_bool;  // (maximum's: no NaN)
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    if constexpr (std::is_integral_v<A>)
      return a < b ? b : a;
    else
      return std::fmax(a, b);
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A, A& da, A& db) {
    const bool to_a = a >= b || binary_fn::isnan(b);
    da = to_a ? dy : A(0);
    db = to_a ? A(0) : dy;
  }
};
struct FminMath : ArithmeticCost {
  static constexpr BinaryKind kKind = BinaryKind::fmin;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers_and_bool;  // (maximum's: no NaN)
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    if constexpr (std::is_integral_v<A>)
      return b < a ? b : a;
    else
      return std::fmin(a, b);
  }
  template <class A>
  BARACUDA_HD static void backward(A dy, A a, A b, A, A& da, A& db) {
    const bool to_a = a <= b || binary_fn::isnan(b);
    da = to_a ? dy : A(0);
    db = to_a ? A(0) : dy;
  }
};

// ---------------------------------------------------------------------------------------------
// predicates: out is bool (the functors give 1 or 0 in the compute type; the store converts it)

// The predicate kinds (common/elementwise.hpp's Predicate): no backward; the launchers store bool.
#define BARACUDA_BINARY_PREDICATE(Name, kind, expression)                        \
  struct Name : Predicate {                                                      \
    static constexpr BinaryKind kKind = BinaryKind::kind;                        \
    static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers_and_bool; \
    template <class A>                                                           \
    BARACUDA_HD static A forward(A a, A b, A) {                                  \
      return (expression) ? A(1) : A(0);                                         \
    }                                                                            \
  };
BARACUDA_BINARY_PREDICATE(EqMath, eq, a == b)
BARACUDA_BINARY_PREDICATE(NeMath, ne, a != b)
BARACUDA_BINARY_PREDICATE(LtMath, lt, a < b)
BARACUDA_BINARY_PREDICATE(LeMath, le, a <= b)
BARACUDA_BINARY_PREDICATE(GtMath, gt, a > b)
BARACUDA_BINARY_PREDICATE(GeMath, ge, a >= b)
BARACUDA_BINARY_PREDICATE(LogicalAndMath, logical_and, a != A(0) && b != A(0))
BARACUDA_BINARY_PREDICATE(LogicalOrMath, logical_or, a != A(0) || b != A(0))
BARACUDA_BINARY_PREDICATE(LogicalXorMath, logical_xor, (a != A(0)) != (b != A(0)))
#undef BARACUDA_BINARY_PREDICATE

// ---------------------------------------------------------------------------------------------
// bitwise: integers and bool alone (bool's and / or / xor are the logical ones), no gradient

struct Bitwise {
  static constexpr bool kFloats = false;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers_and_bool;
};
struct BitwiseAndMath : Bitwise {
  static constexpr BinaryKind kKind = BinaryKind::bitwise_and;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    return static_cast<A>(a & b);
  }
};
struct BitwiseOrMath : Bitwise {
  static constexpr BinaryKind kKind = BinaryKind::bitwise_or;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    return static_cast<A>(a | b);
  }
};
struct BitwiseXorMath : Bitwise {
  static constexpr BinaryKind kKind = BinaryKind::bitwise_xor;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    return static_cast<A>(a ^ b);
  }
};
// Shifts by b bits, PyTorch's rules past the width: a shift by a negative count or by at least the
// compute type's width gives 0 to the left and the sign (0 or -1) to the right. i8 / u8 / i32 shift
// in int32: past their own width the stored result is already 0 or the sign (u8 >> is logical, its
// values being non-negative).
struct Shift {
  static constexpr bool kFloats = false;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static bool past_width(A b) {
    return b < A(0) || b >= A(8 * sizeof(A));
  }
};
struct ShiftLeftMath : Shift {
  static constexpr BinaryKind kKind = BinaryKind::shift_left;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    return past_width(b) ? A(0) : static_cast<A>(static_cast<std::make_unsigned_t<A>>(a) << b);
  }
};
struct ShiftRightMath : Shift {
  static constexpr BinaryKind kKind = BinaryKind::shift_right;
  template <class A>
  BARACUDA_HD static A forward(A a, A b, A) {
    return past_width(b) ? (a < A(0) ? A(-1) : A(0)) : static_cast<A>(a >> b);  // arithmetic (C++20)
  }
};

// The kinds by translation unit of the CPU backend (src/cpu/binary/: one file per group; CUDA compiles
// each kind at select).
using BinaryArithMaths =
    std::tuple<AddMath, SubMath, MulMath, DivMath, DivFloorMath, DivTruncMath, RemainderMath, FmodMath, CopysignMath>;
using BinaryTranscendentalMaths = std::tuple<PowMath, Atan2Math, HypotMath, LogaddexpMath, XlogyMath>;
using BinaryExtremeMaths = std::tuple<MaximumMath, MinimumMath, FmaxMath, FminMath>;
using BinaryPredicateMaths =
    std::tuple<EqMath, NeMath, LtMath, LeMath, GtMath, GeMath, LogicalAndMath, LogicalOrMath, LogicalXorMath>;
using BinaryBitwiseMaths = std::tuple<BitwiseAndMath, BitwiseOrMath, BitwiseXorMath, ShiftLeftMath, ShiftRightMath>;
using BinaryGroups = std::tuple<BinaryArithMaths, BinaryTranscendentalMaths, BinaryExtremeMaths, BinaryPredicateMaths,
                                BinaryBitwiseMaths>;
inline constexpr int kBinaryGroupCount = static_cast<int>(std::tuple_size_v<BinaryGroups>);
// Their indices in BinaryGroups (each backend's translation unit of a group instantiates its own).
enum BinaryGroupIndex : int { kBinaryArith, kBinaryTranscendental, kBinaryExtreme, kBinaryPredicate, kBinaryBitwise };

// The functors the elementwise launchers run.
// (a, b) -> out; swapped: the inputs are (b, a) (mixed dtypes put the narrower operand first, where
// the launchers load it as a type of its own).
// k16: kUses16BitMath (forward_of: common/math16.hpp).
template <class Math, class Acc_, bool k16 = false>
struct BinaryForward {
  using Acc = Acc_;
  static constexpr int kIn = 2, kOut = 1;
  static constexpr ElementCost kCost = element_cost<Math>();
  Acc alpha;
  bool swapped = false;
  // The operands picked by simd_math::select (bits for f32 on the host): with a ternary GCC loaded
  // through a pointer it selected, and the host's f32 loops of logaddexp / xlogy stayed scalar (1M
  // elements: 38.8 ms, 4.6 ms selected).
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    const Acc a = simd_math::select(swapped, x[1], x[0]), b = simd_math::select(swapped, x[0], x[1]);
    y[0] = forward_of<Math, k16>(a, b, alpha);
  }
};
// (tensor) -> out, the other operand a scalar: f(scalar, x) when scalar_is_a, else f(x, scalar).
template <class Math, class Acc_, bool k16 = false>
struct BinaryScalarForward {
  using Acc = Acc_;
  static constexpr int kIn = 1, kOut = 1;
  static constexpr ElementCost kCost = element_cost<Math>();
  Acc alpha, scalar;
  bool scalar_is_a;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {  // (selected: as BinaryForward's)
    y[0] = forward_of<Math, k16>(simd_math::select(scalar_is_a, scalar, x[0]),
                                 simd_math::select(scalar_is_a, x[0], scalar), alpha);
  }
};
// The gradients' functors read (dout, a, b), or dout alone where the kind's gradient needs no more
// (gradient_inputs<Math>()): a and b are then 0 to the Math, which does not read them.
template <class Acc, int kIn>
BARACUDA_HD Acc operand_of(const Acc (&x)[kIn], int k) {
  return kIn == 3 ? x[k] : Acc(0);
}
// (dout[, a, b]) -> (da, db)
template <class Math, class Acc_, int kIn_ = gradient_inputs<Math>()>
struct BinaryGradients {
  using Acc = Acc_;
  static constexpr int kIn = kIn_, kOut = 2;
  Acc alpha;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    Math::backward(x[0], operand_of(x, 1), operand_of(x, 2), alpha, y[0], y[1]);
  }
};
// (dout[, a, b]) -> da (of_b false) or db (of_b true)
template <class Math, class Acc_, int kIn_ = gradient_inputs<Math>()>
struct BinaryGradient {
  using Acc = Acc_;
  static constexpr int kIn = kIn_, kOut = 1;
  Acc alpha;
  bool of_b;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    Acc da, db;
    Math::backward(x[0], operand_of(x, 1), operand_of(x, 2), alpha, da, db);
    y[0] = of_b ? db : da;
  }
};
// (dout[, tensor]) -> the tensor's gradient, the other operand a scalar (see BinaryScalarForward); the
// tensor is read only where the kind's gradient needs it (gradient_inputs).
template <class Math, class Acc_, int kIn_ = gradient_inputs<Math>() == 3 ? 2 : 1>
struct BinaryScalarGradient {
  using Acc = Acc_;
  static constexpr int kIn = kIn_, kOut = 1;
  Acc alpha, scalar;
  bool scalar_is_a;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    const Acc tensor = kIn == 2 ? x[kIn - 1] : Acc(0);
    Acc da, db;
    if (scalar_is_a) {
      Math::backward(x[0], scalar, tensor, alpha, da, db);
      y[0] = db;
    } else {
      Math::backward(x[0], tensor, scalar, alpha, da, db);
      y[0] = da;
    }
  }
};

// The gradient of an operand broadcast along some dims, summed over them (a BroadcastReduction body,
// common/broadcast_reduction.hpp): (dout[, a, b]) -> the other operand's gradient, written where its
// view has data; the term is db's when of_b, else da's.
template <class Math, class Acc_, int kIn_ = gradient_inputs<Math>()>
struct BinaryReducedGradient {
  using Acc = Acc_;
  static constexpr int kIn = kIn_, kOut = 1;
  Acc alpha;
  bool of_b;
  BARACUDA_HD Acc operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    Acc da, db;
    Math::backward(x[0], operand_of(x, 1), operand_of(x, 2), alpha, da, db);
    y[0] = of_b ? da : db;
    return of_b ? db : da;
  }
};

}  // namespace baracuda::detail

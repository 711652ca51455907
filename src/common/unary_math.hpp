#pragma once
// The math of the unary family, written once for both backends. A kind is one Math struct:
//   kKind                                      its UnaryKind
//   forward(x, p)       -> f(x)                in the compute type A (f32 for 16-bit and f32, f64)
//   backward(dout, x, p) -> dout * f'(x)        as PyTorch's autograd gives it (unary.hpp lists the
//                                              points where f is not differentiable)
// where p holds the descriptor's parameters in A; exp, expm1, log, log1p, erf and tanh are
// simd_math's (the host's f32 loops vectorize them). Every kernel shape of both backends runs every
// Math; the groups at the end split the kinds over translation units (one per group and backend) so
// that the build parallelizes.
#include "baracuda/ops/unary_kind.hpp"
#include "common/arith16.hpp"
#include "common/dispatch.hpp"
#include "common/elementwise.hpp"
#include "common/math16.hpp"
#include "common/portable.hpp"
#include "common/simd_math.hpp"
#if !defined(__CUDACC_RTC__)
#include "baracuda/ops/unary.hpp"
#endif

namespace baracuda::detail {

template <class A>
struct UnaryParams {
  A negative_slope, alpha, beta, threshold, min_val, max_val;
};

#if !defined(__CUDACC_RTC__)
template <class A>
UnaryParams<A> unary_params(const UnaryParameters& p) {
  if constexpr (std::is_integral_v<A>) return {};  // no kind of an integer dtype reads one
  return {static_cast<A>(p.negative_slope), static_cast<A>(p.alpha),   static_cast<A>(p.beta),
          static_cast<A>(p.threshold),      static_cast<A>(p.min_val), static_cast<A>(p.max_val)};
}
#endif

namespace unary_fn {

inline constexpr double kPi = 3.14159265358979323846;
inline constexpr double kLn2 = 0.69314718055994530942;
inline constexpr double kLn10 = 2.30258509299404568402;
inline constexpr double kTwoOverSqrtPi = 1.12837916709551257390;  // erf' (0)
inline constexpr double kSqrtPiOverTwo = 0.88622692545275801365;  // erfinv' (0)
inline constexpr double kSqrtHalf = 0.70710678118654752440;       // 1 / sqrt(2)
inline constexpr double kInvSqrtTwoPi = 0.39894228040143267794;   // the normal density at 0
inline constexpr double kSqrtTwoOverPi = 0.79788456080286535588;  // gelu_tanh's beta
inline constexpr double kGeluTanhKappa = 0.044715;                // gelu_tanh's cubic coefficient
inline constexpr double kSeluScale = 1.0507009873554804934193349852946;
inline constexpr double kSeluAlpha = 1.6732632423543772848170429916717;

template <class A>
BARACUDA_HD A sgn(A x) {  // -1, 0 or 1; 0 for NaN (PyTorch's sign)
  return static_cast<A>((A(0) < x) - (x < A(0)));
}

template <class A>
BARACUDA_HD A rsqrt(A x) {
#if defined(__CUDA_ARCH__)
  return ::rsqrt(x);
#else
  return A(1) / std::sqrt(x);
#endif
}

template <class A>
BARACUDA_HD A sigmoid(A x) {
  return A(1) / (A(1) + simd_math::exp(-x));
}

// sigmoid for a 16-bit output on the GPU: exp and the reciprocal by the special function unit
// (ex2.approx, rcp.approx: a few f32 ulp, and no branch to the IEEE division's slow path, which kept
// the compiler from overlapping the elements of a thread), far inside a 16-bit ulp (2^-11 f16, 2^-8
// bf16). exp(-|x|) keeps the denominator in (1, 2], where rcp.approx holds its accuracy; exp flushes
// below 2^-126, so |x| > 87 gives 0 or 1 exactly. (The host keeps sigmoid: never called there.)
BARACUDA_HD float exp_for16(float x) {
#if defined(__CUDA_ARCH__)
  return __expf(x);
#else
  return std::exp(x);
#endif
}
BARACUDA_HD float sigmoid_for16(float x) {
#if defined(__CUDA_ARCH__)
  const float t = exp_for16(-fabsf(x));
  const float r = __fdividef(1.0f, 1.0f + t);
#else
  const float t = std::exp(-std::fabs(x));
  const float r = 1.0f / (1.0f + t);
#endif
  return x >= 0.0f ? r : t * r;
}

// The standard normal distribution function Phi(x) for a 16-bit output on the GPU, with exp(-x^2 / 2),
// which the density shares. For a = |x|, Phi(-a) = exp(-a^2 / 2) R(a), R(a) = P(a) / Q(a) a (3, 4)
// rational fitted to Phi(-a) exp(a^2 / 2) on [0, 14] by scripts/fit_normal_for16.py (within 7e-7
// relative in f32; an f16 ulp is 2^-11, a bf16 one 2^-8; bench/NOTES.md, "gelu for 16-bit outputs"),
// and Phi(x) = 1 - Phi(-a) for x >= 0 (Phi(-a) <= 1/2: no cancellation). Two special-function
// operations (ex2, rcp) and seven FMAs, where the f32 erf is a rational with an IEEE division.
// a is taken up to 15, where exp(-a^2 / 2) is 0 in f32, subnormals or not (past 14, Phi(-a) < 1e-44):
// +-inf give Phi 1 and 0, so gelu(-inf) is NaN as x Phi(x) in f32 (and PyTorch's) is; NaN gives 1,
// and the products with x keep the NaN.
struct NormalFor16 {
  float cdf;       // Phi(x)
  float gaussian;  // exp(-x^2 / 2)
};
BARACUDA_HD NormalFor16 normal_for16(float x) {
  const float a = fminf(fabsf(x), 15.0f);
  const float gaussian = exp_for16(-0.5f * a * a);
  const float p = fmaf(fmaf(fmaf(0.017047278f, a, 0.119529257f), a, 0.361966056f), a, 0.499999812f);
  const float q = fmaf(fmaf(fmaf(fmaf(0.0427361958f, a, 0.299412656f), a, 0.953426736f), a, 1.52179785f), a, 1.0f);
#if defined(__CUDA_ARCH__)
  const float lower = gaussian * __fdividef(p, q);
#else
  const float lower = gaussian * (p / q);
#endif
  return {x < 0.0f ? lower : 1.0f - lower, gaussian};
}

#if !defined(__CUDA_ARCH__)
// erfinv on the host (the C library has none): a single-precision approximation (M. Giles,
// "Approximating the erfinv function", 2010) refined by Newton steps: on erf for |y| <= 1/2, and
// for |y| > 1/2 on log(erfc(x)) = log(1 - |y|) (1 - |y| is exact there), whose steps stay large
// where erfc is tiny: the first guess is far off past the fit's range (|y| near 1 - 2^-53), and
// steps on erfc itself crawl there. Double precision up to 1 - 2^-53.
inline double erfinv_host(double y) {
  if (!(y > -1.0 && y < 1.0)) return y == 1.0 ? INFINITY : (y == -1.0 ? -INFINITY : NAN);
  if (y < 0) return -erfinv_host(-y);
  double w = -std::log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * y;
  if (y <= 0.5) {
    for (int i = 0; i < 2; ++i) x -= (std::erf(x) - y) / (kTwoOverSqrtPi * std::exp(-x * x));
  } else {
    const double log_tail = std::log(1.0 - y);
    for (int i = 0; i < 4; ++i) {
      const double tail = std::erfc(x);
      x += (std::log(tail) - log_tail) * tail / (kTwoOverSqrtPi * std::exp(-x * x));
    }
  }
  return x;
}
#endif

template <class A>
BARACUDA_HD A erfinv(A x) {
#if defined(__CUDA_ARCH__)
  return ::erfinv(x);
#else
  return static_cast<A>(erfinv_host(static_cast<double>(x)));
#endif
}

// The derivative of lgamma (PyTorch's digamma: -inf / +inf at -0 / +0 as the sign of 0 says, NaN
// at the negative integers): reflection below 0, the recurrence up to 10, then the asymptotic series.
template <class A>
BARACUDA_HD A digamma(A x) {
  if (x == A(0)) return std::copysign(A(INFINITY), -x);
  A result = 0;
  if (x < A(0)) {
    const A whole = std::trunc(x);
    if (x == whole) return A(NAN);
    result = -A(kPi) / std::tan(A(kPi) * (x - whole));  // tan(pi x) from the fraction: exact argument
    x = A(1) - x;
  }
  while (x < A(10)) {
    result -= A(1) / x;
    x += A(1);
  }
  const A z = A(1) / (x * x);
  const A series =
      z *
      (A(1.0 / 12) -
       z * (A(1.0 / 120) -
            z * (A(1.0 / 252) - z * (A(1.0 / 240) - z * (A(1.0 / 132) - z * (A(691.0 / 32760) - z * A(1.0 / 12)))))));
  return result + simd_math::log(x) - A(0.5) / x - series;
}

}  // namespace unary_fn

// ---------------------------------------------------------------------------------------------
// math

// The kinds that also take integers (forward only): abs, neg, sign, square (their results wrap), relu,
// and floor, ceil, round, trunc (each the identity on an integer, as PyTorch's).
struct AbsMath : ArithmeticCost {
  static constexpr UnaryKind kKind = UnaryKind::abs;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    if constexpr (std::is_integral_v<A>)
      return x < A(0) ? wrapping::neg(x) : x;
    else
      return std::fabs(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy * unary_fn::sgn(x);  // abs'(0) = 0
  }
};
struct NegMath : ArithmeticCost {
  static constexpr UnaryKind kKind = UnaryKind::neg;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return wrapping::neg(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A, const UnaryParams<A>&) {
    return -dy;
  }
};
// The kinds that are constant between their jumps (sign, floor, ceil, round, trunc): a zero
// gradient everywhere, as PyTorch's autograd gives.
struct PiecewiseConstant {
  template <class A>
  BARACUDA_HD static A backward(A, A, const UnaryParams<A>&) {
    return A(0);
  }
};
struct SignMath : PiecewiseConstant, ArithmeticCost {
  static constexpr UnaryKind kKind = UnaryKind::sign;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return unary_fn::sgn(x);
  }
};
struct ReciprocalMath : SpecialCost {
  static constexpr UnaryKind kKind = UnaryKind::reciprocal;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return A(1) / x;
  }
  BARACUDA_HD static float forward16(float x, const UnaryParams<float>&) { return arith16::div(1.0f, x); }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    const A r = A(1) / x;
    return -dy * r * r;
  }
};
struct SquareMath : ArithmeticCost {
  static constexpr UnaryKind kKind = UnaryKind::square;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return wrapping::mul(x, x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy * A(2) * x;
  }
};
struct SqrtMath : SpecialCost {
  static constexpr UnaryKind kKind = UnaryKind::sqrt;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::sqrt(x);
  }
  BARACUDA_HD static float forward16(float x, const UnaryParams<float>&) { return arith16::sqrt(x); }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy / (A(2) * std::sqrt(x));
  }
};
struct RsqrtMath : SpecialCost {
  static constexpr UnaryKind kKind = UnaryKind::rsqrt;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return unary_fn::rsqrt(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    const A r = unary_fn::rsqrt(x);
    return A(-0.5) * dy * r * r * r;
  }
};
struct ExpMath : SpecialCost {
  static constexpr UnaryKind kKind = UnaryKind::exp;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return simd_math::exp(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy * simd_math::exp(x);
  }
};
struct Exp2Math {
  static constexpr UnaryKind kKind = UnaryKind::exp2;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::exp2(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy * std::exp2(x) * A(unary_fn::kLn2);
  }
};
struct Expm1Math {
  static constexpr UnaryKind kKind = UnaryKind::expm1;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return simd_math::expm1(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy * simd_math::exp(x);  // expm1(x) + 1, without the cancellation for x << 0
  }
};
struct LogMath {
  static constexpr UnaryKind kKind = UnaryKind::log;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return simd_math::log(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy / x;
  }
};
struct Log2Math {
  static constexpr UnaryKind kKind = UnaryKind::log2;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::log2(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy / (x * A(unary_fn::kLn2));
  }
};
struct Log10Math {
  static constexpr UnaryKind kKind = UnaryKind::log10;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::log10(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy / (x * A(unary_fn::kLn10));
  }
};
struct Log1pMath {
  static constexpr UnaryKind kKind = UnaryKind::log1p;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return simd_math::log1p(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy / (x + A(1));
  }
};
struct SinMath {
  static constexpr UnaryKind kKind = UnaryKind::sin;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::sin(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy * std::cos(x);
  }
};
struct CosMath {
  static constexpr UnaryKind kKind = UnaryKind::cos;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::cos(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return -dy * std::sin(x);
  }
};
struct TanMath {
  static constexpr UnaryKind kKind = UnaryKind::tan;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::tan(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    const A t = std::tan(x);
    return dy * (A(1) + t * t);
  }
};
struct AsinMath {
  static constexpr UnaryKind kKind = UnaryKind::asin;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::asin(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy * unary_fn::rsqrt((A(1) - x) * (A(1) + x));
  }
};
struct AcosMath {
  static constexpr UnaryKind kKind = UnaryKind::acos;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::acos(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return -dy * unary_fn::rsqrt((A(1) - x) * (A(1) + x));
  }
};
struct AtanMath {
  static constexpr UnaryKind kKind = UnaryKind::atan;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::atan(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy / (A(1) + x * x);
  }
};
struct SinhMath {
  static constexpr UnaryKind kKind = UnaryKind::sinh;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::sinh(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy * std::cosh(x);
  }
};
struct CoshMath {
  static constexpr UnaryKind kKind = UnaryKind::cosh;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::cosh(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy * std::sinh(x);
  }
};
struct TanhMath {
  static constexpr UnaryKind kKind = UnaryKind::tanh;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return simd_math::tanh(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    const A t = simd_math::tanh(x);
    return dy * (A(1) - t * t);
  }
};
struct AsinhMath {
  static constexpr UnaryKind kKind = UnaryKind::asinh;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::asinh(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy * unary_fn::rsqrt(x * x + A(1));
  }
};
struct AcoshMath {
  static constexpr UnaryKind kKind = UnaryKind::acosh;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::acosh(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy * unary_fn::rsqrt(x * x - A(1));  // PyTorch's: +inf at +-1
  }
};
struct AtanhMath {
  static constexpr UnaryKind kKind = UnaryKind::atanh;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::atanh(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy / ((A(1) - x) * (A(1) + x));
  }
};
struct ErfMath {
  static constexpr UnaryKind kKind = UnaryKind::erf;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return simd_math::erf(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy * A(unary_fn::kTwoOverSqrtPi) * simd_math::exp(-x * x);
  }
};
struct ErfcMath {
  static constexpr UnaryKind kKind = UnaryKind::erfc;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return std::erfc(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return -dy * A(unary_fn::kTwoOverSqrtPi) * simd_math::exp(-x * x);
  }
};
struct ErfinvMath {
  static constexpr UnaryKind kKind = UnaryKind::erfinv;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return unary_fn::erfinv(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    const A y = unary_fn::erfinv(x);
    return dy * A(unary_fn::kSqrtPiOverTwo) * simd_math::exp(y * y);
  }
};
struct LgammaMath {
  static constexpr UnaryKind kKind = UnaryKind::lgamma;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
#if defined(__CUDA_ARCH__)
    return lgamma(x);
#else
    // The reentrant form: the C library's lgamma writes the global signgam, a data race between
    // the CPU's OpenMP threads.
    int sign = 0;
    if constexpr (std::is_same_v<A, float>)
      return lgammaf_r(x, &sign);
    else
      return lgamma_r(x, &sign);
#endif
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return dy * unary_fn::digamma(x);
  }
};
struct FloorMath : PiecewiseConstant, ArithmeticCost {
  static constexpr UnaryKind kKind = UnaryKind::floor;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    if constexpr (std::is_integral_v<A>)
      return x;
    else
      return std::floor(x);
  }
};
struct CeilMath : PiecewiseConstant, ArithmeticCost {
  static constexpr UnaryKind kKind = UnaryKind::ceil;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    if constexpr (std::is_integral_v<A>)
      return x;
    else
      return std::ceil(x);
  }
};
struct RoundMath : PiecewiseConstant, ArithmeticCost {
  static constexpr UnaryKind kKind = UnaryKind::round;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    if constexpr (std::is_integral_v<A>)
      return x;
    else
      return std::rint(x);  // the default rounding mode: ties to even
  }
};
struct TruncMath : PiecewiseConstant, ArithmeticCost {
  static constexpr UnaryKind kKind = UnaryKind::trunc;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    if constexpr (std::is_integral_v<A>)
      return x;
    else
      return std::trunc(x);
  }
};
struct FracMath : ArithmeticCost {
  static constexpr UnaryKind kKind = UnaryKind::frac;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return x - std::trunc(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A, const UnaryParams<A>&) {
    return dy;
  }
};

// ---------------------------------------------------------------------------------------------
// activations (comparisons are written so that NaN propagates through the forward, as PyTorch's)

struct ReluMath : ArithmeticCost {
  static constexpr UnaryKind kKind = UnaryKind::relu;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return x < A(0) ? A(0) : x;
  }
  template <class A>
  // As PyTorch's threshold_backward: 0 where x <= 0, dout elsewhere (NaN passes the gradient on).
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return x <= A(0) ? A(0) : dy;
  }
};
// hardtanh's clamp and gradient, shared by relu6 (hardtanh(x, 0, 6)).
template <class A>
BARACUDA_HD A hardtanh_forward(A x, A lo, A hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}
template <class A>
BARACUDA_HD A hardtanh_backward(A dy, A x, A lo, A hi) {
  return (x <= lo || x >= hi) ? A(0) : dy;
}
struct Relu6Math : ArithmeticCost {
  static constexpr UnaryKind kKind = UnaryKind::relu6;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return hardtanh_forward(x, A(0), A(6));
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return hardtanh_backward(dy, x, A(0), A(6));
  }
};
struct LeakyReluMath : ArithmeticCost {
  static constexpr UnaryKind kKind = UnaryKind::leaky_relu;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>& p) {
    return x > A(0) ? x : x * p.negative_slope;
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>& p) {
    return x > A(0) ? dy : dy * p.negative_slope;
  }
};
struct EluMath {
  static constexpr UnaryKind kKind = UnaryKind::elu;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>& p) {
    return simd_math::select(x > A(0), x, p.alpha * simd_math::expm1(x));
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>& p) {
    return simd_math::select(x <= A(0), dy * p.alpha * simd_math::exp(x), dy);
  }
};
struct SeluMath {
  static constexpr UnaryKind kKind = UnaryKind::selu;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return A(unary_fn::kSeluScale) * simd_math::select(x > A(0), x, A(unary_fn::kSeluAlpha) * simd_math::expm1(x));
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return simd_math::select(x <= A(0), dy * A(unary_fn::kSeluScale) * A(unary_fn::kSeluAlpha) * simd_math::exp(x),
                             dy * A(unary_fn::kSeluScale));
  }
};
struct CeluMath {
  static constexpr UnaryKind kKind = UnaryKind::celu;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>& p) {
    return simd_math::select(x > A(0), x, p.alpha * simd_math::expm1(x / p.alpha));
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>& p) {
    return simd_math::select(x <= A(0), dy * simd_math::exp(x / p.alpha), dy);
  }
};
struct GeluMath {  // x Phi(x), Phi the standard normal's distribution function
  static constexpr UnaryKind kKind = UnaryKind::gelu;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return x * A(0.5) * (A(1) + simd_math::erf(x * A(unary_fn::kSqrtHalf)));
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    const A cdf = A(0.5) * (A(1) + simd_math::erf(x * A(unary_fn::kSqrtHalf)));
    const A pdf = A(unary_fn::kInvSqrtTwoPi) * simd_math::exp(A(-0.5) * x * x);
    return dy * (cdf + x * pdf);
  }
  // 16-bit outputs on the GPU: Phi and the density's exp from one normal_for16 (no erff).
  BARACUDA_HD static float forward16(float x, const UnaryParams<float>&) { return x * unary_fn::normal_for16(x).cdf; }
  BARACUDA_HD static float backward16(float dy, float x, const UnaryParams<float>&) {
    const unary_fn::NormalFor16 n = unary_fn::normal_for16(x);
    return dy * (n.cdf + x * (float(unary_fn::kInvSqrtTwoPi) * n.gaussian));
  }
};
struct GeluTanhMath {  // x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2
  static constexpr UnaryKind kKind = UnaryKind::gelu_tanh;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    const A inner = A(unary_fn::kSqrtTwoOverPi) * (x + A(unary_fn::kGeluTanhKappa) * x * x * x);
    return A(0.5) * x * (A(1) + simd_math::tanh(inner));
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    const A x_sq = x * x;
    const A inner = A(unary_fn::kSqrtTwoOverPi) * (x + A(unary_fn::kGeluTanhKappa) * x_sq * x);
    const A t = simd_math::tanh(inner);
    const A d_inner = A(unary_fn::kSqrtTwoOverPi) * (A(1) + A(3 * unary_fn::kGeluTanhKappa) * x_sq);
    // Where tanh has saturated the second term is 0, also where x^3 overflowed (0 * inf would be NaN).
    const A sech2 = A(1) - t * t;
    return dy * (A(0.5) * (A(1) + t) + (sech2 == A(0) ? A(0) : A(0.5) * x * sech2 * d_inner));
  }
};
struct SiluMath : SpecialCost {
  static constexpr UnaryKind kKind = UnaryKind::silu;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return x / (A(1) + simd_math::exp(-x));
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    const A s = unary_fn::sigmoid(x);
    return dy * s * (A(1) + x * (A(1) - s));
  }
  BARACUDA_HD static float forward16(float x, const UnaryParams<float>&) { return x * unary_fn::sigmoid_for16(x); }
  BARACUDA_HD static float backward16(float dy, float x, const UnaryParams<float>&) {
    const float s = unary_fn::sigmoid_for16(x);
    return dy * s * (1.0f + x * (1.0f - s));
  }
};
struct MishMath {  // x tanh(softplus(x))
  static constexpr UnaryKind kKind = UnaryKind::mish;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return x * simd_math::tanh(simd_math::log1p(simd_math::exp(x)));
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    const A s = unary_fn::sigmoid(x);
    const A t = simd_math::tanh(simd_math::log1p(simd_math::exp(x)));
    return dy * (t + x * s * (A(1) - t * t));
  }
};
struct SoftplusMath {
  static constexpr UnaryKind kKind = UnaryKind::softplus;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>& p) {
    const A bx = x * p.beta;
    return simd_math::select(bx > p.threshold, x, simd_math::log1p(simd_math::exp(bx)) / p.beta);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>& p) {
    const A bx = x * p.beta;
    const A z = simd_math::exp(bx);
    return simd_math::select(bx > p.threshold, dy, dy * z / (z + A(1)));
  }
};
struct SoftsignMath : SpecialCost {
  static constexpr UnaryKind kKind = UnaryKind::softsign;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return x / (A(1) + std::fabs(x));
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    const A d = A(1) + std::fabs(x);
    return dy / (d * d);
  }
};
struct SigmoidMath : SpecialCost {
  static constexpr UnaryKind kKind = UnaryKind::sigmoid;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return unary_fn::sigmoid(x);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    const A s = unary_fn::sigmoid(x);
    return dy * (A(1) - s) * s;
  }
  BARACUDA_HD static float forward16(float x, const UnaryParams<float>&) { return unary_fn::sigmoid_for16(x); }
  BARACUDA_HD static float backward16(float dy, float x, const UnaryParams<float>&) {
    const float s = unary_fn::sigmoid_for16(x);
    return dy * (1.0f - s) * s;
  }
};
struct LogsigmoidMath {  // min(x, 0) - log1p(exp(-|x|)): no overflow either way
  static constexpr UnaryKind kKind = UnaryKind::logsigmoid;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return (x < A(0) ? x : A(0)) - simd_math::log1p(simd_math::exp(-std::fabs(x)));
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    const A z = simd_math::exp(-std::fabs(x));
    return x < A(0) ? dy * (A(1) - z / (A(1) + z)) : dy * (z / (A(1) + z));
  }
};
struct HardtanhMath : ArithmeticCost {
  static constexpr UnaryKind kKind = UnaryKind::hardtanh;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>& p) {
    return hardtanh_forward(x, p.min_val, p.max_val);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>& p) {
    return hardtanh_backward(dy, x, p.min_val, p.max_val);
  }
};
struct HardsigmoidMath : ArithmeticCost {  // clamp(x + 3, 0, 6) / 6
  static constexpr UnaryKind kKind = UnaryKind::hardsigmoid;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return hardtanh_forward(x + A(3), A(0), A(6)) / A(6);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    return (x > A(-3) && x < A(3)) ? dy / A(6) : A(0);
  }
};
struct HardswishMath : ArithmeticCost {  // x clamp(x + 3, 0, 6) / 6
  static constexpr UnaryKind kKind = UnaryKind::hardswish;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    return x * hardtanh_forward(x + A(3), A(0), A(6)) / A(6);
  }
  template <class A>
  BARACUDA_HD static A backward(A dy, A x, const UnaryParams<A>&) {
    if (x < A(-3)) return A(0);
    return x <= A(3) ? dy * (x / A(3) + A(0.5)) : dy;
  }
};

struct BitwiseNotMath : ArithmeticCost {  // integers and bool alone; no gradient
  static constexpr UnaryKind kKind = UnaryKind::bitwise_not;
  static constexpr bool kFloats = false;
  static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers_and_bool;
  template <class A>
  BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {
    if constexpr (std::is_same_v<A, bool>)
      return !x;
    else
      return static_cast<A>(~x);
  }
};

// predicates: out is bool (common/elementwise.hpp's Predicate), on every dtype. Written on
// comparisons and the sign bit so that the host's f32 loops vectorize them; an integer is finite and
// never NaN.
namespace unary_fn {
template <class A>
BARACUDA_HD bool is_inf(A x) {
  if constexpr (std::is_integral_v<A>)
    return false;
  else
    return std::fabs(x) == std::numeric_limits<A>::infinity();
}
template <class A>
BARACUDA_HD bool is_finite(A x) {
  if constexpr (std::is_integral_v<A>)
    return true;
  else
    return std::fabs(x) < std::numeric_limits<A>::infinity();
}
template <class A>
BARACUDA_HD bool sign_bit(A x) {
  if constexpr (std::is_integral_v<A>)
    return x < A(0);
  else
    return std::signbit(x);
}
}  // namespace unary_fn
#define BARACUDA_UNARY_PREDICATE(Name, kind, expression)                         \
  struct Name : Predicate {                                                      \
    static constexpr UnaryKind kKind = UnaryKind::kind;                          \
    static constexpr IntegerDTypes kIntegers = IntegerDTypes::integers_and_bool; \
    template <class A>                                                           \
    BARACUDA_HD static A forward(A x, const UnaryParams<A>&) {                   \
      return (expression) ? A(1) : A(0);                                         \
    }                                                                            \
  };
BARACUDA_UNARY_PREDICATE(IsnanMath, isnan, x != x)
BARACUDA_UNARY_PREDICATE(IsinfMath, isinf, unary_fn::is_inf(x))
BARACUDA_UNARY_PREDICATE(IsfiniteMath, isfinite, unary_fn::is_finite(x))
BARACUDA_UNARY_PREDICATE(SignbitMath, signbit, unary_fn::sign_bit(x))
BARACUDA_UNARY_PREDICATE(LogicalNotMath, logical_not, x == A(0))
#undef BARACUDA_UNARY_PREDICATE

// The kinds by translation unit of the CPU backend (src/cpu/unary/: one file per group; CUDA compiles
// each kind at select).
using UnaryBasicMaths = std::tuple<AbsMath, NegMath, SignMath, ReciprocalMath, SquareMath, SqrtMath, RsqrtMath,
                                   FloorMath, CeilMath, RoundMath, TruncMath, FracMath, BitwiseNotMath>;
using UnaryExpLogMaths = std::tuple<ExpMath, Exp2Math, Expm1Math, LogMath, Log2Math, Log10Math, Log1pMath, ErfMath,
                                    ErfcMath, ErfinvMath, LgammaMath>;
using UnaryTrigMaths = std::tuple<SinMath, CosMath, TanMath, AsinMath, AcosMath, AtanMath, SinhMath, CoshMath, TanhMath,
                                  AsinhMath, AcoshMath, AtanhMath>;
using UnaryPiecewiseMaths = std::tuple<ReluMath, Relu6Math, LeakyReluMath, EluMath, SeluMath, CeluMath, HardtanhMath,
                                       HardsigmoidMath, HardswishMath, SoftsignMath>;
using UnarySmoothMaths =
    std::tuple<GeluMath, GeluTanhMath, SiluMath, MishMath, SoftplusMath, SigmoidMath, LogsigmoidMath>;
using UnaryPredicateMaths = std::tuple<IsnanMath, IsinfMath, IsfiniteMath, SignbitMath, LogicalNotMath>;
using UnaryGroups = std::tuple<UnaryBasicMaths, UnaryExpLogMaths, UnaryTrigMaths, UnaryPiecewiseMaths, UnarySmoothMaths,
                               UnaryPredicateMaths>;
inline constexpr int kUnaryGroupCount = static_cast<int>(std::tuple_size_v<UnaryGroups>);
// Their indices in UnaryGroups (each backend's translation unit of a group instantiates its own).
enum UnaryGroupIndex : int { kUnaryBasic, kUnaryExpLog, kUnaryTrig, kUnaryPiecewise, kUnarySmooth, kUnaryPredicate };

// The functors the elementwise launchers run: (x) -> out and (dout, x) -> dx; k16: kUses16BitMath
// (forward_of / backward_of: common/math16.hpp).
template <class Math, class Acc_, bool k16 = false>
struct UnaryForward {
  using Acc = Acc_;
  static constexpr int kIn = 1, kOut = 1;
  static constexpr ElementCost kCost = element_cost<Math>();
  UnaryParams<Acc> p;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const { y[0] = forward_of<Math, k16>(x[0], p); }
};

template <class Math, class Acc_, bool k16 = false>
struct UnaryBackward {
  using Acc = Acc_;
  static constexpr int kIn = 2, kOut = 1;
  UnaryParams<Acc> p;
  BARACUDA_HD void operator()(const Acc (&x)[kIn], Acc (&y)[kOut]) const {
    y[0] = backward_of<Math, k16>(x[0], x[1], p);
  }
};

}  // namespace baracuda::detail

// Unary family: what the op table's random samples cannot reach, on every backend and float dtype.
// Special values (+-0, +-inf, NaN, subnormals, large arguments, the kinks and bounds of the
// piecewise kinds) through every kind, forward and backward, against the f64 reference rounded to the
// dtype (NaN where it is NaN, infinities exactly); runs in place (out = x, dx = dout); partial
// overlaps of an output with an input rejected, naming the output; the SKU names the kind. The host's
// f32 maths (common/simd_math.hpp: exp, log1p, erf) within their documented ulp bounds on dense grids
// against long double, in every instruction set the CPU clones build, and through the CPU plans in f32
// and bf16.
#include <cmath>
#include <cstring>
#include <limits>

#include "common/simd_math.hpp"
#include "harness/reference/unary_reference.hpp"
#include "support/backend.hpp"
#include "support/matches.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::contiguous;
using testing::unwrap;
using testing::with_strides;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<UnaryKind> all_kinds() {
  std::vector<UnaryKind> kinds;
  for (int k = 0; k < kUnaryKindCount; ++k)
    if (unary_kind_takes(static_cast<UnaryKind>(k), DType::f32)) kinds.push_back(static_cast<UnaryKind>(k));
  return kinds;
}
// The kinds with a gradient and an out of x's dtype (all but the predicates).
std::vector<UnaryKind> differentiable_kinds() {
  std::vector<UnaryKind> kinds;
  for (UnaryKind k : all_kinds())
    if (!unary_kind_is_predicate(k)) kinds.push_back(k);
  return kinds;
}

// A view's elements in row-major order.
std::vector<double> values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.at(static_cast<int64_t>(i));
  return v;
}

class UnaryTest : public testing::BackendDTypeTest {
 protected:
  // A subnormal of the dtype.
  double subnormal() const {
    switch (dtype()) {
      case DType::f64:
        return 1e-310;
      case DType::f16:
        return 3e-6;
      default:
        return 1e-39;  // f32 and bf16 share the exponent range
    }
  }
  std::vector<double> specials() const {
    return {0.0,  -0.0,  kInf, -kInf, kNaN, subnormal(), -subnormal(), 1e-30, -1e-30, 0.25, 0.5,
            -0.5, 1,     -1,   1.5,   2,    2.5,         -2.5,         3,     -3,     6,    -6,
            0.99, -0.99, 20,   -20,   88.7, -88.7,       100,          -100,  1e30,   -1e30};
  }
  // The kind's tolerance: lgamma's GPU functions are looser (see tools/harness/rows/unary.cpp).
  double tol(UnaryKind kind) const { return harness::tolerance(dtype()) * (kind == UnaryKind::lgamma ? 100 : 1); }

  Tensor tensor_of(const std::vector<double>& values) {
    Tensor t =
        unwrap(harness::random_tensor(backend(), dtype(), contiguous({static_cast<int64_t>(values.size())}), rng_));
    for (size_t i = 0; i < values.size(); ++i) t.host[i] = harness::quantize(dtype(), values[i]);
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  }
  Tensor output(Shape shape, std::optional<DType> out_dtype = std::nullopt) {
    Tensor t = unwrap(harness::random_tensor(backend(), out_dtype.value_or(dtype()), contiguous(shape), rng_));
    EXPECT_TRUE(harness::poison(t).is_ok());
    return t;
  }

  // out = kind(x) through UnaryPlan, downloaded.
  Tensor forward(UnaryKind kind, const Tensor& x) {
    UnaryDescriptor d;
    d.kind = kind;
    d.dtype = dtype();
    d.shape = x.shape;
    Tensor out = output(x.shape);
    EXPECT_TRUE(unwrap(UnaryPlan::select(stream(), d)).run(stream(), {}, {x.ref(), out.mut()}).is_ok());
    EXPECT_TRUE(out.download().is_ok());
    return out;
  }

  // got against want rounded to the dtype: NaN for NaN, infinities exactly, else within tol.
  ::testing::AssertionResult matches(const Tensor& got, const std::function<double(int64_t)>& want, double tol) {
    for (int64_t i = 0, numel = got.shape.numel(); i < numel; ++i) {
      const double g = got.at(i), w = harness::quantize(dtype(), want(i));
      const bool ok =
          std::isnan(w) ? std::isnan(g) : (std::isinf(w) ? g == w : std::fabs(g - w) <= tol * (1 + std::fabs(w)));
      if (!ok) return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
    }
    return ::testing::AssertionSuccess();
  }
};

// ---------------------------------------------------------------------------------------------
// The host's f32 maths. The bounds docs/OPS.md states: exp and log1p within 1 ulp, the softmax
// family's exp of x <= 0 (fused multiply-adds) within 0.9, erf within 0.51 ulp, |erf| <= 1, erf monotone; the units of
// the exact value's binade (2^-149 for subnormals).

namespace simd = ::baracuda::detail::simd_math;

float f32_of(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
// |got - exact| in units in the last place of exact as an f32; an exact value past the largest f32's
// rounding must come out infinite (0 ulp), and NaN must be NaN.
double ulps(float got, long double exact) {
  if (std::isnan(exact)) return std::isnan(got) ? 0 : kInf;
  if (std::isinf(static_cast<float>(exact))) return got == static_cast<float>(exact) ? 0 : kInf;
  const int binade = exact == 0 ? -126 : std::max(std::ilogb(exact), -126);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - exact) / std::ldexp(1.0L, binade - 23));
}

enum class F32Fn { exp, exp_nonpositive, log1p, erf };
const char* fn_name(F32Fn fn) {
  return fn == F32Fn::exp               ? "exp"
         : fn == F32Fn::exp_nonpositive ? "exp_nonpositive"
         : fn == F32Fn::log1p           ? "log1p"
                                        : "erf";
}
long double exact_of(F32Fn fn, float x) {
  const long double v = x;
  return fn == F32Fn::exp || fn == F32Fn::exp_nonpositive ? std::exp(v)
         : fn == F32Fn::log1p                             ? std::log1p(v)
                                                          : std::erf(v);
}
template <F32Fn kFn>
[[gnu::always_inline]] inline float call(float x) {
  if constexpr (kFn == F32Fn::exp)
    return simd::exp(x);
  else if constexpr (kFn == F32Fn::exp_nonpositive)
    return simd::exp_nonpositive(x);
  else if constexpr (kFn == F32Fn::log1p)
    return simd::log1p(x);
  else
    return simd::erf(x);
}

// The instruction sets BARACUDA_CPU_CLONES builds (cpu/vector_math.hpp), each applying the inlined
// math over a range as the library's clones do (this file builds with -ffp-contract=off, as the
// library: tests/CMakeLists.txt).
enum class Isa { baseline, x86_64_v3, x86_64_v4 };
template <F32Fn kFn>
void apply_baseline(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = call<kFn>(x[i]);
}
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define BARACUDA_TEST_CLONES 1
template <F32Fn kFn>
__attribute__((target("arch=x86-64-v3"))) void apply_v3(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = call<kFn>(x[i]);
}
template <F32Fn kFn>
__attribute__((target("arch=x86-64-v4"))) void apply_v4(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = call<kFn>(x[i]);
}
#endif
std::vector<Isa> isas_here() {
  std::vector<Isa> isas = {Isa::baseline};
#if BARACUDA_TEST_CLONES
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v3")) isas.push_back(Isa::x86_64_v3);
  if (__builtin_cpu_supports("x86-64-v4")) isas.push_back(Isa::x86_64_v4);
#endif
  return isas;
}
const char* isa_name(Isa isa) {
  return isa == Isa::baseline ? "x86-64" : isa == Isa::x86_64_v3 ? "x86-64-v3" : "x86-64-v4";
}
template <F32Fn kFn>
std::vector<float> apply_as(Isa isa, const std::vector<float>& x) {
  std::vector<float> y(x.size());
  switch (isa) {
#if BARACUDA_TEST_CLONES
    case Isa::x86_64_v3:
      apply_v3<kFn>(x.data(), y.data(), x.size());
      break;
    case Isa::x86_64_v4:
      apply_v4<kFn>(x.data(), y.data(), x.size());
      break;
#endif
    default:
      apply_baseline<kFn>(x.data(), y.data(), x.size());
  }
  return y;
}
std::vector<float> apply(F32Fn fn, Isa isa, const std::vector<float>& x) {
  switch (fn) {
    case F32Fn::exp:
      return apply_as<F32Fn::exp>(isa, x);
    case F32Fn::exp_nonpositive:
      return apply_as<F32Fn::exp_nonpositive>(isa, x);
    case F32Fn::log1p:
      return apply_as<F32Fn::log1p>(isa, x);
    case F32Fn::erf:
      return apply_as<F32Fn::erf>(isa, x);
  }
  return {};
}

// Every f32 from bits `first` to `last` (both included), `step` apart.
std::vector<float> f32_range(uint32_t first, uint32_t last, uint32_t step = 1) {
  std::vector<float> v;
  for (uint64_t b = first; b <= last; b += step) v.push_back(f32_of(static_cast<uint32_t>(b)));
  return v;
}
std::vector<float> concat(std::initializer_list<std::vector<float>> parts) {
  std::vector<float> v;
  for (const auto& p : parts) v.insert(v.end(), p.begin(), p.end());
  return v;
}
// The grids: exp every f32 of [-104, -87] (subnormal results; 0 below -103.97) and a walk through
// the rest of its range with the specials; log1p every f32 near the old 2.2 ulp point (0.0144) and a
// walk of every magnitude in (-1, inf]; erf a walk of [0, 4] (it is 1 past 3.92) and its negatives.
std::vector<float> grid(F32Fn fn) {
  constexpr float kInfF = std::numeric_limits<float>::infinity();
  const std::vector<float> specials = {0.0f,   -0.0f,   kInfF,  -kInfF, std::numeric_limits<float>::quiet_NaN(),
                                       1e-45f, -1e-45f, 1e-39f, -1e-39f};
  switch (fn) {
    case F32Fn::exp:
      return concat({specials, f32_range(bits_of(-87.0f), bits_of(-104.5f)), f32_range(0, bits_of(89.0f), 389),
                     f32_range(bits_of(-0.0f), bits_of(-87.0f), 389)});
    case F32Fn::exp_nonpositive:  // x <= 0 or NaN (x - max): every f32 of [-104.5, -87], a walk above
      return concat({{0.0f, -0.0f, -kInfF, std::numeric_limits<float>::quiet_NaN(), -1e-45f, -1e-39f},
                     f32_range(bits_of(-87.0f), bits_of(-104.5f)),
                     f32_range(bits_of(-0.0f), bits_of(-87.0f), 389)});
    case F32Fn::log1p:
      return concat({specials,
                     f32_range(bits_of(0.0143f), bits_of(0.0145f)),
                     f32_range(0, 0x7f7fffffu, 1021),
                     f32_range(bits_of(-0.0f), bits_of(-1.0f), 389),
                     {-1.0f, -2.0f}});
    case F32Fn::erf: {
      std::vector<float> v = concat({specials, f32_range(0, bits_of(4.0f), 389), {5.0f, 1e30f}});
      for (size_t i = 0, n = v.size(); i < n; ++i) v.push_back(-v[i]);
      return v;
    }
  }
  return {};
}
double bound(F32Fn fn) { return fn == F32Fn::erf ? 0.51 : fn == F32Fn::exp_nonpositive ? 0.9 : 1.0; }

TEST(UnaryF32Math, WithinTheirUlpBoundsInEveryCloneIsa) {
  for (F32Fn fn : {F32Fn::exp, F32Fn::exp_nonpositive, F32Fn::log1p, F32Fn::erf}) {
    const std::vector<float> x = grid(fn), base = apply(fn, Isa::baseline, x);
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double e = ulps(base[i], exact_of(fn, x[i]));
      if (!(e <= worst)) worst = e, at = i;
    }
    EXPECT_LE(worst, bound(fn)) << fn_name(fn) << "(" << x[at] << ") = " << base[at] << ", exact "
                                << static_cast<double>(exact_of(fn, x[at]));
    for (Isa isa : isas_here()) {
      const std::vector<float> y = apply(fn, isa, x);
      size_t differ = 0;
      while (differ < x.size() && bits_of(y[differ]) == bits_of(base[differ])) ++differ;
      EXPECT_EQ(differ, x.size()) << fn_name(fn) << " built for " << isa_name(isa)
                                  << " differs from x86-64's at x = " << (differ < x.size() ? x[differ] : 0.0f);
    }
  }
}

TEST(UnaryF32Math, ExpThroughTheUnderflow) {
  // Subnormal results, not 0, down to e^x = 2^-149; 0 below half of it (x < -150 ln 2 = -103.972).
  EXPECT_EQ(simd::exp(-87.5f), static_cast<float>(std::exp(-87.5L)));
  EXPECT_EQ(simd::exp(-100.0f), static_cast<float>(std::exp(-100.0L)));
  EXPECT_EQ(simd::exp(-103.9f), f32_of(1));
  EXPECT_EQ(simd::exp(-104.0f), 0.0f);
  EXPECT_EQ(simd::exp(-1e30f), 0.0f);
  EXPECT_GT(simd::exp(-87.33f), 0x1p-126f);  // still normal
}

// |erf| <= 1 and erf non-decreasing over every f32 of [0.25, 4] (where the old f32 erf broke both),
// odd in its bits; erf(x) = 1 past 3.92.
TEST(UnaryF32Math, ErfIsBoundedAndMonotone) {
  const std::vector<float> x = f32_range(bits_of(0.25f), bits_of(4.0f)), y = apply(F32Fn::erf, Isa::baseline, x);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_LE(y[i], 1.0f) << "erf(" << x[i] << ")";
    if (i) {
      ASSERT_GE(y[i], y[i - 1]) << "erf(" << x[i] << ") < erf(" << x[i - 1] << ")";
    }
  }
  for (float v : {0.5f, 1.0f, 2.0f, 3.0f, 3.9f}) EXPECT_EQ(bits_of(simd::erf(-v)), bits_of(simd::erf(v)) ^ 0x80000000u);
  EXPECT_EQ(simd::erf(3.93f), 1.0f);
}

// The same maths through UnaryPlan on the CPU: f32 bit for bit what the functions above give (the
// clone the host runs), bf16 (every value) within half a bf16 unit of the exact value plus the f32
// result's one ulp, and gelu of the sign of x (x Phi(x) with 0 <= Phi <= 1) in both.
TEST_P(UnaryTest, HostF32MathWithinItsBounds) {
  if (backend() != Backend::cpu || (dtype() != DType::f32 && dtype() != DType::bf16))
    GTEST_SKIP() << "the CPU's f32 maths (common/simd_math.hpp), in f32 and bf16";
  std::vector<double> xs;
  if (dtype() == DType::bf16) {
    xs = testing::every_16bit_value(DType::bf16);
  } else {
    for (F32Fn fn : {F32Fn::exp, F32Fn::exp_nonpositive, F32Fn::log1p, F32Fn::erf}) {
      const std::vector<float> g = grid(fn);
      for (size_t i = 0; i < g.size(); i += 7) xs.push_back(g[i]);
    }
  }
  Tensor x = tensor_of(xs);
  for (UnaryKind kind : {UnaryKind::exp, UnaryKind::log1p, UnaryKind::erf, UnaryKind::gelu}) {
    SCOPED_TRACE(std::string(unary_kind_name(kind)));
    const Tensor out = forward(kind, x);
    int wrong = 0;
    for (int64_t i = 0; i < x.shape.numel() && wrong < 10; ++i) {
      const float xi = static_cast<float>(x.at(i)), got = static_cast<float>(out.at(i));
      if (kind == UnaryKind::gelu) {
        if (std::isfinite(xi) && (xi < 0 ? !(got <= 0) : xi > 0 ? !(got >= 0) : false))  // gelu(-inf) is NaN
          ++wrong, ADD_FAILURE() << "gelu(" << xi << ") = " << got;
        continue;
      }
      const F32Fn fn = kind == UnaryKind::exp ? F32Fn::exp : kind == UnaryKind::log1p ? F32Fn::log1p : F32Fn::erf;
      if (dtype() == DType::f32) {
        const float want = fn == F32Fn::exp ? simd::exp(xi) : fn == F32Fn::log1p ? simd::log1p(xi) : simd::erf(xi);
        if (bits_of(got) != bits_of(want) && !(std::isnan(got) && std::isnan(want)))
          ++wrong,
              ADD_FAILURE() << fn_name(fn) << "(" << xi << "): the plan gives " << got << ", the function " << want;
        continue;
      }
      const long double exact = exact_of(fn, xi);
      if (std::isnan(exact) || std::isinf(harness::quantize(DType::bf16, static_cast<double>(exact))) || exact == 0) {
        if (!testing::is_nearest_16bit(DType::bf16, got, static_cast<double>(exact)))
          ++wrong, ADD_FAILURE() << fn_name(fn) << "(" << xi << ") = " << got;
        continue;
      }
      // Half a bf16 unit of the exact value, in f32 units (2^16 of them), and the f32 result's one ulp.
      if (ulps(got, exact) > 32768 + bound(fn))
        ++wrong, ADD_FAILURE() << fn_name(fn) << "(" << xi << ") = " << got << ", exact " << static_cast<double>(exact);
    }
  }
}

TEST_P(UnaryTest, SpecialValuesForward) {
  Tensor x = tensor_of(specials());
  for (UnaryKind kind : all_kinds()) {
    SCOPED_TRACE(std::string(unary_kind_name(kind)));
    UnaryDescriptor d;
    d.kind = kind;
    d.dtype = dtype();
    d.shape = x.shape;
    Tensor out = output(x.shape, unary_kind_is_predicate(kind) ? std::optional(DType::boolean) : std::nullopt);
    UnaryPlan plan = unwrap(UnaryPlan::select(stream(), d));
    ASSERT_OK(plan.run(stream(), {}, {x.ref(), out.mut()}));
    ASSERT_OK(out.download());
    EXPECT_TRUE(matches(
        out, [&](int64_t i) { return reference::unary(kind, x.at(i), d.parameters); }, tol(kind)))
        << "x = " << x.at(0);
  }
}

TEST_P(UnaryTest, SpecialValuesBackward) {
  Tensor x = tensor_of(specials());
  for (double g : {1.0, -0.5}) {
    Tensor dout = tensor_of(std::vector<double>(specials().size(), g));
    for (UnaryKind kind : differentiable_kinds()) {
      SCOPED_TRACE(std::string(unary_kind_name(kind)) + ", dout " + std::to_string(g));
      UnaryDescriptor d;
      d.kind = kind;
      d.dtype = dtype();
      d.shape = x.shape;
      Tensor dx = output(x.shape);
      UnaryBackwardPlan plan = unwrap(UnaryBackwardPlan::select(stream(), d));
      ASSERT_OK(plan.run(stream(), {}, {dout.ref(), x.ref(), dx.mut()}));
      ASSERT_OK(dx.download());
      EXPECT_TRUE(matches(
          dx, [&](int64_t i) { return reference::unary_backward(kind, g, x.at(i), d.parameters); }, tol(kind)));
    }
  }
}

// gelu and its gradient for 16-bit outputs on the GPU (unary_fn::normal_for16: Phi(-|x|) from
// exp(-x^2 / 2) and a fitted rational, no 1 + erf to cancel): within two units of the dtype's
// rounding of the f64 value, relative, down the negative tail to where f16's subnormals end and
// bf16's values are 1e-30, and on the positive side and across the gradient's zero near -0.75.
TEST_P(UnaryTest, GeluTailOf16BitOutputsOnTheGpu) {
  if (backend() != Backend::cuda || (dtype() != DType::f16 && dtype() != DType::bf16))
    GTEST_SKIP() << "the GPU's f16 / bf16 kernels alone take normal_for16 (f32 and the CPU: 0.5 x (1 + erf))";
  std::vector<double> xs;
  const double last = dtype() == DType::f16 ? -5.2 : -11.5;  // gelu(-5.2) 5e-7 (f16), gelu(-11.5) 1e-29
  for (double x = last; x <= 4; x += 0.0625) xs.push_back(x);
  Tensor x = tensor_of(xs), dout = tensor_of(std::vector<double>(xs.size(), 1.0));
  UnaryDescriptor d;
  d.kind = UnaryKind::gelu;
  d.dtype = dtype();
  d.shape = x.shape;
  Tensor out = output(x.shape), dx = output(x.shape);
  ASSERT_OK(unwrap(UnaryPlan::select(stream(), d)).run(stream(), {}, {x.ref(), out.mut()}));
  ASSERT_OK(unwrap(UnaryBackwardPlan::select(stream(), d)).run(stream(), {}, {dout.ref(), x.ref(), dx.mut()}));
  ASSERT_OK(out.download());
  ASSERT_OK(dx.download());
  // Two units of rounding, relative; f16 subnormals (below 2^-14) are 2^-24 apart.
  const double u = harness::unit_roundoff(dtype()), floor = dtype() == DType::f16 ? 0x1p-24 : 0.0;
  for (int64_t i = 0, numel = x.shape.numel(); i < numel; ++i) {
    const double xi = x.at(i), want = reference::unary(UnaryKind::gelu, xi, d.parameters),
                 want_dx = reference::unary_backward(UnaryKind::gelu, 1.0, xi, d.parameters);
    EXPECT_LE(std::fabs(out.at(i) - want), 2 * u * std::fabs(want) + floor) << "gelu(" << xi << ")";
    EXPECT_LE(std::fabs(dx.at(i) - want_dx), 2 * u * std::max(std::fabs(want_dx), 1e-3) + floor)
        << "gelu'(" << xi << ")";
  }
}

// sqrt and reciprocal of every f16 and bf16 value, correctly rounded to the dtype (the GPU computes
// them for a 16-bit output as common/arith16.hpp says, the CPU in IEEE f32): neither neighbour of the
// result nearer the exact value; +-0, +-inf, NaN, the subnormals and negative roots included.
TEST_P(UnaryTest, SqrtAndReciprocalOfEvery16BitValueAreCorrectlyRounded) {
  if (dtype() != DType::f16 && dtype() != DType::bf16) GTEST_SKIP() << "every value of a 16-bit dtype";
  Tensor x = tensor_of(testing::every_16bit_value(dtype()));
  for (UnaryKind kind : {UnaryKind::sqrt, UnaryKind::reciprocal}) {
    SCOPED_TRACE(std::string(unary_kind_name(kind)));
    const Tensor out = forward(kind, x);
    int wrong = 0;
    for (int64_t i = 0; i < x.shape.numel() && wrong < 10; ++i) {
      const double xi = x.at(i), exact = kind == UnaryKind::sqrt ? std::sqrt(xi) : 1.0 / xi;
      if (!testing::is_nearest_16bit(dtype(), out.at(i), exact)) {
        ++wrong;
        ADD_FAILURE() << unary_kind_name(kind) << "(" << xi << "): got " << out.at(i) << ", exact " << exact;
      }
    }
  }
}

// erfinv in f64 near +-1, where its first guess is far off (the CPU's erfinv_host): erfc of the
// answer gives back 1 - |y|, which is exact there, to 1e-12 (x itself to about 1e-14).
TEST_P(UnaryTest, ErfinvNearOneInF64) {
  if (dtype() != DType::f64) GTEST_SKIP() << "f64 only: the nearest f32 to 1 is inside the first guess's range";
  const std::vector<double> ys = {0.6,  1 - 1e-10,    1 - 1e-12,    1 - 1e-14,     1 - 0x1p-53,
                                  -0.6, -(1 - 1e-10), -(1 - 1e-14), -(1 - 0x1p-53)};
  Tensor x = tensor_of(ys);
  UnaryDescriptor d;
  d.kind = UnaryKind::erfinv;
  d.dtype = DType::f64;
  d.shape = x.shape;
  Tensor out = output(x.shape);
  UnaryPlan plan = unwrap(UnaryPlan::select(stream(), d));
  ASSERT_OK(plan.run(stream(), {}, {x.ref(), out.mut()}));
  ASSERT_OK(out.download());
  for (size_t i = 0; i < ys.size(); ++i) {
    const double y = std::fabs(ys[i]), got = out.at(static_cast<int64_t>(i));
    ASSERT_EQ(std::signbit(got), std::signbit(ys[i])) << "y = " << ys[i];
    const long double back = std::erfc(static_cast<long double>(std::fabs(got)));
    EXPECT_LE(std::fabs(static_cast<double>(back / static_cast<long double>(1 - y) - 1)), 1e-12)
        << "y = " << ys[i] << ": erfinv " << got;
  }
}

// The kinks of the parametrized kinds at their own parameters.
TEST_P(UnaryTest, KinksAtParameters) {
  UnaryParameters p;
  p.negative_slope = -0.3;
  p.alpha = 0.5;
  p.beta = 2;
  p.threshold = 4;
  p.min_val = -0.5;
  p.max_val = 2;
  Tensor x = tensor_of({-0.5, 2, 0, -0.0, 1.5, 2.5, -1, 1, kNaN, kInf, -kInf});
  Tensor dout = tensor_of(std::vector<double>(11, 0.75));
  for (UnaryKind kind :
       {UnaryKind::leaky_relu, UnaryKind::elu, UnaryKind::celu, UnaryKind::softplus, UnaryKind::hardtanh}) {
    SCOPED_TRACE(std::string(unary_kind_name(kind)));
    UnaryDescriptor d{kind, dtype(), x.shape, p};
    Tensor out = output(x.shape), dx = output(x.shape);
    ASSERT_OK(unwrap(UnaryPlan::select(stream(), d)).run(stream(), {}, {x.ref(), out.mut()}));
    ASSERT_OK(unwrap(UnaryBackwardPlan::select(stream(), d)).run(stream(), {}, {dout.ref(), x.ref(), dx.mut()}));
    ASSERT_OK(out.download());
    ASSERT_OK(dx.download());
    EXPECT_TRUE(matches(
        out, [&](int64_t i) { return reference::unary(kind, x.at(i), p); }, tol(kind)));
    EXPECT_TRUE(matches(
        dx, [&](int64_t i) { return reference::unary_backward(kind, 0.75, x.at(i), p); }, tol(kind)));
  }
}

// out = x and dx = dout, contiguous (the vectorized path on CUDA) and strided.
TEST_P(UnaryTest, InPlace) {
  for (const harness::TensorSpec& spec : {contiguous({1000, 33}), with_strides({33, 100}, {200, 2})}) {
    for (UnaryKind kind : differentiable_kinds()) {
      SCOPED_TRACE(std::string(unary_kind_name(kind)) + " " + spec.shape.to_string());
      UnaryDescriptor d;
      d.kind = kind;
      d.dtype = dtype();
      d.shape = spec.shape;
      Tensor x = unwrap(harness::random_tensor(backend(), dtype(), spec, rng_, 0.1, 0.9));
      const std::vector<double> saved = values(x);
      ASSERT_OK(unwrap(UnaryPlan::select(stream(), d)).run(stream(), {}, {x.ref(), x.mut()}));
      ASSERT_OK(x.download());
      EXPECT_TRUE(matches(
          x, [&](int64_t i) { return reference::unary(kind, saved[i], d.parameters); }, tol(kind)));

      Tensor dout = unwrap(harness::random_tensor(backend(), dtype(), spec, rng_));
      Tensor y = unwrap(harness::random_tensor(backend(), dtype(), spec, rng_, 0.1, 0.9));
      const std::vector<double> dout_saved = values(dout);
      ASSERT_OK(unwrap(UnaryBackwardPlan::select(stream(), d)).run(stream(), {}, {dout.ref(), y.ref(), dout.mut()}));
      ASSERT_OK(dout.download());
      EXPECT_TRUE(matches(
          dout, [&](int64_t i) { return reference::unary_backward(kind, dout_saved[i], y.at(i), d.parameters); },
          tol(kind)));
    }
  }
}

TEST_P(UnaryTest, PartialOverlapIsRejected) {
  Tensor buffer = unwrap(harness::random_tensor(backend(), dtype(), contiguous({65}), rng_));
  const AnyTensorMut whole = buffer.mut();
  auto view = [&](int64_t offset, Shape shape, Strides strides) {
    return AnyTensorMut{static_cast<char*>(whole.data) + offset * static_cast<int64_t>(dtype_size(dtype())), dtype(),
                        shape, strides, 65 - offset};
  };
  UnaryDescriptor d;
  d.kind = UnaryKind::exp;
  d.dtype = dtype();
  d.shape = {64};
  const UnaryPlan plan = unwrap(UnaryPlan::select(stream(), d));
  const std::vector<double> before = buffer.host;
  // Shifted by one element; a broadcast x inside out; the transpose of a square (same span, other strides).
  const AnyTensorMut out = view(0, {64}, {1});
  for (const AnyTensorMut& x : {view(1, {64}, {1}), view(5, {64}, {0})}) {
    EXPECT_TRUE(
        testing::is_error(plan.run(stream(), {}, {x, out}), StatusCode::invalid_problem, "UnaryPlan", "args.out"));
  }
  d.shape = {8, 8};
  const UnaryPlan square = unwrap(UnaryPlan::select(stream(), d));
  EXPECT_TRUE(testing::is_error(square.run(stream(), {}, {view(0, {8, 8}, {1, 8}), view(0, {8, 8}, {8, 1})}),
                                StatusCode::invalid_problem, "UnaryPlan", "args.out"));
  // Backward: dx may be dout or x exactly, never part of either.
  d.shape = {32};
  const UnaryBackwardPlan backward = unwrap(UnaryBackwardPlan::select(stream(), d));
  EXPECT_TRUE(
      testing::is_error(backward.run(stream(), {}, {view(0, {32}, {1}), view(33, {32}, {1}), view(16, {32}, {1})}),
                        StatusCode::invalid_problem, "UnaryBackwardPlan", "args.dx"));
  EXPECT_TRUE(
      testing::is_error(backward.run(stream(), {}, {view(0, {32}, {1}), view(33, {32}, {1}), view(20, {32}, {1})}),
                        StatusCode::invalid_problem, "UnaryBackwardPlan", "args.dx"));
  // Disjoint views of one buffer run.
  ASSERT_OK(backward.run(stream(), {}, {view(0, {32}, {1}), view(33, {32}, {1}), view(0, {32}, {1})}));
  ASSERT_OK(buffer.download());
  for (size_t i = 32; i < before.size(); ++i) EXPECT_EQ(buffer.host[i], before[i]) << i;
}

// The predicates write bool: signbit sees -0 and -NaN, logical_not is x == 0 (NaN is not 0); out of
// x's dtype is an error naming it, and the backward plan rejects the kind.
TEST_P(UnaryTest, PredicatesWriteBool) {
  Tensor x = tensor_of({-0.0, 0.0, -kNaN, kNaN, -kInf, kInf, subnormal(), -subnormal(), -1, 1});
  const std::vector<std::pair<UnaryKind, std::vector<double>>> want = {
      {UnaryKind::isnan, {0, 0, 1, 1, 0, 0, 0, 0, 0, 0}},
      {UnaryKind::isinf, {0, 0, 0, 0, 1, 1, 0, 0, 0, 0}},
      {UnaryKind::isfinite, {1, 1, 0, 0, 0, 0, 1, 1, 1, 1}},
      {UnaryKind::signbit, {1, 0, 1, 0, 1, 0, 0, 1, 1, 0}},
      {UnaryKind::logical_not, {1, 1, 0, 0, 0, 0, 0, 0, 0, 0}}};
  for (const auto& [kind, expected] : want) {
    SCOPED_TRACE(std::string(unary_kind_name(kind)));
    const UnaryDescriptor d{kind, dtype(), x.shape, {}};
    Tensor out = output(x.shape, DType::boolean);
    const UnaryPlan plan = unwrap(UnaryPlan::select(stream(), d));
    ASSERT_OK(plan.run(stream(), {}, {x.ref(), out.mut()}));
    ASSERT_OK(out.download());
    for (int64_t i = 0, numel = x.shape.numel(); i < numel; ++i) {
      // (The GPU's f16 -> f32 conversion drops a NaN's sign: signbit(-NaN) is unspecified there.)
      if (kind == UnaryKind::signbit && std::isnan(x.at(i)) && backend() == Backend::cuda && dtype() == DType::f16)
        continue;
      EXPECT_EQ(out.at(i), expected[static_cast<size_t>(i)]) << "element " << i << ", x = " << x.at(i);
    }
    Tensor wrong = output(x.shape);
    EXPECT_TRUE(testing::is_error(plan.run(stream(), {}, {x.ref(), wrong.mut()}), StatusCode::invalid_problem,
                                  "UnaryPlan", "args.out.dtype"));
    EXPECT_TRUE(testing::is_error(UnaryBackwardPlan::select(stream(), d).status(), StatusCode::unsupported,
                                  "UnaryBackwardPlan", "descriptor.kind"));
  }
}

TEST_P(UnaryTest, SkuNamesTheKind) {
  UnaryDescriptor d;
  d.kind = UnaryKind::gelu_tanh;
  d.dtype = dtype();
  d.shape = {128};
  const UnaryPlan plan = unwrap(UnaryPlan::select(stream(), d));
  const std::string variant = plan.sku().variant;
  EXPECT_EQ(variant, std::string(backend() == Backend::cuda ? "vectorized" : "contiguous") + ".gelu_tanh");
  EXPECT_EQ(plan.sku().op, "unary");
}

INSTANTIATE_TEST_SUITE_P(Unary, UnaryTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

}  // namespace
}  // namespace baracuda

// Unary family: what the op table's random samples cannot reach, on every backend and float dtype.
// Special values (+-0, +-inf, NaN, subnormals, large arguments, the kinks and bounds of the
// piecewise kinds) through every kind, forward and backward, against the f64 reference rounded to the
// dtype (NaN where it is NaN, infinities exactly); runs in place (out = x, dx = dout); partial
// overlaps of an output with an input rejected, naming the output; the SKU names the kind.
#include <cmath>
#include <limits>

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

  // got against want rounded to the dtype: NaN for NaN, infinities exactly, else within tol.
  ::testing::AssertionResult matches(const Tensor& got, const std::function<double(int64_t)>& want, double tol) {
    for (int64_t i = 0; i < got.shape.numel(); ++i) {
      const double g = got.at(i), w = harness::quantize(dtype(), want(i));
      const bool ok =
          std::isnan(w) ? std::isnan(g) : (std::isinf(w) ? g == w : std::fabs(g - w) <= tol * (1 + std::fabs(w)));
      if (!ok) return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << w;
    }
    return ::testing::AssertionSuccess();
  }
};

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
  for (int64_t i = 0; i < x.shape.numel(); ++i) {
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
    UnaryDescriptor d;
    d.kind = kind;
    d.dtype = dtype();
    d.shape = x.shape;
    Tensor out = output(x.shape);
    ASSERT_OK(unwrap(UnaryPlan::select(stream(), d)).run(stream(), {}, {x.ref(), out.mut()}));
    ASSERT_OK(out.download());
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
    for (int64_t i = 0; i < x.shape.numel(); ++i) {
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

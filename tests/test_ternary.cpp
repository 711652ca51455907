// Ternary family: what the op table's random samples cannot reach, on every backend and float dtype.
// clamp's special values (NaN in each operand, ties with the bounds, crossed bounds, infinite bounds)
// forward and backward against the f64 reference; where with NaN / inf values and scalar branches;
// in-place runs (x.clamp_(), dc = dout); a gradient left out; where's condition taking no gradient;
// overlaps and a bool condition of the wrong dtype rejected, naming the field; the SKU.
#include <cmath>
#include <limits>

#include "harness/reference/ternary_reference.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::contiguous;
using testing::unwrap;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class TernaryTest : public testing::BackendDTypeTest {
 protected:
  Tensor tensor_of(const std::vector<double>& v, DType type) {
    Tensor t = unwrap(harness::random_tensor(backend(), type, contiguous({static_cast<int64_t>(v.size())}), rng_));
    for (size_t i = 0; i < v.size(); ++i) t.host[i] = harness::quantize(type, v[i]);
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  }
  Tensor tensor_of(const std::vector<double>& v) { return tensor_of(v, dtype()); }
  Tensor output(int64_t n) { return output(Shape{n}); }
  Tensor output(Shape shape) {
    Tensor t = unwrap(harness::random_tensor(backend(), dtype(), contiguous(shape), rng_));
    EXPECT_TRUE(harness::poison(t).is_ok());
    return t;
  }
  TernaryDescriptor desc(TernaryKind kind, int64_t n) const {
    TernaryDescriptor d;
    d.kind = kind;
    d.dtype = dtype();
    d.a_shape = d.b_shape = d.c_shape = {n};
    return d;
  }
  // got against want rounded to the dtype: NaN for NaN, infinities and zeros exactly (with their sign
  // for clamp and where, which move values without arithmetic), else within the tolerance.
  ::testing::AssertionResult matches(const Tensor& got, const std::vector<double>& want, const std::string& what) {
    const double tol = harness::tolerance(dtype());
    for (int64_t i = 0, numel = got.shape.numel(); i < numel; ++i) {
      const double g = got.at(i), w = harness::quantize(dtype(), want[static_cast<size_t>(i)]);
      const bool ok = std::isnan(w) ? std::isnan(g)
                                    : (std::isinf(w) || w == 0 ? g == w && std::signbit(g) == std::signbit(w)
                                                               : std::fabs(g - w) <= tol * (1 + std::fabs(w)));
      if (!ok) return ::testing::AssertionFailure() << what << " element " << i << ": got " << g << ", want " << w;
    }
    return ::testing::AssertionSuccess();
  }
};

// x, lo, hi as three columns: NaN in each, x at each bound, crossed and equal bounds, infinite ones.
struct ClampCase {
  double x, lo, hi;
};
const std::vector<ClampCase>& clamp_cases() {
  static const std::vector<ClampCase> cases = {
      {kNaN, -1, 1}, {0.5, kNaN, 1}, {0.5, -1, kNaN}, {kNaN, kNaN, kNaN}, {-1, -1, 1},        {1, -1, 1},
      {2, -1, 1},    {-2, -1, 1},    {0, -1, 1},      {0.5, 1, -1},       {3, 1, -1},         {-3, 1, -1},
      {1, 1, 1},     {0, 1, 1},      {2, 1, 1},       {kInf, -1, 1},      {-kInf, -1, 1},     {5, -kInf, kInf},
      {5, -kInf, 2}, {-5, -2, kInf}, {-0.0, 0, 1},    {0.0, -1, -0.0},    {1e30, -1e30, 1e30}};
  return cases;
}

TEST_P(TernaryTest, ClampSpecialValues) {
  const std::vector<ClampCase>& cases = clamp_cases();
  const auto n = static_cast<int64_t>(cases.size());
  std::vector<double> xs, los, his;
  for (const ClampCase& c : cases) xs.push_back(c.x), los.push_back(c.lo), his.push_back(c.hi);
  Tensor x = tensor_of(xs), lo = tensor_of(los), hi = tensor_of(his), out = output(n);
  const TernaryDescriptor d = desc(TernaryKind::clamp, n);
  ASSERT_OK(unwrap(TernaryPlan::select(stream(), d)).run(stream(), {}, {x.ref(), lo.ref(), hi.ref(), out.mut()}));
  ASSERT_OK(out.download());
  std::vector<double> want;
  for (int64_t i = 0; i < n; ++i)
    want.push_back(reference::ternary(TernaryKind::clamp, x.at(i), lo.at(i), hi.at(i), 1));
  EXPECT_TRUE(matches(out, want, "out"));

  Tensor dout = tensor_of(std::vector<double>(static_cast<size_t>(n), -0.75));
  Tensor dx = output(n), dlo = output(n), dhi = output(n);
  ASSERT_OK(unwrap(TernaryBackwardPlan::select(stream(), d))
                .run(stream(), {}, {dout.ref(), x.ref(), lo.ref(), hi.ref(), dx.mut(), dlo.mut(), dhi.mut()}));
  ASSERT_OK(dx.download());
  ASSERT_OK(dlo.download());
  ASSERT_OK(dhi.download());
  std::vector<double> want_d[3];
  for (int64_t i = 0; i < n; ++i) {
    double g[3];
    reference::ternary_gradients(TernaryKind::clamp, -0.75, x.at(i), lo.at(i), hi.at(i), 1, g);
    for (int k = 0; k < 3; ++k) want_d[k].push_back(g[k]);
  }
  EXPECT_TRUE(matches(dx, want_d[0], "dx"));
  EXPECT_TRUE(matches(dlo, want_d[1], "dlo"));
  EXPECT_TRUE(matches(dhi, want_d[2], "dhi"));
  // The points PyTorch's autograd decides: at a bound the gradient goes to x; b = c passes it to x
  // only where x equals them; crossed bounds give it to the upper bound.
  EXPECT_EQ(dx.at(4), -0.75);   // x = lo
  EXPECT_EQ(dx.at(5), -0.75);   // x = hi
  EXPECT_EQ(dhi.at(9), -0.75);  // lo > hi
  EXPECT_EQ(dx.at(12), -0.75);  // x = lo = hi
  EXPECT_EQ(dhi.at(14), -0.75);
  EXPECT_EQ(dlo.at(13), 0.0);  // x < lo = hi: the gradient goes to hi (hi < lo is false, x > hi false)
}

// clamp with scalar bounds (and one bound missing: -inf / +inf), x in place.
TEST_P(TernaryTest, ClampScalarBoundsInPlace) {
  std::vector<double> xs;
  for (int i = 0; i < 1000; ++i) xs.push_back(-3 + 6.0 * i / 999);
  xs.push_back(kNaN);
  const auto n = static_cast<int64_t>(xs.size());
  for (const auto& [lo, hi] : std::vector<std::pair<double, double>>{{-0.5, 0.5}, {-kInf, 1}, {0, kInf}}) {
    Tensor x = tensor_of(xs);
    TernaryDescriptor d = desc(TernaryKind::clamp, n);
    d.b_scalar = lo;
    d.c_scalar = hi;
    ASSERT_OK(unwrap(TernaryPlan::select(stream(), d)).run(stream(), {}, {x.ref(), {}, {}, x.mut()}));
    ASSERT_OK(x.download());
    std::vector<double> want;
    for (double v : xs)
      want.push_back(reference::ternary(TernaryKind::clamp, harness::quantize(dtype(), v), lo, hi, 1));
    EXPECT_TRUE(matches(x, want, "x.clamp_(" + std::to_string(lo) + ", " + std::to_string(hi) + ")"));
  }
}

// where: NaN and inf pass through untouched, either branch may be a scalar, the condition broadcast.
TEST_P(TernaryTest, WhereValuesAndScalars) {
  const std::vector<double> conds = {1, 0, 1, 0, 1, 0, 1, 0};
  const std::vector<double> bs = {kNaN, 1, kInf, 2, -0.0, 3, 1e30, kNaN};
  const std::vector<double> cs = {5, kNaN, 6, -kInf, 7, -0.0, 8, 9};
  Tensor cond = tensor_of(conds, DType::boolean), b = tensor_of(bs), c = tensor_of(cs), out = output(8);
  ASSERT_OK(unwrap(TernaryPlan::select(stream(), desc(TernaryKind::where, 8)))
                .run(stream(), {}, {cond.ref(), b.ref(), c.ref(), out.mut()}));
  ASSERT_OK(out.download());
  std::vector<double> want;
  for (size_t i = 0; i < 8; ++i) want.push_back(conds[i] != 0 ? bs[i] : cs[i]);
  EXPECT_TRUE(matches(out, want, "where"));
  // masked_fill: where(cond, -inf, c)
  TernaryDescriptor d = desc(TernaryKind::where, 8);
  d.b_scalar = -kInf;
  ASSERT_OK(unwrap(TernaryPlan::select(stream(), d)).run(stream(), {}, {cond.ref(), {}, c.ref(), out.mut()}));
  ASSERT_OK(out.download());
  for (size_t i = 0; i < 8; ++i) want[i] = conds[i] != 0 ? -kInf : cs[i];
  EXPECT_TRUE(matches(out, want, "where(cond, -inf, c)"));
  // Backward: the condition takes no gradient; db and dc split dout.
  Tensor dout = tensor_of({1, 2, 3, 4, 5, 6, 7, 8}), db = output(8), dc = output(8);
  ASSERT_OK(unwrap(TernaryBackwardPlan::select(stream(), desc(TernaryKind::where, 8)))
                .run(stream(), {}, {dout.ref(), cond.ref(), b.ref(), c.ref(), {}, db.mut(), dc.mut()}));
  ASSERT_OK(db.download());
  ASSERT_OK(dc.download());
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(db.at(i), conds[i] != 0 ? i + 1.0 : 0.0) << i;
    EXPECT_EQ(dc.at(i), conds[i] != 0 ? 0.0 : i + 1.0) << i;
  }
}

// A gradient left out is not written; the others are right, broadcast or not; dc may be dout.
TEST_P(TernaryTest, OptionalGradientsAndInPlace) {
  const int64_t rows = 40, cols = 30;
  for (TernaryKind kind : {TernaryKind::where, TernaryKind::clamp}) {
    SCOPED_TRACE(std::string(ternary_kind_name(kind)));
    TernaryDescriptor d;
    d.kind = kind;
    d.dtype = dtype();
    d.a_shape = {rows, cols};
    d.b_shape = {cols};
    d.c_shape = {rows, cols};
    if (kind == TernaryKind::clamp) d.b_shape = {rows, 1}, d.c_shape = {rows, cols};
    const bool where = kind == TernaryKind::where;  // (a bool condition, which takes no gradient)
    Tensor a = unwrap(harness::random_tensor(backend(), where ? DType::boolean : dtype(), contiguous(d.a_shape), rng_,
                                             where ? 0 : -2, 2));
    Tensor b = unwrap(harness::random_tensor(backend(), dtype(), contiguous(d.b_shape), rng_, -1, -0.5));
    Tensor c = unwrap(harness::random_tensor(backend(), dtype(), contiguous(d.c_shape), rng_, 0.5, 2));
    Tensor dout = unwrap(harness::random_tensor(backend(), dtype(), contiguous({rows, cols}), rng_));
    const TernaryBackwardPlan plan = unwrap(TernaryBackwardPlan::select(stream(), d));
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan.workspace_size()));
    Tensor da = output(Shape{rows, cols}), db = output(d.b_shape);
    // da and db (reduced) only; then dc written over dout.
    ASSERT_OK(plan.run(stream(), {ws.data(), ws.size()},
                       {dout.ref(), a.ref(), b.ref(), c.ref(), where ? AnyTensorMut{} : da.mut(), db.mut(), {}}));
    ASSERT_OK(da.download());
    ASSERT_OK(db.download());
    std::vector<double> want_a(static_cast<size_t>(rows * cols)), want_b(static_cast<size_t>(d.b_shape.numel()));
    std::vector<double> want_c(want_a.size());
    for (int64_t i = 0; i < rows * cols; ++i) {
      const int64_t kb = kind == TernaryKind::clamp ? i / cols : i % cols;
      double g[3];
      reference::ternary_gradients(kind, dout.at(i), a.at(i), b.at(kb), c.at(i), 0.7, g);
      want_a[i] = g[0], want_b[kb] += g[1], want_c[i] = g[2];
    }
    if (!where) {
      EXPECT_TRUE(matches(da, want_a, "da"));
    }
    const double tol = harness::tolerance(dtype()) * (dtype() == DType::f64 ? 1 : 8);
    for (size_t k = 0; k < want_b.size(); ++k)
      EXPECT_NEAR(db.at(static_cast<int64_t>(k)), want_b[k], tol * (1 + std::fabs(want_b[k]) + 40)) << "db " << k;
    ASSERT_OK(plan.run(stream(), {ws.data(), ws.size()}, {dout.ref(), a.ref(), b.ref(), c.ref(), {}, {}, dout.mut()}));
    ASSERT_OK(dout.download());
    EXPECT_TRUE(matches(dout, want_c, "dc over dout"));
  }
}

// Bad arguments: a condition that is not bool, an output overlapping an input it may not be, a
// gradient for where's condition (ignored: it has none) — each error names the field.
TEST_P(TernaryTest, BadArgumentsNameTheField) {
  Tensor cond = tensor_of({1, 0, 1, 0}), b = tensor_of({1, 2, 3, 4}), c = tensor_of({5, 6, 7, 8}), out = output(4);
  const TernaryPlan where = unwrap(TernaryPlan::select(stream(), desc(TernaryKind::where, 4)));
  const Status wrong_dtype = where.run(stream(), {}, {cond.ref(), b.ref(), c.ref(), out.mut()});
  EXPECT_FALSE(wrong_dtype.is_ok());
  EXPECT_NE(wrong_dtype.message().find("args.a"), std::string::npos) << wrong_dtype.message();
  const TernaryPlan clamp = unwrap(TernaryPlan::select(stream(), desc(TernaryKind::clamp, 4)));
  ASSERT_OK(clamp.run(stream(), {}, {b.ref(), cond.ref(), c.ref(), b.mut()}));  // in place
  TernaryDescriptor d = desc(TernaryKind::clamp, 3);
  const TernaryPlan shifted = unwrap(TernaryPlan::select(stream(), d));
  AnyTensorMut overlap = c.mut();
  overlap.data = static_cast<char*>(overlap.data) + dtype_size(dtype());
  overlap.shape = {3};
  AnyTensorRef c3 = c.ref();
  c3.shape = {3};
  AnyTensorRef b3 = b.ref();
  b3.shape = {3};
  const Status s = shifted.run(stream(), {}, {b3, b3, c3, overlap});
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("args.out"), std::string::npos) << s.message();
}

TEST_P(TernaryTest, SkuNamesTheKindAndVariant) {
  const TernaryPlan plan = unwrap(TernaryPlan::select(stream(), desc(TernaryKind::clamp, 64)));
  EXPECT_EQ(plan.sku().variant, std::string(backend() == Backend::cuda ? "vectorized" : "contiguous") + ".clamp");
  EXPECT_EQ(plan.sku().op, "ternary");
  TernaryDescriptor d = desc(TernaryKind::where, 64);
  d.c_shape = {1};
  const TernaryBackwardPlan backward = unwrap(TernaryBackwardPlan::select(stream(), d));
  EXPECT_EQ(backward.sku().variant, "broadcast_reduce.where");
}

INSTANTIATE_TEST_SUITE_P(Ternary, TernaryTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

}  // namespace
}  // namespace baracuda

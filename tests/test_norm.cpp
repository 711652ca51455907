// The norm plans' edge values and guarantees beyond the op table (tools/harness/rows/norm.cpp):
// NaN and inf rows (NaN over that row alone, as PyTorch), constant rows (variance 0), rows far from
// 0 (two passes: no cancellation), and batch invariance (a row's bits whatever the other rows and
// their number), on every backend and dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "harness/data.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::BackendDType;
using testing::unwrap;

class NormTest : public testing::BackendDTypeTest {
 protected:
  Tensor tensor(DType dtype, const Shape& shape, const std::vector<double>& values) {
    Tensor t = unwrap(harness::random_tensor(backend(), dtype, testing::contiguous(shape), rng_));
    for (size_t i = 0; i < values.size(); ++i)
      t.host[static_cast<size_t>(t.offset) + i] = harness::quantize(dtype, values[i]);
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  }
  Tensor output(DType dtype, const Shape& shape) {
    Tensor t = unwrap(harness::random_tensor(backend(), dtype, testing::contiguous(shape), rng_));
    EXPECT_TRUE(harness::poison(t).is_ok());
    return t;
  }
  DType stats() const { return dtype() == DType::f64 ? DType::f64 : DType::f32; }

  // y (and rstd) of a LayerNorm (or RmsNorm) of x [rows, n], weight w, bias b.
  template <class Plan>
  void run(const Tensor& x, Tensor& y, Tensor& rstd, const std::vector<double>& w, const std::vector<double>& b) {
    NormDescriptor d;
    d.dtype = dtype();
    d.shape = x.shape;
    d.has_bias = std::is_same_v<Plan, LayerNormPlan>;
    const int64_t n = x.shape.dims[x.shape.rank - 1];
    Tensor weight = tensor(dtype(), {n}, w), bias = tensor(dtype(), {n}, b);
    Plan plan = unwrap(Plan::select(stream(), d));
    NormArgs a;
    a.x = x.ref();
    a.weight = weight.ref();
    if (d.has_bias) a.bias = bias.ref();
    a.y = y.mut();
    a.rstd = rstd.mut();
    ASSERT_OK(plan.run(stream(), {}, a));
    ASSERT_OK(y.download());
    ASSERT_OK(rstd.download());
  }
};

TEST_P(NormTest, NanAndInfSpoilTheirRowAlone) {
  const int64_t n = 300;
  std::vector<double> x(3 * n);
  for (double& v : x) v = std::uniform_real_distribution<double>(-1, 1)(rng_);
  x[5] = std::numeric_limits<double>::quiet_NaN();         // row 0
  x[2 * n + 7] = std::numeric_limits<double>::infinity();  // row 2
  const std::vector<double> w(n, 1.0), b(n, 0.0);
  for (bool rms : {false, true}) {
    SCOPED_TRACE(rms ? "rms_norm" : "layer_norm");
    Tensor in = tensor(dtype(), {3, n}, x), y = output(dtype(), {3, n}), rstd = output(stats(), {3});
    if (rms)
      run<RmsNormPlan>(in, y, rstd, w, {});
    else
      run<LayerNormPlan>(in, y, rstd, w, b);
    for (int64_t j = 0; j < n; ++j) {
      EXPECT_TRUE(std::isnan(y.at(j))) << j;
      EXPECT_TRUE(std::isfinite(y.at(n + j))) << n + j;
      // RmsNorm of a row with inf: rstd 0, so inf * 0 is NaN there and the rest of the row 0; NaN
      // in LayerNorm throughout (inf - mean).
      if (!rms) {
        EXPECT_TRUE(std::isnan(y.at(2 * n + j))) << 2 * n + j;
      }
    }
    if (rms) {
      EXPECT_TRUE(std::isnan(y.at(2 * n + 7)));
    }
    EXPECT_TRUE(std::isfinite(rstd.at(1)));
  }
}

TEST_P(NormTest, ConstantRowsAndRowsFarFromZero) {
  const int64_t n = 1000;
  const bool wide = dtype() == DType::f32 || dtype() == DType::f64;
  // Row 0 constant: var 0, y = b. Row 1 (f32, f64): 1e4 + u, whose variance E[x^2] - E[x]^2 would
  // lose to cancellation in f32.
  std::vector<double> x(2 * n), u(n);
  for (int64_t j = 0; j < n; ++j) {
    x[j] = 3.0;
    u[j] = std::uniform_real_distribution<double>(-1, 1)(rng_);
    x[n + j] = harness::quantize(dtype(), (wide ? 1e4 : 0.0) + u[j]);
  }
  std::vector<double> w(n), b(n);
  for (int64_t j = 0; j < n; ++j) w[j] = 0.5 + j % 7 * 0.25, b[j] = (j % 5) * 0.1 - 0.2;
  Tensor in = tensor(dtype(), {2, n}, x), y = output(dtype(), {2, n}), rstd = output(stats(), {2});
  run<LayerNormPlan>(in, y, rstd, w, b);
  double mean = 0, var = 0;
  for (int64_t j = 0; j < n; ++j) mean += x[n + j] / n;
  for (int64_t j = 0; j < n; ++j) var += (x[n + j] - mean) * (x[n + j] - mean) / n;
  // Within a few roundings of x itself (x - mean cannot be exacter than x's last bit, ~1e-3 for
  // 1e4 in f32; the mean gathers a few more over 1000 terms): E[x^2] - E[x]^2 would be off by ~1e8 x
  // 2^-24 = 6 in the variance (0.33), y by O(1).
  const double rstd_want = 1 / std::sqrt(var + 1e-5), unit = harness::unit_roundoff(dtype());
  for (int64_t j = 0; j < n; ++j) {
    EXPECT_NEAR(y.at(j), harness::quantize(dtype(), b[j]), harness::tolerance(dtype()) * 4) << j;
    const double want = (x[n + j] - mean) * rstd_want * w[j] + b[j];
    const double allowed =
        32 * unit * (std::fabs(x[n + j]) * rstd_want * w[j] + std::fabs(want)) + 4 * harness::tolerance(dtype());
    EXPECT_NEAR(y.at(n + j), want, allowed) << n + j;
  }
  EXPECT_NEAR(rstd.at(0), 1 / std::sqrt(1e-5), 1e-3 * 316.3);
}

TEST_P(NormTest, ARowsBitsDoNotDependOnTheOtherRows) {
  for (int64_t n : {768, 4096, 40000}) {  // 40000: streamed on CUDA
    SCOPED_TRACE("n = " + std::to_string(n));
    const int64_t rows = 37;
    std::vector<double> x(rows * n), w(n), b(n);
    for (double& v : x) v = std::uniform_real_distribution<double>(-2, 2)(rng_);
    for (int64_t j = 0; j < n; ++j) w[j] = std::uniform_real_distribution<double>(0.5, 1.5)(rng_), b[j] = 0.1;
    Tensor all = tensor(dtype(), {rows, n}, x), y_all = output(dtype(), {rows, n}), r_all = output(stats(), {rows});
    run<LayerNormPlan>(all, y_all, r_all, w, b);
    for (int64_t r : {int64_t{0}, int64_t{17}, rows - 1}) {
      const std::vector<double> one(x.begin() + r * n, x.begin() + (r + 1) * n);
      Tensor in = tensor(dtype(), {1, n}, one), y = output(dtype(), {1, n}), rs = output(stats(), {1});
      run<LayerNormPlan>(in, y, rs, w, b);
      for (int64_t j = 0; j < n; ++j) ASSERT_EQ(y.at(j), y_all.at(r * n + j)) << "row " << r << ", element " << j;
      EXPECT_EQ(rs.at(0), r_all.at(r));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Norm, NormTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

}  // namespace
}  // namespace baracuda

// The norm plans' edge values and guarantees beyond the op table (tools/harness/rows/norm.cpp):
// NaN and inf rows (NaN over that row alone, as PyTorch), constant rows (variance 0), rows far from
// 0 (two passes: no cancellation), and batch invariance (a row's bits whatever the other rows and
// their number), on every backend and dtype; and GroupNorm's: a group's bits whatever the other
// samples, NaN within its group alone, constant groups, and channels-last views beside contiguous
// ones. Rows past one wave of the GPU's blocks keep their own bits, forward and backward.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>
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

  // y (and rstd) of a GroupNorm of x [N, C, *] with `groups`, weight w, bias b (x's views as given).
  void run_group(const Tensor& x, int64_t groups, Tensor& y, Tensor& rstd, const std::vector<double>& w,
                 const std::vector<double>& b, bool silu = false) {
    GroupNormDescriptor d;
    d.dtype = dtype();
    d.shape = x.shape;
    d.groups = groups;
    d.silu = silu;
    const int64_t c = x.shape.dims[1];
    Tensor weight = tensor(dtype(), {c}, w), bias = tensor(dtype(), {c}, b);
    GroupNormPlan plan = unwrap(GroupNormPlan::select(stream(), d));
    GroupNormArgs a;
    a.x = x.ref();
    a.weight = weight.ref();
    a.bias = bias.ref();
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

// Rows past one wave of the GPU's blocks (CUDA: a held block takes rows a grid apart and copies the
// next ones while it reduces one; a backward block takes consecutive rows): each row's h, y, rstd and
// dx are the bits of that row normalized alone, and dweight is the rows' sum. Short rows (8 or 16 a
// block) and rows a block each, with the residual and without, forward and backward.
TEST_P(NormTest, RowsPastOneWaveOfBlocksGiveTheirRowsAloneBits) {
  struct Batch {
    Tensor x, residual, h, y, rstd, dy, dx, dweight;
  };
  // The RmsNorm forward (of x + r with `residual`, else of x) and its backward over x [rows, n]
  // (rows given as values).
  auto norm = [&](bool residual, int64_t rows, int64_t n, const std::vector<double>& x, const std::vector<double>& r,
                  const std::vector<double>& dy, const std::vector<double>& w) {
    NormDescriptor d;
    d.dtype = dtype();
    d.shape = Shape{rows, n};
    d.has_bias = false;
    d.residual = residual;
    Batch b{tensor(dtype(), {rows, n}, x), tensor(dtype(), {rows, n}, r), output(dtype(), {rows, n}),
            output(dtype(), {rows, n}),    output(stats(), {rows}),       tensor(dtype(), {rows, n}, dy),
            output(dtype(), {rows, n}),    output(dtype(), {n})};
    Tensor weight = tensor(dtype(), {n}, w);
    RmsNormPlan forward = unwrap(RmsNormPlan::select(stream(), d));
    NormArgs a;
    a.x = b.x.ref();
    if (residual) {
      a.residual = b.residual.ref();
      a.h = b.h.mut();
    }
    a.weight = weight.ref();
    a.y = b.y.mut();
    a.rstd = b.rstd.mut();
    EXPECT_TRUE(forward.run(stream(), {}, a).is_ok());
    if (!residual) b.h = tensor(dtype(), {rows, n}, x);  // the backward's input, as the forward read it
    RmsNormBackwardPlan backward = unwrap(RmsNormBackwardPlan::select(stream(), d));
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), backward.workspace_size()));
    NormBackwardArgs g;
    g.dy = b.dy.ref();
    g.x = b.h.ref();
    g.weight = weight.ref();
    g.rstd = b.rstd.ref();
    g.dx = b.dx.mut();
    g.dweight = b.dweight.mut();
    EXPECT_TRUE(backward.run(stream(), {ws.data(), ws.size()}, g).is_ok());
    for (Tensor* t : {&b.h, &b.y, &b.rstd, &b.dx, &b.dweight}) EXPECT_TRUE(t->download().is_ok());
    return b;
  };
  // A block takes rows a grid apart, copying the next ones to shared memory while it reduces one (CUDA,
  // 4- and 8-byte rows; BARACUDA_NORM_STAGES sets how many): sizes with blocks of one row and of
  // several, at least three (every stage reused) on 132 SMs, the last row group part empty.
  for (auto [residual, rows, n] : {std::tuple<bool, int64_t, int64_t>{true, 5000, 256},
                                   {true, 700, 4096},
                                   {false, dtype_size(dtype()) == 2 ? 25601 : 13001, 128},
                                   {false, 1700, 4096}}) {
    SCOPED_TRACE("rows " + std::to_string(rows) + ", n " + std::to_string(n) + (residual ? ", residual" : ""));
    std::vector<double> x(rows * n), r(rows * n), dy(rows * n), w(n);
    for (std::vector<double>* v : {&x, &r, &dy})
      for (double& e : *v) e = std::uniform_real_distribution<double>(-2, 2)(rng_);
    for (double& e : w) e = std::uniform_real_distribution<double>(0.5, 1.5)(rng_);
    const Batch all = norm(residual, rows, n, x, r, dy, w);
    for (int64_t row : {int64_t{0}, rows / 2 + 1, rows - 1}) {
      auto slice = [&](const std::vector<double>& v) {
        return std::vector<double>(v.begin() + row * n, v.begin() + (row + 1) * n);
      };
      const Batch one = norm(residual, 1, n, slice(x), slice(r), slice(dy), w);
      for (int64_t j = 0; j < n; ++j) {
        ASSERT_EQ(one.h.at(j), all.h.at(row * n + j)) << "h, row " << row << ", element " << j;
        ASSERT_EQ(one.y.at(j), all.y.at(row * n + j)) << "y, row " << row << ", element " << j;
        ASSERT_EQ(one.dx.at(j), all.dx.at(row * n + j)) << "dx, row " << row << ", element " << j;
      }
      EXPECT_EQ(one.rstd.at(0), all.rstd.at(row));
    }
    // dweight[j] = sum over rows of dy * h * rstd, from the batch's own h and rstd.
    for (int64_t j : {int64_t{0}, n / 3, n - 1}) {
      double want = 0, scale = 0;
      for (int64_t row = 0; row < rows; ++row) {
        const double term = harness::quantize(dtype(), dy[row * n + j]) * all.h.at(row * n + j) * all.rstd.at(row);
        want += term;
        scale += std::fabs(term);
      }
      EXPECT_NEAR(all.dweight.at(j), want, 1e-4 * scale + 2 * harness::tolerance(dtype()) * std::fabs(want))
          << "dweight " << j;
    }
  }
}

TEST_P(NormTest, AGroupsBitsDoNotDependOnTheOtherSamples) {
  // [N, 64, 24, 24] with 8 groups (groups of 4608: the largest CUDA blocks), NaN in sample 1's group 2.
  const int64_t n = 5, c = 64, hw = 24 * 24, per = c * hw;
  std::vector<double> x(n * per), w(c), b(c);
  for (double& v : x) v = std::uniform_real_distribution<double>(-2, 2)(rng_);
  x[per + 2 * 8 * hw + 100] = std::numeric_limits<double>::quiet_NaN();
  for (int64_t k = 0; k < c; ++k) w[k] = std::uniform_real_distribution<double>(0.5, 1.5)(rng_), b[k] = 0.1 * (k % 3);
  for (bool silu : {false, true}) {
    SCOPED_TRACE(silu ? "silu" : "no activation");
    Tensor all = tensor(dtype(), {n, c, 24, 24}, x), y_all = output(dtype(), {n, c, 24, 24});
    Tensor r_all = output(stats(), {n, 8});
    run_group(all, 8, y_all, r_all, w, b, silu);
    for (int64_t k = 0; k < per; ++k) {
      const bool spoiled = k / (8 * hw) == 2;
      ASSERT_EQ(std::isnan(y_all.at(per + k)), spoiled) << "sample 1, element " << k;
    }
    for (int64_t s : {int64_t{0}, n - 1}) {
      const std::vector<double> one(x.begin() + s * per, x.begin() + (s + 1) * per);
      Tensor in = tensor(dtype(), {1, c, 24, 24}, one), y = output(dtype(), {1, c, 24, 24}),
             rs = output(stats(), {1, 8});
      run_group(in, 8, y, rs, w, b, silu);
      for (int64_t k = 0; k < per; ++k)
        ASSERT_EQ(y.at(k), y_all.at(s * per + k)) << "sample " << s << ", element " << k;
      for (int64_t g = 0; g < 8; ++g) EXPECT_EQ(rs.at(g), r_all.at(s * 8 + g));
    }
  }
}

TEST_P(NormTest, ConstantGroupsAndChannelsLastViews) {
  // [3, 12, 5, 7], 4 groups; sample 0's group 1 constant (variance 0: y = b there).
  const Shape shape{3, 12, 5, 7};
  const int64_t hw = 35, per = 12 * hw;
  std::vector<double> x(3 * per), w(12), b(12);
  for (double& v : x) v = std::uniform_real_distribution<double>(-1, 1)(rng_);
  for (int64_t k = 3 * hw; k < 6 * hw; ++k) x[k] = 2.5;
  for (int64_t k = 0; k < 12; ++k) w[k] = 0.5 + 0.1 * k, b[k] = 0.05 * k - 0.2;
  Tensor in = tensor(dtype(), shape, x), y = output(dtype(), shape), rstd = output(stats(), {3, 4});
  run_group(in, 4, y, rstd, w, b);
  for (int64_t k = 3 * hw; k < 6 * hw; ++k)
    EXPECT_NEAR(y.at(k), harness::quantize(dtype(), b[k / hw]), harness::tolerance(dtype()) * 4) << k;
  EXPECT_NEAR(rstd.at(1), 1 / std::sqrt(1e-5), 1e-3 * 316.3);
  // The same values through a channels-last view (strides H W C, 1, W C, C): the same y within a
  // rounding of the sums' other order.
  Tensor last =
      unwrap(harness::random_tensor(backend(), dtype(), testing::with_strides(shape, {hw * 12, 1, 7 * 12, 12}), rng_));
  for (int64_t k = 0, numel = shape.numel(); k < numel; ++k)
    last.host[static_cast<size_t>(last.offset + last.element_offset(k))] =
        harness::quantize(dtype(), x[static_cast<size_t>(k)]);
  ASSERT_OK(last.upload());
  Tensor y_last = output(dtype(), shape), r_last = output(stats(), {3, 4});
  run_group(last, 4, y_last, r_last, w, b);
  for (int64_t k = 0, numel = shape.numel(); k < numel; ++k)
    EXPECT_NEAR(y_last.at(k), y.at(k), harness::tolerance(dtype()) * (1 + std::fabs(y.at(k)))) << k;
}

INSTANTIATE_TEST_SUITE_P(Norm, NormTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

}  // namespace
}  // namespace baracuda

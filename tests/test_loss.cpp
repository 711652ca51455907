// The cross-entropy plans beyond the op table (tools/harness/rows/loss.cpp), on every backend and
// dtype: the issue's class counts against an f64 reference, every target ignored (the mean is NaN,
// as PyTorch), extreme logits (+-1e4, -inf entries, rows of -inf), bad targets (counted, contributing
// nothing), finite differences of the backward for every option and reduction (f64), bit identity
// over 10 runs, in-place dlogits (the same bits), batch invariance, and the args' errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "harness/buffer.hpp"
#include "harness/data.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::unwrap;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The loss of a descriptor in f64, rows of C logits (row-major [N, C]): per row (none) or reduced.
struct Reference {
  std::vector<double> loss, lse;
  int64_t bad = 0;
};
Reference reference(const CrossEntropyDescriptor& d, const std::vector<double>& x, const std::vector<int64_t>& t,
                    const std::vector<double>& w) {
  const int64_t n = static_cast<int64_t>(t.size()), c = d.shape.dims[1];
  Reference r;
  double ce_sum = 0, z_sum = 0, weight_sum = 0, counted = 0;
  for (int64_t row = 0; row < n; ++row) {
    double max = -kInf;
    for (int64_t j = 0; j < c; ++j) max = std::max(max, x[row * c + j]);
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) sum += max == -kInf ? 0.0 : std::exp(x[row * c + j] - max);
    const double lse = max == -kInf ? -kInf : max + std::log(sum);
    r.lse.push_back(lse);
    double ce = 0, z = 0;
    const int64_t target = t[static_cast<size_t>(row)];
    const bool bad = target != d.ignore_index && (target < 0 || target >= c);
    r.bad += bad;
    if (target != d.ignore_index && !bad) {
      const double wt = d.has_weight ? w[target] : 1.0;
      ce = (1 - d.label_smoothing) * wt * (lse - x[row * c + target]);
      double smooth = 0;
      for (int64_t j = 0; j < c; ++j) smooth += (d.has_weight ? w[j] : 1.0) * (lse - x[row * c + j]);
      if (d.label_smoothing != 0) ce += d.label_smoothing / static_cast<double>(c) * smooth;
      z = d.z_loss * lse * lse;
      weight_sum += wt;
      counted += 1;
    }
    r.loss.push_back(ce + z);
    ce_sum += ce;
    z_sum += z;
  }
  if (d.reduction == LossReduction::sum) r.loss = {ce_sum + z_sum};
  if (d.reduction == LossReduction::mean) r.loss = {ce_sum / weight_sum + (d.z_loss != 0 ? z_sum / counted : 0.0)};
  return r;
}

class CrossEntropyTest : public testing::BackendDTypeTest {
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
  std::vector<double> uniform(int64_t count, double lo, double hi) {
    std::vector<double> v(static_cast<size_t>(count));
    for (double& e : v) e = harness::quantize(dtype(), std::uniform_real_distribution<double>(lo, hi)(rng_));
    return v;
  }
  CrossEntropyDescriptor desc(int64_t n, int64_t c, LossReduction reduction = LossReduction::mean) {
    CrossEntropyDescriptor d;
    d.dtype = dtype();
    d.shape = {n, c};
    d.reduction = reduction;
    return d;
  }
  static Shape loss_shape(const CrossEntropyDescriptor& d) {
    return d.reduction == LossReduction::none ? Shape{d.shape.dims[0]} : Shape{};
  }

  // A pointwise loss reduced to one value (d.reduction sum or mean) of an input of x's and a target
  // of y's everywhere, as downloaded; nullopt (and the failure recorded) where it did not run.
  std::optional<double> reduced_pointwise_loss(const PointwiseLossDescriptor& d, double x, double y) {
    const size_t n = static_cast<size_t>(d.shape.numel());
    return reduced_pointwise_loss(d, tensor(d.dtype, d.shape, std::vector<double>(n, x)),
                                  tensor(d.dtype, d.shape, std::vector<double>(n, y)));
  }
  // The same of the given (uploaded) input and target views.
  std::optional<double> reduced_pointwise_loss(const PointwiseLossDescriptor& d, const Tensor& input,
                                               const Tensor& target) {
    Tensor loss = output(d.dtype, {});
    PointwiseLossPlan plan = unwrap(PointwiseLossPlan::select(stream(), d));
    harness::Buffer workspace =
        unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(plan.workspace_size(), 1)));
    PointwiseLossArgs a;
    a.input = input.ref();
    a.target = target.ref();
    a.loss = loss.mut();
    const Status s = plan.run(stream(), {workspace.data(), workspace.size()}, a);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    if (!s || !loss.download().is_ok()) return std::nullopt;
    return loss.at(0);
  }

  // The forward's loss and lse (and the bad targets counted), as downloaded.
  struct Forward {
    std::vector<double> loss, lse;
    int64_t bad = 0;
  };
  // Class indices [n], or with soft_targets probabilities [n, c].
  Tensor targets_of(const CrossEntropyDescriptor& d, const std::vector<double>& t) {
    return d.soft_targets ? tensor(d.dtype, d.shape, t) : tensor(d.index_dtype, {d.shape.dims[0]}, t);
  }
  Forward forward(const CrossEntropyDescriptor& d, const std::vector<double>& x, const std::vector<int64_t>& t,
                  const std::vector<double>& w = {}) {
    return forward(d, x, std::vector<double>(t.begin(), t.end()), w);
  }
  Forward forward(const CrossEntropyDescriptor& d, const std::vector<double>& x, const std::vector<double>& t,
                  const std::vector<double>& w) {
    const int64_t n = d.shape.dims[0], c = d.shape.dims[1];
    Tensor logits = tensor(d.dtype, d.shape, x), weight = tensor(d.weight_dtype.value_or(d.dtype), {c}, w);
    Tensor targets = targets_of(d, t);
    Tensor loss = output(d.dtype, loss_shape(d)), lse = output(stats(), {n});
    harness::Buffer counter = unwrap(harness::Buffer::allocate(backend(), sizeof(int64_t)));
    const int64_t zero = 0;
    EXPECT_TRUE(counter.upload(&zero, sizeof zero).is_ok());
    CrossEntropyPlan plan = unwrap(CrossEntropyPlan::select(stream(), d));
    harness::Buffer workspace =
        unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(plan.workspace_size(), 1)));
    CrossEntropyArgs a;
    a.logits = logits.ref();
    a.targets = targets.ref();
    if (d.has_weight) a.weight = weight.ref();
    a.loss = loss.mut();
    a.lse = lse.mut();
    a.bad_index_count = static_cast<int64_t*>(counter.data());
    Forward f;
    const Status s = plan.run(stream(), {workspace.data(), workspace.size()}, a);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    if (!s) return f;
    EXPECT_TRUE(loss.download().is_ok());
    EXPECT_TRUE(lse.download().is_ok());
    EXPECT_TRUE(counter.download(&f.bad, sizeof f.bad).is_ok());
    for (int64_t i = 0, numel = loss.shape.numel(); i < numel; ++i) f.loss.push_back(loss.at(i));
    for (int64_t i = 0; i < n; ++i) f.lse.push_back(lse.at(i));
    return f;
  }

  // dlogits (downloaded), from the given dloss and the forward's lse; in place over the logits when asked.
  std::vector<double> backward(const CrossEntropyDescriptor& d, const std::vector<double>& x,
                               const std::vector<int64_t>& t, const std::vector<double>& w,
                               const std::vector<double>& dloss, const std::vector<double>& lse_values,
                               bool in_place = false) {
    return backward(d, x, std::vector<double>(t.begin(), t.end()), w, dloss, lse_values, in_place);
  }
  std::vector<double> backward(const CrossEntropyDescriptor& d, const std::vector<double>& x,
                               const std::vector<double>& t, const std::vector<double>& w,
                               const std::vector<double>& dloss, const std::vector<double>& lse_values, bool in_place) {
    const int64_t n = d.shape.dims[0], c = d.shape.dims[1];
    Tensor logits = tensor(d.dtype, d.shape, x), weight = tensor(d.weight_dtype.value_or(d.dtype), {c}, w);
    Tensor targets = targets_of(d, t);
    Tensor dl = tensor(d.dtype, loss_shape(d), dloss), lse = tensor(stats(), {n}, lse_values);
    Tensor dx = output(d.dtype, d.shape);
    CrossEntropyBackwardPlan plan = unwrap(CrossEntropyBackwardPlan::select(stream(), d));
    harness::Buffer workspace =
        unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(plan.workspace_size(), 1)));
    CrossEntropyBackwardArgs a;
    a.dloss = dl.ref();
    a.logits = logits.ref();
    a.targets = targets.ref();
    if (d.has_weight) a.weight = weight.ref();
    a.lse = lse.ref();
    a.dlogits = in_place ? logits.mut() : dx.mut();
    const Status s = plan.run(stream(), {workspace.data(), workspace.size()}, a);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    Tensor& out = in_place ? logits : dx;
    EXPECT_TRUE(out.download().is_ok());
    std::vector<double> v;
    for (int64_t i = 0; i < n * c; ++i) v.push_back(out.at(i));
    return v;
  }

  // Within the dtype's tolerance of values as large as `scale`.
  void expect_near(double got, double want, double scale, const std::string& what) {
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << what << ": " << got;
      return;
    }
    if (std::isinf(want)) {
      EXPECT_EQ(got, want) << what;
      return;
    }
    EXPECT_NEAR(got, want, 4 * harness::tolerance(dtype()) * (1 + std::fabs(scale))) << what;
  }
};

TEST_P(CrossEntropyTest, TheIssuesClassCountsMatchTheReference) {
  for (int64_t c : {int64_t{1}, int64_t{2}, int64_t{1000}, int64_t{32000}, int64_t{128256}, int64_t{262144},
                    (int64_t{1} << 20) + 3}) {
    const int64_t n = c > 100000 ? 2 : 5;
    SCOPED_TRACE("C = " + std::to_string(c));
    const std::vector<double> x = uniform(n * c, -3, 3);
    std::vector<int64_t> t;
    for (int64_t row = 0; row < n; ++row) t.push_back((row * 7919) % c);
    for (LossReduction r : {LossReduction::none, LossReduction::sum, LossReduction::mean}) {
      const CrossEntropyDescriptor d = desc(n, c, r);
      const Forward f = forward(d, x, t);
      const Reference want = reference(d, x, t, {});
      ASSERT_EQ(f.loss.size(), want.loss.size());
      for (size_t i = 0; i < want.loss.size(); ++i)
        expect_near(f.loss[i], want.loss[i], want.loss[i], "loss " + std::to_string(i));
      for (int64_t row = 0; row < n; ++row)
        expect_near(f.lse[static_cast<size_t>(row)], want.lse[static_cast<size_t>(row)],
                    want.lse[static_cast<size_t>(row)], "lse " + std::to_string(row));
    }
  }
}

TEST_P(CrossEntropyTest, EveryTargetIgnoredGivesANanMeanAZeroSumAndNoGradient) {
  const int64_t n = 6, c = 50;
  const std::vector<double> x = uniform(n * c, -1, 1), w = uniform(c, 0.5, 1.5);
  const std::vector<int64_t> t(n, -100);
  for (bool weighted : {false, true}) {
    for (LossReduction r : {LossReduction::none, LossReduction::sum, LossReduction::mean}) {
      CrossEntropyDescriptor d = desc(n, c, r);
      d.has_weight = weighted;
      d.label_smoothing = 0.1;
      d.z_loss = 1e-3;
      const Forward f = forward(d, x, t, w);
      if (r == LossReduction::mean) {
        ASSERT_EQ(f.loss.size(), 1u);
        EXPECT_TRUE(std::isnan(f.loss[0])) << f.loss[0];
      } else {
        for (double v : f.loss) EXPECT_EQ(v, 0.0);
      }
      EXPECT_EQ(f.bad, 0);
      const std::vector<double> dloss(static_cast<size_t>(r == LossReduction::none ? n : 1), 1.0);
      for (double v : backward(d, x, t, w, dloss, f.lse)) ASSERT_EQ(v, 0.0);
    }
  }
}

// The pointwise losses' mean of an empty input is 0 / 0 = NaN, as PyTorch's (the op table compares no
// NaN); their sum is 0.
TEST_P(CrossEntropyTest, PointwiseLossOfNothingIsANanMeanAndAZeroSum) {
  for (PointwiseLossKind kind : {PointwiseLossKind::mse, PointwiseLossKind::bce_with_logits}) {
    for (LossReduction r : {LossReduction::sum, LossReduction::mean}) {
      PointwiseLossDescriptor d;
      d.dtype = dtype();
      d.kind = kind;
      d.shape = {0, 4};
      d.reduction = r;
      std::optional<double> loss = reduced_pointwise_loss(d, 0, 0);
      ASSERT_TRUE(loss);
      if (r == LossReduction::mean)
        EXPECT_TRUE(std::isnan(*loss)) << *loss;
      else
        EXPECT_EQ(*loss, 0.0);
    }
  }
}

// Every term exactly 1 (mse of x - y = 1): the sum is n and the mean 1 exactly (rounded to the
// dtype), on both sides of a chunk of the sum and over many chunks, so no element is lost or counted
// twice at a chunk's edge (the op table's tolerances are too wide to see one element).
TEST_P(CrossEntropyTest, PointwiseLossSumsEveryElementOnce) {
  for (int64_t n : {1, 8191, 8192, 8193, 70001}) {
    for (LossReduction r : {LossReduction::sum, LossReduction::mean}) {
      PointwiseLossDescriptor d;
      d.dtype = dtype();
      d.shape = {n};
      d.reduction = r;
      std::optional<double> loss = reduced_pointwise_loss(d, 1.5, 0.5);
      ASSERT_TRUE(loss);
      const double want = r == LossReduction::mean ? 1.0 : harness::quantize(dtype(), static_cast<double>(n));
      EXPECT_EQ(*loss, want) << "n " << n << ", " << loss_reduction_name(r);
    }
  }
}

// A sum's bits depend on the element count alone: contiguous, misaligned (no 16-byte access on
// CUDA) and strided views of the same values give the same sum, on both sides of a chunk.
TEST_P(CrossEntropyTest, PointwiseLossSumHasTheSameBitsForAnyView) {
  for (PointwiseLossKind kind : {PointwiseLossKind::huber, PointwiseLossKind::mse, PointwiseLossKind::bce_with_logits})
    for (int64_t n : {8193, 70001}) {
      const std::vector<double> x = uniform(n, -2, 2), y = uniform(n, -2, 2);
      auto sum_of = [&](const harness::TensorSpec& spec) -> std::optional<double> {
        Tensor input = unwrap(harness::random_tensor(backend(), dtype(), spec, rng_)),
               target = unwrap(harness::random_tensor(backend(), dtype(), spec, rng_));
        for (int64_t i = 0; i < n; ++i) {
          input.host[static_cast<size_t>(input.offset + input.element_offset(i))] = x[static_cast<size_t>(i)];
          target.host[static_cast<size_t>(target.offset + target.element_offset(i))] = y[static_cast<size_t>(i)];
        }
        EXPECT_TRUE(input.upload().is_ok() && target.upload().is_ok());
        PointwiseLossDescriptor d;
        d.dtype = dtype();
        d.kind = kind;
        d.shape = {n};
        d.reduction = LossReduction::sum;
        return reduced_pointwise_loss(d, input, target);
      };
      const std::optional<double> whole = sum_of(testing::contiguous({n}));
      const std::optional<double> shifted = sum_of(testing::misaligned({n}));
      const std::optional<double> strided = sum_of(testing::with_strides({n}, Strides{3}));
      ASSERT_TRUE(whole && shifted && strided);
      EXPECT_EQ(*shifted, *whole) << pointwise_loss_name(kind) << ", n " << n;
      EXPECT_EQ(*strided, *whole) << pointwise_loss_name(kind) << ", n " << n;
    }
}

TEST_P(CrossEntropyTest, BadTargetsAreCountedAndContributeNothing) {
  const int64_t n = 8, c = 20;
  const std::vector<double> x = uniform(n * c, -1, 1);
  const std::vector<int64_t> t = {3, -1, 20, 5, -100, 1000000, 0, 19};  // -1, 20, 10^6 bad; -100 ignored
  for (DType index : {DType::i32, DType::i64}) {
    CrossEntropyDescriptor d = desc(n, c, LossReduction::none);
    d.index_dtype = index;
    const Forward f = forward(d, x, t);
    EXPECT_EQ(f.bad, 3);
    const Reference want = reference(d, x, t, {});
    for (int64_t row = 0; row < n; ++row)
      expect_near(f.loss[static_cast<size_t>(row)], want.loss[static_cast<size_t>(row)],
                  want.loss[static_cast<size_t>(row)], "row " + std::to_string(row));
    for (int64_t row : {1, 2, 4, 5}) EXPECT_EQ(f.loss[static_cast<size_t>(row)], 0.0) << row;
    d.reduction = LossReduction::mean;
    const Forward m = forward(d, x, t);
    expect_near(m.loss[0], reference(d, x, t, {}).loss[0], 3.0, "mean over the 4 rows counted");
    const std::vector<double> g = backward(d, x, t, {}, {1.0}, f.lse);
    for (int64_t row : {1, 2, 4, 5})
      for (int64_t j = 0; j < c; ++j) ASSERT_EQ(g[static_cast<size_t>(row * c + j)], 0.0);
  }
}

TEST_P(CrossEntropyTest, ExtremeLogits) {
  const int64_t c = 64;
  // Row 0: +-1e4 (bf16 holds them); row 1: -inf entries, not at the target; row 2: -inf at the
  // target (loss inf); row 3: every logit -inf (NaN, as PyTorch); row 4: a NaN (NaN).
  std::vector<double> x = uniform(5 * c, -1, 1);
  for (int64_t j = 0; j < c; ++j) x[j] = j % 2 ? 1e4 : -1e4;
  x[0 * c + 5] = 1e4 - 64;
  for (int64_t j = 0; j < c; j += 3) x[1 * c + j] = -kInf, x[2 * c + j] = -kInf;
  for (int64_t j = 0; j < c; ++j) x[3 * c + j] = -kInf;
  x[4 * c + 9] = std::nan("");
  for (double& v : x) v = harness::quantize(dtype(), v);
  const std::vector<int64_t> t = {5, 1, 3, 0, 2};
  CrossEntropyDescriptor d = desc(5, c, LossReduction::none);
  const Forward f = forward(d, x, t);
  const Reference want = reference(d, x, t, {});
  expect_near(f.loss[0], want.loss[0], 1e4, "row of +-1e4");
  EXPECT_GT(f.loss[0], 60.0);
  expect_near(f.loss[1], want.loss[1], want.loss[1], "-inf entries");
  EXPECT_TRUE(std::isfinite(f.loss[1]));
  EXPECT_EQ(f.loss[2], kInf);
  EXPECT_TRUE(std::isnan(f.loss[3])) << f.loss[3];
  EXPECT_EQ(f.lse[3], -kInf);
  EXPECT_TRUE(std::isnan(f.loss[4])) << f.loss[4];
  // The gradient of the finite rows: softmax - one-hot, 0 at the -inf entries.
  const std::vector<double> g = backward(d, x, t, {}, std::vector<double>(5, 1.0), f.lse);
  for (int64_t j = 0; j < c; ++j) {
    EXPECT_TRUE(std::isfinite(g[j])) << j;
    if (j % 3 == 0) {
      EXPECT_EQ(g[static_cast<size_t>(c + j)], 0.0) << j;
    }
  }
  EXPECT_NEAR(g[5], std::exp(x[5] - want.lse[0]) - 1, 4 * harness::tolerance(dtype()));
}

// <dlogits, v> against the central difference of <dloss, loss(logits + h v)>, in f64, for every
// option and reduction.
TEST_P(CrossEntropyTest, BackwardMatchesFiniteDifferences) {
  if (dtype() != DType::f64) GTEST_SKIP() << "finite differences in f64";
  const int64_t n = 9, c = 37;
  const std::vector<double> x = uniform(n * c, -2, 2), w = uniform(c, 0.5, 1.5);
  std::vector<int64_t> t;
  for (int64_t row = 0; row < n; ++row) t.push_back((row * 5) % c);
  t[2] = -100;
  t[4] = c + 1;
  for (LossReduction r : {LossReduction::none, LossReduction::sum, LossReduction::mean})
    for (int option = 0; option < 6; ++option) {
      CrossEntropyDescriptor d = desc(n, c, r);
      d.has_weight = option & 1;
      d.label_smoothing = option & 2 ? 0.3 : 0.0;
      d.z_loss = option >= 4 ? 0.05 : 0.0;
      SCOPED_TRACE("reduction " + std::string(loss_reduction_name(r)) + ", option " + std::to_string(option));
      const std::vector<double> dloss = uniform(r == LossReduction::none ? n : 1, -1, 1);
      const Forward f = forward(d, x, t, w);
      const std::vector<double> g = backward(d, x, t, w, dloss, f.lse);
      const std::vector<double> v = uniform(n * c, -1, 1);
      auto loss_along = [&](double h) {
        std::vector<double> xs = x;
        for (size_t i = 0; i < xs.size(); ++i) xs[i] += h * v[i];
        const Forward s = forward(d, xs, t, w);
        double l = 0;
        for (size_t i = 0; i < s.loss.size(); ++i) l += dloss[i] * s.loss[i];
        return l;
      };
      double analytic = 0, magnitude = 0;
      for (size_t i = 0; i < v.size(); ++i) analytic += v[i] * g[i], magnitude += std::fabs(v[i] * g[i]);
      const double numeric = (loss_along(1e-5) - loss_along(-1e-5)) / 2e-5;
      EXPECT_NEAR(numeric, analytic, 1e-7 * (1 + magnitude));
    }
}

// One-hot probabilities are class indices: the same row losses and gradients (none, sum; the mean
// too without a weight, as both then divide by the rows), in place as well. Either side of the CUDA
// chunk and of the 16-byte vectors.
TEST_P(CrossEntropyTest, OneHotSoftTargetsMatchClassIndices) {
  for (int64_t c : {int64_t{37}, int64_t{1000}, int64_t{40000}}) {
    const int64_t n = 6;
    const std::vector<double> x = uniform(n * c, -4, 4), w = uniform(c, 0.5, 1.5);
    std::vector<int64_t> t;
    std::vector<double> one_hot(static_cast<size_t>(n * c), 0.0);
    for (int64_t row = 0; row < n; ++row) {
      t.push_back((row * 7 + 3) % c);
      one_hot[static_cast<size_t>(row * c + t.back())] = 1.0;
    }
    for (LossReduction r : {LossReduction::none, LossReduction::sum, LossReduction::mean})
      for (int option = 0; option < 4; ++option) {
        CrossEntropyDescriptor hard = desc(n, c, r);
        hard.has_weight = option & 1 && r != LossReduction::mean;
        hard.label_smoothing = option & 2 ? 0.2 : 0.0;
        hard.z_loss = 1e-3;
        CrossEntropyDescriptor soft = hard;
        soft.soft_targets = true;
        SCOPED_TRACE("C " + std::to_string(c) + ", reduction " + std::string(loss_reduction_name(r)) + ", option " +
                     std::to_string(option));
        const Forward want = forward(hard, x, t, w), got = forward(soft, x, one_hot, w);
        ASSERT_EQ(got.loss.size(), want.loss.size());
        for (size_t i = 0; i < want.loss.size(); ++i)
          expect_near(got.loss[i], want.loss[i], std::fabs(want.loss[i]) * (r == LossReduction::none ? 1 : 8), "loss");
        EXPECT_EQ(got.bad, 0);
        const std::vector<double> dloss = uniform(r == LossReduction::none ? n : 1, -1, 1);
        const std::vector<double> g_want = backward(hard, x, t, w, dloss, want.lse);
        const std::vector<double> g_got = backward(soft, x, one_hot, w, dloss, want.lse, false);
        for (size_t i = 0; i < g_want.size(); ++i) expect_near(g_got[i], g_want[i], 1, "dlogits");
        ASSERT_EQ(backward(soft, x, one_hot, w, dloss, want.lse, true), g_got) << "in place";
      }
  }
}

TEST_P(CrossEntropyTest, RunsAreBitIdenticalAndInPlaceGivesTheSameBits) {
  for (int64_t c : {int64_t{1000}, int64_t{70000}}) {  // 70000: chunked rows on CUDA
    SCOPED_TRACE("C = " + std::to_string(c));
    const int64_t n = c > 32768 ? 5 : 33;
    const std::vector<double> x = uniform(n * c, -4, 4), w = uniform(c, 0.5, 1.5);
    std::vector<int64_t> t;
    for (int64_t row = 0; row < n; ++row) t.push_back(row == 3 ? -100 : (row * 131) % c);
    for (LossReduction r : {LossReduction::none, LossReduction::sum, LossReduction::mean}) {
      CrossEntropyDescriptor d = desc(n, c, r);
      d.has_weight = true;
      d.label_smoothing = 0.1;
      d.z_loss = 1e-4;
      const std::vector<double> dloss = uniform(r == LossReduction::none ? n : 1, -1, 1);
      const Forward first = forward(d, x, t, w);
      const std::vector<double> g = backward(d, x, t, w, dloss, first.lse);
      for (int run = 1; run < testing::rerun_count(); ++run) {
        const Forward again = forward(d, x, t, w);
        for (size_t i = 0; i < first.loss.size(); ++i)
          ASSERT_EQ(std::memcmp(&again.loss[i], &first.loss[i], sizeof(double)), 0) << "run " << run;
        ASSERT_EQ(again.lse, first.lse) << "run " << run;
        ASSERT_EQ(backward(d, x, t, w, dloss, first.lse), g) << "run " << run;
      }
      ASSERT_EQ(backward(d, x, t, w, dloss, first.lse, true), g) << "in place";
    }
  }
}

TEST_P(CrossEntropyTest, ARowsBitsDoNotDependOnTheOtherRows) {
  for (int64_t c : {int64_t{768}, int64_t{32000}, int64_t{40000}}) {
    SCOPED_TRACE("C = " + std::to_string(c));
    const int64_t n = 37;
    const std::vector<double> x = uniform(n * c, -3, 3);
    std::vector<int64_t> t;
    for (int64_t row = 0; row < n; ++row) t.push_back((row * 17) % c);
    CrossEntropyDescriptor d = desc(n, c, LossReduction::none);
    d.label_smoothing = 0.1;
    const Forward all = forward(d, x, t);
    const std::vector<double> dloss = uniform(n, -1, 1);
    const std::vector<double> g_all = backward(d, x, t, {}, dloss, all.lse);
    for (int64_t r : {int64_t{0}, int64_t{17}, n - 1}) {
      const std::vector<double> one(x.begin() + r * c, x.begin() + (r + 1) * c);
      const CrossEntropyDescriptor d1 = [&] {
        CrossEntropyDescriptor e = d;
        e.shape = {1, c};
        return e;
      }();
      const Forward f = forward(d1, one, {t[static_cast<size_t>(r)]});
      EXPECT_EQ(f.loss[0], all.loss[static_cast<size_t>(r)]) << "row " << r;
      EXPECT_EQ(f.lse[0], all.lse[static_cast<size_t>(r)]) << "row " << r;
      const std::vector<double> g =
          backward(d1, one, {t[static_cast<size_t>(r)]}, {}, {dloss[static_cast<size_t>(r)]}, f.lse);
      for (int64_t j = 0; j < c; ++j) ASSERT_EQ(g[static_cast<size_t>(j)], g_all[static_cast<size_t>(r * c + j)]) << j;
    }
  }
}

TEST_P(CrossEntropyTest, ArgsErrorsNameTheField) {
  const int64_t n = 4, c = 10;
  CrossEntropyDescriptor d = desc(n, c, LossReduction::none);
  d.has_weight = true;
  Tensor logits = tensor(dtype(), {n, c}, uniform(n * c, -1, 1)), weight = tensor(dtype(), {c}, uniform(c, 0.5, 1));
  Tensor targets = tensor(DType::i64, {n}, {0, 1, 2, 3}), loss = output(dtype(), {n}), lse = output(stats(), {n});
  Tensor wrong_targets = tensor(DType::i32, {n}, {0, 1, 2, 3}), wrong_loss = output(dtype(), {});
  CrossEntropyPlan plan = unwrap(CrossEntropyPlan::select(stream(), d));
  CrossEntropyArgs a;
  a.logits = logits.ref();
  a.targets = targets.ref();
  a.weight = weight.ref();
  a.loss = loss.mut();
  a.lse = lse.mut();
  ASSERT_OK(plan.can_implement(a));
  CrossEntropyArgs bad = a;
  bad.targets = wrong_targets.ref();
  EXPECT_TRUE(
      testing::is_error(plan.can_implement(bad), StatusCode::invalid_problem, "CrossEntropyPlan", "args.targets"));
  bad = a;
  bad.loss = wrong_loss.mut();
  EXPECT_TRUE(testing::is_error(plan.can_implement(bad), StatusCode::invalid_problem, "CrossEntropyPlan", "args.loss"));
  bad = a;
  bad.weight = {};
  EXPECT_FALSE(plan.can_implement(bad).is_ok());
  bad = a;
  bad.lse = {};  // optional
  EXPECT_TRUE(plan.can_implement(bad).is_ok());

  CrossEntropyBackwardPlan back = unwrap(CrossEntropyBackwardPlan::select(stream(), d));
  Tensor dloss = tensor(dtype(), {n}, uniform(n, -1, 1)), saved = tensor(stats(), {n}, uniform(n, 1, 2));
  Tensor dlogits = output(dtype(), {n, c});
  CrossEntropyBackwardArgs b;
  b.dloss = dloss.ref();
  b.logits = logits.ref();
  b.targets = targets.ref();
  b.weight = weight.ref();
  b.lse = saved.ref();
  b.dlogits = dlogits.mut();
  ASSERT_OK(back.can_implement(b));
  CrossEntropyBackwardArgs in_place = b;
  in_place.dlogits = logits.mut();
  EXPECT_TRUE(back.can_implement(in_place).is_ok());
  CrossEntropyBackwardArgs no_lse = b;
  no_lse.lse = {};
  const Status missing = back.can_implement(no_lse);
  EXPECT_FALSE(missing.is_ok());
  EXPECT_NE(missing.message().find("args.lse"), std::string::npos) << missing.message();
}

INSTANTIATE_TEST_SUITE_P(CrossEntropy, CrossEntropyTest, ::testing::ValuesIn(testing::all_float_cases()),
                         testing::case_name);

}  // namespace
}  // namespace baracuda

// The fused linear + cross-entropy plans on every backend and dtype, against a plain f64 reference
// (logits = hidden @ weight^T + bias, then the cross-entropy of include/baracuda/ops/loss.hpp) within a
// tolerance that grows with D: every reduction, with and without bias, chunks that do not divide N,
// that do, of one row and of more rows than N; V = 1; ignored, bad and every-ignored targets (the mean
// NaN); smoothing, z-loss, class weights; the gradients written by the forward (grad_in_forward) and
// then scaled, and the recomputing backward; finite differences (f64); the unfused library plans
// (MatmulPlan then CrossEntropyPlan); bit identity over repeated runs; the workspace bound; errors.
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
using Desc = LinearCrossEntropyDescriptor;

// The inputs as values (quantized to their dtypes) and as uploaded tensors.
struct Inputs {
  Desc d;
  std::vector<double> hidden, weight, bias, class_weight;
  std::vector<int64_t> targets;
  Tensor th, tw, tb, tt, tcw;
};

// What the plans give, downloaded (or what the f64 reference expects).
struct Results {
  std::vector<double> loss, lse, dhidden, dweight, dbias;
  int64_t bad = 0;
};

DType acc_of(DType dtype) { return dtype == DType::f64 ? DType::f64 : DType::f32; }
DType grad_of(const Desc& d) { return d.weight_grad_dtype.value_or(d.dtype); }

// The f64 reference: the loss (none: per row), lse, and the gradients for `dloss` (none: per row;
// else one value; empty: no gradients).
Results reference(const Inputs& in, const std::vector<double>& dloss) {
  const Desc& d = in.d;
  const int64_t N = d.tokens, D = d.hidden_size, V = d.vocab_size;
  const double e = d.label_smoothing;
  auto cw = [&](int64_t c) { return d.has_class_weight ? in.class_weight[static_cast<size_t>(c)] : 1.0; };
  double weights = 0;
  for (int64_t c = 0; c < V; ++c) weights += cw(c);
  Results r;
  std::vector<double> logits(static_cast<size_t>(N * V));
  std::vector<bool> counts(static_cast<size_t>(N));
  double ce_sum = 0, z_sum = 0, weight_sum = 0;
  for (int64_t i = 0; i < N; ++i) {
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t v = 0; v < V; ++v) {
      double z = d.has_bias ? in.bias[static_cast<size_t>(v)] : 0.0;
      for (int64_t k = 0; k < D; ++k)
        z += in.hidden[static_cast<size_t>(i * D + k)] * in.weight[static_cast<size_t>(v * D + k)];
      logits[static_cast<size_t>(i * V + v)] = z;
      max = std::max(max, z);
    }
    double sum = 0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp(logits[static_cast<size_t>(i * V + v)] - max);
    const double lse = max + std::log(sum);
    r.lse.push_back(lse);
    const int64_t t = in.targets[static_cast<size_t>(i)];
    const bool bad = t != d.ignore_index && (t < 0 || t >= V);
    r.bad += bad;
    counts[static_cast<size_t>(i)] = t != d.ignore_index && !bad;
    double loss = 0;
    if (counts[static_cast<size_t>(i)]) {
      double ce = (1 - e) * cw(t) * (lse - logits[static_cast<size_t>(i * V + t)]);
      for (int64_t v = 0; v < V; ++v)
        ce += e / static_cast<double>(V) * cw(v) * (lse - logits[static_cast<size_t>(i * V + v)]);
      ce_sum += ce;
      z_sum += d.z_loss * lse * lse;
      weight_sum += cw(t);
      loss = ce + d.z_loss * lse * lse;
    }
    r.loss.push_back(loss);
  }
  if (d.reduction == LossReduction::sum) r.loss = {ce_sum + z_sum};
  if (d.reduction == LossReduction::mean) r.loss = {(ce_sum + z_sum) / weight_sum};  // (no class weights with z)
  if (dloss.empty()) return r;
  r.dhidden.assign(static_cast<size_t>(N * D), 0.0);
  r.dweight.assign(static_cast<size_t>(V * D), 0.0);
  r.dbias.assign(static_cast<size_t>(V), 0.0);
  for (int64_t i = 0; i < N; ++i) {
    if (!counts[static_cast<size_t>(i)]) continue;
    double g = d.reduction == LossReduction::none ? dloss[static_cast<size_t>(i)] : dloss[0];
    if (d.reduction == LossReduction::mean) g /= weight_sum;
    const int64_t t = in.targets[static_cast<size_t>(i)];
    const double lse = r.lse[static_cast<size_t>(i)];
    for (int64_t v = 0; v < V; ++v) {
      const double p = std::exp(logits[static_cast<size_t>(i * V + v)] - lse);
      const double dz = g * ((1 - e) * cw(t) * (p - (v == t)) + e / static_cast<double>(V) * (weights * p - cw(v)) +
                             2 * d.z_loss * lse * p);
      r.dbias[static_cast<size_t>(v)] += dz;
      for (int64_t k = 0; k < D; ++k) {
        r.dhidden[static_cast<size_t>(i * D + k)] += dz * in.weight[static_cast<size_t>(v * D + k)];
        r.dweight[static_cast<size_t>(v * D + k)] += dz * in.hidden[static_cast<size_t>(i * D + k)];
      }
    }
  }
  return r;
}

class LinearCrossEntropyTest : public testing::BackendDTypeTest {
 protected:
  Desc desc(int64_t n, int64_t d, int64_t v, LossReduction reduction, bool bias = false, int64_t chunk_rows = 0) {
    Desc x;
    x.dtype = dtype();
    x.tokens = n;
    x.hidden_size = d;
    x.vocab_size = v;
    x.reduction = reduction;
    x.has_bias = bias;
    x.chunk_rows = chunk_rows;
    return x;
  }
  Tensor upload(DType dtype, const Shape& shape, std::vector<double>& values, double lo, double hi) {
    Tensor t = unwrap(harness::random_tensor(backend(), dtype, testing::contiguous(shape), rng_, lo, hi));
    values.resize(static_cast<size_t>(shape.numel()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = t.at(static_cast<int64_t>(i));
    return t;
  }
  Tensor output(DType dtype, const Shape& shape) {
    Tensor t = unwrap(harness::random_tensor(backend(), dtype, testing::contiguous(shape), rng_));
    EXPECT_TRUE(harness::poison(t).is_ok());
    return t;
  }
  // Random inputs; targets from [-2, V + 2) (bad ones occur) with every fifth ignored, unless given.
  Inputs inputs(const Desc& d, std::vector<int64_t> targets = {}) {
    Inputs in;
    in.d = d;
    const double scale = 2.0 / std::sqrt(static_cast<double>(std::max<int64_t>(d.hidden_size, 1)));
    in.th = upload(d.dtype, {d.tokens, d.hidden_size}, in.hidden, -1, 1);
    in.tw = upload(d.dtype, {d.vocab_size, d.hidden_size}, in.weight, -scale, scale);
    if (d.has_bias) in.tb = upload(d.dtype, {d.vocab_size}, in.bias, -0.5, 0.5);
    if (d.has_class_weight) in.tcw = upload(acc_of(d.dtype), {d.vocab_size}, in.class_weight, 0.5, 1.5);
    if (targets.empty())
      for (int64_t i = 0; i < d.tokens; ++i)
        targets.push_back(i % 5 == 3 ? d.ignore_index
                                     : std::uniform_int_distribution<int64_t>(-2, d.vocab_size + 1)(rng_));
    in.targets = targets;
    std::vector<double> values(targets.begin(), targets.end());
    in.tt = unwrap(harness::random_tensor(backend(), d.index_dtype, testing::contiguous({d.tokens}), rng_));
    for (size_t i = 0; i < values.size(); ++i) in.tt.host[static_cast<size_t>(in.tt.offset) + i] = values[i];
    EXPECT_TRUE(in.tt.upload().is_ok());
    return in;
  }
  static std::vector<double> values(Tensor& t) {
    EXPECT_TRUE(t.download().is_ok());
    std::vector<double> v;
    for (int64_t i = 0, numel = t.shape.numel(); i < numel; ++i) v.push_back(t.at(i));
    return v;
  }
  Status run(const auto& plan, const auto& args) {
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(plan.workspace_size(), 1)));
    return plan.run(stream(), {ws.data(), ws.size()}, args);
  }

  // The forward (with the gradients when d.grad_in_forward), downloaded.
  Results forward(Inputs& in, Tensor* lse_out = nullptr) {
    const Desc& d = in.d;
    const LinearCrossEntropyPlan plan = unwrap(LinearCrossEntropyPlan::select(stream(), d));
    Tensor loss = output(acc_of(d.dtype), d.reduction == LossReduction::none ? Shape{d.tokens} : Shape{});
    Tensor lse = output(acc_of(d.dtype), {d.tokens});
    Tensor dh, dw, db;
    harness::Buffer bad = unwrap(harness::Buffer::allocate(backend(), sizeof(int64_t)));
    int64_t zero = 0;
    EXPECT_TRUE(bad.upload(&zero, sizeof zero).is_ok());
    LinearCrossEntropyArgs a{in.th.ref(), in.tw.ref(), in.tb.ref(), in.tt.ref(), in.tcw.ref(), loss.mut(),
                             lse.mut(),   {},          {},          {},          nullptr};
    if (d.grad_in_forward) {
      dh = output(d.dtype, {d.tokens, d.hidden_size});
      dw = output(grad_of(d), {d.vocab_size, d.hidden_size});
      a.dhidden = dh.mut();
      a.dweight = dw.mut();
      if (d.has_bias) {
        db = output(grad_of(d), {d.vocab_size});
        a.dbias = db.mut();
      }
    }
    a.bad_index_count = static_cast<int64_t*>(bad.data());
    const Status s = run(plan, a);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    Results r;
    r.loss = values(loss);
    r.lse = values(lse);
    if (d.grad_in_forward) {
      r.dhidden = values(dh);
      r.dweight = values(dw);
      if (d.has_bias) r.dbias = values(db);
    }
    EXPECT_TRUE(bad.download(&r.bad, sizeof r.bad).is_ok());
    if (lse_out) *lse_out = std::move(lse);
    return r;
  }

  // The recomputing backward (d.grad_in_forward false) from the forward's lse.
  Results backward(Inputs& in, const std::vector<double>& dloss_values) {
    const Desc& d = in.d;
    Tensor lse;
    forward(in, &lse);
    const LinearCrossEntropyBackwardPlan plan = unwrap(LinearCrossEntropyBackwardPlan::select(stream(), d));
    std::vector<double> unused;
    Tensor dloss =
        upload(acc_of(d.dtype), d.reduction == LossReduction::none ? Shape{d.tokens} : Shape{}, unused, 0, 1);
    for (size_t i = 0; i < dloss_values.size(); ++i)
      dloss.host[static_cast<size_t>(dloss.offset) + i] = dloss_values[i];
    EXPECT_TRUE(dloss.upload().is_ok());
    Tensor dh = output(d.dtype, {d.tokens, d.hidden_size}), dw = output(grad_of(d), {d.vocab_size, d.hidden_size});
    Tensor db = d.has_bias ? output(grad_of(d), {d.vocab_size}) : Tensor{};
    LinearCrossEntropyBackwardArgs a{dloss.ref(),  in.th.ref(), in.tw.ref(), in.tb.ref(), in.tt.ref(),
                                     in.tcw.ref(), lse.ref(),   dh.mut(),    dw.mut(),    db.mut()};
    const Status s = run(plan, a);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    Results r;
    r.dhidden = values(dh);
    r.dweight = values(dw);
    if (d.has_bias) r.dbias = values(db);
    return r;
  }

  // The tolerance of this dtype, growing with the terms the matmuls sum.
  double tolerance(const Desc& d) const {
    const double base = dtype() == DType::f64   ? 1e-11
                        : dtype() == DType::f32 ? 2e-6
                        : dtype() == DType::f16 ? 4e-3
                                                : 3e-2;
    return base * std::sqrt(1.0 + static_cast<double>(std::max(d.hidden_size, d.vocab_size)) / 16.0);
  }
  // The gradients of 16-bit dtypes come from dlogits rounded to dtype (as Liger-Kernel's): their
  // errors are relative to the sum of the terms' magnitudes, not to the result.
  ::testing::AssertionResult close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                                   double scale = 1.0) {
    if (got.size() != want.size())
      return ::testing::AssertionFailure() << got.size() << " values, expected " << want.size();
    for (size_t i = 0; i < got.size(); ++i)
      if (!(std::fabs(got[i] - want[i]) <= tol * (scale + std::fabs(want[i]))))
        return ::testing::AssertionFailure()
               << "[" << i << "] got " << got[i] << " want " << want[i] << " (tol " << tol << ")";
    return ::testing::AssertionSuccess();
  }
  void expect_forward(Inputs& in) {
    const Results got = forward(in);
    std::vector<double> dloss;
    if (in.d.grad_in_forward) dloss = {1.0};
    const Results want = reference(in, dloss);
    const double tol = tolerance(in.d);
    EXPECT_TRUE(close(got.loss, want.loss, tol)) << "loss";
    EXPECT_TRUE(close(got.lse, want.lse, tol)) << "lse";
    EXPECT_EQ(got.bad, want.bad);
    if (!in.d.grad_in_forward) return;
    // mean: each gradient is 1 / (weight) of a sum's, whose terms are O(1).
    const double g = in.d.reduction == LossReduction::mean ? 1.0 / std::max<double>(1, in.d.tokens) : 1.0;
    EXPECT_TRUE(close(got.dhidden, want.dhidden, tol, g)) << "dhidden";
    EXPECT_TRUE(close(got.dweight, want.dweight, tol, g * std::sqrt(in.d.tokens + 1.0))) << "dweight";
    if (in.d.has_bias) {
      EXPECT_TRUE(close(got.dbias, want.dbias, tol, g * std::sqrt(in.d.tokens + 1.0))) << "dbias";
    }
  }
};

TEST_P(LinearCrossEntropyTest, ForwardEveryReductionBiasAndChunk) {
  // 13 tokens: chunks of 4 (a tail of 1), 13 (one), 1, and 20 (more than N).
  for (LossReduction r : {LossReduction::none, LossReduction::sum, LossReduction::mean})
    for (bool bias : {false, true})
      for (int64_t chunk : {4, 0, 1, 20}) {
        SCOPED_TRACE(std::string(loss_reduction_name(r)) + (bias ? " bias" : "") + " chunk " + std::to_string(chunk));
        Inputs in = inputs(desc(13, 24, 37, r, bias, chunk));
        expect_forward(in);
      }
}

TEST_P(LinearCrossEntropyTest, ChunkBoundaries) {
  // N a multiple of the chunk (no tail), one more (a tail of one), one fewer.
  for (int64_t n : {8, 9, 7}) {
    SCOPED_TRACE("N " + std::to_string(n));
    Desc d = desc(n, 16, 29, LossReduction::mean, true, 4);
    d.grad_in_forward = true;
    Inputs in = inputs(d);
    expect_forward(in);
  }
}

TEST_P(LinearCrossEntropyTest, OneClass) {
  for (LossReduction r : {LossReduction::none, LossReduction::sum, LossReduction::mean}) {
    Desc d = desc(6, 8, 1, r, true, 4);
    Inputs in = inputs(d, {0, 0, -100, 0, 1, 0});
    expect_forward(in);
    if (r != LossReduction::none) {
      d.grad_in_forward = true;
      Inputs g = inputs(d, {0, 0, -100, 0, 1, 0});
      expect_forward(g);
    }
  }
}

TEST_P(LinearCrossEntropyTest, Options) {
  for (LossReduction r : {LossReduction::none, LossReduction::sum, LossReduction::mean}) {
    SCOPED_TRACE(std::string(loss_reduction_name(r)));
    Desc d = desc(11, 12, 23, r, true, 3);
    d.label_smoothing = 0.1;
    d.z_loss = 1e-3;
    d.ignore_index = 3;  // a valid class
    Inputs in = inputs(d);
    expect_forward(in);
    d.z_loss = 0;
    d.has_class_weight = true;
    Inputs weighted = inputs(d);
    expect_forward(weighted);
    d.grad_in_forward = r != LossReduction::none;
    Inputs grads = inputs(d);
    expect_forward(grads);
    if (d.grad_in_forward) {
      d.has_class_weight = false;
      d.z_loss = 1e-3;
      Inputs z = inputs(d);
      expect_forward(z);
    }
  }
}

TEST_P(LinearCrossEntropyTest, EveryTargetIgnored) {
  for (LossReduction r : {LossReduction::sum, LossReduction::mean}) {
    Desc d = desc(5, 8, 9, r, true, 2);
    d.grad_in_forward = true;
    Inputs in = inputs(d, std::vector<int64_t>(5, -100));
    const Results got = forward(in);
    if (r == LossReduction::mean)
      EXPECT_TRUE(std::isnan(got.loss[0])) << got.loss[0];  // 0 / 0, as PyTorch
    else
      EXPECT_EQ(got.loss[0], 0.0);
    for (const std::vector<double>* g : {&got.dhidden, &got.dweight, &got.dbias})
      for (double v : *g) EXPECT_EQ(v, 0.0);
  }
}

TEST_P(LinearCrossEntropyTest, NoTokens) {
  for (LossReduction r : {LossReduction::sum, LossReduction::mean}) {
    Desc d = desc(0, 8, 9, r, true);
    d.grad_in_forward = true;
    Inputs in = inputs(d);
    const Results got = forward(in);
    if (r == LossReduction::mean)
      EXPECT_TRUE(std::isnan(got.loss[0]));
    else
      EXPECT_EQ(got.loss[0], 0.0);
    for (const std::vector<double>* g : {&got.dweight, &got.dbias})
      for (double v : *g) EXPECT_EQ(v, 0.0);
  }
}

TEST_P(LinearCrossEntropyTest, GradInForwardWithF32WeightGrad) {
  if (dtype() != DType::f16 && dtype() != DType::bf16) GTEST_SKIP() << "f32 weight gradients are for 16-bit dtypes";
  Desc d = desc(10, 16, 21, LossReduction::sum, true, 3);
  d.grad_in_forward = true;
  d.weight_grad_dtype = DType::f32;
  Inputs in = inputs(d);
  expect_forward(in);
}

TEST_P(LinearCrossEntropyTest, RecomputingBackward) {
  for (LossReduction r : {LossReduction::none, LossReduction::sum, LossReduction::mean})
    for (bool bias : {false, true}) {
      SCOPED_TRACE(std::string(loss_reduction_name(r)) + (bias ? " bias" : ""));
      Desc d = desc(9, 12, 19, r, bias, 4);
      d.label_smoothing = 0.05;
      Inputs in = inputs(d);
      std::vector<double> dloss;
      for (int64_t i = 0; i < (r == LossReduction::none ? d.tokens : 1); ++i)
        dloss.push_back(harness::quantize(acc_of(dtype()), 0.25 + 0.1 * static_cast<double>(i)));
      const Results got = backward(in, dloss);
      const Results want = reference(in, dloss);
      const double tol = tolerance(d), g = r == LossReduction::mean ? 1.0 / static_cast<double>(d.tokens) : 1.0;
      EXPECT_TRUE(close(got.dhidden, want.dhidden, tol, g)) << "dhidden";
      EXPECT_TRUE(close(got.dweight, want.dweight, tol, g * std::sqrt(d.tokens + 1.0))) << "dweight";
      if (bias) {
        EXPECT_TRUE(close(got.dbias, want.dbias, tol, g * std::sqrt(d.tokens + 1.0))) << "dbias";
      }
    }
}

TEST_P(LinearCrossEntropyTest, BackwardScalesTheForwardsGradients) {
  // grad_in_forward then the backward with dloss = 0.75 equals the recomputing backward's gradients.
  Desc d = desc(7, 8, 13, LossReduction::mean, true, 3);
  d.grad_in_forward = true;
  Inputs in = inputs(d);
  const LinearCrossEntropyPlan fwd = unwrap(LinearCrossEntropyPlan::select(stream(), d));
  const LinearCrossEntropyBackwardPlan bwd = unwrap(LinearCrossEntropyBackwardPlan::select(stream(), d));
  Tensor loss = output(acc_of(dtype()), {}), dh = output(dtype(), {7, 8}), dw = output(dtype(), {13, 8}),
         db = output(dtype(), {13});
  LinearCrossEntropyArgs a{in.th.ref(), in.tw.ref(), in.tb.ref(), in.tt.ref(), {},
                           loss.mut(),  {},          dh.mut(),    dw.mut(),    db.mut()};
  ASSERT_OK(run(fwd, a));
  std::vector<double> unused;
  Tensor dloss = upload(acc_of(dtype()), {}, unused, 0, 1);
  dloss.host[static_cast<size_t>(dloss.offset)] = 0.75;
  ASSERT_OK(dloss.upload());
  // The backward of grad_in_forward reads dloss and the gradients alone.
  LinearCrossEntropyBackwardArgs b{dloss.ref(), {}, {}, {}, {}, {}, {}, dh.mut(), dw.mut(), db.mut()};
  ASSERT_OK(run(bwd, b));
  const Results want = reference(in, {0.75});
  const double tol = tolerance(d), g = 1.0 / 7;
  EXPECT_TRUE(close(values(dh), want.dhidden, tol, g));
  EXPECT_TRUE(close(values(dw), want.dweight, tol, g * 3));
  EXPECT_TRUE(close(values(db), want.dbias, tol, g * 3));
}

TEST_P(LinearCrossEntropyTest, FiniteDifferences) {
  if (dtype() != DType::f64) GTEST_SKIP() << "finite differences in f64";
  for (LossReduction r : {LossReduction::sum, LossReduction::mean}) {
    Desc d = desc(5, 6, 7, r, true, 2);
    d.label_smoothing = 0.1;
    d.z_loss = 0.01;
    Inputs in = inputs(d, {1, -100, 6, 0, 3});
    const Results grads = backward(in, {1.0});
    auto loss_at = [&](std::vector<double>& values, Tensor& t, size_t i, double step) {
      const double saved = values[i];
      values[i] = t.host[static_cast<size_t>(t.offset) + i] = saved + step;
      EXPECT_TRUE(t.upload().is_ok());
      const double l = forward(in).loss[0];
      values[i] = t.host[static_cast<size_t>(t.offset) + i] = saved;
      EXPECT_TRUE(t.upload().is_ok());
      return l;
    };
    const double h = 1e-6;
    auto check = [&](std::vector<double>& values, Tensor& t, const std::vector<double>& grad, const char* name) {
      for (size_t i = 0; i < values.size(); i += 3) {
        const double fd = (loss_at(values, t, i, h) - loss_at(values, t, i, -h)) / (2 * h);
        EXPECT_NEAR(grad[i], fd, 1e-6 * (1 + std::fabs(fd))) << name << "[" << i << "]";
      }
    };
    check(in.hidden, in.th, grads.dhidden, "dhidden");
    check(in.weight, in.tw, grads.dweight, "dweight");
    check(in.bias, in.tb, grads.dbias, "dbias");
  }
}

TEST_P(LinearCrossEntropyTest, MatchesTheUnfusedPlans) {
  if (dtype() != DType::f32 && dtype() != DType::f64) GTEST_SKIP() << "the unfused logits are rounded to dtype";
  for (LossReduction r : {LossReduction::none, LossReduction::sum, LossReduction::mean}) {
    const Desc d = desc(10, 20, 33, r, false, 3);
    Inputs in = inputs(d);
    const Results fused = forward(in);
    MatmulDescriptor m;
    m.dtype = dtype();
    m.a = {10, 20};
    m.b = {33, 20};
    m.transpose_b = true;
    Tensor logits = output(dtype(), {10, 33});
    ASSERT_OK(run(unwrap(MatmulPlan::select(stream(), m)), MatmulArgs{in.th.ref(), in.tw.ref(), {}, logits.mut()}));
    CrossEntropyDescriptor c;
    c.dtype = dtype();
    c.shape = {10, 33};
    c.reduction = r;
    Tensor loss = output(dtype(), r == LossReduction::none ? Shape{10} : Shape{});
    ASSERT_OK(run(unwrap(CrossEntropyPlan::select(stream(), c)),
                  CrossEntropyArgs{logits.ref(), in.tt.ref(), {}, loss.mut(), {}, nullptr}));
    EXPECT_TRUE(close(fused.loss, values(loss), tolerance(d)));
  }
}

TEST_P(LinearCrossEntropyTest, BitIdentical) {
  Desc d = desc(11, 16, 41, LossReduction::mean, true, 4);
  d.grad_in_forward = true;
  d.label_smoothing = 0.1;
  Inputs in = inputs(d);
  const Results first = forward(in);
  for (int run = 1; run < testing::rerun_count(); ++run) {
    const Results again = forward(in);
    for (auto [a, b] : {std::pair{&first.loss, &again.loss}, std::pair{&first.dhidden, &again.dhidden},
                        std::pair{&first.dweight, &again.dweight}, std::pair{&first.dbias, &again.dbias}})
      ASSERT_EQ(0, std::memcmp(a->data(), b->data(), a->size() * sizeof(double))) << "run " << run;
  }
}

TEST_P(LinearCrossEntropyTest, WorkspaceIsBounded) {
  // The problem: 16384 tokens of 4096 over 128256 classes, and far more tokens.
  for (int64_t n : {int64_t{16384}, int64_t{1} << 24})
    for (bool grads : {false, true}) {
      Desc d = desc(n, 4096, 128256, LossReduction::mean, true);
      d.grad_in_forward = grads;
      const LinearCrossEntropyPlan plan = unwrap(LinearCrossEntropyPlan::select(stream(), d));
      EXPECT_LE(plan.workspace_size(), size_t{256} << 20);
      EXPECT_GT(plan.workspace_size(), size_t{64} << 20);  // the chunk is as large as the budget lets it be
    }
  // A lower budget, honoured.
  PlanPreference small;
  small.workspace_limit = size_t{1} << 20;
  const Desc d = desc(4096, 64, 1000, LossReduction::sum);
  const LinearCrossEntropyPlan plan = unwrap(LinearCrossEntropyPlan::select(stream(), d, small));
  EXPECT_LE(plan.workspace_size(), small.workspace_limit);
}

TEST_P(LinearCrossEntropyTest, Errors) {
  const std::string fwd = "LinearCrossEntropyPlan";
  auto select_error = [&](auto edit, StatusCode code, const std::string& field) {
    Desc d = desc(4, 8, 10, LossReduction::mean);
    edit(d);
    const Expected<LinearCrossEntropyPlan> p = LinearCrossEntropyPlan::select(stream(), d);
    EXPECT_TRUE(testing::is_error(p.status(), code, fwd, field));
  };
  select_error([](Desc& d) { d.tokens = -1; }, StatusCode::invalid_problem, "descriptor.tokens");
  select_error([](Desc& d) { d.hidden_size = -1; }, StatusCode::invalid_problem, "descriptor.hidden_size");
  select_error([](Desc& d) { d.vocab_size = 0; }, StatusCode::invalid_problem, "descriptor.vocab_size");
  select_error([](Desc& d) { d.label_smoothing = 2; }, StatusCode::invalid_problem, "descriptor.label_smoothing");
  select_error([](Desc& d) { d.z_loss = -1; }, StatusCode::invalid_problem, "descriptor.z_loss");
  select_error(
      [](Desc& d) {
        d.reduction = LossReduction::none;
        d.grad_in_forward = true;
      },
      StatusCode::invalid_problem, "descriptor.grad_in_forward");
  select_error(
      [](Desc& d) {
        d.has_class_weight = true;
        d.z_loss = 0.01;
      },
      StatusCode::unsupported, "descriptor.z_loss");
  select_error([](Desc& d) { d.weight_grad_dtype = DType::i32; }, StatusCode::unsupported,
               "descriptor.weight_grad_dtype");
  select_error([](Desc& d) { d.index_dtype = DType::f32; }, StatusCode::unsupported, "descriptor.index_dtype");
  {
    PlanPreference tiny;
    tiny.workspace_limit = 4096;
    Desc d = desc(4, 8, 10000, LossReduction::sum);
    EXPECT_TRUE(testing::is_error(LinearCrossEntropyPlan::select(stream(), d, tiny).status(), StatusCode::unsupported,
                                  fwd, "descriptor.vocab_size"));
    d.chunk_rows = 4;  // 16 KB of logits
    d.vocab_size = 1000;
    EXPECT_TRUE(testing::is_error(LinearCrossEntropyPlan::select(stream(), d, tiny).status(), StatusCode::unsupported,
                                  fwd, "descriptor.chunk_rows"));
  }
  // Views against the descriptor: D, V, N and dtypes.
  const Desc d = desc(4, 8, 10, LossReduction::mean);
  Inputs in = inputs(d);
  const LinearCrossEntropyPlan plan = unwrap(LinearCrossEntropyPlan::select(stream(), d));
  Tensor loss = output(acc_of(dtype()), {});
  std::vector<double> unused;
  Tensor wrong_d = upload(dtype(), {4, 9}, unused, -1, 1), wrong_v = upload(dtype(), {11, 8}, unused, -1, 1);
  Tensor wrong_n = unwrap(harness::random_tensor(backend(), DType::i64, testing::contiguous({5}), rng_));
  const DType other = dtype() == DType::f32 ? DType::f64 : DType::f32;
  Tensor wrong_dtype = upload(other, {4, 8}, unused, -1, 1);
  const LinearCrossEntropyArgs good{in.th.ref(), in.tw.ref(), {}, in.tt.ref(), {}, loss.mut(), {}, {}, {}, {}, nullptr};
  auto args_error = [&](auto edit, const std::string& field) {
    LinearCrossEntropyArgs a = good;
    edit(a);
    EXPECT_TRUE(testing::is_error(plan.can_implement(a), StatusCode::invalid_problem, fwd, field)) << field;
  };
  EXPECT_TRUE(plan.can_implement(good).is_ok());
  args_error([&](LinearCrossEntropyArgs& a) { a.hidden = wrong_d.ref(); }, "args.hidden");
  args_error([&](LinearCrossEntropyArgs& a) { a.weight = wrong_v.ref(); }, "args.weight");
  args_error([&](LinearCrossEntropyArgs& a) { a.targets = wrong_n.ref(); }, "args.targets");
  args_error([&](LinearCrossEntropyArgs& a) { a.hidden = wrong_dtype.ref(); }, "args.hidden");
  args_error([&](LinearCrossEntropyArgs& a) { a.dhidden = wrong_dtype.mut(); }, "args.dhidden");  // no grad_in_forward
  // A weight that is no BLAS matrix (a broadcast row): unsupported, named.
  Tensor row = upload(dtype(), {1, 8}, unused, -1, 1);
  LinearCrossEntropyArgs broadcast = good;
  broadcast.weight = AnyTensorRef{row.ref().data, dtype(), Shape{10, 8}, Strides{0, 1}, 8};
  EXPECT_TRUE(testing::is_error(plan.can_implement(broadcast), StatusCode::unsupported, fwd, "args.weight"));
}

INSTANTIATE_TEST_SUITE_P(LinearCrossEntropy, LinearCrossEntropyTest, ::testing::ValuesIn(testing::all_float_cases()),
                         testing::case_name);

}  // namespace
}  // namespace baracuda

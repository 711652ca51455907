// The rotary plans beyond the op table (tools/harness/rows/rotary.cpp): positions near 10^6 against
// an f64 reference in every dtype (f64 too), in place, [B, H, S, D] views, positions broadcast over
// the batch, the backward as the forward's exact inverse, the same bits on both backends, and the
// overlaps and views refused, on every backend and dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "harness/data.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::unwrap;

RotaryDescriptor rope(DType dtype, int64_t batch, int64_t seq, int64_t q_heads, int64_t k_heads, int64_t head_dim,
                      int64_t rotary_dim, RotaryLayout layout) {
  RotaryDescriptor d;
  d.dtype = dtype;
  d.batch = batch;
  d.seq_len = seq;
  d.q_heads = q_heads;
  d.k_heads = k_heads;
  d.head_dim = head_dim;
  d.rotary_dim = rotary_dim;
  d.layout = layout;
  return d;
}

Shape heads_shape(const RotaryDescriptor& d, int64_t heads) { return {d.batch, d.seq_len, heads, d.head_dim}; }

// [B, H, S, D] buffers seen as [B, S, H, D] views.
harness::TensorSpec head_major(const RotaryDescriptor& d, int64_t heads) {
  const int64_t S = d.seq_len, D = d.head_dim;
  return testing::with_strides(heads_shape(d, heads), {heads * S * D, D, S * D, 1});
}

// Tensors of one problem: q, k, their outputs, positions.
struct RotaryTensors {
  Tensor q, k, q_out, k_out, positions;
};

class RotaryTest : public testing::BackendDTypeTest {
 protected:
  Tensor input(const harness::TensorSpec& spec, DType dtype, double lo = -1.0, double hi = 1.0) {
    return unwrap(harness::random_tensor(backend(), dtype, spec, rng_, lo, hi));
  }
  Tensor output(const harness::TensorSpec& spec) {
    Tensor t = input(spec, dtype());
    EXPECT_TRUE(harness::poison(t).is_ok());
    return t;
  }
  // A new tensor of `spec` (on `on`, default this backend) holding x's values.
  Tensor copy_of(const Tensor& x, const harness::TensorSpec& spec, std::optional<Backend> on = {}) {
    Tensor c = unwrap(harness::random_tensor(on.value_or(backend()), x.dtype, spec, rng_));
    for (int64_t i = 0, numel = x.shape.numel(); i < numel; ++i)
      c.host[static_cast<size_t>(c.offset + c.element_offset(i))] = x.at(i);
    EXPECT_TRUE(c.upload().is_ok());
    return c;
  }
  RotaryTensors tensors(const RotaryDescriptor& d, double lo = -1000, double hi = 1000) {
    RotaryTensors t;
    t.q = input(testing::contiguous(heads_shape(d, d.q_heads)), dtype());
    t.k = input(testing::contiguous(heads_shape(d, d.k_heads)), dtype());
    t.q_out = output(testing::contiguous(heads_shape(d, d.q_heads)));
    t.k_out = output(testing::contiguous(heads_shape(d, d.k_heads)));
    t.positions = input(testing::contiguous({d.batch, d.seq_len}), d.index_dtype, lo, hi);
    return t;
  }
  // The forward (or backward) from q, k into q_out, k_out.
  Status run(const RotaryDescriptor& d, RotaryTensors& t, bool backward = false) {
    Status s;
    if (backward) {
      Expected<RotaryBackwardPlan> plan = RotaryBackwardPlan::select(stream(), d);
      if (!plan) return plan.status();
      RotaryBackwardArgs a;
      a.dq_out = t.q.ref();
      a.dk_out = t.k.ref();
      a.positions = t.positions.ref();
      a.dq = t.q_out.mut();
      a.dk = t.k_out.mut();
      s = plan->run(stream(), {}, a);
    } else {
      Expected<RotaryPlan> plan = RotaryPlan::select(stream(), d);
      if (!plan) return plan.status();
      RotaryArgs a;
      a.q = t.q.ref();
      a.k = t.k.ref();
      a.positions = t.positions.ref();
      a.q_out = t.q_out.mut();
      a.k_out = t.k_out.mut();
      s = plan->run(stream(), {}, a);
    }
    if (!s) return s;
    if (Status d1 = t.q_out.download(); !d1) return d1;
    return t.k_out.download();
  }
};

// Element i ([B, S, H, D] order) of x rotated in f64 by libm, with inv_freq from the base.
double rotated(const RotaryDescriptor& d, int64_t heads, const Tensor& x, const Tensor& positions, int64_t i) {
  const int64_t D = d.head_dim, rd = d.rotary_dim ? d.rotary_dim : D, half = rd / 2;
  const int64_t e = i % D, token = i / D / heads, row = i - e;
  if (e >= rd) return x.at(i);
  const bool interleaved = d.layout == RotaryLayout::interleaved;
  const int64_t pair = interleaved ? e / 2 : e % half;
  const bool first = interleaved ? e % 2 == 0 : e < half;
  const int64_t ea = interleaved ? 2 * pair : pair, eb = interleaved ? ea + 1 : ea + half;
  const double angle = positions.at(token) * std::pow(d.base, -2.0 * static_cast<double>(pair) / rd);
  const double a = x.at(row + ea), b = x.at(row + eb), c = std::cos(angle), s = std::sin(angle);
  return first ? a * c - b * s : b * c + a * s;
}

TEST_P(RotaryTest, PositionsNearAMillionMatchAnF64Reference) {
  // An f32 angle at 10^6 is off by up to 0.03 rad; the plans' f64 angle by about 10^-10.
  const double tol = dtype() == DType::f64 ? 1e-8 : harness::tolerance(dtype());
  for (RotaryLayout layout : {RotaryLayout::half_split, RotaryLayout::interleaved}) {
    SCOPED_TRACE(std::string(rotary_layout_name(layout)));
    RotaryDescriptor d = rope(dtype(), 2, 9, 4, 2, 64, 48, layout);
    d.base = 500000;
    RotaryTensors t = tensors(d, 1e6, 1e6 + 4096);
    ASSERT_OK(run(d, t));
    EXPECT_TRUE(testing::all_close(
        t.q_out, [&](int64_t i) { return rotated(d, 4, t.q, t.positions, i); }, tol));
    EXPECT_TRUE(testing::all_close(
        t.k_out, [&](int64_t i) { return rotated(d, 2, t.k, t.positions, i); }, tol));
  }
}

TEST_P(RotaryTest, InPlaceGivesTheSameBits) {
  for (RotaryLayout layout : {RotaryLayout::half_split, RotaryLayout::interleaved}) {
    const RotaryDescriptor d = rope(dtype(), 2, 7, 8, 2, 40, 24, layout);
    RotaryTensors t = tensors(d);
    for (bool backward : {false, true}) {
      SCOPED_TRACE(std::string(rotary_layout_name(layout)) + (backward ? ", backward" : ", forward"));
      ASSERT_OK(harness::poison(t.q_out));
      ASSERT_OK(harness::poison(t.k_out));
      ASSERT_OK(run(d, t, backward));
      // q_out = q, k_out = k: the same buffers, the same views.
      Tensor q = copy_of(t.q, testing::contiguous(t.q.shape)), k = copy_of(t.k, testing::contiguous(t.k.shape));
      if (backward) {
        RotaryBackwardPlan plan = unwrap(RotaryBackwardPlan::select(stream(), d));
        ASSERT_OK(plan.run(stream(), {}, {q.ref(), k.ref(), t.positions.ref(), {}, q.mut(), k.mut()}));
      } else {
        RotaryPlan plan = unwrap(RotaryPlan::select(stream(), d));
        ASSERT_OK(plan.run(stream(), {}, {q.ref(), k.ref(), t.positions.ref(), {}, q.mut(), k.mut()}));
      }
      ASSERT_OK(q.download());
      ASSERT_OK(k.download());
      for (int64_t i = 0, numel = q.shape.numel(); i < numel; ++i) ASSERT_EQ(q.at(i), t.q_out.at(i)) << i;
      for (int64_t i = 0, numel = k.shape.numel(); i < numel; ++i) ASSERT_EQ(k.at(i), t.k_out.at(i)) << i;
    }
  }
}

TEST_P(RotaryTest, HeadMajorViewsAndBroadcastPositionsGiveTheSameBits) {
  for (RotaryLayout layout : {RotaryLayout::half_split, RotaryLayout::interleaved}) {
    SCOPED_TRACE(std::string(rotary_layout_name(layout)));
    const RotaryDescriptor d = rope(dtype(), 3, 11, 4, 1, 32, 0, layout);
    RotaryTensors t = tensors(d);
    // One row of positions for every batch.
    for (int64_t b = 1; b < d.batch; ++b)
      for (int64_t s = 0; s < d.seq_len; ++s) t.positions.host[b * d.seq_len + s] = t.positions.host[s];
    ASSERT_OK(t.positions.upload());
    ASSERT_OK(run(d, t));

    RotaryTensors v;
    v.q = input(head_major(d, 4), dtype());
    v.k = input(head_major(d, 1), dtype());
    for (int64_t i = 0, numel = t.q.shape.numel(); i < numel; ++i)
      v.q.host[v.q.offset + v.q.element_offset(i)] = t.q.at(i);
    for (int64_t i = 0, numel = t.k.shape.numel(); i < numel; ++i)
      v.k.host[v.k.offset + v.k.element_offset(i)] = t.k.at(i);
    ASSERT_OK(v.q.upload());
    ASSERT_OK(v.k.upload());
    v.q_out = output(head_major(d, 4));
    v.k_out = output(head_major(d, 1));
    v.positions = input(testing::with_strides({d.batch, d.seq_len}, {0, 1}), d.index_dtype);
    for (int64_t s = 0; s < d.seq_len; ++s) v.positions.host[v.positions.offset + s] = t.positions.at(s);
    ASSERT_OK(v.positions.upload());
    ASSERT_OK(run(d, v));
    for (int64_t i = 0, numel = t.q.shape.numel(); i < numel; ++i) ASSERT_EQ(v.q_out.at(i), t.q_out.at(i)) << i;
    for (int64_t i = 0, numel = t.k.shape.numel(); i < numel; ++i) ASSERT_EQ(v.k_out.at(i), t.k_out.at(i)) << i;
  }
}

TEST_P(RotaryTest, TheBackwardUndoesTheForward) {
  // Two roundings to the dtype of values within [-1, 1] (and f32's cos / sin roundings).
  const double tol = 4 * harness::unit_roundoff(dtype()) + (dtype() == DType::f64 ? 1e-15 : 1e-7);
  for (RotaryLayout layout : {RotaryLayout::half_split, RotaryLayout::interleaved}) {
    SCOPED_TRACE(std::string(rotary_layout_name(layout)));
    const RotaryDescriptor d = rope(dtype(), 2, 13, 4, 2, 64, 0, layout);
    RotaryTensors t = tensors(d, 0, 1e5);
    ASSERT_OK(run(d, t));
    RotaryTensors back;
    back.q = copy_of(t.q_out, testing::contiguous(t.q.shape));
    back.k = copy_of(t.k_out, testing::contiguous(t.k.shape));
    back.q_out = output(testing::contiguous(t.q.shape));
    back.k_out = output(testing::contiguous(t.k.shape));
    back.positions = copy_of(t.positions, testing::contiguous(t.positions.shape));
    ASSERT_OK(run(d, back, true));
    EXPECT_TRUE(testing::all_close(
        back.q_out, [&](int64_t i) { return t.q.at(i); }, tol));
    EXPECT_TRUE(testing::all_close(
        back.k_out, [&](int64_t i) { return t.k.at(i); }, tol));
  }
}

TEST_P(RotaryTest, BothBackendsWriteTheSameBits) {
  if (backend() != Backend::cuda) GTEST_SKIP() << "compares the CUDA plan with the CPU one";
  for (RotaryLayout layout : {RotaryLayout::half_split, RotaryLayout::interleaved}) {
    SCOPED_TRACE(std::string(rotary_layout_name(layout)));
    const RotaryDescriptor d = rope(dtype(), 2, 37, 8, 2, 128, 96, layout);
    RotaryTensors t = tensors(d, 0, 1e6);
    ASSERT_OK(run(d, t));
    RotaryTensors c;
    c.q = copy_of(t.q, testing::contiguous(t.q.shape), Backend::cpu);
    c.k = copy_of(t.k, testing::contiguous(t.k.shape), Backend::cpu);
    c.q_out = copy_of(t.q_out, testing::contiguous(t.q.shape), Backend::cpu);
    c.k_out = copy_of(t.k_out, testing::contiguous(t.k.shape), Backend::cpu);
    c.positions = copy_of(t.positions, testing::contiguous(t.positions.shape), Backend::cpu);
    RotaryPlan plan = unwrap(RotaryPlan::select(Stream::host(), d));
    ASSERT_OK(
        plan.run(Stream::host(), {}, {c.q.ref(), c.k.ref(), c.positions.ref(), {}, c.q_out.mut(), c.k_out.mut()}));
    for (int64_t i = 0, numel = t.q_out.shape.numel(); i < numel; ++i) ASSERT_EQ(c.q_out.at(i), t.q_out.at(i)) << i;
    for (int64_t i = 0, numel = t.k_out.shape.numel(); i < numel; ++i) ASSERT_EQ(c.k_out.at(i), t.k_out.at(i)) << i;
  }
}

TEST_P(RotaryTest, OverlapsAndBadViewsAreRefused) {
  const RotaryDescriptor d = rope(dtype(), 2, 5, 2, 2, 16, 0, RotaryLayout::half_split);
  RotaryTensors t = tensors(d);
  RotaryPlan plan = unwrap(RotaryPlan::select(stream(), d));
  auto fails = [&](const RotaryArgs& a, StatusCode code, const std::string& field) {
    return testing::is_error(plan.run(stream(), {}, a), code, "RotaryPlan", field);
  };
  const RotaryArgs good{t.q.ref(), t.k.ref(), t.positions.ref(), {}, t.q_out.mut(), t.k_out.mut()};
  ASSERT_OK(plan.run(stream(), {}, good));
  RotaryArgs a = good;
  a.q_out = t.k.mut();  // q rotated into k: not its own input
  EXPECT_TRUE(fails(a, StatusCode::invalid_problem, "args.q_out"));
  a = good;
  a.k_out = t.q_out.mut();  // both outputs in one buffer
  EXPECT_TRUE(fails(a, StatusCode::invalid_problem, "args.k_out"));
  a = good;
  // q and q_out one element apart in one buffer: overlapping without being the same view.
  const int64_t n = t.q.shape.numel();
  Tensor both = input(testing::contiguous({2 * n}), dtype());
  a.q = AnyTensorRef::contiguous(both.mut().data, dtype(), t.q.shape, 2 * n);
  a.q_out = AnyTensorMut::contiguous(static_cast<char*>(both.mut().data) + dtype_size(dtype()), dtype(), t.q.shape,
                                     2 * n - 1);
  EXPECT_TRUE(fails(a, StatusCode::invalid_problem, "args.q_out"));
  a = good;
  Tensor row = input(testing::contiguous({d.seq_len}), DType::i64);  // one [S] row, not [B, S]
  a.positions = row.ref();
  EXPECT_TRUE(fails(a, StatusCode::invalid_problem, "args.positions.shape"));
  a = good;
  Tensor f32 = input(testing::contiguous({d.batch, d.seq_len}), DType::f32);
  a.positions = f32.ref();
  EXPECT_TRUE(fails(a, StatusCode::invalid_problem, "args.positions.dtype"));
  // A table of the wrong length.
  RotaryDescriptor table = d;
  table.has_inv_freq = true;
  RotaryPlan with_table = unwrap(RotaryPlan::select(stream(), table));
  Tensor freq = input(testing::contiguous({d.head_dim}), DType::f32, 0, 1);
  a = good;
  a.inv_freq = freq.ref();
  EXPECT_TRUE(testing::is_error(with_table.run(stream(), {}, a), StatusCode::invalid_problem, "RotaryPlan",
                                "args.inv_freq.shape"));
  // Descriptors: odd and oversized rotary dims, a bad base.
  RotaryDescriptor bad = d;
  bad.rotary_dim = 5;
  EXPECT_TRUE(testing::is_error(RotaryBackwardPlan::select(stream(), bad).status(), StatusCode::invalid_problem,
                                "RotaryBackwardPlan", "descriptor.rotary_dim"));
  bad = d;
  bad.rotary_dim = 18;
  EXPECT_TRUE(testing::is_error(RotaryPlan::select(stream(), bad).status(), StatusCode::invalid_problem, "RotaryPlan",
                                "descriptor.rotary_dim"));
  bad = d;
  bad.base = -1;
  EXPECT_TRUE(testing::is_error(RotaryPlan::select(stream(), bad).status(), StatusCode::invalid_problem, "RotaryPlan",
                                "descriptor.base"));
}

INSTANTIATE_TEST_SUITE_P(Rotary, RotaryTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

}  // namespace
}  // namespace baracuda

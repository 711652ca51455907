// The attention plans beyond the op table (tools/harness/rows/attention.cpp): [B, H, S, D] buffers
// viewed through strides give what [B, S, H, D] ones give; a row whose bias is -inf throughout is
// fully masked (out 0, lse -inf, zero gradients); and what CUDA (cuDNN's fused attention) refuses,
// unsupported and naming the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "harness/data.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::unwrap;

class AttentionTest : public testing::BackendDTypeTest {
 protected:
  // These tests' masks, biases and [B, H, S, D] buffers are the CPU kernel's; the op table covers the
  // cases CUDA (cuDNN's fused attention) takes, and CudaRefusesWhatCudnnDoesNotTake its refusals.
  bool cpu_only() const { return backend() == Backend::cuda; }
  Tensor random(DType dtype, const Shape& shape, Strides strides = {}, bool strided = false) {
    return unwrap(harness::random_tensor(backend(), dtype, {shape, strides, strided, 0}, rng_));
  }
  Tensor output(DType dtype, const Shape& shape, Strides strides = {}, bool strided = false) {
    Tensor t = random(dtype, shape, strides, strided);
    EXPECT_TRUE(harness::poison(t).is_ok());
    return t;
  }
  DType acc() const { return dtype() == DType::f64 ? DType::f64 : DType::f32; }
  double tolerance() const { return harness::tolerance(dtype()) * 10; }
  // A tensor on the CPU (the CUDA cases' references run there, from the host mirrors).
  Tensor host(DType dtype, const Shape& shape) {
    return unwrap(harness::random_tensor(Backend::cpu, dtype, {shape, {}, false, 0}, rng_));
  }
  // A tensor of the same values and strides on `to` (the CPU references of the CUDA cases).
  Tensor mirror(const Tensor& t, Backend to = Backend::cpu) {
    Tensor m = unwrap(harness::random_tensor(to, t.dtype, {t.shape, t.strides, true, 0}, rng_));
    m.host = t.host;
    EXPECT_TRUE(m.upload().is_ok());
    return m;
  }
  // A value against the CPU's: the same bits on the CPU; on CUDA, whose kernels are not the CPU's,
  // within the tolerance (an infinity exactly).
  void expect_as_cpu(double got, double want, const char* what, int64_t b, int64_t i) const {
    if (backend() != Backend::cuda || std::isinf(want))
      ASSERT_EQ(got, want) << b << " " << what << " " << i;
    else
      ASSERT_NEAR(got, want, tolerance()) << b << " " << what << " " << i;
  }
};

// [B, S, H, D] strides of a [B, H, S, D] buffer.
Strides bhsd(const Shape& s) {
  const int64_t S = s.dims[1], H = s.dims[2], D = s.dims[3];
  return {H * S * D, D, S * D, 1};
}

TEST_P(AttentionTest, HeadMajorBuffersThroughStridesMatchSequenceMajorOnes) {
  if (cpu_only()) GTEST_SKIP() << "CUDA attention: the op table's cases";
  AttentionDescriptor d;
  d.dtype = dtype();
  d.batch = 2;
  d.seq_q = 70;
  d.seq_kv = 90;
  d.heads_q = 4;
  d.heads_kv = 2;
  d.head_dim = 64;
  d.head_dim_v = 32;
  d.causal = true;
  d.alignment = CausalAlignment::bottom_right;
  const Shape qs{2, 70, 4, 64}, ks{2, 90, 2, 64}, vs{2, 90, 2, 32}, os{2, 70, 4, 32};
  Tensor q = random(dtype(), qs, bhsd(qs), true), k = random(dtype(), ks, bhsd(ks), true),
         v = random(dtype(), vs, bhsd(vs), true), out = output(dtype(), os, bhsd(os), true);
  // The same values in [B, S, H, D] buffers.
  auto copy = [&](const Tensor& from) {
    Tensor t = random(dtype(), from.shape);
    for (int64_t i = 0, numel = from.shape.numel(); i < numel; ++i)
      t.host[static_cast<size_t>(t.offset + t.element_offset(i))] = from.at(i);
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  };
  Tensor q2 = copy(q), k2 = copy(k), v2 = copy(v), out2 = output(dtype(), os);
  const AttentionPlan plan = unwrap(AttentionPlan::select(stream(), d));
  ASSERT_OK(plan.run(stream(), {}, {q.ref(), k.ref(), v.ref(), {}, out.mut(), {}}));
  ASSERT_OK(plan.run(stream(), {}, {q2.ref(), k2.ref(), v2.ref(), {}, out2.mut(), {}}));
  ASSERT_OK(out.download());
  ASSERT_OK(out2.download());
  EXPECT_EQ(plan.sku({q.ref(), k.ref(), v.ref(), {}, out.mut(), {}}).layout, Layout::strided);
  for (int64_t i = 0, numel = os.numel(); i < numel; ++i) ASSERT_NEAR(out.at(i), out2.at(i), tolerance()) << i;
}

TEST_P(AttentionTest, RowsWhoseBiasIsMinusInfinityAreFullyMasked) {
  if (cpu_only()) GTEST_SKIP() << "CUDA attention: the op table's cases";
  AttentionDescriptor d;
  d.dtype = dtype();
  d.seq_q = 6;
  d.seq_kv = 9;
  d.heads_q = 2;
  d.heads_kv = 1;
  d.head_dim = d.head_dim_v = 16;
  d.has_bias = true;
  const Shape qs{1, 6, 2, 16}, ks{1, 9, 1, 16}, os{1, 6, 2, 16}, ls{1, 2, 6};
  Tensor q = random(dtype(), qs), k = random(dtype(), ks), v = random(dtype(), ks), out = output(dtype(), os);
  Tensor lse = output(acc(), ls);
  // The bias broadcast along the heads (stride 0); query 2's row -inf throughout.
  Tensor bias = random(dtype(), {1, 2, 6, 9}, {54, 0, 9, 1}, true);
  for (int64_t j = 0; j < 9; ++j) bias.host[static_cast<size_t>(bias.offset + 2 * 9 + j)] = -INFINITY;
  ASSERT_OK(bias.upload());
  const AttentionPlan plan = unwrap(AttentionPlan::select(stream(), d));
  ASSERT_OK(plan.run(stream(), {}, {q.ref(), k.ref(), v.ref(), bias.ref(), out.mut(), lse.mut()}));
  ASSERT_OK(out.download());
  ASSERT_OK(lse.download());
  for (int64_t h = 0; h < 2; ++h) {
    EXPECT_EQ(lse.at(h * 6 + 2), -std::numeric_limits<double>::infinity()) << h;
    EXPECT_TRUE(std::isfinite(lse.at(h * 6 + 1))) << h;
    for (int64_t c = 0; c < 16; ++c) EXPECT_EQ(out.at((2 * 2 + h) * 16 + c), 0.0) << h << " " << c;
  }
  // The backward gives the masked rows zero gradients and finite ones elsewhere.
  Tensor dout = random(dtype(), os), dq = output(dtype(), qs), dk = output(dtype(), ks), dv = output(dtype(), ks);
  const AttentionBackwardPlan backward = unwrap(AttentionBackwardPlan::select(stream(), d));
  ASSERT_OK(backward.run(
      stream(), {},
      {q.ref(), k.ref(), v.ref(), bias.ref(), out.ref(), dout.ref(), lse.ref(), dq.mut(), dk.mut(), dv.mut()}));
  ASSERT_OK(dq.download());
  ASSERT_OK(dk.download());
  ASSERT_OK(dv.download());
  for (int64_t i = 0, numel = qs.numel(); i < numel; ++i) {
    const bool masked = i / 32 == 2;  // query 2, both heads
    if (masked)
      EXPECT_EQ(dq.at(i), 0.0) << i;
    else
      EXPECT_TRUE(std::isfinite(dq.at(i))) << i;
  }
  for (int64_t i = 0, numel = ks.numel(); i < numel; ++i)
    EXPECT_TRUE(std::isfinite(dk.at(i)) && std::isfinite(dv.at(i))) << i;
}

// Packed sequences (varlen): each sequence computes exactly what it computes alone (the same bits; on
// CUDA, cuDNN's ragged graphs, within the tolerance of the CPU's result alone), forward and backward,
// with empty sequences on either side, GQA and a causal bottom-right mask within each sequence (rows
// with no key: out 0, lse -inf, zero gradients); offsets that break the rules are a Status naming them,
// nothing written (CUDA, which checks them on the device: every output NaN).
TEST_P(AttentionTest, PackedSequencesMatchEachSequenceAlone) {
  const std::vector<int32_t> lens_q{5, 0, 17, 70, 3}, lens_kv{9, 4, 0, 70, 1};
  const int64_t H = 4, Hk = 2, D = 16, Dv = 24, B = static_cast<int64_t>(lens_q.size());
  AttentionDescriptor d;
  d.dtype = dtype();
  d.batch = B;
  d.heads_q = H;
  d.heads_kv = Hk;
  d.head_dim = D;
  d.head_dim_v = Dv;
  d.causal = true;
  d.alignment = CausalAlignment::bottom_right;
  d.varlen = true;
  d.seq_q = 70;
  d.seq_kv = 70;
  std::vector<int32_t> cu_q{0}, cu_kv{0};
  for (int64_t b = 0; b < B; ++b) {
    cu_q.push_back(cu_q.back() + lens_q[b]);
    cu_kv.push_back(cu_kv.back() + lens_kv[b]);
  }
  d.total_q = cu_q.back();
  d.total_kv = cu_kv.back();
  const bool cuda = backend() == Backend::cuda;
  if (cuda && dtype() != DType::f16 && dtype() != DType::bf16) {
    EXPECT_TRUE(testing::is_error(AttentionPlan::select(stream(), d).status(), StatusCode::unsupported, "AttentionPlan",
                                  "descriptor.dtype"));
    return;
  }
  auto offsets = [&](const std::vector<int32_t>& values) {
    Tensor t = random(DType::i32, {static_cast<int64_t>(values.size())});
    for (size_t i = 0; i < values.size(); ++i) t.host[t.offset + i] = values[i];
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  };
  Tensor oq = offsets(cu_q), okv = offsets(cu_kv);
  const int64_t Tq = d.total_q, Tk = d.total_kv;
  Tensor q = random(dtype(), {Tq, H, D}), k = random(dtype(), {Tk, Hk, D}), v = random(dtype(), {Tk, Hk, Dv});
  Tensor out = output(dtype(), {Tq, H, Dv}), lse = output(acc(), {H, Tq}), dout = random(dtype(), {Tq, H, Dv});
  Tensor dq = output(dtype(), {Tq, H, D}), dk = output(dtype(), {Tk, Hk, D}), dv = output(dtype(), {Tk, Hk, Dv});
  const AttentionPlan plan = unwrap(AttentionPlan::select(stream(), d));
  const AttentionBackwardPlan backward = unwrap(AttentionBackwardPlan::select(stream(), d));
  harness::Buffer workspace = unwrap(harness::Buffer::allocate(
      backend(), std::max<size_t>({plan.workspace_size(), backward.workspace_size(), size_t{1}})));
  const Workspace ws{workspace.data(), workspace.size()};
  AttentionArgs args{q.ref(), k.ref(), v.ref(), {}, out.mut(), lse.mut(), oq.ref(), okv.ref()};
  ASSERT_OK(plan.run(stream(), ws, args));
  ASSERT_OK(backward.run(stream(), ws,
                         {q.ref(),
                          k.ref(),
                          v.ref(),
                          {},
                          out.ref(),
                          dout.ref(),
                          lse.ref(),
                          dq.mut(),
                          dk.mut(),
                          dv.mut(),
                          oq.ref(),
                          okv.ref()}));
  for (Tensor* t : {&out, &lse, &dq, &dk, &dv}) ASSERT_OK(t->download());

  // Each sequence alone on the CPU, from the host mirrors: rows [first, first + rows) of a packed [T,
  // heads, dim] tensor as a dense [1, rows, heads, dim] one.
  auto rows_of = [&](const Tensor& packed, int64_t first, int64_t rows) {
    const int64_t width = packed.shape.dims[1] * packed.shape.dims[2];
    Tensor t = host(packed.dtype, {1, rows, packed.shape.dims[1], packed.shape.dims[2]});
    for (int64_t i = 0; i < rows * width; ++i) t.host[static_cast<size_t>(t.offset + i)] = packed.at(first * width + i);
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  };
  for (int64_t b = 0; b < B; ++b) {
    AttentionDescriptor one = d;
    one.varlen = false;
    one.batch = 1;
    one.seq_q = lens_q[b];
    one.seq_kv = lens_kv[b];
    one.total_q = one.total_kv = 0;
    const int64_t q0 = cu_q[b], k0 = cu_kv[b], nq = lens_q[b], nk = lens_kv[b];
    Tensor q1 = rows_of(q, q0, nq), k1 = rows_of(k, k0, nk), v1 = rows_of(v, k0, nk), do1 = rows_of(dout, q0, nq);
    Tensor out1 = host(dtype(), {1, nq, H, Dv}), lse1 = host(acc(), {1, H, nq});
    Tensor dq1 = host(dtype(), {1, nq, H, D}), dk1 = host(dtype(), {1, nk, Hk, D}),
           dv1 = host(dtype(), {1, nk, Hk, Dv});
    ASSERT_OK(unwrap(AttentionPlan::select(Stream::host(), one))
                  .run(Stream::host(), {}, {q1.ref(), k1.ref(), v1.ref(), {}, out1.mut(), lse1.mut()}));
    ASSERT_OK(unwrap(AttentionBackwardPlan::select(Stream::host(), one))
                  .run(Stream::host(), {},
                       {q1.ref(),
                        k1.ref(),
                        v1.ref(),
                        {},
                        out1.ref(),
                        do1.ref(),
                        lse1.ref(),
                        dq1.mut(),
                        dk1.mut(),
                        dv1.mut()}));
    for (Tensor* t : {&out1, &lse1, &dq1, &dk1, &dv1}) ASSERT_OK(t->download());
    for (int64_t i = 0; i < nq * H * Dv; ++i) expect_as_cpu(out.at(q0 * H * Dv + i), out1.at(i), "out", b, i);
    for (int64_t i = 0; i < nq * H * D; ++i) expect_as_cpu(dq.at(q0 * H * D + i), dq1.at(i), "dq", b, i);
    for (int64_t i = 0; i < nk * Hk * D; ++i) expect_as_cpu(dk.at(k0 * Hk * D + i), dk1.at(i), "dk", b, i);
    for (int64_t i = 0; i < nk * Hk * Dv; ++i) expect_as_cpu(dv.at(k0 * Hk * Dv + i), dv1.at(i), "dv", b, i);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = 0; r < nq; ++r)
        expect_as_cpu(lse.at(h * Tq + q0 + r), lse1.at(h * nq + r), "lse", b, h * nq + r);
  }
  // Sequence 2 has no keys: out 0 and lse -inf.
  EXPECT_EQ(lse.at(cu_q[2]), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(out.at(cu_q[2] * H * Dv), 0.0);

  // Bad offsets: a Status naming them, nothing written (out stays poisoned).
  auto refused = [&](std::vector<int32_t> values, bool queries) {
    Tensor bad = offsets(values);
    Tensor fresh = output(dtype(), {Tq, H, Dv});
    AttentionArgs a{q.ref(),
                    k.ref(),
                    v.ref(),
                    {},
                    fresh.mut(),
                    {},
                    queries ? bad.ref() : oq.ref(),
                    queries ? okv.ref() : bad.ref()};
    const Status st = plan.run(stream(), ws, a);
    if (cuda)
      ASSERT_OK(st);
    else
      EXPECT_TRUE(testing::is_error(st, StatusCode::invalid_problem, "AttentionPlan",
                                    queries ? "args.cu_seqlens_q" : "args.cu_seqlens_kv"));
    ASSERT_OK(fresh.download());
    for (int64_t i = 0; i < fresh.shape.numel(); ++i) ASSERT_TRUE(std::isnan(fresh.at(i))) << i;
  };
  std::vector<int32_t> shifted = cu_q;
  for (int32_t& x : shifted) ++x;
  refused(shifted, true);  // does not start at 0
  std::vector<int32_t> short_end = cu_q;
  short_end.back() -= 1;
  refused(short_end, true);  // ends before the packed rows
  std::vector<int32_t> decreasing = cu_kv;
  decreasing[2] = decreasing[1] - 1;
  refused(decreasing, false);
  refused({0, 0, 0, 0, 0, static_cast<int32_t>(Tk)}, false);  // one sequence of Tk = 84 > 70 keys
  // A bias with packed sequences, and totals without varlen: invalid descriptors.
  AttentionDescriptor biased = d;
  biased.has_bias = true;
  EXPECT_TRUE(testing::is_error(AttentionPlan::select(stream(), biased).status(), StatusCode::invalid_problem,
                                "AttentionPlan", "descriptor.has_bias"));
  AttentionDescriptor dense = d;
  dense.varlen = false;
  EXPECT_TRUE(testing::is_error(AttentionPlan::select(stream(), dense).status(), StatusCode::invalid_problem,
                                "AttentionPlan", "descriptor.total_q"));
}

// CUDA takes what cuDNN's fused attention takes (f16 / bf16; head dims multiples of 8 up to 256, also
// 192 / 128; windows with both alignments; the bias) and takes the rest through split_kv (kernels of
// ours); cuDNN forced refuses it, unsupported and naming the field: at select the descriptor's, at
// can_implement the view's.
TEST_P(AttentionTest, CudaRefusesWhatCudnnDoesNotTake) {
  if (backend() != Backend::cuda) GTEST_SKIP() << "CUDA's refusals";
  auto desc = [&](int64_t seq_q, int64_t seq_kv, int64_t head_dim = 64, int64_t head_dim_v = 64) {
    AttentionDescriptor d;
    d.dtype = dtype();
    d.seq_q = seq_q;
    d.seq_kv = seq_kv;
    d.heads_q = 4;
    d.heads_kv = 2;
    d.head_dim = head_dim;
    d.head_dim_v = head_dim_v;
    return d;
  };
  auto refused = [&](const AttentionDescriptor& d, const std::string& field) {
    Expected<AttentionPlan> forward = AttentionPlan::select(stream(), d);
    Expected<AttentionBackwardPlan> backward = AttentionBackwardPlan::select(stream(), d);
    ASSERT_TRUE(forward.has_value()) << field << ": " << forward.status().to_string();
    ASSERT_TRUE(backward.has_value()) << field << ": " << backward.status().to_string();
    EXPECT_EQ(forward->sku().variant, "split_kv") << field;
    EXPECT_EQ(backward->sku().variant, "split_kv") << field;
    PlanPreference cudnn;
    cudnn.variant = "cudnn";
    EXPECT_TRUE(testing::is_error(AttentionPlan::select(stream(), d, cudnn).status(), StatusCode::unsupported,
                                  "AttentionPlan", field));
    EXPECT_TRUE(testing::is_error(AttentionBackwardPlan::select(stream(), d, cudnn).status(), StatusCode::unsupported,
                                  "AttentionBackwardPlan", field));
  };
  if (dtype() == DType::f32 || dtype() == DType::f64) {
    refused(desc(4, 4), "descriptor.dtype");
    return;
  }
  auto ok = [](const Status& s) { EXPECT_TRUE(s.is_ok()) << s.to_string(); };
  auto taken = [&](const AttentionDescriptor& d) {
    Expected<AttentionPlan> forward = AttentionPlan::select(stream(), d);
    Expected<AttentionBackwardPlan> backward = AttentionBackwardPlan::select(stream(), d);
    ok(forward.status());
    ok(backward.status());
    if (forward) {
      EXPECT_EQ(forward->sku().variant, "cudnn");
    }
    if (backward) {
      EXPECT_EQ(backward->sku().variant, "cudnn");
    }
  };
  taken(desc(24, 40, 192, 128));
  taken(desc(24, 40, 256, 256));
  AttentionDescriptor d = desc(24, 40);
  d.has_bias = true;
  d.causal = true;
  d.alignment = CausalAlignment::bottom_right;  // with the bias: a shifted top-left band
  taken(d);
  d.window_left = 4;  // the shifted band's left bound below 1
  refused(d, "descriptor.window_left");
  refused(desc(4, 4, 264, 264), "descriptor.head_dim");
  refused(desc(4, 4, 64, 20), "descriptor.head_dim_v");
  d = desc(4, 4);
  d.softcap = 30;
  refused(d, "descriptor.softcap");
  d = desc(33, 17);
  d.causal = true;
  d.alignment = CausalAlignment::bottom_right;  // rows 0..15 see no key
  refused(d, "descriptor.alignment");
  d = desc(26, 25);
  d.window_left = 4;  // cuDNN's left bound takes seq_q <= seq_kv
  refused(d, "descriptor.window_left");
  d = desc(30, 20);
  d.window_left = d.window_right = 3;  // rows past 23 see no key
  refused(d, "descriptor.window_left");

  // Views: unit stride along the head dim; the bias with unit stride along the keys.
  d = desc(8, 16, 16, 16);
  d.has_bias = true;
  const Shape qs{1, 8, 4, 16}, ks{1, 16, 2, 16}, os{1, 8, 4, 16}, bs{1, 4, 8, 16};
  Tensor q = random(dtype(), qs), k = random(dtype(), ks), v = random(dtype(), ks), out = output(dtype(), os);
  Tensor bias = random(dtype(), bs);
  Tensor q_strided = random(dtype(), qs, {8 * 4 * 32, 4 * 32, 32, 2}, true);
  Tensor bias_strided = random(dtype(), bs, {4 * 8 * 32, 8 * 32, 32, 2}, true);
  const AttentionPlan plan = unwrap(AttentionPlan::select(stream(), d));
  ok(plan.can_implement({q.ref(), k.ref(), v.ref(), bias.ref(), out.mut(), {}}));
  EXPECT_TRUE(testing::is_error(plan.can_implement({q_strided.ref(), k.ref(), v.ref(), bias.ref(), out.mut(), {}}),
                                StatusCode::unsupported, "AttentionPlan", "args.q.strides[3]"));
  EXPECT_TRUE(testing::is_error(plan.can_implement({q.ref(), k.ref(), v.ref(), bias_strided.ref(), out.mut(), {}}),
                                StatusCode::unsupported, "AttentionPlan", "args.bias.strides[3]"));
}

// A serving step: prompts appended to an empty paged cache (prefill, ragged through new_lens), then
// one decode token each: every appended row lands bit for bit where the table maps it (where
// AttentionPlan's paged cache reads it: PagedCacheMatchesTheSameKeysDense) and every other row keeps
// its bits. Both backends (the count in the stream's memory).
TEST_P(AttentionTest, KvCacheAppendFillsWhatPagedAttentionReads) {
  const int64_t B = 3, S_new = 6, Hk = 2, D = 8, Dv = 4, bs = 4, num_blocks = 9, max_blocks = 3;
  KvCacheAppendDescriptor d;
  d.dtype = dtype();
  d.batch = B;
  d.new_tokens = S_new;
  d.heads_kv = Hk;
  d.head_dim = D;
  d.head_dim_v = Dv;
  d.block_size = bs;
  d.num_blocks = num_blocks;
  d.max_blocks = max_blocks;
  auto ints = [&](const std::vector<int32_t>& values, const Shape& shape) {
    Tensor t = random(DType::i32, shape);
    for (size_t i = 0; i < values.size(); ++i) t.host[t.offset + i] = values[i];
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  };
  const std::vector<int32_t> table_values{4, 0, 7, 8, 2, 99, 1, 3, 5};
  Tensor table = ints(table_values, {B, max_blocks});
  Tensor kc = random(dtype(), {num_blocks, bs, Hk, D}), vc = random(dtype(), {num_blocks, bs, Hk, Dv});
  const std::vector<double> k_before = kc.host, v_before = vc.host;
  const KvCacheAppendPlan plan = unwrap(KvCacheAppendPlan::select(stream(), d));
  harness::Buffer counter = unwrap(harness::Buffer::allocate(backend(), sizeof(int64_t)));
  auto zero_count = [&] {
    const int64_t zero = 0;
    EXPECT_TRUE(counter.upload(&zero, sizeof zero).is_ok());
    return static_cast<int64_t*>(counter.data());
  };
  auto counted = [&] {
    int64_t n = -1;
    EXPECT_TRUE(counter.download(&n, sizeof n).is_ok());
    return n;
  };
  // The append's workspace (CUDA's row owners), one buffer for both plans (the larger one's).
  harness::Buffer workspace = unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(plan.workspace_size(), 1)));
  const Workspace ws{workspace.data(), workspace.size()};
  // Prefill: prompts of 5, 2 and 6 tokens (the rest of each row of k_new padding).
  const std::vector<int32_t> prompt{5, 2, 6};
  Tensor k_new = random(dtype(), {B, S_new, Hk, D}), v_new = random(dtype(), {B, S_new, Hk, Dv});
  int64_t* bad = zero_count();
  ASSERT_OK(plan.run(stream(), ws,
                     {k_new.ref(), v_new.ref(), table.ref(), ints({0, 0, 0}, {B}).ref(), ints(prompt, {B}).ref(),
                      kc.mut(), vc.mut(), bad}));
  // Decode: one token each after the prompt (no new_lens: every sequence appends all S_new = 1).
  KvCacheAppendDescriptor one = d;
  one.new_tokens = 1;
  Tensor k_tok = random(dtype(), {B, 1, Hk, D}), v_tok = random(dtype(), {B, 1, Hk, Dv});
  ASSERT_OK(unwrap(KvCacheAppendPlan::select(stream(), one))
                .run(stream(), ws,
                     {k_tok.ref(), v_tok.ref(), table.ref(), ints(prompt, {B}).ref(), {}, kc.mut(), vc.mut(), bad}));
  EXPECT_EQ(counted(), 0);
  ASSERT_OK(kc.download());
  ASSERT_OK(vc.download());
  // Where each cache row came from: (sequence, position) or untouched.
  std::vector<bool> written(static_cast<size_t>(num_blocks * bs), false);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j <= prompt[b]; ++j) {
      const int64_t slot = table_values[b * max_blocks + j / bs] * bs + j % bs;
      written[static_cast<size_t>(slot)] = true;
      const bool decode = j == prompt[b];
      for (int64_t i = 0; i < Hk * D; ++i)
        ASSERT_EQ(kc.at(slot * Hk * D + i), decode ? k_tok.at(b * Hk * D + i) : k_new.at((b * S_new + j) * Hk * D + i))
            << b << ", " << j;
      for (int64_t i = 0; i < Hk * Dv; ++i)
        ASSERT_EQ(vc.at(slot * Hk * Dv + i),
                  decode ? v_tok.at(b * Hk * Dv + i) : v_new.at((b * S_new + j) * Hk * Dv + i));
    }
  for (int64_t slot = 0; slot < num_blocks * bs; ++slot) {
    if (written[static_cast<size_t>(slot)]) continue;
    for (int64_t i = 0; i < Hk * D; ++i) {
      const auto at = static_cast<size_t>(kc.offset + slot * Hk * D + i);
      ASSERT_EQ(kc.host[at], k_before[at]) << slot;
    }
    for (int64_t i = 0; i < Hk * Dv; ++i) {
      const auto at = static_cast<size_t>(vc.offset + slot * Hk * Dv + i);
      ASSERT_EQ(vc.host[at], v_before[at]) << slot;
    }
  }

  // A token past the table (sequence 2's 13th position: a table of 3 blocks of 4) and a block entry out
  // of range (sequence 1's third block, 99) are counted and not written.
  Tensor k_far = random(dtype(), {B, 1, Hk, D}), v_far = random(dtype(), {B, 1, Hk, Dv});
  bad = zero_count();
  const std::vector<double> k_now = kc.host, v_now = vc.host;
  ASSERT_OK(
      unwrap(KvCacheAppendPlan::select(stream(), one))
          .run(stream(), ws,
               {k_far.ref(), v_far.ref(), table.ref(), ints({-1, 8, 12}, {B}).ref(), {}, kc.mut(), vc.mut(), bad}));
  EXPECT_EQ(counted(), 3);
  ASSERT_OK(kc.download());
  ASSERT_OK(vc.download());
  EXPECT_EQ(kc.host, k_now);
  EXPECT_EQ(vc.host, v_now);
}

// Broadcast views can describe a cache far larger than memory: the CPU's gather of a sequence's keys
// is refused past 2^33 bytes (a Status naming args.seq_lens_kv, out untouched), and a paged plan with no
// query reads nothing, however large the batch its broadcast lengths describe.
TEST_P(AttentionTest, PagedCacheBroadcastPastMemoryIsRefused) {
  if (backend() == Backend::cuda) GTEST_SKIP() << "the CPU's gather buffers (CUDA reads the cache in place)";
  const int64_t H = 1024, D = 512, rows = int64_t{1} << 20;
  AttentionDescriptor d;
  d.dtype = dtype();
  d.batch = 1;
  d.seq_q = 1;
  d.seq_kv = rows;
  d.heads_q = d.heads_kv = H;
  d.head_dim = d.head_dim_v = D;
  d.paged = true;
  d.block_size = rows;
  d.num_blocks = 1;
  d.max_blocks = 1;
  const AttentionPlan plan = unwrap(AttentionPlan::select(stream(), d));
  Tensor q = random(dtype(), {1, 1, H, D}, Strides{0, 0, 0, 0}, true);
  Tensor cache = random(dtype(), {1, rows, H, D}, Strides{0, 0, 0, 0}, true);
  Tensor table = random(DType::i32, {1, 1}), lens = random(DType::i32, {1});
  table.host[static_cast<size_t>(table.offset)] = 0;
  lens.host[static_cast<size_t>(lens.offset)] = static_cast<double>(rows);
  ASSERT_OK(table.upload());
  ASSERT_OK(lens.upload());
  Tensor out = output(dtype(), {1, 1, H, D});
  const Status s =
      plan.run(stream(), {},
               AttentionArgs{q.ref(), cache.ref(), cache.ref(), {}, out.mut(), {}, {}, {}, table.ref(), lens.ref()});
  EXPECT_TRUE(testing::is_error(s, StatusCode::unsupported, "AttentionPlan", "args.seq_lens_kv")) << s.to_string();
  ASSERT_OK(out.download());
  for (int64_t i = 0; i < out.shape.numel(); ++i) ASSERT_TRUE(std::isnan(out.at(i))) << i;

  AttentionDescriptor none = d;  // no query, a batch of 2^40 through broadcast lengths and table
  none.seq_q = 0;
  none.batch = int64_t{1} << 40;
  none.heads_q = none.heads_kv = 1;
  none.head_dim = none.head_dim_v = 8;
  none.block_size = 4;
  none.num_blocks = none.max_blocks = 2;
  none.seq_kv = 8;
  Tensor q0 = random(dtype(), {none.batch, 0, 1, 8}), c0 = random(dtype(), {2, 4, 1, 8});
  Tensor out0 = output(dtype(), {none.batch, 0, 1, 8});
  Tensor table0 = random(DType::i32, {none.batch, 2}, Strides{0, 0}, true),
         lens0 = random(DType::i32, {none.batch}, Strides{0}, true);
  ASSERT_OK(
      unwrap(AttentionPlan::select(stream(), none))
          .run(stream(), {},
               AttentionArgs{q0.ref(), c0.ref(), c0.ref(), {}, out0.mut(), {}, {}, {}, table0.ref(), lens0.ref()}));
}

// A paged KV cache: each sequence's queries see exactly what they see with the same keys held densely
// (the same bits on the CPU; on CUDA, whose paged kernel is not the CPU's, within the tolerance of
// the CPU's dense result), blocks shuffled through the cache, lengths 0, within one block, at a
// block's edge and across several; decode-style (causal, bottom-right, GQA, 3 queries). Lengths or
// block entries out of range: on the CPU a Status naming them, nothing written; on CUDA (checked on
// the device, no host round trip) NaN in that sequence's rows, the others' unchanged.
TEST_P(AttentionTest, PagedCacheMatchesTheSameKeysDense) {
  const std::vector<int32_t> lens{13, 0, 4, 8, 1};
  const int64_t B = static_cast<int64_t>(lens.size()), Sq = 3, H = 4, Hk = 2, D = 16, Dv = 8, bs = 4;
  const int64_t max_blocks = 4, num_blocks = 11;
  AttentionDescriptor d;
  d.dtype = dtype();
  d.batch = B;
  d.seq_q = Sq;
  d.seq_kv = 13;
  d.heads_q = H;
  d.heads_kv = Hk;
  d.head_dim = D;
  d.head_dim_v = Dv;
  d.causal = true;
  d.alignment = CausalAlignment::bottom_right;
  d.paged = true;
  d.block_size = bs;
  d.num_blocks = num_blocks;
  d.max_blocks = max_blocks;
  const bool cuda = backend() == Backend::cuda;
  auto ints = [&](const std::vector<int32_t>& values, const Shape& shape) {
    Tensor t = random(DType::i32, shape);
    for (size_t i = 0; i < values.size(); ++i) t.host[t.offset + i] = values[i];
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  };
  // Blocks handed out in a shuffled order; unused table entries hold garbage no sequence reaches.
  const std::vector<int32_t> table_values{7, 2, 9, 4, -5, 99, 1, 1, 0, 123, 5, 3, 10, 6, 8, -1, 3, 77, 77, 77};
  Tensor table = ints(table_values, {B, max_blocks}), seq_lens = ints(lens, {B});
  Tensor q = random(dtype(), {B, Sq, H, D}), kc = random(dtype(), {num_blocks, bs, Hk, D}),
         vc = random(dtype(), {num_blocks, bs, Hk, Dv});
  Tensor out = output(dtype(), {B, Sq, H, Dv}), lse = output(acc(), {B, H, Sq});
  const AttentionPlan plan = unwrap(AttentionPlan::select(stream(), d));
  harness::Buffer workspace = unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(plan.workspace_size(), 1)));
  const Workspace ws{workspace.data(), workspace.size()};
  ASSERT_OK(plan.run(
      stream(), ws,
      AttentionArgs{q.ref(), kc.ref(), vc.ref(), {}, out.mut(), lse.mut(), {}, {}, table.ref(), seq_lens.ref()}));
  ASSERT_OK(out.download());
  ASSERT_OK(lse.download());
  // The dense runs on the CPU, from the host mirrors.
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = lens[b];
    // The sequence's keys and values, dense [1, n, Hk, dim], gathered through the table here.
    auto dense = [&](const Tensor& cache, int64_t dim) {
      Tensor t = host(dtype(), {1, n, Hk, dim});
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < Hk * dim; ++i)
          t.host[static_cast<size_t>(t.offset + j * Hk * dim + i)] =
              cache.at((table_values[b * max_blocks + j / bs] * bs + j % bs) * Hk * dim + i);
      EXPECT_TRUE(t.upload().is_ok());
      return t;
    };
    Tensor k1 = dense(kc, D), v1 = dense(vc, Dv), q1 = host(dtype(), {1, Sq, H, D});
    for (int64_t i = 0; i < Sq * H * D; ++i) q1.host[static_cast<size_t>(q1.offset + i)] = q.at(b * Sq * H * D + i);
    ASSERT_OK(q1.upload());
    Tensor out1 = host(dtype(), {1, Sq, H, Dv}), lse1 = host(acc(), {1, H, Sq});
    AttentionDescriptor one = d;
    one.paged = false;
    one.batch = 1;
    one.seq_kv = n;
    one.block_size = one.num_blocks = one.max_blocks = 0;
    ASSERT_OK(unwrap(AttentionPlan::select(Stream::host(), one))
                  .run(Stream::host(), {}, {q1.ref(), k1.ref(), v1.ref(), {}, out1.mut(), lse1.mut()}));
    ASSERT_OK(out1.download());
    ASSERT_OK(lse1.download());
    for (int64_t i = 0; i < Sq * H * Dv; ++i) expect_as_cpu(out.at(b * Sq * H * Dv + i), out1.at(i), "out", b, i);
    for (int64_t i = 0; i < H * Sq; ++i) expect_as_cpu(lse.at(b * H * Sq + i), lse1.at(i), "lse", b, i);
  }
  // Sequence 1 holds no key: out 0, lse -inf.
  EXPECT_EQ(lse.at(1 * H * Sq), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(out.at(1 * Sq * H * Dv), 0.0);

  // poisoned: the sequence whose rows CUDA gives NaN (-1: every sequence's, as the CPU's refusal).
  auto refused = [&](const Tensor& t, const Tensor& l, const char* field, int64_t poisoned) {
    Tensor fresh = output(dtype(), {B, Sq, H, Dv});
    const Status st = plan.run(
        stream(), ws, AttentionArgs{q.ref(), kc.ref(), vc.ref(), {}, fresh.mut(), {}, {}, {}, t.ref(), l.ref()});
    ASSERT_OK(fresh.download());
    if (!cuda) {
      EXPECT_TRUE(testing::is_error(st, StatusCode::invalid_problem, "AttentionPlan", field)) << st.to_string();
      for (int64_t i = 0; i < fresh.shape.numel(); ++i) ASSERT_TRUE(std::isnan(fresh.at(i))) << i;
      return;
    }
    ASSERT_OK(st);
    for (int64_t i = 0; i < fresh.shape.numel(); ++i) {
      if (i / (Sq * H * Dv) == poisoned)
        ASSERT_TRUE(std::isnan(fresh.at(i))) << field << " " << i;
      else
        ASSERT_EQ(fresh.at(i), out.at(i)) << field << " " << i;
    }
  };
  std::vector<int32_t> reached_bad = table_values;
  reached_bad[3 * max_blocks + 1] = static_cast<int32_t>(num_blocks);  // sequence 3's second block
  refused(ints(reached_bad, {B, max_blocks}), seq_lens, "args.block_table", 3);
  std::vector<int32_t> negative = table_values;
  negative[0] = -1;
  refused(ints(negative, {B, max_blocks}), seq_lens, "args.block_table", 0);
  refused(table, ints({13, 0, 4, 14, 1}, {B}), "args.seq_lens_kv", 3);  // past seq_kv
  refused(table, ints({13, -1, 4, 8, 1}, {B}), "args.seq_lens_kv", 1);
  if (!cuda) {  // more keys than a cache of two blocks holds (blocks would repeat): refused, not gathered
    AttentionDescriptor small = d;
    small.num_blocks = 2;
    Tensor k2 = random(dtype(), {2, bs, Hk, D}), v2 = random(dtype(), {2, bs, Hk, Dv});
    Tensor fresh = output(dtype(), {B, Sq, H, Dv});
    Tensor repeats = ints(std::vector<int32_t>(static_cast<size_t>(B * max_blocks), 1), {B, max_blocks});
    EXPECT_TRUE(testing::is_error(
        unwrap(AttentionPlan::select(stream(), small))
            .run(
                stream(), {},
                AttentionArgs{q.ref(), k2.ref(), v2.ref(), {}, fresh.mut(), {}, {}, {}, repeats.ref(), seq_lens.ref()}),
        StatusCode::invalid_problem, "AttentionPlan", "args.seq_lens_kv"));
  }
  // Descriptors: a table too short for seq_kv, no rows a block, paged with a bias, the backward.
  AttentionDescriptor bad = d;
  bad.max_blocks = 3;
  EXPECT_TRUE(testing::is_error(AttentionPlan::select(stream(), bad).status(), StatusCode::invalid_problem,
                                "AttentionPlan", "descriptor.max_blocks"));
  bad = d;
  bad.block_size = 0;
  EXPECT_TRUE(testing::is_error(AttentionPlan::select(stream(), bad).status(), StatusCode::invalid_problem,
                                "AttentionPlan", "descriptor.block_size"));
  bad = d;
  bad.has_bias = true;
  EXPECT_TRUE(testing::is_error(AttentionPlan::select(stream(), bad).status(), StatusCode::invalid_problem,
                                "AttentionPlan", "descriptor.has_bias"));
  EXPECT_TRUE(testing::is_error(AttentionBackwardPlan::select(stream(), d).status(), StatusCode::invalid_problem,
                                "AttentionBackwardPlan", "descriptor.paged"));
  bad = d;
  bad.paged = false;
  EXPECT_TRUE(testing::is_error(AttentionPlan::select(stream(), bad).status(), StatusCode::invalid_problem,
                                "AttentionPlan", "descriptor.block_size"));
}

// CUDA's paged decode kernel against the CPU's paged attention at serving sizes: keys split across
// blocks and merged (4097 keys), the rows of a block a chunk of a large group (8 query heads x 4
// queries), a sliding window with the soft-cap, head dims whose rows are not 16-byte vectors (the
// scalar tile loads) and a padded cache, head dims 256 and 512, empty sequences, fully masked rows.
TEST_P(AttentionTest, PagedDecodeMatchesTheCpuAtServingSizes) {
  if (backend() != Backend::cuda) GTEST_SKIP() << "the CPU is the reference here";
  struct Case {
    int64_t seq_q, heads_q, heads_kv, dim, dim_v, block_size, pad;
    std::vector<int32_t> lens;
    bool causal;
    CausalAlignment alignment;
    int64_t window_left;
    double softcap;
  };
  constexpr auto top = CausalAlignment::top_left, bottom = CausalAlignment::bottom_right;
  const std::vector<Case> cases{
      {1, 32, 8, 128, 128, 16, 0, {1000, 1, 4097}, true, bottom, -1, 0.0},
      {4, 16, 2, 64, 64, 32, 0, {700, 33}, true, bottom, 50, 20.0},
      {5, 6, 3, 100, 72, 7, 3, {300, 0, 2}, true, top, -1, 0.0},
      {3, 4, 4, 40, 24, 5, 0, {2, 9}, true, bottom, -1, 0.0},  // S_q > len: rows with no key
      {1, 4, 2, 256, 256, 16, 0, {513}, false, top, -1, 0.0},
      {2, 2, 1, 512, 512, 64, 0, {600}, true, bottom, -1, 0.0},
  };
  for (const Case& c : cases) {
    const auto B = static_cast<int64_t>(c.lens.size());
    const int64_t seq_kv = *std::max_element(c.lens.begin(), c.lens.end());
    const int64_t max_blocks = std::max<int64_t>(1, (seq_kv + c.block_size - 1) / c.block_size);
    const int64_t num_blocks = B * max_blocks + 3;
    AttentionDescriptor d;
    d.dtype = dtype();
    d.batch = B;
    d.seq_q = c.seq_q;
    d.seq_kv = seq_kv;
    d.heads_q = c.heads_q;
    d.heads_kv = c.heads_kv;
    d.head_dim = c.dim;
    d.head_dim_v = c.dim_v;
    d.causal = c.causal;
    d.alignment = c.alignment;
    d.window_left = c.window_left;
    d.softcap = c.softcap;
    d.paged = true;
    d.block_size = c.block_size;
    d.num_blocks = num_blocks;
    d.max_blocks = max_blocks;
    const std::string what = "seq_q " + std::to_string(c.seq_q) + ", D " + std::to_string(c.dim);
    // Every block once, shuffled.
    std::vector<int32_t> blocks(static_cast<size_t>(num_blocks));
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), rng_);
    auto ints = [&](Backend be, const std::vector<int32_t>& values, const Shape& shape) {
      Tensor t = unwrap(harness::random_tensor(be, DType::i32, {shape, {}, false, 0}, rng_));
      for (size_t i = 0; i < values.size(); ++i) t.host[t.offset + i] = values[i];
      EXPECT_TRUE(t.upload().is_ok());
      return t;
    };
    auto cache = [&](int64_t dim) {
      const int64_t row = dim + c.pad;
      return random(dtype(), {num_blocks, c.block_size, c.heads_kv, dim},
                    Strides{c.block_size * c.heads_kv * row, c.heads_kv * row, row, 1}, true);
    };
    // The same values on the CPU.
    Tensor q = random(dtype(), {B, c.seq_q, c.heads_q, c.dim}), kc = cache(c.dim), vc = cache(c.dim_v);
    Tensor out = output(dtype(), {B, c.seq_q, c.heads_q, c.dim_v}), lse = output(acc(), {B, c.heads_q, c.seq_q});
    const std::vector<int32_t> table_values(blocks.begin(), blocks.begin() + B * max_blocks);
    Tensor table = ints(backend(), table_values, {B, max_blocks}), lens = ints(backend(), c.lens, {B});
    const AttentionPlan plan = unwrap(AttentionPlan::select(stream(), d));
    harness::Buffer workspace =
        unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(plan.workspace_size(), 1)));
    ASSERT_OK(plan.run(
        stream(), {workspace.data(), workspace.size()},
        AttentionArgs{q.ref(), kc.ref(), vc.ref(), {}, out.mut(), lse.mut(), {}, {}, table.ref(), lens.ref()}));
    ASSERT_OK(out.download());
    ASSERT_OK(lse.download());
    Tensor q_h = mirror(q), kc_h = mirror(kc), vc_h = mirror(vc), table_h = mirror(table), lens_h = mirror(lens);
    Tensor out_h = mirror(out), lse_h = mirror(lse);
    ASSERT_OK(unwrap(AttentionPlan::select(Stream::host(), d))
                  .run(Stream::host(), {},
                       AttentionArgs{q_h.ref(),
                                     kc_h.ref(),
                                     vc_h.ref(),
                                     {},
                                     out_h.mut(),
                                     lse_h.mut(),
                                     {},
                                     {},
                                     table_h.ref(),
                                     lens_h.ref()}));
    ASSERT_OK(out_h.download());
    ASSERT_OK(lse_h.download());
    for (int64_t i = 0; i < out.shape.numel(); ++i)
      ASSERT_NEAR(out.at(i), out_h.at(i), tolerance()) << what << " " << i;
    for (int64_t i = 0; i < lse.shape.numel(); ++i) {
      if (std::isinf(lse_h.at(i)))
        ASSERT_EQ(lse.at(i), lse_h.at(i)) << what << " lse " << i;
      else
        ASSERT_NEAR(lse.at(i), lse_h.at(i), tolerance()) << what << " lse " << i;
    }
  }
}

// What cuDNN refuses, on CUDA through split_kv (the paged decode's kernel over dense k and v, and the
// backward of ours), forward and backward against the CPU: f32 and f64, the soft-cap with a causal window, head dims
// off cuDNN's (not 16-byte rows: the scalar tile loads; past 256), rows with no key, a bias (f32 beside 16-bit data,
// broadcast over the heads, a row of -inf), no keys at all, [B, H, S, D] buffers, keys split and merged (1000 keys, 3
// queries), long query runs (300 rows: the rows a block chunked).
TEST_P(AttentionTest, SplitKvMatchesTheCpuWhereCudnnRefuses) {
  if (backend() != Backend::cuda) GTEST_SKIP() << "the CPU is the reference here";
  enum Bias { none, same, f32 };  // the bias: none, in the data's dtype, in f32
  struct Case {
    int64_t seq_q, seq_kv, heads_q, heads_kv, dim, dim_v;
    bool causal;
    CausalAlignment alignment;
    int64_t window_left, window_right;
    double softcap;
    Bias bias;
    bool head_major;
  };
  constexpr auto top = CausalAlignment::top_left, bottom = CausalAlignment::bottom_right;
  const std::vector<Case> cases{
      {40, 70, 4, 2, 64, 64, true, top, 20, -1, 30.0, none, false},
      {9, 13, 2, 1, 20, 36, false, top, -1, -1, 0.0, none, false},
      {7, 12, 2, 1, 21, 19, false, bottom, 5, 3, 0.0, same, false},  // rows not 16-byte vectors in any dtype
      {5, 11, 2, 2, 264, 264, true, bottom, -1, -1, 0.0, none, false},
      {33, 17, 4, 2, 32, 32, true, bottom, -1, -1, 0.0, none, false},  // rows 0..15 see no key
      {6, 9, 2, 1, 16, 16, false, top, -1, -1, 10.0, f32, false},
      {4, 0, 2, 1, 16, 16, false, top, -1, -1, 5.0, none, false},  // no key
      {0, 9, 2, 1, 16, 16, false, top, -1, -1, 5.0, none, false},  // no query: dk, dv 0
      {3, 1000, 32, 4, 128, 128, true, bottom, -1, -1, 50.0, none, true},
      {300, 300, 2, 2, 64, 64, true, top, -1, -1, 20.0, none, false},
  };
  for (const Case& c : cases) {
    AttentionDescriptor d;
    d.dtype = dtype();
    d.batch = 2;
    d.seq_q = c.seq_q;
    d.seq_kv = c.seq_kv;
    d.heads_q = c.heads_q;
    d.heads_kv = c.heads_kv;
    d.head_dim = c.dim;
    d.head_dim_v = c.dim_v;
    d.causal = c.causal;
    d.alignment = c.alignment;
    d.window_left = c.window_left;
    d.window_right = c.window_right;
    d.softcap = c.softcap;
    d.has_bias = c.bias != none;
    if (c.bias == f32) d.bias_dtype = DType::f32;
    const DType bias_dtype = c.bias == f32 ? DType::f32 : dtype();
    const std::string what =
        "seq_q " + std::to_string(c.seq_q) + ", seq_kv " + std::to_string(c.seq_kv) + ", D " + std::to_string(c.dim);
    const Shape qs{2, c.seq_q, c.heads_q, c.dim}, ks{2, c.seq_kv, c.heads_kv, c.dim},
        vs{2, c.seq_kv, c.heads_kv, c.dim_v}, os{2, c.seq_q, c.heads_q, c.dim_v};
    auto view = [&](const Shape& shape) {
      return c.head_major ? random(dtype(), shape, bhsd(shape), true) : random(dtype(), shape);
    };
    Tensor q = view(qs), k = view(ks), v = view(vs), out = output(dtype(), os),
           lse = output(acc(), {2, c.heads_q, c.seq_q});
    // The bias broadcast over the heads, query 2's row -inf throughout.
    Tensor bias = random(bias_dtype, {2, c.heads_q, c.seq_q, c.seq_kv}, {c.seq_q * c.seq_kv, 0, c.seq_kv, 1}, true);
    if (c.bias != none) {
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t j = 0; j < c.seq_kv; ++j)
          bias.host[static_cast<size_t>(bias.offset + b * c.seq_q * c.seq_kv + 2 * c.seq_kv + j)] = -INFINITY;
      ASSERT_OK(bias.upload());
    }
    const AttentionPlan plan = unwrap(AttentionPlan::select(stream(), d));
    EXPECT_EQ(plan.sku().variant, "split_kv") << what;
    harness::Buffer workspace =
        unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(plan.workspace_size(), 1)));
    const AnyTensorRef bias_ref = c.bias != none ? bias.ref() : AnyTensorRef{};
    const AttentionArgs args{q.ref(), k.ref(), v.ref(), bias_ref, out.mut(), lse.mut()};
    ASSERT_OK(plan.run(stream(), {workspace.data(), workspace.size()}, args));
    ASSERT_OK(out.download());
    ASSERT_OK(lse.download());
    Tensor q_h = mirror(q), k_h = mirror(k), v_h = mirror(v), bias_h = mirror(bias), out_h = mirror(out),
           lse_h = mirror(lse);
    ASSERT_OK(unwrap(AttentionPlan::select(Stream::host(), d))
                  .run(Stream::host(), {},
                       {q_h.ref(), k_h.ref(), v_h.ref(), c.bias != none ? bias_h.ref() : AnyTensorRef{}, out_h.mut(),
                        lse_h.mut()}));
    ASSERT_OK(out_h.download());
    ASSERT_OK(lse_h.download());
    for (int64_t i = 0; i < out.shape.numel(); ++i)
      ASSERT_NEAR(out.at(i), out_h.at(i), tolerance()) << what << " " << i;
    for (int64_t i = 0; i < lse.shape.numel(); ++i) expect_as_cpu(lse.at(i), lse_h.at(i), "lse", 0, i);

    // The backward, both sides from the CPU's out and lse.
    const AttentionBackwardPlan backward = unwrap(AttentionBackwardPlan::select(stream(), d));
    EXPECT_EQ(backward.sku().variant, "split_kv") << what;
    Tensor dout = view(os), dq = output(dtype(), qs), dk = output(dtype(), ks), dv = output(dtype(), vs);
    Tensor out_c = mirror(out_h, backend()), lse_c = mirror(lse_h, backend());
    harness::Buffer backward_workspace =
        unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(backward.workspace_size(), 1)));
    const Workspace bw{backward_workspace.data(), backward_workspace.size()};
    ASSERT_OK(backward.run(
        stream(), bw,
        {q.ref(), k.ref(), v.ref(), bias_ref, out_c.ref(), dout.ref(), lse_c.ref(), dq.mut(), dk.mut(), dv.mut()}));
    for (Tensor* t : {&dq, &dk, &dv}) ASSERT_OK(t->download());
    Tensor dout_h = mirror(dout), dq_h = mirror(dq), dk_h = mirror(dk), dv_h = mirror(dv);
    ASSERT_OK(unwrap(AttentionBackwardPlan::select(Stream::host(), d))
                  .run(Stream::host(), {},
                       {q_h.ref(), k_h.ref(), v_h.ref(), c.bias != none ? bias_h.ref() : AnyTensorRef{}, out_h.ref(),
                        dout_h.ref(), lse_h.ref(), dq_h.mut(), dk_h.mut(), dv_h.mut()}));
    for (Tensor* t : {&dq_h, &dk_h, &dv_h}) ASSERT_OK(t->download());
    for (int64_t i = 0; i < dq.shape.numel(); ++i) expect_as_cpu(dq.at(i), dq_h.at(i), "dq", 0, i);
    for (int64_t i = 0; i < dk.shape.numel(); ++i) expect_as_cpu(dk.at(i), dk_h.at(i), "dk", 0, i);
    for (int64_t i = 0; i < dv.shape.numel(); ++i) expect_as_cpu(dv.at(i), dv_h.at(i), "dv", 0, i);
    // dk alone: the same bits as with all three.
    Tensor dk_only = output(dtype(), ks);
    ASSERT_OK(backward.run(
        stream(), bw,
        {q.ref(), k.ref(), v.ref(), bias_ref, out_c.ref(), dout.ref(), lse_c.ref(), {}, dk_only.mut(), {}}));
    ASSERT_OK(dk_only.download());
    for (int64_t i = 0; i < dk.shape.numel(); ++i) ASSERT_EQ(dk_only.at(i), dk.at(i)) << what << " dk alone " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Attention, AttentionTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

}  // namespace
}  // namespace baracuda

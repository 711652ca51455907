// Hostile input: one regression per class of bug the fuzzer (tests/fuzz/) hunts. Each case once
// wrote or read outside a buffer, wrapped an integer, or returned OK having done nothing; each now
// returns an error naming the plan and the field, or (for bad index values) skips and counts.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "harness/buffer.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::Buffer;
using testing::is_error;
using testing::unwrap;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

class HostileTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override { BARACUDA_SKIP_UNLESS_AVAILABLE(GetParam()); }
  Stream stream() const { return testing::stream_for(GetParam()); }
  // A buffer of exactly these values on the backend.
  template <class T>
  Buffer buffer(std::initializer_list<T> values) {
    Buffer b = unwrap(Buffer::allocate(GetParam(), values.size() * sizeof(T)));
    EXPECT_TRUE(b.upload(values.begin(), values.size() * sizeof(T)).is_ok());
    return b;
  }
  template <class T, size_t N>
  std::array<T, N> read(const Buffer& b) {
    std::array<T, N> out{};
    EXPECT_TRUE(b.download(out.data(), N * sizeof(T)).is_ok());
    EXPECT_TRUE(stream().synchronize());
    return out;
  }
};

std::string backend_case_name(const ::testing::TestParamInfo<Backend>& info) {
  return std::string(backend_name(info.param));
}

// Extent overflow: a stride of INT64_MAX on a dim of size 2 reaches past any buffer; once the
// furthest offset wrapped negative and the view passed as "within" its capacity of 1.
TEST_P(HostileTest, ExtentOverflowIsAnError) {
  Buffer a = buffer<float>({1.0f}), b = buffer<float>({2.0f}), out = buffer<float>({0.0f});
  BinaryParamDescriptor desc;
  desc.shape = {2};
  const LerpPlan plan = unwrap(LerpPlan::select(stream(), desc));
  BinaryParamArgs args;
  args.a = {a.data(), DType::f32, {2}, {0}, 1};  // a broadcast read view: fine
  args.b = {b.data(), DType::f32, {2}, {0}, 1};
  args.out = {out.data(), DType::f32, {2}, {kInt64Max}, 1};
  EXPECT_TRUE(is_error(plan.run(stream(), {}, args), StatusCode::invalid_problem, "LerpPlan", "args.out.strides"));

  GatherDescriptor g;
  g.src_shape = {2};
  g.index_shape = {1};
  const GatherPlan gather = unwrap(GatherPlan::select(stream(), g));
  Buffer index = buffer<int64_t>({0});
  GatherArgs ga;
  ga.src = {a.data(), DType::f32, {2}, {kInt64Max}, 1};
  ga.index = AnyTensorRef::contiguous(index.data(), DType::i64, {1});
  ga.out = AnyTensorMut::contiguous(out.data(), DType::f32, {1});
  EXPECT_TRUE(is_error(gather.run(stream(), {}, ga), StatusCode::invalid_problem, "GatherPlan", "args.src.strides"));
  // The extent itself saturates rather than wrapping.
  EXPECT_EQ(AnyTensorRef(ga.src).extent(), kInt64Max);
}

// A broadcast x of far more elements than memory holds, reduced to a scalar: shape [2^48], stride 0.
// Once the CPU's run sized its host scratch by the count (2^38 bytes) and the failed allocation's
// exception escaped run. Walking 2^48 elements would take the CPU about a day, so it refuses more than
// 2^40 at select, naming descriptor.shape; below that its scratch is bounded (pieces longer than
// usual past 2^12 of them), and a broadcast of 2^26 still sums exactly.
TEST_P(HostileTest, HugeBroadcastReductionIsRefusedOrBounded) {
  Buffer x = buffer<double>({0.5}), out = buffer<double>({-1.0});
  ReduceDescriptor d;
  d.dtype = DType::f64;
  d.shape = {int64_t{1} << 48};
  if (GetParam() == Backend::cpu) {
    EXPECT_TRUE(
        is_error(ReducePlan::select(stream(), d).status(), StatusCode::unsupported, "ReducePlan", "descriptor.shape"));
  }
  d.shape = {int64_t{1} << 26};
  const ReducePlan plan = unwrap(ReducePlan::select(stream(), d));
  Buffer workspace = unwrap(Buffer::allocate(GetParam(), std::max<size_t>(plan.workspace_size(), 1)));
  ReduceArgs args;
  args.x = {x.data(), DType::f64, d.shape, {0}, 1};
  args.out = AnyTensorMut::contiguous(out.data(), DType::f64, {});
  ASSERT_TRUE(plan.run(stream(), {workspace.data(), plan.workspace_size()}, args).is_ok());
  EXPECT_EQ((read<double, 1>(out)[0]), 0x1p25);
}

// Element-count overflow: shapes whose product wraps to zero once passed as empty problems.
TEST_P(HostileTest, ElementCountOverflowIsAnError) {
  GatherDescriptor g;
  g.src_shape = {int64_t{1} << 32, int64_t{1} << 32};
  g.index_shape = {1, 1};
  EXPECT_TRUE(is_error(GatherPlan::select(stream(), g).status(), StatusCode::invalid_problem, "GatherPlan",
                       "descriptor.src_shape"));
  EXPECT_EQ(g.src_shape.numel(), kInt64Max);  // saturates

  EmbeddingDescriptor e;
  e.num_embeddings = 8;
  e.embedding_dim = 4;
  e.num_indices = int64_t{1} << 62;
  EXPECT_TRUE(is_error(EmbeddingBackwardPlan::select(stream(), e).status(), StatusCode::invalid_problem,
                       "EmbeddingBackwardPlan", "descriptor.num_indices"));
  // Just under the limit is a shape, but the deterministic sort's workspace for it is not (CUDA's
  // atomic default, its shared-memory lines for a table of at most 48 KiB, and the CPU's in-order
  // f32 and f64 need none: bf16 sorts on both backends).
  PlanPreference deterministic;
  deterministic.determinism = Determinism::required;
  e.dtype = DType::bf16;
  e.num_embeddings = int64_t{1} << 20;
  e.embedding_dim = 1;
  for (int64_t n : {(int64_t{1} << 60) + 1, int64_t{1} << 60})
    for (const std::string& variant : {std::string(), std::string("sorted")}) {
      e.num_indices = n;
      deterministic.variant = variant;
      EXPECT_TRUE(is_error(EmbeddingBackwardPlan::select(stream(), e, deterministic).status(),
                           StatusCode::invalid_problem, "EmbeddingBackwardPlan", "descriptor.num_indices"));
    }
  // index_select's output is the table with dim resized: it is held to the limit too.
  IndexSelectDescriptor s;
  s.src_shape = {4, int64_t{1} << 40};
  s.num_indices = int64_t{1} << 30;
  EXPECT_TRUE(is_error(IndexSelectPlan::select(stream(), s).status(), StatusCode::invalid_problem, "IndexSelectPlan",
                       "descriptor.num_indices"));
}

// Index values at the ends of the integer range are skipped and counted, never multiplied into
// an offset (INT64_MAX once overflowed a signed row offset; INT64_MIN went uncounted).
TEST_P(HostileTest, ExtremeIndexValuesAreSkippedAndCounted) {
  EmbeddingDescriptor e;
  e.num_embeddings = 3;
  e.embedding_dim = 2;
  e.num_indices = 4;
  e.padding_idx = 0;
  const EmbeddingPlan plan = unwrap(EmbeddingPlan::select(stream(), e));
  Buffer weight = buffer<float>({1, 2, 3, 4, 5, 6});
  Buffer indices = buffer<int64_t>({kInt64Max, kInt64Min, 2, -1});
  Buffer out = buffer<float>({9, 9, 9, 9, 9, 9, 9, 9});
  Buffer count = buffer<int64_t>({0});
  EmbeddingArgs args;
  args.weight = AnyTensorRef::contiguous(weight.data(), DType::f32, {3, 2});
  args.indices = AnyTensorRef::contiguous(indices.data(), DType::i64, {4});
  args.out = AnyTensorMut::contiguous(out.data(), DType::f32, {4, 2});
  args.bad_index_count = static_cast<int64_t*>(count.data());
  ASSERT_OK(plan.run(stream(), {}, args));
  EXPECT_EQ((read<float, 8>(out)), (std::array<float, 8>{0, 0, 0, 0, 5, 6, 0, 0}));
  EXPECT_EQ((read<int64_t, 1>(count)[0]), 3);

  // The same values through the deterministic scatter (their sort keys) and an i32 index.
  PlanPreference deterministic;
  deterministic.determinism = Determinism::required;
  const EmbeddingBackwardPlan back = unwrap(EmbeddingBackwardPlan::select(stream(), e, deterministic));
  Buffer workspace = unwrap(Buffer::allocate(GetParam(), std::max<size_t>(back.workspace_size(), 1)));
  Buffer dweight = buffer<float>({0, 0, 0, 0, 0, 0});
  EmbeddingBackwardArgs bargs;
  bargs.dout = AnyTensorRef::contiguous(out.data(), DType::f32, {4, 2});
  bargs.indices = args.indices;
  bargs.dweight = AnyTensorMut::contiguous(dweight.data(), DType::f32, {3, 2});
  bargs.bad_index_count = args.bad_index_count;
  ASSERT_OK(back.run(stream(), {workspace.data(), workspace.size()}, bargs));
  EXPECT_EQ((read<float, 6>(dweight)), (std::array<float, 6>{0, 0, 0, 0, 5, 6}));
  EXPECT_EQ((read<int64_t, 1>(count)[0]), 6);

  e.index_dtype = DType::i32;
  const EmbeddingPlan plan32 = unwrap(EmbeddingPlan::select(stream(), e));
  Buffer indices32 = buffer<int32_t>({std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), 1, 3});
  args.indices = AnyTensorRef::contiguous(indices32.data(), DType::i32, {4});
  ASSERT_OK(plan32.run(stream(), {}, args));
  EXPECT_EQ((read<float, 8>(out)), (std::array<float, 8>{0, 0, 0, 0, 3, 4, 0, 0}));
  EXPECT_EQ((read<int64_t, 1>(count)[0]), 9);
}

// A broadcast index (a zero stride) describing 2^40 values over one stored element, along an empty
// table: every value is counted (as PyTorch checks every index), in the time of one element (once a
// count walked all 2^40 copies: a hang).
TEST_P(HostileTest, BroadcastIndexIsCountedByWhatItStores) {
  IndexSelectDescriptor d;
  d.src_shape = {4, 0};
  d.num_indices = int64_t{1} << 40;
  const IndexSelectBackwardPlan plan = unwrap(IndexSelectBackwardPlan::select(stream(), d));
  Buffer index = buffer<int64_t>({9}), count = buffer<int64_t>({5});
  IndexSelectBackwardArgs args;
  args.dout = {nullptr, DType::f32, {int64_t{1} << 40, 0}, {0, 1}, 0};
  args.index = {index.data(), DType::i64, {int64_t{1} << 40}, {0}, 1};
  args.dsrc = {nullptr, DType::f32, {4, 0}, {0, 1}, 0};
  args.bad_index_count = static_cast<int64_t*>(count.data());
  ASSERT_OK(plan.run(stream(), {}, args));
  EXPECT_EQ((read<int64_t, 1>(count)[0]), 5 + (int64_t{1} << 40));
}

// sku(args) once walked a rank-100 shape past its array; it now answers sku() for views that
// can_implement rejects.
TEST_P(HostileTest, SkuOfRejectedArgsReadsNothing) {
  BinaryParamDescriptor desc;
  desc.shape = {3};
  const LerpPlan plan = unwrap(LerpPlan::select(stream(), desc));
  BinaryParamArgs args;
  args.a.shape.rank = 100;
  args.out.shape.rank = -5;
  EXPECT_FALSE(plan.can_implement(args));
  EXPECT_EQ(plan.sku(args).to_string(), plan.sku().to_string());
  Shape huge;
  huge.rank = 100;
  huge.dims.fill(2);
  EXPECT_EQ(huge.numel(), 256);  // reads kMaxRank dims at most
  EXPECT_NE(huge.to_string().find("rank 100"), std::string::npos);
}

// A rank-0 weight broadcast to [1, 3, 9]: the backward once read an uninitialized flag for the
// dims past the output's rank. dweight is the sum of (b - a) dout over all 27 elements.
TEST_P(HostileTest, RankZeroWeightBroadcastBackward) {
  BinaryParamDescriptor desc;
  desc.shape = {1, 3, 9};
  desc.weight_mode = WeightMode::tensor;
  desc.weight_shape = Shape{};
  const LerpBackwardPlan plan = unwrap(LerpBackwardPlan::select(stream(), desc));
  std::vector<float> ones(27, 1.0f), twos(27, 2.0f);
  Buffer dout = unwrap(Buffer::allocate(GetParam(), 27 * 4)), a = unwrap(Buffer::allocate(GetParam(), 27 * 4)),
         b = unwrap(Buffer::allocate(GetParam(), 27 * 4)), da = unwrap(Buffer::allocate(GetParam(), 27 * 4)),
         db = unwrap(Buffer::allocate(GetParam(), 27 * 4));
  ASSERT_OK(dout.upload(ones.data(), 27 * 4));
  ASSERT_OK(a.upload(ones.data(), 27 * 4));
  ASSERT_OK(b.upload(twos.data(), 27 * 4));
  Buffer w = buffer<float>({0.25f}), dw = buffer<float>({-1.0f});
  Buffer workspace = unwrap(Buffer::allocate(GetParam(), std::max<size_t>(plan.workspace_size(), 1)));
  BinaryParamBackwardArgs args;
  args.dout = AnyTensorRef::contiguous(dout.data(), DType::f32, desc.shape);
  args.a = AnyTensorRef::contiguous(a.data(), DType::f32, desc.shape);
  args.b = AnyTensorRef::contiguous(b.data(), DType::f32, desc.shape);
  args.weight = AnyTensorRef::contiguous(w.data(), DType::f32, Shape{});
  args.da = AnyTensorMut::contiguous(da.data(), DType::f32, desc.shape);
  args.db = AnyTensorMut::contiguous(db.data(), DType::f32, desc.shape);
  args.dweight = AnyTensorMut::contiguous(dw.data(), DType::f32, Shape{});
  ASSERT_OK(plan.run(stream(), {workspace.data(), workspace.size()}, args));
  EXPECT_EQ((read<float, 1>(dw)[0]), 27.0f);
}

// An output whose elements share addresses (not only through a zero stride) is rejected: parallel
// writers would race and the result would depend on the schedule.
// An argument the descriptor does not use (a scalar operand's tensor) is never read nor measured:
// its garbage strides once overflowed the overlap check (fuzz case 10057, seed 1).
TEST_P(HostileTest, UnusedOperandViewIsIgnored) {
  Buffer a = buffer<float>({1.0f, 2.0f}), out = buffer<float>({0.0f, 0.0f});
  BinaryDescriptor desc;
  desc.a_shape = {2};
  desc.b_scalar = 3.0;
  const BinaryPlan plan = unwrap(BinaryPlan::select(stream(), desc));
  BinaryArgs args;
  args.a = {a.data(), DType::f32, {2}, {1}, 2};
  args.b = {out.data(), DType::f32, {151, 3}, {-5626332866401898538, kInt64Max}, 1};
  args.out = {out.data(), DType::f32, {2}, {1}, 2};
  ASSERT_TRUE(plan.run(stream(), {}, args).is_ok());
  const auto got = read<float, 2>(out);
  EXPECT_EQ(got[0], 4.0f);
  EXPECT_EQ(got[1], 5.0f);
}

// An unused view of a norm (RmsNorm's bias, a residual without descriptor.residual) with absurd
// strides is ignored; once its strides entered the walks and overflowed them.
TEST_P(HostileTest, UnusedNormViewIsIgnored) {
  Buffer x = buffer<float>({1.0f, 3.0f}), y = buffer<float>({0.0f, 0.0f});
  NormDescriptor d;
  d.shape = {1, 2};
  d.has_weight = d.has_bias = false;
  const RmsNormPlan plan = unwrap(RmsNormPlan::select(stream(), d));
  NormArgs args;
  args.x = {x.data(), DType::f32, {1, 2}, {2, 1}, 2};
  args.bias = {x.data(), DType::f32, {151, 3}, {-5626332866401898538, kInt64Max}, 1};
  args.residual = {x.data(), DType::f32, {1, 2}, {kInt64Max, kInt64Max}, 1};
  args.y = {y.data(), DType::f32, {1, 2}, {2, 1}, 2};
  ASSERT_TRUE(plan.run(stream(), {}, args).is_ok());
  const auto got = read<float, 2>(y);
  const float rstd = 1.0f / std::sqrt(5.0f + 1e-5f);  // mean of squares (1 + 9) / 2
  EXPECT_NEAR(got[0], rstd, 1e-6f);
  EXPECT_NEAR(got[1], 3.0f * rstd, 1e-6f);
}

// Operands each within the element limit whose broadcast is not: once an overflow in select.
TEST_P(HostileTest, BroadcastOutputPastTheLimitIsAnError) {
  BinaryDescriptor b;
  b.a_shape = {247, 1};
  b.b_shape = {1, int64_t{1} << 60};
  EXPECT_TRUE(is_error(BinaryBackwardPlan::select(stream(), b).status(), StatusCode::invalid_problem,
                       "BinaryBackwardPlan", "descriptor.b_shape"));
  TernaryDescriptor t;
  t.kind = TernaryKind::addcdiv;
  t.a_shape = {247, 1};
  t.b_shape = {1, int64_t{1} << 60};
  t.c_shape = {1};
  EXPECT_TRUE(is_error(TernaryBackwardPlan::select(stream(), t).status(), StatusCode::invalid_problem,
                       "TernaryBackwardPlan", "descriptor.c_shape"));
}

TEST_P(HostileTest, SelfOverlappingOutputIsAnError) {
  Buffer a = buffer<float>({1, 2, 3, 4}), out = buffer<float>({0, 0, 0});
  BinaryParamDescriptor desc;
  desc.shape = {2, 2};
  const LerpPlan plan = unwrap(LerpPlan::select(stream(), desc));
  BinaryParamArgs args;
  args.a = args.b = AnyTensorRef::contiguous(a.data(), DType::f32, {2, 2});
  args.out = {out.data(), DType::f32, {2, 2}, {1, 1}, 3};  // elements 0,1,1,2
  EXPECT_TRUE(is_error(plan.run(stream(), {}, args), StatusCode::invalid_problem, "LerpPlan", "args.out.strides"));
  // Read views may overlap (a broadcast is one).
  Buffer out4 = buffer<float>({0, 0, 0, 0});
  args.a = {a.data(), DType::f32, {2, 2}, {1, 1}, 3};
  args.out = AnyTensorMut::contiguous(out4.data(), DType::f32, {2, 2});
  ASSERT_OK(plan.run(stream(), {}, args));
  // A slice of a wider matrix (gaps between rows) and a transpose do not overlap.
  Buffer wide = buffer<float>({0, 0, 0, 0, 0, 0});
  args.out = {wide.data(), DType::f32, {2, 2}, {3, 1}, 6};
  ASSERT_OK(plan.run(stream(), {}, args));
  args.out = {out4.data(), DType::f32, {2, 2}, {1, 2}, 4};
  ASSERT_OK(plan.run(stream(), {}, args));
}

// A default-constructed plan (its descriptor never validated) answers every member without a throw.
// Overlap: an output shares memory with an input only as that very view, for every plan (once
// softmax took y one element past x, and read what it had written); and where a backward reduces a
// broadcast operand's gradient after another pass wrote its gradients, not even as that view (once
// addcdiv's db over dout left dc summed from db's values); and only where the op's header allows
// it (once a gather's out over src read rows it had already written).
TEST_P(HostileTest, PartialOverlapAndUnsafeAliasesAreErrors) {
  Buffer xs = unwrap(Buffer::allocate(GetParam(), 64 * sizeof(float)));
  float* base = static_cast<float*>(xs.data());
  SoftmaxDescriptor sd;
  sd.shape = {4, 8};
  const SoftmaxPlan softmax = unwrap(SoftmaxPlan::select(stream(), sd));
  SoftmaxArgs sa;
  sa.x = {base, DType::f32, {4, 8}, {8, 1}, 64};
  sa.y = {base + 1, DType::f32, {4, 8}, {8, 1}, 63};
  EXPECT_TRUE(is_error(softmax.run(stream(), {}, sa), StatusCode::invalid_problem, "SoftmaxPlan", "args.y"));
  sa.y = {base, DType::f32, {4, 8}, {8, 1}, 64};  // in place: allowed
  EXPECT_TRUE(softmax.run(stream(), {}, sa).is_ok());
  const SoftmaxBackwardPlan softmax_back = unwrap(SoftmaxBackwardPlan::select(stream(), sd));
  Buffer ys = unwrap(Buffer::allocate(GetParam(), 32 * sizeof(float)));
  SoftmaxBackwardArgs sb;
  sb.y = {ys.data(), DType::f32, {4, 8}, {8, 1}, 32};
  sb.dy = {base, DType::f32, {4, 8}, {8, 1}, 64};
  sb.dx = {base, DType::f32, {4, 8}, {1, 4}, 64};  // dy's memory, other strides
  EXPECT_TRUE(
      is_error(softmax_back.run(stream(), {}, sb), StatusCode::invalid_problem, "SoftmaxBackwardPlan", "args.dx"));

  TernaryDescriptor td;
  td.kind = TernaryKind::addcdiv;
  td.dtype = DType::f32;
  td.a_shape = td.b_shape = {4, 8};
  td.c_shape = {8};  // broadcast: dc is reduced from dout
  const TernaryBackwardPlan ternary = unwrap(TernaryBackwardPlan::select(stream(), td));
  Buffer dc = unwrap(Buffer::allocate(GetParam(), 8 * sizeof(float)));
  TernaryBackwardArgs tb;
  tb.dout = {base, DType::f32, {4, 8}, {8, 1}, 64};
  tb.a = {ys.data(), DType::f32, {4, 8}, {8, 1}, 32};
  tb.b = {ys.data(), DType::f32, {4, 8}, {8, 1}, 32};
  tb.c = {ys.data(), DType::f32, {8}, {1}, 32};
  tb.db = {base, DType::f32, {4, 8}, {8, 1}, 64};  // exactly dout
  tb.dc = {dc.data(), DType::f32, {8}, {1}, 8};
  EXPECT_TRUE(is_error(ternary.run(stream(), {}, tb), StatusCode::invalid_problem, "TernaryBackwardPlan", "args.db"));

  NormDescriptor nd;
  nd.shape = {4, 8};
  nd.residual = true;
  nd.has_weight = nd.has_bias = false;
  const RmsNormPlan norm = unwrap(RmsNormPlan::select(stream(), nd));
  NormArgs na;
  na.x = {base, DType::f32, {4, 8}, {8, 1}, 64};
  na.residual = {ys.data(), DType::f32, {4, 8}, {8, 1}, 32};
  na.y = {base + 32, DType::f32, {4, 8}, {8, 1}, 32};
  na.h = {base, DType::f32, {4, 8}, {8, 1}, 64};  // h is written before x is read again
  EXPECT_TRUE(is_error(norm.run(stream(), {}, na), StatusCode::invalid_problem, "RmsNormPlan", "args.h"));

  GatherDescriptor gd;
  gd.src_shape = gd.index_shape = {4, 8};
  gd.dim = 1;
  const GatherPlan gather = unwrap(GatherPlan::select(stream(), gd));
  Buffer index = unwrap(Buffer::allocate(GetParam(), 32 * sizeof(int64_t)));
  GatherArgs ga;
  ga.src = {base, DType::f32, {4, 8}, {8, 1}, 64};
  ga.index = {index.data(), DType::i64, {4, 8}, {8, 1}, 32};
  ga.out = {base, DType::f32, {4, 8}, {8, 1}, 64};  // exactly src: its header allows no alias
  EXPECT_TRUE(is_error(gather.run(stream(), {}, ga), StatusCode::invalid_problem, "GatherPlan", "args.out"));
}

TEST_P(HostileTest, DefaultConstructedPlanAnswersEveryMember) {
  const GatherPlan plan;
  GatherArgs args;
  EXPECT_TRUE(is_error(plan.run(stream(), {}, args), StatusCode::invalid_problem, "GatherPlan", "plan"));
  EXPECT_EQ(plan.sku().variant, "unselected");
  EXPECT_EQ(plan.sku(args).variant, "unselected");
  EXPECT_EQ(plan.workspace_size(), 0u);
  EXPECT_TRUE(plan.arg_specs().empty());
  (void)plan.precision_guarantee();
}

// Garbage enum values and absurd preferences are errors with messages, never UB.
TEST_P(HostileTest, GarbageEnumsAreErrors) {
  BinaryParamDescriptor desc;
  desc.shape = {3};
  desc.dtype = static_cast<DType>(200);
  Status s = LerpPlan::select(stream(), desc).status();
  EXPECT_TRUE(is_error(s, StatusCode::unsupported, "LerpPlan", "descriptor.dtype"));
  desc.dtype = DType::f32;
  desc.weight_mode = static_cast<WeightMode>(7);
  EXPECT_TRUE(is_error(LerpPlan::select(stream(), desc).status(), StatusCode::invalid_problem, "LerpPlan",
                       "descriptor.weight_mode"));
  GatherDescriptor g;
  g.src_shape = {4};
  g.index_shape = {2};
  g.index_dtype = static_cast<DType>(99);
  EXPECT_TRUE(is_error(GatherPlan::select(stream(), g).status(), StatusCode::unsupported, "GatherPlan",
                       "descriptor.index_dtype"));
}

INSTANTIATE_TEST_SUITE_P(Backends, HostileTest, ::testing::Values(Backend::cpu, Backend::cuda), backend_case_name);

}  // namespace
}  // namespace baracuda

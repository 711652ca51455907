// BinaryParam family (lerp): forward and backward on every backend and float dtype, against a
// double-precision reference; strided, broadcast and misaligned views; the gradient check; and
// every error path.
#include <cstring>

#include "harness/reference/binary_param_reference.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using harness::TensorSpec;
using testing::unwrap;

using testing::contiguous;
using testing::misaligned;
using testing::with_strides;

using reference::broadcast_index;

class BinaryParamTest : public testing::BackendDTypeTest {
 protected:
  double tol() const { return harness::tolerance(dtype()); }
  Tensor make(const TensorSpec& spec, double lo = -1.0, double hi = 1.0) {
    return unwrap(harness::random_tensor(backend(), dtype(), spec, rng_, lo, hi));
  }
  Tensor output(const TensorSpec& spec) {
    Tensor t = make(spec);
    EXPECT_TRUE(harness::poison(t).is_ok());
    return t;
  }
  BinaryParamDescriptor scalar_desc(Shape shape, double w) const { return {dtype(), shape, WeightMode::scalar, w, {}}; }
  BinaryParamDescriptor tensor_desc(Shape shape, Shape weight_shape) const {
    return {dtype(), shape, WeightMode::tensor, 0.0, weight_shape};
  }

  // Runs the forward plan and compares with the reference; returns the variant that ran.
  std::string check_forward(const BinaryParamDescriptor& desc, const TensorSpec& a_spec, const TensorSpec& b_spec,
                            const TensorSpec& out_spec, const TensorSpec& w_spec = {},
                            const PlanPreference& pref = {}) {
    Tensor a = make(a_spec), b = make(b_spec), out = output(out_spec);
    const bool tensor = desc.weight_mode == WeightMode::tensor;
    Tensor w = tensor ? make(w_spec, -0.5, 1.5) : Tensor{};
    LerpPlan plan = unwrap(LerpPlan::select(stream(), desc, pref));
    BinaryParamArgs args{a.ref(), b.ref(), tensor ? w.ref() : AnyTensorRef{}, out.mut()};
    EXPECT_TRUE(plan.run(stream(), {}, args).is_ok()) << plan.run(stream(), {}, args).to_string();
    EXPECT_TRUE(out.download().is_ok());
    EXPECT_TRUE(testing::all_close(
        out,
        [&](int64_t i) {
          const double wv = tensor ? w.at(broadcast_index(desc.shape, desc.weight_shape, i)) : desc.weight;
          return reference::lerp(a.at(i), b.at(i), wv);
        },
        tol()));
    return plan.sku(args).variant;
  }

  struct BackwardSpecs {
    TensorSpec dout, a, b, w, da, db, dw;
  };
  static BackwardSpecs all_contiguous(Shape shape, Shape weight_shape) {
    return {contiguous(shape), contiguous(shape), contiguous(shape),       contiguous(weight_shape),
            contiguous(shape), contiguous(shape), contiguous(weight_shape)};
  }

  // Runs the backward plan and compares da, db (and dweight) with the reference.
  std::string check_backward(const BinaryParamDescriptor& desc, const BackwardSpecs& s,
                             const PlanPreference& pref = {}) {
    const bool tensor = desc.weight_mode == WeightMode::tensor;
    Tensor dout = make(s.dout), da = output(s.da), db = output(s.db);
    Tensor a = tensor ? make(s.a) : Tensor{}, b = tensor ? make(s.b) : Tensor{};
    Tensor w = tensor ? make(s.w, -0.5, 1.5) : Tensor{}, dw = tensor ? output(s.dw) : Tensor{};
    LerpBackwardPlan plan = unwrap(LerpBackwardPlan::select(stream(), desc, pref));
    harness::Buffer workspace = unwrap(harness::Buffer::allocate(backend(), plan.workspace_size()));
    BinaryParamBackwardArgs args{dout.ref(),
                                 tensor ? a.ref() : AnyTensorRef{},
                                 tensor ? b.ref() : AnyTensorRef{},
                                 tensor ? w.ref() : AnyTensorRef{},
                                 da.mut(),
                                 db.mut(),
                                 tensor ? dw.mut() : AnyTensorMut{}};
    const Status st = plan.run(stream(), {workspace.data(), workspace.size()}, args);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_TRUE(da.download().is_ok() && db.download().is_ok());
    auto wv = [&](int64_t i) { return tensor ? w.at(broadcast_index(desc.shape, desc.weight_shape, i)) : desc.weight; };
    EXPECT_TRUE(testing::all_close(
        da, [&](int64_t i) { return reference::lerp_da(dout.at(i), wv(i)); }, tol()));
    EXPECT_TRUE(testing::all_close(
        db, [&](int64_t i) { return reference::lerp_db(dout.at(i), wv(i)); }, tol()));
    if (tensor) {
      EXPECT_TRUE(dw.download().is_ok());
      const int64_t m = desc.weight_shape.numel();
      std::vector<double> sum(m, 0.0), magnitude(m, 0.0);
      for (int64_t i = 0, numel = desc.shape.numel(); i < numel; ++i) {
        const double term = reference::lerp_dw(dout.at(i), a.at(i), b.at(i));
        const int64_t k = broadcast_index(desc.shape, desc.weight_shape, i);
        sum[k] += term;
        magnitude[k] += std::fabs(term);
      }
      // A sum is accurate relative to the sum of its terms' magnitudes, not to its own value.
      int64_t bad = 0;
      for (int64_t k = 0; k < m; ++k) {
        const double got = dw.at(k);
        if (std::isnan(got) || std::fabs(got - sum[k]) > tol() * (1.0 + magnitude[k])) ++bad;
      }
      EXPECT_EQ(bad, 0) << "dweight elements off, of " << m;
    }
    return plan.sku(args).variant;
  }
};

std::string fast_contiguous(Backend backend) { return backend == Backend::cuda ? "vectorized" : "contiguous"; }

TEST_P(BinaryParamTest, ForwardScalarWeightAtEdgeSizes) {
  for (int64_t n : {0, 1, 3, 4, 4097, 100003}) {
    SCOPED_TRACE(n);
    const std::string variant = check_forward(scalar_desc({n}, 0.3), contiguous({n}), contiguous({n}), contiguous({n}));
    EXPECT_EQ(variant, fast_contiguous(backend()));
  }
}

TEST_P(BinaryParamTest, ForwardScalarWeightEndpointsAreExact) {
  Tensor a = make(contiguous({1000})), b = make(contiguous({1000})), out = output(contiguous({1000}));
  for (double w : {0.0, 1.0}) {
    LerpPlan plan = unwrap(LerpPlan::select(stream(), scalar_desc({1000}, w)));
    ASSERT_OK(plan.run(stream(), {}, {a.ref(), b.ref(), {}, out.mut()}));
    ASSERT_OK(out.download());
    for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(out.at(i), w == 0.0 ? a.at(i) : b.at(i)) << i;
  }
}

TEST_P(BinaryParamTest, ForwardStridedAndBroadcastViews) {
  const Shape shape{37, 53};
  // a: column-major; b: one row broadcast down the columns; out: rows with gaps, every other column.
  const std::string variant = check_forward(scalar_desc(shape, 0.7), with_strides(shape, {1, 37}),
                                            with_strides(shape, {0, 1}), with_strides(shape, {111, 2}));
  EXPECT_EQ(variant, "strided");
}

TEST_P(BinaryParamTest, ForwardMisalignedPointersTakeTheElementPath) {
  const Shape shape{4097};
  EXPECT_EQ(check_forward(scalar_desc(shape, 0.25), misaligned(shape), contiguous(shape), misaligned(shape)),
            "contiguous");
}

TEST_P(BinaryParamTest, ForwardForcedStridedVariantOnContiguousViews) {
  PlanPreference pref;
  pref.variant = "strided";
  EXPECT_EQ(check_forward(scalar_desc({3, 1031}, 0.6), contiguous({3, 1031}), contiguous({3, 1031}),
                          contiguous({3, 1031}), {}, pref),
            "strided");
}

TEST_P(BinaryParamTest, ForwardRankEightStrided) {
  const Shape shape{2, 1, 3, 2, 2, 1, 3, 2};
  Strides out_strides = contiguous_strides(shape);
  for (int64_t& s : out_strides) s *= 2;
  EXPECT_EQ(
      check_forward(scalar_desc(shape, 0.4), contiguous(shape), contiguous(shape), with_strides(shape, out_strides)),
      "strided");
}

TEST_P(BinaryParamTest, ForwardTensorWeightSameShape) {
  const Shape shape{5, 7, 11};
  EXPECT_EQ(check_forward(tensor_desc(shape, shape), contiguous(shape), contiguous(shape), contiguous(shape),
                          contiguous(shape)),
            fast_contiguous(backend()));
}

TEST_P(BinaryParamTest, ForwardTensorWeightBroadcasts) {
  const Shape shape{33, 65};
  for (Shape weight_shape : {Shape{65}, Shape{33, 1}, Shape{1}, Shape{}}) {
    SCOPED_TRACE(weight_shape.to_string());
    EXPECT_EQ(check_forward(tensor_desc(shape, weight_shape), contiguous(shape), contiguous(shape), contiguous(shape),
                            contiguous(weight_shape)),
              "strided");
  }
}

// Rows of whole 16-byte vectors with a broadcast operand take the row-vectorized kernel on CUDA.
TEST_P(BinaryParamTest, ForwardBroadcastRowsTakeTheRowVectorizedKernel) {
  const std::string rows = backend() == Backend::cuda ? "strided_vectorized" : "strided";
  const Shape shape{33, 128};
  for (Shape weight_shape : {Shape{128}, Shape{33, 1}, Shape{}}) {
    SCOPED_TRACE(weight_shape.to_string());
    EXPECT_EQ(check_forward(tensor_desc(shape, weight_shape), contiguous(shape), contiguous(shape), contiguous(shape),
                            contiguous(weight_shape)),
              rows);
  }
  // Output rows padded to 136 elements (a whole number of vectors for every dtype).
  EXPECT_EQ(check_forward(scalar_desc(shape, 0.3), contiguous(shape), contiguous(shape), with_strides(shape, {136, 1})),
            rows);
  // Rows not a whole number of vectors: the element-wise row kernel.
  EXPECT_EQ(check_forward(tensor_desc({9, 1031}, {1031}), contiguous({9, 1031}), contiguous({9, 1031}),
                          contiguous({9, 1031}), contiguous({1031})),
            "strided");
}

// The strided_vectorized kernels (cuda/elementwise_launch.hpp): rows of 1 to 2048 vectors (every
// dtype's), on both sides of a block's worth (rows_vectorized from kThreads * kRowUnroll vectors:
// 512 of 16-bit types, lerp being arithmetic (two a thread), and 1024 of f32 and f64: 4096 elements,
// f64's 2048; and 4104 elements, so that a thread's last vectors fall off the row), shorter rows in
// lanes of 32, 64, 128 and 256 threads, and more rows than a wave of lane blocks holds (each thread
// then steps over rows).
TEST_P(BinaryParamTest, ForwardBroadcastRowsEveryBlockShape) {
  const std::string rows = backend() == Backend::cuda ? "strided_vectorized" : "strided";
  struct Case {
    int64_t n, d;
  };
  for (const Case& c : {Case{7001, 8}, Case{300, 768}, Case{300, 1000}, Case{900, 2040}, Case{64, 2048},
                        Case{300, 4088}, Case{64, 4096}, Case{40, 4104}}) {
    const Shape shape{c.n, c.d};
    for (Shape weight_shape : {Shape{c.d}, Shape{c.n, 1}}) {
      SCOPED_TRACE(shape.to_string() + " weight " + weight_shape.to_string());
      EXPECT_EQ(check_forward(tensor_desc(shape, weight_shape), contiguous(shape), contiguous(shape), contiguous(shape),
                              contiguous(weight_shape)),
                rows);
    }
  }
}

TEST_P(BinaryParamTest, BackwardScalarWeightAtEdgeSizes) {
  for (int64_t n : {0, 1, 3, 4097, 100003}) {
    SCOPED_TRACE(n);
    EXPECT_EQ(check_backward(scalar_desc({n}, 0.35), all_contiguous({n}, {})), fast_contiguous(backend()));
  }
}

TEST_P(BinaryParamTest, BackwardScalarWeightStridedAndMisaligned) {
  const Shape shape{41, 29};
  BackwardSpecs specs = all_contiguous(shape, {});
  specs.dout = with_strides(shape, {1, 41});
  specs.da = with_strides(shape, {64, 2});
  EXPECT_EQ(check_backward(scalar_desc(shape, 0.8), specs), "strided");
  specs = all_contiguous(shape, {});
  specs.db = misaligned(shape);
  EXPECT_EQ(check_backward(scalar_desc(shape, 0.8), specs), "contiguous");
}

TEST_P(BinaryParamTest, BackwardTensorWeightSameShape) {
  const Shape shape{3, 4099};
  EXPECT_EQ(check_backward(tensor_desc(shape, shape), all_contiguous(shape, shape)), fast_contiguous(backend()));
  BackwardSpecs specs = all_contiguous(shape, shape);
  specs.w = with_strides(shape, {1, 3});
  specs.dw = with_strides(shape, {8200, 2});
  EXPECT_EQ(check_backward(tensor_desc(shape, shape), specs), "strided");
}

TEST_P(BinaryParamTest, BackwardTensorWeightBroadcastReducesDeterministically) {
  struct Case {
    Shape shape, weight_shape;
  };
  for (const Case& c : {Case{{129, 65}, {65}}, Case{{129, 65}, {129, 1}}, Case{{129, 65}, {1}},
                        Case{{7, 300, 9}, {7, 1, 9}}, Case{{4, 20011}, {4, 1}}, Case{{5000, 3}, {}}}) {
    SCOPED_TRACE(c.shape.to_string() + " weight " + c.weight_shape.to_string());
    EXPECT_EQ(check_backward(tensor_desc(c.shape, c.weight_shape), all_contiguous(c.shape, c.weight_shape)),
              "broadcast_reduce");
  }
  // Strided dout and gradients with a broadcast weight.
  const Shape shape{61, 47};
  BackwardSpecs specs = all_contiguous(shape, {47});
  specs.dout = with_strides(shape, {1, 61});
  specs.da = with_strides(shape, {100, 2});
  specs.dw = with_strides({47}, {3});
  EXPECT_EQ(check_backward(tensor_desc(shape, {47}), specs), "broadcast_reduce");
}

TEST_P(BinaryParamTest, BackwardRespectsTheWorkspaceLimit) {
  const BinaryParamDescriptor desc = tensor_desc({8, 30011}, {8, 1});
  PlanPreference small;
  small.workspace_limit = 8 * 16 * 8;  // at most 16 splits per weight element
  LerpBackwardPlan plan = unwrap(LerpBackwardPlan::select(stream(), desc, small));
  EXPECT_LE(plan.workspace_size(), small.workspace_limit);
  EXPECT_EQ(check_backward(desc, all_contiguous(desc.shape, desc.weight_shape), small), "broadcast_reduce");
  PlanPreference none;
  none.workspace_limit = 0;
  EXPECT_EQ(unwrap(LerpBackwardPlan::select(stream(), desc, none)).workspace_size(), 0u);
  EXPECT_EQ(check_backward(desc, all_contiguous(desc.shape, desc.weight_shape), none), "broadcast_reduce");
}

INSTANTIATE_TEST_SUITE_P(Lerp, BinaryParamTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

// ---------------------------------------------------------------------------------------------
// Errors: the right code, and a message naming the plan and the field. Never a crash.

class BinaryParamErrors : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override { BARACUDA_SKIP_UNLESS_AVAILABLE(GetParam()); }
  Stream stream() const { return testing::stream_for(GetParam()); }
};

constexpr const char* kFwd = "LerpPlan";
constexpr const char* kBwd = "LerpBackwardPlan";

TEST_P(BinaryParamErrors, SelectRejectsBadDescriptors) {
  BinaryParamDescriptor desc{DType::i32, {4}, WeightMode::scalar, 0.5, {}};
  EXPECT_TRUE(
      testing::is_error(LerpPlan::select(stream(), desc).status(), StatusCode::unsupported, kFwd, "descriptor.dtype"));
  desc.dtype = DType::f32;
  desc.shape = {4, -3};
  EXPECT_TRUE(testing::is_error(LerpPlan::select(stream(), desc).status(), StatusCode::invalid_problem, kFwd,
                                "descriptor.shape[1]"));
  desc.shape = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_TRUE(testing::is_error(LerpBackwardPlan::select(stream(), desc).status(), StatusCode::invalid_problem, kBwd,
                                "descriptor.shape.rank"));
  desc.shape = {4, 6};
  desc.weight_mode = WeightMode::tensor;
  desc.weight_shape = {5};
  EXPECT_TRUE(testing::is_error(LerpPlan::select(stream(), desc).status(), StatusCode::invalid_problem, kFwd,
                                "descriptor.weight_shape[0]"));
  desc.weight_shape = {1, 4, 6};
  EXPECT_TRUE(testing::is_error(LerpPlan::select(stream(), desc).status(), StatusCode::invalid_problem, kFwd,
                                "descriptor.weight_shape"));
  desc.weight_shape = {6};
  desc.weight_mode = static_cast<WeightMode>(9);
  EXPECT_TRUE(testing::is_error(LerpPlan::select(stream(), desc).status(), StatusCode::invalid_problem, kFwd,
                                "descriptor.weight_mode"));
}

TEST_P(BinaryParamErrors, SelectRejectsBadPreferences) {
  const BinaryParamDescriptor desc{DType::f32, {4, 6}, WeightMode::tensor, 0.5, {6}};
  PlanPreference pref;
  pref.variant = "warp_specialized";
  EXPECT_TRUE(testing::is_error(LerpPlan::select(stream(), desc, pref).status(), StatusCode::unsupported, kFwd,
                                "preference.variant"));
  pref.variant = "strided";  // a broadcast weight's gradient must be reduced
  EXPECT_TRUE(testing::is_error(LerpBackwardPlan::select(stream(), desc, pref).status(), StatusCode::unsupported, kBwd,
                                "preference.variant"));
  pref.variant.clear();
  pref.backend = GetParam() == Backend::cpu ? Backend::cuda : Backend::cpu;
  EXPECT_TRUE(testing::is_error(LerpPlan::select(stream(), desc, pref).status(), StatusCode::invalid_problem, kFwd,
                                "preference.backend"));
}

TEST_P(BinaryParamErrors, RunRejectsBadViewsAndChangesNothing) {
  std::mt19937_64 rng(7);
  const Backend be = GetParam();
  const DType f32 = DType::f32;
  auto make = [&](Shape s) { return unwrap(harness::random_tensor(be, f32, {s, {}, false, 0}, rng)); };
  Tensor a = make({4, 6}), b = make({4, 6}), out = make({4, 6}), w = make({6}), small = make({4, 5});
  const std::vector<double> out_before = out.host;
  const BinaryParamDescriptor desc{f32, {4, 6}, WeightMode::tensor, 0.5, {6}};
  LerpPlan plan = unwrap(LerpPlan::select(stream(), desc));
  auto run = [&](BinaryParamArgs args) { return plan.run(stream(), {}, args); };

  EXPECT_TRUE(testing::is_error(run({a.ref(), small.ref(), w.ref(), out.mut()}), StatusCode::invalid_problem, kFwd,
                                "args.b.shape"));
  AnyTensorRef wrong_dtype = a.ref();
  wrong_dtype.dtype = DType::f64;
  EXPECT_TRUE(testing::is_error(run({wrong_dtype, b.ref(), w.ref(), out.mut()}), StatusCode::invalid_problem, kFwd,
                                "args.a.dtype"));
  AnyTensorRef short_buffer = b.ref();
  short_buffer.capacity = 23;
  const Status s = run({a.ref(), short_buffer, w.ref(), out.mut()});
  EXPECT_TRUE(testing::is_error(s, StatusCode::buffer_too_small, kFwd, "args.b.capacity"));
  EXPECT_EQ(s.needed(), 24);
  EXPECT_EQ(s.got(), 23);
  AnyTensorRef odd = a.ref();
  odd.data = static_cast<const char*>(odd.data) + 2;
  EXPECT_TRUE(
      testing::is_error(run({odd, b.ref(), w.ref(), out.mut()}), StatusCode::misaligned_operand, kFwd, "args.a.data"));
  AnyTensorMut overlapping = out.mut();
  overlapping.strides = {0, 1};
  EXPECT_TRUE(testing::is_error(run({a.ref(), b.ref(), w.ref(), overlapping}), StatusCode::invalid_problem, kFwd,
                                "args.out.strides[0]"));
  AnyTensorRef negative = a.ref();
  negative.strides = {-6, 1};
  EXPECT_TRUE(testing::is_error(run({negative, b.ref(), w.ref(), out.mut()}), StatusCode::invalid_problem, kFwd,
                                "args.a.strides[0]"));
  AnyTensorRef null_data = a.ref();
  null_data.data = nullptr;
  EXPECT_TRUE(testing::is_error(run({null_data, b.ref(), w.ref(), out.mut()}), StatusCode::invalid_problem, kFwd,
                                "args.a.data"));
  EXPECT_TRUE(testing::is_error(run({a.ref(), b.ref(), b.ref(), out.mut()}), StatusCode::invalid_problem, kFwd,
                                "args.weight.shape"));
  const Stream other = GetParam() == Backend::cpu ? Stream::cuda() : Stream::host();
  EXPECT_TRUE(testing::is_error(plan.run(other, {}, {a.ref(), b.ref(), w.ref(), out.mut()}),
                                StatusCode::invalid_problem, kFwd, "stream"));
  ASSERT_OK(out.download());
  EXPECT_EQ(std::memcmp(out.host.data(), out_before.data(), out.host.size() * sizeof(double)), 0)
      << "a rejected run wrote its output";
}

TEST_P(BinaryParamErrors, ForcedVariantsMustFitTheViews) {
  std::mt19937_64 rng(11);
  auto make = [&](Shape s, int64_t offset) {
    return unwrap(harness::random_tensor(GetParam(), DType::f32, {s, {}, false, offset}, rng));
  };
  Tensor a = make({64}, 1), b = make({64}, 0), out = make({64}, 0);
  PlanPreference pref;
  pref.variant = "vectorized";
  const BinaryParamDescriptor desc{DType::f32, {64}, WeightMode::scalar, 0.5, {}};
  auto plan = LerpPlan::select(stream(), desc, pref);
  if (GetParam() == Backend::cpu) {
    EXPECT_TRUE(testing::is_error(plan.status(), StatusCode::unsupported, kFwd, "preference.variant"));
    return;
  }
  ASSERT_TRUE(plan);
  EXPECT_TRUE(testing::is_error(plan->run(stream(), {}, {a.ref(), b.ref(), {}, out.mut()}),
                                StatusCode::misaligned_operand, kFwd, "preference.variant"));
}

TEST_P(BinaryParamErrors, BackwardNeedsItsWorkspace) {
  std::mt19937_64 rng(3);
  auto make = [&](Shape s) { return unwrap(harness::random_tensor(GetParam(), DType::f32, {s, {}, false, 0}, rng)); };
  const BinaryParamDescriptor desc{DType::f32, {4, 5000}, WeightMode::tensor, 0.5, {4, 1}};
  Tensor dout = make(desc.shape), a = make(desc.shape), b = make(desc.shape), w = make(desc.weight_shape);
  Tensor da = make(desc.shape), db = make(desc.shape), dw = make(desc.weight_shape);
  LerpBackwardPlan plan = unwrap(LerpBackwardPlan::select(stream(), desc));
  ASSERT_GT(plan.workspace_size(), 0u);
  harness::Buffer ws = unwrap(harness::Buffer::allocate(GetParam(), plan.workspace_size()));
  const BinaryParamBackwardArgs args{dout.ref(), a.ref(), b.ref(), w.ref(), da.mut(), db.mut(), dw.mut()};
  const Status s = plan.run(stream(), {ws.data(), plan.workspace_size() - 4}, args);
  EXPECT_TRUE(testing::is_error(s, StatusCode::workspace_too_small, kBwd, "workspace.size"));
  EXPECT_EQ(s.needed(), static_cast<int64_t>(plan.workspace_size()));
  EXPECT_TRUE(testing::is_error(plan.run(stream(), {static_cast<char*>(ws.data()) + 4, plan.workspace_size()}, args),
                                StatusCode::misaligned_operand, kBwd, "workspace.data"));
  EXPECT_TRUE(testing::is_error(
      plan.run(stream(), {ws.data(), ws.size()}, {dout.ref(), a.ref(), b.ref(), w.ref(), da.mut(), db.mut(), da.mut()}),
      StatusCode::invalid_problem, kBwd, "args.dweight.shape"));
}

TEST_P(BinaryParamErrors, DefaultConstructedPlanRunsNothing) {
  const LerpPlan plan;
  AnyTensorRef empty = AnyTensorRef::contiguous(nullptr, DType::f32, {0});
  EXPECT_TRUE(
      testing::is_error(plan.run(stream(), {}, {empty, empty, {}, {}}), StatusCode::invalid_problem, kFwd, "plan"));
  EXPECT_TRUE(plan.arg_specs().empty());
}

TEST_P(BinaryParamErrors, EmptyProblemIsANoOp) {
  const BinaryParamDescriptor desc{DType::f32, {0, 5}, WeightMode::scalar, 0.5, {}};
  LerpPlan plan = unwrap(LerpPlan::select(stream(), desc));
  AnyTensorRef empty = AnyTensorRef::contiguous(nullptr, DType::f32, {0, 5});
  AnyTensorMut empty_out = AnyTensorMut::contiguous(nullptr, DType::f32, {0, 5});
  ASSERT_OK(plan.run(stream(), {}, {empty, empty, {}, empty_out}));
}

INSTANTIATE_TEST_SUITE_P(Lerp, BinaryParamErrors, ::testing::Values(Backend::cpu, Backend::cuda),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

}  // namespace
}  // namespace baracuda

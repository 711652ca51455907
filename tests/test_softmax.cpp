// Softmax family: what the op table's random inputs do not reach, on every backend and dtype under
// every variant: PyTorch's edge values (-inf entries, rows of -inf, NaN, +inf, magnitudes of 1e30,
// ties); rows of 2^24 elements; the split kernel's row batches; in-place runs; and which kernel
// select picks on either side of each threshold.
#include <cmath>
#include <limits>

#include "harness/reference/softmax_reference.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::unwrap;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

SoftmaxDescriptor along(DType dtype, Shape shape, int dim, SoftmaxKind kind = SoftmaxKind::softmax) {
  return {dtype, std::nullopt, shape, dim, kind};
}

// The plan's own choice ("") and every variant of the schema the backend has.
std::vector<std::string> variants(Backend backend) {
  std::vector<std::string> names = {""};
  for (const VariantInfo& v : SoftmaxPlan::schema().variants)
    if (v.on(backend)) names.emplace_back(v.name);
  return names;
}

// Every element of `got` against the reference: NaN where it is NaN, exactly where it is 0 or
// infinite (what -inf entries give), else within the dtype's tolerance (relative to the reference's
// scale, as the op table judges it).
::testing::AssertionResult matches(const Tensor& got, const harness::RefOutput& want, DType dtype) {
  const double tol = harness::tolerance(dtype);
  const DType accumulator = dtype == DType::f64 ? DType::f64 : DType::f32;
  for (int64_t i = 0; i < got.shape.numel(); ++i) {
    const double g = got.at(i), w = want.value(i);
    bool ok = std::fabs(g - w) <= tol * (1 + want.verify_scale(i, tol, accumulator));
    if (std::isnan(w)) ok = std::isnan(g);
    if (w == 0 || std::isinf(w)) ok = g == w;
    if (!ok)
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << g << ", want " << w << " (tolerance " << tol << ")";
  }
  return ::testing::AssertionSuccess();
}

class SoftmaxTest : public testing::BackendDTypeTest {
 protected:
  Tensor random(DType dtype, const Shape& shape, double lo = -1.0, double hi = 1.0) {
    return unwrap(harness::random_tensor(backend(), dtype, testing::contiguous(shape), rng_, lo, hi));
  }
  Tensor output(DType dtype, const Shape& shape) {
    Tensor t = random(dtype, shape);
    EXPECT_TRUE(harness::poison(t).is_ok());
    return t;
  }

  // Runs the forward with `variant` on x into y: false (with no failure) when select rejects the
  // variant for this problem.
  bool forward(const SoftmaxDescriptor& d, const std::string& variant, const AnyTensorRef& x, const AnyTensorMut& y) {
    PlanPreference pref;
    pref.variant = variant;
    Expected<SoftmaxPlan> plan = SoftmaxPlan::select(stream(), d, pref);
    if (!plan) {
      EXPECT_NE(plan.status().message().find("preference.variant"), std::string::npos) << plan.status().to_string();
      return false;
    }
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan->workspace_size()));
    const Status s = plan->run(stream(), {ws.data(), ws.size()}, {x, y});
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    return s.is_ok();
  }
  bool backward(const SoftmaxDescriptor& d, const std::string& variant, const AnyTensorRef& y, const AnyTensorRef& dy,
                const AnyTensorMut& dx) {
    PlanPreference pref;
    pref.variant = variant;
    Expected<SoftmaxBackwardPlan> plan = SoftmaxBackwardPlan::select(stream(), d, pref);
    if (!plan) {  // a forced variant that does not hold this row (the backward holds half the forward's)
      EXPECT_NE(plan.status().message().find("preference.variant"), std::string::npos) << plan.status().to_string();
      return false;
    }
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan->workspace_size()));
    const Status s = plan->run(stream(), {ws.data(), ws.size()}, {y, dy, dx});
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    return s.is_ok();
  }

  harness::RefIO forward_reference(const SoftmaxDescriptor& d, const Tensor& x) {
    harness::RefIO io(unwrap(SoftmaxPlan::select(stream(), d)).arg_specs());
    io.inputs[0] = harness::HostView::of(x);
    io.outputs[1] = harness::RefOutput(x.shape.numel(), x.shape.numel());
    reference::softmax_forward(d, io);
    return io;
  }
  harness::RefIO backward_reference(const SoftmaxDescriptor& d, const Tensor& y, const Tensor& dy) {
    harness::RefIO io(unwrap(SoftmaxBackwardPlan::select(stream(), d)).arg_specs());
    io.inputs[0] = harness::HostView::of(y);
    io.inputs[1] = harness::HostView::of(dy);
    io.outputs[2] = harness::RefOutput(y.shape.numel(), y.shape.numel());
    reference::softmax_backward(d, io);
    return io;
  }
};

// Seven rows of `length` along dim (rows along dim 1 of [7, length], or along dim 0 of [length, 7]).
std::vector<std::vector<double>> edge_rows(DType dtype, int64_t length, std::mt19937_64& rng) {
  const double huge = dtype == DType::f16 ? 3e4 : 1e30;  // f16 tops out at 65504
  std::uniform_real_distribution<double> dist(-4, 4);
  std::vector<std::vector<double>> rows(7, std::vector<double>(static_cast<size_t>(length)));
  for (int64_t l = 0; l < length; ++l) {
    const double r = dist(rng);
    rows[0][l] = l % 3 == 1 ? -kInf : r;            // some -inf entries
    rows[1][l] = -kInf;                             // nothing but -inf: NaN
    rows[2][l] = l == length / 2 ? kNaN : r;        // a NaN: NaN
    rows[3][l] = l == (length - 1) / 2 ? kInf : r;  // a +inf: NaN
    rows[4][l] = l < 2 ? huge : l % 2 ? -huge : r;  // huge magnitudes, a tie at the max
    rows[5][l] = 0.25;                              // all equal
    rows[6][l] = l == length - 1 ? 2.0 : -kInf;     // one finite value: exactly 1
  }
  for (auto& row : rows)
    for (double& v : row) v = harness::quantize(dtype, v);
  return rows;
}

TEST_P(SoftmaxTest, EdgeValuesFollowPyTorchUnderEveryVariant) {
  for (int64_t length : {5, 300, 2500}) {
    const std::vector<std::vector<double>> rows = edge_rows(dtype(), length, rng_);
    for (int dim : {1, 0}) {
      const Shape shape = dim == 1 ? Shape{7, length} : Shape{length, 7};
      Tensor x = random(dtype(), shape);
      for (int64_t r = 0; r < 7; ++r)
        for (int64_t l = 0; l < length; ++l) x.host[dim == 1 ? r * length + l : l * 7 + r] = rows[r][l];
      ASSERT_OK(x.upload());
      for (SoftmaxKind kind : {SoftmaxKind::softmax, SoftmaxKind::log_softmax}) {
        const SoftmaxDescriptor d = along(dtype(), shape, dim, kind);
        const harness::RefIO want = forward_reference(d, x);
        for (const std::string& variant : variants(backend())) {
          SCOPED_TRACE("length " + std::to_string(length) + ", dim " + std::to_string(dim) + ", " +
                       (kind == SoftmaxKind::softmax ? "softmax" : "log_softmax") + ", variant " + variant);
          Tensor y = output(dtype(), shape);
          if (!forward(d, variant, x.ref(), y.mut())) continue;
          ASSERT_OK(y.download());
          EXPECT_TRUE(matches(y, want.outputs[1], dtype()));
        }
      }
    }
  }
}

TEST_P(SoftmaxTest, InPlaceUnderEveryVariant) {
  for (const auto& [shape, dim] : {std::pair<Shape, int>{{3, 1000}, 1}, {{100, 8}, 0}, {{40000}, 0}}) {
    for (const std::string& variant : variants(backend())) {
      SCOPED_TRACE(shape.to_string() + " dim " + std::to_string(dim) + ", variant " + variant);
      const SoftmaxDescriptor d = along(dtype(), shape, dim, SoftmaxKind::log_softmax);
      Tensor x = random(dtype(), shape, -4, 4);
      const harness::RefIO want = forward_reference(d, x);
      if (!forward(d, variant, x.ref(), x.mut())) continue;  // y is x
      ASSERT_OK(x.download());
      EXPECT_TRUE(matches(x, want.outputs[1], dtype()));
      Tensor dy = random(dtype(), shape);
      const harness::RefIO grad = backward_reference(d, x, dy);
      if (!backward(d, variant, x.ref(), dy.ref(), dy.mut())) continue;  // dx is dy
      ASSERT_OK(dy.download());
      EXPECT_TRUE(matches(dy, grad.outputs[2], dtype()));
    }
  }
}

// out_dtype f32 (torch.softmax(x, dtype=torch.float32)): y and dy in f32, dx in the input's dtype.
TEST_P(SoftmaxTest, F32OutputsOfAnyInputUnderEveryVariant) {
  for (const auto& [shape, dim] : {std::pair<Shape, int>{{3, 300}, 1}, {{100, 8}, 0}, {{2, 40000}, 1}}) {
    for (SoftmaxKind kind : {SoftmaxKind::softmax, SoftmaxKind::log_softmax}) {
      SoftmaxDescriptor d = along(dtype(), shape, dim, kind);
      d.out_dtype = DType::f32;
      Tensor x = random(dtype(), shape, -8, 8);
      const harness::RefIO want = forward_reference(d, x);
      for (const std::string& variant : variants(backend())) {
        SCOPED_TRACE(shape.to_string() + " dim " + std::to_string(dim) + ", variant " + variant);
        Tensor y = output(DType::f32, shape);
        if (!forward(d, variant, x.ref(), y.mut())) continue;
        ASSERT_OK(y.download());
        EXPECT_TRUE(matches(y, want.outputs[1], DType::f32));
        Tensor dy = random(DType::f32, shape);
        Tensor dx = output(dtype(), shape);
        if (!backward(d, variant, y.ref(), dy.ref(), dx.mut())) continue;
        ASSERT_OK(dx.download());
        EXPECT_TRUE(matches(dx, backward_reference(d, y, dy).outputs[2], dtype()));
      }
    }
  }
}

// The variant select picks, on either side of each threshold of this backend.
TEST_P(SoftmaxTest, SelectPicksTheKernelByShape) {
  const bool f64 = dtype() == DType::f64;
  const int64_t held = f64 ? 16 : 32;  // values one thread holds in the forward (half in the backward)
  auto picked = [&](const Shape& shape, int dim, bool backward_plan) {
    const SoftmaxDescriptor d = along(dtype(), shape, dim);
    const KernelSku sku = backward_plan ? unwrap(SoftmaxBackwardPlan::select(stream(), d)).sku()
                                        : unwrap(SoftmaxPlan::select(stream(), d)).sku();
    return sku.variant.substr(0, sku.variant.find('.'));
  };
  if (backend() == Backend::cpu) {
    EXPECT_EQ(picked({4, 100000}, 1, false), "rows");
    EXPECT_EQ(picked({4, 100000, 1}, 1, false), "rows");  // nothing after dim: innermost
    EXPECT_EQ(picked({4, 100, 3}, 1, true), "outer");
    return;
  }
  const bool clusters = unwrap(SoftmaxPlan::select(stream(), along(dtype(), {2, 3}, 1))).sku().arch >= 90;
  for (bool backward_plan : {false, true}) {
    SCOPED_TRACE(backward_plan ? "backward" : "forward");
    const int64_t h = backward_plan ? held / 2 : held;
    EXPECT_EQ(picked({2, 32 * h}, 1, backward_plan), "warp_row");
    EXPECT_EQ(picked({2, 32 * h + 1}, 1, backward_plan), "block_row");
    EXPECT_EQ(picked({2, 1024 * h}, 1, backward_plan), "block_row");
    EXPECT_EQ(picked({2, 1024 * h + 1}, 1, backward_plan), clusters ? "cluster_row" : "split_row");
    EXPECT_EQ(picked({2, 8192 * h}, 1, backward_plan), clusters ? "cluster_row" : "split_row");
    EXPECT_EQ(picked({2, 8192 * h + 1}, 1, backward_plan), "split_row");
    EXPECT_EQ(picked({32000, 1024}, 0, backward_plan), "outer");
  }
  EXPECT_GT(unwrap(SoftmaxPlan::select(stream(), along(dtype(), {2, 8192 * held + 1}, 1))).workspace_size(), 0u);
  EXPECT_EQ(unwrap(SoftmaxPlan::select(stream(), along(dtype(), {2, 1024 * held}, 1))).workspace_size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Softmax, SoftmaxTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

// Long rows, in f32: 2^24 elements (the CPU's pieces in parallel, CUDA's split_row), and rows in
// several of split_row's batches (kSplitBatchBytes of x each).
class SoftmaxLongRowTest : public SoftmaxTest {};

TEST_P(SoftmaxLongRowTest, RowsOfAnyLength) {
  for (const auto& [shape, variant] :
       {std::pair<Shape, std::string>{{(int64_t{1} << 24) + 3}, ""}, {{40, 131072}, "split_row"}}) {
    for (SoftmaxKind kind : {SoftmaxKind::softmax, SoftmaxKind::log_softmax}) {
      SCOPED_TRACE(shape.to_string() + " " + variant);
      const SoftmaxDescriptor d = along(dtype(), shape, -1, kind);
      Tensor x = random(dtype(), shape, -8, 8);
      Tensor y = output(dtype(), shape);
      if (!forward(d, variant, x.ref(), y.mut())) continue;  // split_row is CUDA's
      ASSERT_OK(y.download());
      EXPECT_TRUE(matches(y, forward_reference(d, x).outputs[1], dtype()));
      Tensor dy = random(dtype(), shape);
      Tensor dx = output(dtype(), shape);
      ASSERT_TRUE(backward(d, variant, y.ref(), dy.ref(), dx.mut()));
      ASSERT_OK(dx.download());
      EXPECT_TRUE(matches(dx, backward_reference(d, y, dy).outputs[2], dtype()));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Softmax, SoftmaxLongRowTest,
                         ::testing::Values(testing::BackendDType{Backend::cpu, DType::f32},
                                           testing::BackendDType{Backend::cuda, DType::f32}),
                         testing::case_name);

}  // namespace
}  // namespace baracuda

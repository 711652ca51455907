// Softmax family: what the op table's random inputs do not reach, on every backend and dtype under
// every variant: PyTorch's edge values (-inf entries, rows of -inf, NaN, +inf, magnitudes of 1e30,
// ties) for every kind, forward and backward; rows of 2^24 elements; split_row's pieces; in-place runs;
// which kernel select picks on either side of each threshold. For sparsemax and entmax15 also: exact results on ties
// and at the threshold, rows adversarial to the threshold search, every extent up to 2^20, rows that sum to 1 with
// exact zeros off the support, strided views along every axis, and their gradients against finite differences of their
// forward.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "harness/reference/softmax_reference.hpp"
#include "support/backend.hpp"
#include "support/matches.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::unwrap;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

constexpr SoftmaxKind kKinds[] = {SoftmaxKind::softmax, SoftmaxKind::log_softmax, SoftmaxKind::sparsemax,
                                  SoftmaxKind::entmax15};
constexpr SoftmaxKind kSparseKinds[] = {SoftmaxKind::sparsemax, SoftmaxKind::entmax15};

SoftmaxDescriptor along(DType dtype, Shape shape, int dim, SoftmaxKind kind = SoftmaxKind::softmax) {
  return {dtype, std::nullopt, shape, dim, kind};
}

std::string name(SoftmaxKind kind) { return std::string(reference::softmax_kind_name(kind)); }

// The plan's own choice ("") and every variant of the schema the backend has.
std::vector<std::string> variants(Backend backend) {
  std::vector<std::string> names = {""};
  for (const VariantInfo& v : SoftmaxPlan::schema().variants)
    if (v.on(backend)) names.emplace_back(v.name);
  return names;
}

// Within the dtype's tolerance (support/matches.hpp; an exact 0 of no scale is what -inf entries
// give, and the sparse kinds' entries clearly off the support).
::testing::AssertionResult matches(const Tensor& got, const harness::RefOutput& want, DType dtype) {
  return baracuda::testing::matches_reference(got, want, harness::tolerance(dtype),
                                              dtype == DType::f64 ? DType::f64 : DType::f32);
}

// What a sparse kind's rows must also be, where the reference's row is a number: summing to 1 within
// the tolerance grown as a random walk over the support (sum(y) = 1 is what the threshold solves for),
// and one output for equal inputs of a row (tied entries are all in or all out, with one value).
::testing::AssertionResult sparse_rows_hold(const SoftmaxDescriptor& d, const Tensor& x, const Tensor& y,
                                            const harness::RefOutput& want, DType dtype) {
  const double tol = harness::tolerance(dtype);
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  bool failed = false;
  reference::for_each_softmax_row(d.shape, d.dim, [&](auto index, int64_t length) {
    if (failed || length == 0 || std::isnan(want.value(index(0)))) return;
    double sum = 0;
    int64_t support = 0;
    std::vector<std::pair<double, int64_t>> by_input;  // (x, the element holding it), sorted: ties adjacent
    for (int64_t l = 0; l < length; ++l) {
      sum += y.at(index(l));
      support += y.at(index(l)) > 0;
      by_input.emplace_back(x.at(index(l)), index(l));
    }
    std::sort(by_input.begin(), by_input.end());
    for (size_t k = 1; k < by_input.size() && !failed; ++k) {
      const auto [a, b] = std::pair(by_input[k - 1], by_input[k]);
      if (a.first != b.first || y.at(a.second) == y.at(b.second)) continue;
      failed = true;
      result = ::testing::AssertionFailure()
               << "elements " << a.second << " and " << b.second << " hold x = " << a.first
               << " but y = " << y.at(a.second) << " and " << y.at(b.second);
    }
    if (!failed && !(std::fabs(sum - 1) <= tol * (1 + std::sqrt(static_cast<double>(support))))) {
      failed = true;
      result = ::testing::AssertionFailure()
               << "the row from element " << index(0) << " sums to " << sum << " over a support of " << support;
    }
  });
  return result;
}

// Sets element `linear` (row-major) of a tensor's host mirror.
void set(Tensor& t, int64_t linear, double value) {
  t.host[static_cast<size_t>(t.offset + t.element_offset(linear))] = harness::quantize(t.dtype, value);
}

class SoftmaxTest : public testing::BackendDTypeTest {
 protected:
  Tensor random(DType dtype, const Shape& shape, double lo = -1.0, double hi = 1.0) {
    return unwrap(harness::random_tensor(backend(), dtype, testing::contiguous(shape), rng_, lo, hi));
  }
  Tensor output(DType dtype, const harness::TensorSpec& spec) {
    Tensor t = unwrap(harness::random_tensor(backend(), dtype, spec, rng_));
    EXPECT_TRUE(harness::poison(t).is_ok());
    return t;
  }
  Tensor output(DType dtype, const Shape& shape) { return output(dtype, testing::contiguous(shape)); }

  // A forced variant that does not hold a row, or does not run a kind (the sparse forward is neither
  // split_row's nor outer's, pass_row runs nothing else), is unsupported; the plan's own choice always
  // selects.
  static void expect_variant_rejected(const std::string& variant, const Status& s) {
    EXPECT_FALSE(variant.empty()) << "the plan's own choice does not select: " << s.to_string();
    EXPECT_EQ(s.code(), StatusCode::unsupported) << s.to_string();
    EXPECT_NE(s.message().find("preference.variant"), std::string::npos) << s.to_string();
  }

  // Runs the forward with `variant` on x into y: false (with no failure) when select rejects the
  // variant for this problem.
  bool forward(const SoftmaxDescriptor& d, const std::string& variant, const AnyTensorRef& x, const AnyTensorMut& y) {
    PlanPreference pref;
    pref.variant = variant;
    Expected<SoftmaxPlan> plan = SoftmaxPlan::select(stream(), d, pref);
    if (!plan) {
      expect_variant_rejected(variant, plan.status());
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
      expect_variant_rejected(variant, plan.status());
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

  // The forward of every variant on x (into y laid out as `y_spec`; contiguous by default) against
  // the reference, the sparse kinds' row checks, and `also` of each variant's y. Returns the plan's
  // own choice's y.
  Tensor forward_under_every_variant(const SoftmaxDescriptor& d, const Tensor& x,
                                     std::optional<harness::TensorSpec> y_spec = std::nullopt,
                                     const std::function<void(const Tensor&)>& also = {}) {
    const harness::RefIO want = forward_reference(d, x);
    Tensor kept;
    for (const std::string& variant : variants(backend())) {
      SCOPED_TRACE(name(d.kind) + " " + d.shape.to_string() + " dim " + std::to_string(d.dim) + ", variant " +
                   (variant.empty() ? "(default)" : variant));
      Tensor y = output(dtype(), y_spec.value_or(testing::contiguous(d.shape)));
      if (!forward(d, variant, x.ref(), y.mut())) continue;
      EXPECT_TRUE(y.download().is_ok());
      EXPECT_TRUE(matches(y, want.outputs[1], dtype()));
      if (reference::is_sparse_kind(d.kind)) {
        EXPECT_TRUE(sparse_rows_hold(d, x, y, want.outputs[1], dtype()));
      }
      if (also) also(y);
      if (variant.empty()) kept = std::move(y);
    }
    return kept;
  }
  // The backward of every variant from y and dy (into dx laid out as `dx_spec`) against the reference.
  void backward_under_every_variant(const SoftmaxDescriptor& d, const Tensor& y, const Tensor& dy,
                                    std::optional<harness::TensorSpec> dx_spec = std::nullopt) {
    const harness::RefIO want = backward_reference(d, y, dy);
    for (const std::string& variant : variants(backend())) {
      SCOPED_TRACE(name(d.kind) + " backward " + d.shape.to_string() + " dim " + std::to_string(d.dim) + ", variant " +
                   (variant.empty() ? "(default)" : variant));
      Tensor dx = output(dtype(), dx_spec.value_or(testing::contiguous(d.shape)));
      if (!backward(d, variant, y.ref(), dy.ref(), dx.mut())) continue;
      EXPECT_TRUE(dx.download().is_ok());
      EXPECT_TRUE(matches(dx, want.outputs[2], dtype()));
    }
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
  for (int64_t length : {5, 300, 2500, 9000}) {  // 9000: pieces of a row, some declining the kept exps
    const std::vector<std::vector<double>> rows = edge_rows(dtype(), length, rng_);
    for (int dim : {1, 0}) {
      const Shape shape = dim == 1 ? Shape{7, length} : Shape{length, 7};
      Tensor x = random(dtype(), shape);
      for (int64_t r = 0; r < 7; ++r)
        for (int64_t l = 0; l < length; ++l) x.host[dim == 1 ? r * length + l : l * 7 + r] = rows[r][l];
      ASSERT_OK(x.upload());
      for (SoftmaxKind kind : kKinds) {
        const SoftmaxDescriptor d = along(dtype(), shape, dim, kind);
        const Tensor y = forward_under_every_variant(d, x);
        if (y.shape.rank == 0) continue;
        backward_under_every_variant(d, y, random(dtype(), shape));  // y's NaN rows give NaN rows
      }
    }
  }
}

TEST_P(SoftmaxTest, InPlaceUnderEveryVariant) {
  for (const auto& [shape, dim] : {std::pair<Shape, int>{{3, 1000}, 1}, {{100, 8}, 0}, {{40000}, 0}}) {
    for (SoftmaxKind kind : {SoftmaxKind::log_softmax, SoftmaxKind::sparsemax, SoftmaxKind::entmax15}) {
      for (const std::string& variant : variants(backend())) {
        SCOPED_TRACE(name(kind) + " " + shape.to_string() + " dim " + std::to_string(dim) + ", variant " + variant);
        const SoftmaxDescriptor d = along(dtype(), shape, dim, kind);
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
}

// out_dtype f32 (torch.softmax(x, dtype=torch.float32)): y and dy in f32, dx in the input's dtype.
TEST_P(SoftmaxTest, F32OutputsOfAnyInputUnderEveryVariant) {
  for (const auto& [shape, dim] : {std::pair<Shape, int>{{3, 300}, 1}, {{100, 8}, 0}, {{2, 40000}, 1}}) {
    for (SoftmaxKind kind : kKinds) {
      SoftmaxDescriptor d = along(dtype(), shape, dim, kind);
      d.out_dtype = DType::f32;
      Tensor x = random(dtype(), shape, -8, 8);
      const harness::RefIO want = forward_reference(d, x);
      for (const std::string& variant : variants(backend())) {
        SCOPED_TRACE(name(kind) + " " + shape.to_string() + " dim " + std::to_string(dim) + ", variant " + variant);
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

// Rows whose sparsemax or entmax15 is exactly known (dyadic values, computed exactly by the closed form
// of any support the kernel may settle on): ties inside the support; ties exactly at the threshold,
// out of the support as the sort-based definition has them (sparsemax [1, 0] is [1, 0]); a dominant
// entry (one-hot); all equal (uniform).
struct KnownRow {
  SoftmaxKind kind;
  std::vector<double> x, y;
};
std::vector<KnownRow> known_rows() {
  constexpr auto kSparsemax = SoftmaxKind::sparsemax, kEntmax15 = SoftmaxKind::entmax15;
  return {
      {kSparsemax, {1, 0}, {1, 0}},
      {kSparsemax, {1, 1, 0.5}, {0.5, 0.5, 0}},
      {kSparsemax, {1, 0, 0}, {1, 0, 0}},  // a tied pair at the threshold: both out
      {kSparsemax, {3, 3, 1, 1}, {0.5, 0.5, 0, 0}},
      {kSparsemax, {-1, 0.5, -1, 0.5, -1}, {0, 0.5, 0, 0.5, 0}},
      {kSparsemax, {1, 0.5, 0.25, 0.125}, {0.75, 0.25, 0, 0}},  // 0.25 at the threshold
      {kSparsemax, {10, 0, 0, 0, 0}, {1, 0, 0, 0, 0}},
      {kSparsemax, {0.25, 0.25, 0.25, 0.25}, {0.25, 0.25, 0.25, 0.25}},
      {kEntmax15, {0, -2}, {1, 0}},  // z = x / 2 = [0, -1]: -1 at the threshold
      {kEntmax15, {4, 0, -1}, {1, 0, 0}},
      {kEntmax15, {1, 1, 1, 1}, {0.25, 0.25, 0.25, 0.25}},
      {kEntmax15, {-3, 1, -3, 1, 1, 1}, {0, 0.25, 0, 0.25, 0.25, 0.25}},  // four tied at the top: tau = -1/2
  };
}

// Each known row alone, and spread over (row 0) or at the end of (row 1) rows of 300, 2500 and 40000
// entries padded with -100 (far below any threshold: exactly 0, and no change to the rest), so that
// every kernel holds it, along the last dim and along dim 0; then the backward from the output, with
// random dy.
TEST_P(SoftmaxTest, SparseKindsAreExactOnTiesAndAtTheThreshold) {
  for (const KnownRow& known : known_rows()) {
    const int64_t n = static_cast<int64_t>(known.x.size());
    for (int64_t length : {n, int64_t{300}, int64_t{2500}, int64_t{40000}}) {
      // Row 0 holds the known row at every (length / n)-th entry, row 1 at its last n entries.
      std::vector<std::vector<double>> x(2, std::vector<double>(static_cast<size_t>(length), -100.0));
      std::vector<std::vector<double>> want(2, std::vector<double>(static_cast<size_t>(length), 0.0));
      for (int64_t k = 0; k < n; ++k) {
        for (int r = 0; r < 2; ++r) {
          const int64_t at = r == 0 ? k * (length / n) : length - n + k;
          x[r][at] = known.x[k];
          want[r][at] = known.y[k];
        }
      }
      for (int dim : {1, 0}) {
        if (dim == 0 && length > 2500) continue;  // long columns: the op table ({20000, 8} along dim 0)
        SCOPED_TRACE(name(known.kind) + " of " + ::testing::PrintToString(known.x) + " in rows of " +
                     std::to_string(length) + " along dim " + std::to_string(dim));
        const Shape shape = dim == 1 ? Shape{2, length} : Shape{length, 2};
        auto linear = [&](int r, int64_t l) { return dim == 1 ? r * length + l : l * 2 + r; };
        Tensor xt = random(dtype(), shape);
        for (int r = 0; r < 2; ++r)
          for (int64_t l = 0; l < length; ++l) set(xt, linear(r, l), x[r][l]);
        ASSERT_OK(xt.upload());
        const SoftmaxDescriptor d = along(dtype(), shape, dim, known.kind);
        const harness::RefIO ref = forward_reference(d, xt);
        for (int r = 0; r < 2; ++r)  // the reference itself gets them exactly
          for (int64_t l = 0; l < length; ++l) ASSERT_EQ(ref.outputs[1].value(linear(r, l)), want[r][l]) << l;
        // Bit for bit: every value is exact in every dtype.
        const Tensor y = forward_under_every_variant(d, xt, std::nullopt, [&](const Tensor& y) {
          int64_t wrong = 0;
          std::string first;
          for (int r = 0; r < 2; ++r) {
            for (int64_t l = 0; l < length; ++l) {
              if (y.at(linear(r, l)) == want[r][l]) continue;
              if (wrong++ == 0)
                first = "row " + std::to_string(r) + " entry " + std::to_string(l) + ": got " +
                        ::testing::PrintToString(y.at(linear(r, l))) + ", want " + std::to_string(want[r][l]);
            }
          }
          EXPECT_EQ(wrong, 0) << first;
        });
        if (y.shape.rank == 0) continue;  // (failed above)
        backward_under_every_variant(d, y, random(dtype(), shape));
      }
    }
  }
}

// Rows that make threshold searches slow or inexact, against the sort-based reference: geometric
// sequences (each of Michelot's steps drops about one entry; in 16-bit types their tails underflow
// into a long tie at the top), ramps of 10^5 entries 1e-7 apart (supports of thousands, entries dense
// at the threshold; in 16-bit types, runs of ties), and magnitudes of 1e30 (the shift by the max must
// come first: unshifted, a threshold near 1e30 cannot tell its support's entries apart).
TEST_P(SoftmaxTest, SparseKindsOnRowsAdversarialToTheThresholdSearch) {
  const double huge = dtype() == DType::f16 ? 3e4 : 1e30;  // f16 tops out at 65504
  std::vector<std::vector<double>> rows = {
      {huge, huge - huge * 1e-6, 0, -huge},
      {huge, huge, huge - huge * 1e-6, -huge},
      {huge, huge * (1 - 0x1p-20), -huge},
  };
  for (int64_t n : {64, 2000}) {
    std::vector<double> down(static_cast<size_t>(n)), up(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      down[i] = -std::ldexp(1.0, static_cast<int>(-i));  // -1, -1/2, -1/4, ...: sorted, the top is the last
      up[i] = std::ldexp(1.0, static_cast<int>(-i)) / 16;
    }
    rows.push_back(down);
    rows.push_back(up);
  }
  std::vector<double> ramp(100000), falling(100000);
  for (size_t i = 0; i < ramp.size(); ++i) {
    ramp[i] = static_cast<double>(i) * 1e-7;
    falling[i] = 1 - static_cast<double>(i) * 1e-7;
  }
  rows.push_back(ramp);
  rows.push_back(falling);
  for (const std::vector<double>& row : rows) {
    const int64_t n = static_cast<int64_t>(row.size());
    Tensor x = random(dtype(), {1, n});
    for (int64_t l = 0; l < n; ++l) set(x, l, row[l]);
    ASSERT_OK(x.upload());
    for (SoftmaxKind kind : kSparseKinds) {
      SCOPED_TRACE(name(kind) + " of a row of " + std::to_string(n) + " from " + std::to_string(row[0]));
      const SoftmaxDescriptor d = along(dtype(), {1, n}, 1, kind);
      const Tensor y = forward_under_every_variant(d, x);
      if (y.shape.rank == 0) continue;
      backward_under_every_variant(d, y, random(dtype(), {1, n}));
    }
  }
}

// Random rows at every extent from 1 to 2^20 (on the CPU, 2^20 in f32 alone: the reference's sort of
// it in every dtype would cost more than the kernels), forward and backward.
TEST_P(SoftmaxTest, SparseKindsAtEveryExtent) {
  for (int64_t n : {1, 2, 3, 255, 256, 1025, 32000, 100003, 1 << 20}) {
    if (n == 1 << 20 && backend() == Backend::cpu && dtype() != DType::f32) continue;
    const Shape shape = n <= 1025 ? Shape{5, n} : Shape{1, n};
    Tensor x = random(dtype(), shape, -2, 2);
    for (SoftmaxKind kind : kSparseKinds) {
      const SoftmaxDescriptor d = along(dtype(), shape, 1, kind);
      const Tensor y = forward_under_every_variant(d, x);
      if (y.shape.rank == 0) continue;
      backward_under_every_variant(d, y, random(dtype(), shape));
    }
  }
}

// Every axis of a rank-4 tensor, through strided views: x padded (or broadcast along one dim), y and dx
// column-major, dy padded.
TEST_P(SoftmaxTest, SparseKindsAlongEveryAxisOfStridedViews) {
  const Shape shape{4, 5, 6, 37};
  const Strides padded{1208, 240, 40, 1};  // rows of 40 for 37, and a gap of 8 between dim-0 blocks
  const Strides broadcast{1208, 0, 40, 1};
  const Strides column_major{1, 4, 20, 120};
  for (int dim : {0, 1, 2, 3}) {
    for (SoftmaxKind kind : kSparseKinds) {
      const SoftmaxDescriptor d = along(dtype(), shape, dim, kind);
      Tensor y;
      for (const Strides& x_strides : {padded, broadcast}) {
        Tensor x =
            unwrap(harness::random_tensor(backend(), dtype(), testing::with_strides(shape, x_strides), rng_, -2, 2));
        y = forward_under_every_variant(d, x, testing::with_strides(shape, column_major));
      }
      if (y.shape.rank == 0) continue;
      Tensor dy = unwrap(harness::random_tensor(backend(), dtype(), testing::with_strides(shape, padded), rng_));
      backward_under_every_variant(d, y, dy, testing::with_strides(shape, column_major));
    }
  }
}

// The sparse kinds' backward against finite differences of their forward, in f64: <dx, v> equals the
// central difference of L = <dy, forward(x)> along v. The maps are smooth (sparsemax: linear) only
// while the support stays put, so entries within 1e-3 (in z) of the threshold are first moved 2e-3
// below it, far beyond the step's reach (1e-5). (The op table's own finite differences see only
// softmax and log_softmax: on its random rows the support moves within the step too often.)
TEST_P(SoftmaxTest, SparseGradientsMatchFiniteDifferencesOfTheForward) {
  if (dtype() != DType::f64) GTEST_SKIP() << "finite differences are f64's";
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (const auto& [shape, dim] :
       {std::pair<Shape, int>{{4, 37}, 1}, {{37, 4}, 0}, {{2, 3000}, 1}, {{1, 40000}, 1}, {{3, 1}, 1}}) {
    for (SoftmaxKind kind : kSparseKinds) {
      SCOPED_TRACE(name(kind) + " " + shape.to_string() + " dim " + std::to_string(dim));
      const SoftmaxDescriptor d = along(dtype(), shape, dim, kind);
      const double shrink = kind == SoftmaxKind::entmax15 ? 0.5 : 1.0, gap = 1e-3;
      Tensor x = random(dtype(), shape);
      reference::for_each_softmax_row(shape, dim, [&](auto index, int64_t length) {
        int64_t top = 0;
        for (int64_t l = 1; l < length; ++l)
          if (x.at(index(l)) > x.at(index(top))) top = l;
        const double max = x.at(index(top));
        for (int moves = 0;; ++moves) {
          ASSERT_LT(moves, 1000) << "the threshold does not settle";
          std::vector<double> z;
          for (int64_t l = 0; l < length; ++l) z.push_back((x.at(index(l)) - max) * shrink);
          const double tau = shrink == 1.0 ? reference::sparsemax_threshold(z) : reference::entmax15_threshold(z);
          ASSERT_GE(-tau, gap) << "the max is near the threshold";
          bool moved = false;
          for (int64_t l = 0; l < length; ++l) {
            if (std::fabs(z[l] - tau) >= gap) continue;
            set(x, index(l), max + (tau - 2 * gap) / shrink);  // off the support, lowering tau: look again
            moved = true;
          }
          if (!moved) break;
        }
      });
      ASSERT_OK(x.upload());
      Tensor y = output(dtype(), shape), dy = random(dtype(), shape);
      ASSERT_TRUE(forward(d, "", x.ref(), y.mut()));
      ASSERT_OK(y.download());
      auto loss = [&](double step, const std::vector<double>& v) {
        Tensor shifted = random(dtype(), shape), out = output(dtype(), shape);
        for (int64_t i = 0, numel = shape.numel(); i < numel; ++i) set(shifted, i, x.at(i) + step * v[i]);
        EXPECT_TRUE(shifted.upload().is_ok());
        EXPECT_TRUE(forward(d, "", shifted.ref(), out.mut()));
        EXPECT_TRUE(out.download().is_ok());
        double l = 0;
        for (int64_t i = 0, numel = shape.numel(); i < numel; ++i) l += dy.at(i) * out.at(i);
        return l;
      };
      std::vector<double> v(static_cast<size_t>(shape.numel()));
      for (double& e : v) e = dist(rng_);
      const double eps = 1e-5, numeric = (loss(eps, v) - loss(-eps, v)) / (2 * eps);
      for (const std::string& variant : variants(backend())) {
        SCOPED_TRACE("variant " + (variant.empty() ? std::string("(default)") : variant));
        Tensor dx = output(dtype(), shape);
        if (!backward(d, variant, y.ref(), dy.ref(), dx.mut())) continue;
        ASSERT_OK(dx.download());
        double analytic = 0, magnitude = 0;
        for (int64_t i = 0, numel = shape.numel(); i < numel; ++i) {
          analytic += v[i] * dx.at(i);
          magnitude += std::fabs(v[i] * dx.at(i));
        }
        EXPECT_NEAR(numeric, analytic, 1e-7 * (1 + magnitude));
      }
    }
  }
}

// The variant select picks, on either side of each threshold of this backend.
TEST_P(SoftmaxTest, SelectPicksTheKernelByShape) {
  const bool f64 = dtype() == DType::f64;
  const int64_t held = f64 ? 16 : 32;  // values one thread holds in the forward (half in the backward)
  auto variant = [](const KernelSku& sku) { return sku.variant.substr(0, sku.variant.find('.')); };
  auto picked = [&](const Shape& shape, int dim, bool backward_plan) {
    const SoftmaxDescriptor d = along(dtype(), shape, dim);
    return variant(backward_plan ? unwrap(SoftmaxBackwardPlan::select(stream(), d)).sku()
                                 : unwrap(SoftmaxPlan::select(stream(), d)).sku());
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
    // The 16-bit forward splits rows that need a cluster of 8 (past 4 blocks of 512 x h).
    const bool narrow = !backward_plan && (dtype() == DType::f16 || dtype() == DType::bf16);
    EXPECT_EQ(picked({2, 2048 * h}, 1, backward_plan), clusters ? "cluster_row" : "split_row");
    EXPECT_EQ(picked({2, 2048 * h + 1}, 1, backward_plan), clusters && !narrow ? "cluster_row" : "split_row");
    EXPECT_EQ(picked({2, 8192 * h}, 1, backward_plan), clusters && !narrow ? "cluster_row" : "split_row");
    EXPECT_EQ(picked({2, 8192 * h + 1}, 1, backward_plan), "split_row");
    if (narrow && clusters) {  // held where the split's workspace is over the limit, or y is f32, or sparsemax
      PlanPreference no_workspace;
      no_workspace.workspace_limit = 0;
      const SoftmaxPlan plan =
          unwrap(SoftmaxPlan::select(stream(), along(dtype(), {2, 2048 * h + 1}, 1), no_workspace));
      EXPECT_EQ(variant(plan.sku()), "cluster_row");
      EXPECT_EQ(plan.workspace_size(), 0u);
      SoftmaxDescriptor f32_out = along(dtype(), {2, 2048 * h + 1}, 1);
      f32_out.out_dtype = DType::f32;
      EXPECT_EQ(variant(unwrap(SoftmaxPlan::select(stream(), f32_out)).sku()), "cluster_row");
      const SoftmaxDescriptor sparse = along(dtype(), {2, 2048 * h + 1}, 1, SoftmaxKind::sparsemax);
      EXPECT_EQ(variant(unwrap(SoftmaxPlan::select(stream(), sparse)).sku()), "cluster_row");
    }
    EXPECT_EQ(picked({32000, 1024}, 0, backward_plan), "outer");
  }
  EXPECT_GT(unwrap(SoftmaxPlan::select(stream(), along(dtype(), {2, 8192 * held + 1}, 1))).workspace_size(), 0u);
  EXPECT_EQ(unwrap(SoftmaxPlan::select(stream(), along(dtype(), {2, 1024 * held}, 1))).workspace_size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Softmax, SoftmaxTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

// Long rows, in f32: 2^24 elements on CUDA (split_row), 2^20 on the CPU (its pieces of 4,096 in
// parallel: 2^24 added nothing there but CI time under the sanitizers), and split_row's
// pieces: one whole and one of one element, a partial last vector, a partial last piece, along
// strides (rows of an odd length after the first start unaligned) and in 16-byte vectors (one row).
class SoftmaxLongRowTest : public SoftmaxTest {};

TEST_P(SoftmaxLongRowTest, RowsOfAnyLength) {
  const int64_t longest = (int64_t{1} << (backend() == Backend::cuda ? 24 : 20)) + 3;
  std::vector<std::pair<Shape, std::string>> cases{
      {{longest}, ""},           {{40, 131072}, "split_row"}, {{3, 4095}, "split_row"}, {{3, 8193}, "split_row"},
      {{2, 70001}, "split_row"}, {{1, 8193}, "split_row"},    {{1, 70001}, "split_row"}};
  for (const auto& [shape, variant] : cases) {
    for (SoftmaxKind kind : {SoftmaxKind::softmax, SoftmaxKind::log_softmax}) {
      SCOPED_TRACE(shape.to_string() + " " + variant);
      const SoftmaxDescriptor d = along(dtype(), shape, -1, kind);
      Tensor x = random(dtype(), shape, -8, 8);
      Tensor y = output(dtype(), shape);
      // (split_row is CUDA's; the CPU takes the same lengths by its default: kept exps, pieces)
      const std::string v = backend() == Backend::cuda ? variant : "";
      ASSERT_TRUE(forward(d, v, x.ref(), y.mut()));
      ASSERT_OK(y.download());
      EXPECT_TRUE(matches(y, forward_reference(d, x).outputs[1], dtype()));
      Tensor dy = random(dtype(), shape);
      Tensor dx = output(dtype(), shape);
      ASSERT_TRUE(backward(d, v, y.ref(), dy.ref(), dx.mut()));
      ASSERT_OK(dx.download());
      EXPECT_TRUE(matches(dx, backward_reference(d, y, dy).outputs[2], dtype()));
    }
  }
}

// split_row's sku names its pieces (split_row.<pieces>x<length>): whole vectors of 8192 to 131072
// elements that cover the row once (a shorter row: one piece), more of them for fewer rows.
TEST_P(SoftmaxLongRowTest, SplitRowPieces) {
  if (backend() != Backend::cuda) GTEST_SKIP() << "split_row is CUDA's";
  PlanPreference pref;
  pref.variant = "split_row";
  auto pieces = [&](const Shape& shape) {
    const std::string sku = unwrap(SoftmaxPlan::select(stream(), along(dtype(), shape, -1), pref)).sku().variant;
    const std::string geometry = sku.substr(sku.find('.') + 1);
    return std::pair{std::stoll(geometry), std::stoll(geometry.substr(geometry.find('x') + 1))};
  };
  for (const Shape& shape : std::vector<Shape>{
           {3, 1}, {3, 8191}, {3, 8193}, {1, int64_t{1} << 20}, {256, 1 << 20}, {1, int64_t{1} << 30}, {4096, 33000}}) {
    SCOPED_TRACE(shape.to_string());
    const int64_t length = shape.dims[1];
    const auto [count, piece] = pieces(shape);
    EXPECT_EQ(piece % 4, 0);
    EXPECT_LE(piece, 131072);
    EXPECT_GE(piece, 8192);
    EXPECT_GE(count * piece, length);
    EXPECT_LT((count - 1) * piece, length);
  }
  EXPECT_EQ(pieces({3, 8193}).first, 2);
  EXPECT_EQ(pieces({1, int64_t{1} << 30}).second, 131072);
  EXPECT_GT(pieces({1, 1 << 20}).first, pieces({256, 1 << 20}).first);
}

INSTANTIATE_TEST_SUITE_P(Softmax, SoftmaxLongRowTest,
                         ::testing::Values(testing::BackendDType{Backend::cpu, DType::f32},
                                           testing::BackendDType{Backend::cpu, DType::bf16},
                                           testing::BackendDType{Backend::cuda, DType::f32}),
                         testing::case_name);

}  // namespace
}  // namespace baracuda

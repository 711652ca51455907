#pragma once
// The fixture a family of plans with a backward shares (reductions, scans): its forward and
// backward run under any variant, both against the family's f64 reference under every variant,
// bit-identical reruns, and every variant's gradient against finite differences of the forward. A
// family names only what differs:
//
//   using ScanTest = testing::PlanTest<ScanPlan, ScanBackwardPlan, reference::scan_forward,
//                                      reference::scan_backward, describe>;
//
// where the references are void(const Descriptor&, harness::RefIO&) and describe is
// std::string(const Descriptor&), for failure messages. The plans' args are {x, out, indices}
// forward and {x, out, indices, dout, dx} backward (out or indices absent where the kind has none).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "harness/op_table.hpp"
#include "support/backend.hpp"
#include "support/matches.hpp"

namespace baracuda::testing {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline std::string variant_label(const std::string& variant) { return variant.empty() ? "(default)" : variant; }

// The variant an SKU names ("rows.cumsum..." -> "rows").
inline std::string variant_of(const KernelSku& sku) { return sku.variant.substr(0, sku.variant.find('.')); }

// The bytes of a tensor's buffer.
inline std::vector<unsigned char> bytes_of(const harness::Tensor& t) {
  std::vector<unsigned char> b(t.buffer.size());
  EXPECT_TRUE(t.buffer.download(b.data(), b.size()).is_ok());
  return b;
}

template <class Plan, class BackwardPlan, auto forward_reference_fn, auto backward_reference_fn, auto describe_fn>
class PlanTest : public BackendDTypeTest {
 protected:
  using Desc = typename Plan::Descriptor;
  using Tensor = harness::Tensor;
  using Views = harness::Views;

  // What a forward run wrote (an empty tensor where the kind has no such output).
  struct Outputs {
    Tensor out, indices;
  };

  static std::string describe(const Desc& d) { return describe_fn(d); }

  // The plan's own choice ("") and every variant of the schema the backend has.
  static std::vector<std::string> variants(Backend backend) {
    std::vector<std::string> names = {""};
    for (const VariantInfo& v : Plan::schema().variants)
      if (v.on(backend)) names.emplace_back(v.name);
    return names;
  }
  static PlanPreference preferring(const std::string& variant) {
    PlanPreference pref;
    pref.variant = variant;
    return pref;
  }
  // variants(), less the forced ones whose forward kernel an earlier one already runs (the default
  // is also one of them); variants select rejects stay, so that the rejection is checked.
  std::vector<std::string> distinct_variants(const Desc& d) const {
    std::vector<std::string> names;
    std::set<std::string> skus;
    for (const std::string& variant : variants(backend())) {
      Expected<Plan> plan = Plan::select(stream(), d, preferring(variant));
      if (!plan || skus.insert(plan->sku().to_string()).second) names.push_back(variant);
    }
    return names;
  }
  // The plan P selects with `variant` forced ("": its own choice); nullopt (with no failure) where
  // the variant does not fit: select says so naming preference.variant. The plan's own choice
  // always selects.
  template <class P>
  std::optional<P> select(const Desc& d, const std::string& variant) const {
    Expected<P> plan = P::select(stream(), d, preferring(variant));
    if (plan) return std::move(*plan);
    EXPECT_FALSE(variant.empty()) << "the plan's own choice does not select: " << plan.status().to_string();
    EXPECT_NE(plan.status().message().find("preference.variant"), std::string::npos) << plan.status().to_string();
    return std::nullopt;
  }

  double tol() const { return harness::tolerance(dtype()); }
  DType accumulator() const {
    if (!is_floating(dtype())) return DType::i64;
    return dtype() == DType::f64 ? DType::f64 : DType::f32;
  }

  // A tensor holding `values` (row-major, rounded to dtype), laid out as the op table lays out an
  // input under `views`.
  Tensor filled(DType dtype, const Shape& shape, const std::vector<double>& values, Views views = Views::contiguous) {
    const ArgSpec spec{"x", false, false, true, dtype, shape};
    Tensor t = unwrap(harness::random_tensor(backend(), dtype, harness::layout(spec, views), rng_));
    for (int64_t i = 0; i < shape.numel(); ++i)
      t.host[static_cast<size_t>(t.offset + t.element_offset(i))] = harness::quantize(dtype, values[i]);
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  }
  Tensor random(DType dtype, const Shape& shape, double lo = -1.0, double hi = 1.0) {
    return unwrap(harness::random_tensor(backend(), dtype, contiguous(shape), rng_, lo, hi));
  }
  // An output buffer poisoned (NaN, an integer sentinel, a bool that is neither) throughout, gaps
  // included, laid out as the op table lays out an output under `views`. (Allocated rather than
  // drawn by random_tensor: reruns take outputs of a million elements, whose random values would
  // only be overwritten.)
  Tensor output(const ArgSpec& spec, Views views = Views::contiguous) {
    const harness::TensorSpec layout = harness::layout(spec, views);
    Tensor t;
    t.dtype = spec.dtype;
    t.shape = spec.shape;
    t.strides = layout.strided ? layout.strides : contiguous_strides(spec.shape);
    t.offset = layout.offset;
    t.capacity = AnyTensorRef{nullptr, t.dtype, t.shape, t.strides, 0}.extent();
    const size_t elements = static_cast<size_t>(t.offset + t.capacity);
    t.buffer = unwrap(harness::Buffer::allocate(backend(), elements * dtype_size(t.dtype)));
    t.host.assign(elements, harness::poison_value(spec.dtype));
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  }
  // x's values (row-major) as a tensor of x's dtype laid out under `views`.
  Tensor relaid(const Tensor& x, Views views) {
    std::vector<double> values(static_cast<size_t>(x.shape.numel()));
    for (int64_t i = 0; i < x.shape.numel(); ++i) values[i] = x.at(i);
    return filled(x.dtype, x.shape, values, views);
  }

  // Runs the forward with `variant` on x, its outputs laid out under `views`: nullopt (with no
  // failure) where select rejects the variant.
  std::optional<Outputs> forward(const Desc& d, const std::string& variant, const Tensor& x,
                                 Views views = Views::contiguous) {
    const std::optional<Plan> plan = select<Plan>(d, variant);
    if (!plan) return std::nullopt;
    const std::vector<ArgSpec> specs = plan->arg_specs();
    Outputs o;
    typename Plan::Args args{x.ref(), {}, {}};
    if (specs[1].present) args.out = (o.out = output(specs[1], views)).mut();
    if (specs[2].present) args.indices = (o.indices = output(specs[2], views)).mut();
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan->workspace_size()));
    const Status s = plan->run(stream(), {ws.data(), ws.size()}, args);
    EXPECT_TRUE(s.is_ok()) << describe(d) << ": " << s.to_string();
    if (!s) return std::nullopt;
    if (specs[1].present) {
      EXPECT_TRUE(o.out.download().is_ok());
    }
    if (specs[2].present) {
      EXPECT_TRUE(o.indices.download().is_ok());
    }
    return o;
  }

  // Runs the backward with `variant` from the forward's views, dx laid out under `views`: nullopt
  // where the variant is rejected.
  std::optional<Tensor> backward(const Desc& d, const std::string& variant, const Tensor& x, const Outputs& saved,
                                 const Tensor& dout, Views views = Views::contiguous) {
    const std::optional<BackwardPlan> plan = select<BackwardPlan>(d, variant);
    if (!plan) return std::nullopt;
    const std::vector<ArgSpec> specs = plan->arg_specs();
    Tensor dx = output(specs[4], views);
    typename BackwardPlan::Args args{specs[0].present ? x.ref() : AnyTensorRef{},
                                     specs[1].present ? saved.out.ref() : AnyTensorRef{},
                                     specs[2].present ? saved.indices.ref() : AnyTensorRef{}, dout.ref(), dx.mut()};
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan->workspace_size()));
    const Status s = plan->run(stream(), {ws.data(), ws.size()}, args);
    EXPECT_TRUE(s.is_ok()) << describe(d) << " backward: " << s.to_string();
    if (!s) return std::nullopt;
    EXPECT_TRUE(dx.download().is_ok());
    return dx;
  }

  harness::RefIO forward_reference(const Desc& d, const Tensor& x) {
    harness::RefIO io(unwrap(Plan::select(stream(), d)).arg_specs());
    io.inputs[0] = harness::HostView::of(x);
    for (int k : {1, 2}) {
      const int64_t n = io.specs[k].shape.numel();
      if (io.specs[k].present) io.outputs[k] = harness::RefOutput(n, n);
    }
    forward_reference_fn(d, io);
    return io;
  }
  harness::RefIO backward_reference(const Desc& d, const Tensor& x, const Outputs& saved, const Tensor& dout) {
    harness::RefIO io(unwrap(BackwardPlan::select(stream(), d)).arg_specs());
    if (io.specs[0].present) io.inputs[0] = harness::HostView::of(x);
    if (io.specs[1].present) io.inputs[1] = harness::HostView::of(saved.out);
    if (io.specs[2].present) io.inputs[2] = harness::HostView::of(saved.indices);
    io.inputs[3] = harness::HostView::of(dout);
    io.outputs[4] = harness::RefOutput(d.shape.numel(), d.shape.numel());
    backward_reference_fn(d, io);
    return io;
  }

  // The forward under every variant against the reference (a floating out judged at `out_tol`;
  // integer and bool outs and the indices exactly); returns the plan's own choice's outputs.
  Outputs forward_under_every_variant(const Desc& d, const Tensor& x, std::optional<double> out_tol = std::nullopt) {
    const harness::RefIO want = forward_reference(d, x);
    Outputs kept;
    for (const std::string& variant : variants(backend())) {
      SCOPED_TRACE(describe(d) + ", variant " + variant_label(variant));
      std::optional<Outputs> o = forward(d, variant, x);
      if (!o) continue;
      if (want.specs[1].present) {
        const double t = is_floating(want.specs[1].dtype) ? out_tol.value_or(tol()) : 0.0;
        EXPECT_TRUE(matches_reference(o->out, want.outputs[1], t, accumulator()));
      }
      if (want.specs[2].present) {
        EXPECT_TRUE(matches_reference(o->indices, want.outputs[2], 0.0, accumulator()));
      }
      if (variant.empty()) kept = std::move(*o);
    }
    return kept;
  }
  // The backward under every variant against the reference (at `dx_tol`); returns the plan's own
  // choice's dx.
  Tensor backward_under_every_variant(const Desc& d, const Tensor& x, const Outputs& saved, const Tensor& dout,
                                      std::optional<double> dx_tol = std::nullopt) {
    const harness::RefIO want = backward_reference(d, x, saved, dout);
    Tensor kept;
    for (const std::string& variant : variants(backend())) {
      SCOPED_TRACE(describe(d) + " backward, variant " + variant_label(variant));
      std::optional<Tensor> dx = backward(d, variant, x, saved, dout);
      if (!dx) continue;
      EXPECT_TRUE(matches_reference(*dx, want.outputs[4], dx_tol.value_or(tol()), accumulator()));
      if (variant.empty()) kept = std::move(*dx);
    }
    return kept;
  }
  // dout for a descriptor's output (random, in the output's dtype).
  Tensor dout_for(const Desc& d) {
    const std::vector<ArgSpec> specs = unwrap(BackwardPlan::select(stream(), d)).arg_specs();
    return random(specs[3].dtype, specs[3].shape);
  }
  // The forward and then the backward under every variant, from the plan's own forward.
  void both_under_every_variant(const Desc& d, const Tensor& x) {
    const Outputs saved = forward_under_every_variant(d, x);
    if (saved.out.shape.rank != d.shape.rank) return;  // the default failed (reported)
    backward_under_every_variant(d, x, saved, dout_for(d));
  }

  // rerun_count() - 1 more runs of the forward with `variant` write the bytes `first` holds. (ASSERTs: call
  // through ASSERT_NO_FATAL_FAILURE.)
  void assert_forward_reruns_identical(const Desc& d, const std::string& variant, const Tensor& x,
                                       const Outputs& first) {
    for (int run = 1; run < rerun_count(); ++run) {
      std::optional<Outputs> again = forward(d, variant, x);
      ASSERT_TRUE(again);
      if (first.out.buffer.size()) {
        ASSERT_EQ(bytes_of(again->out), bytes_of(first.out)) << "run " << run;
      }
      if (first.indices.buffer.size()) {
        ASSERT_EQ(bytes_of(again->indices), bytes_of(first.indices)) << "run " << run;
      }
    }
  }
  // rerun_count() - 1 more runs of the backward with `variant` write the bytes of `first_dx`.
  void assert_backward_reruns_identical(const Desc& d, const std::string& variant, const Tensor& x,
                                        const Outputs& saved, const Tensor& dout, const Tensor& first_dx) {
    const std::vector<unsigned char> bytes = bytes_of(first_dx);
    for (int run = 1; run < rerun_count(); ++run) {
      std::optional<Tensor> again = backward(d, variant, x, saved, dout);
      ASSERT_TRUE(again);
      ASSERT_EQ(bytes_of(*again), bytes) << "backward run " << run;
    }
  }

  // Eight lines of `length`, rounded to dtype: signed values with an exact zero every seventh
  // element; two NaNs (the middle, the last); a +inf; -inf every third element; nothing but -inf;
  // -inf first and +inf last; huge magnitudes (1e30; f16 1e4) at 1 and at the last, -huge at 3;
  // all equal.
  std::vector<std::vector<double>> special_lines(int64_t length) {
    const double huge = dtype() == DType::f16 ? 1e4 : 1e30;
    std::uniform_real_distribution<double> dist(-2, 2);
    std::vector<std::vector<double>> lines(8, std::vector<double>(static_cast<size_t>(length)));
    for (int64_t l = 0; l < length; ++l) {
      const double r = l % 7 == 3 ? 0.0 : dist(rng_);
      lines[0][l] = r;
      lines[1][l] = l == length / 2 || l == length - 1 ? kNaN : r;
      lines[2][l] = l == (length - 1) / 2 ? kInf : r;
      lines[3][l] = l % 3 == 1 ? -kInf : r;
      lines[4][l] = -kInf;
      lines[5][l] = l == 0 ? -kInf : l == length - 1 ? kInf : r;
      lines[6][l] = l == 1 || l == length - 1 ? huge : l == 3 ? -huge : r;
      lines[7][l] = 0.25;
    }
    for (auto& line : lines)
      for (double& v : line) v = harness::quantize(dtype(), v);
    return lines;
  }

  // n values of distinct magnitudes (evenly spaced in [0.5, 1.5], shuffled) and random signs: no
  // two tie and none is near 0 within a finite difference's reach, so the maps of the extremes
  // (which element is the max) and of the norms are smooth there.
  std::vector<double> distinct_magnitudes(int64_t n) {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::vector<double> values(static_cast<size_t>(n));
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng_);
    for (int64_t i = 0; i < n; ++i)
      values[i] = (dist(rng_) < 0 ? -1 : 1) * (0.5 + (static_cast<double>(order[i]) + 0.5) / static_cast<double>(n));
    return values;
  }

  // Every variant's gradient at x (f64) against finite differences of the plan's own forward:
  // <dx, v> equals the central difference of L = <dout, forward(x)> along a random v. Where
  // `nonzero`, dx is also not 0 throughout (such a gradient would pass the difference). (ASSERTs:
  // call through ASSERT_NO_FATAL_FAILURE.)
  void check_gradient_against_finite_differences(const Desc& d, const Tensor& x, bool nonzero = true) {
    SCOPED_TRACE(describe(d));
    const int64_t n = x.shape.numel();
    std::optional<Outputs> saved = forward(d, "", x);
    ASSERT_TRUE(saved);
    const Tensor dout = dout_for(d);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::vector<double> v(static_cast<size_t>(n));
    for (double& e : v) e = dist(rng_);
    auto loss = [&](double step) {
      std::vector<double> shifted(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) shifted[i] = x.at(i) + step * v[i];
      std::optional<Outputs> o = forward(d, "", filled(dtype(), x.shape, shifted));
      EXPECT_TRUE(o);
      double l = 0;
      for (int64_t i = 0; o && i < o->out.shape.numel(); ++i) l += dout.at(i) * o->out.at(i);
      return l;
    };
    const double eps = 1e-6, numeric = (loss(eps) - loss(-eps)) / (2 * eps);
    for (const std::string& variant : variants(backend())) {
      SCOPED_TRACE("variant " + variant_label(variant));
      std::optional<Tensor> dx = backward(d, variant, x, *saved, dout);
      if (!dx) continue;
      double analytic = 0, magnitude = 0;
      for (int64_t i = 0; i < n; ++i) {
        analytic += v[i] * dx->at(i);
        magnitude += std::fabs(v[i] * dx->at(i));
      }
      EXPECT_NEAR(numeric, analytic, 1e-7 * (1 + magnitude));
      if (nonzero) {
        EXPECT_GT(magnitude, 0);
      }
    }
  }
};

}  // namespace baracuda::testing

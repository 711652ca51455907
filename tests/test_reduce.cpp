// Reduction family: what the op table's random inputs (in [0.5, 1.5)) do not reach, on every backend
// and dtype under every variant: signed inputs with exact zeros for every kind and parameter;
// PyTorch's special values (NaN propagating, the first NaN's index, +-inf, logsumexp of -inf rows and
// of +inf, 1e30); ties (the first index; amax's gradient split evenly); prod's exact gradient with one
// and two zeros; var / std with correction 0, 1, fractional and n - correction <= 0; the empty
// reduced set's values; f32 outputs of any input; i32 indices; bit-identical reruns of every kind
// on a long row and on a column reduction; every gradient against finite differences of its forward
// (in f64, on rows whose extremes stand apart); and which kernel select picks.
#include <algorithm>
#include <cmath>

#include "harness/reference/reduce_reference.hpp"
#include "support/plan_test.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::kInf;
using testing::kNaN;
using testing::unwrap;
using testing::variant_label;
using Desc = ReduceDescriptor;

// A kind with its parameters.
struct KindSpec {
  ReduceKind kind;
  double p = 2.0;
  double correction = 1.0;
};

// Every kind, and the parameters that take another path.
std::vector<KindSpec> every_kind() {
  std::vector<KindSpec> kinds;
  for (int k = 0; k <= static_cast<int>(ReduceKind::count_nonzero); ++k) kinds.push_back({static_cast<ReduceKind>(k)});
  for (double p : {1.0, 3.0, 0.5, kInf, -kInf, 0.0}) kinds.push_back({ReduceKind::norm, p});
  kinds.push_back({ReduceKind::var, 2.0, 0.0});
  kinds.push_back({ReduceKind::std, 2.0, 0.0});
  return kinds;
}

Desc reduce(DType dtype, const Shape& shape, ReduceDims dims, const KindSpec& k, bool keepdim = false) {
  Desc d;
  d.dtype = dtype;
  d.shape = shape;
  d.dims = dims;
  d.keepdim = keepdim;
  d.kind = k.kind;
  d.p = k.p;
  d.correction = k.correction;
  return d;
}

std::string describe(const Desc& d) {
  std::string s = std::string(reference::reduce_kind_name(d.kind));
  if (d.kind == ReduceKind::norm) s += " p " + std::to_string(d.p);
  if (d.kind == ReduceKind::var || d.kind == ReduceKind::std) s += " correction " + std::to_string(d.correction);
  s += " of " + d.shape.to_string() + " dims {";
  for (int i = 0; i < d.dims.count; ++i) s += (i ? ", " : "") + std::to_string(d.dims.dims[i]);
  s += "}";
  if (d.keepdim) s += " keepdim";
  if (d.out_dtype) s += " out " + std::string(dtype_name(*d.out_dtype));
  if (reference::reduce_has_indices(d.kind)) s += " indices " + std::string(dtype_name(d.index_dtype));
  return s;
}

using ReduceTest =
    testing::PlanTest<ReducePlan, ReduceBackwardPlan, reference::reduce_forward, reference::reduce_backward, describe>;

// ---------------------------------------------------------------------------------------------
// Signed inputs with exact zeros, every kind and parameter, forward and backward.

// x in [-2, 2) with every seventh element an exact zero (a product's sign, norms of negatives, the
// counts of zeros); products over the rows kept short.
TEST_P(ReduceTest, SignedInputsWithZerosMatchTheReference) {
  struct Case {
    Shape shape;
    ReduceDims dims;
    bool keepdim;
  };
  const Case cases[] = {{{6, 37}, {1}, false}, {{37, 6}, {0}, true},     {{3, 5, 7}, {0, 2}, false},
                        {{4, 9, 5}, {}, true}, {{2, 3001}, {-1}, false}, {{3001, 3}, {0}, false}};
  for (const Case& c : cases) {
    std::uniform_real_distribution<double> dist(-2.0, 2.0);
    std::vector<double> values(static_cast<size_t>(c.shape.numel()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = i % 7 == 3 ? 0.0 : dist(rng_);
    const Tensor x = filled(dtype(), c.shape, values);
    for (const KindSpec& k : every_kind()) {
      const Desc d = reduce(dtype(), c.shape, c.dims, k, c.keepdim);
      const int64_t count = reference::ReduceLayout(d).count();
      if (k.kind == ReduceKind::prod && count > 50) continue;  // |x| averages e^-0.31: longer ones underflow
      if (k.kind == ReduceKind::norm && k.p > 0 && k.p < 1 && count > 200) continue;  // count^(1/p): f16's range
      const Outputs saved = forward_under_every_variant(d, x);
      if (!reference::reduce_differentiable(k.kind)) continue;
      if (k.kind == ReduceKind::norm && k.p > 0 && k.p < 1) continue;  // |x|^(p - 1) at the zeros: inf * 0
      backward_under_every_variant(d, x, saved, dout_for(d));
    }
  }
}

// Sums of long signed rows (the op table's sums stop at 40000 elements of [0.5, 1.5), which f16
// would overflow): CPU pieces, CUDA split_rows and column splits.
TEST_P(ReduceTest, LongSignedSums) {
  for (const auto& [shape, dims] : {std::pair<Shape, ReduceDims>{{2, 300007}, {1}}, {{100003, 3}, {0}}}) {
    const Tensor x = random(dtype(), shape, -1, 1);
    for (ReduceKind kind : {ReduceKind::sum, ReduceKind::mean})
      forward_under_every_variant(reduce(dtype(), shape, dims, {kind}), x);
  }
}

// ---------------------------------------------------------------------------------------------
// Special values.

// Which special rows (the fixture's special_lines) a kind takes: products only of short rows (longer ones underflow in
// f32 before they meet an inf, where f64 does not: 0 x inf); no squares, powers or products of huge magnitudes (they
// overflow f32, as PyTorch's do).
bool takes_row(const KindSpec& k, int row, int64_t length) {
  if (k.kind == ReduceKind::prod) return length <= 5 && row != 6;  // (longer: not run)
  const bool powers = k.kind == ReduceKind::var || k.kind == ReduceKind::std ||
                      (k.kind == ReduceKind::norm && std::isfinite(k.p) && k.p != 0);
  return !(powers && row == 6);
}

// Every kind over the special rows along the last dim ([8, length]) and along dim 0 ([length, 8]);
// rows a kind does not take hold 0.5 throughout. Then the backward of rows 0, 3 and 7 (finite, with
// -inf entries, tied).
TEST_P(ReduceTest, SpecialValuesFollowPyTorch) {
  for (int64_t length : {5, 300, 9000}) {
    const std::vector<std::vector<double>> rows = special_lines(length);
    for (int dim : {1, 0}) {
      const Shape shape = dim == 1 ? Shape{8, length} : Shape{length, 8};
      auto at = [&](int64_t r, int64_t l) { return dim == 1 ? r * length + l : l * 8 + r; };
      for (const KindSpec& k : every_kind()) {
        if (k.kind == ReduceKind::prod && length > 5) continue;
        if (k.kind == ReduceKind::norm && k.p > 0 && k.p < 1 && length > 200) continue;  // count^(1/p): f16's range
        std::vector<double> values(static_cast<size_t>(8 * length));
        for (int r = 0; r < 8; ++r)
          for (int64_t l = 0; l < length; ++l) values[at(r, l)] = takes_row(k, r, length) ? rows[r][l] : 0.5;
        const Tensor x = filled(dtype(), shape, values);
        const Desc d = reduce(dtype(), shape, {dim}, k);
        forward_under_every_variant(d, x);
        if (!reference::reduce_differentiable(k.kind)) continue;
        const Shape three = dim == 1 ? Shape{3, length} : Shape{length, 3};
        std::vector<double> some(static_cast<size_t>(3 * length));
        // (var and std take row 0 again for row 3: the mean of a row with -inf is -inf to PyTorch and
        // NaN to Welford's update, and either way the gradient is not a number PyTorch's is.)
        const bool moments = k.kind == ReduceKind::var || k.kind == ReduceKind::std;
        const int picked[] = {0, moments ? 0 : 3, 7};
        for (int r = 0; r < 3; ++r)
          for (int64_t l = 0; l < length; ++l) some[dim == 1 ? r * length + l : l * 3 + r] = rows[picked[r]][l];
        const Tensor x3 = filled(dtype(), three, some);
        const Desc d3 = reduce(dtype(), three, {dim}, k);
        const Outputs saved = forward_under_every_variant(d3, x3);
        if (k.kind == ReduceKind::norm && k.p > 0 && k.p < 1) continue;  // the zeros' |x|^(p - 1)
        backward_under_every_variant(d3, x3, saved, dout_for(d3));
      }
    }
  }
}

// The facts the header states, checked by value (not through the reference): on rows of 5, 300 and
// 9000 elements along the last dim and along dim 0.
TEST_P(ReduceTest, SpecialValuesByValue) {
  const double huge = dtype() == DType::f16 ? 1e4 : 1e30;
  for (int64_t length : {5, 300, 9000}) {
    for (int dim : {1, 0}) {
      SCOPED_TRACE("rows of " + std::to_string(length) + " along dim " + std::to_string(dim));
      const Shape shape = dim == 1 ? Shape{4, length} : Shape{length, 4};
      auto at = [&](int64_t r, int64_t l) { return dim == 1 ? r * length + l : l * 4 + r; };
      // Row 0: a NaN at 2 and at the last; row 1: a +inf at 1, -inf at 0; row 2: nothing but -inf;
      // row 3: huge at 0 and at the last, the rest -huge.
      std::vector<double> v(static_cast<size_t>(4 * length));
      for (int64_t l = 0; l < length; ++l) {
        v[at(0, l)] = l == 2 || l == length - 1 ? kNaN : 1.0;
        v[at(1, l)] = l == 1 ? kInf : l == 0 ? -kInf : 0.5;
        v[at(2, l)] = -kInf;
        v[at(3, l)] = l == 0 || l == length - 1 ? huge : -huge;
      }
      const Tensor x = filled(dtype(), shape, v);
      for (const std::string& variant : variants(backend())) {
        SCOPED_TRACE("variant " + variant_label(variant));
        auto run = [&](ReduceKind kind) {
          std::optional<Outputs> o = forward(reduce(dtype(), shape, {dim}, {kind}), variant, x);
          return o ? std::move(*o) : Outputs{};
        };
        const Outputs sum = run(ReduceKind::sum), amax = run(ReduceKind::amax), max = run(ReduceKind::max);
        const Outputs argmax = run(ReduceKind::argmax), lse = run(ReduceKind::logsumexp),
                      argmin = run(ReduceKind::argmin);
        if (sum.out.shape.rank == 0) continue;  // a forced variant that does not fit
        EXPECT_TRUE(std::isnan(sum.out.at(0)) && std::isnan(amax.out.at(0)) && std::isnan(max.out.at(0)));
        EXPECT_EQ(max.indices.at(0), 2);  // the first NaN
        EXPECT_EQ(argmax.indices.at(0), 2);
        EXPECT_EQ(argmin.indices.at(0), 2);  // NaN is the extreme either way
        EXPECT_TRUE(std::isnan(lse.out.at(0)));
        EXPECT_TRUE(std::isnan(sum.out.at(1)));  // inf - inf
        EXPECT_EQ(amax.out.at(1), kInf);
        EXPECT_EQ(argmax.indices.at(1), 1);
        EXPECT_EQ(argmin.indices.at(1), 0);
        EXPECT_EQ(lse.out.at(1), kInf);   // a row with +inf
        EXPECT_EQ(lse.out.at(2), -kInf);  // nothing but -inf
        EXPECT_EQ(amax.out.at(2), -kInf);
        EXPECT_EQ(argmax.indices.at(2), 0);  // all tied
        // 1e30 twice: log(2 e^1e30) = 1e30 + log 2, which rounds to 1e30 (in f16: 1e4 + 0.69 to 1e4).
        EXPECT_EQ(lse.out.at(3), harness::quantize(dtype(), huge));
        EXPECT_EQ(argmax.indices.at(3), 0);
        EXPECT_EQ(argmin.indices.at(3), 1);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Ties.

// Rows with their extreme at several places (the first of them at `first`, some past a CPU piece of
// 8192 and CUDA's splits), along the last dim and along dim 0: max / argmax / min / argmin give the
// first index; amax's and amin's gradient is dout / ties at each tie; norm's +-inf likewise with
// the sign of x; max's and min's gradient goes to the index alone.
TEST_P(ReduceTest, TiesGiveTheFirstIndexAndSplitTheGradient) {
  for (int64_t length : {6, 300, 20000}) {
    for (int dim : {1, 0}) {
      SCOPED_TRACE("rows of " + std::to_string(length) + " along dim " + std::to_string(dim));
      const Shape shape = dim == 1 ? Shape{2, length} : Shape{length, 2};
      auto at = [&](int64_t r, int64_t l) { return dim == 1 ? r * length + l : l * 2 + r; };
      // Row 0: 0.5 at most places, 3 at three (max), -3 at two (min; |x| ties 5 times with the 3s).
      // Row 1: all equal.
      const int64_t tops[] = {1, length / 2, length - 1}, bottoms[] = {2, length - 2};
      std::vector<double> v(static_cast<size_t>(2 * length), 0.5);
      for (int64_t l = 0; l < length; ++l) v[at(1, l)] = -1.25;
      for (int64_t l : tops) v[at(0, l)] = 3;
      for (int64_t l : bottoms) v[at(0, l)] = -3;
      const Tensor x = filled(dtype(), shape, v);
      for (const std::string& variant : variants(backend())) {
        SCOPED_TRACE("variant " + variant_label(variant));
        for (ReduceKind kind : {ReduceKind::max, ReduceKind::argmax, ReduceKind::min, ReduceKind::argmin}) {
          std::optional<Outputs> o = forward(reduce(dtype(), shape, {dim}, {kind}), variant, x);
          if (!o) continue;
          const bool max = kind == ReduceKind::max || kind == ReduceKind::argmax;
          EXPECT_EQ(o->indices.at(0), max ? 1 : 2) << reference::reduce_kind_name(kind);
          EXPECT_EQ(o->indices.at(1), 0) << reference::reduce_kind_name(kind);
          if (kind == ReduceKind::max || kind == ReduceKind::min) {
            EXPECT_EQ(o->out.at(0), max ? 3 : -3);
            EXPECT_EQ(o->out.at(1), -1.25);
          }
        }
        // The gradients, dout = 1 and 0.75.
        for (const KindSpec& k :
             {KindSpec{ReduceKind::amax}, KindSpec{ReduceKind::amin}, KindSpec{ReduceKind::norm, kInf},
              KindSpec{ReduceKind::max}, KindSpec{ReduceKind::min}}) {
          const Desc d = reduce(dtype(), shape, {dim}, k);
          SCOPED_TRACE(describe(d));
          std::optional<Outputs> saved = forward(d, variant, x);
          if (!saved) continue;
          const Tensor dout = filled(dtype(), {2}, {1.0, 0.75});
          std::optional<Tensor> dx = backward(d, variant, x, *saved, dout);
          if (!dx) continue;
          for (int64_t l = 0; l < length; ++l) {
            const double x0 = v[at(0, l)];
            double want0 = 0, want1 = 0;
            switch (k.kind) {
              case ReduceKind::amax:
                want0 = x0 == 3 ? 1.0 / 3 : 0;
                want1 = 0.75 / static_cast<double>(length);
                break;
              case ReduceKind::amin:
                want0 = x0 == -3 ? 1.0 / 2 : 0;
                want1 = 0.75 / static_cast<double>(length);
                break;
              case ReduceKind::norm:  // |x| = 3 five times; the sign of x
                want0 = std::fabs(x0) == 3 ? (x0 > 0 ? 1.0 : -1.0) / 5 : 0;
                want1 = -0.75 / static_cast<double>(length);
                break;
              default:  // max, min: the first index alone
                want0 = l == (k.kind == ReduceKind::max ? 1 : 2) ? 1.0 : 0;
                want1 = l == 0 ? 0.75 : 0;
                break;
            }
            ASSERT_NEAR(dx->at(at(0, l)), want0, tol() * 4) << "row 0 element " << l;
            ASSERT_NEAR(dx->at(at(1, l)), want1, tol() * 4) << "row 1 element " << l;
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// prod's gradient with zeros, by value: none (prod / x), one (only it: the others' product), two
// (nothing).
TEST_P(ReduceTest, ProdGradientIsExactWithZeros) {
  const std::vector<std::vector<double>> rows = {{2, -3, 0.5, 4, 1.5}, {2, 0, 0.5, 4, -1.5}, {0, -3, 0.5, 0, 1.5}};
  const std::vector<std::vector<double>> want = {{-9, 6, -36, -4.5, -12}, {0, -6, 0, 0, 0}, {0, 0, 0, 0, 0}};
  const std::vector<double> prods = {-18, 0, 0};
  for (int dim : {1, 0}) {
    const Shape shape = dim == 1 ? Shape{3, 5} : Shape{5, 3};
    std::vector<double> v(15);
    for (int r = 0; r < 3; ++r)
      for (int l = 0; l < 5; ++l) v[dim == 1 ? r * 5 + l : l * 3 + r] = rows[r][l];
    const Tensor x = filled(dtype(), shape, v);
    const Desc d = reduce(dtype(), shape, {dim}, {ReduceKind::prod});
    const Tensor dout = filled(dtype(), {3}, {1.0, 1.0, 1.0});
    for (const std::string& variant : variants(backend())) {
      SCOPED_TRACE("dim " + std::to_string(dim) + ", variant " + variant_label(variant));
      std::optional<Outputs> saved = forward(d, variant, x);
      if (!saved) continue;
      for (int r = 0; r < 3; ++r) EXPECT_EQ(saved->out.at(r), prods[r]) << "row " << r;
      std::optional<Tensor> dx = backward(d, variant, x, *saved, dout);
      if (!dx) continue;
      for (int r = 0; r < 3; ++r)
        for (int l = 0; l < 5; ++l)
          EXPECT_EQ(dx->at(dim == 1 ? r * 5 + l : l * 3 + r), want[r][l]) << "row " << r << " element " << l;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// amax / amin of a set whose extreme is a zero held with both signs: +0 for amax, -0 for amin, in
// every variant and geometry (rows and columns, one element of the other sign at every place).
TEST_P(ReduceTest, ZeroExtremesHaveOneSign) {
  if (dtype() != DType::f32 && dtype() != DType::f64 && dtype() != DType::f16 && dtype() != DType::bf16)
    GTEST_SKIP() << "integers have one zero";
  for (int64_t length : {5, 300, 70001}) {
    for (int dim : {1, 0}) {
      const Shape shape = dim == 1 ? Shape{3, length} : Shape{length, 3};
      // Line r: zeros of one sign but one of the other at place (r * length) / 3 (r = 0: the first),
      // and a -1 (a smaller value, amax must pass over it; amin takes it on line 2 only).
      std::vector<double> v(static_cast<size_t>(3 * length));
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t l = 0; l < length; ++l) {
          const bool odd = l == r * length / 3;
          double value = (r == 1) != odd ? 0.0 : -0.0;
          if (l == length - 1 && r == 2) value = -1;
          v[static_cast<size_t>(dim == 1 ? r * length + l : l * 3 + r)] = value;
        }
      const Tensor x = filled(dtype(), shape, v);
      for (ReduceKind kind : {ReduceKind::amax, ReduceKind::amin}) {
        const Desc d = reduce(dtype(), shape, {dim}, {kind});
        for (const std::string& variant : variants(backend())) {
          SCOPED_TRACE(describe(d) + ", variant " + variant_label(variant));
          std::optional<Outputs> o = forward(d, variant, x);
          if (!o) continue;
          for (int64_t r = 0; r < 3; ++r) {
            const double got = o->out.at(r);
            if (kind == ReduceKind::amin && r == 2) {
              EXPECT_EQ(got, -1) << "line " << r;
            } else {
              EXPECT_EQ(got, 0.0) << "line " << r;
              EXPECT_EQ(std::signbit(got), kind == ReduceKind::amin) << "line " << r;
            }
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// var and std: correction 0, 1, fractional, and n - correction <= 0 (inf, or NaN for 0 / 0).
TEST_P(ReduceTest, VarianceCorrections) {
  // Rows [1, 2, 3, 4] (sum of squared deviations 5) and [2, 2, 2, 2] (0).
  const Tensor x = filled(dtype(), {2, 4}, {1, 2, 3, 4, 2, 2, 2, 2});
  struct Want {
    double correction, var0, var1;
  };
  for (const Want& w : {Want{0, 1.25, 0}, Want{1, 5.0 / 3, 0}, Want{0.5, 5.0 / 3.5, 0}, Want{3, 5, 0},
                        Want{4, kInf, kNaN}, Want{6, kInf, kNaN}, Want{-1, 1, 0}}) {
    for (ReduceKind kind : {ReduceKind::var, ReduceKind::std}) {
      const Desc d = reduce(dtype(), {2, 4}, {1}, {kind, 2.0, w.correction});
      for (const std::string& variant : variants(backend())) {
        SCOPED_TRACE(describe(d) + ", variant " + variant_label(variant));
        std::optional<Outputs> o = forward(d, variant, x);
        if (!o) continue;
        const double want0 = kind == ReduceKind::std ? std::sqrt(w.var0) : w.var0;
        if (std::isinf(want0)) {
          EXPECT_EQ(o->out.at(0), kInf);
        } else {
          EXPECT_NEAR(o->out.at(0), harness::quantize(dtype(), want0), tol() * (1 + want0));
        }
        if (std::isnan(w.var1)) {
          EXPECT_TRUE(std::isnan(o->out.at(1))) << o->out.at(1);
        } else {
          EXPECT_EQ(o->out.at(1), 0.0);
        }
      }
    }
  }
  // One element: correction 1 gives 0 / 0.
  const Tensor one = filled(dtype(), {3, 1}, {1, 2, 3});
  for (ReduceKind kind : {ReduceKind::var, ReduceKind::std}) {
    std::optional<Outputs> o = forward(reduce(dtype(), {3, 1}, {1}, {kind}), "", one);
    ASSERT_TRUE(o);
    for (int r = 0; r < 3; ++r) EXPECT_TRUE(std::isnan(o->out.at(r)));
    o = forward(reduce(dtype(), {3, 1}, {1}, {kind, 2.0, 0.0}), "", one);
    ASSERT_TRUE(o);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(o->out.at(r), 0.0);
  }
}

// ---------------------------------------------------------------------------------------------
// The empty reduced set: sum 0, prod 1, mean / var / std NaN, logsumexp -inf, norm 0, any false,
// all true, count 0; the extremes are refused (the op table's error cases).
TEST_P(ReduceTest, EmptyReducedSets) {
  struct Case {
    Shape shape;
    ReduceDims dims;
    bool keepdim;
  };
  for (const Case& c :
       {Case{{3, 0}, {1}, false}, Case{{0, 4}, {0}, true}, Case{{0}, {}, false}, Case{{2, 0, 3}, {1}, false}}) {
    const Tensor x = random(dtype(), c.shape);
    for (const KindSpec& k : every_kind()) {
      const Desc d = reduce(dtype(), c.shape, c.dims, k, c.keepdim);
      if (reference::reduce_picks_element(k.kind, k.p)) {
        EXPECT_TRUE(testing::is_error(ReducePlan::select(stream(), d).status(), StatusCode::invalid_problem,
                                      "ReducePlan", "descriptor.shape"))
            << describe(d);
        continue;
      }
      double want = 0;
      switch (k.kind) {
        case ReduceKind::prod:
        case ReduceKind::all:
          want = 1;
          break;
        case ReduceKind::mean:
        case ReduceKind::var:
        case ReduceKind::std:
          want = kNaN;
          break;
        case ReduceKind::logsumexp:
          want = -kInf;
          break;
        default:  // sum, norm, any, count_nonzero
          break;
      }
      for (const std::string& variant : variants(backend())) {
        SCOPED_TRACE(describe(d) + ", variant " + variant_label(variant));
        std::optional<Outputs> o = forward(d, variant, x);
        if (!o) continue;
        ASSERT_GT(o->out.shape.numel(), 0);
        for (int64_t i = 0, numel = o->out.shape.numel(); i < numel; ++i) {
          if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(o->out.at(i))) << o->out.at(i);
          } else {
            EXPECT_EQ(o->out.at(i), want);
          }
        }
      }
      // The backward of an empty x writes nothing and succeeds.
      if (!reference::reduce_differentiable(k.kind)) continue;
      Outputs saved;
      saved.out = random(unwrap(ReduceBackwardPlan::select(stream(), d)).arg_specs()[1].dtype,
                         unwrap(ReducePlan::select(stream(), d)).arg_specs()[1].shape);
      EXPECT_TRUE(backward(d, "", x, saved, dout_for(d)).has_value()) << describe(d);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// out_dtype f32 (torch.sum(x, dtype=torch.float32)) from any input: out judged at f32's tolerance
// (the inputs are exact), then the backward from f32 out and dout into x's dtype.
TEST_P(ReduceTest, F32OutputsOfAnyInput) {
  for (const auto& [shape, dims] : {std::pair<Shape, ReduceDims>{{5, 300}, {1}}, {{300, 5}, {0}}, {{2, 70000}, {1}}}) {
    const Tensor x = random(dtype(), shape, -1, 1);
    for (const KindSpec& k : every_kind()) {
      if (!reference::reduce_has_values(k.kind) || k.kind == ReduceKind::any || k.kind == ReduceKind::all ||
          k.kind == ReduceKind::count_nonzero || k.kind == ReduceKind::prod)
        continue;
      Desc d = reduce(dtype(), shape, dims, k);
      d.out_dtype = DType::f32;
      // f32's tolerance where the compute type is f32; an f64 input computes in f64 and rounds once.
      const Outputs saved = forward_under_every_variant(d, x, harness::tolerance(DType::f32));
      if (!reference::reduce_differentiable(k.kind) || (k.kind == ReduceKind::norm && k.p > 0 && k.p < 1)) continue;
      ASSERT_EQ(saved.out.dtype, DType::f32);
      const Tensor dout = random(DType::f32, saved.out.shape);
      const Tensor dx = backward_under_every_variant(d, x, saved, dout);
      EXPECT_EQ(dx.dtype, dtype());
    }
    // prod of short rows.
    const Shape small = dims.dims[0] == 1 ? Shape{5, 20} : Shape{20, 5};
    Desc d = reduce(dtype(), small, dims, {ReduceKind::prod});
    d.out_dtype = DType::f32;
    const Tensor xs = random(dtype(), small, 0.5, 1.5);
    const Outputs saved = forward_under_every_variant(d, xs, harness::tolerance(DType::f32));
    backward_under_every_variant(d, xs, saved, random(DType::f32, saved.out.shape));
  }
}

// i32 indices: the forward's, and the backward of max / min reading them (bad ones, -1 and count,
// name no element: their output's gradient is 0).
TEST_P(ReduceTest, I32Indices) {
  for (const auto& [shape, dims] :
       {std::pair<Shape, ReduceDims>{{7, 300}, {1}}, {{300, 7}, {0}}, {{4, 6, 5}, {0, 2}}}) {
    const Tensor x = random(dtype(), shape, -1, 1);
    for (ReduceKind kind : {ReduceKind::max, ReduceKind::min, ReduceKind::argmax, ReduceKind::argmin}) {
      Desc d = reduce(dtype(), shape, dims, {kind});
      d.index_dtype = DType::i32;
      Outputs saved = forward_under_every_variant(d, x);
      ASSERT_EQ(saved.indices.dtype, DType::i32);
      if (!reference::reduce_differentiable(kind)) continue;
      const int64_t count = reference::ReduceLayout(d).count();
      saved.indices.host[saved.indices.offset] = -1;
      saved.indices.host[saved.indices.offset + 1] = static_cast<double>(count);
      ASSERT_OK(saved.indices.upload());
      const Tensor dx = backward_under_every_variant(d, x, saved, dout_for(d));
      // Every output's gradient sums to its dout but the two with bad indices.
      EXPECT_EQ(std::count_if(dx.host.begin(), dx.host.end(), [](double v) { return v != 0; }),
                reference::ReduceLayout(d).outputs() - 2);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Bit-identical reruns: every kind on a long row and on a column reduction, ten runs of each (three under the
// sanitizers: rerun_count) variant (and of the backward's), the same bytes. On the CPU past its pieces of 8192 and its
// parallel threshold (2^15 elements); on the GPU past what one block takes (split_rows, column
// splits).
TEST_P(ReduceTest, EveryKindIsBitIdenticalOverTenRuns) {
  const bool gpu = backend() == Backend::cuda;
  const Shape row = gpu ? Shape{1, (int64_t{1} << 20) + 3} : Shape{1, 40009};
  const Shape column = gpu ? Shape{100003, 7} : Shape{5003, 7};
  for (const auto& [shape, dims] : {std::pair<Shape, ReduceDims>{row, {1}}, {column, {0}}}) {
    const Tensor signed_x = random(dtype(), shape, -1, 1);
    const Tensor near_one = random(dtype(), shape, 0.99, 1.01);  // products of 2^20 of them: e^(-17 +- 6)
    for (const KindSpec& k : every_kind()) {
      const Desc d = reduce(dtype(), shape, dims, k);
      const Tensor& x = k.kind == ReduceKind::prod ? near_one : signed_x;
      for (const std::string& variant : distinct_variants(d)) {
        SCOPED_TRACE(describe(d) + ", variant " + variant_label(variant));
        std::optional<Outputs> first = forward(d, variant, x);
        if (!first) continue;
        const Tensor& value = first->out.buffer.size() > 0 ? first->out : first->indices;
        EXPECT_FALSE(std::isnan(value.at(0)));
        ASSERT_NO_FATAL_FAILURE(assert_forward_reruns_identical(d, variant, x, *first));
        if (!reference::reduce_differentiable(k.kind)) continue;
        const Tensor dout = dout_for(d);
        std::optional<Tensor> dx = backward(d, variant, x, *first, dout);
        if (!dx) continue;
        ASSERT_NO_FATAL_FAILURE(assert_backward_reruns_identical(d, variant, x, *first, dout, *dx));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Every gradient against finite differences of its forward, in f64, on rows of distinct magnitudes
// (the fixture's check_gradient_against_finite_differences). (The op table's finite differences
// take every kind but the extremes on its random rows.)
TEST_P(ReduceTest, GradientsMatchFiniteDifferencesOfTheForward) {
  if (dtype() != DType::f64) GTEST_SKIP() << "finite differences are f64's";
  struct Case {
    Shape shape;
    ReduceDims dims;
    bool keepdim;
  };
  for (const Case& c : {Case{{4, 37}, {1}, false}, Case{{37, 4}, {0}, true}, Case{{3, 5, 7}, {0, 2}, false},
                        Case{{2, 3000}, {-1}, false}, Case{{6}, {}, true}, Case{{2, 9000}, {1}, false}}) {
    const Tensor x = filled(dtype(), c.shape, distinct_magnitudes(c.shape.numel()));
    std::vector<KindSpec> kinds = every_kind();
    kinds.push_back({ReduceKind::norm, -1.0});
    for (const KindSpec& k : kinds) {
      if (!reference::reduce_differentiable(k.kind)) continue;
      const Desc d = reduce(dtype(), c.shape, c.dims, k, c.keepdim);
      const reference::ReduceLayout layout(d);
      if (k.kind == ReduceKind::prod && layout.count() > 40) continue;  // products of more underflow
      if ((k.kind == ReduceKind::var || k.kind == ReduceKind::std) && layout.count() <= 1) continue;
      const bool nonzero = k.kind != ReduceKind::norm || k.p != 0;  // norm 0 counts: its gradient is 0
      ASSERT_NO_FATAL_FAILURE(check_gradient_against_finite_differences(d, x, nonzero));
    }
  }
  // prod through a zero: the one zero's gradient is the others' product, the rest 0.
  const Tensor z = filled(dtype(), {2, 6}, {0.5, -1.25, 0, 0.75, 1.5, -0.5, 0.5, 0, 1, 0, 2, 3});
  const Desc d = reduce(dtype(), {2, 6}, {1}, {ReduceKind::prod});
  std::optional<Outputs> saved = forward(d, "", z);
  ASSERT_TRUE(saved);
  const Tensor dout = dout_for(d);
  std::optional<Tensor> dx = backward(d, "", z, *saved, dout);
  ASSERT_TRUE(dx);
  for (int64_t i = 0; i < 12; ++i) {
    const double h = 1e-6;
    std::vector<double> plus(12), minus(12);
    for (int64_t j = 0; j < 12; ++j) plus[j] = minus[j] = z.at(j);
    plus[i] += h;
    minus[i] -= h;
    std::optional<Outputs> a = forward(d, "", filled(dtype(), {2, 6}, plus)),
                           b = forward(d, "", filled(dtype(), {2, 6}, minus));
    ASSERT_TRUE(a && b);
    const double numeric = dout.at(i / 6) * (a->out.at(i / 6) - b->out.at(i / 6)) / (2 * h);
    EXPECT_NEAR(dx->at(i), numeric, 1e-8) << "element " << i;
  }
}

// ---------------------------------------------------------------------------------------------
// The variant select picks: the reduced dims innermost (or only size-1 dims after them) run rows,
// others columns; on the GPU one long row is split over blocks.
TEST_P(ReduceTest, SelectPicksTheKernelByShape) {
  auto picked = [&](const Shape& shape, ReduceDims dims, bool backward_plan) {
    const Desc d = reduce(dtype(), shape, dims, {ReduceKind::sum});
    return testing::variant_of(backward_plan ? unwrap(ReduceBackwardPlan::select(stream(), d)).sku()
                                             : unwrap(ReducePlan::select(stream(), d)).sku());
  };
  for (bool backward_plan : {false, true}) {
    SCOPED_TRACE(backward_plan ? "backward" : "forward");
    EXPECT_EQ(picked({8192, 4096}, {1}, backward_plan), "rows");
    EXPECT_EQ(picked({4, 1000, 1}, {1}, backward_plan), "rows");  // nothing after dim but size 1
    EXPECT_EQ(picked({1000, 4}, {0}, backward_plan), "columns");
    EXPECT_EQ(picked({5, 100, 3}, {0, 1}, backward_plan), "columns");
    EXPECT_EQ(picked({5, 100, 3}, {}, backward_plan), "rows");
    if (backend() == Backend::cpu) {
      EXPECT_EQ(picked({1, int64_t{1} << 22}, {1}, backward_plan), "rows");  // pieces in parallel
    } else if (!backward_plan) {
      EXPECT_EQ(picked({1, int64_t{1} << 22}, {1}, backward_plan), "split_rows");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Reduce, ReduceTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

// ---------------------------------------------------------------------------------------------
// Integers (i32, i64) and bools, on both backends under every variant: sums past 2^31 exact in the
// i64 out and wrapped in an i32 one, i64 sums and products that wrap, the extremes of the type's
// range and ties, the empty reduced set, bools; the kinds, out dtypes and backward plans refused.

class ReduceIntegerTest : public ReduceTest {
 protected:
  bool boolean() const { return dtype() == DType::boolean; }
  // The default's value of the first output of x's one row, checked against the reference under
  // every variant.
  double row_value(ReduceKind kind, const std::vector<double>& values, std::optional<DType> out = std::nullopt) {
    Desc d = reduce(dtype(), {1, static_cast<int64_t>(values.size())}, {1}, {kind});
    d.out_dtype = out;
    const Outputs o = forward_under_every_variant(d, filled(dtype(), d.shape, values));
    return (reference::reduce_has_values(kind) ? o.out : o.indices).at(0);
  }
};

TEST_P(ReduceIntegerTest, SumsAndProductsAreExactOrWrap) {
  if (boolean()) GTEST_SKIP() << "bool takes any, all and count_nonzero";
  const bool i32 = dtype() == DType::i32;
  if (i32) {
    const double top = 0x1p31 - 1;  // 3 x (2^31 - 1) = 6442450941; mod 2^32: 2147483645
    EXPECT_EQ(row_value(ReduceKind::sum, {top, top, top}), 6442450941.0);
    EXPECT_EQ(row_value(ReduceKind::sum, {top, top, top}, DType::i32), 2147483645.0);
    EXPECT_EQ(row_value(ReduceKind::prod, {65536, 65536, 3}), 0x1p32 * 3);
    EXPECT_EQ(row_value(ReduceKind::prod, {65536, 65536, 3}, DType::i32), 0.0);
  } else {
    EXPECT_EQ(row_value(ReduceKind::sum, {0x1p62, 0x1p62, 0x1p62}), -0x1p62);  // 3 x 2^62 - 2^64
    EXPECT_EQ(row_value(ReduceKind::prod, {0x1p32, 0x1p31, 3}), -0x1p63);      // 3 x 2^63 - 2^64
  }
  // Long rows and columns of values across the type's range (both backends' pieces and splits).
  const double bound = i32 ? 0x1p31 : 0x1p62;
  for (const auto& [shape, dims] : {std::pair<Shape, ReduceDims>{{2, 70001}, {1}}, {{20001, 3}, {0}}}) {
    const Tensor x = random(dtype(), shape, -bound, bound);
    for (ReduceKind kind : {ReduceKind::sum, ReduceKind::prod}) {
      for (std::optional<DType> out : {std::optional<DType>{}, std::optional<DType>{dtype()}}) {
        Desc d = reduce(dtype(), shape, dims, {kind});
        d.out_dtype = out;
        forward_under_every_variant(d, x);
      }
    }
  }
}

// amax / amin / max / min / argmax / argmin: rows of nothing but the type's lowest (for max) or
// highest (for min) value give it and index 0 (no kernel's identity passes for an element); values
// in [0, 3) tie everywhere: the first index.
TEST_P(ReduceIntegerTest, ExtremesOfTheRangeAndTies) {
  if (boolean()) GTEST_SKIP() << "bool takes any, all and count_nonzero";
  const double lowest = dtype() == DType::i32 ? -0x1p31 : -0x1p63;
  const double highest = dtype() == DType::i32 ? 0x1p31 - 1 : 0x1p62;  // (2^63 - 1 is no double)
  for (int64_t length : {6, 300, 20000}) {
    EXPECT_EQ(row_value(ReduceKind::amax, std::vector<double>(length, lowest)), lowest);
    EXPECT_EQ(row_value(ReduceKind::argmax, std::vector<double>(length, lowest)), 0.0);
    EXPECT_EQ(row_value(ReduceKind::min, std::vector<double>(length, highest)), highest);
    EXPECT_EQ(row_value(ReduceKind::argmin, std::vector<double>(length, highest)), 0.0);
    for (const auto& [shape, dims] : {std::pair<Shape, ReduceDims>{{3, length}, {1}}, {{length, 3}, {0}}}) {
      const Tensor x = random(dtype(), shape, 0, 3);
      for (ReduceKind kind : {ReduceKind::amax, ReduceKind::amin, ReduceKind::max, ReduceKind::min, ReduceKind::argmax,
                              ReduceKind::argmin})
        forward_under_every_variant(reduce(dtype(), shape, dims, {kind}), x);
    }
  }
}

// any, all and count_nonzero of zeros, of ones, of one nonzero element.
TEST_P(ReduceIntegerTest, CountsAnyAndAll) {
  for (int64_t length : {5, 300, 20000}) {
    std::vector<double> zeros(length, 0), ones(length, 1), one = zeros;
    one[length / 2] = 1;
    for (const auto& [values, any, all, count] :
         {std::tuple{zeros, 0.0, 0.0, 0.0}, {ones, 1.0, 1.0, double(length)}, {one, 1.0, 0.0, 1.0}}) {
      EXPECT_EQ(row_value(ReduceKind::any, values), any);
      EXPECT_EQ(row_value(ReduceKind::all, values), all);
      EXPECT_EQ(row_value(ReduceKind::count_nonzero, values), count);
    }
  }
}

// The empty reduced set: sum 0, prod 1, any false, all true, count 0 (the extremes are refused).
TEST_P(ReduceIntegerTest, EmptyReducedSets) {
  const Tensor x = random(dtype(), {3, 0});
  for (ReduceKind kind : {ReduceKind::sum, ReduceKind::prod, ReduceKind::any, ReduceKind::all,
                          ReduceKind::count_nonzero, ReduceKind::amax, ReduceKind::argmin}) {
    const std::vector<DType> takes = reference::reduce_dtypes(kind);
    if (std::find(takes.begin(), takes.end(), dtype()) == takes.end()) continue;
    const Desc d = reduce(dtype(), {3, 0}, {1}, {kind});
    if (reference::reduce_picks_element(kind, 2.0)) {
      EXPECT_TRUE(testing::is_error(ReducePlan::select(stream(), d).status(), StatusCode::invalid_problem, "ReducePlan",
                                    "descriptor.shape"));
      continue;
    }
    const Outputs o = forward_under_every_variant(d, x);
    const double want = kind == ReduceKind::prod || kind == ReduceKind::all ? 1 : 0;
    for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(o.out.at(i), want) << describe(d);
  }
}

// What integers and bools are refused: the kinds PyTorch refuses too, out dtypes other than i64 or
// x's for a sum or product (x's alone for the others), and every backward (no gradient).
TEST_P(ReduceIntegerTest, RefusedKindsOutDtypesAndGradients) {
  using testing::is_error;
  for (const KindSpec& k : every_kind()) {
    const Desc d = reduce(dtype(), {4, 5}, {1}, k);
    SCOPED_TRACE(describe(d));
    const std::vector<DType> takes = reference::reduce_dtypes(k.kind);
    if (std::find(takes.begin(), takes.end(), dtype()) == takes.end()) {
      EXPECT_TRUE(is_error(ReducePlan::select(stream(), d).status(), StatusCode::unsupported, "ReducePlan",
                           "descriptor.dtype"));
      continue;
    }
    const ReducePlan plan = unwrap(ReducePlan::select(stream(), d));
    EXPECT_EQ(plan.precision_guarantee().accumulator, DType::i64);
    EXPECT_TRUE(is_error(ReduceBackwardPlan::select(stream(), d).status(), StatusCode::unsupported,
                         "ReduceBackwardPlan", "descriptor.dtype"));
    if (!reference::reduce_has_values(k.kind)) continue;
    const DType natural = plan.arg_specs()[1].dtype;
    for (DType out : {DType::f32, DType::f16, DType::i32, DType::i64, DType::boolean}) {
      Desc o = d;
      o.out_dtype = out;
      const bool sums = k.kind == ReduceKind::sum || k.kind == ReduceKind::prod;
      if (out == natural || (sums && out == dtype())) {
        EXPECT_TRUE(ReducePlan::select(stream(), o).has_value()) << dtype_name(out);
      } else {
        EXPECT_TRUE(is_error(ReducePlan::select(stream(), o).status(), StatusCode::unsupported, "ReducePlan",
                             "descriptor.out_dtype"))
            << dtype_name(out);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Reduce, ReduceIntegerTest,
                         ::testing::ValuesIn(testing::cases_of({DType::i32, DType::i64, DType::boolean})),
                         testing::case_name);

}  // namespace
}  // namespace baracuda

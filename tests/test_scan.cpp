// Scans: what the op table's random inputs (in [0.5, 1.3)) do not reach, on every backend and dtype
// under every variant: signed inputs with zeros for every kind in both directions; PyTorch's
// special values (NaN propagating, a later NaN taking cummax's index, +-inf, logcumsumexp of 1e30
// and of rows of -inf); ties (the later index; with reverse, the one toward index 0) and their
// gradients; a non-finite dout reaching only the element its index names; cumprod's exact gradient
// through one and two zeros; long signed cumsums; f32 outputs of any input; i32 indices;
// bit-identical reruns, and the same bits under padded and misaligned views; every gradient against
// finite differences of its forward (in f64, cummax / cummin on lines without ties); every error
// path; empty problems and scalars; and which kernel select picks, each variant forced on both
// sides of each backend's pieces.
#include <algorithm>
#include <cmath>

#include "harness/reference/scan_reference.hpp"
#include "support/plan_test.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using harness::Views;
using testing::kInf;
using testing::kNaN;
using testing::unwrap;
using testing::variant_label;
using Desc = ScanDescriptor;

constexpr ScanKind kKinds[] = {ScanKind::cumsum, ScanKind::cumprod, ScanKind::cummax, ScanKind::cummin,
                               ScanKind::logcumsumexp};

Desc scan(DType dtype, const Shape& shape, int dim, ScanKind kind, bool reverse = false) {
  Desc d;
  d.dtype = dtype;
  d.shape = shape;
  d.dim = dim;
  d.kind = kind;
  d.reverse = reverse;
  return d;
}

std::string describe(const Desc& d) {
  std::string s = std::string(reference::scan_kind_name(d.kind)) + (d.reverse ? " reverse" : "") + " of " +
                  d.shape.to_string() + " dim " + std::to_string(d.dim);
  if (d.out_dtype) s += " out " + std::string(dtype_name(*d.out_dtype));
  if (reference::scan_has_indices(d.kind)) s += " indices " + std::string(dtype_name(d.index_dtype));
  return s;
}

using ScanTest =
    testing::PlanTest<ScanPlan, ScanBackwardPlan, reference::scan_forward, reference::scan_backward, describe>;

// The same bits in every element of two views of one shape (decoded values: equal, or both NaN,
// with one sign).
::testing::AssertionResult same_bits(const Tensor& a, const Tensor& b) {
  for (int64_t i = 0, numel = a.shape.numel(); i < numel; ++i) {
    const double x = a.at(i), y = b.at(i);
    if ((x == y || (std::isnan(x) && std::isnan(y))) && std::signbit(x) == std::signbit(y)) continue;
    return ::testing::AssertionFailure() << "element " << i << ": " << x << " and " << y;
  }
  return ::testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------------------------
// Signed inputs, every kind in both directions, forward and backward.

// x = +-[0.5, 1.3) (products, and sums of them, stay in f16's range and do not vanish at once),
// with one exact zero in the middle of line 0 and two in line 1 (a product's zeros, cummin over
// signs): along the last dim, dim 0 and a middle dim, lines of 3001, a scalar.
TEST_P(ScanTest, SignedInputsWithZerosMatchTheReference) {
  const std::pair<Shape, int> cases[] = {{{6, 37}, 1},    {{37, 6}, 0},   {{3, 5, 7}, 1},
                                         {{2, 3001}, -1}, {{3001, 3}, 0}, {Shape{}, 0}};
  std::uniform_real_distribution<double> magnitude(0.5, 1.3);
  for (const auto& [shape, dim] : cases) {
    std::vector<double> values(static_cast<size_t>(shape.numel()));
    for (double& v : values) v = (rng_() % 2 ? -1 : 1) * magnitude(rng_);
    const reference::ScanLayout layout(scan(dtype(), shape, dim, ScanKind::cumsum));
    const int64_t n = layout.n();
    if (layout.lines() >= 2 && n >= 3) {
      values[layout.linear(0, n / 2)] = 0;
      values[layout.linear(1, n / 3)] = values[layout.linear(1, 2 * n / 3)] = 0;
    }
    const Tensor x = filled(dtype(), shape, values);
    for (ScanKind kind : kKinds)
      for (bool reverse : {false, true}) both_under_every_variant(scan(dtype(), shape, dim, kind, reverse), x);
  }
}

// Sums of long signed lines (the op table's cumsums stop at 40000 elements of [0.5, 1.3), which f16
// would overflow): both backends' pieces along rows and columns, and their gradients.
TEST_P(ScanTest, LongSignedCumsums) {
  for (const auto& [shape, dim] : {std::pair<Shape, int>{{2, 300007}, 1}, {{100003, 3}, 0}}) {
    const Tensor x = random(dtype(), shape, -1, 1);
    for (bool reverse : {false, true}) {
      const Desc d = scan(dtype(), shape, dim, ScanKind::cumsum, reverse);
      const Outputs saved = forward_under_every_variant(d, x);
      if (!reverse) backward_under_every_variant(d, x, saved, dout_for(d));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Special values.

// x of `count` lines of `length` along `dim` (1: [count, length]; 0: [length, count]), line r from
// pick(r).
struct Lines {
  Shape shape;
  std::vector<double> values;  // row-major
  int dim = 1;
  int64_t count = 0;
  // The row-major index of element l of line r.
  int64_t at(int64_t r, int64_t l) const { return dim == 1 ? r * shape.dims[1] + l : l * count + r; }
};
template <class Pick>
Lines lines_along(int dim, int count, int64_t length, Pick pick) {
  Lines x{dim == 1 ? Shape{count, length} : Shape{length, count}, std::vector<double>(count * length), dim, count};
  for (int r = 0; r < count; ++r)
    for (int64_t l = 0; l < length; ++l) x.values[x.at(r, l)] = pick(r)[l];
  return x;
}

// Every kind over the special lines along the last dim and along dim 0, both directions (cumprod
// not of the huge line, which overflows f32 where f64 does not; that line holds 0.5 for it). Then
// the backward of the finite line, the lines with -inf and the tied line (cumprod's gradient of
// infinities is NaN in an order-dependent pattern: the finite line twice instead).
TEST_P(ScanTest, SpecialValuesFollowPyTorch) {
  for (int64_t length : {5, 300, 9000}) {
    const std::vector<std::vector<double>> lines = special_lines(length);
    const std::vector<double> halves(static_cast<size_t>(length), 0.5);
    for (int dim : {1, 0}) {
      for (ScanKind kind : kKinds) {
        const Lines all = lines_along(dim, 8, length, [&](int r) -> const std::vector<double>& {
          return kind == ScanKind::cumprod && r == 6 ? halves : lines[r];
        });
        const Tensor x = filled(dtype(), all.shape, all.values);
        const bool product = kind == ScanKind::cumprod;
        const int picked[] = {0, product ? 0 : 3, product ? 7 : 4, 7};
        const Lines four =
            lines_along(dim, 4, length, [&](int r) -> const std::vector<double>& { return lines[picked[r]]; });
        const Tensor x4 = filled(dtype(), four.shape, four.values);
        for (bool reverse : {false, true}) {
          forward_under_every_variant(scan(dtype(), all.shape, dim, kind, reverse), x);
          both_under_every_variant(scan(dtype(), four.shape, dim, kind, reverse), x4);
        }
      }
    }
  }
}

// The facts the header states, checked by value (not through the reference), on lines of 5, 300 and
// 9000 along the last dim and along dim 0, in both directions.
TEST_P(ScanTest, SpecialValuesByValue) {
  const double huge = harness::quantize(dtype(), dtype() == DType::f16 ? 1e4 : 1e30);
  for (int64_t length : {5, 300, 9000}) {
    // Line 0: NaN at 2 and at the last, else 1; line 1: -inf at 0, +inf at 1, else 0.5; line 2:
    // nothing but -inf; line 3: huge at 0 and at the last, else -huge.
    const int64_t last = length - 1;
    std::vector<std::vector<double>> lines(4, std::vector<double>(static_cast<size_t>(length)));
    for (int64_t l = 0; l < length; ++l) {
      lines[0][l] = l == 2 || l == last ? kNaN : 1.0;
      lines[1][l] = l == 0 ? -kInf : l == 1 ? kInf : 0.5;
      lines[2][l] = -kInf;
      lines[3][l] = l == 0 || l == last ? huge : -huge;
    }
    for (int dim : {1, 0}) {
      const Lines x_lines = lines_along(dim, 4, length, [&](int r) -> const std::vector<double>& { return lines[r]; });
      const Shape& shape = x_lines.shape;
      auto at = [&](int64_t r, int64_t l) { return x_lines.at(r, l); };
      const Tensor x = filled(dtype(), shape, x_lines.values);
      for (bool reverse : {false, true}) {
        for (const std::string& variant : variants(backend())) {
          SCOPED_TRACE("lines of " + std::to_string(length) + " along dim " + std::to_string(dim) +
                       (reverse ? " reverse" : "") + ", variant " + variant_label(variant));
          auto run = [&](ScanKind kind) {
            std::optional<Outputs> o = forward(scan(dtype(), shape, dim, kind, reverse), variant, x);
            return o ? std::move(*o) : Outputs{};
          };
          const Outputs sum = run(ScanKind::cumsum), max = run(ScanKind::cummax), min = run(ScanKind::cummin),
                        lse = run(ScanKind::logcumsumexp);
          if (sum.out.shape.rank == 0) continue;  // a forced variant that does not fit
          for (int64_t l = 0; l < length; ++l) {
            SCOPED_TRACE("element " + std::to_string(l));
            // Line 0: NaN from the first NaN in the scan's order on; the latest NaN takes the
            // index.
            const bool nan = reverse ? true : l >= 2;
            EXPECT_EQ(std::isnan(sum.out.at(at(0, l))), nan);
            EXPECT_EQ(std::isnan(lse.out.at(at(0, l))), nan);
            EXPECT_EQ(std::isnan(max.out.at(at(0, l))), nan);
            const int64_t nan_index = reverse ? (l <= 2 ? 2 : last) : (l == last ? last : 2);
            const int64_t index0 = nan ? nan_index : l;  // 1 and 1 tie: the later
            EXPECT_EQ(max.indices.at(at(0, l)), index0);
            EXPECT_EQ(min.indices.at(at(0, l)), index0);
            if (!reverse && l == 1) {
              EXPECT_EQ(sum.out.at(at(0, l)), 2);
            }
            // Line 1: -inf, +inf, then 0.5s. Forward: the +inf takes cummax and logcumsumexp, the
            // -inf cummin, and cumsum is NaN from the +inf on. Reverse: the 0.5s tie (each its own
            // index) until the +inf comes; the -inf then takes cummin and makes cumsum NaN.
            if (!reverse) {
              if (l == 0) {
                EXPECT_EQ(sum.out.at(at(1, l)), -kInf);
              } else {
                EXPECT_TRUE(std::isnan(sum.out.at(at(1, l))));  // -inf + inf
              }
              EXPECT_EQ(lse.out.at(at(1, l)), l == 0 ? -kInf : kInf);
              EXPECT_EQ(max.out.at(at(1, l)), l == 0 ? -kInf : kInf);
              EXPECT_EQ(max.indices.at(at(1, l)), l == 0 ? 0 : 1);
              EXPECT_EQ(min.out.at(at(1, l)), -kInf);
              EXPECT_EQ(min.indices.at(at(1, l)), 0);
            } else {
              const double halves = 0.5 * static_cast<double>(length - l);
              if (l >= 2) {
                EXPECT_NEAR(sum.out.at(at(1, l)), halves, tol() * (1 + halves));
                EXPECT_NEAR(lse.out.at(at(1, l)), 0.5 + std::log(static_cast<double>(length - l)),
                            tol() * (1 + std::log(static_cast<double>(length))));
              } else {
                EXPECT_EQ(lse.out.at(at(1, l)), kInf);
                EXPECT_TRUE(l == 1 ? sum.out.at(at(1, l)) == kInf : std::isnan(sum.out.at(at(1, l))));
              }
              EXPECT_EQ(max.out.at(at(1, l)), l <= 1 ? kInf : 0.5);
              EXPECT_EQ(max.indices.at(at(1, l)), l <= 1 ? 1 : l);
              EXPECT_EQ(min.out.at(at(1, l)), l == 0 ? -kInf : 0.5);
              EXPECT_EQ(min.indices.at(at(1, l)), l == 1 ? 2 : l);
            }
            // Line 2: nothing but -inf: logcumsumexp -inf, every element ties (each its own index).
            EXPECT_EQ(lse.out.at(at(2, l)), -kInf);
            EXPECT_EQ(sum.out.at(at(2, l)), -kInf);
            EXPECT_EQ(max.out.at(at(2, l)), -kInf);
            EXPECT_EQ(max.indices.at(at(2, l)), l);
            EXPECT_EQ(min.indices.at(at(2, l)), l);
            // Line 3: huge at both ends, -huge between. logcumsumexp without overflow (huge + log 2
            // rounds to huge); cummax stays at the first huge until the other ties; cummin ties
            // along the -huge and keeps the last of them past it.
            const int64_t first = reverse ? last : 0, other = reverse ? 0 : last;
            const int64_t before_other = reverse ? 1 : last - 1;
            EXPECT_EQ(lse.out.at(at(3, l)), huge);
            EXPECT_EQ(max.out.at(at(3, l)), huge);
            EXPECT_EQ(max.indices.at(at(3, l)), l == other ? other : first);
            EXPECT_EQ(min.out.at(at(3, l)), l == first ? huge : -huge);
            EXPECT_EQ(min.indices.at(at(3, l)), l == other ? before_other : l);
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Ties.

// Lines with their extreme at several places (some past CUDA's tiles and pieces), along the last
// dim and along dim 0, both directions: the later element in the scan's order takes the index (the
// larger index; with reverse the smaller), and the gradient of each element is the dout of the
// elements whose index it is.
TEST_P(ScanTest, TiesGiveTheLaterIndex) {
  for (int64_t length : {6, 300, 20000}) {
    // Line 0: 0.5 at most places, 3 at three (max), -3 at two (min); line 1: all equal.
    const int64_t last = length - 1;
    const std::vector<int64_t> tops = {1, length / 2, last}, bottoms = {2, length - 2};
    std::vector<std::vector<double>> lines(2, std::vector<double>(static_cast<size_t>(length), 0.5));
    std::fill(lines[1].begin(), lines[1].end(), -1.25);
    for (int64_t l : tops) lines[0][l] = 3;
    for (int64_t l : bottoms) lines[0][l] = -3;
    // The indices by the rule: the extreme's latest place in the scan's order so far.
    auto indices_of = [&](const std::vector<double>& line, bool max, bool reverse) {
      std::vector<int64_t> indices(static_cast<size_t>(length));
      int64_t best = -1;
      for (int64_t t = 0; t < length; ++t) {
        const int64_t e = reverse ? last - t : t;
        if (best < 0 || (max ? line[e] >= line[best] : line[e] <= line[best])) best = e;
        indices[e] = best;
      }
      return indices;
    };
    for (int dim : {1, 0}) {
      const Lines x_lines = lines_along(dim, 2, length, [&](int r) -> const std::vector<double>& { return lines[r]; });
      const Shape& shape = x_lines.shape;
      auto at = [&](int64_t r, int64_t l) { return x_lines.at(r, l); };
      const Tensor x = filled(dtype(), shape, x_lines.values);
      const Tensor dout = filled(dtype(), shape, std::vector<double>(x_lines.values.size(), 1.0));
      for (bool reverse : {false, true}) {
        for (ScanKind kind : {ScanKind::cummax, ScanKind::cummin}) {
          const Desc d = scan(dtype(), shape, dim, kind, reverse);
          const bool max = kind == ScanKind::cummax;
          const std::vector<std::vector<int64_t>> want = {indices_of(lines[0], max, reverse),
                                                          indices_of(lines[1], max, reverse)};
          std::vector<std::vector<double>> grad(2, std::vector<double>(static_cast<size_t>(length), 0.0));
          for (int r = 0; r < 2; ++r)
            for (int64_t l = 0; l < length; ++l) grad[r][want[r][l]] += 1;  // dout = 1
          for (const std::string& variant : variants(backend())) {
            SCOPED_TRACE(describe(d) + ", variant " + variant_label(variant));
            std::optional<Outputs> o = forward(d, variant, x);
            if (!o) continue;
            std::optional<Tensor> dx = backward(d, variant, x, *o, dout);
            if (!dx) continue;
            for (int r = 0; r < 2; ++r) {
              for (int64_t l = 0; l < length; ++l) {
                ASSERT_EQ(o->indices.at(at(r, l)), want[r][l]) << "line " << r << " element " << l;
                ASSERT_EQ(o->out.at(at(r, l)), lines[r][want[r][l]]) << "line " << r << " element " << l;
                ASSERT_NEAR(dx->at(at(r, l)), grad[r][l], tol() * (1 + grad[r][l])) << "line " << r << " element " << l;
              }
            }
          }
        }
      }
    }
  }
}

// A non-finite dout reaches only the element its index names (torch.cummax's backward adds dout
// into dx at the indices): an inf and a NaN in one line, on lines of 5, 300 and 70000 (pieces on
// both backends), leave every other element's gradient a number.
TEST_P(ScanTest, NonFiniteDoutReachesOnlyTheElementItsIndexNames) {
  for (int64_t length : {5, 300, 70000}) {
    const Shape shape{2, length};
    const Tensor x = random(dtype(), shape, -1, 1);
    Tensor dout = random(dtype(), shape, -1, 1);
    dout.host[static_cast<size_t>(length / 3)] = kNaN;
    dout.host[static_cast<size_t>(length / 2)] = kInf;
    ASSERT_OK(dout.upload());
    for (ScanKind kind : {ScanKind::cummax, ScanKind::cummin})
      for (bool reverse : {false, true}) {
        const Desc d = scan(dtype(), shape, 1, kind, reverse);
        const Outputs saved = forward_under_every_variant(d, x);
        const Tensor dx = backward_under_every_variant(d, x, saved, dout);
        int64_t numbers = 0;
        for (int64_t i = 0, numel = shape.numel(); i < numel; ++i) numbers += std::isfinite(dx.at(i));
        EXPECT_GE(numbers, shape.numel() - 2) << describe(d);
      }
  }
}

// ---------------------------------------------------------------------------------------------
// cumprod's gradient with zeros, by value and against the reference (exact: small dyadic values):
// no zero (sums of the others' products), one (the elements up to it have a gradient, none past
// it), two (only the first zero and the elements before it).
TEST_P(ScanTest, CumprodGradientIsExactWithZeros) {
  const std::vector<std::vector<double>> lines = {{2, -3, 0.5, 4, 1.5}, {2, 0, 0.5, 4, -1.5}, {0, -3, 0.5, 0, 1.5}};
  const std::vector<std::vector<double>> out = {{2, -6, -3, -12, -18}, {2, 0, 0, 0, 0}, {0, 0, 0, 0, 0}};
  const std::vector<std::vector<double>> grad = {{-18.5, 13, -66, -7.5, -12}, {1, 1, 0, 0, 0}, {-3.5, 0, 0, 0, 0}};
  for (int dim : {1, 0}) {
    const Lines x_lines = lines_along(dim, 3, 5, [&](int r) -> const std::vector<double>& { return lines[r]; });
    const Shape& shape = x_lines.shape;
    auto at = [&](int64_t r, int64_t l) { return x_lines.at(r, l); };
    const Tensor x = filled(dtype(), shape, x_lines.values);
    const Tensor dout = filled(dtype(), shape, std::vector<double>(15, 1.0));
    for (bool reverse : {false, true}) {
      const Desc d = scan(dtype(), shape, dim, ScanKind::cumprod, reverse);
      // (The reference divides prefix products where there is no zero: within an f64 rounding.)
      const Outputs saved = forward_under_every_variant(d, x, 0.0);
      backward_under_every_variant(d, x, saved, dout, harness::tolerance(DType::f64));
      if (reverse) continue;
      for (const std::string& variant : variants(backend())) {
        SCOPED_TRACE("dim " + std::to_string(dim) + ", variant " + variant_label(variant));
        std::optional<Outputs> o = forward(d, variant, x);
        if (!o) continue;
        std::optional<Tensor> dx = backward(d, variant, x, *o, dout);
        if (!dx) continue;
        for (int r = 0; r < 3; ++r)
          for (int l = 0; l < 5; ++l) {
            EXPECT_EQ(o->out.at(at(r, l)), out[r][l]) << "line " << r << " element " << l;
            EXPECT_EQ(dx->at(at(r, l)), grad[r][l]) << "line " << r << " element " << l;
          }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// out_dtype f32 (torch.cumsum(x, dtype=torch.float32)) from any input: out judged at f32's
// tolerance (the inputs are exact), then the backward from f32 out and dout into x's dtype; along
// the last dim, dim 0 and one long line (pieces on both backends).
TEST_P(ScanTest, F32OutputsOfAnyInput) {
  for (const auto& [shape, dim] : {std::pair<Shape, int>{{5, 300}, 1}, {{300, 5}, 0}, {{2, 70000}, 1}}) {
    const Tensor signed_x = random(dtype(), shape, -1, 1), positive = random(dtype(), shape, 0.5, 1.3);
    for (ScanKind kind : kKinds) {
      if (kind == ScanKind::cumprod && shape.numel() > 10000) continue;  // 0 in f32 long before
      for (bool reverse : {false, true}) {
        Desc d = scan(dtype(), shape, dim, kind, reverse);
        d.out_dtype = DType::f32;
        const Tensor& x = kind == ScanKind::cumprod ? positive : signed_x;
        // f32's tolerance where the compute type is f32; an f64 input computes in f64 and rounds
        // once.
        const Outputs saved = forward_under_every_variant(d, x, harness::tolerance(DType::f32));
        ASSERT_EQ(saved.out.dtype, DType::f32);
        const Tensor dx = backward_under_every_variant(d, x, saved, random(DType::f32, shape));
        EXPECT_EQ(dx.dtype, dtype());
      }
    }
  }
}

// i32 indices: the forward's, and the backward of cummax / cummin reading them.
TEST_P(ScanTest, I32Indices) {
  for (const auto& [shape, dim] : {std::pair<Shape, int>{{7, 300}, 1}, {{300, 7}, 0}, {{4, 6, 5}, 1}}) {
    const Tensor x = random(dtype(), shape, -1, 1);
    for (ScanKind kind : {ScanKind::cummax, ScanKind::cummin})
      for (bool reverse : {false, true}) {
        Desc d = scan(dtype(), shape, dim, kind, reverse);
        d.index_dtype = DType::i32;
        const Outputs saved = forward_under_every_variant(d, x);
        ASSERT_EQ(saved.indices.dtype, DType::i32);
        backward_under_every_variant(d, x, saved, dout_for(d));
      }
  }
}

// ---------------------------------------------------------------------------------------------
// Bit-identical results: every kind in both directions on a long line and on columns, ten runs (three under the
// sanitizers) of each variant (and of the backward's) give the same bytes, and padded and misaligned views of the same
// shape the same bits (on the GPU the contiguous and padded views take 16-byte accesses, the misaligned ones not). The
// long line is cut into pieces (on the GPU the columns too), folded in parallel.
TEST_P(ScanTest, EveryKindIsBitIdenticalOverTenRunsAndUnderOtherViews) {
  const bool gpu = backend() == Backend::cuda;
  // (On the GPU both are cut into pieces: 2 lines, or one block of columns, leave the device idle.)
  const Shape line = gpu ? Shape{2, 70001} : Shape{1, 66001};    // the CPU's pieces of 2^16
  const Shape column = gpu ? Shape{20003, 8} : Shape{1001, 67};  // its blocks of 64 columns
  for (const auto& [shape, dim] : {std::pair<Shape, int>{line, 1}, {column, 0}}) {
    const Tensor signed_x = random(dtype(), shape, -1, 1);
    const Tensor near_one = random(dtype(), shape, 0.99, 1.01);  // products of 70001 of them: e^(-1.2 +- 1.5)
    for (ScanKind kind : kKinds) {
      const Tensor& x = kind == ScanKind::cumprod ? near_one : signed_x;
      for (bool reverse : {false, true}) {
        const Desc d = scan(dtype(), shape, dim, kind, reverse);
        const Tensor dout = dout_for(d);
        for (const std::string& variant : distinct_variants(d)) {
          SCOPED_TRACE(describe(d) + ", variant " + variant_label(variant));
          std::optional<Outputs> first = forward(d, variant, x);
          if (!first) continue;
          EXPECT_FALSE(std::isnan(first->out.at(0)));
          const bool indices = first->indices.buffer.size() > 0;
          ASSERT_NO_FATAL_FAILURE(assert_forward_reruns_identical(d, variant, x, *first));
          std::optional<Tensor> dx = backward(d, variant, x, *first, dout);
          ASSERT_TRUE(dx);
          ASSERT_NO_FATAL_FAILURE(assert_backward_reruns_identical(d, variant, x, *first, dout, *dx));
          for (Views views : {Views::padded, Views::misaligned}) {
            SCOPED_TRACE(std::string(harness::views_name(views)) + " views");
            const Tensor laid_x = relaid(x, views);
            std::optional<Outputs> laid = forward(d, variant, laid_x, views);
            ASSERT_TRUE(laid);
            EXPECT_TRUE(same_bits(laid->out, first->out));
            if (indices) {
              EXPECT_TRUE(same_bits(laid->indices, first->indices));
            }
            Outputs saved{relaid(first->out, views), indices ? relaid(first->indices, views) : Tensor{}};
            std::optional<Tensor> laid_dx = backward(d, variant, laid_x, saved, relaid(dout, views), views);
            ASSERT_TRUE(laid_dx);
            EXPECT_TRUE(same_bits(*laid_dx, *dx)) << "backward";
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Every gradient against finite differences of its forward, in f64, on lines of distinct
// magnitudes (the fixture's check_gradient_against_finite_differences): cummax's and cummin's maps
// are smooth there. (The op table's finite differences take cumsum, cumprod and logcumsumexp on its
// random lines.)
TEST_P(ScanTest, GradientsMatchFiniteDifferencesOfTheForward) {
  if (dtype() != DType::f64) GTEST_SKIP() << "finite differences are f64's";
  const std::pair<Shape, int> cases[] = {{{4, 37}, 1},    {{37, 4}, 0}, {{3, 5, 7}, 1},
                                         {{2, 3000}, -1}, {{6}, 0},     {Shape{}, -1}};
  for (const auto& [shape, dim] : cases) {
    const Tensor x = filled(dtype(), shape, distinct_magnitudes(shape.numel()));
    for (ScanKind kind : kKinds)
      for (bool reverse : {false, true})
        ASSERT_NO_FATAL_FAILURE(check_gradient_against_finite_differences(scan(dtype(), shape, dim, kind, reverse), x));
  }
}

// ---------------------------------------------------------------------------------------------
// Errors: the code, and a message naming the plan and the field.

TEST_P(ScanTest, ErrorsNameTheField) {
  struct Case {
    const char* label;
    Desc desc;
    StatusCode code;
    const char* field;
  };
  auto with = [&](auto mutate) {
    Desc d = scan(dtype(), {4, 5}, -1, ScanKind::cummax);
    mutate(d);
    return d;
  };
  const Case cases[] = {
      {"dim past the rank", with([](Desc& d) { d.dim = 2; }), StatusCode::invalid_problem, "descriptor.dim"},
      {"dim below -rank", with([](Desc& d) { d.dim = -3; }), StatusCode::invalid_problem, "descriptor.dim"},
      {"dim 1 of a scalar", with([](Desc& d) {
         d.shape = {};
         d.dim = 1;
       }),
       StatusCode::invalid_problem, "descriptor.dim"},
      {"kind past the enum", with([](Desc& d) { d.kind = static_cast<ScanKind>(5); }), StatusCode::invalid_problem,
       "descriptor.kind"},
      {"kind 255", with([](Desc& d) { d.kind = static_cast<ScanKind>(255); }), StatusCode::invalid_problem,
       "descriptor.kind"},
      {"out_dtype of another 16-bit type",
       with([this](Desc& d) { d.out_dtype = dtype() == DType::bf16 ? DType::f16 : DType::bf16; }),
       StatusCode::unsupported, "descriptor.out_dtype"},
      {"integer out_dtype", with([](Desc& d) { d.out_dtype = DType::i32; }), StatusCode::unsupported,
       "descriptor.out_dtype"},
      {"bool out_dtype", with([](Desc& d) { d.out_dtype = DType::boolean; }), StatusCode::unsupported,
       "descriptor.out_dtype"},
      {"f32 indices", with([](Desc& d) { d.index_dtype = DType::f32; }), StatusCode::unsupported,
       "descriptor.index_dtype"},
      {"u8 indices", with([](Desc& d) { d.index_dtype = DType::u8; }), StatusCode::unsupported,
       "descriptor.index_dtype"},
      {"indices past the enum", with([](Desc& d) { d.index_dtype = static_cast<DType>(200); }), StatusCode::unsupported,
       "descriptor.index_dtype"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    EXPECT_TRUE(testing::is_error(ScanPlan::select(stream(), c.desc).status(), c.code, "ScanPlan", c.field));
    EXPECT_TRUE(
        testing::is_error(ScanBackwardPlan::select(stream(), c.desc).status(), c.code, "ScanBackwardPlan", c.field));
  }

  // The views of every kind's backward (and of the forward's outputs): a wrong shape names the
  // view.
  const Shape shape{4, 5}, wrong{4, 6};
  for (ScanKind kind : kKinds) {
    const Desc d = scan(dtype(), shape, 1, kind);
    SCOPED_TRACE(describe(d));
    const ScanPlan forward_plan = unwrap(ScanPlan::select(stream(), d));
    const ScanBackwardPlan plan = unwrap(ScanBackwardPlan::select(stream(), d));
    const std::vector<ArgSpec> specs = plan.arg_specs();
    const Tensor x = random(dtype(), shape);
    Outputs saved{random(specs[1].dtype, shape), {}};
    if (specs[2].present) saved.indices = random(specs[2].dtype, shape, 0, 1);
    Tensor dout = random(specs[3].dtype, shape), dx = output(specs[4]);
    Tensor bad_x = random(dtype(), wrong), bad_out = random(specs[1].dtype, wrong),
           bad_dx = output({"dx", true, false, true, dtype(), wrong});
    const ScanBackwardArgs good{x.ref(), saved.out.ref(), saved.indices.ref(), dout.ref(), dx.mut()};
    ASSERT_OK(plan.can_implement(good));
    auto expect_named = [&](ScanBackwardArgs args, const std::string& field) {
      EXPECT_TRUE(
          testing::is_error(plan.run(stream(), {}, args), StatusCode::invalid_problem, "ScanBackwardPlan", field));
    };
    ScanBackwardArgs a = good;
    a.dout = bad_out.ref();
    expect_named(a, "args.dout.shape");
    a = good;
    a.dx = bad_dx.mut();
    expect_named(a, "args.dx.shape");
    if (reference::scan_reads_saved(kind)) {
      a = good;
      a.x = bad_x.ref();
      expect_named(a, "args.x.shape");
      a = good;
      a.out = bad_out.ref();
      expect_named(a, "args.out.shape");
    }
    if (reference::scan_has_indices(kind)) {
      const Tensor bad_indices = random(specs[2].dtype, wrong, 0, 1), i32 = random(DType::i32, shape, 0, 1);
      a = good;
      a.indices = bad_indices.ref();
      expect_named(a, "args.indices.shape");
      a = good;
      a.indices = i32.ref();  // index_dtype is i64
      expect_named(a, "args.indices.dtype");
    }
    // The forward's outputs.
    const std::vector<ArgSpec> forward_specs = forward_plan.arg_specs();
    Tensor out = output(forward_specs[1]), bad = output({"out", true, false, true, forward_specs[1].dtype, wrong});
    ScanArgs f{x.ref(), bad.mut(), {}};
    Tensor indices;
    if (forward_specs[2].present) f.indices = (indices = output(forward_specs[2])).mut();
    EXPECT_TRUE(testing::is_error(forward_plan.run(stream(), {}, f), StatusCode::invalid_problem, "ScanPlan",
                                  "args.out.shape"));
  }
}

// Empty problems: lines of no element and no lines run as no-ops; a scalar is its own scan.
TEST_P(ScanTest, EmptyProblemsAndScalars) {
  for (const auto& [shape, dim] : {std::pair<Shape, int>{{4, 0}, 1}, {{0, 5}, 1}, {{0, 5}, 0}, {{3, 0, 4}, 2}}) {
    const Tensor x = random(dtype(), shape);
    for (ScanKind kind : kKinds) both_under_every_variant(scan(dtype(), shape, dim, kind), x);
  }
  const Tensor scalar = filled(dtype(), Shape{}, {-0.75});
  for (ScanKind kind : kKinds)
    for (int dim : {0, -1}) {
      std::optional<Outputs> o = forward(scan(dtype(), Shape{}, dim, kind), "", scalar);
      ASSERT_TRUE(o);
      EXPECT_EQ(o->out.at(0), -0.75) << reference::scan_kind_name(kind);
      if (reference::scan_has_indices(kind)) {
        EXPECT_EQ(o->indices.at(0), 0);
      }
    }
}

// ---------------------------------------------------------------------------------------------
// The variant select picks: the scanned dim innermost (or only size-1 dims after it) runs rows,
// others columns.
TEST_P(ScanTest, SelectPicksTheKernelByShape) {
  auto picked = [&](const Shape& shape, int dim, bool backward_plan) {
    const Desc d = scan(dtype(), shape, dim, ScanKind::cumsum);
    return testing::variant_of(backward_plan ? unwrap(ScanBackwardPlan::select(stream(), d)).sku()
                                             : unwrap(ScanPlan::select(stream(), d)).sku());
  };
  for (bool backward_plan : {false, true}) {
    SCOPED_TRACE(backward_plan ? "backward" : "forward");
    EXPECT_EQ(picked({8192, 4096}, 1, backward_plan), "rows");
    EXPECT_EQ(picked({8192, 4096}, -1, backward_plan), "rows");
    EXPECT_EQ(picked({1, int64_t{1} << 26}, -1, backward_plan), "rows");
    EXPECT_EQ(picked({4, 1000, 1}, 1, backward_plan), "rows");  // nothing after dim but size 1
    EXPECT_EQ(picked({1000, 1}, 0, backward_plan), "rows");
    EXPECT_EQ(picked(Shape{}, 0, backward_plan), "rows");
    EXPECT_EQ(picked({8192, 4096}, 0, backward_plan), "columns");
    EXPECT_EQ(picked({int64_t{1} << 20, 4}, 0, backward_plan), "columns");
    EXPECT_EQ(picked({5, 100, 3}, 1, backward_plan), "columns");
  }
}

// Each variant forced, on both sides of each backend's split of long lines into pieces: CUDA's
// (scan_geometry in src/ops/scan_problem.hpp: few long lines leave the device idle and are cut,
// their pieces' totals through the workspace; enough lines to fill it twice are not) and the CPU's
// (pieces of 2^16 elements, src/cpu/scan.cpp); forward and backward of a sum, an extreme (reversed)
// and logcumsumexp.
TEST_P(ScanTest, EveryVariantOnBothSidesOfTheSplit) {
  const bool gpu = backend() == Backend::cuda;
  struct Case {
    Shape shape;
    int dim;
    bool pieces;  // on CUDA: the lines are cut (a workspace), under every variant
  };
  const int64_t piece = int64_t{1} << 16;
  const std::vector<Case> cases =
      gpu ? std::vector<Case>{{{2, 40000}, -1, true},
                              {{40000, 3}, 0, true},
                              {{2000, 4500}, -1, false},
                              {{40, 64001}, 0, false}}
          : std::vector<Case>{
                {{2, piece + 1}, -1, true}, {{piece + 1, 3}, 0, true}, {{2, piece}, -1, false}, {{piece, 3}, 0, false}};
  for (const Case& c : cases) {
    const Tensor x = random(dtype(), c.shape, -1, 1);
    for (ScanKind kind : {ScanKind::cumsum, ScanKind::cummax, ScanKind::logcumsumexp}) {
      const Desc d = scan(dtype(), c.shape, c.dim, kind, kind == ScanKind::cummax);
      SCOPED_TRACE(describe(d));
      both_under_every_variant(d, x);
      if (!gpu) continue;
      for (const std::string& variant : variants(backend())) {
        Expected<ScanPlan> forward_plan = ScanPlan::select(stream(), d, preferring(variant));
        Expected<ScanBackwardPlan> backward_plan = ScanBackwardPlan::select(stream(), d, preferring(variant));
        if (!forward_plan || !backward_plan) continue;
        if (c.pieces) {
          EXPECT_GT(forward_plan->workspace_size(), 0u) << variant_label(variant) << ": no pieces";
          EXPECT_GT(backward_plan->workspace_size(), 0u) << variant_label(variant) << ": no pieces";
        } else if (variant.empty()) {
          EXPECT_EQ(forward_plan->workspace_size(), 0u) << "pieces";
          EXPECT_EQ(backward_plan->workspace_size(), 0u) << "pieces";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Scan, ScanTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

// ---------------------------------------------------------------------------------------------
// Integer cumsums (i32, i64) on both backends under every variant: past 2^31 exact in the i64 out,
// wrapped in an i32 one; i64 sums that wrap; long lines along rows and columns in both directions,
// empty lines; the other kinds, other out dtypes and the backward refused.

class ScanIntegerTest : public ScanTest {};

TEST_P(ScanIntegerTest, CumsumsAreExactOrWrap) {
  const bool i32 = dtype() == DType::i32;
  const double top = i32 ? 0x1p31 - 1 : 0x1p62;
  std::optional<Outputs> o =
      forward(scan(dtype(), {3}, 0, ScanKind::cumsum), "", filled(dtype(), {3}, {top, top, top}));
  ASSERT_TRUE(o);
  EXPECT_EQ(o->out.dtype, DType::i64);
  EXPECT_EQ(o->out.at(2), i32 ? 6442450941.0 : -0x1p62);  // i64: 3 x 2^62 - 2^64
  if (i32) {
    Desc d = scan(dtype(), {3}, 0, ScanKind::cumsum);
    d.out_dtype = DType::i32;
    o = forward(d, "", filled(dtype(), {3}, {top, top, top}));
    ASSERT_TRUE(o);
    EXPECT_EQ(o->out.at(1), -2.0);          // 2^32 - 2 mod 2^32
    EXPECT_EQ(o->out.at(2), 2147483645.0);  // 3 x (2^31 - 1) - 2^32
  }
  const double bound = i32 ? 0x1p31 : 0x1p62;
  for (const auto& [shape, dim] : {std::pair<Shape, int>{{2, 70001}, 1}, {{20001, 3}, 0}, {{3, 0}, 1}}) {
    const Tensor x = random(dtype(), shape, -bound, bound);
    for (bool reverse : {false, true})
      for (std::optional<DType> out : {std::optional<DType>{}, std::optional<DType>{dtype()}}) {
        Desc d = scan(dtype(), shape, dim, ScanKind::cumsum, reverse);
        d.out_dtype = out;
        forward_under_every_variant(d, x);
      }
  }
}

TEST_P(ScanIntegerTest, RefusedKindsOutDtypesAndGradients) {
  using testing::is_error;
  for (ScanKind kind : kKinds) {
    const Desc d = scan(dtype(), {4, 5}, 1, kind);
    SCOPED_TRACE(describe(d));
    EXPECT_TRUE(is_error(ScanBackwardPlan::select(stream(), d).status(), StatusCode::unsupported, "ScanBackwardPlan",
                         "descriptor.dtype"));
    if (kind != ScanKind::cumsum) {
      EXPECT_TRUE(
          is_error(ScanPlan::select(stream(), d).status(), StatusCode::unsupported, "ScanPlan", "descriptor.dtype"));
      continue;
    }
    EXPECT_EQ(unwrap(ScanPlan::select(stream(), d)).precision_guarantee().accumulator, DType::i64);
    for (DType out : {DType::f32, DType::f64, DType::i32, DType::i64, DType::boolean}) {
      Desc o = d;
      o.out_dtype = out;
      if (out == DType::i64 || out == dtype()) {
        EXPECT_TRUE(ScanPlan::select(stream(), o).has_value()) << dtype_name(out);
      } else {
        EXPECT_TRUE(is_error(ScanPlan::select(stream(), o).status(), StatusCode::unsupported, "ScanPlan",
                             "descriptor.out_dtype"))
            << dtype_name(out);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Scan, ScanIntegerTest, ::testing::ValuesIn(testing::cases_of({DType::i32, DType::i64})),
                         testing::case_name);

}  // namespace
}  // namespace baracuda

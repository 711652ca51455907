// Binary family: what the op table's random samples cannot reach, on every backend and float dtype.
// Special values (+-0, +-inf, NaN, ties, zero divisors) through every kind, forward and backward, as
// every pair of a set of specials, against the f64 reference rounded to the dtype (NaN where it is
// NaN, infinities exactly); in-place runs (out = a, out = b, da = dout); the optional gradients; the
// overlaps rejected, naming the output; the SKU names the kind and the variant.
#include <cmath>
#include <limits>
#include <optional>

#include "harness/reference/binary_reference.hpp"
#include "support/backend.hpp"
#include "support/matches.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::contiguous;
using testing::unwrap;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<BinaryKind> all_kinds() {
  std::vector<BinaryKind> kinds;
  for (int k = 0; k < kBinaryKindCount; ++k)
    if (binary_kind_takes(static_cast<BinaryKind>(k), DType::f32)) kinds.push_back(static_cast<BinaryKind>(k));
  return kinds;
}
// The kinds with a gradient (not the predicates, whose out is bool).
std::vector<BinaryKind> differentiable_kinds() {
  std::vector<BinaryKind> kinds;
  for (BinaryKind k : all_kinds())
    if (!binary_kind_is_predicate(k)) kinds.push_back(k);
  return kinds;
}
DType out_dtype(BinaryKind kind, DType dtype) { return binary_kind_is_predicate(kind) ? DType::boolean : dtype; }

std::vector<double> values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.at(static_cast<int64_t>(i));
  return v;
}

class BinaryTest : public testing::BackendDTypeTest {
 protected:
  std::vector<double> specials() const {
    return {0.0, -0.0, kInf, -kInf, kNaN, 1e-30, 0.5, -0.5, 1, -1, 2, -2, 2.5, -3, 7, 1e30, -1e30};
  }
  double tol() const { return harness::tolerance(dtype()); }

  Tensor tensor_of(const std::vector<double>& v, Shape shape) {
    Tensor t = unwrap(harness::random_tensor(backend(), dtype(), contiguous(shape), rng_));
    for (size_t i = 0; i < v.size(); ++i) t.host[i] = harness::quantize(dtype(), v[i]);
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  }
  Tensor output(Shape shape, std::optional<DType> type = std::nullopt) {
    Tensor t = unwrap(harness::random_tensor(backend(), type.value_or(dtype()), contiguous(shape), rng_));
    EXPECT_TRUE(harness::poison(t).is_ok());
    return t;
  }
  // a: every special repeated along rows; b: along columns: every pair once, in an [n, n] output.
  std::pair<Tensor, Tensor> all_pairs() {
    const std::vector<double> s = specials();
    const auto n = static_cast<int64_t>(s.size());
    std::vector<double> a, b;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) a.push_back(s[i]), b.push_back(s[j]);
    return {tensor_of(a, {n, n}), tensor_of(b, {n, n})};
  }

  // got against want rounded to the dtype: NaN for NaN, infinities exactly, else within tol.
  ::testing::AssertionResult matches(const Tensor& got, const std::function<double(int64_t)>& want,
                                     const std::function<std::string(int64_t)>& where) {
    for (int64_t i = 0, numel = got.shape.numel(); i < numel; ++i) {
      const double g = got.at(i), w = harness::quantize(dtype(), want(i));
      const bool ok =
          std::isnan(w) ? std::isnan(g) : (std::isinf(w) ? g == w : std::fabs(g - w) <= tol() * (1 + std::fabs(w)));
      if (!ok) return ::testing::AssertionFailure() << where(i) << ": got " << g << ", want " << w;
    }
    return ::testing::AssertionSuccess();
  }
  BinaryDescriptor desc(BinaryKind kind, Shape a, Shape b) const {
    BinaryDescriptor d;
    d.kind = kind;
    d.dtype = dtype();
    d.a_shape = a;
    d.b_shape = b;
    return d;
  }
};

TEST_P(BinaryTest, SpecialValuesForward) {
  auto [a, b] = all_pairs();
  const bool f64 = dtype() == DType::f64;
  for (BinaryKind kind : all_kinds()) {
    SCOPED_TRACE(std::string(binary_kind_name(kind)));
    const BinaryDescriptor d = desc(kind, a.shape, b.shape);
    Tensor out = output(a.shape, out_dtype(kind, dtype()));
    ASSERT_OK(unwrap(BinaryPlan::select(stream(), d)).run(stream(), {}, {a.ref(), b.ref(), out.mut()}));
    ASSERT_OK(out.download());
    EXPECT_TRUE(matches(
        out, [&](int64_t i) { return reference::binary(kind, a.at(i), b.at(i), 1.0, f64); },
        [&](int64_t i) { return "a = " + std::to_string(a.at(i)) + ", b = " + std::to_string(b.at(i)); }));
  }
}

TEST_P(BinaryTest, SpecialValuesBackward) {
  auto [a, b] = all_pairs();
  const bool f64 = dtype() == DType::f64;
  Tensor dout = tensor_of(std::vector<double>(static_cast<size_t>(a.shape.numel()), -0.75), a.shape);
  for (BinaryKind kind : differentiable_kinds()) {
    SCOPED_TRACE(std::string(binary_kind_name(kind)));
    const BinaryDescriptor d = desc(kind, a.shape, b.shape);
    Tensor da = output(a.shape), db = output(b.shape);
    ASSERT_OK(unwrap(BinaryBackwardPlan::select(stream(), d))
                  .run(stream(), {}, {dout.ref(), a.ref(), b.ref(), da.mut(), db.mut()}));
    ASSERT_OK(da.download());
    ASSERT_OK(db.download());
    auto grads = [&](int64_t i, bool of_b) {
      double ga = 0, gb = 0;
      reference::binary_gradients(kind, -0.75, a.at(i), b.at(i), 1.0, f64, ga, gb);
      return of_b ? gb : ga;
    };
    auto where = [&](int64_t i) { return "a = " + std::to_string(a.at(i)) + ", b = " + std::to_string(b.at(i)); };
    EXPECT_TRUE(matches(
        da, [&](int64_t i) { return grads(i, false); }, where))
        << "da";
    EXPECT_TRUE(matches(
        db, [&](int64_t i) { return grads(i, true); }, where))
        << "db";
  }
}

// Ties of the extremes: maximum / minimum split the gradient, fmax / fmin give it to a.
TEST_P(BinaryTest, TiesOfTheExtremes) {
  Tensor a = tensor_of({1.5, -2, 0}, {3}), b = tensor_of({1.5, -2, -0.0}, {3});
  Tensor dout = tensor_of({1, 1, 1}, {3});
  for (BinaryKind kind : {BinaryKind::maximum, BinaryKind::minimum, BinaryKind::fmax, BinaryKind::fmin}) {
    SCOPED_TRACE(std::string(binary_kind_name(kind)));
    const bool split = kind == BinaryKind::maximum || kind == BinaryKind::minimum;
    Tensor da = output({3}), db = output({3});
    ASSERT_OK(unwrap(BinaryBackwardPlan::select(stream(), desc(kind, {3}, {3})))
                  .run(stream(), {}, {dout.ref(), a.ref(), b.ref(), da.mut(), db.mut()}));
    ASSERT_OK(da.download());
    ASSERT_OK(db.download());
    for (int64_t i = 0; i < 3; ++i) {
      EXPECT_EQ(da.at(i), split ? 0.5 : 1.0) << i;
      EXPECT_EQ(db.at(i), split ? 0.5 : 0.0) << i;
    }
  }
}

// out = a, out = b (a.add_(b), b.mul_(a)), a broadcast partner; da = dout.
TEST_P(BinaryTest, InPlace) {
  for (BinaryKind kind : {BinaryKind::add, BinaryKind::div, BinaryKind::maximum, BinaryKind::pow}) {
    SCOPED_TRACE(std::string(binary_kind_name(kind)));
    const bool f64 = dtype() == DType::f64;
    for (bool into_b : {false, true}) {
      Tensor big = unwrap(harness::random_tensor(backend(), dtype(), contiguous({100, 33}), rng_, 0.5, 2));
      Tensor row = unwrap(harness::random_tensor(backend(), dtype(), contiguous({33}), rng_, 0.5, 2));
      const std::vector<double> saved = values(big);
      const BinaryDescriptor d = into_b ? desc(kind, {33}, {100, 33}) : desc(kind, {100, 33}, {33});
      const AnyTensorRef a = into_b ? row.ref() : big.ref(), b = into_b ? big.ref() : row.ref();
      ASSERT_OK(unwrap(BinaryPlan::select(stream(), d)).run(stream(), {}, {a, b, big.mut()}));
      ASSERT_OK(big.download());
      EXPECT_TRUE(matches(
          big,
          [&](int64_t i) {
            const double x = saved[i], r = row.at(i % 33);
            return into_b ? reference::binary(kind, r, x, 1.0, f64) : reference::binary(kind, x, r, 1.0, f64);
          },
          [](int64_t i) { return "element " + std::to_string(i); }));
    }
    // da written over dout: refused while db (broadcast) is reduced, whose reduction reads dout after
    // da is written; allowed without db.
    Tensor a = unwrap(harness::random_tensor(backend(), dtype(), contiguous({100, 33}), rng_, 0.5, 2));
    Tensor b = unwrap(harness::random_tensor(backend(), dtype(), contiguous({33}), rng_, 0.5, 2));
    Tensor dout = unwrap(harness::random_tensor(backend(), dtype(), contiguous({100, 33}), rng_));
    const std::vector<double> dout_saved = values(dout);
    Tensor db = output({33});
    const BinaryBackwardPlan backward = unwrap(BinaryBackwardPlan::select(stream(), desc(kind, {100, 33}, {33})));
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), backward.workspace_size()));
    EXPECT_TRUE(testing::is_error(
        backward.run(stream(), {ws.data(), ws.size()}, {dout.ref(), a.ref(), b.ref(), dout.mut(), db.mut()}),
        StatusCode::invalid_problem, "BinaryBackwardPlan", "args.da"));
    ASSERT_OK(backward.run(stream(), {ws.data(), ws.size()}, {dout.ref(), a.ref(), b.ref(), dout.mut(), {}}));
    ASSERT_OK(dout.download());
    EXPECT_TRUE(matches(
        dout,
        [&](int64_t i) {
          double ga = 0, gb = 0;
          reference::binary_gradients(kind, dout_saved[i], a.at(i), b.at(i % 33), 1.0, f64, ga, gb);
          return ga;
        },
        [](int64_t i) { return "da element " + std::to_string(i); }));
  }
}

// Either gradient may be left out, broadcast or not: the other is still right and nothing is written.
TEST_P(BinaryTest, OptionalGradients) {
  const bool f64 = dtype() == DType::f64;
  for (const auto& [a_shape, b_shape] : std::vector<std::pair<Shape, Shape>>{
           {{40, 30}, {40, 30}}, {{40, 30}, {30}}, {{30}, {40, 30}}, {{40, 1}, {1, 30}}}) {
    for (int drop = 0; drop < 3; ++drop) {  // drop da, db, or neither
      SCOPED_TRACE(a_shape.to_string() + " with " + b_shape.to_string() + ", drop " + std::to_string(drop));
      const BinaryDescriptor d = desc(BinaryKind::mul, a_shape, b_shape);
      const Shape out_shape = *binary_output_shape(d);
      Tensor a = unwrap(harness::random_tensor(backend(), dtype(), contiguous(a_shape), rng_));
      Tensor b = unwrap(harness::random_tensor(backend(), dtype(), contiguous(b_shape), rng_));
      Tensor dout = unwrap(harness::random_tensor(backend(), dtype(), contiguous(out_shape), rng_));
      Tensor da = output(a_shape), db = output(b_shape);
      const BinaryBackwardPlan plan = unwrap(BinaryBackwardPlan::select(stream(), d));
      harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan.workspace_size()));
      ASSERT_OK(plan.run(stream(), {ws.data(), ws.size()},
                         {dout.ref(), a.ref(), b.ref(), drop == 0 ? AnyTensorMut{} : da.mut(),
                          drop == 1 ? AnyTensorMut{} : db.mut()}));
      ASSERT_OK(da.download());
      ASSERT_OK(db.download());
      const reference::BinaryIndexing ix = reference::binary_indexing(d);
      std::vector<double> want_a(static_cast<size_t>(a_shape.numel())), want_b(static_cast<size_t>(b_shape.numel()));
      for (int64_t i = 0, numel = out_shape.numel(); i < numel; ++i) {
        double ga = 0, gb = 0;
        reference::binary_gradients(d.kind, dout.at(i), a.at(ix.a_of(i)), b.at(ix.b_of(i)), 1.0, f64, ga, gb);
        want_a[ix.a_of(i)] += ga;
        want_b[ix.b_of(i)] += gb;
      }
      auto where = [](int64_t i) { return "element " + std::to_string(i); };
      auto near = [](const std::vector<double>& want) {
        return [&want](int64_t i) { return want[static_cast<size_t>(i)]; };
      };
      if (drop == 0) {
        for (int64_t i = 0, numel = da.shape.numel(); i < numel; ++i)
          EXPECT_TRUE(std::isnan(da.at(i))) << "da written at " << i;
      } else {
        EXPECT_TRUE(matches(da, near(want_a), where)) << "da";
      }
      if (drop == 1) {
        for (int64_t i = 0, numel = db.shape.numel(); i < numel; ++i)
          EXPECT_TRUE(std::isnan(db.at(i))) << "db written at " << i;
      } else {
        EXPECT_TRUE(matches(db, near(want_b), where)) << "db";
      }
    }
  }
}

// A bias gradient over many rows: db sums its column in many splits (on the GPU past the 16 partials
// finalize loads at a time, and a remainder). Whole numbers, so every sum is exact and db is the
// exact column sum rounded once to the dtype; a second run gives the same bits.
// The bias gradient (db of a + b[D]: column sums of dout), exact on integer values and bit-identical
// across runs: columns of whole 16-byte vectors and not, few and many splits of the rows (CUDA's
// finalize folds a kept element's splits in 32 warps, batches of 16: under and past 512 of them),
// kept elements not a multiple of 32, and rows that do not collapse to one dim (dout padded).
TEST_P(BinaryTest, BiasGradientOverManyRows) {
  struct Case {
    Shape shape;
    Strides dout_strides;  // zero: contiguous
  };
  const std::vector<Case> cases = {{{4500, 16}, {}}, {{4500, 3}, {}},   {{40000, 16}, {}},
                                   {{3000, 40}, {}}, {{600, 1000}, {}}, {{6, 700, 16}, {11208, 16, 1}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.shape.to_string());
    const int64_t columns = c.shape.dims[c.shape.rank - 1], rows = c.shape.numel() / columns;
    const BinaryDescriptor d = desc(BinaryKind::add, c.shape, {columns});
    Tensor a = unwrap(harness::random_tensor(backend(), dtype(), contiguous(d.a_shape), rng_));
    Tensor b = unwrap(harness::random_tensor(backend(), dtype(), contiguous(d.b_shape), rng_));
    const harness::TensorSpec dout_spec =
        c.dout_strides[0] ? testing::with_strides(c.shape, c.dout_strides) : contiguous(c.shape);
    Tensor dout = unwrap(harness::random_tensor(backend(), dtype(), dout_spec, rng_, -8, 8));
    for (double& v : dout.host) v = std::round(v);
    ASSERT_OK(dout.upload());
    const BinaryBackwardPlan plan = unwrap(BinaryBackwardPlan::select(stream(), d));
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan.workspace_size()));
    std::vector<double> first;
    for (int run = 0; run < 2; ++run) {
      Tensor db = output(d.b_shape);
      ASSERT_OK(plan.run(stream(), {ws.data(), ws.size()}, {dout.ref(), a.ref(), b.ref(), {}, db.mut()}));
      ASSERT_OK(db.download());
      if (run == 1) {
        EXPECT_EQ(values(db), first);
        continue;
      }
      first = values(db);
      for (int64_t j = 0; j < columns; ++j) {
        double sum = 0;
        for (int64_t r = 0; r < rows; ++r) sum += dout.at(r * columns + j);
        EXPECT_EQ(db.at(j), harness::quantize(dtype(), sum)) << j;
      }
    }
  }
}

// Broadcast rows through each of the CUDA launcher's kernels (cuda/elementwise_launch.hpp): walks of
// one or two dims after collapsing (the flat rows kernel: rows of one vector, 16 bytes, and of odd
// counts), and walks of three or four, whose rows of fewer than kThreads * kRowUnroll vectors take
// the row lanes and longer ones the row kernel: either side of that bound, 2048 elements for div
// in 16 bits and for f64, else 4096 (rows of 4104 leave a thread's last vectors off the row). b is
// broadcast along rows ([D]) and along columns ([N, 1]). (The flat kernel's launches of 2^28 vectors:
// test_binary_param_large.cpp.)
TEST_P(BinaryTest, BroadcastRowsThroughEachRowKernel) {
  const auto kv = static_cast<int64_t>(16 / dtype_size(dtype()));
  std::vector<std::pair<Shape, Shape>> cases = {
      {{21, 4104}, {4104}},     {{21, 2040}, {21, 1}},
      {{7, kv}, {kv}},          {{9, kv}, {9, 1}},
      {{1, 3 * kv}, {1}},       {{4, 1, 6, kv}, {1, 1, 6, kv}},
      {{3, 5, kv}, {3, 1, kv}}, {{2, 3, 4, 2 * kv}, {2, 1, 4, 1}},
      {{3, 5, 3 * kv}, {5, 1}},
  };
  for (int64_t d : {2040, 2048, 2056, 4088, 4096, 4104}) {
    cases.push_back({{3, 2, d}, {3, 1, d}});
    cases.push_back({{3, 2, d}, {2, 1}});
  }
  for (BinaryKind kind : {BinaryKind::add, BinaryKind::div}) {
    for (const auto& [a_shape, b_shape] : cases) {
      SCOPED_TRACE(std::string(binary_kind_name(kind)) + " " + a_shape.to_string() + " with " + b_shape.to_string());
      const BinaryDescriptor dsc = desc(kind, a_shape, b_shape);
      Tensor a = unwrap(harness::random_tensor(backend(), dtype(), contiguous(a_shape), rng_, -4, 4));
      Tensor b = unwrap(harness::random_tensor(backend(), dtype(), contiguous(b_shape), rng_, 0.5, 4));
      Tensor out = output(a_shape);
      const BinaryPlan plan = unwrap(BinaryPlan::select(stream(), dsc));
      ASSERT_OK(plan.run(stream(), {}, {a.ref(), b.ref(), out.mut()}));
      ASSERT_OK(out.download());
      // b's element of output element i: its dims right-aligned with a's, size-1 dims broadcast.
      auto b_index = [&](int64_t i) {
        int64_t at = 0, step = 1;
        for (int d = a_shape.rank - 1, e = b_shape.rank - 1; d >= 0; --d, --e) {
          const int64_t coord = i % a_shape.dims[d];
          i /= a_shape.dims[d];
          if (e < 0) break;
          if (b_shape.dims[e] != 1) at += coord * step;
          step *= b_shape.dims[e];
        }
        return at;
      };
      EXPECT_TRUE(matches(
          out,
          [&](int64_t i) {
            const double x = a.at(i), y = b.at(b_index(i));
            return kind == BinaryKind::add ? x + y : x / y;
          },
          [](int64_t i) { return "element " + std::to_string(i); }));
    }
  }
}

// a / b of f16 and bf16 values, correctly rounded to the dtype (the GPU divides for a 16-bit output
// as common/arith16.hpp says, the CPU in IEEE f32): every value over a set of divisors, and a set of
// dividends over every value, the set holding +-0, +-inf, NaN, subnormals, the extremes and values
// whose quotients overflow and underflow; and a divisor as a scalar operand (a / 3).
TEST_P(BinaryTest, QuotientsOf16BitValuesAreCorrectlyRounded) {
  if (dtype() != DType::f16 && dtype() != DType::bf16) GTEST_SKIP() << "every value of a 16-bit dtype";
  const std::vector<double> every = testing::every_16bit_value(dtype());
  const double largest = dtype() == DType::f16 ? 65504.0 : 0x1.fep127,
               least = dtype() == DType::f16 ? 0x1p-24 : 0x1p-133;
  const std::vector<double> some = {
      0.0, -0.0, kInf, -kInf, kNaN, least, -least,      3 * least,           largest, -largest, 1,
      -1,  3,    -7,   0.1,   1e-3, 1e3,   largest / 3, 2 * least / largest, 1.5,     100,      -1e-4,
      0.7, 5e4};
  auto check = [&](const std::vector<double>& as, const std::vector<double>& bs, const char* what) {
    std::vector<double> a, b;
    for (double x : as)
      for (double y : bs) a.push_back(x), b.push_back(y);
    const Shape shape{static_cast<int64_t>(a.size())};
    Tensor ta = tensor_of(a, shape), tb = tensor_of(b, shape), out = output(shape);
    ASSERT_OK(unwrap(BinaryPlan::select(stream(), desc(BinaryKind::div, shape, shape)))
                  .run(stream(), {}, {ta.ref(), tb.ref(), out.mut()}));
    ASSERT_OK(out.download());
    int wrong = 0;
    for (int64_t i = 0; i < shape.numel() && wrong < 10; ++i) {
      if (!testing::is_nearest_16bit(dtype(), out.at(i), ta.at(i) / tb.at(i))) {
        ++wrong;
        ADD_FAILURE() << what << ": " << ta.at(i) << " / " << tb.at(i) << ": got " << out.at(i) << ", exact "
                      << ta.at(i) / tb.at(i);
      }
    }
  };
  check(every, some, "every value / some");
  check(some, every, "some / every value");
  // A scalar divisor (BinaryScalarForward).
  BinaryDescriptor d = desc(BinaryKind::div, {65536}, {});
  d.b_shape = Shape{};
  d.b_scalar = 3.0;
  Tensor x = tensor_of(every, {65536}), out = output({65536});
  ASSERT_OK(unwrap(BinaryPlan::select(stream(), d)).run(stream(), {}, {x.ref(), {}, out.mut()}));
  ASSERT_OK(out.download());
  for (int64_t i = 0; i < 65536; ++i)
    ASSERT_TRUE(testing::is_nearest_16bit(dtype(), out.at(i), x.at(i) / 3.0)) << x.at(i) << " / 3: got " << out.at(i);
}

// a * b with b [rows, 1]: b's gradient sums each row of dout * a (on the GPU a warp a row, its lanes'
// vectors a few at a time then one by one, a row cut into pieces where rows are few; rows not of
// whole vectors take the per-element kernel). Integer values: every sum is exact, so the result is
// the quantized exact sum, and the same bits on a second run.
TEST_P(BinaryTest, RowGradientOverLongRows) {
  const std::vector<Shape> shapes = {{64, 1576}, {3, 200000}, {40, 8}, {5, 1001}, {2, 33000}};
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(shape.to_string());
    const int64_t columns = shape.dims[1], rows = shape.dims[0];
    const BinaryDescriptor d = desc(BinaryKind::mul, shape, {rows, 1});
    Tensor a = unwrap(harness::random_tensor(backend(), dtype(), contiguous(d.a_shape), rng_, -8, 8));
    Tensor b = unwrap(harness::random_tensor(backend(), dtype(), contiguous(d.b_shape), rng_, -8, 8));
    Tensor dout = unwrap(harness::random_tensor(backend(), dtype(), contiguous(shape), rng_, -8, 8));
    for (Tensor* t : {&a, &b, &dout}) {
      for (double& v : t->host) v = std::round(v);
      ASSERT_OK(t->upload());
    }
    const BinaryBackwardPlan plan = unwrap(BinaryBackwardPlan::select(stream(), d));
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan.workspace_size()));
    std::vector<double> first;
    for (int run = 0; run < 2; ++run) {
      Tensor da = output(shape), db = output(d.b_shape);
      ASSERT_OK(plan.run(stream(), {ws.data(), ws.size()}, {dout.ref(), a.ref(), b.ref(), da.mut(), db.mut()}));
      ASSERT_OK(da.download());
      ASSERT_OK(db.download());
      if (run == 1) {
        EXPECT_EQ(values(db), first);
        continue;
      }
      first = values(db);
      for (int64_t r = 0; r < rows; ++r) {
        double sum = 0;
        for (int64_t j = 0; j < columns; ++j) {
          const int64_t at = r * columns + j;
          sum += dout.at(at) * a.at(at);
          if (j % 97 == 0 || j == columns - 1) {
            ASSERT_EQ(da.at(at), harness::quantize(dtype(), dout.at(at) * b.at(r))) << at;
          }
        }
        EXPECT_EQ(db.at(r), harness::quantize(dtype(), sum)) << r;
      }
    }
  }
}

// add's and sub's gradients are dout's alone: their backward runs with a and b left empty (the
// elementwise, reduced, scalar and mixed-dtype paths), da = dout and db = +-alpha dout, summed over b's
// broadcast dims.
TEST_P(BinaryTest, AddAndSubBackwardTakeNoOperands) {
  struct Case {
    Shape a, b;
    bool b_scalar, mixed;
  };
  const std::vector<Case> cases = {{{37, 40}, {37, 40}, false, false},
                                   {{300, 24}, {24}, false, false},
                                   {{300, 24}, {300, 1}, false, false},
                                   {{37, 40}, {}, true, false},
                                   {{300, 24}, {24}, false, dtype() != DType::f32 && dtype() != DType::f64}};
  for (const BinaryKind kind : {BinaryKind::add, BinaryKind::sub}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(binary_kind_name(kind)) + " " + c.a.to_string() + " " + c.b.to_string() +
                   (c.b_scalar ? " scalar" : "") + (c.mixed ? " b f32" : ""));
      BinaryDescriptor d = desc(kind, c.a, c.b);
      d.alpha = 2;
      if (c.b_scalar) d.b_scalar = 3.0;
      if (c.mixed) d.b_dtype = DType::f32;
      const DType out_type = c.mixed ? DType::f32 : dtype();  // dout has the output's (promoted) dtype
      Tensor dout = unwrap(harness::random_tensor(backend(), out_type, contiguous(c.a), rng_, -8, 8));
      for (double& v : dout.host) v = std::round(v);
      ASSERT_OK(dout.upload());
      const BinaryBackwardPlan plan = unwrap(BinaryBackwardPlan::select(stream(), d));
      harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan.workspace_size()));
      Tensor da = output(c.a);
      std::optional<Tensor> db;
      if (!c.b_scalar) db = output(c.b, d.b_dtype);
      ASSERT_OK(
          plan.run(stream(), {ws.data(), ws.size()}, {dout.ref(), {}, {}, da.mut(), db ? db->mut() : AnyTensorMut{}}));
      ASSERT_OK(da.download());
      EXPECT_EQ(values(da), values(dout));
      if (!db) continue;
      ASSERT_OK(db->download());
      const double sign = kind == BinaryKind::add ? 2.0 : -2.0;
      const int64_t columns = c.a.dims[1];
      std::vector<double> want(static_cast<size_t>(c.b.numel()), 0.0);
      for (int64_t i = 0, numel = c.a.numel(); i < numel; ++i) {
        const int64_t r = i / columns, j = i % columns;
        const int64_t at = c.b.numel() == c.a.numel() ? i : c.b.rank == 1 ? j : r;
        want[static_cast<size_t>(at)] += sign * dout.at(i);
      }
      for (int64_t k = 0, numel = c.b.numel(); k < numel; ++k)
        EXPECT_EQ(db->at(k), harness::quantize(db->dtype, want[static_cast<size_t>(k)])) << k;
    }
  }
}

TEST_P(BinaryTest, OverlapsAreRejected) {
  Tensor buffer = unwrap(harness::random_tensor(backend(), dtype(), contiguous({200}), rng_));
  const AnyTensorMut whole = buffer.mut();
  auto view = [&](int64_t offset, Shape shape, Strides strides) {
    return AnyTensorMut{static_cast<char*>(whole.data) + offset * static_cast<int64_t>(dtype_size(dtype())), dtype(),
                        shape, strides, 200 - offset};
  };
  // out over a broadcast b (same first element, other shape), and shifted over a.
  const BinaryPlan plan = unwrap(BinaryPlan::select(stream(), desc(BinaryKind::add, {4, 16}, {16})));
  EXPECT_TRUE(testing::is_error(
      plan.run(stream(), {}, {view(100, {4, 16}, {16, 1}), view(0, {16}, {1}), view(0, {4, 16}, {16, 1})}),
      StatusCode::invalid_problem, "BinaryPlan", "args.out"));
  EXPECT_TRUE(testing::is_error(
      plan.run(stream(), {}, {view(1, {4, 16}, {16, 1}), view(100, {16}, {1}), view(0, {4, 16}, {16, 1})}),
      StatusCode::invalid_problem, "BinaryPlan", "args.out"));
  // Backward: da may be dout exactly, never a or b, nor db.
  const BinaryBackwardPlan backward =
      unwrap(BinaryBackwardPlan::select(stream(), desc(BinaryKind::mul, {4, 16}, {4, 16})));
  const AnyTensorMut dout = view(0, {4, 16}, {16, 1}), a = view(64, {4, 16}, {16, 1}), b = view(128, {4, 16}, {16, 1});
  EXPECT_TRUE(testing::is_error(backward.run(stream(), {}, {dout, a, b, a, AnyTensorMut{}}),
                                StatusCode::invalid_problem, "BinaryBackwardPlan", "args.da"));
  EXPECT_TRUE(testing::is_error(backward.run(stream(), {}, {dout, a, b, dout, dout}), StatusCode::invalid_problem,
                                "BinaryBackwardPlan", "args.da"));
  ASSERT_OK(backward.run(stream(), {}, {dout, a, b, dout, AnyTensorMut{}}));
}

TEST_P(BinaryTest, SkuNamesTheKindAndVariant) {
  const BinaryPlan plan = unwrap(BinaryPlan::select(stream(), desc(BinaryKind::div_floor, {128}, {128})));
  EXPECT_EQ(plan.sku().variant, std::string(backend() == Backend::cuda ? "vectorized" : "contiguous") + ".div_floor");
  EXPECT_EQ(plan.sku().op, "binary");
  const BinaryBackwardPlan backward =
      unwrap(BinaryBackwardPlan::select(stream(), desc(BinaryKind::mul, {64, 128}, {128})));
  EXPECT_EQ(backward.sku().variant, "broadcast_reduce.mul");
}

// An operand read along another dim than the output (b = c.t(), as a + c.t()): the arithmetic kinds
// take the transposed path on CUDA (tiles of 16 V, blocks of V = 16 bytes of the type, at most 8)
// from 128 tiles, below that when forced; the others and the CPU the strided one. Sizes on both sides of the path's
// minimum (16) and of a tile; a batch dim; views one element past an aligned start (piece accesses then element by
// element); the other operand broadcast along either dim; in place into a.
TEST_P(BinaryTest, TransposedOperand) {
  struct Case {
    Shape shape;     // the output's
    Strides b;       // b's strides (a transpose of a contiguous buffer)
    int64_t offset;  // both operands' and the output's
    Shape a;         // a's shape (contiguous), broadcast against the output's
    bool tiles;      // at least 128 tiles (CUDA's own choice; fewer run strided unless forced)
  };
  const std::vector<Case> cases = {{{16, 16}, {1, 16}, 0, {16, 16}, false},
                                   {{17, 200}, {1, 17}, 0, {17, 200}, false},
                                   {{65, 300}, {1, 65}, 1, {65, 300}, false},
                                   {{200, 40}, {1, 200}, 0, {200, 40}, false},
                                   {{33, 1000}, {1, 33}, 0, {33, 1000}, false},
                                   {{15, 128}, {1, 15}, 0, {15, 128}, false},
                                   {{3, 40, 50}, {2000, 1, 40}, 0, {3, 40, 50}, false},
                                   {{64, 48}, {1, 64}, 0, {48}, false},
                                   {{64, 48}, {1, 64}, 1, {64, 1}, false},
                                   {{1024, 2048}, {1, 1024}, 0, {1024, 2048}, true}};
  const bool f64 = dtype() == DType::f64;
  for (BinaryKind kind : {BinaryKind::add, BinaryKind::sub, BinaryKind::div, BinaryKind::maximum}) {
    for (const Case& c : cases) {
      // The transposed path where it serves: CUDA, an arithmetic kind, both tiled dims at least 16.
      const bool serves = backend() == Backend::cuda && kind != BinaryKind::maximum && c.shape.dims[0] != 15;
      for (const bool forced : {false, true}) {
        if (forced && (!serves || c.tiles)) continue;
        if (c.tiles && kind != BinaryKind::add) continue;
        SCOPED_TRACE(std::string(binary_kind_name(kind)) + " " + c.shape.to_string() + " offset " +
                     std::to_string(c.offset) + " a " + c.a.to_string() + (forced ? " forced" : ""));
        harness::TensorSpec bs = testing::with_strides(c.shape, c.b), as = contiguous(c.a), os = contiguous(c.shape);
        bs.offset = as.offset = os.offset = c.offset;
        const Tensor a = unwrap(harness::random_tensor(backend(), dtype(), as, rng_, 0.5, 2));
        const Tensor b = unwrap(harness::random_tensor(backend(), dtype(), bs, rng_, 0.5, 2));
        Tensor out = unwrap(harness::random_tensor(backend(), dtype(), os, rng_));
        ASSERT_OK(harness::poison(out));
        BinaryDescriptor d = desc(kind, c.a, c.shape);
        d.alpha = kind == BinaryKind::sub ? 2.0 : 1.0;
        PlanPreference pref;
        if (forced) pref.variant = "transposed";
        const BinaryPlan plan = unwrap(BinaryPlan::select(stream(), d, pref));
        const bool tiled = serves && (forced || c.tiles);
        EXPECT_EQ(plan.sku(BinaryArgs{a.ref(), b.ref(), out.mut()}).variant,
                  std::string(tiled ? "transposed." : "strided.") + std::string(binary_kind_name(kind)));
        ASSERT_OK(plan.run(stream(), {}, {a.ref(), b.ref(), out.mut()}));
        ASSERT_OK(out.download());
        const int64_t a_size = c.a.numel();  // a broadcast along rows ([48]) or columns ([64, 1])
        const int64_t cols = c.shape.dims[c.shape.rank - 1];
        auto a_at = [&](int64_t i) {
          return a_size == c.shape.numel() ? a.at(i) : a.at(c.a.rank == 1 ? i % cols : i / cols);
        };
        EXPECT_TRUE(matches(
            out, [&](int64_t i) { return reference::binary(kind, a_at(i), b.at(i), d.alpha, f64); },
            [](int64_t i) { return "element " + std::to_string(i); }));
      }
    }
  }
  // In place: out = a, b transposed.
  Tensor a = unwrap(harness::random_tensor(backend(), dtype(), contiguous({100, 64}), rng_, 0.5, 2));
  const Tensor b =
      unwrap(harness::random_tensor(backend(), dtype(), testing::with_strides({100, 64}, {1, 100}), rng_, 0.5, 2));
  const std::vector<double> saved = values(a);
  ASSERT_OK(unwrap(BinaryPlan::select(stream(), desc(BinaryKind::mul, {100, 64}, {100, 64})))
                .run(stream(), {}, {a.ref(), b.ref(), a.mut()}));
  ASSERT_OK(a.download());
  EXPECT_TRUE(matches(
      a, [&](int64_t i) { return reference::binary(BinaryKind::mul, saved[i], b.at(i), 1.0, f64); },
      [](int64_t i) { return "in place, element " + std::to_string(i); }));
  // Forced: contiguous views do not make the walk (CUDA); the CPU has no such variant.
  PlanPreference forced;
  forced.variant = "transposed";
  const Expected<BinaryPlan> plan = BinaryPlan::select(stream(), desc(BinaryKind::add, {64, 48}, {64, 48}), forced);
  if (backend() == Backend::cuda) {
    ASSERT_TRUE(plan.has_value());
    const Tensor x = unwrap(harness::random_tensor(backend(), dtype(), contiguous({64, 48}), rng_));
    Tensor y = output({64, 48});
    EXPECT_TRUE(testing::is_error(plan->run(stream(), {}, {x.ref(), x.ref(), y.mut()}), StatusCode::invalid_problem,
                                  "BinaryPlan", "preference.variant"));
  } else {
    EXPECT_FALSE(plan.has_value());
  }
}

// Scalar operands: x + 2, 2 ** x, x / 4 and their gradients (none for the scalar).
TEST_P(BinaryTest, ScalarOperands) {
  const bool f64 = dtype() == DType::f64;
  Tensor x = unwrap(harness::random_tensor(backend(), dtype(), contiguous({1000}), rng_, 0.5, 2));
  Tensor dout = unwrap(harness::random_tensor(backend(), dtype(), contiguous({1000}), rng_));
  for (BinaryKind kind : all_kinds()) {
    for (bool scalar_a : {false, true}) {
      SCOPED_TRACE(std::string(binary_kind_name(kind)) + (scalar_a ? ", a scalar" : ", b scalar"));
      BinaryDescriptor d = desc(kind, {1000}, {1000});
      (scalar_a ? d.a_scalar : d.b_scalar) = 1.25;
      Tensor out = output({1000}, out_dtype(kind, dtype())), dx = output({1000});
      const AnyTensorRef none{};
      ASSERT_OK(unwrap(BinaryPlan::select(stream(), d))
                    .run(stream(), {}, {scalar_a ? none : x.ref(), scalar_a ? x.ref() : none, out.mut()}));
      if (binary_kind_is_predicate(kind)) {
        ASSERT_OK(out.download());
        EXPECT_TRUE(matches(
            out,
            [&](int64_t i) {
              return scalar_a ? reference::binary(kind, 1.25, x.at(i), 1.0, f64)
                              : reference::binary(kind, x.at(i), 1.25, 1.0, f64);
            },
            [](int64_t i) { return "element " + std::to_string(i); }));
        continue;
      }
      ASSERT_OK(unwrap(BinaryBackwardPlan::select(stream(), d))
                    .run(stream(), {},
                         {dout.ref(), scalar_a ? none : x.ref(), scalar_a ? x.ref() : none,
                          scalar_a ? AnyTensorMut{} : dx.mut(), scalar_a ? dx.mut() : AnyTensorMut{}}));
      ASSERT_OK(out.download());
      ASSERT_OK(dx.download());
      auto where = [](int64_t i) { return "element " + std::to_string(i); };
      EXPECT_TRUE(matches(
          out,
          [&](int64_t i) {
            return scalar_a ? reference::binary(kind, 1.25, x.at(i), 1.0, f64)
                            : reference::binary(kind, x.at(i), 1.25, 1.0, f64);
          },
          where));
      EXPECT_TRUE(matches(
          dx,
          [&](int64_t i) {
            double ga = 0, gb = 0;
            if (scalar_a) {
              reference::binary_gradients(kind, dout.at(i), 1.25, x.at(i), 1.0, f64, ga, gb);
              return gb;
            }
            reference::binary_gradients(kind, dout.at(i), x.at(i), 1.25, 1.0, f64, ga, gb);
            return ga;
          },
          where));
    }
  }
}

// The predicates give bool and have no gradient: the backward's select names the kind.
TEST_P(BinaryTest, PredicatesHaveNoBackward) {
  for (BinaryKind kind : all_kinds()) {
    if (!binary_kind_is_predicate(kind)) continue;
    SCOPED_TRACE(std::string(binary_kind_name(kind)));
    EXPECT_TRUE(testing::is_error(BinaryBackwardPlan::select(stream(), desc(kind, {4}, {4})).status(),
                                  StatusCode::unsupported, "BinaryBackwardPlan", "descriptor.kind"));
    EXPECT_EQ(unwrap(BinaryPlan::select(stream(), desc(kind, {4}, {4}))).arg_specs()[2].dtype, DType::boolean);
  }
}

// Mixed dtypes: a and b compute in their promotion (PyTorch's rules), out has it. f16 / bf16 with f32
// (either side) runs without workspace; other pairs cast first, through the workspace. The values:
// small whole numbers, exact in every dtype, so the results are exact too.
TEST_P(BinaryTest, MixedDtypes) {
  const bool narrow = dtype() == DType::f16 || dtype() == DType::bf16;
  std::vector<std::pair<DType, DType>> pairs = {{dtype(), DType::i32}, {DType::i64, dtype()}};
  if (narrow) pairs.insert(pairs.end(), {{dtype(), DType::f32}, {DType::f32, dtype()}});
  if (dtype() == DType::f16) pairs.push_back({DType::f16, DType::bf16});
  if (dtype() == DType::f32) pairs.push_back({DType::f32, DType::f64});
  BinaryDescriptor d = desc(BinaryKind::sub, {40, 32}, {32});
  for (const auto& [a_dtype, b_dtype] : pairs) {
    SCOPED_TRACE(std::string(dtype_name(a_dtype)) + " with " + std::string(dtype_name(b_dtype)));
    d.dtype = a_dtype;
    d.b_dtype = b_dtype;
    const DType to = *promote_types(a_dtype, b_dtype);
    EXPECT_EQ(binary_output_dtype(d), to);
    Tensor a = unwrap(harness::random_tensor(backend(), a_dtype, contiguous(d.a_shape), rng_, -50, 50));
    Tensor b = unwrap(harness::random_tensor(backend(), b_dtype, contiguous(d.b_shape), rng_, -50, 50));
    for (double& v : a.host) v = std::round(v);
    for (double& v : b.host) v = std::round(v);
    ASSERT_OK(a.upload());
    ASSERT_OK(b.upload());
    Tensor out = output({40, 32}, to);
    const BinaryPlan plan = unwrap(BinaryPlan::select(stream(), d));
    EXPECT_EQ(plan.precision_guarantee().compute, to == DType::f64 ? DType::f64 : DType::f32);
    const bool loads_itself = is_floating(a_dtype) && is_floating(b_dtype) && to == DType::f32 &&
                              (a_dtype == DType::f32 || b_dtype == DType::f32);
    EXPECT_EQ(plan.workspace_size() == 0, loads_itself);
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan.workspace_size()));
    if (!loads_itself) {  // too little workspace: an error naming it, nothing written
      EXPECT_TRUE(testing::is_error(plan.run(stream(), {ws.data(), ws.size() - 16}, {a.ref(), b.ref(), out.mut()}),
                                    StatusCode::workspace_too_small, "BinaryPlan", "workspace.size"));
    }
    ASSERT_OK(plan.run(stream(), {ws.data(), ws.size()}, {a.ref(), b.ref(), out.mut()}));
    ASSERT_OK(out.download());
    for (int64_t i = 0, numel = out.shape.numel(); i < numel; ++i) ASSERT_EQ(out.at(i), a.at(i) - b.at(i % 32)) << i;
  }
  // The backward of floats: dout in the promoted dtype, da and db in their operands' (db summed over rows).
  if (dtype() != DType::f64) {
    d.dtype = dtype();
    d.b_dtype = dtype() == DType::f32 ? DType::f64 : DType::f32;
    const DType to = *promote_types(d.dtype, *d.b_dtype);
    Tensor a = unwrap(harness::random_tensor(backend(), d.dtype, contiguous(d.a_shape), rng_));
    Tensor b = unwrap(harness::random_tensor(backend(), *d.b_dtype, contiguous(d.b_shape), rng_));
    Tensor dout = unwrap(harness::random_tensor(backend(), to, contiguous({40, 32}), rng_, -8, 8));
    for (double& v : dout.host) v = std::round(v);
    ASSERT_OK(dout.upload());
    Tensor da = output(d.a_shape, d.dtype), db = output(d.b_shape, *d.b_dtype);
    const BinaryBackwardPlan plan = unwrap(BinaryBackwardPlan::select(stream(), d));
    EXPECT_EQ(plan.arg_specs()[0].dtype, to);
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan.workspace_size()));
    ASSERT_OK(plan.run(stream(), {ws.data(), ws.size()}, {dout.ref(), a.ref(), b.ref(), da.mut(), db.mut()}));
    ASSERT_OK(da.download());
    ASSERT_OK(db.download());
    for (int64_t i = 0, numel = da.shape.numel(); i < numel; ++i) ASSERT_EQ(da.at(i), dout.at(i)) << i;
    for (int64_t j = 0; j < 32; ++j) {
      double sum = 0;
      for (int64_t r = 0; r < 40; ++r) sum -= dout.at(r * 32 + j);
      ASSERT_EQ(db.at(j), sum) << j;  // (whole numbers below 2^11: exact in every dtype)
    }
    d.b_dtype = DType::i32;  // an integer has no gradient
    EXPECT_TRUE(testing::is_error(BinaryBackwardPlan::select(stream(), d).status(), StatusCode::unsupported,
                                  "BinaryBackwardPlan", "descriptor.b_dtype"));
  }
  d.dtype = dtype();
  d.b_dtype = DType::i32;
  d.b_scalar = 2.0;
  EXPECT_TRUE(testing::is_error(BinaryPlan::select(stream(), d).status(), StatusCode::invalid_problem, "BinaryPlan",
                                "descriptor.b_dtype"));
  d.b_scalar = std::nullopt;
  d.kind = BinaryKind::bitwise_and;  // promoted to a float: bitwise_and does not take it
  EXPECT_TRUE(testing::is_error(BinaryPlan::select(stream(), d).status(), StatusCode::unsupported, "BinaryPlan",
                                "descriptor.b_dtype"));
  d.dtype = DType::u8;  // u8 with i8: i16, no dtype here
  d.b_dtype = DType::i8;
  EXPECT_TRUE(testing::is_error(BinaryPlan::select(stream(), d).status(), StatusCode::unsupported, "BinaryPlan",
                                "descriptor.b_dtype"));
}

INSTANTIATE_TEST_SUITE_P(Binary, BinaryTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

}  // namespace
}  // namespace baracuda

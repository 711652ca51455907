// Copy family: what the op table's random samples cannot reach, on every backend and every dtype of
// x. Special values (NaN, +-inf, +-0, subnormals, rounding ties, the ends of the integer ranges, and
// the values a rounding through f32 would get wrong) cast to every dtype, against the f64 reference
// bit for bit (the sign of zero too); the in-place copy; the overlap rejected, naming y; the SKU
// naming the dtypes and the path; fill's exact integers and special values.
#include <cmath>
#include <limits>

#include "harness/reference/copy_reference.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::contiguous;
using testing::unwrap;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr DType kAll[] = {DType::f32, DType::f64, DType::f16, DType::bf16,   DType::i8,
                          DType::u8,  DType::i32, DType::i64, DType::boolean};

// Values that test a conversion's edges, where x's dtype holds them.
std::vector<double> specials(DType x) {
  switch (x) {
    case DType::boolean:
      return {0, 1};
    case DType::i8:
      return {0, 1, -1, 127, -128, 100, -100};
    case DType::u8:
      return {0, 1, 127, 128, 255};
    case DType::i32:
      return {0, 1, -1, 2147483647.0, -2147483648.0, 16777217, 16777219, -16777217, 65520, 65519, 300, -129};
    case DType::i64:
      // 2^40 + 2^32 + 1: above bf16's midpoint by 1, which a rounding through f32 loses (it would tie
      // to even, down); 2^53 + 2: exact in f64.
      return {0,
              1,
              -1,
              0x1p40 + 0x1p32 + 1,
              -(0x1p40 + 0x1p32 + 1),
              0x1p53 + 2,
              0x1p62,
              -0x1p63,
              16777217,
              0x1p31,
              -0x1p31 - 1,
              0x1p32 + 1,
              65520,
              255,
              256};
    default:
      // 1 + 2^-8 + 2^-30: above bf16's midpoint, which f32 cannot see (PyTorch's f64 -> f32 -> bf16
      // ties to even, down). 65520 and 65519.99: f16's overflow edge. 2^-25 and 3 * 2^-26: f16's
      // subnormal ties.
      return {0.0,    -0.0,     kInf,    -kInf,       kNaN,   1.0 + 0x1p-8 + 0x1p-30,
              65520,  65519.99, 0x1p-25, 3 * 0x1p-26, 1e-45,  5e-324,
              1e39,   -1e39,    2.5,     -2.5,        3.99,   -3.99,
              300,    -300,     255.5,   -0.5,        0x1p31, -0x1p31 - 1,
              0x1p63, -0x1p63,  1e19,    1e-40,       0.1,    1.0 + 0x1p-8};
  }
}

bool same(double got, double want, DType out) {
  if (std::isnan(want)) return std::isnan(got);
  if (got != want) return false;
  return !is_floating(out) || std::signbit(got) == std::signbit(want);
}

class CopyTest : public testing::BackendDTypeTest {
 protected:
  Tensor tensor_of(DType dtype, const std::vector<double>& v) {
    Tensor t = unwrap(harness::random_tensor(backend(), dtype, contiguous({static_cast<int64_t>(v.size())}), rng_));
    for (size_t i = 0; i < v.size(); ++i) t.host[i] = harness::quantize(dtype, v[i]);
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  }
  Tensor output(DType dtype, Shape shape) {
    Tensor t = unwrap(harness::random_tensor(backend(), dtype, contiguous(shape), rng_));
    EXPECT_TRUE(harness::poison(t).is_ok());
    return t;
  }
  CastDescriptor cast_desc(DType to, Shape shape) const {
    CastDescriptor d;
    d.dtype = dtype();
    d.out_dtype = to;
    d.shape = shape;
    return d;
  }
};

TEST_P(CopyTest, SpecialValuesCastToEveryDtypeExactly) {
  const Tensor x = tensor_of(dtype(), specials(dtype()));
  for (DType to : kAll) {
    SCOPED_TRACE(std::string("to ") + std::string(dtype_name(to)));
    Tensor y = output(to, x.shape);
    CastPlan plan = unwrap(CastPlan::select(stream(), cast_desc(to, x.shape)));
    ASSERT_TRUE(plan.run(stream(), {}, {x.ref(), y.mut()}).is_ok());
    ASSERT_TRUE(stream().synchronize());
    ASSERT_TRUE(y.download().is_ok());
    for (int64_t i = 0, numel = x.shape.numel(); i < numel; ++i) {
      const double want = reference::convert_value(x.at(i), dtype(), to);
      EXPECT_TRUE(same(y.at(i), want, to)) << "x = " << x.at(i) << ": got " << y.at(i) << ", want " << want;
    }
  }
}

TEST_P(CopyTest, InPlaceCopyKeepsTheValues) {
  Tensor x = tensor_of(dtype(), specials(dtype()));
  const std::vector<double> before = x.host;
  CastPlan plan = unwrap(CastPlan::select(stream(), cast_desc(dtype(), x.shape)));
  ASSERT_TRUE(plan.run(stream(), {}, {x.ref(), x.mut()}).is_ok());
  ASSERT_TRUE(stream().synchronize());
  ASSERT_TRUE(x.download().is_ok());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(same(x.host[i], before[i], dtype())) << i;
}

TEST_P(CopyTest, OverlapBetweenDtypesIsAnErrorNamingY) {
  if (dtype() == DType::f64 || dtype() == DType::i64) GTEST_SKIP() << "needs a narrower type to alias";
  Tensor x = tensor_of(dtype(), std::vector<double>(64, 1.0));
  const DType wider = DType::f64;
  AnyTensorMut y = x.mut();
  y.dtype = wider;
  y.shape = {8};
  y.capacity = 8;
  CastPlan plan = unwrap(CastPlan::select(stream(), cast_desc(wider, {8})));
  AnyTensorRef xs = x.ref();
  xs.shape = {8};
  EXPECT_TRUE(testing::is_error(plan.run(stream(), {}, {xs, y}), StatusCode::invalid_problem, "CastPlan", "args.y"));
}

TEST_P(CopyTest, SkuNamesThePathAndTheDtypes) {
  const DType to = dtype() == DType::f32 ? DType::bf16 : DType::f32;
  const std::string pair = std::string(dtype_name(dtype())) + "_to_" + std::string(dtype_name(to));
  CastPlan plan = unwrap(CastPlan::select(stream(), cast_desc(to, {64, 48})));
  EXPECT_EQ(plan.sku().variant, (backend() == Backend::cuda ? "vectorized." : "contiguous.") + pair);
  // x the transpose of a contiguous [48, 64]: the transposed path on the CPU; on CUDA the strided one
  // (one tile, fewer than kMinTransposedTiles, 128), and the transposed one from 128 tiles (16 V
  // elements a side, V = 16 bytes of the wider dtype, at most 8).
  Tensor x = unwrap(harness::random_tensor(backend(), dtype(), testing::with_strides({64, 48}, {1, 64}), rng_));
  Tensor y = output(to, {64, 48});
  EXPECT_EQ(plan.sku(CastArgs{x.ref(), y.mut()}).variant,
            (backend() == Backend::cuda ? "strided." : "transposed.") + pair);
  const int64_t side =
      16 * std::min<int64_t>(8, 16 / static_cast<int64_t>(std::max(dtype_size(dtype()), dtype_size(to))));
  for (const int64_t rows : {8 * side, 7 * side}) {  // 8 x 16 tiles, then 7 x 16
    const Shape shape{rows, 16 * side};
    const Tensor tx = unwrap(harness::random_tensor(backend(), dtype(), testing::with_strides(shape, {1, rows}), rng_));
    Tensor ty = output(to, shape);
    const CastPlan tiles = unwrap(CastPlan::select(stream(), cast_desc(to, shape)));
    const bool enough = rows == 8 * side || backend() != Backend::cuda;
    EXPECT_EQ(tiles.sku(CastArgs{tx.ref(), ty.mut()}).variant, (enough ? "transposed." : "strided.") + pair)
        << shape.to_string();
  }
  // Forced onto a contiguous x, it names the variant.
  PlanPreference forced;
  forced.variant = "transposed";
  CastPlan transpose = unwrap(CastPlan::select(stream(), cast_desc(to, {64, 48}), forced));
  const Tensor x2 = unwrap(harness::random_tensor(backend(), dtype(), contiguous({64, 48}), rng_));
  EXPECT_TRUE(testing::is_error(transpose.run(stream(), {}, {x2.ref(), y.mut()}), StatusCode::invalid_problem,
                                "CastPlan", "preference.variant"));
}

// The transposed path on views one element past an aligned start (x's loads and y's stores element
// by element; at offset 0 where x's rows are whole pieces, by vectors), with x's unit dim Q in and past
// a thread's block.
TEST_P(CopyTest, TransposeOfMisalignedViews) {
  const DType to = dtype() == DType::f32 ? DType::bf16 : dtype();
  for (int64_t q : {16, 17, 40, 65}) {
    for (int64_t offset : {0, 1}) {
      const Shape shape{q, 40};  // y's rows whole pieces at offset 0 (vector stores), not at 1
      harness::TensorSpec xs = testing::with_strides(shape, {1, q});
      xs.offset = offset;
      harness::TensorSpec ys = contiguous(shape);
      ys.offset = offset;
      const bool boolean = dtype() == DType::boolean;  // bytes 0 and 1 only
      const Tensor x =
          unwrap(harness::random_tensor(backend(), dtype(), xs, rng_, boolean ? 0 : -100, boolean ? 2 : 100));
      Tensor y = unwrap(harness::random_tensor(backend(), to, ys, rng_));
      ASSERT_TRUE(harness::poison(y).is_ok());
      PlanPreference forced;  // (CUDA takes these few tiles strided by itself)
      forced.variant = "transposed";
      CastPlan plan = unwrap(CastPlan::select(stream(), cast_desc(to, shape), forced));
      const std::string variant = plan.sku(CastArgs{x.ref(), y.mut()}).variant;
      SCOPED_TRACE("q " + std::to_string(q) + ", offset " + std::to_string(offset) + ": " + variant);
      EXPECT_EQ(variant.rfind("transposed.", 0), 0u);
      ASSERT_TRUE(plan.run(stream(), {}, {x.ref(), y.mut()}).is_ok());
      ASSERT_TRUE(stream().synchronize());
      ASSERT_TRUE(y.download().is_ok());
      for (int64_t i = 0, numel = shape.numel(); i < numel; ++i) {
        const double want = reference::convert_value(x.at(i), dtype(), to);
        ASSERT_TRUE(same(y.at(i), want, to)) << "element " << i << ": got " << y.at(i) << ", want " << want;
      }
    }
  }
}

TEST_P(CopyTest, FillTakesSpecialValuesAndExactIntegers) {
  const Shape shape{1000};
  auto run = [&](FillDescriptor d) {
    Tensor y = output(d.dtype, shape);
    FillPlan plan = unwrap(FillPlan::select(stream(), d));
    EXPECT_TRUE(plan.run(stream(), {}, {y.mut()}).is_ok());
    EXPECT_TRUE(stream().synchronize());
    EXPECT_TRUE(y.download().is_ok());
    return y;
  };
  FillDescriptor d;
  d.dtype = dtype();
  d.shape = shape;
  const bool floating = is_floating(dtype());
  for (double v : {0.0, -0.0, 0.5, 2.75, kNaN, -kInf, 1e-40}) {
    if (!floating && !std::isfinite(v)) continue;
    d.value = v;
    const Tensor y = run(d);
    const double want = reference::convert_value(v, DType::f64, dtype());
    for (int64_t i = 0, numel = shape.numel(); i < numel; ++i)
      ASSERT_TRUE(same(y.at(i), want, dtype())) << "fill " << v << " element " << i << ": got " << y.at(i);
  }
  if (dtype() == DType::i64) {
    d.integer_value = (int64_t{1} << 62) + 1;  // not a double
    const Tensor y = run(d);
    // The mirror holds doubles: check the bytes.
    std::vector<int64_t> got(static_cast<size_t>(shape.numel()));
    ASSERT_TRUE(y.buffer.download(got.data(), got.size() * sizeof(int64_t)).is_ok());
    for (int64_t v : got) ASSERT_EQ(v, *d.integer_value);
  }
}

INSTANTIATE_TEST_SUITE_P(AllBackends, CopyTest,
                         ::testing::ValuesIn(testing::cases_of({DType::f32, DType::f64, DType::f16, DType::bf16,
                                                                DType::i8, DType::u8, DType::i32, DType::i64,
                                                                DType::boolean})),
                         testing::case_name);

}  // namespace
}  // namespace baracuda

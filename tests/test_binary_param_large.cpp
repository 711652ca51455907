// Elementwise ops past 2^31 elements on the GPU: lerp's 64-bit indexing in the vectorized and the
// strided kernels; a + b with b broadcast across the flat rows kernel's launches (kFlatLaunchVectors,
// 2^28 vectors of whole rows a launch) and on a row longer than a launch (the row kernel).
#include <cstring>

#include "harness/reference/binary_param_reference.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using testing::unwrap;

// Cheap, well-mixed pseudo-random bf16 values in [-1, 1): host fills of 2^31 elements stay fast.
uint16_t random_bf16(uint64_t i, uint64_t seed) {
  uint64_t z = (i + seed) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
  z ^= z >> 29;
  const float f = static_cast<float>(z >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f;
  return bfloat16(f).bits;
}

TEST(BinaryParamLarge, LerpPastTwoToThe31Elements) {
  BARACUDA_SKIP_UNLESS_AVAILABLE(Backend::cuda);
  const int64_t n = (int64_t{1} << 31) + 4099;  // past 2^31, not a multiple of the vector width
  const size_t bytes = static_cast<size_t>(n) * 2;
  std::vector<uint16_t> a(n), b(n), out(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = random_bf16(i, 1);
    b[i] = random_bf16(i, 2);
  }
  harness::Buffer da = unwrap(harness::Buffer::allocate(Backend::cuda, bytes));
  harness::Buffer db = unwrap(harness::Buffer::allocate(Backend::cuda, bytes));
  harness::Buffer dout = unwrap(harness::Buffer::allocate(Backend::cuda, bytes));
  ASSERT_OK(da.upload(a.data(), bytes));
  ASSERT_OK(db.upload(b.data(), bytes));
  const double w = 0.3;
  const BinaryParamDescriptor desc{DType::bf16, {n}, WeightMode::scalar, w, {}};
  const BinaryParamArgs args{AnyTensorRef::contiguous(da.data(), DType::bf16, {n}),
                             AnyTensorRef::contiguous(db.data(), DType::bf16, {n}),
                             {},
                             AnyTensorMut::contiguous(dout.data(), DType::bf16, {n})};
  // The vectorized kernel on a 1-D view, then the strided kernel on a 2-D view of the same bytes.
  for (const char* variant : {"", "strided"}) {
    SCOPED_TRACE(variant);
    PlanPreference pref;
    pref.variant = variant;
    LerpPlan plan = unwrap(LerpPlan::select(Stream::cuda(), desc, pref));
    std::fill(out.begin(), out.end(), uint16_t{0xffff});  // NaN
    ASSERT_OK(dout.upload(out.data(), bytes));
    ASSERT_OK(plan.run(Stream::cuda(), {}, args));
    ASSERT_TRUE(Stream::cuda().synchronize());
    ASSERT_OK(dout.download(out.data(), bytes));
    int64_t bad = 0, checked = 0;
    auto check = [&](int64_t i) {
      const double want = reference::lerp(static_cast<float>(bfloat16::from_bits(a[i])),
                                          static_cast<float>(bfloat16::from_bits(b[i])), w);
      const double got = static_cast<float>(bfloat16::from_bits(out[i]));
      ++checked;
      if (!(std::fabs(got - want) <= harness::tolerance(DType::bf16) * (1 + std::fabs(want)))) ++bad;
    };
    for (int64_t i = 0; i < n; i += 997) check(i);                     // a sample throughout
    for (int64_t i = (int64_t{1} << 31) - 4096; i < n; ++i) check(i);  // across 2^31 to the end
    EXPECT_EQ(bad, 0) << "of " << checked << " checked elements";
  }
}

// bf16 a + b, b broadcast: [2^21 + 3, 1024] + [2^21 + 3, 1] takes two launches of the flat rows kernel
// (2^21 rows of 128 vectors a launch), [2^31 + 8] + [1] one row of 2^28 + 1 vectors, the row kernel.
TEST(BinaryLarge, BroadcastRowsPastTheFlatKernelsLaunch) {
  BARACUDA_SKIP_UNLESS_AVAILABLE(Backend::cuda);
  const int64_t rows = (int64_t{1} << 21) + 3;
  const std::pair<Shape, Shape> cases[] = {{{rows, 1024}, {rows, 1}}, {{(int64_t{1} << 31) + 8}, {1}}};
  for (const auto& [a_shape, b_shape] : cases) {
    const int64_t n = a_shape.numel(), nb = b_shape.numel(), inner = a_shape.dims[a_shape.rank - 1];
    SCOPED_TRACE(std::to_string(n) + " elements");
    std::vector<uint16_t> a(n), b(nb), out(n, uint16_t{0xffff});  // out: NaN
    for (int64_t i = 0; i < n; ++i) a[i] = random_bf16(i, 3);
    for (int64_t i = 0; i < nb; ++i) b[i] = random_bf16(i, 4);
    harness::Buffer da = unwrap(harness::Buffer::allocate(Backend::cuda, size_t(n) * 2));
    harness::Buffer db = unwrap(harness::Buffer::allocate(Backend::cuda, size_t(nb) * 2));
    harness::Buffer dout = unwrap(harness::Buffer::allocate(Backend::cuda, size_t(n) * 2));
    ASSERT_OK(da.upload(a.data(), size_t(n) * 2));
    ASSERT_OK(db.upload(b.data(), size_t(nb) * 2));
    ASSERT_OK(dout.upload(out.data(), size_t(n) * 2));
    BinaryDescriptor desc;
    desc.kind = BinaryKind::add;
    desc.dtype = DType::bf16;
    desc.a_shape = a_shape;
    desc.b_shape = b_shape;
    const BinaryPlan plan = unwrap(BinaryPlan::select(Stream::cuda(), desc));
    ASSERT_OK(plan.run(Stream::cuda(), {},
                       {AnyTensorRef::contiguous(da.data(), DType::bf16, a_shape),
                        AnyTensorRef::contiguous(db.data(), DType::bf16, b_shape),
                        AnyTensorMut::contiguous(dout.data(), DType::bf16, a_shape)}));
    ASSERT_TRUE(Stream::cuda().synchronize());
    ASSERT_OK(dout.download(out.data(), size_t(n) * 2));
    int64_t bad = 0, checked = 0;
    auto check = [&](int64_t i) {
      const float x = static_cast<float>(bfloat16::from_bits(a[i]));
      const float y = static_cast<float>(bfloat16::from_bits(b[nb == 1 ? 0 : i / inner]));
      const double want = static_cast<float>(bfloat16(x + y)), got = static_cast<float>(bfloat16::from_bits(out[i]));
      ++checked;
      if (!(got == want)) ++bad;
    };
    for (int64_t i = 0; i < n; i += 997) check(i);  // throughout
    for (int64_t i = (int64_t{1} << 31) - 4096; i < std::min(n, (int64_t{1} << 31) + 4096); ++i)
      check(i);                                       // a launch's end
    for (int64_t i = n - 4096; i < n; ++i) check(i);  // the end
    EXPECT_EQ(bad, 0) << "of " << checked << " checked elements";
  }
}

}  // namespace
}  // namespace baracuda

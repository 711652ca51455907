// The random family's contract beyond the op table (tools/harness/rows/random.cpp): Philox's known
// answers (Random123's test vectors), a tensor written whole equal to its pieces written at their
// offsets, the CPU's bits equal to the GPU's, the moments of uniform and bernoulli, and dropout's
// backward regenerating the forward's mask; randperm a permutation, uniform, the same on both backends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "cuda/device/philox.h"
#include "harness/data.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::unwrap;

TEST(Philox, KnownAnswers) {
  using device::Philox4;
  const Philox4 zero = device::philox4x32_10({{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(zero.v[0], 0x6627e8d5u);
  EXPECT_EQ(zero.v[1], 0xe169c58du);
  EXPECT_EQ(zero.v[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.v[3], 0x9b00dbd8u);
  const Philox4 ones = device::philox4x32_10({{~0u, ~0u, ~0u, ~0u}}, ~0u, ~0u);
  EXPECT_EQ(ones.v[0], 0x408f276du);
  EXPECT_EQ(ones.v[3], 0x6d5451fdu);
  const Philox4 pi =
      device::philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(pi.v[0], 0xd16cfe09u);
  EXPECT_EQ(pi.v[1], 0x94fdccebu);
  EXPECT_EQ(pi.v[2], 0x5001e420u);
  EXPECT_EQ(pi.v[3], 0x24126ea1u);
}

// The library's own log and sin / cos (philox.h: the same bits on both backends) against the C
// library's on dense grids: f64 within 4 ulps of log and 2^-49 of cos / sin (absolute; near a zero
// of cos the relative error of any reduction grows); f32 within 4 ulps and 5e-7.
TEST(Philox, PortableLogAndSinCosAreAccurate) {
  double worst_log = 0, worst_trig = 0;
  for (int i = 1; i <= 200000; ++i) {
    const double x = std::ldexp(static_cast<double>(i), -17) / (200000.0 / 131072.0);  // (0, 1]
    for (double v : {x, std::ldexp(x, -40), 1.0 - std::ldexp(static_cast<double>(i), -53)}) {
      const double want = std::log(v);
      if (want != 0) worst_log = std::max(worst_log, std::fabs(device::portable_log(v) - want) / std::fabs(want));
    }
    const double u = (i - 1) / 200000.0;  // [0, 1)
    double c, s;
    device::portable_sincos_2pi(u, c, s);
    worst_trig = std::max({worst_trig, std::fabs(c - std::cos(2 * M_PI * u)), std::fabs(s - std::sin(2 * M_PI * u))});
  }
  EXPECT_LE(worst_log, 4 * 0x1p-53);
  EXPECT_LE(worst_trig, 0x1p-49);
  EXPECT_EQ(device::portable_log(1.0), 0.0);
  // The f32 forms (f32 and 16-bit outputs) on every input they take: u = k 2^-24.
  double worst_log_f32 = 0, worst_trig_f32 = 0;
  for (int k = 0; k < (1 << 24); k += 7) {
    const float u = static_cast<float>(k) * 0x1p-24f;
    const float x = 1.0f - u;  // [2^-24, 1]
    const double want = std::log(static_cast<double>(x));
    if (want != 0)
      worst_log_f32 = std::max(worst_log_f32, std::fabs(device::portable_log_f32(x) - want) / std::fabs(want));
    float c, s;
    device::portable_sincos_2pi_f32(u, c, s);
    worst_trig_f32 =
        std::max({worst_trig_f32, std::fabs(c - std::cos(2 * M_PI * u)), std::fabs(s - std::sin(2 * M_PI * u))});
  }
  EXPECT_LE(worst_log_f32, 4 * 0x1p-24);
  EXPECT_LE(worst_trig_f32, 5e-7);
  EXPECT_EQ(device::portable_log_f32(1.0f), 0.0f);
  EXPECT_NEAR(device::portable_log(0x1p-53), -53 * std::log(2.0), 1e-13);
}

class RandomTest : public testing::BackendDTypeTest {
 protected:
  Tensor draw(RandomDescriptor d, const harness::TensorSpec& spec, const Stream& s) {
    Tensor t = unwrap(harness::random_tensor(backend_of(s), d.dtype, spec, rng_));
    EXPECT_TRUE(harness::poison(t).is_ok());
    RandomPlan plan = unwrap(RandomPlan::select(s, d));
    EXPECT_TRUE(plan.run(s, {}, {t.mut()}).is_ok());
    EXPECT_TRUE(t.download().is_ok());
    return t;
  }
  static Backend backend_of(const Stream& s) { return s.backend(); }
  RandomDescriptor uniform(Shape shape) {
    RandomDescriptor d;
    d.dtype = dtype();
    d.shape = shape;
    d.seed = 0x1234567890abcdefull;
    d.offset = 99;
    return d;
  }
};

TEST_P(RandomTest, PiecesAtTheirOffsetsAreTheWhole) {
  const int64_t rows = 100, cols = 64;
  RandomDescriptor whole = uniform({rows, cols});
  const Tensor all = draw(whole, testing::contiguous(whole.shape), stream());
  for (int64_t first : {int64_t{0}, int64_t{37}}) {
    RandomDescriptor piece = uniform({rows - first, cols});
    piece.offset = whole.offset + static_cast<uint64_t>(first * cols);
    const Tensor part = draw(piece, testing::contiguous(piece.shape), stream());
    for (int64_t i = 0, numel = piece.shape.numel(); i < numel; ++i)
      ASSERT_EQ(part.at(i), all.at(first * cols + i)) << first << ", " << i;
  }
}

TEST_P(RandomTest, TheCpuAndTheGpuDrawTheSameBits) {
  if (backend() != Backend::cuda) GTEST_SKIP() << "compares the CUDA backend with the CPU's";
  for (RandomKind kind : {RandomKind::uniform, RandomKind::bernoulli, RandomKind::normal, RandomKind::exponential}) {
    RandomDescriptor d = uniform({333, 77});
    d.kind = kind;
    d.p = 0.37;
    const Tensor gpu = draw(d, testing::contiguous(d.shape), stream());
    const Tensor cpu = draw(d, testing::contiguous(d.shape), Stream::host());
    for (int64_t i = 0, numel = d.shape.numel(); i < numel; ++i) ASSERT_EQ(gpu.at(i), cpu.at(i)) << random_kind_name(kind) << " " << i;
  }
  DropoutDescriptor dd;
  dd.dtype = dtype();
  dd.shape = {300, 50};
  dd.p = 0.2;
  Tensor x = unwrap(harness::random_tensor(Backend::cpu, dtype(), testing::contiguous(dd.shape), rng_));
  Tensor xg = unwrap(harness::random_tensor(Backend::cuda, dtype(), testing::contiguous(dd.shape), rng_));
  xg.host = x.host;
  ASSERT_OK(xg.upload());
  Tensor y = unwrap(harness::random_tensor(Backend::cpu, dtype(), testing::contiguous(dd.shape), rng_));
  Tensor yg = unwrap(harness::random_tensor(Backend::cuda, dtype(), testing::contiguous(dd.shape), rng_));
  ASSERT_OK(unwrap(DropoutPlan::select(Stream::host(), dd)).run(Stream::host(), {}, {x.ref(), y.mut(), {}}));
  ASSERT_OK(unwrap(DropoutPlan::select(stream(), dd)).run(stream(), {}, {xg.ref(), yg.mut(), {}}));
  ASSERT_OK(y.download());
  ASSERT_OK(yg.download());
  for (int64_t i = 0, numel = dd.shape.numel(); i < numel; ++i) ASSERT_EQ(y.at(i), yg.at(i)) << i;
}

TEST_P(RandomTest, MomentsOfUniformAndBernoulli) {
  const int64_t n = 1 << 20;
  const Tensor u = draw(uniform({n}), testing::contiguous({n}), stream());
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) mean += u.at(i) / n;
  for (int64_t i = 0; i < n; ++i) var += (u.at(i) - mean) * (u.at(i) - mean) / n;
  // Standard errors: 1/sqrt(12 n) = 2.8e-4 for the mean, ~8e-5 for the variance; 16-bit rounding
  // moves the mean by about its unit roundoff / 4.
  EXPECT_NEAR(mean, 0.5, 2e-3);
  EXPECT_NEAR(var, 1.0 / 12, 2e-3);
  RandomDescriptor b = uniform({n});
  b.kind = RandomKind::bernoulli;
  b.p = 0.3;
  const Tensor bits = draw(b, testing::contiguous({n}), stream());
  double ones = 0;
  for (int64_t i = 0; i < n; ++i) ones += bits.at(i);
  EXPECT_NEAR(ones / n, 0.3, 5 * std::sqrt(0.3 * 0.7 / n));
  RandomDescriptor g = uniform({n});
  g.kind = RandomKind::normal;
  g.mean = 1.5;
  g.std = 2.0;
  const Tensor z = draw(g, testing::contiguous({n}), stream());
  double zm = 0, zv = 0;
  for (int64_t i = 0; i < n; ++i) zm += z.at(i) / n;
  for (int64_t i = 0; i < n; ++i) zv += (z.at(i) - zm) * (z.at(i) - zm) / n;
  EXPECT_NEAR(zm, 1.5, 0.01);  // standard error 2 / 1024
  EXPECT_NEAR(zv, 4.0, 0.03);  // about 4 sqrt(2 / n) = 0.0055
  RandomDescriptor x = uniform({n});
  x.kind = RandomKind::exponential;
  x.lambda = 4.0;
  const Tensor e = draw(x, testing::contiguous({n}), stream());
  double em = 0;
  for (int64_t i = 0; i < n; ++i) em += e.at(i) / n;
  EXPECT_NEAR(em, 0.25, 0.0025);  // standard error 0.25 / 1024
}

TEST_P(RandomTest, DropoutBackwardRegeneratesTheForwardsMask) {
  DropoutDescriptor d;
  d.dtype = dtype();
  d.shape = {129, 65};
  d.p = 0.4;
  d.seed = 5;
  d.offset = 12345;
  Tensor x = unwrap(harness::random_tensor(backend(), dtype(), testing::contiguous(d.shape), rng_, 0.5, 1.5));
  Tensor y = unwrap(harness::random_tensor(backend(), dtype(), testing::contiguous(d.shape), rng_));
  Tensor mask = unwrap(harness::random_tensor(backend(), DType::boolean, testing::contiguous(d.shape), rng_));
  Tensor dx = unwrap(harness::random_tensor(backend(), dtype(), testing::contiguous(d.shape), rng_));
  ASSERT_OK(unwrap(DropoutPlan::select(stream(), d)).run(stream(), {}, {x.ref(), y.mut(), mask.mut()}));
  ASSERT_OK(unwrap(DropoutBackwardPlan::select(stream(), d)).run(stream(), {}, {x.ref(), dx.mut()}));
  ASSERT_OK(y.download());
  ASSERT_OK(mask.download());
  ASSERT_OK(dx.download());
  int64_t kept = 0;
  for (int64_t i = 0, numel = d.shape.numel(); i < numel; ++i) {
    ASSERT_EQ(dx.at(i), y.at(i)) << i;              // dy = x: the same products
    ASSERT_EQ(mask.at(i) != 0, y.at(i) != 0) << i;  // x in [0.5, 1.5): kept values are nonzero
    kept += mask.at(i) != 0;
  }
  EXPECT_NEAR(static_cast<double>(kept) / d.shape.numel(), 0.6, 0.03);
}

INSTANTIATE_TEST_SUITE_P(Random, RandomTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

class RandpermTest : public testing::BackendDTypeTest {
 protected:
  // The permutation of (n, seed, offset) drawn on stream s, as downloaded.
  std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t offset, const Stream& s) {
    RandpermDescriptor d;
    d.dtype = dtype();
    d.n = n;
    d.seed = seed;
    d.offset = offset;
    const RandpermPlan plan = unwrap(RandpermPlan::select(s, d));
    Tensor out = unwrap(harness::random_tensor(s.backend(), dtype(), testing::contiguous({n}), rng_));
    harness::Buffer workspace =
        unwrap(harness::Buffer::allocate(s.backend(), std::max<size_t>(plan.workspace_size(), 1)));
    EXPECT_TRUE(plan.run(s, {workspace.data(), workspace.size()}, {out.mut()}).is_ok());
    EXPECT_TRUE(out.download().is_ok());
    std::vector<int64_t> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<int64_t>(out.at(i));
    return values;
  }
};

TEST_P(RandpermTest, EveryValueOnceAndTheSameForTheSameSeedAndOffset) {
  for (int64_t n : {1, 2, 1000, 70001}) {
    const std::vector<int64_t> p = permutation(n, 17, 5, stream());
    std::vector<int64_t> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i) << "n " << n;
    EXPECT_EQ(permutation(n, 17, 5, stream()), p);
    if (n >= 1000) {
      EXPECT_NE(permutation(n, 17, 5 + static_cast<uint64_t>(n), stream()), p);
    }
  }
}

// Each of the 3! permutations of 3 values about as often as the others over 3000 draws at offsets
// 3 apart: chi-square with 5 degrees of freedom below 25 (p about 1.4e-4 for a uniform draw).
TEST_P(RandpermTest, EveryPermutationEquallyLikely) {
  std::vector<int> counts(9, 0);
  const int draws = 3000;
  for (int k = 0; k < draws; ++k) {
    const std::vector<int64_t> p = permutation(3, 2024, 3 * static_cast<uint64_t>(k), stream());
    ++counts[static_cast<size_t>(p[0] * 3 + p[1])];
  }
  double chi2 = 0;
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 3; ++b)
      if (a != b) chi2 += std::pow(counts[static_cast<size_t>(a * 3 + b)] - draws / 6.0, 2) / (draws / 6.0);
  EXPECT_LT(chi2, 25.0);
}

TEST_P(RandpermTest, TheCpuAndTheGpuDrawTheSamePermutation) {
  if (backend() != Backend::cuda) GTEST_SKIP() << "compares the CUDA backend with the CPU's";
  EXPECT_EQ(permutation(70001, 9, 123, stream()), permutation(70001, 9, 123, Stream::host()));
}

INSTANTIATE_TEST_SUITE_P(Random, RandpermTest, ::testing::ValuesIn(testing::cases_of({DType::i32, DType::i64})),
                         testing::case_name);

}  // namespace
}  // namespace baracuda

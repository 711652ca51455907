// The random family's contract beyond the op table (tools/harness/rows/random.cpp): Philox's known
// answers (Random123's test vectors), a tensor written whole equal to its pieces written at their
// offsets, the CPU's bits equal to the GPU's, the moments of uniform and bernoulli, and dropout's
// backward regenerating the forward's mask; randperm a permutation, uniform, the same on both backends;
// multinomial's counts against its weights, its draws the contract's, bad rows and views.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "cuda/device/philox.h"
#include "cuda/device/random_draw.h"
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

// randint's remainder without a division (random_draw.h) is bits % range for every range the plan
// takes: the edges (1, powers of two and their neighbours, 2^32 - 1, 2^32) and random ranges, each with
// the edge bits and random ones.
TEST(Philox, RemainderByMultiplicationIsTheModulo) {
  std::vector<uint64_t> ranges = {1,
                                  2,
                                  3,
                                  5,
                                  7,
                                  1000,
                                  65535,
                                  65536,
                                  65537,
                                  (1ull << 31) - 1,
                                  1ull << 31,
                                  (1ull << 31) + 1,
                                  0xFFFFFFFEull,
                                  0xFFFFFFFFull,
                                  1ull << 32};
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 32);
  };
  for (int i = 0; i < 2000; ++i) ranges.push_back((next() >> (next() % 32)) + uint64_t{1});
  for (uint64_t range : ranges) {
    const uint64_t magic = ~uint64_t{0} / range + 1;  // as ops/random.cpp sets it
    std::vector<uint32_t> bits = {0, 1, 0xFFFFFFFFu, 0xFFFFFFFEu, 0x80000000u};
    if (range <= 0xFFFFFFFFull)
      for (uint64_t b : std::initializer_list<uint64_t>{range - 1, range, range + 1, 2 * range - 1,
                                                        uint64_t{0xFFFFFFFF} / range * range - 1})
        if (b <= 0xFFFFFFFFull) bits.push_back(static_cast<uint32_t>(b));
    for (int k = 0; k < 500; ++k) bits.push_back(next());
    for (uint32_t b : bits) ASSERT_EQ(device::random_below(b, range, magic), b % range) << b << " mod " << range;
  }
}

// The library's own log and sin / cos (philox.h: the same bits on both backends) against the C
// library's on dense grids: f64 within 4 ulps of log and 2^-49 of cos / sin (absolute; near a zero
// of cos the relative error of any reduction grows).
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
  EXPECT_NEAR(device::portable_log(0x1p-53), -53 * std::log(2.0), 1e-13);
}

// The f32 forms (f32 and 16-bit outputs), fused multiply-add polynomials: log over the f32s of
// [2^-24, 1] (a superset of the draws' inputs 1 - k 2^-24; every 13th bit pattern, to keep the test
// short) within 1 ulp of the result, and within 2^-24 absolute on [1/2, 1], where the result is
// tiny; sin / cos of 2 pi u on every 7th input u = k 2^-24 within 1e-7 absolute.
TEST(Philox, PortableF32LogAndSinCosAreAccurate) {
  double worst_ulps = 0, worst_near_one = 0;
  for (uint32_t bits = std::bit_cast<uint32_t>(0x1p-24f); bits <= std::bit_cast<uint32_t>(1.0f); bits += 13) {
    const float x = std::bit_cast<float>(bits);
    const double want = std::log(static_cast<double>(x)), error = std::fabs(device::portable_log_f32(x) - want);
    if (want != 0)  // (in units of the last place of the f32 nearest the answer)
      worst_ulps = std::max(worst_ulps, error / std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23));
    if (x >= 0.5f) worst_near_one = std::max(worst_near_one, error);
  }
  EXPECT_LE(worst_ulps, 1.0);
  EXPECT_LE(worst_near_one, 0x1p-24);
  EXPECT_EQ(device::portable_log_f32(1.0f), 0.0f);
  double worst_trig = 0;
  for (int k = 0; k < (1 << 24); k += 7) {
    const float u = static_cast<float>(k) * 0x1p-24f;
    float c, s;
    device::portable_sincos_2pi_f32(u, c, s);
    worst_trig = std::max({worst_trig, std::fabs(c - std::cos(2 * M_PI * u)), std::fabs(s - std::sin(2 * M_PI * u))});
  }
  EXPECT_LE(worst_trig, 1e-7);
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
    for (int64_t i = 0, numel = d.shape.numel(); i < numel; ++i)
      ASSERT_EQ(gpu.at(i), cpu.at(i)) << random_kind_name(kind) << " " << i;
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

// Kolmogorov-Smirnov of the standard normal and the exponential of rate 1 over 2^17 draws: sqrt(n) D
// below 1.95 (p about 0.001 for a right draw). f32 and f64 (the 16-bit outputs are the f32 draws,
// rounded: their steps alone would move D).
TEST_P(RandomTest, NormalAndExponentialFollowTheirDistributions) {
  if (dtype() != DType::f32 && dtype() != DType::f64) GTEST_SKIP() << "the f32 draws, rounded";
  const int64_t n = 1 << 17;
  for (RandomKind kind : {RandomKind::normal, RandomKind::exponential}) {
    RandomDescriptor d = uniform({n});
    d.kind = kind;
    const Tensor t = draw(d, testing::contiguous(d.shape), stream());
    std::vector<double> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = t.at(i);
    std::sort(x.begin(), x.end());
    double d_max = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[static_cast<size_t>(i)];
      const double cdf = kind == RandomKind::normal ? 0.5 * std::erfc(-v / std::sqrt(2.0)) : -std::expm1(-v);
      d_max = std::max({d_max, cdf - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - cdf});
    }
    EXPECT_LT(std::sqrt(static_cast<double>(n)) * d_max, 1.95) << random_kind_name(kind);
  }
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

class MultinomialTest : public testing::BackendDTypeTest {
 protected:
  // The indices MultinomialPlan draws from `weights` (row-major, d.shape) on stream s; the weights
  // laid out as `probs_spec` asks (its strides, if any), out as `out_spec`.
  std::vector<int64_t> draw(MultinomialDescriptor d, const std::vector<double>& weights, const Stream& s,
                            bool transposed_probs = false, int64_t out_step = 1) {
    d.dtype = dtype();
    harness::TensorSpec probs_spec = testing::contiguous(d.shape);
    if (transposed_probs && d.shape.rank == 2) {  // column-major: a view whose rows are strided
      probs_spec.strides = {1, d.shape.dims[0]};
      probs_spec.strided = true;
    }
    Tensor probs = unwrap(harness::random_tensor(s.backend(), d.dtype, probs_spec, rng_));
    for (int64_t i = 0; i < static_cast<int64_t>(weights.size()); ++i)
      probs.host[static_cast<size_t>(probs.offset + probs.element_offset(i))] = weights[static_cast<size_t>(i)];
    EXPECT_TRUE(probs.upload().is_ok());
    const int64_t rows = d.shape.rank == 2 ? d.shape.dims[0] : 1;
    const Shape out_shape = d.shape.rank == 2 ? Shape{rows, d.samples} : Shape{d.samples};
    harness::TensorSpec out_spec = testing::contiguous(out_shape);
    if (out_step != 1) {
      out_spec.strides = d.shape.rank == 2 ? Strides{d.samples * out_step, out_step} : Strides{out_step};
      out_spec.strided = true;
    }
    Tensor out = unwrap(harness::random_tensor(s.backend(), d.index_dtype, out_spec, rng_));
    const MultinomialPlan plan = unwrap(MultinomialPlan::select(s, d));
    harness::Buffer workspace =
        unwrap(harness::Buffer::allocate(s.backend(), std::max<size_t>(plan.workspace_size(), 1)));
    const Status ran = plan.run(s, {workspace.data(), workspace.size()}, {probs.ref(), out.mut()});
    EXPECT_TRUE(ran.is_ok()) << ran.to_string();
    EXPECT_TRUE(out.download().is_ok());
    std::vector<int64_t> values(static_cast<size_t>(out_shape.numel()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(out.at(static_cast<int64_t>(i)));
    return values;
  }
  static MultinomialDescriptor descriptor(Shape shape, int64_t samples, bool replacement) {
    MultinomialDescriptor d;
    d.shape = shape;
    d.samples = samples;
    d.replacement = replacement;
    d.seed = 0x5eed;
    d.offset = 11;
    return d;
  }
  // Chi-square of the counts of categories 0..C-1 against the weights (zero-weight categories must
  // never appear; they add nothing).
  static double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& w) {
    double total_w = 0, total = 0, chi2 = 0;
    for (size_t c = 0; c < w.size(); ++c) total_w += w[c], total += static_cast<double>(counts[c]);
    for (size_t c = 0; c < w.size(); ++c) {
      const double want = total * w[c] / total_w;
      if (want > 0) chi2 += std::pow(static_cast<double>(counts[c]) - want, 2) / want;
    }
    return chi2;
  }
};

// With replacement, 4 rows of weights 0..4 at scales 1, 1/1024, 1024 and 3: each row's 20,000 draws
// never take category 0 and follow the weights (chi-square with 3 degrees of freedom below 22: p
// about 7e-5 for a right draw).
TEST_P(MultinomialTest, WithReplacementTheCountsFollowTheWeights) {
  const std::vector<double> base = {0, 1, 2, 3, 4}, scales = {1, 1.0 / 1024, 1024, 3};
  std::vector<double> weights;
  for (double scale : scales)
    for (double w : base) weights.push_back(w * scale);
  const int64_t samples = 20000;
  const std::vector<int64_t> got = draw(descriptor({4, 5}, samples, true), weights, stream());
  for (int64_t r = 0; r < 4; ++r) {
    std::vector<int64_t> counts(5, 0);
    for (int64_t j = 0; j < samples; ++j) {
      const int64_t c = got[static_cast<size_t>(r * samples + j)];
      ASSERT_TRUE(c >= 1 && c < 5) << "row " << r << " sample " << j << ": " << c;
      ++counts[static_cast<size_t>(c)];
    }
    EXPECT_LT(chi_square(counts, base), 22.0) << "row " << r;
  }
}

// Without replacement, 3000 rows of weights (1, 2, 3, 4), two samples each: distinct, and the first
// follows the weights (chi-square with 3 degrees of freedom below 22); all four samples of a row are
// a permutation.
TEST_P(MultinomialTest, WithoutReplacementDistinctAndTheFirstFollowsTheWeights) {
  const int64_t rows = 3000;
  const std::vector<double> base = {1, 2, 3, 4};
  std::vector<double> weights;
  for (int64_t r = 0; r < rows; ++r) weights.insert(weights.end(), base.begin(), base.end());
  const std::vector<int64_t> two = draw(descriptor({rows, 4}, 2, false), weights, stream());
  std::vector<int64_t> counts(4, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t a = two[static_cast<size_t>(2 * r)], b = two[static_cast<size_t>(2 * r + 1)];
    ASSERT_TRUE(a >= 0 && a < 4 && b >= 0 && b < 4 && a != b) << "row " << r << ": " << a << ", " << b;
    ++counts[static_cast<size_t>(a)];
  }
  EXPECT_LT(chi_square(counts, base), 22.0);
  const std::vector<int64_t> all = draw(descriptor({rows, 4}, 4, false), weights, stream());
  for (int64_t r = 0; r < rows; r += 97) {
    std::vector<int64_t> row(all.begin() + r * 4, all.begin() + r * 4 + 4);
    // The same keys: the first two of four are the two drawn alone.
    EXPECT_EQ(row[0], two[static_cast<size_t>(2 * r)]);
    EXPECT_EQ(row[1], two[static_cast<size_t>(2 * r + 1)]);
    std::sort(row.begin(), row.end());
    EXPECT_EQ(row, (std::vector<int64_t>{0, 1, 2, 3})) << "row " << r;
  }
}

// The contract's draws: without replacement the key of category c is E / w' with E RandomPlan's f32
// exponential at element r C + c (equal weights: the smaller E first, ties to the lower category);
// with replacement sample j of row r is RandomPlan's f64 uniform at element r S + j against the
// running sum (equal weights of two categories: category 1 where u >= 1/2).
TEST_P(MultinomialTest, TheDrawsAreTheContractsExponentialsAndUniforms) {
  const int64_t rows = 500;
  const std::vector<double> ones(static_cast<size_t>(rows * 2), 1.0);
  RandomDescriptor e;
  e.kind = RandomKind::exponential;
  e.dtype = DType::f32;
  e.shape = {rows * 2};
  e.seed = 0x5eed;
  e.offset = 11;
  Tensor exps = unwrap(harness::random_tensor(Backend::cpu, DType::f32, testing::contiguous(e.shape), rng_));
  ASSERT_OK(unwrap(RandomPlan::select(Stream::host(), e)).run(Stream::host(), {}, {exps.mut()}));
  ASSERT_OK(exps.download());
  const std::vector<int64_t> first = draw(descriptor({rows, 2}, 1, false), ones, stream());
  for (int64_t r = 0; r < rows; ++r)
    ASSERT_EQ(first[static_cast<size_t>(r)], exps.at(2 * r) <= exps.at(2 * r + 1) ? 0 : 1) << "row " << r;
  const int64_t samples = 3;
  RandomDescriptor u = e;
  u.kind = RandomKind::uniform;
  u.dtype = DType::f64;
  u.shape = {rows * samples};
  Tensor uniforms = unwrap(harness::random_tensor(Backend::cpu, DType::f64, testing::contiguous(u.shape), rng_));
  ASSERT_OK(unwrap(RandomPlan::select(Stream::host(), u)).run(Stream::host(), {}, {uniforms.mut()}));
  ASSERT_OK(uniforms.download());
  const std::vector<int64_t> replaced = draw(descriptor({rows, 2}, samples, true), ones, stream());
  for (int64_t i = 0; i < rows * samples; ++i)
    ASSERT_EQ(replaced[static_cast<size_t>(i)], uniforms.at(i) < 0.5 ? 0 : 1) << "element " << i;
}

// Zero weights are never drawn; without replacement the samples past a row's positive weights are
// -1; a row with a negative, NaN or infinite weight, or no weight at all, is -1 throughout (on CUDA
// without replacement, 4 samples and 20 take the two kernels: the few-samples one and the sort).
TEST_P(MultinomialTest, ZeroWeightsAndBadRows) {
  const int64_t C = 40;
  std::vector<double> weights(static_cast<size_t>(5 * C), 1.0);
  for (int64_t c = 0; c < C; ++c) weights[static_cast<size_t>(c)] = c == 5 ? 5.0 : c == 30 ? 1.0 : 0.0;
  weights[static_cast<size_t>(C + 3)] = -1;                                       // negative
  weights[static_cast<size_t>(2 * C + 7)] = std::nan("");                         // NaN
  weights[static_cast<size_t>(3 * C + 39)] = INFINITY;                            // infinite
  for (int64_t c = 0; c < C; ++c) weights[static_cast<size_t>(4 * C + c)] = 0.0;  // no weight
  for (auto [replacement, samples] : {std::pair{false, int64_t{4}}, {false, int64_t{20}}, {true, int64_t{20}}}) {
    const std::vector<int64_t> got = draw(descriptor({5, C}, samples, replacement), weights, stream());
    for (int64_t j = 0; j < samples; ++j) {
      const int64_t c = got[static_cast<size_t>(j)];
      if (replacement || j < 2) {
        EXPECT_TRUE(c == 5 || c == 30) << replacement << " sample " << j << ": " << c;
      } else {
        EXPECT_EQ(c, -1) << "sample " << j;
      }
    }
    if (!replacement) {
      EXPECT_NE(got[0], got[1]);
    }
    for (int64_t i = samples; i < 5 * samples; ++i)
      EXPECT_EQ(got[static_cast<size_t>(i)], -1) << replacement << " element " << i;
  }
}

// Views: weights read through a column-major view and indices written with a stride of 3 give the
// contiguous run's indices; a 1-D problem is its one row; i32 indices the i64 ones.
TEST_P(MultinomialTest, ViewsOneDimensionAndIndexTypes) {
  std::vector<double> weights(static_cast<size_t>(6 * 300));
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<double>((i * 7919) % 13);
  for (bool replacement : {false, true}) {
    const MultinomialDescriptor d = descriptor({6, 300}, 40, replacement);
    const std::vector<int64_t> want = draw(d, weights, stream());
    EXPECT_EQ(draw(d, weights, stream(), true, 3), want) << replacement;
    MultinomialDescriptor narrow = d;
    narrow.index_dtype = DType::i32;
    EXPECT_EQ(draw(narrow, weights, stream()), want) << replacement;
    const std::vector<double> row0(weights.begin(), weights.begin() + 300);
    const std::vector<int64_t> one = draw(descriptor({300}, 40, replacement), row0, stream());
    EXPECT_EQ(one, std::vector<int64_t>(want.begin(), want.begin() + 40)) << replacement;
  }
}

TEST_P(MultinomialTest, BadDescriptorsNameTheirField) {
  auto refused = [&](MultinomialDescriptor d, std::string_view field) {
    d.dtype = dtype();
    const Expected<MultinomialPlan> p = MultinomialPlan::select(stream(), d);
    ASSERT_FALSE(p.has_value());
    EXPECT_NE(p.status().message().find(field), std::string::npos) << p.status().to_string();
    EXPECT_NE(p.status().message().find("MultinomialPlan"), std::string::npos) << p.status().to_string();
  };
  refused(descriptor({4, 5}, 6, false), "descriptor.samples");
  refused(descriptor({4, 5}, -1, true), "descriptor.samples");
  refused(descriptor({2, 4, 5}, 1, true), "descriptor.shape");
  refused(descriptor({4, 0}, 1, true), "descriptor.shape");
  MultinomialDescriptor f = descriptor({4, 5}, 1, true);
  f.index_dtype = DType::f32;
  refused(f, "descriptor.index_dtype");
  // Past 2^31 - 1 keys to sort (more than 16 samples without replacement); 16 need no sort.
  refused(descriptor({int64_t{1} << 20, int64_t{1} << 12}, 17, false), "descriptor.shape");
  EXPECT_TRUE(
      MultinomialPlan::select(stream(),
                              [&] {
                                MultinomialDescriptor d = descriptor({int64_t{1} << 20, int64_t{1} << 12}, 16, false);
                                d.dtype = dtype();
                                return d;
                              }())
          .has_value());
}

TEST_P(MultinomialTest, TheCpuAndTheGpuDrawTheSameIndices) {
  if (backend() != Backend::cuda) GTEST_SKIP() << "compares the CUDA backend with the CPU's";
  std::vector<double> weights(static_cast<size_t>(37 * 5000));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (double& w : weights) w = unit(rng_) < 0.2 ? 0.0 : unit(rng_);
  // (without replacement, both sides of the few-samples kernel's limit, 16, and the sort past it)
  for (bool replacement : {false, true}) {
    for (int64_t samples : {1, 16, 17, 300}) {
      const MultinomialDescriptor d = descriptor({37, 5000}, samples, replacement);
      EXPECT_EQ(draw(d, weights, stream()), draw(d, weights, Stream::host())) << replacement << " " << samples;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Random, MultinomialTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

}  // namespace
}  // namespace baracuda

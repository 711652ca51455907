// Op-table rows of the random family: RandomPlan (uniform, bernoulli, randint), DropoutPlan and its
// backward, RandpermPlan, MultinomialPlan. The reference is the contract itself (include/baracuda/ops/random.hpp):
// element i draws Philox's bits at stream position offset + i, computed here in double from those bits; the generator's
// own known answers, the statistics and the CPU = CUDA identity are tests/test_random.cpp's.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "cuda/device/multinomial.h"
#include "cuda/device/philox.h"
#include "harness/op_row.hpp"

namespace baracuda::harness {
namespace {

using device::philox_bits;
using RDesc = RandomDescriptor;
using DDesc = DropoutDescriptor;

RDesc draw(RandomKind kind, Shape shape, uint64_t seed, uint64_t offset) {
  RDesc d;
  d.kind = kind;
  d.shape = shape;
  d.seed = seed;
  d.offset = offset;
  if (kind == RandomKind::randint) {
    d.dtype = DType::i32;
    d.low = -5;
    d.high = 1000;
  }
  return d;
}

std::vector<Sample<RDesc>> random_samples() {
  std::vector<Sample<RDesc>> out;
  auto add = [&](RDesc d, Views views = Views::contiguous, std::string note = {}, std::vector<DType> dtypes = {}) {
    out.push_back({d, views, {}, std::nullopt, std::move(note), std::move(dtypes)});
  };
  const std::vector<DType> floats = {DType::f32, DType::f64, DType::f16, DType::bf16};
  for (Shape s : std::vector<Shape>{{1}, {7}, {5, 33}, {300, 257}, {2, 3, 4, 5}, {0, 4}}) {
    add(draw(RandomKind::uniform, s, 42, 0), Views::contiguous, "uniform", floats);
    add(draw(RandomKind::bernoulli, s, 7, 3), Views::contiguous, "bernoulli", floats);
  }
  for (Shape s : std::vector<Shape>{{7}, {300, 257}}) {
    add(draw(RandomKind::normal, s, 11, 5), Views::contiguous, "normal", floats);
    add(draw(RandomKind::exponential, s, 12, 6), Views::contiguous, "exponential", floats);
  }
  RDesc shifted = draw(RandomKind::normal, {50, 20}, 13, 1);
  shifted.mean = -2.0;
  shifted.std = 0.25;
  add(shifted, Views::padded, "normal(-2, 0.25)", floats);
  RDesc rate = draw(RandomKind::exponential, {50, 20}, 14, 1);
  rate.lambda = 3.5;
  add(rate, Views::transposed, "exponential(3.5)", floats);
  RDesc wide = draw(RandomKind::uniform, {64, 64}, 1, (uint64_t{1} << 40) + 1);
  wide.low = -3.5;
  wide.high = 2.25;
  add(wide, Views::contiguous, "uniform [-3.5, 2.25), offset 2^40 + 1", floats);
  RDesc wrap = draw(RandomKind::uniform, {100}, ~uint64_t{0}, ~uint64_t{0} - 50);
  add(wrap, Views::contiguous, "the stream position wrapping past 2^64", floats);
  for (double p : {0.0, 0.3, 1.0}) {
    RDesc b = draw(RandomKind::bernoulli, {40, 40}, 9, 0);
    b.p = p;
    add(b, Views::contiguous, "bernoulli p " + std::to_string(p), floats);
  }
  for (DType t : {DType::i32, DType::i64}) {
    RDesc r = draw(RandomKind::randint, {33, 65}, 5, 17);
    add(r, Views::contiguous, "randint [-5, 1000)", {t});
    RDesc full = draw(RandomKind::randint, {1000}, 5, 0);
    full.low = t == DType::i32 ? -2147483648.0 : -4294967296.0;
    full.high = full.low + 4294967296.0;
    add(full, Views::contiguous, "randint over 2^32 values", {t});
  }
  for (Views v : {Views::padded, Views::transposed, Views::misaligned}) {
    add(draw(RandomKind::uniform, {33, 40}, 3, 11), v, "uniform", floats);
    add(draw(RandomKind::bernoulli, {33, 40}, 3, 11), v, "bernoulli", floats);
    add(draw(RandomKind::randint, {33, 40}, 3, 11), v, "randint", {DType::i32, DType::i64});
  }
  return out;
}

std::vector<DescriptorError<RDesc>> random_errors() {
  return {
      {"p NaN",
       [](RDesc& d) {
         d.kind = RandomKind::bernoulli;
         d.p = std::nan("");
       },
       StatusCode::invalid_problem, "descriptor.p"},
      {"p above 1",
       [](RDesc& d) {
         d.kind = RandomKind::bernoulli;
         d.p = 1.5;
       },
       StatusCode::invalid_problem, "descriptor.p"},
      {"low = high",
       [](RDesc& d) {
         d.kind = RandomKind::uniform;
         d.dtype = DType::f32;
         d.low = d.high = 1.0;
       },
       StatusCode::invalid_problem, "descriptor.high"},
      {"randint of f32",
       [](RDesc& d) {
         d.kind = RandomKind::randint;
         d.dtype = DType::f32;
       },
       StatusCode::unsupported, "descriptor.dtype"},
      {"randint range past 2^32",
       [](RDesc& d) {
         d.kind = RandomKind::randint;
         d.dtype = DType::i64;
         d.low = 0;
         d.high = 1e12;
       },
       StatusCode::unsupported, "descriptor.high"},
      {"negative size", [](RDesc& d) { d.shape = {-1}; }, StatusCode::invalid_problem, "descriptor.shape[0]"},
      {"normal std negative",
       [](RDesc& d) {
         d.kind = RandomKind::normal;
         d.dtype = DType::f32;
         d.std = -1;
       },
       StatusCode::invalid_problem, "descriptor.std"},
      {"exponential lambda 0",
       [](RDesc& d) {
         d.kind = RandomKind::exponential;
         d.dtype = DType::f32;
         d.lambda = 0;
       },
       StatusCode::invalid_problem, "descriptor.lambda"},
  };
}

// The value element i takes, from the contract.
double expected(const RDesc& d, int64_t i) {
  const uint64_t at = d.offset + static_cast<uint64_t>(i);
  switch (d.kind) {
    case RandomKind::bernoulli:
      return static_cast<double>(philox_bits(d.seed, at)) < std::floor(d.p * 4294967296.0) ? 1.0 : 0.0;
    case RandomKind::randint:
      return d.low + static_cast<double>(philox_bits(d.seed, at) % static_cast<uint64_t>(d.high - d.low));
    case RandomKind::normal:
      if (d.dtype != DType::f64)
        return quantize(d.dtype, std::fmaf(device::philox_normal_f32(d.seed, at), static_cast<float>(d.std),
                                           static_cast<float>(d.mean)));
      return d.mean + d.std * device::philox_normal(d.seed, at);
    case RandomKind::exponential:
      if (d.dtype != DType::f64)
        return quantize(d.dtype, device::philox_exponential_f32(d.seed, at) * static_cast<float>(1.0 / d.lambda));
      return device::philox_exponential(d.seed, at) / d.lambda;
    case RandomKind::uniform:
      break;
  }
  if (d.dtype == DType::f64) {
    const double u = (static_cast<double>(philox_bits(d.seed, 2 * at) >> 5) * 67108864.0 +
                      static_cast<double>(philox_bits(d.seed, 2 * at + 1) >> 6)) *
                     std::ldexp(1.0, -53);
    return d.low + (d.high - d.low) * u;
  }
  const double u = static_cast<double>(philox_bits(d.seed, at) >> 8) * std::ldexp(1.0, -24);
  return quantize(d.dtype, quantize(DType::f32, d.low + (d.high - d.low) * u));
}

void random_reference(const RDesc& d, RefIO& io) {
  RefOutput& out = io.out("out");
  for (int64_t i = 0, numel = d.shape.numel(); i < numel; ++i)
    if (out.wanted(i)) {
      const double v = expected(d, i);
      const double scale = d.kind == RandomKind::normal        ? std::fabs(v) + std::fabs(d.mean)
                           : d.kind == RandomKind::exponential ? std::fabs(v)
                                                               : std::fabs(d.low) + std::fabs(d.high);
      out.set(i, v, scale, 4);
    }
}

DDesc drop(Shape shape, double p, uint64_t seed = 1234, uint64_t offset = 0) {
  DDesc d;
  d.shape = shape;
  d.p = p;
  d.seed = seed;
  d.offset = offset;
  return d;
}

std::vector<Sample<DDesc>> dropout_samples() {
  std::vector<Sample<DDesc>> out;
  auto add = [&](DDesc d, Views views = Views::contiguous, std::string note = {}) {
    out.push_back({d, views, {}, std::nullopt, std::move(note), {}});
  };
  for (double p : {0.0, 0.1, 0.5, 1.0}) add(drop({300, 129}, p), Views::contiguous, "p " + std::to_string(p));
  add(drop({1}, 0.5));
  add(drop({2, 3, 4, 5}, 0.25, 77, 1000));
  add(drop({0, 8}, 0.5));
  for (Views v : {Views::padded, Views::transposed, Views::misaligned, Views::broadcast}) add(drop({33, 40}, 0.3), v);
  return out;
}

std::vector<DescriptorError<DDesc>> dropout_errors() {
  return {
      {"p NaN", [](DDesc& d) { d.p = std::nan(""); }, StatusCode::invalid_problem, "descriptor.p"},
      {"p negative", [](DDesc& d) { d.p = -0.1; }, StatusCode::invalid_problem, "descriptor.p"},
      {"p above 1", [](DDesc& d) { d.p = 1.01; }, StatusCode::invalid_problem, "descriptor.p"},
  };
}

bool kept(const DDesc& d, int64_t i) {
  return static_cast<double>(philox_bits(d.seed, d.offset + static_cast<uint64_t>(i))) >=
         std::floor(d.p * 4294967296.0);
}

template <bool kBackward>
void dropout_reference(const DDesc& d, RefIO& io) {
  const HostView& x = io.in(kBackward ? "dy" : "x");
  RefOutput& y = io.out(kBackward ? "dx" : "y");
  const double scale = d.p < 1 ? 1.0 / (1.0 - d.p) : 0.0;
  const bool mask = !kBackward && io.specs[static_cast<size_t>(io.index_of("mask"))].present;
  for (int64_t i = 0, numel = d.shape.numel(); i < numel; ++i) {
    const bool k = kept(d, i);
    if (y.wanted(i)) y.set(i, k ? x.at(i) * scale : 0.0);
    if (mask && io.out("mask").wanted(i)) io.out("mask").set(i, k ? 1.0 : 0.0);
  }
}

std::vector<Shape> bench_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{16384, 4096}};
  return {{2048, 4096}};
}
RDesc uniform_bench(DType dtype, const Shape& s) {
  RDesc d = draw(RandomKind::uniform, s, 1, 0);
  d.dtype = dtype;
  return d;
}
RDesc randint_bench(DType dtype, const Shape& s) {
  RDesc d = draw(RandomKind::randint, s, 1, 0);
  d.dtype = dtype;
  d.low = 0;
  d.high = 1000;
  return d;
}
RDesc bernoulli_bench(DType dtype, const Shape& s) {
  RDesc d = draw(RandomKind::bernoulli, s, 1, 0);
  d.dtype = dtype;
  d.p = 0.5;
  return d;
}
RDesc normal_bench(DType dtype, const Shape& s) {
  RDesc d = draw(RandomKind::normal, s, 1, 0);
  d.dtype = dtype;
  return d;
}
DDesc dropout_bench(DType dtype, const Shape& s) {
  DDesc d = drop(s, 0.1);
  d.dtype = dtype;
  return d;
}

using PDesc = RandpermDescriptor;

PDesc perm(int64_t n, uint64_t seed = 5, uint64_t offset = 0) {
  PDesc d;
  d.n = n;
  d.seed = seed;
  d.offset = offset;
  return d;
}

std::vector<Sample<PDesc>> randperm_samples() {
  std::vector<Sample<PDesc>> out;
  auto add = [&](PDesc d, Views views = Views::contiguous, std::string note = {}) {
    out.push_back({d, views, {}, std::nullopt, std::move(note), {}});
  };
  for (int64_t n : {0, 1, 2, 3, 17, 1000, 70001}) add(perm(n));
  add(perm((int64_t{1} << 20) + 3, 99, 12345), Views::contiguous, "2^20 + 3");
  add(perm(500, ~uint64_t{0}, ~uint64_t{0} - 100), Views::contiguous, "positions wrapping past 2^64");
  for (Views v : {Views::padded, Views::misaligned}) add(perm(333, 8, 3), v);
  return out;
}

std::vector<DescriptorError<PDesc>> randperm_errors() {
  return {
      {"n negative", [](PDesc& d) { d.n = -1; }, StatusCode::invalid_problem, "descriptor.n"},
      {"n past 2^31 - 1", [](PDesc& d) { d.n = int64_t{1} << 31; }, StatusCode::unsupported, "descriptor.n"},
      {"a float dtype", [](PDesc& d) { d.dtype = DType::f32; }, StatusCode::unsupported, "descriptor.dtype"},
  };
}

// The contract: the values 0..n-1 in order of their keys (ties in value order).
void randperm_reference(const PDesc& d, RefIO& io) {
  std::vector<std::pair<uint64_t, int64_t>> keyed(static_cast<size_t>(d.n));
  for (int64_t i = 0; i < d.n; ++i)
    keyed[static_cast<size_t>(i)] = {device::philox_randperm_key(d.seed, d.offset + static_cast<uint64_t>(i)), i};
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  RefOutput& out = io.out("out");
  for (int64_t i = 0; i < d.n; ++i)
    if (out.wanted(i)) out.set(i, static_cast<double>(keyed[static_cast<size_t>(i)].second));
}

std::vector<Shape> randperm_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{int64_t{1} << 24}};
  return {{int64_t{1} << 20}};
}
PDesc randperm_bench(DType dtype, const Shape& s) {
  PDesc d = perm(s.dims[0], 1, 0);
  d.dtype = dtype;
  return d;
}

using MDesc = MultinomialDescriptor;

MDesc multi(Shape shape, int64_t samples, bool replacement, uint64_t seed = 3, uint64_t offset = 0) {
  MDesc d;
  d.shape = shape;
  d.samples = samples;
  d.replacement = replacement;
  d.seed = seed;
  d.offset = offset;
  return d;
}

// Weights in [0, 1), or some negative (their rows are -1 throughout).
constexpr ValueRange kWeights[] = {{"probs", 0.0, 1.0}};
const std::vector<ValueRange> kSomeNegativeWeights = {{"probs", -0.02, 1.0}};

std::vector<Sample<MDesc>> multinomial_samples() {
  std::vector<Sample<MDesc>> out;
  auto add = [&](MDesc d, Views views = Views::contiguous, std::string note = {}) {
    out.push_back({d, views, {}, std::nullopt, std::move(note), {}});
  };
  for (bool r : {false, true}) {
    add(multi({1000}, 1, r));
    add(multi({7, 300}, 5, r));
    add(multi({3, 1}, 1, r), Views::contiguous, "one category");
    add(multi({5, 100003}, 3, r), Views::contiguous, "chunks of 391");
    add(multi({0, 5}, 2, r), Views::contiguous, "no row");
    add(multi({4, 6}, 0, r), Views::contiguous, "no sample");
    add(multi({200, 50}, 9, r, ~uint64_t{0}, ~uint64_t{0} - 1000), Views::contiguous, "positions wrapping past 2^64");
    for (Views v : {Views::padded, Views::misaligned}) add(multi({9, 77}, 4, r, 8, 3), v);
    MDesc narrow = multi({6, 40}, 7, r);
    narrow.index_dtype = DType::i32;
    add(narrow, Views::contiguous, "i32 indices");
    Sample<MDesc> bad{multi({50, 20}, 4, r), Views::contiguous, {}, std::nullopt, "some negative weights: rows of -1"};
    bad.value_ranges = kSomeNegativeWeights;
    out.push_back(bad);
  }
  add(multi({7, 300}, 300, false), Views::contiguous, "every category");
  add(multi({64, 1000}, 2000, true), Views::contiguous, "more samples than categories");
  return out;
}

std::vector<DescriptorError<MDesc>> multinomial_errors() {
  return {
      {"samples past the categories without replacement",
       [](MDesc& d) {
         d.shape = {4, 5}, d.samples = 6;
       },
       StatusCode::invalid_problem, "descriptor.samples"},
      {"samples negative", [](MDesc& d) { d.samples = -1; }, StatusCode::invalid_problem, "descriptor.samples"},
      {"rank 3",
       [](MDesc& d) {
         d.shape = {2, 3, 4};
       },
       StatusCode::invalid_problem, "descriptor.shape"},
      {"no category",
       [](MDesc& d) {
         d.shape = {4, 0};
       },
       StatusCode::invalid_problem, "descriptor.shape"},
      {"a float index dtype", [](MDesc& d) { d.index_dtype = DType::f32; }, StatusCode::unsupported,
       "descriptor.index_dtype"},
  };
}

// The contract (include/baracuda/ops/random.hpp; the draws of cuda/device/multinomial.h), in the
// plain order of its words: keys sorted stably, or each sample's search of the chunked running sums.
void multinomial_reference(const MDesc& d, RefIO& io) {
  const HostView& probs = io.in("probs");
  RefOutput& out = io.out("out");
  const int64_t rows = d.shape.rank == 2 ? d.shape.dims[0] : 1, C = d.shape.dims[d.shape.rank - 1], S = d.samples;
  for (int64_t r = 0; r < rows; ++r) {
    auto weight = [&](long long c) { return probs.at(r * C + c); };
    double largest;
    const bool ok = device::multinomial_row_largest(C, weight, largest);
    std::vector<int64_t> drawn(static_cast<size_t>(S), -1);
    if (ok && !d.replacement) {
      std::vector<std::pair<float, int64_t>> keys;
      for (int64_t c = 0; c < C; ++c) {
        const uint64_t position = d.offset + static_cast<uint64_t>(r * C + c);
        const float key = d.dtype == DType::f64
                              ? device::multinomial_key(weight(c), 1.0 / largest, d.seed, position)
                              : device::multinomial_key(static_cast<float>(weight(c)),
                                                        1.0f / static_cast<float>(largest), d.seed, position);
        if (key != INFINITY) keys.emplace_back(key, c);
      }
      std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (size_t j = 0; j < keys.size() && j < drawn.size(); ++j) drawn[j] = keys[j].second;
    } else if (double ends[device::kMultinomialChunks]; ok && device::multinomial_row_ends(C, weight, ends)) {
      for (int64_t j = 0; j < S; ++j)
        drawn[static_cast<size_t>(j)] = device::multinomial_search(
            ends, C, device::multinomial_uniform(d.seed, d.offset + static_cast<uint64_t>(r * S + j)), weight);
    }
    for (int64_t j = 0; j < S; ++j)
      if (out.wanted(r * S + j)) out.set(r * S + j, static_cast<double>(drawn[static_cast<size_t>(j)]));
  }
}

std::vector<Shape> multinomial_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{64, 128256}, {4096, 32000}};
  return {{16, 128256}};
}
MDesc multinomial_bench(DType dtype, const Shape& s) {
  MDesc d = multi(s, 1, false, 1, 0);
  d.dtype = dtype;
  return d;
}
MDesc multinomial_replacement_bench(DType dtype, const Shape& s) {
  MDesc d = multi(s, 64, true, 1, 0);
  d.dtype = dtype;
  return d;
}

}  // namespace

std::vector<std::unique_ptr<OpRow>> random_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  rows.push_back(make_row<RandomPlan>(
      {random_samples,
       random_reference,
       harness::tolerance,
       {},
       random_errors(),
       {{"rand", "torch.rand(shape)", dtypes, bench_shapes, uniform_bench},
        {"randn", "torch.randn(shape)", dtypes, bench_shapes, normal_bench},
        {"randint", "torch.randint(0, 1000, shape)", {DType::i32, DType::i64}, bench_shapes, randint_bench},
        {"bernoulli", "torch.bernoulli(shape, 0.5)", dtypes, bench_shapes, bernoulli_bench}}}));
  BenchSample<DDesc> fwd{"dropout", "F.dropout(x, 0.1)", dtypes, bench_shapes, dropout_bench};
  fwd.omitted = "mask";
  rows.push_back(make_row<DropoutPlan>(
      {dropout_samples, dropout_reference<false>, harness::tolerance, {}, dropout_errors(), {fwd}}));
  rows.push_back(make_row<DropoutBackwardPlan>(
      {dropout_samples,
       dropout_reference<true>,
       harness::tolerance,
       {},
       dropout_errors(),
       {{"dropout_backward", "autograd of F.dropout(x, 0.1)", dtypes, bench_shapes, dropout_bench}},
       forward_of<DropoutPlan>,
       Gradient{"dy", "y", {{"dx", "x"}}}}));
  rows.push_back(
      make_row<RandpermPlan>({randperm_samples,
                              randperm_reference,
                              harness::tolerance,
                              {},
                              randperm_errors(),
                              {{"randperm", "torch.randperm(n)", {DType::i64}, randperm_shapes, randperm_bench}}}));
  rows.push_back(make_row<MultinomialPlan>({multinomial_samples,
                                            multinomial_reference,
                                            harness::tolerance,
                                            {std::begin(kWeights), std::end(kWeights)},
                                            multinomial_errors(),
                                            {{"multinomial",
                                              "torch.multinomial(p, 1)",
                                              {DType::f32},
                                              multinomial_shapes,
                                              multinomial_bench,
                                              false,
                                              false,
                                              {},
                                              {},
                                              {},
                                              kWeights},
                                             {"multinomial_replacement",
                                              "torch.multinomial(p, 64, replacement=True)",
                                              {DType::f32},
                                              multinomial_shapes,
                                              multinomial_replacement_bench,
                                              false,
                                              false,
                                              {},
                                              {},
                                              {},
                                              kWeights}}}));
  return rows;
}

}  // namespace baracuda::harness

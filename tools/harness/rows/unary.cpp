// Op-table rows of the unary family: UnaryPlan and UnaryBackwardPlan, every kind (the descriptor's
// kind) from one table of kinds below: a kind is one line there. Each line gives the intervals where
// the kind is smooth (the random inputs of its samples: inside its domain, away from its kinks,
// jumps and poles by more than the finite differences' step, and where its third derivative is
// small enough for them), a wider interval of large arguments for the f32 and f64 forward, its
// parameters and, where the default does not fit, a wider tolerance. Special values (+-0, +-inf,
// NaN, subnormals, the kinks themselves) and in-place runs are tests/test_unary.cpp's.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "harness/op_row.hpp"
#include "harness/reference/unary_reference.hpp"

namespace baracuda::harness {
namespace {

using Desc = UnaryDescriptor;
using K = UnaryKind;

struct Interval {
  double lo = -1, hi = 1;
};

// One line of the table. `loosen_f32` / `loosen_f64` multiply the dtype's default tolerance
// (harness::tolerance: 2e-6 and 1e-12 relative to 1 + |value|): lgamma's GPU f32 and f64 functions
// are documented at 6 and 4 ulp away from its zeros and worse near them (CUDA Math API, appendix
// "Mathematical Functions"), so it gets 8x and 100x.
struct KindLine {
  UnaryKind kind;
  std::vector<Interval> smooth;
  std::optional<Interval> wide = std::nullopt;  // f32 / f64 forward only
  UnaryParameters parameters{};
  double loosen_f32 = 1, loosen_f64 = 1;
};

UnaryParameters leaky(double slope) {
  UnaryParameters p;
  p.negative_slope = slope;
  return p;
}
UnaryParameters with_alpha(double alpha) {
  UnaryParameters p;
  p.alpha = alpha;
  return p;
}
UnaryParameters softplus_of(double beta, double threshold) {
  UnaryParameters p;
  p.beta = beta;
  p.threshold = threshold;
  return p;
}
UnaryParameters clamp_to(double lo, double hi) {
  UnaryParameters p;
  p.min_val = lo;
  p.max_val = hi;
  return p;
}

// Both sides of a kink at 0.
const std::vector<Interval> kSidesOfZero = {{-2, -0.01}, {0.01, 2}};

const std::vector<KindLine>& kinds() {
  static const std::vector<KindLine> table = {
      // math
      {K::abs, kSidesOfZero, Interval{-1e30, 1e30}},
      {K::neg, {{-2, 2}}, Interval{-1e30, 1e30}},
      {K::sign, kSidesOfZero},
      {K::reciprocal, {{0.5, 2}, {-2, -0.5}}, Interval{1e-30, 1e30}},
      {K::square, {{-2, 2}}, Interval{-1e15, 1e15}},
      {K::sqrt, {{0.25, 4}}, Interval{0, 1e30}},
      {K::rsqrt, {{0.5, 4}}, Interval{1e-30, 1e30}},
      {K::exp, {{-3, 3}}, Interval{-80, 80}},
      {K::exp2, {{-4, 4}}, Interval{-120, 120}},
      {K::expm1, {{-3, 3}}, Interval{-80, 80}},
      {K::log, {{0.25, 4}}, Interval{1e-30, 1e30}},
      {K::log2, {{0.25, 4}}, Interval{1e-30, 1e30}},
      {K::log10, {{0.25, 4}}, Interval{1e-30, 1e30}},
      {K::log1p, {{-0.75, 3}}, Interval{-0.999, 1e30}},
      {K::sin, {{-4, 4}}, Interval{-100, 100}},
      {K::cos, {{-4, 4}}, Interval{-100, 100}},
      {K::tan, {{-1, 1}}, Interval{-1.55, 1.55}},
      {K::asin, {{-0.9, 0.9}}, Interval{-1, 1}},
      {K::acos, {{-0.9, 0.9}}, Interval{-1, 1}},
      {K::atan, {{-3, 3}}, Interval{-1e30, 1e30}},
      {K::sinh, {{-3, 3}}, Interval{-80, 80}},
      {K::cosh, {{-3, 3}}, Interval{-80, 80}},
      {K::tanh, {{-3, 3}}, Interval{-20, 20}},
      {K::asinh, {{-3, 3}}, Interval{-1e30, 1e30}},
      {K::acosh, {{1.1, 4}}, Interval{1, 1e30}},
      {K::atanh, {{-0.9, 0.9}}, Interval{-0.9999, 0.9999}},
      {K::erf, {{-2.5, 2.5}}, Interval{-10, 10}},
      {K::erfc, {{-2.5, 2.5}}, Interval{-10, 10}},
      {K::erfinv, {{-0.8, 0.8}}, Interval{-0.9999, 0.9999}},
      {K::lgamma, {{0.25, 5}, {-2.7, -2.3}}, Interval{0.001, 1e4}, {}, 8, 100},
      {K::floor, {{0.05, 0.95}, {-1.95, -1.05}, {2.05, 2.95}}, Interval{-1e6, 1e6}},
      {K::ceil, {{0.05, 0.95}, {-1.95, -1.05}, {2.05, 2.95}}, Interval{-1e6, 1e6}},
      {K::round, {{-0.45, 0.45}, {0.55, 1.45}, {-2.45, -1.55}}, Interval{-1e6, 1e6}},
      {K::trunc, {{0.05, 0.95}, {-1.95, -1.05}, {2.05, 2.95}}, Interval{-1e6, 1e6}},
      {K::frac, {{0.05, 0.95}, {-1.95, -1.05}, {2.05, 2.95}}, Interval{-1e6, 1e6}},
      // activations
      {K::relu, kSidesOfZero, Interval{-1e30, 1e30}},
      {K::relu6, {{-1, -0.01}, {0.01, 5.99}, {6.01, 8}}},
      {K::leaky_relu, kSidesOfZero},
      {K::leaky_relu, kSidesOfZero, std::nullopt, leaky(0.2)},
      {K::elu, kSidesOfZero, Interval{-80, 80}},
      {K::elu, kSidesOfZero, std::nullopt, with_alpha(0.5)},
      {K::selu, kSidesOfZero, Interval{-80, 80}},
      {K::celu, kSidesOfZero},
      {K::celu, kSidesOfZero, std::nullopt, with_alpha(2.0)},
      {K::gelu, {{-4, 4}}, Interval{-80, 80}},
      {K::gelu_tanh, {{-4, 4}}, Interval{-80, 80}},
      {K::silu, {{-4, 4}}, Interval{-80, 80}},
      {K::mish, {{-4, 4}}, Interval{-80, 80}},
      {K::softplus, {{-4, 4}}, Interval{-80, 80}},
      {K::softplus, {{-3, 2.49}, {2.51, 4}}, std::nullopt, softplus_of(2.0, 5.0)},
      {K::softplus, {{-4, -2.01}, {-1.99, 4}}, std::nullopt, softplus_of(-1.0, 2.0)},  // beta x > 2 below -2
      {K::softsign, {{-4, 4}}, Interval{-1e30, 1e30}},
      {K::sigmoid, {{-4, 4}}, Interval{-80, 80}},
      {K::logsigmoid, {{-4, 4}}, Interval{-80, 80}},
      {K::hardtanh, {{-2, -1.01}, {-0.99, 0.99}, {1.01, 2}}},
      {K::hardtanh, {{-1, -0.51}, {-0.49, 1.99}, {2.01, 3}}, std::nullopt, clamp_to(-0.5, 2.0)},
      {K::hardsigmoid, {{-5, -3.01}, {-2.99, 2.99}, {3.01, 5}}},
      {K::hardswish, {{-5, -3.01}, {-2.99, 2.99}, {3.01, 5}}},
      // predicates (forward only; out bool): the random samples are finite, so isnan / isinf /
      // isfinite see one answer here and both in tests/test_unary.cpp's special values
      {K::isnan, {{-2, 2}}, Interval{-1e30, 1e30}},
      {K::isinf, {{-2, 2}}, Interval{-1e30, 1e30}},
      {K::isfinite, {{-2, 2}}, Interval{-1e30, 1e30}},
      {K::signbit, {{-2, 2}}, Interval{-1e30, 1e30}},
      {K::logical_not, {{-1, 1}}},
  };
  return table;
}

const KindLine* line_of(const Desc& d) {
  for (const KindLine& k : kinds()) {
    const UnaryParameters &a = k.parameters, &b = d.parameters;
    if (k.kind == d.kind && a.negative_slope == b.negative_slope && a.alpha == b.alpha && a.beta == b.beta &&
        a.threshold == b.threshold && a.min_val == b.min_val && a.max_val == b.max_val)
      return &k;
  }
  return nullptr;
}

double loosen(const Desc& d, DType dtype) {
  const KindLine* k = line_of(d);
  if (!k) return 1;
  return dtype == DType::f64 ? k->loosen_f64 : (dtype == DType::f32 ? k->loosen_f32 : 1);
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

std::string label(const KindLine& k, Interval r) {
  std::string s(unary_kind_name(k.kind));
  const UnaryParameters& p = k.parameters;
  if (k.kind == K::leaky_relu) s += " negative_slope " + number(p.negative_slope);
  if (k.kind == K::elu || k.kind == K::celu) s += " alpha " + number(p.alpha);
  if (k.kind == K::softplus) s += " beta " + number(p.beta) + " threshold " + number(p.threshold);
  if (k.kind == K::hardtanh) s += " [" + number(p.min_val) + ", " + number(p.max_val) + "]";
  return s + ", x in [" + number(r.lo) + ", " + number(r.hi) + ")";
}

// The integer dtypes (forward only; no gradient): every kind that takes one, on whole numbers over
// the dtype's range (i32 and i64 over a narrower one; square wraps in i8) and bool's {0, 1], at edge
// sizes and every kind of view.
void add_integer_samples(std::vector<Sample<Desc>>& out) {
  struct Range {
    std::vector<DType> dtypes;
    Interval x;
  };
  const Range ranges[] = {{{DType::i8}, {-128, 128}},
                          {{DType::u8}, {0, 256}},
                          {{DType::i32, DType::i64}, {-3000, 3000}},
                          {{DType::boolean}, {0, 2}}};
  for (int kind = 0; kind < kUnaryKindCount; ++kind) {
    Desc d;
    d.kind = static_cast<UnaryKind>(kind);
    for (const Range& r : ranges) {
      std::vector<DType> dtypes;
      for (DType t : r.dtypes)
        if (unary_kind_takes(d.kind, t)) dtypes.push_back(t);
      if (dtypes.empty()) continue;
      auto add = [&](Shape shape, Views views = Views::contiguous) {
        d.shape = shape;
        out.push_back(
            {d,
             views,
             {},
             std::nullopt,
             std::string(unary_kind_name(d.kind)) + ", integers in [" + number(r.x.lo) + ", " + number(r.x.hi) + ")",
             dtypes,
             {{"x", r.x.lo, r.x.hi}}});
      };
      for (const Shape& s : {Shape{0}, Shape{}, Shape{7}, Shape{4097}, Shape{37, 53}}) add(s);
      for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) add({33, 128}, v);
    }
  }
}

// Per kind: edge sizes (empty, one element, odd, prime, not a multiple of a 16-byte vector, rank 0
// and 8) in its first smooth interval, two sizes in each further one; padded, transposed, broadcast
// and misaligned views (and a misaligned input or output alone); large arguments in f32 and f64.
// `input` and `output` are the arguments a view may be given to alone.
std::vector<Sample<Desc>> samples(bool backward) {
  std::vector<Sample<Desc>> out;
  const std::string_view input = backward ? "dout" : "x", output = backward ? "dx" : "out";
  for (const KindLine& k : kinds()) {
    if (backward && unary_kind_is_predicate(k.kind)) continue;
    auto add = [&](Shape shape, Interval r, Views views = Views::contiguous, std::string_view only = {},
                   std::vector<DType> dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      Desc d;
      d.kind = k.kind;
      d.shape = shape;
      d.parameters = k.parameters;
      out.push_back({d, views, only, std::nullopt, label(k, r), std::move(dtypes), {{"x", r.lo, r.hi}}});
    };
    const Interval first = k.smooth.front();
    for (const Shape& s : {Shape{0}, Shape{0, 5}, Shape{}, Shape{1}, Shape{7}, Shape{4097}, Shape{37, 53},
                           Shape{2, 1, 3, 2, 2, 1, 3, 2}})
      add(s, first);
    for (size_t i = 1; i < k.smooth.size(); ++i) {
      add({4097}, k.smooth[i]);
      add({37, 53}, k.smooth[i]);
    }
    for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) add({33, 128}, first, v);
    add({5, 7, 11}, first, Views::transposed);
    add({4097}, first, Views::misaligned, input);
    add({4097}, first, Views::misaligned, output);
    if (k.wide && !backward) {
      add({4097}, *k.wide, Views::contiguous, {}, {DType::f32, DType::f64});
      add({33, 128}, *k.wide, Views::padded, {}, {DType::f32, DType::f64});
    }
  }
  if (!backward) add_integer_samples(out);
  return out;
}
std::vector<Sample<Desc>> forward_samples() { return samples(false); }
std::vector<Sample<Desc>> backward_samples() { return samples(true); }

void forward_reference(const Desc& d, RefIO& io) { reference::unary_forward(d, io, loosen(d, io.specs[0].dtype)); }
void backward_reference(const Desc& d, RefIO& io) { reference::unary_backward(d, io, loosen(d, io.specs[0].dtype)); }

// (Functions, not globals: the table is built during other files' static initialization.)
std::vector<DescriptorError<Desc>> errors() {
  return {
      {"unknown kind", [](Desc& d) { d.kind = static_cast<UnaryKind>(200); }, StatusCode::invalid_problem,
       "descriptor.kind"},
      {"negative size",
       [](Desc& d) {
         d.shape = {4, -3};
       },
       StatusCode::invalid_problem, "descriptor.shape[1]"},
      {"rank 9", [](Desc& d) { d.shape = {1, 2, 3, 4, 5, 6, 7, 8, 9}; }, StatusCode::invalid_problem,
       "descriptor.shape.rank"},
      {"softplus beta 0",
       [](Desc& d) {
         d.kind = K::softplus;
         d.parameters.beta = 0;
       },
       StatusCode::invalid_problem, "descriptor.parameters.beta"},
      {"softplus threshold NaN",
       [](Desc& d) {
         d.kind = K::softplus;
         d.parameters.threshold = std::nan("");
       },
       StatusCode::invalid_problem, "descriptor.parameters.threshold"},
      {"celu alpha 0",
       [](Desc& d) {
         d.kind = K::celu;
         d.parameters.alpha = 0;
       },
       StatusCode::invalid_problem, "descriptor.parameters.alpha"},
      {"elu alpha NaN",
       [](Desc& d) {
         d.kind = K::elu;
         d.parameters.alpha = std::nan("");
       },
       StatusCode::invalid_problem, "descriptor.parameters.alpha"},
      {"leaky_relu slope NaN",
       [](Desc& d) {
         d.kind = K::leaky_relu;
         d.parameters.negative_slope = std::nan("");
       },
       StatusCode::invalid_problem, "descriptor.parameters.negative_slope"},
      {"hardtanh min_val > max_val",
       [](Desc& d) {
         d.kind = K::hardtanh;
         d.parameters.min_val = 2;
         d.parameters.max_val = 1;
       },
       StatusCode::invalid_problem, "descriptor.parameters.min_val"},
      {"hardtanh max_val NaN",
       [](Desc& d) {
         d.kind = K::hardtanh;
         d.parameters.max_val = std::nan("");
       },
       StatusCode::invalid_problem, "descriptor.parameters.max_val"},
  };
}

// The profiler's cases: 2^26 elements on the GPU (far past L2), 2^22 on the CPU; and an odd size.
std::vector<Shape> standard_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{16384, 4096}, {1000, 1001}};
  return {{1024, 4096}, {1000, 1001}};
}
template <UnaryKind kKind>
Desc bench_desc(DType dtype, const Shape& shape) {
  Desc d;
  d.kind = kKind;
  d.dtype = dtype;
  d.shape = shape;
  return d;
}

constexpr ValueRange kSqrtBenchRange[] = {{"x", 0.0, 4.0}};  // sqrt's bench: no NaN to verify
std::vector<BenchSample<Desc>> forward_bench() {
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  return {{"gelu", "F.gelu(x)", dtypes, standard_shapes, bench_desc<K::gelu>},
          {"silu", "F.silu(x)", dtypes, standard_shapes, bench_desc<K::silu>},
          {"exp", "torch.exp(x)", dtypes, standard_shapes, bench_desc<K::exp>},
          // a square root and a quotient (the GPU's 16-bit kernels: common/arith16.hpp)
          {.name = "sqrt",
           .torch = "torch.sqrt(x)",
           .dtypes = dtypes,
           .shapes = standard_shapes,
           .describe = bench_desc<K::sqrt>,
           .value_ranges = kSqrtBenchRange},
          {"reciprocal", "torch.reciprocal(x)", dtypes, standard_shapes, bench_desc<K::reciprocal>},
          // a predicate: out is bool (n + n / sizeof(T) bytes: f32 5 bytes an element, bf16 3)
          {"isnan", "torch.isnan(x)", dtypes, standard_shapes, bench_desc<K::isnan>}};
}
std::vector<BenchSample<Desc>> backward_bench() {
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  return {{"gelu_backward", "aten.gelu_backward(dy, x)", dtypes, standard_shapes, bench_desc<K::gelu>},
          {"silu_backward", "aten.silu_backward(dy, x)", dtypes, standard_shapes, bench_desc<K::silu>},
          {"exp_backward", "dy * y (autograd of torch.exp)", dtypes, standard_shapes, bench_desc<K::exp>}};
}

}  // namespace

std::vector<std::unique_ptr<OpRow>> unary_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  rows.push_back(
      make_row<UnaryPlan>({forward_samples, forward_reference, harness::tolerance, {}, errors(), forward_bench()}));
  rows.push_back(make_row<UnaryBackwardPlan>({backward_samples,
                                              backward_reference,
                                              harness::tolerance,
                                              {},
                                              errors(),
                                              backward_bench(),
                                              forward_of<UnaryPlan>,
                                              {"dout", "out", {{"dx", "x"}}}}));
  return rows;
}

}  // namespace baracuda::harness

// Op-table rows of the binary family: BinaryPlan and BinaryBackwardPlan, every kind from one table of
// kinds below: a kind is one line there. Each line gives the intervals of a and b where the kind is
// smooth (the random inputs of its samples: away from its kinks, jumps, ties and poles by more than
// the finite differences' step), wider intervals for the f32 and f64 forward, and alpha. Every line
// runs at the same shapes: edge sizes, both operands of one shape, each side broadcast (a row [D],
// a column [N, 1], an outer product [N, 1] with [1, D], a scalar tensor), scalar operands, and padded,
// transposed, broadcast and misaligned views. Special values (+-0, +-inf, NaN, ties), in-place runs
// and the optional gradients are tests/test_binary.cpp's.
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "harness/op_row.hpp"
#include "harness/reference/binary_reference.hpp"

namespace baracuda::harness {
namespace {

using Desc = BinaryDescriptor;
using K = BinaryKind;

struct Interval {
  double lo = -1, hi = 1;
};

struct KindLine {
  BinaryKind kind;
  Interval a, b;                                  // smooth
  std::optional<Interval> wide_a = std::nullopt;  // f32 / f64 forward only
  std::optional<Interval> wide_b = std::nullopt;
  double alpha = 1.0;
};

const std::vector<KindLine>& kinds() {
  static const std::vector<KindLine> table = {
      {K::add, {-2, 2}, {-2, 2}, Interval{-1e30, 1e30}, Interval{-1e30, 1e30}},
      {K::add, {-2, 2}, {-2, 2}, std::nullopt, std::nullopt, -0.5},
      {K::sub, {-2, 2}, {-2, 2}, Interval{-1e30, 1e30}, Interval{-1e30, 1e30}},
      {K::sub, {-2, 2}, {-2, 2}, std::nullopt, std::nullopt, 2.0},
      {K::mul, {-2, 2}, {-2, 2}, Interval{-1e15, 1e15}, Interval{-1e15, 1e15}},
      {K::div, {-2, 2}, {0.5, 2}, Interval{-1e30, 1e30}, Interval{1e-5, 1e5}},
      {K::div, {-2, 2}, {-2, -0.5}},
      // Quotients in (0.04, 0.6): no jump of floor or trunc within the finite differences' step.
      {K::div_floor, {0.1, 0.9}, {1.5, 2.5}, Interval{-100, 100}, Interval{-10, 10}},
      {K::div_trunc, {0.1, 0.9}, {1.5, 2.5}, Interval{-100, 100}, Interval{-10, 10}},
      {K::remainder, {0.1, 0.9}, {1.5, 2.5}, Interval{-100, 100}, Interval{-10, 10}},
      {K::remainder, {-0.9, -0.1}, {1.5, 2.5}},
      {K::fmod, {0.1, 0.9}, {1.5, 2.5}, Interval{-100, 100}, Interval{-10, 10}},
      {K::fmod, {-0.9, -0.1}, {-2.5, -1.5}},
      {K::pow, {0.5, 2}, {-2, 2}, Interval{1e-3, 1e3}, Interval{-5, 5}},
      {K::atan2, {-2, 2}, {0.5, 2}, Interval{-1e30, 1e30}, Interval{-1e30, 1e30}},
      {K::atan2, {0.5, 2}, {-2, 2}},
      {K::hypot, {0.5, 2}, {-2, 2}, Interval{-1e30, 1e30}, Interval{-1e30, 1e30}},
      {K::maximum, {-2, -0.1}, {0.1, 2}, Interval{-1e30, 1e30}, Interval{-1e30, 1e30}},
      {K::maximum, {0.1, 2}, {-2, -0.1}},
      {K::minimum, {-2, -0.1}, {0.1, 2}, Interval{-1e30, 1e30}, Interval{-1e30, 1e30}},
      {K::minimum, {0.1, 2}, {-2, -0.1}},
      {K::fmax, {-2, -0.1}, {0.1, 2}},
      {K::fmax, {0.1, 2}, {-2, -0.1}},
      {K::fmin, {-2, -0.1}, {0.1, 2}},
      {K::fmin, {0.1, 2}, {-2, -0.1}},
      {K::copysign, {0.1, 2}, {-2, -0.1}, Interval{-1e30, 1e30}, Interval{-1e30, 1e30}},
      {K::copysign, {-2, -0.1}, {0.1, 2}},
      {K::logaddexp, {-3, 3}, {-3, 3}, Interval{-80, 80}, Interval{-80, 80}},
      {K::xlogy, {-2, 2}, {0.5, 2}, Interval{-1e10, 1e10}, Interval{1e-30, 1e30}},
      // predicates (forward only; ties and NaN are tests/test_binary.cpp's special values)
      {K::eq, {-2, 2}, {-2, 2}},
      {K::ne, {-2, 2}, {-2, 2}},
      {K::lt, {-2, 2}, {-2, 2}, Interval{-1e30, 1e30}, Interval{-1e30, 1e30}},
      {K::le, {-2, 2}, {-2, 2}},
      {K::gt, {-2, 2}, {-2, 2}},
      {K::ge, {-2, 2}, {-2, 2}},
      {K::logical_and, {-1, 1}, {-1, 1}},
      {K::logical_or, {-1, 1}, {-1, 1}},
      {K::logical_xor, {-1, 1}, {-1, 1}},
  };
  return table;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

std::string label(const KindLine& k, Interval a, Interval b) {
  std::string s(binary_kind_name(k.kind));
  if (k.kind == K::add || k.kind == K::sub) s += " alpha " + number(k.alpha);
  return s + ", a in [" + number(a.lo) + ", " + number(a.hi) + "), b in [" + number(b.lo) + ", " + number(b.hi) + ")";
}

// (A function, not a global: the table is built during other files' static initialization.)
std::vector<DType> float_dtypes() { return {DType::f32, DType::f64, DType::f16, DType::bf16}; }

// The integer dtypes (forward only; no gradient): every kind that takes one, on whole numbers over
// the dtype's range (i32 and i64 over a narrower one; results past it wrap) and bool's {0, 1}; the
// quotients' divisors over [-10, 10) and the shift counts and pow's exponents over [-3, 70) (0, -1,
// and counts past every width), at edge sizes, broadcast operands, scalar operands, alpha and every
// kind of view.
void add_integer_samples(std::vector<Sample<Desc>>& out) {
  struct Range {
    std::vector<DType> dtypes;
    Interval a, divisor, count;
  };
  const Range ranges[] = {{{DType::i8}, {-128, 128}, {-10, 10}, {-3, 70}},
                          {{DType::u8}, {0, 256}, {0, 10}, {0, 70}},
                          {{DType::i32, DType::i64}, {-3000, 3000}, {-10, 10}, {-3, 70}},
                          {{DType::boolean}, {0, 2}, {0, 2}, {0, 2}}};
  for (int kind = 0; kind < kBinaryKindCount; ++kind) {
    Desc d;
    d.kind = static_cast<BinaryKind>(kind);
    const bool divides = d.kind == K::div || d.kind == K::div_floor || d.kind == K::div_trunc ||
                         d.kind == K::remainder || d.kind == K::fmod;
    // (pow's exponents as shift counts: negative ones, 0, 1, and past every width)
    const bool shifts = d.kind == K::shift_left || d.kind == K::shift_right || d.kind == K::pow;
    // Mixed integer dtypes: a narrower integer (or bool) a with an i64 b, computed in i64.
    if (binary_kind_takes(d.kind, DType::i64)) {
      const Interval rb = d.kind == K::div ? Interval{1, 10}
                          : divides        ? Interval{-10, 10}
                          : shifts         ? Interval{-3, 70}
                                           : Interval{-3000, 3000};
      for (const auto& [dtypes, ra] : std::vector<std::pair<std::vector<DType>, Interval>>{
               {{DType::i8, DType::u8, DType::i32}, {0, 100}}, {{DType::boolean}, {0, 2}}}) {
        for (const auto& [a_shape, b_shape, views] :
             std::vector<std::tuple<Shape, Shape, Views>>{{{4097}, {4097}, Views::contiguous},
                                                          {{37, 53}, {53}, Views::contiguous},
                                                          {{33, 128}, {33, 128}, Views::transposed}}) {
          d.a_shape = a_shape;
          d.b_shape = b_shape;
          d.b_dtype = DType::i64;
          const std::string note = std::string(binary_kind_name(d.kind)) + ", integers, b i64: a in [" + number(ra.lo) +
                                   ", " + number(ra.hi) + "), b in [" + number(rb.lo) + ", " + number(rb.hi) + ")";
          out.push_back({d, views, {}, std::nullopt, note, dtypes, {{"a", ra.lo, ra.hi}, {"b", rb.lo, rb.hi}}});
        }
      }
      d.b_dtype.reset();
    }
    for (const Range& r : ranges) {
      std::vector<DType> dtypes;
      for (DType t : r.dtypes)
        if (binary_kind_takes(d.kind, t)) dtypes.push_back(t);
      if (dtypes.empty()) continue;
      // (true division by 0 gives inf or NaN: tests/test_integer_elementwise.cpp's, not the table's)
      const Interval rb = d.kind == K::div ? Interval{1, 10} : divides ? r.divisor : (shifts ? r.count : r.a);
      auto add = [&](Shape a_shape, Shape b_shape, Views views = Views::contiguous) {
        d.a_shape = a_shape;
        d.b_shape = b_shape;
        std::string note = std::string(binary_kind_name(d.kind)) + ", integers: a in [" + number(r.a.lo) + ", " +
                           number(r.a.hi) + "), b in [" + number(rb.lo) + ", " + number(rb.hi) + ")";
        if (d.a_scalar || d.b_scalar) note += d.a_scalar ? ", a the scalar 3" : ", b the scalar 3";
        if (d.alpha != 1) note += ", alpha " + number(d.alpha);
        out.push_back({d, views, {}, std::nullopt, note, dtypes, {{"a", r.a.lo, r.a.hi}, {"b", rb.lo, rb.hi}}});
      };
      for (const Shape& s : {Shape{0}, Shape{}, Shape{7}, Shape{4097}, Shape{37, 53}}) add(s, s);
      add({37, 53}, {53});
      add({37, 1}, {1, 53});
      add({5, 1, 11}, {7, 1});
      for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
        add({33, 128}, {33, 128}, v);
        add({33, 128}, {128}, v);
      }
      if (r.dtypes[0] != DType::boolean) {  // (bool's scalars: tests/test_binary.cpp)
        for (bool scalar_a : {false, true}) {
          (scalar_a ? d.a_scalar : d.b_scalar) = 3;
          add({37, 53}, {37, 53});
          d.a_scalar = d.b_scalar = std::nullopt;
        }
      }
      if ((d.kind == K::add || d.kind == K::sub) && r.a.lo < 0) {
        d.alpha = -2;
        add({37, 53}, {53});
        d.alpha = 1;
      }
    }
    // A scalar of a higher category (scalar_dtype, PyTorch's Python numbers): a float one with an
    // integer or bool tensor computes in f32 (the tensor in [1, 100): no division by 0, and the
    // scalar -1.5 as a base raised to whole exponents), an integer one with a bool tensor in i64.
    const std::vector<DType> integers = {DType::i8, DType::u8, DType::i32, DType::i64};
    for (const auto& [scalar_dtype, value, scalar_a, dtypes] :
         std::vector<std::tuple<DType, double, bool, std::vector<DType>>>{{DType::f64, 2.5, false, integers},
                                                                          {DType::f64, 2.5, false, {DType::boolean}},
                                                                          {DType::f32, -1.5, true, integers},
                                                                          {DType::i64, 3, false, {DType::boolean}}}) {
      d.dtype = dtypes[0];
      d.scalar_dtype = scalar_dtype;
      (scalar_a ? d.a_scalar : d.b_scalar) = value;
      if (!binary_kind_takes(d.kind, binary_operand_dtype(d))) {
        d.a_scalar = d.b_scalar = std::nullopt;
        d.scalar_dtype.reset();
        continue;
      }
      const std::string note = std::string(binary_kind_name(d.kind)) + ", " + (scalar_a ? "a" : "b") + " the " +
                               std::string(dtype_name(scalar_dtype)) + " scalar " + number(value) +
                               (dtypes[0] == DType::boolean ? "" : ", the tensor in [1, 100)");
      const Interval range = dtypes[0] == DType::boolean ? Interval{0, 2} : Interval{1, 100};
      for (const auto& [shape, views] : std::vector<std::pair<Shape, Views>>{
               {{4097}, Views::contiguous}, {{33, 128}, Views::transposed}, {{0}, Views::contiguous}}) {
        d.a_shape = d.b_shape = shape;
        out.push_back(
            {d, views, {}, std::nullopt, note, dtypes, {{"a", range.lo, range.hi}, {"b", range.lo, range.hi}}});
      }
      d.a_scalar = d.b_scalar = std::nullopt;
      d.scalar_dtype.reset();
    }
  }
}

// Per kind line: edge sizes with both operands of the output's shape; each broadcast; a scalar
// operand on either side; padded, transposed, broadcast and misaligned views (and a misaligned input
// or output alone); large arguments in f32 and f64. `input` and `output` are the arguments a view
// may be given to alone.
std::vector<Sample<Desc>> samples(bool backward) {
  std::vector<Sample<Desc>> out;
  const std::string_view input = backward ? "dout" : "a", output = backward ? "db" : "out";
  for (const KindLine& k : kinds()) {
    if (backward && binary_kind_is_predicate(k.kind)) continue;  // no gradient
    auto add = [&](Shape a_shape, Shape b_shape, Interval ra, Interval rb, Views views = Views::contiguous,
                   std::string_view only = {}, std::vector<DType> dtypes = float_dtypes()) {
      Desc d;
      d.kind = k.kind;
      d.alpha = k.alpha;
      d.a_shape = a_shape;
      d.b_shape = b_shape;
      out.push_back({d,
                     views,
                     only,
                     std::nullopt,
                     label(k, ra, rb),
                     std::move(dtypes),
                     {{"a", ra.lo, ra.hi}, {"b", rb.lo, rb.hi}}});
    };
    auto add_scalar = [&](bool scalar_a, Shape shape) {
      Desc d;
      d.kind = k.kind;
      d.alpha = k.alpha;
      (scalar_a ? d.b_shape : d.a_shape) = shape;
      const Interval r = scalar_a ? k.a : k.b;  // the scalar: the middle of its interval
      (scalar_a ? d.a_scalar : d.b_scalar) = 0.5 * (r.lo + r.hi);
      const std::string side = scalar_a ? "a" : "b";
      out.push_back({d,
                     Views::contiguous,
                     {},
                     std::nullopt,
                     label(k, k.a, k.b) + ", " + side + " a scalar",
                     float_dtypes(),
                     {{"a", k.a.lo, k.a.hi}, {"b", k.b.lo, k.b.hi}}});
    };
    for (const Shape& s : {Shape{0}, Shape{0, 5}, Shape{}, Shape{1}, Shape{7}, Shape{4097}, Shape{37, 53},
                           Shape{2, 1, 3, 2, 2, 1, 3, 2}})
      add(s, s, k.a, k.b);
    add({37, 53}, {53}, k.a, k.b);      // a row broadcast over rows
    add({53}, {37, 53}, k.a, k.b);      // the other side
    add({37, 53}, {37, 1}, k.a, k.b);   // a column
    add({37, 1}, {1, 53}, k.a, k.b);    // both broadcast: an outer product
    add({33, 128}, {}, k.a, k.b);       // a rank-0 tensor
    add({5, 1, 11}, {7, 1}, k.a, k.b);  // both, over different dims
    add({1, 5}, {0, 5}, k.a, k.b);      // a broadcast along an empty dim: da is zeros
    add({300, 64}, {64}, k.a, k.b);     // long reductions
    add({4, 2001}, {4, 1}, k.a, k.b);
    add({40, 64}, {40, 1}, k.a, k.b);       // rows of whole vectors with a column (CUDA: strided_vectorized)
    add({6, 5, 16}, {6, 1, 16}, k.a, k.b);  // three collapsed dims, rows of whole vectors
    add_scalar(false, {37, 53});
    add_scalar(true, {37, 53});
    for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
      add({33, 128}, {33, 128}, k.a, k.b, v);
      add({33, 128}, {128}, k.a, k.b, v);
    }
    add({5, 7, 11}, {5, 7, 11}, k.a, k.b, Views::transposed);
    // One operand alone transposed (a + c.t()): CUDA's transposed path for the arithmetic kinds, P and
    // Q in and past a tile, a batch whose strides break the piece accesses, the other operand broadcast.
    add({33, 128}, {33, 128}, k.a, k.b, Views::transposed, "b");
    add({65, 300}, {65, 300}, k.a, k.b, Views::transposed, "a");
    add({20, 2, 36}, {20, 2, 36}, k.a, k.b, Views::transposed, "b");
    add({33, 128}, {128}, k.a, k.b, Views::transposed, "a");
    add({4097}, {4097}, k.a, k.b, Views::misaligned, input);
    add({4097}, {4097}, k.a, k.b, Views::misaligned, output);
    // Mixed dtypes, promoted: a 16-bit a with an f32 b and the other way round (the kernels load
    // them), f32 with f64 and f16 with bf16 (cast first), and (forward) integers with floats.
    for (const auto& [dtypes, b_dtype] : std::vector<std::pair<std::vector<DType>, DType>>{
             {{DType::f16, DType::bf16}, DType::f32},
             {{DType::f32}, DType::bf16},
             {{DType::f32}, DType::f16},
             {{DType::f32}, DType::f64},
             {{DType::f16}, DType::bf16},
             {{DType::f16, DType::bf16, DType::f32, DType::f64}, DType::i32},
             {{DType::i32}, DType::f32},
             {{DType::i64}, DType::bf16}}) {
      if (backward && !is_floating(b_dtype)) continue;
      const size_t first = out.size();
      add({4097}, {4097}, k.a, k.b, Views::contiguous, {}, dtypes);
      add({37, 53}, {53}, k.a, k.b, Views::contiguous, {}, dtypes);
      add({53}, {37, 53}, k.a, k.b, Views::contiguous, {}, dtypes);
      add({33, 128}, {33, 128}, k.a, k.b, Views::transposed, {}, dtypes);
      add({33, 128}, {33, 128}, k.a, k.b, Views::transposed, "b", dtypes);
      add({33, 128}, {33, 128}, k.a, k.b, Views::misaligned, {}, dtypes);
      add({40, 64}, {40, 1}, k.a, k.b, Views::contiguous, {}, dtypes);
      add({1, 5}, {0, 5}, k.a, k.b, Views::contiguous, {}, dtypes);  // nothing to cast in b; da zeros
      for (size_t i = first; i < out.size(); ++i) {
        out[i].desc.b_dtype = b_dtype;
        out[i].note += ", b " + std::string(dtype_name(b_dtype));
      }
    }
    if (k.wide_a && !backward) {
      add({4097}, {4097}, *k.wide_a, *k.wide_b, Views::contiguous, {}, {DType::f32, DType::f64});
      add({33, 128}, {128}, *k.wide_a, *k.wide_b, Views::padded, {}, {DType::f32, DType::f64});
    }
  }
  if (!backward) add_integer_samples(out);
  return out;
}
std::vector<Sample<Desc>> forward_samples() { return samples(false); }
std::vector<Sample<Desc>> backward_samples() { return samples(true); }

void forward_reference(const Desc& d, RefIO& io) { reference::binary_forward(d, io); }
void backward_reference(const Desc& d, RefIO& io) { reference::binary_backward(d, io); }

// (Functions, not globals: the table is built during other files' static initialization.)
std::vector<DescriptorError<Desc>> errors() {
  return {
      {"unknown kind", [](Desc& d) { d.kind = static_cast<BinaryKind>(200); }, StatusCode::invalid_problem,
       "descriptor.kind"},
      {"negative size",
       [](Desc& d) {
         d.a_shape = {4, -3};
       },
       StatusCode::invalid_problem, "descriptor.a_shape[1]"},
      {"rank 9", [](Desc& d) { d.b_shape = {1, 2, 3, 4, 5, 6, 7, 8, 9}; }, StatusCode::invalid_problem,
       "descriptor.b_shape.rank"},
      {"shapes that do not broadcast",
       [](Desc& d) {
         d.a_shape = {4, 6};
         d.b_shape = {5};
         d.a_scalar = d.b_scalar = std::nullopt;
       },
       StatusCode::invalid_problem, "descriptor.b_shape[0]"},
      {"two scalars",
       [](Desc& d) {
         d.a_scalar = 1.0;
         d.b_scalar = 2.0;
       },
       StatusCode::invalid_problem, "descriptor.b_scalar"},
  };
}

// The profiler's cases: [N, D] outputs, 2^26 elements on the GPU (far past L2), 2^22 on the CPU;
// and an odd size. b is [N, D], a row [D] or a column [N, 1].
std::vector<Shape> standard_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{16384, 4096}, {1000, 1001}};
  return {{1024, 4096}, {1000, 1001}};
}
// Short rows, where a kernel along a row would leave threads idle: rows of one 16-byte vector (f32:
// two) and of 768 elements.
std::vector<Shape> short_row_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{8388608, 8}, {65536, 768}};
  return {{524288, 8}};
}
enum class Operand { same, row, column };
template <BinaryKind kKind, Operand kB>
Desc bench_desc(DType dtype, const Shape& shape) {
  Desc d;
  d.kind = kKind;
  d.dtype = dtype;
  d.a_shape = shape;
  d.b_shape = shape;
  if (kB == Operand::row) d.b_shape = {shape.dims[1]};
  if (kB == Operand::column) d.b_shape = {shape.dims[0], 1};
  return d;
}

// a of the case's 16-bit dtype plus b in f32: out f32 (mixed dtypes).
Desc mixed_add_desc(DType dtype, const Shape& shape) {
  Desc d = bench_desc<K::add, Operand::same>(dtype, shape);
  d.b_dtype = DType::f32;
  return d;
}

std::vector<BenchSample<Desc>> forward_bench() {
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  return {{"add",
           "torch.add(a, b)",
           {DType::f32, DType::bf16, DType::i32},
           standard_shapes,
           bench_desc<K::add, Operand::same>},
          {"add_mixed", "a (16-bit) + b (f32)", {DType::bf16}, standard_shapes, mixed_add_desc},
          {"bitwise_and",
           "torch.bitwise_and(a, b)",
           {DType::i32, DType::u8},
           standard_shapes,
           bench_desc<K::bitwise_and, Operand::same>},
          {"mul", "torch.mul(a, b)", dtypes, standard_shapes, bench_desc<K::mul, Operand::same>},
          {"div", "torch.div(a, b)", dtypes, standard_shapes, bench_desc<K::div, Operand::same>},
          {"maximum", "torch.maximum(a, b)", dtypes, standard_shapes, bench_desc<K::maximum, Operand::same>},
          {"pow", "torch.pow(a, b)", dtypes, standard_shapes, bench_desc<K::pow, Operand::same>},
          {"logaddexp", "torch.logaddexp(a, b)", dtypes, standard_shapes, bench_desc<K::logaddexp, Operand::same>},
          {"xlogy", "torch.xlogy(a, b)", dtypes, standard_shapes, bench_desc<K::xlogy, Operand::same>},
          {"lt", "torch.lt(a, b)", dtypes, standard_shapes, bench_desc<K::lt, Operand::same>},
          {"add_row", "a + b[D]", dtypes, standard_shapes, bench_desc<K::add, Operand::row>},
          {"mul_column", "a * b[N, 1]", dtypes, standard_shapes, bench_desc<K::mul, Operand::column>},
          {"div_row", "a / b[D]", dtypes, standard_shapes, bench_desc<K::div, Operand::row>},
          {"add_row_short", "a + b[D]", dtypes, short_row_shapes, bench_desc<K::add, Operand::row>},
          {"mul_column_short", "a * b[N, 1]", dtypes, short_row_shapes, bench_desc<K::mul, Operand::column>},
          // b the transpose of a contiguous [D, N] buffer (issue 10's transposed operand)
          {.name = "add_transposed",
           .torch = "a + b.t()",
           .dtypes = dtypes,
           .shapes = standard_shapes,
           .describe = bench_desc<K::add, Operand::same>,
           .transposed = "b"}};
}
std::vector<BenchSample<Desc>> backward_bench() {
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  return {
      {"mul_backward", "autograd of a * b", dtypes, standard_shapes, bench_desc<K::mul, Operand::same>},
      {"div_backward", "autograd of a / b", dtypes, standard_shapes, bench_desc<K::div, Operand::same>},
      // PyTorch's autograd passes dout on as da: only db = sum of dout over rows is computed.
      {"add_row_backward",
       "autograd of a + b[D] (da is dout)",
       dtypes,
       standard_shapes,
       bench_desc<K::add, Operand::row>,
       false,
       false,
       {},
       "da"},
      {"mul_row_backward", "autograd of a * b[D]", dtypes, standard_shapes, bench_desc<K::mul, Operand::row>},
      {"mul_column_backward", "autograd of a * b[N, 1]", dtypes, standard_shapes, bench_desc<K::mul, Operand::column>}};
}

// The profiler's inputs (the samples have their own): positive, so that pow and div stay finite.
std::vector<ValueRange> bench_ranges() { return {{"a", 0.5, 2.0}, {"b", 0.5, 2.0}}; }

}  // namespace

std::vector<std::unique_ptr<OpRow>> binary_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  rows.push_back(make_row<BinaryPlan>(
      {forward_samples, forward_reference, harness::tolerance, bench_ranges(), errors(), forward_bench()}));
  rows.push_back(make_row<BinaryBackwardPlan>({backward_samples,
                                               backward_reference,
                                               harness::tolerance,
                                               bench_ranges(),
                                               errors(),
                                               backward_bench(),
                                               forward_of<BinaryPlan>,
                                               {"dout", "out", {{"da", "a"}, {"db", "b"}}}}));
  return rows;
}

}  // namespace baracuda::harness

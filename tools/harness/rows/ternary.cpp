// Op-table rows of the ternary family: TernaryPlan and TernaryBackwardPlan, every kind from one table
// of kinds below: a kind is one line there. Each line gives the intervals of a, b and c where the kind
// is smooth (clamp: x inside its bounds, above, below, and bounds that cross, each away from the kinks
// by more than the finite differences' step) and value. Every line runs at the same shapes: edge
// sizes, the three operands of one shape, broadcasts of each (rows, columns, outer products, rank 0,
// along an empty dim), scalar operands, and padded, transposed, broadcast and misaligned views.
// Special values (NaN, ties with the bounds), in-place runs and the optional gradients are
// tests/test_ternary.cpp's.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "harness/op_row.hpp"
#include "harness/reference/ternary_reference.hpp"

namespace baracuda::harness {
namespace {

using Desc = TernaryDescriptor;
using K = TernaryKind;

struct Interval {
  double lo = -1, hi = 1;
};

struct KindLine {
  TernaryKind kind;
  Interval a, b, c;
  double value = 1.0;
};

const std::vector<KindLine>& kinds() {
  static const std::vector<KindLine> table = {
      {K::where, {0, 2}, {-2, 2}, {-2, 2}},  // a: bool
      {K::clamp, {-1, 1}, {-3, -2}, {2, 3}},         {K::clamp, {2, 3}, {-1, -0.5}, {0.5, 1}},
      {K::clamp, {-3, -2}, {-1, -0.5}, {0.5, 1}},    {K::clamp, {-1, 1}, {2, 3}, {-3, -2}},  // b > c: the result is c
      {K::addcdiv, {-2, 2}, {-2, 2}, {0.5, 2}, 0.7}, {K::addcdiv, {-2, 2}, {-2, 2}, {-2, -0.5}, -1.5},
  };
  return table;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

std::string label(const KindLine& k) {
  std::string s(ternary_kind_name(k.kind));
  const Interval* r[3] = {&k.a, &k.b, &k.c};
  const char* names[3] = {"a", "b", "c"};
  for (int i = 0; i < 3; ++i) {
    if (i == 0 && k.kind == K::where) continue;
    s += std::string(", ") + names[i] + " in [" + number(r[i]->lo) + ", " + number(r[i]->hi) + ")";
  }
  return s;
}

// (A function, not a global: the table is built during other files' static initialization.)
std::vector<DType> float_dtypes() { return {DType::f32, DType::f64, DType::f16, DType::bf16}; }

// The integer dtypes (forward only; no gradient): where on every one and bool, clamp on the integers,
// on whole numbers (clamp's bounds crossing in some elements), at edge sizes, broadcasts, scalar
// operands and every kind of view.
void add_integer_samples(std::vector<Sample<Desc>>& out) {
  for (const K kind : {K::where, K::clamp}) {
    for (const bool of_bool : {false, true}) {
      std::vector<DType> dtypes;
      for (DType t : {DType::i8, DType::u8, DType::i32, DType::i64, DType::boolean})
        if ((t == DType::boolean) == of_bool && ternary_kind_takes(kind, t)) dtypes.push_back(t);
      if (dtypes.empty()) continue;
      // (u8 shares the non-negative ranges; bool's values are 0 and 1)
      std::vector<ValueRange> ranges = {{"b", 0, of_bool ? 2.0 : 40}, {"c", of_bool ? 0.0 : 20, of_bool ? 2.0 : 90}};
      if (kind != K::where) ranges.push_back({"a", 0, 100});
      auto add = [&](Shape a, Shape b, Shape c, Views views = Views::contiguous, std::optional<double> b_scalar = {},
                     std::optional<double> c_scalar = {}) {
        Desc d;
        d.kind = kind;
        d.a_shape = a;
        d.b_shape = b;
        d.c_shape = c;
        d.b_scalar = b_scalar;
        d.c_scalar = c_scalar;
        std::string note = std::string(ternary_kind_name(kind)) + ", integers";
        if (b_scalar) note += ", b the scalar " + number(*b_scalar);
        if (c_scalar) note += ", c the scalar " + number(*c_scalar);
        out.push_back({d, views, {}, std::nullopt, note, dtypes, ranges});
      };
      for (const Shape& s : {Shape{0}, Shape{}, Shape{7}, Shape{4097}, Shape{37, 53}}) add(s, s, s);
      add({37, 53}, {53}, {37, 1});
      add({37, 1}, {1, 53}, {});
      add({37, 53}, {}, {}, Views::contiguous, 1.0, 0.0);  // where(cond, 1, 0), clamp(x, 1, 0): 0
      add({37, 53}, {}, {37, 53}, Views::contiguous, 1.0);
      for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
        add({33, 128}, {33, 128}, {33, 128}, v);
        add({33, 128}, {128}, {33, 1}, v);
      }
    }
  }
}

std::vector<Sample<Desc>> samples(bool backward) {
  std::vector<Sample<Desc>> out;
  const std::string_view input = backward ? "dout" : "b", output = backward ? "dc" : "out";
  for (const KindLine& k : kinds()) {
    // where's condition keeps the default bool range; the floats take the line's.
    std::vector<ValueRange> ranges = {{"b", k.b.lo, k.b.hi}, {"c", k.c.lo, k.c.hi}};
    if (k.kind != K::where) ranges.push_back({"a", k.a.lo, k.a.hi});
    auto add = [&](Shape a, Shape b, Shape c, Views views = Views::contiguous, std::string_view only = {}) {
      Desc d;
      d.kind = k.kind;
      d.value = k.value;
      d.a_shape = a;
      d.b_shape = b;
      d.c_shape = c;
      out.push_back({d, views, only, std::nullopt, label(k), float_dtypes(), ranges});
    };
    // Scalars (the middle of their interval) for the operands marked.
    auto add_scalars = [&](bool sa, bool sb, bool sc, Shape shape) {
      if ((sa && k.kind == K::where) || k.kind == K::addcdiv) return;  // (addcdiv: three tensors alone)
      Desc d;
      d.kind = k.kind;
      d.value = k.value;
      d.a_shape = d.b_shape = d.c_shape = shape;
      std::string note = label(k);
      if (sa) d.a_scalar = 0.5 * (k.a.lo + k.a.hi), note += ", a a scalar";
      if (sb) d.b_scalar = 0.5 * (k.b.lo + k.b.hi), note += ", b a scalar";
      if (sc) d.c_scalar = 0.5 * (k.c.lo + k.c.hi), note += ", c a scalar";
      out.push_back({d, Views::contiguous, {}, std::nullopt, note, float_dtypes(), ranges});
    };
    for (const Shape& s : {Shape{0}, Shape{0, 5}, Shape{}, Shape{1}, Shape{7}, Shape{4097}, Shape{37, 53},
                           Shape{2, 1, 3, 2, 2, 1, 3, 2}})
      add(s, s, s);
    add({37, 53}, {53}, {37, 1});     // a row and a column
    add({53}, {37, 53}, {37, 53});    // a broadcast along rows
    add({37, 1}, {1, 53}, {});        // an outer product and a rank-0 tensor
    add({5, 1, 11}, {7, 1}, {11});    // every operand broadcast, over different dims
    add({1, 5}, {0, 5}, {5});         // a broadcast along an empty dim: da is zeros
    add({300, 64}, {64}, {300, 64});  // long reductions
    add({4, 2001}, {4, 2001}, {4, 1});
    add_scalars(false, true, true, {37, 53});  // clamp(x, lo, hi), where(cond, 1.0, 0.0)
    add_scalars(false, false, true, {37, 53});
    add_scalars(false, true, false, {37, 53});
    add_scalars(true, false, false, {37, 53});
    add_scalars(true, true, false, {4097});
    for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
      add({33, 128}, {33, 128}, {33, 128}, v);
      add({33, 128}, {128}, {33, 1}, v);
    }
    add({5, 7, 11}, {5, 7, 11}, {5, 7, 11}, Views::transposed);
    add({4097}, {4097}, {4097}, Views::misaligned, input);
    add({4097}, {4097}, {4097}, Views::misaligned, output);
    add({4097}, {4097}, {4097}, Views::misaligned, "a");
  }
  if (!backward) add_integer_samples(out);
  return out;
}
std::vector<Sample<Desc>> forward_samples() { return samples(false); }
std::vector<Sample<Desc>> backward_samples() { return samples(true); }

void forward_reference(const Desc& d, RefIO& io) { reference::ternary_forward(d, io); }
void backward_reference(const Desc& d, RefIO& io) { reference::ternary_backward(d, io); }

std::vector<DescriptorError<Desc>> errors() {
  return {
      {"unknown kind", [](Desc& d) { d.kind = static_cast<TernaryKind>(200); }, StatusCode::invalid_problem,
       "descriptor.kind"},
      {"addcdiv with a scalar",
       [](Desc& d) {
         d.kind = TernaryKind::addcdiv;
         d.b_scalar = 2.0;
       },
       StatusCode::invalid_problem, "descriptor.b_scalar"},
      {"negative size",
       [](Desc& d) {
         d.c_shape = {4, -3};
       },
       StatusCode::invalid_problem, "descriptor.c_shape[1]"},
      {"rank 9", [](Desc& d) { d.b_shape = {1, 2, 3, 4, 5, 6, 7, 8, 9}; }, StatusCode::invalid_problem,
       "descriptor.b_shape.rank"},
      {"shapes that do not broadcast",
       [](Desc& d) {
         d.a_shape = {4, 6};
         d.b_shape = {6};
         d.c_shape = {5, 1};
         d.a_scalar = d.b_scalar = d.c_scalar = std::nullopt;
       },
       StatusCode::invalid_problem, "descriptor.c_shape[0]"},
      {"three scalars",
       [](Desc& d) {
         d.kind = TernaryKind::clamp;
         d.a_scalar = d.b_scalar = d.c_scalar = 1.0;
       },
       StatusCode::invalid_problem, "descriptor.c_scalar"},
      {"a scalar condition",
       [](Desc& d) {
         d.kind = TernaryKind::where;
         d.a_scalar = 1.0;
       },
       StatusCode::invalid_problem, "descriptor.a_scalar"},
  };
}

// The profiler's cases: [N, D] outputs, 2^26 elements on the GPU (far past L2), 2^22 on the CPU;
// and an odd size.
std::vector<Shape> standard_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{16384, 4096}, {1000, 1001}};
  return {{1024, 4096}, {1000, 1001}};
}
enum class Bounds { tensors, scalars, row };
template <TernaryKind kKind, Bounds kBounds>
Desc bench_desc(DType dtype, const Shape& shape) {
  Desc d;
  d.kind = kKind;
  d.dtype = dtype;
  d.a_shape = d.b_shape = d.c_shape = shape;
  if (kBounds == Bounds::scalars) d.b_scalar = -0.5, d.c_scalar = 0.5;
  if (kBounds == Bounds::row) d.c_shape = {shape.dims[1]};
  if (kKind == TernaryKind::addcdiv) d.value = 0.5;
  return d;
}

std::vector<BenchSample<Desc>> forward_bench() {
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  return {{"where", "torch.where(cond, b, c)", dtypes, standard_shapes, bench_desc<K::where, Bounds::tensors>},
          {"clamp", "torch.clamp(x, -0.5, 0.5)", dtypes, standard_shapes, bench_desc<K::clamp, Bounds::scalars>},
          {"clamp_tensors", "torch.clamp(x, lo, hi)", dtypes, standard_shapes, bench_desc<K::clamp, Bounds::tensors>},
          {"addcdiv", "torch.addcdiv(a, b, c, value=0.5)", dtypes, standard_shapes,
           bench_desc<K::addcdiv, Bounds::tensors>}};
}
std::vector<BenchSample<Desc>> backward_bench() {
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  return {{"where_backward", "autograd of torch.where(cond, b, c)", dtypes, standard_shapes,
           bench_desc<K::where, Bounds::tensors>},
          {"clamp_backward", "autograd of torch.clamp(x, -0.5, 0.5)", dtypes, standard_shapes,
           bench_desc<K::clamp, Bounds::scalars>},
          {"clamp_row_backward", "autograd of torch.clamp(x, lo, hi[D])", dtypes, standard_shapes,
           bench_desc<K::clamp, Bounds::row>},
          {"addcdiv_backward", "autograd of torch.addcdiv(a, b, c, value=0.5)", dtypes, standard_shapes,
           bench_desc<K::addcdiv, Bounds::tensors>}};
}

// The profiler's inputs: x across the clamp bounds (lo below hi).
std::vector<ValueRange> bench_ranges() { return {{"a", -1.0, 1.0}, {"b", -1.0, -0.5}, {"c", 0.5, 1.0}}; }

}  // namespace

std::vector<std::unique_ptr<OpRow>> ternary_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  rows.push_back(make_row<TernaryPlan>(
      {forward_samples, forward_reference, harness::tolerance, bench_ranges(), errors(), forward_bench()}));
  rows.push_back(make_row<TernaryBackwardPlan>({backward_samples,
                                                backward_reference,
                                                harness::tolerance,
                                                bench_ranges(),
                                                errors(),
                                                backward_bench(),
                                                forward_of<TernaryPlan>,
                                                {"dout", "out", {{"da", "a"}, {"db", "b"}, {"dc", "c"}}}}));
  return rows;
}

}  // namespace baracuda::harness

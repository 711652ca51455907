// Op-table rows of the gated units: GatedPlan and GatedBackwardPlan, every kind, at edge sizes
// (D = 1, odd D, D not a multiple of a 16-byte vector, rank 8), a wide vectorizable row, and padded,
// transposed, broadcast and misaligned views. x's values stay where each activation is smooth
// (reglu away from its kink at 0, on both sides).
#include <string>
#include <vector>

#include "harness/op_row.hpp"
#include "harness/reference/gated_reference.hpp"

namespace baracuda::harness {
namespace {

using Desc = GatedDescriptor;

std::vector<Sample<Desc>> samples() {
  std::vector<Sample<Desc>> out;
  for (int k = 0; k < kGatedKindCount; ++k) {
    const auto kind = static_cast<GatedKind>(k);
    // reglu: b on one side of 0 (a on it too, which is harmless).
    const std::vector<ValueRange> ranges = kind == GatedKind::reglu
                                               ? std::vector<ValueRange>{{"x", 0.05, 2}, {"x", -2, -0.05}}
                                               : std::vector<ValueRange>{{"x", -3, 3}};
    for (const ValueRange& r : ranges) {
      auto add = [&](Shape shape, Views views = Views::contiguous, std::string_view only = {}) {
        Desc d;
        d.kind = kind;
        d.shape = shape;
        const std::string label =
            std::string(gated_kind_name(kind)) + ", x in [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + ")";
        out.push_back({d, views, only, std::nullopt, label, {}, {r}});
      };
      for (const Shape& s : {Shape{0}, Shape{3, 0}, Shape{2}, Shape{14}, Shape{37, 106}, Shape{5, 7, 2},
                             Shape{2, 1, 3, 2, 2, 1, 3, 4}, Shape{33, 256}, Shape{3, 8194}})
        add(s);
      for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) add({33, 256}, v);
      add({33, 256}, Views::misaligned, "x");
    }
  }
  return out;
}

void forward_reference(const Desc& d, RefIO& io) { reference::gated_forward(d, io); }
void backward_reference(const Desc& d, RefIO& io) { reference::gated_backward(d, io); }

std::vector<DescriptorError<Desc>> errors() {
  return {
      {"unknown kind", [](Desc& d) { d.kind = static_cast<GatedKind>(99); }, StatusCode::invalid_problem,
       "descriptor.kind"},
      {"odd last dim",
       [](Desc& d) {
         d.shape = {4, 7};
       },
       StatusCode::invalid_problem, "descriptor.shape[1]"},
      {"rank 0", [](Desc& d) { d.shape = {}; }, StatusCode::invalid_problem, "descriptor.shape.rank"},
      {"negative size",
       [](Desc& d) {
         d.shape = {-2, 4};
       },
       StatusCode::invalid_problem, "descriptor.shape[0]"},
  };
}

// The profiler's cases name the output's shape [N, D] (x is [N, 2D]): 2^26 elements on the GPU, 2^22
// on the CPU; and an odd size.
std::vector<Shape> standard_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{16384, 4096}, {1000, 1001}};
  return {{1024, 4096}, {1000, 1001}};
}
template <GatedKind kKind>
Desc bench_desc(DType dtype, const Shape& out) {
  Desc d;
  d.kind = kKind;
  d.dtype = dtype;
  d.shape = out;
  if (out.rank > 0) d.shape.dims[out.rank - 1] *= 2;
  return d;
}

std::vector<BenchSample<Desc>> forward_bench() {
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  return {{"swiglu", "a * F.silu(b), x = [a, b]", dtypes, standard_shapes, bench_desc<GatedKind::swiglu>},
          {"geglu", "a * F.gelu(b), x = [a, b]", dtypes, standard_shapes, bench_desc<GatedKind::geglu>}};
}
std::vector<BenchSample<Desc>> backward_bench() {
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  return {{"swiglu_backward", "autograd of a * F.silu(b), x = [a, b]", dtypes, standard_shapes,
           bench_desc<GatedKind::swiglu>},
          {"geglu_backward", "autograd of a * F.gelu(b), x = [a, b]", dtypes, standard_shapes,
           bench_desc<GatedKind::geglu>}};
}

}  // namespace

std::vector<std::unique_ptr<OpRow>> gated_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  rows.push_back(make_row<GatedPlan>({samples, forward_reference, harness::tolerance, {}, errors(), forward_bench()}));
  rows.push_back(make_row<GatedBackwardPlan>({samples,
                                              backward_reference,
                                              harness::tolerance,
                                              {},
                                              errors(),
                                              backward_bench(),
                                              forward_of<GatedPlan>,
                                              {"dout", "out", {{"dx", "x"}}}}));
  return rows;
}

}  // namespace baracuda::harness

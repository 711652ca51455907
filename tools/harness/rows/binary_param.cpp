// Op-table rows of the BinaryParam family: lerp and addcmul, forward and backward.
#include "harness/op_row.hpp"
#include "harness/reference/binary_param_reference.hpp"

namespace baracuda::harness {
namespace {

using Desc = BinaryParamDescriptor;

Desc scalar_weight(Shape shape, double w) { return {DType::f32, shape, WeightMode::scalar, w, {}}; }
Desc tensor_weight(Shape shape, Shape weight_shape) {
  return {DType::f32, shape, WeightMode::tensor, 0.0, weight_shape};
}
// A weight over the last dim (per feature), broadcast over the rows.
Shape last_dim(const Shape& shape) { return shape.rank == 0 ? Shape{} : Shape{shape.dims[shape.rank - 1]}; }

std::string describe_weight(const Desc& d) {
  return d.weight_mode == WeightMode::scalar ? "w " + std::to_string(d.weight) : "weight " + d.weight_shape.to_string();
}

// Edge sizes (empty, one element, odd, prime, not a multiple of a 16-byte vector, rank 0 to 8) with a
// scalar weight and weight tensors of every broadcast; strided, broadcast and misaligned views; and
// the broadcast reductions of the backward's dweight.
std::vector<Sample<Desc>> samples(std::string_view misaligned_alone) {
  std::vector<Sample<Desc>> out;
  auto add = [&](Desc d, Views views = Views::contiguous, std::string_view only = {}) {
    std::string note = describe_weight(d);
    out.push_back({d, views, only, std::nullopt, std::move(note)});
  };
  for (const Shape& s :
       {Shape{0}, Shape{0, 5}, Shape{}, Shape{1}, Shape{3}, Shape{4}, Shape{7, 13}, Shape{4097}, Shape{37, 53},
        Shape{5, 7, 11}, Shape{33, 128}, Shape{3, 1031}, Shape{2, 1, 3, 2, 2, 1, 3, 2}}) {
    add(scalar_weight(s, 0.3));
    add(tensor_weight(s, s));
    add(tensor_weight(s, {}));
    if (s.rank >= 1) add(tensor_weight(s, last_dim(s)));
    if (s.rank >= 2) {
      Shape per_row = s;
      per_row.dims[s.rank - 1] = 1;
      add(tensor_weight(s, per_row));
    }
  }
  add(scalar_weight({1000}, 0.0));  // the endpoints are exact
  add(scalar_weight({1000}, 1.0));
  for (const Shape& s : {Shape{37, 53}, Shape{5, 7, 11}, Shape{33, 128}, Shape{4097}}) {
    for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
      add(scalar_weight(s, 0.7), v);
      add(tensor_weight(s, last_dim(s)), v);
    }
  }
  add(scalar_weight({4097}, 0.25), Views::misaligned, misaligned_alone);
  add(tensor_weight({7, 300, 9}, {7, 1, 9}));
  add(tensor_weight({4, 20011}, {4, 1}));
  add(tensor_weight({5000, 3}, {}));
  return out;
}
std::vector<Sample<Desc>> forward_samples() { return samples("a"); }
std::vector<Sample<Desc>> backward_samples() { return samples("db"); }

void lerp_reference(const Desc& d, RefIO& io) { reference::binary_param_forward(d, io, reference::lerp); }
void lerp_backward_reference(const Desc& d, RefIO& io) {
  reference::binary_param_backward(d, io, reference::lerp_da, reference::lerp_db, reference::lerp_dw);
}
void addcmul_reference(const Desc& d, RefIO& io) { reference::binary_param_forward(d, io, reference::addcmul); }
void addcmul_backward_reference(const Desc& d, RefIO& io) {
  reference::binary_param_backward(d, io, reference::addcmul_da, reference::addcmul_db, reference::addcmul_dw);
}

// (Functions, not globals: the table is built during other files' static initialization.)
std::vector<DescriptorError<Desc>> errors() {
  return {
      {"negative size",
       [](Desc& d) {
         d = scalar_weight({4, -3}, 0.5);
       },
       StatusCode::invalid_problem, "descriptor.shape[1]"},
      {"rank 9",
       [](Desc& d) {
         d = scalar_weight({1, 2, 3, 4, 5, 6, 7, 8, 9}, 0.5);
       },
       StatusCode::invalid_problem, "descriptor.shape.rank"},
      {"weight not broadcastable",
       [](Desc& d) {
         d = tensor_weight({4, 6}, {5});
       },
       StatusCode::invalid_problem, "descriptor.weight_shape[0]"},
      {"weight of a higher rank",
       [](Desc& d) {
         d = tensor_weight({4, 6}, {1, 4, 6});
       },
       StatusCode::invalid_problem, "descriptor.weight_shape"},
      {"unknown weight mode", [](Desc& d) { d.weight_mode = static_cast<WeightMode>(7); }, StatusCode::invalid_problem,
       "descriptor.weight_mode"},
  };
}

// The profiler's cases: [N, D] outputs with a scalar weight and with a weight over D.
std::vector<Shape> standard_shapes(Backend backend) {
  // 2^26 elements on the GPU (far past L2), 2^22 on the CPU; plus an odd size off the vector width.
  if (backend == Backend::cuda) return {{16384, 4096}, {1000, 1001}};
  return {{1024, 4096}, {1000, 1001}};
}
Desc bench_scalar(DType dtype, const Shape& shape) { return {dtype, shape, WeightMode::scalar, 0.3, {}}; }
Desc bench_feature(DType dtype, const Shape& shape) { return {dtype, shape, WeightMode::tensor, 0.3, last_dim(shape)}; }

std::vector<BenchSample<Desc>> bench(std::string_view scalar_name, std::string_view scalar_torch,
                                     std::string_view feature_name, std::string_view feature_torch) {
  const std::vector<DType> floats = {DType::f32, DType::bf16, DType::f16, DType::f64};
  return {{scalar_name, scalar_torch, floats, standard_shapes, bench_scalar},
          {feature_name, feature_torch, floats, standard_shapes, bench_feature}};
}

std::vector<ValueRange> weight_range() { return {{"weight", -0.5, 1.5}}; }

template <class Forward, class Backward>
void add_op(std::vector<std::unique_ptr<OpRow>>& rows, void (*reference)(const Desc&, RefIO&),
            void (*backward_reference)(const Desc&, RefIO&), std::vector<BenchSample<Desc>> forward_bench,
            std::vector<BenchSample<Desc>> backward_bench) {
  rows.push_back(make_row<Forward>(
      {forward_samples, reference, harness::tolerance, weight_range(), errors(), std::move(forward_bench)}));
  rows.push_back(make_row<Backward>({backward_samples,
                                     backward_reference,
                                     harness::tolerance,
                                     weight_range(),
                                     errors(),
                                     std::move(backward_bench),
                                     forward_of<Forward>,
                                     {"dout", "out", {{"da", "a"}, {"db", "b"}, {"dweight", "weight"}}}}));
}

}  // namespace

std::vector<std::unique_ptr<OpRow>> binary_param_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  add_op<LerpPlan, LerpBackwardPlan>(
      rows, lerp_reference, lerp_backward_reference,
      bench("lerp", "torch.lerp(a, b, 0.3)", "lerp_feature_weight", "torch.lerp(a, b, w[D])"),
      bench("lerp_backward", "autograd of torch.lerp(a, b, 0.3)", "lerp_feature_weight_backward",
            "autograd of torch.lerp(a, b, w[D])"));
  add_op<AddcmulPlan, AddcmulBackwardPlan>(
      rows, addcmul_reference, addcmul_backward_reference,
      bench("addcmul", "torch.add(a, b, alpha=0.3)", "addcmul_feature_weight", "torch.addcmul(a, b, w[D])"),
      bench("addcmul_backward", "autograd of torch.add(a, b, alpha=0.3)", "addcmul_feature_weight_backward",
            "autograd of torch.addcmul(a, b, w[D])"));
  return rows;
}

}  // namespace baracuda::harness

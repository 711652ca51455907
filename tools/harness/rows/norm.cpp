// Op-table rows of the norm family: LayerNorm and RmsNorm, forward and backward. Row lengths either
// side of each CUDA threshold (the rows a block holds: 32768 values forward, 8192 backward, half
// for f64; the 16-byte vectors), one to 2^20 elements; one row and 2^16 rows; two normalized dims
// and rank 8; every option (weight, bias, Gemma's 1 + w, f32 weights, the fused residual); and
// padded, transposed, broadcast and misaligned views. Edge values (constant rows, 1e30, NaN, inf)
// and batch invariance are tests/test_norm.cpp's.
#include <string>
#include <vector>

#include "harness/op_row.hpp"
#include "harness/reference/norm_reference.hpp"

namespace baracuda::harness {
namespace {

using Desc = NormDescriptor;

Desc norm(Shape shape, int dims = 1) {
  Desc d;
  d.shape = shape;
  d.normalized_dims = dims;
  return d;
}

// The samples of one kind; the backward's fused-residual samples are padded (the table's finite
// differences take contiguous samples, and feed the backward's x from the forward's x, not h).
std::vector<Sample<Desc>> samples(bool rms, bool backward) {
  std::vector<Sample<Desc>> out;
  auto add = [&](Desc d, Views views = Views::contiguous, std::string note = {}, std::vector<DType> dtypes = {}) {
    if (rms) d.has_bias = false;
    if (backward && d.residual && views == Views::contiguous) views = Views::padded;
    out.push_back({d, views, {}, std::nullopt, std::move(note), std::move(dtypes)});
  };
  // Rows of 1 to 3 with eps 0.1: their variance can be near 0, where the map bends within the
  // finite differences' step (tests/test_op_table.cpp); eps keeps it smooth.
  for (int64_t n : {1, 2, 3}) {
    Desc d = norm({5, n});
    d.eps = 0.1;
    add(d, Views::contiguous, "eps 0.1");
  }
  for (int64_t n : {8, 127, 768, 4096, 5120}) add(norm({5, n}));
  // Both sides of the CUDA kernels' row shapes (ops/norm_problem.hpp's norm_block_shape): rows of up
  // to 32 vectors a warp shares, up to 32 x the held vectors a warp each, then blocks; 37 rows leave
  // a block's last row groups empty.
  for (int64_t n : {64, 128, 136, 256, 264, 512, 520}) add(norm({37, n}));
  for (int64_t n : {4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 32768, 32769}) add(norm({2, n}));
  add(norm({1, 65536}));
  add(norm({1 << 20}), Views::contiguous, "one row of 2^20", {DType::f32, DType::bf16});
  Desc many = norm({65536, 3});
  many.eps = 0.1;
  add(many, Views::contiguous, "2^16 rows, eps 0.1");
  add(norm({7}));  // rank 1: one row
  add(norm({4, 6, 10}, 2));
  add(norm({2, 1, 3, 2, 2, 1, 3, 8}, 3));
  add(norm({0, 16}));
  add(norm({3, 0}));
  Desc bare = norm({9, 40});
  bare.has_weight = bare.has_bias = false;
  add(bare, Views::contiguous, "no weight, no bias");
  Desc weight_only = norm({9, 40});
  weight_only.has_bias = false;
  add(weight_only, Views::contiguous, "no bias");
  Desc gemma = norm({9, 256});
  gemma.weight_offset = 1.0;
  gemma.has_bias = false;
  add(gemma, Views::contiguous, "1 + w");
  Desc f32_weight = norm({9, 256});
  f32_weight.weight_dtype = DType::f32;
  // (Padded in the backward: a step of the finite differences is lost in an f32 weight's rounding.)
  add(f32_weight, backward ? Views::padded : Views::contiguous, "f32 weight");
  for (int64_t n : {24, 4096, 9000}) {
    Desc residual = norm({6, n});
    residual.residual = true;
    add(residual, Views::contiguous, "residual");
  }
  Desc eps = norm({6, 64});
  eps.eps = 0.5;
  add(eps, Views::contiguous, "eps 0.5");
  for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
    add(norm({33, 256}), v);
    add(norm({5, 6, 7}, 2), v);
    Desc residual = norm({17, 64});
    residual.residual = true;
    add(residual, v, "residual");
  }
  return out;
}

std::vector<DescriptorError<Desc>> errors(bool rms) {
  std::vector<DescriptorError<Desc>> e = {
      {"rank 0", [](Desc& d) { d.shape = {}; }, StatusCode::invalid_problem, "descriptor.shape.rank"},
      {"negative size",
       [](Desc& d) {
         d.shape = {4, -3};
       },
       StatusCode::invalid_problem, "descriptor.shape[1]"},
      {"normalized_dims 0", [](Desc& d) { d.normalized_dims = 0; }, StatusCode::invalid_problem,
       "descriptor.normalized_dims"},
      {"normalized_dims past the rank", [](Desc& d) { d.normalized_dims = d.shape.rank + 1; },
       StatusCode::invalid_problem, "descriptor.normalized_dims"},
      {"eps 0", [](Desc& d) { d.eps = 0; }, StatusCode::invalid_problem, "descriptor.eps"},
      {"eps negative", [](Desc& d) { d.eps = -1e-5; }, StatusCode::invalid_problem, "descriptor.eps"},
      {"eps NaN", [](Desc& d) { d.eps = std::nan(""); }, StatusCode::invalid_problem, "descriptor.eps"},
      {"eps inf", [](Desc& d) { d.eps = INFINITY; }, StatusCode::invalid_problem, "descriptor.eps"},
      {"weight_offset NaN", [](Desc& d) { d.weight_offset = std::nan(""); }, StatusCode::invalid_problem,
       "descriptor.weight_offset"},
      {"weight_offset without a weight",
       [](Desc& d) {
         d.has_weight = false;
         d.has_bias = false;
         d.weight_offset = 1;
       },
       StatusCode::invalid_problem, "descriptor.weight_offset"},
      {"integer weight_dtype", [](Desc& d) { d.weight_dtype = DType::i32; }, StatusCode::unsupported,
       "descriptor.weight_dtype"},
  };
  if (rms)
    e.push_back({"a bias", [](Desc& d) { d.has_bias = true; }, StatusCode::invalid_problem, "descriptor.has_bias"});
  return e;
}

// The shapes on the GPU ([rows, n]); a CPU size JAX is compared at.
std::vector<Shape> standard_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{8192, 4096}, {32768, 8192}, {4096, 65536}, {65536, 768}};
  return {{2048, 4096}, {8192, 768}};
}
template <bool kRms, bool kResidual = false>
Desc bench_desc(DType dtype, const Shape& shape) {
  Desc d = norm(shape);
  d.dtype = dtype;
  d.has_bias = !kRms;
  d.residual = kResidual;
  return d;
}

std::vector<BenchSample<Desc>> bench(bool rms, bool backward) {
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  if (rms) {
    if (backward)
      return {{"rms_norm_backward", "autograd of F.rms_norm(x, [n], w)", dtypes, standard_shapes, bench_desc<true>}};
    return {{"rms_norm", "F.rms_norm(x, [n], w)", dtypes, standard_shapes, bench_desc<true>},
            {"add_rms_norm", "h = x + r; F.rms_norm(h, [n], w)", dtypes, standard_shapes, bench_desc<true, true>}};
  }
  if (backward)
    return {
        {"layer_norm_backward", "autograd of F.layer_norm(x, [n], w, b)", dtypes, standard_shapes, bench_desc<false>}};
  return {{"layer_norm", "F.layer_norm(x, [n], w, b)", dtypes, standard_shapes, bench_desc<false>}};
}

// The saved rstd in the backward's samples is random: away from 0, as a real one is.
std::vector<ValueRange> backward_ranges() { return {{"rstd", 0.5, 2.0}}; }

template <bool kRms>
void forward_reference(const Desc& d, RefIO& io) {
  reference::norm_forward(d, kRms, io);
}
template <bool kRms>
void backward_reference(const Desc& d, RefIO& io) {
  reference::norm_backward(d, kRms, io);
}
template <bool kRms, bool kBackward>
std::vector<Sample<Desc>> samples_of() {
  return samples(kRms, kBackward);
}

}  // namespace

std::vector<std::unique_ptr<OpRow>> norm_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  const Gradient layer_gradient{"dy", "y", {{"dx", "x"}, {"dweight", "weight"}, {"dbias", "bias"}}};
  const Gradient rms_gradient{"dy", "y", {{"dx", "x"}, {"dweight", "weight"}}};
  rows.push_back(make_row<LayerNormPlan>({samples_of<false, false>,
                                          forward_reference<false>,
                                          harness::tolerance,
                                          {},
                                          errors(false),
                                          bench(false, false)}));
  rows.push_back(make_row<LayerNormBackwardPlan>({samples_of<false, true>, backward_reference<false>,
                                                  harness::tolerance, backward_ranges(), errors(false),
                                                  bench(false, true), forward_of<LayerNormPlan>, layer_gradient}));
  rows.push_back(make_row<RmsNormPlan>(
      {samples_of<true, false>, forward_reference<true>, harness::tolerance, {}, errors(true), bench(true, false)}));
  rows.push_back(make_row<RmsNormBackwardPlan>({samples_of<true, true>, backward_reference<true>, harness::tolerance,
                                                backward_ranges(), errors(true), bench(true, true),
                                                forward_of<RmsNormPlan>, rms_gradient}));
  return rows;
}

}  // namespace baracuda::harness

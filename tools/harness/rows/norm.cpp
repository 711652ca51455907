// Op-table rows of the norm family: LayerNorm, RmsNorm, GroupNorm and BatchNorm, forward and backward. Row lengths
// either side of each CUDA threshold (the rows a block holds: 32768 values forward, 8192 backward, half for f64; the
// 16-byte vectors), one to 2^20 elements; one row and 2^16 rows; two normalized dims and rank 8; every option (weight,
// bias, Gemma's 1 + w, f32 weights, the fused residual); and padded, transposed, broadcast and misaligned views. Edge
// values (constant rows, 1e30, NaN, inf) and batch invariance are tests/test_norm.cpp's.
#include <numeric>
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

// ---------------------------------------------------------------------------------------------
// GroupNorm: groups of one channel (instance norm) to every channel, no spatial dims to rank 8,
// group sizes either side of the CUDA block sizes (ops/group_norm_problem.hpp: 64 threads below
// 256 elements, 512 from 2048; the backward's from the spatial size), every option (no weight or
// bias, f32 weights, SiLU), no samples and empty groups, and channels-last, padded, transposed,
// broadcast and misaligned views.
using GroupDesc = GroupNormDescriptor;

GroupDesc group_norm(Shape shape, int64_t groups, double eps = 1e-5) {
  GroupDesc d;
  d.shape = shape;
  d.groups = groups;
  d.eps = eps;
  return d;
}

std::vector<Sample<GroupDesc>> group_samples(bool backward) {
  std::vector<Sample<GroupDesc>> out;
  auto add = [&](GroupDesc d, Views views = Views::contiguous, std::string note = {}, std::vector<DType> dtypes = {}) {
    out.push_back({d, views, {}, std::nullopt, std::move(note), std::move(dtypes)});
  };
  // Small groups with eps 0.1: their variance can be near 0 (see the LayerNorm rows).
  add(group_norm({3, 4}, 2, 0.1), Views::contiguous, "no spatial dims, eps 0.1");
  add(group_norm({2, 6, 5}, 3, 0.1), Views::contiguous, "eps 0.1");
  add(group_norm({2, 8, 4, 4}, 8, 0.1), Views::contiguous, "instance norm, eps 0.1");
  add(group_norm({2, 8, 4, 4}, 1), Views::contiguous, "one group");
  add(group_norm({3, 6, 7, 9}, 3));
  for (int64_t spatial : {63, 64, 65, 255, 257, 2047, 2049}) add(group_norm({2, 4, spatial}, 2));
  add(group_norm({1, 64, 32, 32}, 32), Views::contiguous, "one sample");
  add(group_norm({2, 64, 64, 64}, 32), Views::contiguous, "groups of 2^13", {DType::f32, DType::bf16});
  add(group_norm({2, 4, 3, 2, 3}, 2));
  add(group_norm({2, 2, 1, 2, 1, 2, 1, 3}, 1), Views::contiguous, "rank 8");
  add(group_norm({0, 4, 3}, 2));
  add(group_norm({2, 4, 0}, 2));
  add(group_norm({2, 0, 3}, 1));
  GroupDesc bare = group_norm({3, 8, 10}, 4);
  bare.has_weight = bare.has_bias = false;
  add(bare, Views::contiguous, "no weight, no bias");
  GroupDesc weight_only = group_norm({3, 8, 10}, 4);
  weight_only.has_bias = false;
  add(weight_only, Views::contiguous, "no bias");
  GroupDesc f32_weight = group_norm({3, 8, 10}, 2);
  f32_weight.weight_dtype = DType::f32;
  // (Padded in the backward: a step of the finite differences is lost in an f32 weight's rounding.)
  add(f32_weight, backward ? Views::padded : Views::contiguous, "f32 weight");
  for (bool bias : {true, false}) {
    GroupDesc silu = group_norm({3, 8, 6, 5}, 4);
    silu.silu = true;
    silu.has_bias = bias;
    add(silu, Views::contiguous, bias ? "silu" : "silu, no bias");
  }
  add(group_norm({4, 16, 8, 8}, 4, 0.5), Views::contiguous, "eps 0.5");
  for (Views v : {Views::channels_last, Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
    add(group_norm({3, 8, 6, 5}, 4), v);
    add(group_norm({2, 6, 7}, 3), v);
    GroupDesc silu = group_norm({2, 16, 9, 9}, 8);
    silu.silu = true;
    add(silu, v, "silu");
  }
  add(group_norm({2, 32, 40, 40}, 32), Views::channels_last, "channels-last, groups of 1600");
  add(group_norm({2, 64, 24, 24}, 4), Views::channels_last, "channels-last, groups of 9216", {DType::f32, DType::bf16});
  // The held forward's sizes (cuda/group_norm.cpp's held_shape, 8 vectors a thread): one block to
  // 4,096 vectors, a cluster of 256-thread blocks to 16,384 (sm_90), the two-pass kernel past it;
  // each side of both in f32 (4 elements a vector) and bf16 (8), with more groups than the device
  // holds clusters at once beside the first threshold.
  for (int64_t spatial : {8192, 8196, 32768, 32772})
    add(group_norm({spatial == 8196 ? 400 : 1, 2, spatial}, 1), Views::contiguous, "held sizes", {DType::f32});
  for (int64_t spatial : {16384, 16392, 65536, 65544})
    add(group_norm({spatial == 16392 ? 100 : 1, 2, spatial}, 1), Views::contiguous, "held sizes", {DType::bf16});
  add(group_norm({1, 32, 64, 64}, 2), Views::channels_last, "channels-last, groups of 2^16", {DType::f32, DType::bf16});
  // The held forward's options (groups of whole vectors in every dtype): SiLU, no weight or bias,
  // an f32 weight beside 16-bit data.
  GroupDesc held_silu = group_norm({2, 16, 8, 8}, 8);
  held_silu.silu = true;
  add(held_silu, Views::contiguous, "held, silu");
  GroupDesc held_bare = group_norm({2, 16, 8, 8}, 8);
  held_bare.has_weight = held_bare.has_bias = false;
  add(held_bare, Views::contiguous, "held, no weight, no bias");
  GroupDesc held_f32_weight = group_norm({2, 16, 8, 8}, 8);
  held_f32_weight.weight_dtype = DType::f32;
  if (!backward) add(held_f32_weight, Views::contiguous, "held, f32 weight");  // (the forward's kernel)
  return out;
}

std::vector<DescriptorError<GroupDesc>> group_errors() {
  return {
      {"rank 1", [](GroupDesc& d) { d.shape = {8}; }, StatusCode::invalid_problem, "descriptor.shape.rank"},
      {"negative size",
       [](GroupDesc& d) {
         d.shape = {4, 8, -3};
       },
       StatusCode::invalid_problem, "descriptor.shape[2]"},
      {"groups 0", [](GroupDesc& d) { d.groups = 0; }, StatusCode::invalid_problem, "descriptor.groups"},
      {"groups negative", [](GroupDesc& d) { d.groups = -2; }, StatusCode::invalid_problem, "descriptor.groups"},
      {"groups not dividing C",
       [](GroupDesc& d) {
         d.shape = {2, 6, 4};
         d.groups = 4;
       },
       StatusCode::invalid_problem, "descriptor.groups"},
      {"eps 0", [](GroupDesc& d) { d.eps = 0; }, StatusCode::invalid_problem, "descriptor.eps"},
      {"eps NaN", [](GroupDesc& d) { d.eps = std::nan(""); }, StatusCode::invalid_problem, "descriptor.eps"},
      {"integer weight_dtype", [](GroupDesc& d) { d.weight_dtype = DType::i32; }, StatusCode::unsupported,
       "descriptor.weight_dtype"},
  };
}

// The U-Net shape on the GPU; a smaller one on the CPU.
std::vector<Shape> group_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{32, 512, 64, 64}, {2, 320, 64, 64}};
  return {{4, 128, 32, 32}};
}
// 32 groups (the U-Nets'), or as many as divide C in a shrunk shape.
template <bool kSilu>
GroupDesc group_bench_desc(DType dtype, const Shape& shape) {
  GroupDesc d = group_norm(shape, std::gcd<int64_t>(shape.dims[1], 32));
  d.dtype = dtype;
  d.silu = kSilu;
  return d;
}

// GroupNorm with and without SiLU, each also channels-last (NHWC: x and the tensors shaped like it,
// named by `views`), as PyTorch's channels_last x.
template <bool kSilu>
void add_group_bench(std::vector<BenchSample<GroupDesc>>& out, std::string_view name, std::string_view torch,
                     std::string_view nhwc_name, std::string_view nhwc_torch, std::string_view views) {
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  out.push_back({name, torch, dtypes, group_shapes, group_bench_desc<kSilu>});
  out.push_back({.name = nhwc_name,
                 .torch = nhwc_torch,
                 .dtypes = dtypes,
                 .shapes = group_shapes,
                 .describe = group_bench_desc<kSilu>,
                 .channels_last = views});
}

std::vector<BenchSample<GroupDesc>> group_bench(bool backward) {
  std::vector<BenchSample<GroupDesc>> out;
  if (backward) {
    add_group_bench<false>(out, "group_norm_backward", "autograd of F.group_norm(x, 32, w, b)",
                           "group_norm_backward_nhwc", "autograd of F.group_norm(x, 32, w, b), x channels_last",
                           "dy,x,dx");
    add_group_bench<true>(out, "group_norm_silu_backward", "autograd of F.silu(F.group_norm(x, 32, w, b))",
                          "group_norm_silu_backward_nhwc",
                          "autograd of F.silu(F.group_norm(x, 32, w, b)), x channels_last", "dy,x,dx");
  } else {
    add_group_bench<false>(out, "group_norm", "F.group_norm(x, 32, w, b)", "group_norm_nhwc",
                           "F.group_norm(x, 32, w, b), x channels_last", "x,y");
    add_group_bench<true>(out, "group_norm_silu", "F.silu(F.group_norm(x, 32, w, b))", "group_norm_silu_nhwc",
                          "F.silu(F.group_norm(x, 32, w, b)), x channels_last", "x,y");
  }
  return out;
}

template <bool kBackward>
std::vector<Sample<GroupDesc>> group_samples_of() {
  return group_samples(kBackward);
}
void group_forward_reference(const GroupDesc& d, RefIO& io) { reference::group_norm_forward(d, io); }
void group_backward_reference(const GroupDesc& d, RefIO& io) { reference::group_norm_backward(d, io); }

// ---------------------------------------------------------------------------------------------
// BatchNorm: channels along dim 1, 0 and 2; channel sizes either side of the CUDA chunks (4096
// elements: ops/batch_norm_problem.hpp) and of the 16-byte vectors; training with and without
// running statistics, momentum 0 and 1, inference (rank 1 too), no weight or bias, f32 weights;
// channels-last, padded, transposed, broadcast and misaligned views.
using BatchDesc = BatchNormDescriptor;

BatchDesc batch_norm(Shape shape, int channel_dim = 1, double eps = 1e-5) {
  BatchDesc d;
  d.shape = shape;
  d.channel_dim = channel_dim;
  d.eps = eps;
  return d;
}

std::vector<Sample<BatchDesc>> batch_samples(bool backward) {
  std::vector<Sample<BatchDesc>> out;
  auto add = [&](BatchDesc d, Views views = Views::contiguous, std::string note = {}, std::vector<DType> dtypes = {}) {
    out.push_back({d, views, {}, std::nullopt, std::move(note), std::move(dtypes)});
  };
  add(batch_norm({4, 3}, 1, 0.1), Views::contiguous, "eps 0.1");
  add(batch_norm({2, 3, 5}, 1, 0.1), Views::contiguous, "eps 0.1");
  add(batch_norm({4, 6, 7, 5}));
  add(batch_norm({5, 4, 3}, 0), Views::contiguous, "channels along dim 0");
  add(batch_norm({3, 4, 6}, 2), Views::contiguous, "channels along dim 2");
  for (int64_t m : {4095, 4096, 8192, 8193}) add(batch_norm({1, 2, m}));
  add(batch_norm({64, 16, 32, 32}), Views::contiguous, "2^16 a channel", {DType::f32, DType::bf16});
  add(batch_norm({3, 2, 5, 2, 3}));
  BatchDesc stateless = batch_norm({6, 4, 9});
  stateless.running_stats = false;
  add(stateless, Views::contiguous, "no running statistics");
  for (double momentum : {0.0, 1.0}) {
    BatchDesc m = batch_norm({6, 4, 9});
    m.momentum = momentum;
    add(m, Views::contiguous, momentum == 0 ? "momentum 0" : "momentum 1");
  }
  for (const Shape& shape : {Shape{6, 4, 9}, Shape{7}, Shape{0, 3, 4}}) {
    BatchDesc inference = batch_norm(shape, shape.rank > 1 ? 1 : 0);
    inference.training = false;
    add(inference, Views::contiguous, "inference");
  }
  BatchDesc bare = batch_norm({5, 8, 10});
  bare.has_weight = bare.has_bias = false;
  add(bare, Views::contiguous, "no weight, no bias");
  BatchDesc f32_weight = batch_norm({5, 8, 10});
  f32_weight.weight_dtype = DType::f32;
  add(f32_weight, backward ? Views::padded : Views::contiguous, "f32 weight");
  for (Views v : {Views::channels_last, Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
    add(batch_norm({3, 8, 6, 5}), v);
    add(batch_norm({4, 6, 7}), v);
    BatchDesc inference = batch_norm({3, 8, 6, 5});
    inference.training = false;
    add(inference, v, "inference");
  }
  add(batch_norm({8, 64, 24, 24}), Views::channels_last, "channels-last, 4608 a channel", {DType::f32, DType::bf16});
  return out;
}

std::vector<DescriptorError<BatchDesc>> batch_errors() {
  return {
      {"rank 0", [](BatchDesc& d) { d.shape = {}; }, StatusCode::invalid_problem, "descriptor.shape.rank"},
      {"negative size",
       [](BatchDesc& d) {
         d.shape = {4, 8, -3};
       },
       StatusCode::invalid_problem, "descriptor.shape[2]"},
      {"channel_dim past the rank", [](BatchDesc& d) { d.channel_dim = d.shape.rank; }, StatusCode::invalid_problem,
       "descriptor.channel_dim"},
      {"channel_dim negative", [](BatchDesc& d) { d.channel_dim = -1; }, StatusCode::invalid_problem,
       "descriptor.channel_dim"},
      {"eps 0", [](BatchDesc& d) { d.eps = 0; }, StatusCode::invalid_problem, "descriptor.eps"},
      {"eps NaN", [](BatchDesc& d) { d.eps = std::nan(""); }, StatusCode::invalid_problem, "descriptor.eps"},
      {"momentum negative", [](BatchDesc& d) { d.momentum = -0.1; }, StatusCode::invalid_problem,
       "descriptor.momentum"},
      {"momentum above 1", [](BatchDesc& d) { d.momentum = 1.5; }, StatusCode::invalid_problem, "descriptor.momentum"},
      {"momentum NaN", [](BatchDesc& d) { d.momentum = std::nan(""); }, StatusCode::invalid_problem,
       "descriptor.momentum"},
      {"inference without running statistics",
       [](BatchDesc& d) {
         d.training = false;
         d.running_stats = false;
       },
       StatusCode::invalid_problem, "descriptor.running_stats"},
      {"training on one value a channel",
       [](BatchDesc& d) {
         d.shape = {1, 8};
         d.channel_dim = 1;
       },
       StatusCode::invalid_problem, "descriptor.shape"},
      {"integer weight_dtype", [](BatchDesc& d) { d.weight_dtype = DType::i32; }, StatusCode::unsupported,
       "descriptor.weight_dtype"},
  };
}

// ResNet's first stage on the GPU; a smaller one on the CPU.
std::vector<Shape> batch_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{256, 64, 56, 56}, {32, 256, 28, 28}};
  return {{64, 64, 28, 28}};
}
BatchDesc batch_bench_desc(DType dtype, const Shape& shape) {
  BatchDesc d = batch_norm(shape);
  d.dtype = dtype;
  d.weight_dtype = DType::f32;  // (PyTorch keeps a bf16 model's batch norm parameters in f32 under autocast)
  return d;
}

std::vector<BenchSample<BatchDesc>> batch_bench(bool backward) {
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  if (backward)
    return {{"batch_norm_backward", "autograd of F.batch_norm(x, rm, rv, w, b, training=True)", dtypes, batch_shapes,
             batch_bench_desc}};
  return {{"batch_norm", "F.batch_norm(x, rm, rv, w, b, training=True)", dtypes, batch_shapes, batch_bench_desc}};
}

// Saved and running statistics away from 0, as real ones are.
std::vector<ValueRange> batch_backward_ranges() { return {{"save_rstd", 0.5, 2.0}, {"running_var", 0.5, 2.0}}; }
std::vector<ValueRange> batch_forward_ranges() { return {{"running_var", 0.5, 2.0}}; }

template <bool kBackward>
std::vector<Sample<BatchDesc>> batch_samples_of() {
  return batch_samples(kBackward);
}
void batch_forward_reference(const BatchDesc& d, RefIO& io) { reference::batch_norm_forward(d, io); }
void batch_backward_reference(const BatchDesc& d, RefIO& io) { reference::batch_norm_backward(d, io); }

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
  rows.push_back(make_row<GroupNormPlan>(
      {group_samples_of<false>, group_forward_reference, harness::tolerance, {}, group_errors(), group_bench(false)}));
  rows.push_back(make_row<GroupNormBackwardPlan>({group_samples_of<true>, group_backward_reference, harness::tolerance,
                                                  backward_ranges(), group_errors(), group_bench(true),
                                                  forward_of<GroupNormPlan>, layer_gradient}));
  rows.push_back(make_row<BatchNormPlan>({batch_samples_of<false>, batch_forward_reference, harness::tolerance,
                                          batch_forward_ranges(), batch_errors(), batch_bench(false)}));
  rows.push_back(make_row<BatchNormBackwardPlan>({batch_samples_of<true>, batch_backward_reference, harness::tolerance,
                                                  batch_backward_ranges(), batch_errors(), batch_bench(true),
                                                  forward_of<BatchNormPlan>, layer_gradient}));
  return rows;
}

}  // namespace baracuda::harness

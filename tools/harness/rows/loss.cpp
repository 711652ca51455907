// Op-table rows of the loss family: cross-entropy, forward and backward. Class counts from 1 to 2^20 + 3, either
// side of the 16-byte vectors and of the CUDA chunk of 32768 classes, and the vocabularies 32000, 128256 and 262144;
// rank 1, 2, 3 and 4 logits (classes along dim 1); every option (class weights in the logits' dtype or f32, label
// smoothing with and without weights, the z-loss, ignore_index, i32 targets, soft targets) under each reduction;
// padded, transposed, broadcast and misaligned views. Targets are drawn from [-2, C + 2) unless a sample says
// otherwise, so bad targets occur and are counted. Edge values (every target ignored, +-1e4 and -inf logits), in-place
// dlogits and batch invariance are tests/test_loss.cpp's.
#include <string>
#include <vector>

#include "harness/op_row.hpp"
#include "harness/reference/loss_reference.hpp"

namespace baracuda::harness {
namespace {

using Desc = CrossEntropyDescriptor;

Desc ce(Shape shape, LossReduction reduction = LossReduction::mean) {
  Desc d;
  d.shape = shape;
  d.reduction = reduction;
  return d;
}

std::vector<Sample<Desc>> samples() {
  std::vector<Sample<Desc>> out;
  // valid: every target in [0, C) (the mean of a few rows is then never 0 / 0).
  auto add = [&](Desc d, Views views = Views::contiguous, std::string note = {}, std::vector<DType> dtypes = {},
                 bool valid = false) {
    std::optional<IndexRange> range;
    const int64_t classes = d.shape.dims[d.shape.rank >= 2 ? 1 : 0];
    if (valid) range = IndexRange{0, classes};
    // Soft targets past a few classes: probabilities in [0, 2 / C), a row's about 1 (in [0, 1) a long
    // row's loss overflows f16).
    std::vector<ValueRange> values;
    if (d.soft_targets && classes > 8) values.push_back({"targets", 0.0, 2.0 / static_cast<double>(classes)});
    out.push_back({d, views, {}, range, std::move(note), std::move(dtypes), std::move(values)});
  };
  for (LossReduction r : {LossReduction::none, LossReduction::sum, LossReduction::mean}) {
    for (int64_t c : {1, 2, 3, 8, 1000}) add(ce({6, c}, r), Views::contiguous, {}, {}, true);
    add(ce({40, 1000}, r));
    add(ce({7}, r), Views::contiguous, "rank 1: one row", {}, true);
    add(ce({4, 6, 3}, r), Views::contiguous, "classes along dim 1", {}, true);
    add(ce({2, 5, 3, 2}, r), Views::contiguous, "classes along dim 1", {}, true);
  }
  add(ce({3, 32000}), Views::contiguous, {}, {}, true);
  for (int64_t c : {32767, 32768, 32769, 65536 + 5}) add(ce({2, c}), Views::contiguous, {}, {}, true);
  for (int64_t c : {128256, 262144})
    add(ce({2, c}), Views::contiguous, "vocabularies", {DType::f32, DType::bf16}, true);
  add(ce({2, (1 << 20) + 3}, LossReduction::none), Views::contiguous, "2^20 + 3 classes", {DType::f32, DType::bf16},
      true);
  add(ce({300, 4}), Views::contiguous, "300 rows");
  add(ce({0, 16}, LossReduction::none), Views::contiguous, "no rows");  // (the mean of none, NaN: test_loss.cpp)
  add(ce({0, 16}, LossReduction::sum), Views::contiguous, "no rows");
  for (LossReduction r : {LossReduction::none, LossReduction::sum, LossReduction::mean}) {
    Desc weighted = ce({16, 100}, r);
    weighted.has_weight = true;
    add(weighted, Views::contiguous, "weight", {}, true);
    Desc smooth = ce({16, 100}, r);
    smooth.label_smoothing = 0.1;
    add(smooth, Views::contiguous, "smoothing 0.1", {}, true);
    Desc both = ce({16, 100}, r);
    both.has_weight = true;
    both.label_smoothing = 0.25;
    add(both, Views::contiguous, "weight, smoothing 0.25", {}, true);
    Desc z = ce({16, 100}, r);
    z.z_loss = 0.01;
    add(z, Views::contiguous, "z-loss 0.01", {}, true);
    Desc all = ce({16, 40000}, r);
    all.has_weight = true;
    all.label_smoothing = 0.1;
    all.z_loss = 0.001;
    all.ignore_index = 3;
    add(all, Views::contiguous, "weight, smoothing 0.1, z-loss 0.001, ignore_index 3", {}, true);
    Desc ignored = ce({30, 5}, r);
    ignored.ignore_index = -1;
    add(ignored, Views::contiguous, "ignore_index -1");
    Desc i32 = ce({9, 70}, r);
    i32.index_dtype = DType::i32;
    i32.label_smoothing = 1.0;
    add(i32, Views::contiguous, "i32 targets, smoothing 1");
  }
  Desc f32_weight = ce({9, 256});
  f32_weight.has_weight = true;
  f32_weight.weight_dtype = DType::f32;
  f32_weight.label_smoothing = 0.1;
  add(f32_weight, Views::contiguous, "f32 weight, smoothing 0.1", {}, true);
  Desc rank3 = ce({3, 50, 4});
  rank3.has_weight = true;
  rank3.label_smoothing = 0.2;
  rank3.z_loss = 0.01;
  add(rank3, Views::contiguous, "classes along dim 1, weight, smoothing, z-loss", {}, true);
  // log_probs: F.nll_loss.
  for (LossReduction r : {LossReduction::none, LossReduction::sum, LossReduction::mean}) {
    Desc nll = ce({16, 100}, r);
    nll.log_probs = true;
    add(nll, Views::contiguous, "nll", {}, true);
    nll.has_weight = true;
    add(nll, Views::contiguous, "nll, weight", {}, true);
    Desc ignored = ce({30, 5}, r);
    ignored.log_probs = true;
    ignored.ignore_index = -1;
    add(ignored, Views::contiguous, "nll, ignore_index -1");
    Desc rank3 = ce({3, 50, 4}, r);
    rank3.log_probs = true;
    rank3.has_weight = true;
    add(rank3, Views::contiguous, "nll, classes along dim 1, weight", {}, true);
  }
  Desc nll_wide = ce({2, (1 << 20) + 3}, LossReduction::none);
  nll_wide.log_probs = true;
  add(nll_wide, Views::contiguous, "nll, 2^20 + 3 classes", {DType::f32, DType::bf16}, true);
  Desc nll_none = ce({0, 16}, LossReduction::sum);
  nll_none.log_probs = true;
  add(nll_none, Views::contiguous, "nll, no rows");
  // soft_targets: probabilities in [0, 1) that need not sum to 1, either side of the 16-byte vectors
  // and of the CUDA chunk.
  auto soft = [](Shape shape, LossReduction r) {
    Desc d = ce(shape, r);
    d.soft_targets = true;
    return d;
  };
  for (LossReduction r : {LossReduction::none, LossReduction::sum, LossReduction::mean}) {
    add(soft({6, 1000}, r), Views::contiguous, "soft targets");
    add(soft({5, 3}, r), Views::contiguous, "soft targets");
    add(soft({4, 6, 3}, r), Views::contiguous, "soft targets, classes along dim 1");
    Desc all = soft({16, 100}, r);
    all.has_weight = true;
    all.label_smoothing = 0.1;
    all.z_loss = 0.01;
    add(all, Views::contiguous, "soft targets, weight, smoothing 0.1, z-loss 0.01");
  }
  Desc soft_f32_weight = soft({9, 256}, LossReduction::mean);
  soft_f32_weight.has_weight = true;
  soft_f32_weight.weight_dtype = DType::f32;
  add(soft_f32_weight, Views::contiguous, "soft targets, f32 weight");
  add(soft({3, 32769}, LossReduction::sum), Views::contiguous, "soft targets");
  add(soft({2, 65536 + 8}, LossReduction::none), Views::contiguous, "soft targets, chunked");
  add(soft({2, 128256}, LossReduction::mean), Views::contiguous, "soft targets, vocabulary", {DType::f32, DType::bf16});
  for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
    Desc all = soft({5, 6, 7}, LossReduction::sum);
    all.has_weight = true;
    all.label_smoothing = 0.1;
    add(all, v, "soft targets, weight, smoothing");
    add(soft({33, 256}, LossReduction::none), v, "soft targets");
  }
  for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
    Desc nll = ce({33, 256}, LossReduction::sum);
    nll.log_probs = true;
    nll.has_weight = true;
    add(nll, v, "nll, weight");
    // (a broadcast view gives every row the one target drawn: a bad one, 4 draws in 260, made the mean
    // 0 / 0, NaN on both sides, and the sample flaky with the test order; so a valid one there)
    add(ce({33, 256}), v, {}, {}, v == Views::broadcast);
    add(ce({33, 256}, LossReduction::none), v);
    Desc all = ce({5, 6, 7}, LossReduction::sum);
    all.has_weight = true;
    all.label_smoothing = 0.1;
    all.z_loss = 0.01;
    add(all, v, "weight, smoothing, z-loss");
  }
  return out;
}

std::vector<DescriptorError<Desc>> errors() {
  return {
      {"rank 0", [](Desc& d) { d.shape = {}; }, StatusCode::invalid_problem, "descriptor.shape.rank"},
      {"negative size",
       [](Desc& d) {
         d.shape = {4, -3};
       },
       StatusCode::invalid_problem, "descriptor.shape[1]"},
      {"no classes",
       [](Desc& d) {
         d.shape = {4, 0};
       },
       StatusCode::invalid_problem, "descriptor.shape[1]"},
      {"smoothing below 0", [](Desc& d) { d.label_smoothing = -0.1; }, StatusCode::invalid_problem,
       "descriptor.label_smoothing"},
      {"smoothing past 1", [](Desc& d) { d.label_smoothing = 1.5; }, StatusCode::invalid_problem,
       "descriptor.label_smoothing"},
      {"smoothing NaN", [](Desc& d) { d.label_smoothing = std::nan(""); }, StatusCode::invalid_problem,
       "descriptor.label_smoothing"},
      {"z-loss negative", [](Desc& d) { d.z_loss = -1e-4; }, StatusCode::invalid_problem, "descriptor.z_loss"},
      {"z-loss inf", [](Desc& d) { d.z_loss = INFINITY; }, StatusCode::invalid_problem, "descriptor.z_loss"},
      {"z-loss NaN", [](Desc& d) { d.z_loss = std::nan(""); }, StatusCode::invalid_problem, "descriptor.z_loss"},
      {"reduction out of range", [](Desc& d) { d.reduction = static_cast<LossReduction>(7); },
       StatusCode::invalid_problem, "descriptor.reduction"},
      {"integer weight_dtype", [](Desc& d) { d.weight_dtype = DType::i32; }, StatusCode::unsupported,
       "descriptor.weight_dtype"},
      {"nll with smoothing",
       [](Desc& d) {
         d.log_probs = true;
         d.label_smoothing = 0.1;
         d.z_loss = 0.0;
       },
       StatusCode::invalid_problem, "descriptor.label_smoothing"},
      {"nll with soft targets",
       [](Desc& d) {
         d.log_probs = true;
         d.label_smoothing = 0.0;
         d.z_loss = 0.0;
         d.soft_targets = true;
       },
       StatusCode::invalid_problem, "descriptor.soft_targets"},
      {"nll with z-loss",
       [](Desc& d) {
         d.log_probs = true;
         d.label_smoothing = 0.0;
         d.z_loss = 0.01;
       },
       StatusCode::invalid_problem, "descriptor.z_loss"},
  };
}

// The shapes on the GPU ([tokens, vocabulary]); the CPU size JAX is compared at.
std::vector<Shape> standard_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{8192, 128256}, {8192, 32000}, {4096, 262144}};
  return {{2048, 32000}};
}
Desc bench_desc(DType dtype, const Shape& shape) {
  Desc d = ce(shape);
  d.dtype = dtype;
  return d;
}
Desc soft_bench_desc(DType dtype, const Shape& shape) {
  Desc d = bench_desc(dtype, shape);
  d.soft_targets = true;
  return d;
}
Desc nll_bench_desc(DType dtype, const Shape& shape) {
  Desc d = bench_desc(dtype, shape);
  d.log_probs = true;
  return d;
}

std::vector<BenchSample<Desc>> bench(bool backward) {
  const std::vector<DType> dtypes = {DType::bf16, DType::f32};
  if (backward)
    return {{"cross_entropy_backward", "autograd of F.cross_entropy(x, t)", dtypes, standard_shapes, bench_desc},
            {"cross_entropy_soft_backward", "autograd of F.cross_entropy(x, p), p probabilities", dtypes,
             standard_shapes, soft_bench_desc},
            {"nll_loss_backward", "autograd of F.nll_loss(x, t)", dtypes, standard_shapes, nll_bench_desc}};
  return {{"cross_entropy", "F.cross_entropy(x, t)", dtypes, standard_shapes, bench_desc, false, false, {}, "lse"},
          {"cross_entropy_soft",
           "F.cross_entropy(x, p), p probabilities",
           dtypes,
           standard_shapes,
           soft_bench_desc,
           false,
           false,
           {},
           "lse"},
          // (one element a row read: counted as the loss's bytes)
          {"nll_loss", "F.nll_loss(x, t)", dtypes, standard_shapes, nll_bench_desc, false, false, "logits"}};
}

// The saved lse of the backward's samples is random: above the logits' max (in [-1, 1)), as a real one is.
std::vector<ValueRange> ranges(bool backward) {
  // (targets: soft targets' probabilities; class indices are drawn by their index bound)
  std::vector<ValueRange> r = {{"weight", 0.5, 1.5}, {"targets", 0.0, 1.0}};
  if (backward) r.push_back({"lse", 1.0, 3.0});
  return r;
}

void forward_reference(const Desc& d, RefIO& io) { reference::cross_entropy_forward(d, io); }
void backward_reference(const Desc& d, RefIO& io) { reference::cross_entropy_backward(d, io); }

}  // namespace

std::vector<std::unique_ptr<OpRow>> loss_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  rows.push_back(make_row<CrossEntropyPlan>(
      {samples, forward_reference, harness::tolerance, ranges(false), errors(), bench(false)}));
  rows.push_back(make_row<CrossEntropyBackwardPlan>({samples,
                                                     backward_reference,
                                                     harness::tolerance,
                                                     ranges(true),
                                                     errors(),
                                                     bench(true),
                                                     forward_of<CrossEntropyPlan>,
                                                     {"dloss", "loss", {{"dlogits", "logits"}}}}));
  for (std::unique_ptr<OpRow>& row : pointwise_loss_rows()) rows.push_back(std::move(row));
  return rows;
}

}  // namespace baracuda::harness

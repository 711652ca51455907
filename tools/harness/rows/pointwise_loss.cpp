// Op-table rows of the pointwise losses, forward and backward: every kind under every reduction,
// smooth_l1's beta 0 (l1) and 0.5, huber's delta 0.5, kl_div's log target, a scalar, empty inputs
// (a sum of 0, a mean of NaN), both sides of a chunk of the sum (8192 elements) and many chunks,
// bce's weight and bce_with_logits' weight and pos_weight (broadcast too), and padded, transposed,
// broadcast and misaligned views.
#include <cmath>
#include <string>
#include <vector>

#include "harness/op_row.hpp"
#include "harness/reference/pointwise_loss_reference.hpp"

namespace baracuda::harness {
namespace {

using Desc = PointwiseLossDescriptor;
using Kind = PointwiseLossKind;

Desc loss(Kind kind, Shape shape, LossReduction reduction) {
  Desc d;
  d.kind = kind;
  d.shape = shape;
  d.reduction = reduction;
  return d;
}

// Inputs where each kind is defined and smooth: probabilities for bce, log-probabilities for kl_div;
// for l1 (and smooth_l1 with beta 0) an input and a target that never meet, so the finite
// differences never straddle the kink at x = y.
std::vector<ValueRange> ranges_of(const Desc& d) {
  if (d.kind == Kind::l1 || (d.kind == Kind::smooth_l1 && d.beta == 0))
    return {{"input", 0.25, 1.25}, {"target", -1.0, 0.0}};
  switch (d.kind) {
    case Kind::bce:
      return {{"input", 0.05, 0.95}, {"target", 0.0, 1.0}, {"weight", 0.5, 1.5}};
    case Kind::bce_with_logits:
      return {{"target", 0.0, 1.0}, {"weight", 0.5, 1.5}, {"pos_weight", 0.5, 3.0}};
    case Kind::kl_div:
      return d.log_target ? std::vector<ValueRange>{{"input", -3.0, -0.1}, {"target", -3.0, 0.0}}
                          : std::vector<ValueRange>{{"input", -3.0, -0.1}, {"target", 0.01, 1.0}};
    default:
      return {};
  }
}

std::vector<Sample<Desc>> samples() {
  std::vector<Sample<Desc>> out;
  auto add = [&](Desc d, std::string note = {}, Views views = Views::contiguous, std::string_view only = {}) {
    out.push_back({d, views, only, std::nullopt, std::move(note), {}, ranges_of(d)});
  };
  const LossReduction reductions[] = {LossReduction::none, LossReduction::sum, LossReduction::mean};
  for (Kind kind : {Kind::mse, Kind::l1, Kind::smooth_l1, Kind::huber, Kind::bce, Kind::bce_with_logits, Kind::kl_div})
    for (LossReduction r : reductions) add(loss(kind, {37, 41}, r), std::string(pointwise_loss_name(kind)));
  for (LossReduction r : reductions) {
    Desc l1 = loss(Kind::smooth_l1, {5, 33}, r);
    l1.beta = 0;
    add(l1, "smooth_l1, beta 0");
    Desc smooth = loss(Kind::smooth_l1, {5, 33}, r);
    smooth.beta = 0.5;
    add(smooth, "smooth_l1, beta 0.5");
    Desc huber = loss(Kind::huber, {5, 33}, r);
    huber.beta = 0.5;
    add(huber, "huber, delta 0.5");
    Desc kl = loss(Kind::kl_div, {5, 33}, r);
    kl.log_target = true;
    add(kl, "kl_div, log target");
    add(loss(Kind::mse, {}, r), "a scalar");
    // (The mean of nothing is NaN, which the table cannot compare: tests/test_loss.cpp.)
    if (r != LossReduction::mean) add(loss(Kind::l1, {0, 4}, r), "empty");
  }
  for (int64_t n : {8191, 8192, 8193, 70001})
    for (LossReduction r : {LossReduction::sum, LossReduction::mean})
      add(loss(Kind::huber, {n}, r), "chunks of the sum");
  for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned})
    for (LossReduction r : reductions) add(loss(Kind::smooth_l1, {3, 7, 5}, r), "smooth_l1", v);
  // weight (bce, bce_with_logits) and pos_weight (bce_with_logits), as views of the shape; broadcast
  // (stride 0) as PyTorch broadcasts them, and every view laid out otherwise.
  for (LossReduction r : reductions) {
    Desc bce = loss(Kind::bce, {37, 41}, r);
    bce.has_weight = true;
    add(bce, "bce, weight");
    add(bce, "bce, weight", Views::broadcast, "weight");
    Desc logits = loss(Kind::bce_with_logits, {37, 41}, r);
    logits.has_weight = true;
    add(logits, "bce_with_logits, weight");
    logits.has_pos_weight = true;
    add(logits, "bce_with_logits, weight, pos_weight");
    logits.has_weight = false;
    add(logits, "bce_with_logits, pos_weight");
    add(logits, "bce_with_logits, pos_weight", Views::broadcast, "pos_weight");
    for (int64_t n : {8191, 8193}) {
      Desc many = loss(Kind::bce_with_logits, {n}, r);
      many.has_weight = many.has_pos_weight = true;
      add(many, "bce_with_logits, weight, pos_weight, chunks of the sum");
    }
  }
  for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
    Desc both = loss(Kind::bce_with_logits, {3, 7, 5}, LossReduction::sum);
    both.has_weight = both.has_pos_weight = true;
    add(both, "bce_with_logits, weight, pos_weight", v);
  }
  return out;
}

std::vector<DescriptorError<Desc>> errors() {
  return {
      {"kind past the enum", [](Desc& d) { d.kind = static_cast<Kind>(99); }, StatusCode::invalid_problem,
       "descriptor.kind"},
      {"reduction past the enum", [](Desc& d) { d.reduction = static_cast<LossReduction>(7); },
       StatusCode::invalid_problem, "descriptor.reduction"},
      {"negative beta", [](Desc& d) { d.beta = -1; }, StatusCode::invalid_problem, "descriptor.beta"},
      {"NaN beta", [](Desc& d) { d.beta = std::nan(""); }, StatusCode::invalid_problem, "descriptor.beta"},
      {"huber's delta 0",
       [](Desc& d) {
         d.kind = Kind::huber;
         d.beta = 0;
       },
       StatusCode::invalid_problem, "descriptor.beta"},
      {"weight on mse",
       [](Desc& d) {
         d.kind = Kind::mse;
         d.has_weight = true;
       },
       StatusCode::invalid_problem, "descriptor.has_weight"},
      {"pos_weight on bce",
       [](Desc& d) {
         d.kind = Kind::bce;
         d.has_pos_weight = true;
       },
       StatusCode::invalid_problem, "descriptor.has_pos_weight"},
      {"negative dim",
       [](Desc& d) {
         d.shape = {4, -3};
       },
       StatusCode::invalid_problem, "descriptor.shape[1]"},
  };
}

// Bench cases: the mean over 2^26 elements on the GPU (2^22 on the CPU).
std::vector<Shape> bench_shapes(Backend backend) {
  return {{backend == Backend::cuda ? int64_t{1} << 26 : int64_t{1} << 22}};
}
template <Kind kKind>
Desc bench_desc(DType dtype, const Shape& shape) {
  Desc d = loss(kKind, shape, LossReduction::mean);
  d.dtype = dtype;
  return d;
}
constexpr ValueRange kProbabilityTargets[] = {{"target", 0.0, 1.0}};

std::vector<BenchSample<Desc>> bench(bool backward) {
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  if (backward)
    return {{"mse_loss_backward", "autograd of F.mse_loss(x, y)", dtypes, bench_shapes, bench_desc<Kind::mse>, true}};
  BenchSample<Desc> bce{"bce_with_logits", "F.binary_cross_entropy_with_logits(x, y)", dtypes,
                        bench_shapes,      bench_desc<Kind::bce_with_logits>,          true};
  bce.value_ranges = kProbabilityTargets;
  return {{"mse_loss", "F.mse_loss(x, y)", dtypes, bench_shapes, bench_desc<Kind::mse>, true}, bce};
}

void forward_reference(const Desc& d, RefIO& io) { reference::pointwise_loss_forward(d, io); }
void backward_reference(const Desc& d, RefIO& io) { reference::pointwise_loss_backward(d, io); }

}  // namespace

std::vector<std::unique_ptr<OpRow>> pointwise_loss_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  rows.push_back(
      make_row<PointwiseLossPlan>({samples, forward_reference, harness::tolerance, {}, errors(), bench(false)}));
  rows.push_back(make_row<PointwiseLossBackwardPlan>({samples,
                                                      backward_reference,
                                                      harness::tolerance,
                                                      {},
                                                      errors(),
                                                      bench(true),
                                                      forward_of<PointwiseLossPlan>,
                                                      {"dloss", "loss", {{"dinput", "input"}}}}));
  return rows;
}

}  // namespace baracuda::harness

// The CPU side of the pointwise loss plans: the formulas of cuda/device/pointwise_loss.h, elements in
// parallel (none, the backward); sum and mean add each chunk of kPointwiseLossChunk elements in order
// (chunks in parallel, into the workspace), then the chunks in order: the bits depend on the element
// count alone, never on the thread count.
#include "cuda/device/pointwise_loss.h"

#include <array>
#include <cstdint>

#include "common/convert.hpp"
#include "common/dispatch.hpp"
#include "common/elementwise.hpp"
#include "cpu/parallel.hpp"
#include "ops/pointwise_loss_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

// kKind: the loss, a constant here so its switch folds away and the loops over contiguous views
// vectorize (the kinds without a transcendental; the others call libm a value). kWeighted: a weight
// or a pos_weight is given (bce, bce_with_logits), read an element at a time.
template <class T, int kKind, bool kWeighted = false>
void run(const PointwiseLossProblem& problem) {
  using A = acc_t<T>;
  const device::PointwiseLossParams& p = problem.params;
  const T* x = static_cast<const T*>(p.input);
  const T* y = static_cast<const T*>(p.target);
  T* out = static_cast<T*>(p.out);
  const A beta = static_cast<A>(p.beta);
  const bool log_target = p.log_target != 0;
  const T* w = static_cast<const T*>(p.weight);
  const T* pw = static_cast<const T*>(p.pos_weight);
  const bool parallel = p.n >= kParallelThreshold;
  constexpr int kTensors = kPointwiseLossTensors;
  // Element i's offsets in input, target, out, dloss, weight and pos_weight (i itself where every
  // view is contiguous).
  auto offsets = [&](int64_t i) {
    std::array<int64_t, kTensors> off;
    off.fill(i);
    if (!p.contiguous) {
      int64_t o[kTensors];
      problem.walk.offsets(i, o);
      for (int t = 0; t < kTensors; ++t) off[static_cast<size_t>(t)] = o[t];
    }
    return off;
  };
  // Element i's loss (kGradient: d loss / dx), its weight and pos_weight applied where given.
  auto element = [&]<bool kGradient>(const std::array<int64_t, kTensors>& off) {
    const A xi = convert<A>(x[off[0]]), yi = convert<A>(y[off[1]]);
    if constexpr (!kWeighted) {
      return kGradient ? device::pointwise_loss_gradient<A>(kKind, xi, yi, beta, log_target)
                       : device::pointwise_loss<A>(kKind, xi, yi, beta, log_target);
    } else {
      A v;
      if (pw)
        v = kGradient ? device::bce_with_logits_pos_gradient<A>(xi, yi, convert<A>(pw[off[5]]))
                      : device::bce_with_logits_pos<A>(xi, yi, convert<A>(pw[off[5]]));
      else
        v = kGradient ? device::pointwise_loss_gradient<A>(kKind, xi, yi, beta, log_target)
                      : device::pointwise_loss<A>(kKind, xi, yi, beta, log_target);
      return w ? v * convert<A>(w[off[4]]) : v;
    }
  };
  auto value = [&](int64_t i) { return element.template operator()<false>(offsets(i)); };
  if (problem.backward) {
    const T* dloss = static_cast<const T*>(p.dloss);
    const bool none = p.reduction == device::kReduceNone;
    const A whole =
        none ? A(0) : convert<A>(dloss[0]) * (p.reduction == device::kReduceMean ? A(1) / static_cast<A>(p.n) : A(1));
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t i = 0; i < p.n; ++i) {
      const auto off = offsets(i);
      const A g = none ? convert<A>(dloss[off[3]]) : whole;
      out[off[2]] = convert<T>(g * element.template operator()<true>(off));
    }
    return;
  }
  if (p.reduction == device::kReduceNone) {
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t i = 0; i < p.n; ++i) out[offsets(i)[2]] = convert<T>(value(i));
    return;
  }
  // A chunk's elements into kLanes sums (element i into lane i % kLanes, so the loop vectorizes),
  // then the lanes in order: a fixed order either way.
  constexpr int kLanes = 16;
  A* partial = static_cast<A*>(p.partial);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t c = 0; c < p.chunks; ++c) {
    const int64_t first = c * p.chunk, last = first + p.chunk < p.n ? first + p.chunk : p.n;
    A lane[kLanes] = {};
    int64_t i = first;
    if (p.contiguous && !kWeighted)
      for (; i + kLanes <= last; i += kLanes)
#pragma omp simd
        for (int u = 0; u < kLanes; ++u)
          lane[u] += device::pointwise_loss<A>(kKind, convert<A>(x[i + u]), convert<A>(y[i + u]), beta, log_target);
    for (; i < last; ++i) lane[(i - first) % kLanes] += value(i);
    A sum = 0;
    for (int u = 0; u < kLanes; ++u) sum += lane[u];
    partial[c] = sum;
  }
  A total = 0;
  for (int64_t c = 0; c < p.chunks; ++c) total += partial[c];
  out[0] = convert<T>(p.reduction == device::kReduceMean ? total / static_cast<A>(p.n) : total);
}

}  // namespace

Status launch(const LaunchContext&, const PointwiseLossProblem& p) {
  const bool weighted = p.params.weight || p.params.pos_weight;
  return dispatch_float<half, bfloat16>(p.dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    switch (p.params.kind) {
      case device::kMse:
        return run<T, device::kMse>(p), Status::ok();
      case device::kL1:
        return run<T, device::kL1>(p), Status::ok();
      case device::kSmoothL1:
        return run<T, device::kSmoothL1>(p), Status::ok();
      case device::kHuber:
        return run<T, device::kHuber>(p), Status::ok();
      case device::kBce:
        return (weighted ? run<T, device::kBce, true>(p) : run<T, device::kBce>(p)), Status::ok();
      case device::kBceWithLogits:
        return (weighted ? run<T, device::kBceWithLogits, true>(p) : run<T, device::kBceWithLogits>(p)), Status::ok();
      default:
        return run<T, device::kKlDiv>(p), Status::ok();
    }
  });
}

}  // namespace baracuda::detail::cpu

// The CPU side of the pointwise loss plans: the formulas of cuda/device/pointwise_loss.h, elements in
// parallel (none, the backward); sum and mean add each chunk of kPointwiseLossChunk elements in order
// (chunks in parallel, into the workspace), then the chunks in order: the bits depend on the element
// count alone, never on the thread count.
#include <cstdint>

#include "common/convert.hpp"
#include "common/dispatch.hpp"
#include "common/elementwise.hpp"
#include "cpu/parallel.hpp"
#include "cuda/device/pointwise_loss.h"
#include "ops/pointwise_loss_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

// Element i's offset in tensor t (i itself where every view is contiguous).
int64_t offset(const device::PointwiseLossParams& p, int t, int64_t i) {
  if (p.contiguous) return i;
  const device::Walk<4>& w = p.walk;
  int64_t off = 0;
  for (int d = w.rank - 1; d > 0; --d) {
    const int64_t q = i / w.sizes[d];
    off += (i - q * w.sizes[d]) * w.strides[t][d];
    i = q;
  }
  return w.rank > 0 ? off + i * w.strides[t][0] : 0;
}

template <class T>
void run(const PointwiseLossProblem& problem) {
  using A = acc_t<T>;
  const device::PointwiseLossParams& p = problem.params;
  const T* x = static_cast<const T*>(p.input);
  const T* y = static_cast<const T*>(p.target);
  T* out = static_cast<T*>(p.out);
  const A beta = static_cast<A>(p.beta);
  const bool log_target = p.log_target != 0;
  const bool parallel = p.n >= kParallelThreshold;
  auto value = [&](int64_t i) {
    return device::pointwise_loss<A>(p.kind, convert<A>(x[offset(p, 0, i)]), convert<A>(y[offset(p, 1, i)]), beta,
                                     log_target);
  };
  if (problem.backward) {
    const T* dloss = static_cast<const T*>(p.dloss);
    const bool none = p.reduction == device::kReduceNone;
    const A whole = none ? A(0)
                         : convert<A>(dloss[0]) * (p.reduction == device::kReduceMean ? A(1) / static_cast<A>(p.n) : A(1));
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t i = 0; i < p.n; ++i) {
      const A g = none ? convert<A>(dloss[offset(p, 3, i)]) : whole;
      const A xi = convert<A>(x[offset(p, 0, i)]), yi = convert<A>(y[offset(p, 1, i)]);
      out[offset(p, 2, i)] = convert<T>(g * device::pointwise_loss_gradient<A>(p.kind, xi, yi, beta, log_target));
    }
    return;
  }
  if (p.reduction == device::kReduceNone) {
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t i = 0; i < p.n; ++i) out[offset(p, 2, i)] = convert<T>(value(i));
    return;
  }
  A* partial = static_cast<A*>(p.partial);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t c = 0; c < p.chunks; ++c) {
    const int64_t last = c * p.chunk + p.chunk < p.n ? c * p.chunk + p.chunk : p.n;
    A sum = 0;
    for (int64_t i = c * p.chunk; i < last; ++i) sum += value(i);
    partial[c] = sum;
  }
  A total = 0;
  for (int64_t c = 0; c < p.chunks; ++c) total += partial[c];
  out[0] = convert<T>(p.reduction == device::kReduceMean ? total / static_cast<A>(p.n) : total);
}

}  // namespace

Status launch(const LaunchContext&, const PointwiseLossProblem& p) {
  return dispatch_float<half, bfloat16>(p.dtype, [&](auto t) {
    run<typename decltype(t)::type>(p);
    return Status::ok();
  });
}

}  // namespace baracuda::detail::cpu

// The CPU side of the random plans: the same arithmetic as cuda/device/random.cuh, element by
// element in parallel, so both backends write the same bits (the library's host code is compiled
// without FMA contraction, as the CUDA program is).
#include <cmath>
#include <type_traits>

#include "common/convert.hpp"
#include "common/dispatch.hpp"
#include "common/elementwise.hpp"
#include "cpu/parallel.hpp"
#include "cuda/device/philox.h"
#include "ops/random_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

using device::philox_bits;

float uniform_f32(unsigned int bits, float low, float high) {
  const float u = static_cast<float>(bits >> 8) * 5.9604644775390625e-8f;  // 2^-24
  const float v = low + (high - low) * u;
  return v < high ? v : std::nextafter(high, low);
}
double uniform_f64(unsigned int hi, unsigned int lo, double low, double high) {
  const double v = low + (high - low) * device::philox_u53(hi, lo);
  return v < high ? v : std::nextafter(high, low);
}

// Element i's offset in each tensor (as the kernels' walk_offset).
template <int NT>
void offsets(const device::Walk<NT>& w, int64_t i, int64_t (&off)[NT]) {
  for (int t = 0; t < NT; ++t) off[t] = 0;
  for (int d = w.rank - 1; d > 0; --d) {
    const int64_t q = i / w.sizes[d];
    for (int t = 0; t < NT; ++t) off[t] += (i - q * w.sizes[d]) * w.strides[t][d];
    i = q;
  }
  if (w.rank > 0)
    for (int t = 0; t < NT; ++t) off[t] += i * w.strides[t][0];
}

template <class T>
void fill(const RandomProblem& p) {
  const device::RandomParams& q = p.params;
  T* out = static_cast<T*>(q.out);
#pragma omp parallel for schedule(static) if (q.total >= kParallelThreshold)
  for (int64_t i = 0; i < q.total; ++i) {
    int64_t off[1];
    offsets<1>(q.walk, i, off);
    const unsigned long long at = q.offset + static_cast<unsigned long long>(i);
    if constexpr (std::is_integral_v<T>) {
      out[off[0]] =
          static_cast<T>(static_cast<long long>(q.low) + static_cast<long long>(philox_bits(q.seed, at) % q.range));
    } else if (p.kind == RandomKind::normal || p.kind == RandomKind::exponential) {
      // (low / high carry mean / std, or lambda in high: ops/random.cpp)
      const double v = p.kind == RandomKind::normal ? q.low + q.high * device::philox_normal(q.seed, at)
                                                    : device::philox_exponential(q.seed, at) / q.high;
      if constexpr (std::is_same_v<T, double>)
        out[off[0]] = v;
      else
        out[off[0]] = convert<T>(static_cast<float>(v));
    } else if (p.kind == RandomKind::bernoulli) {
      out[off[0]] = convert<T>(philox_bits(q.seed, at) < q.threshold ? 1.0f : 0.0f);
    } else if constexpr (std::is_same_v<T, double>) {
      out[off[0]] = uniform_f64(philox_bits(q.seed, 2 * at), philox_bits(q.seed, 2 * at + 1), q.low, q.high);
    } else {
      out[off[0]] =
          convert<T>(uniform_f32(philox_bits(q.seed, at), static_cast<float>(q.low), static_cast<float>(q.high)));
    }
  }
}

template <class T>
void dropout(const DropoutProblem& p) {
  using Acc = typename acc_type<T>::type;
  const device::DropoutParams& q = p.params;
  const Acc scale = static_cast<Acc>(q.scale);
  const T* src = static_cast<const T*>(q.src);
  T* dst = static_cast<T*>(q.dst);
  bool* mask = static_cast<bool*>(q.mask);
#pragma omp parallel for schedule(static) if (q.total >= kParallelThreshold)
  for (int64_t i = 0; i < q.total; ++i) {
    int64_t off[3];
    offsets<3>(q.walk, i, off);
    const bool kept = philox_bits(q.seed, q.offset + static_cast<unsigned long long>(i)) >= q.threshold;
    dst[off[1]] = convert<T>(kept ? convert<Acc>(src[off[0]]) * scale : Acc(0));
    if (mask) mask[off[2]] = kept;
  }
}

}  // namespace

Status launch(const LaunchContext&, const RandomProblem& p) {
  if (p.dtype == DType::i32) {
    fill<int32_t>(p);
    return Status::ok();
  }
  if (p.dtype == DType::i64) {
    fill<int64_t>(p);
    return Status::ok();
  }
  return dispatch_float<half, bfloat16>(p.dtype, [&](auto t) {
    fill<typename decltype(t)::type>(p);
    return Status::ok();
  });
}

Status launch(const LaunchContext&, const DropoutProblem& p) {
  return dispatch_float<half, bfloat16>(p.dtype, [&](auto t) {
    dropout<typename decltype(t)::type>(p);
    return Status::ok();
  });
}

}  // namespace baracuda::detail::cpu

// The CPU side of the random plans: the same arithmetic as cuda/device/random.cuh
// (cuda/device/random_draw.h), a group of elements a Philox block, in parallel, so both backends write the same bits
// (the library's host code is compiled without FMA contraction, as the CUDA program is; philox.h fuses
// only where it says so, in one rounding on both).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "common/convert.hpp"
#include "common/dispatch.hpp"
#include "common/elementwise.hpp"
#include "cpu/parallel.hpp"
#include "cpu/vector_math.hpp"
#include "cuda/device/random_draw.h"
#include "ops/random_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

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

// Groups of a work item: its values are drawn into a buffer, then written.
inline constexpr int64_t kGroupBatch = 256;

// The groups of G elements that share a Philox block (cuda/device/random_draw.h) covering
// [0, total), kGroupBatch at a time, in parallel: body(first group g, groups n, g's first element
// g G - offset), g and the element mod 2^64.
template <int G, class Body>
void for_each_batch(unsigned long long offset, long long total, Body body) {
  const unsigned long long first = offset / G;
  const auto count = static_cast<int64_t>(device::random_group_count<G>(offset, total));
#pragma omp parallel for schedule(static) if (total >= kParallelThreshold)
  for (int64_t s = 0; s < count; s += kGroupBatch) {
    const unsigned long long g = first + static_cast<unsigned long long>(s);
    body(g, std::min(kGroupBatch, count - s), g * G - offset);
  }
}

// Groups g .. g + n - 1 (mod 2^64) of kind K into v, built per instruction set (cpu/vector_math.hpp):
// the f32 normals' and exponentials' fused multiply-adds (philox.h) are then the FMA instruction,
// a library call only in the baseline build.
template <int K, class V, int G>
BARACUDA_CPU_CLONES void draw_groups(const device::RandomParams& q, unsigned long long g, int64_t n, V (*v)[G]) {
  for (int64_t s = 0; s < n; ++s) device::random_group_values<K>(q, g + static_cast<unsigned long long>(s), v[s]);
}

template <class T, int K>
void fill(const RandomProblem& p) {
  const device::RandomParams& q = p.params;
  constexpr int G = device::kRandomGroup<K, (sizeof(T) == 8 && K != device::kRandomRandint)>;
  using V =
      std::conditional_t<K == device::kRandomRandint, long long, std::conditional_t<sizeof(T) == 8, double, float>>;
  T* out = static_cast<T*>(q.out);
  for_each_batch<G>(q.offset, q.total, [&](unsigned long long g, int64_t n, unsigned long long i0) {
    V v[kGroupBatch][G];
    draw_groups<K>(q, g, n, v);
    for (int64_t j = 0; j < n * G; ++j) {
      const unsigned long long i = i0 + static_cast<unsigned long long>(j);
      if (i >= static_cast<unsigned long long>(q.total)) continue;
      int64_t off[1];
      offsets<1>(q.walk, static_cast<int64_t>(i), off);
      if constexpr (std::is_integral_v<T>)
        out[off[0]] = static_cast<T>(v[j / G][j % G]);
      else
        out[off[0]] = convert<T>(v[j / G][j % G]);
    }
  });
}

template <class T>
void fill_kind(const RandomProblem& p) {
  switch (p.kind) {
    case RandomKind::uniform:
      return fill<T, device::kRandomUniform>(p);
    case RandomKind::bernoulli:
      return fill<T, device::kRandomBernoulli>(p);
    case RandomKind::normal:
      return fill<T, device::kRandomNormal>(p);
    case RandomKind::exponential:
      return fill<T, device::kRandomExponential>(p);
    case RandomKind::randint:
      break;  // the integers' (launch)
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
  for_each_batch<4>(q.offset, q.total, [&](unsigned long long g, int64_t n, unsigned long long i0) {
    for (int64_t s = 0; s < n; ++s) {
      const device::Philox4 r = device::philox_bits_block(q.seed, g + static_cast<unsigned long long>(s));
      for (int j = 0; j < 4; ++j) {
        const unsigned long long i = i0 + static_cast<unsigned long long>(4 * s + j);
        if (i >= static_cast<unsigned long long>(q.total)) continue;
        int64_t off[3];
        offsets<3>(q.walk, static_cast<int64_t>(i), off);
        const bool kept = r.v[j] >= q.threshold;
        dst[off[1]] = convert<T>(kept ? convert<Acc>(src[off[0]]) * scale : Acc(0));
        if (mask) mask[off[2]] = kept;
      }
    }
  });
}

}  // namespace

Status launch(const LaunchContext&, const RandomProblem& p) {
  if (p.dtype == DType::i32) {
    fill<int32_t, device::kRandomRandint>(p);
    return Status::ok();
  }
  if (p.dtype == DType::i64) {
    fill<int64_t, device::kRandomRandint>(p);
    return Status::ok();
  }
  return dispatch_float<half, bfloat16>(p.dtype, [&](auto t) {
    fill_kind<typename decltype(t)::type>(p);
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

#pragma once
// The random plans' kernels (include/baracuda/ops/random.hpp): one thread an element, element i of
// the logical tensor drawing stream position offset + i. The values are the host's (cpu/random.cpp)
// bit for bit: the same integer arithmetic and, for uniform, the same f32 operations (this program
// is compiled without FMA contraction, as the host's code is).
#include "cuda/device/common.cuh"
#include "cuda/device/philox.h"

namespace baracuda::device {

enum : int { kRandomUniform = 0, kRandomBernoulli = 1, kRandomRandint = 2, kRandomNormal = 3, kRandomExponential = 4 };

// u in [0, 1) from the top 24 bits (exact in f32), scaled to [low, high) in f32.
__device__ __forceinline__ float uniform_f32(unsigned int bits, float low, float high) {
  const float u = static_cast<float>(bits >> 8) * 5.9604644775390625e-8f;  // 2^-24
  const float v = low + (high - low) * u;
  return v < high ? v : nextafterf(high, low);
}
__device__ __forceinline__ double uniform_f64(unsigned int hi, unsigned int lo, double low, double high) {
  const double v = low + (high - low) * philox_u53(hi, lo);
  return v < high ? v : nextafter(high, low);
}

#define BARACUDA_FOR_EACH_ELEMENT(p)                                                       \
  for (int64 i = blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x; i < (p).total; \
       i += static_cast<int64>(gridDim.x) * blockDim.x)

template <class T, int K>
__global__ void random_fill(const RandomParams p) {
  BARACUDA_FOR_EACH_ELEMENT(p) {
    const unsigned long long at = p.offset + static_cast<unsigned long long>(i);
    T* out = static_cast<T*>(p.out) + walk_offset(p.walk, 0, i);
    if constexpr (K == kRandomRandint) {
      *out = static_cast<T>(static_cast<long long>(p.low) + static_cast<long long>(philox_bits(p.seed, at) % p.range));
    } else if constexpr (K == kRandomNormal || K == kRandomExponential) {
      // (params' low / high carry mean / std or 0 / 1 / lambda)
      const double v =
          K == kRandomNormal ? p.low + p.high * philox_normal(p.seed, at) : philox_exponential(p.seed, at) / p.high;
      if constexpr (sizeof(T) == 8)
        *out = v;
      else
        *out = round_to<T>(static_cast<float>(v));
    } else if constexpr (K == kRandomBernoulli) {
      *out = round_to<T>(philox_bits(p.seed, at) < p.threshold ? 1.0f : 0.0f);
    } else if constexpr (sizeof(T) == 8) {
      *out = uniform_f64(philox_bits(p.seed, 2 * at), philox_bits(p.seed, 2 * at + 1), p.low, p.high);
    } else {
      *out = round_to<T>(uniform_f32(philox_bits(p.seed, at), static_cast<float>(p.low), static_cast<float>(p.high)));
    }
  }
}

// y = x * scale where kept (bits >= threshold), else 0; the mask (bool) where asked for.
template <class T>
__global__ void dropout(const DropoutParams p) {
  using Acc = acc_t<T>;
  const Acc scale = static_cast<Acc>(p.scale);
  BARACUDA_FOR_EACH_ELEMENT(p) {
    const bool kept = philox_bits(p.seed, p.offset + static_cast<unsigned long long>(i)) >= p.threshold;
    const T x = static_cast<const T*>(p.src)[walk_offset(p.walk, 0, i)];
    static_cast<T*>(p.dst)[walk_offset(p.walk, 1, i)] = round_to<T>(kept ? to_acc<Acc>(x) * scale : Acc(0));
    if (p.mask) static_cast<unsigned char*>(p.mask)[walk_offset(p.walk, 2, i)] = kept ? 1 : 0;
  }
}

#undef BARACUDA_FOR_EACH_ELEMENT

}  // namespace baracuda::device

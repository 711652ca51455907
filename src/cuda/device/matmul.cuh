#pragma once
// The matmul family's elementwise passes around cuBLASLt's GEMMs: the activations cuBLASLt has no
// epilogue for (and their gradients), a GEMM's epilogue where its layout keeps cuBLASLt's from
// applying, c copied into out, an f32 accumulator rounded into a 16-bit output, and a vector of
// ones (the bias gradient as a GEMM). One thread an element, offsets from the walk.
#include "cuda/device/common.cuh"

namespace baracuda::device {

// Activation codes: baracuda::Activation's values.
enum : int { kActNone = 0, kActRelu = 1, kActGelu = 2, kActGeluTanh = 3, kActSilu = 4 };

template <int A, class Acc>
__device__ __forceinline__ Acc activate(Acc x) {
  if constexpr (A == kActRelu) {
    return x > Acc(0) || x != x ? x : Acc(0);
  } else if constexpr (A == kActGelu) {
    return Acc(0.5) * x * (Acc(1) + erf(x * Acc(0.70710678118654752440)));
  } else if constexpr (A == kActGeluTanh) {
    return Acc(0.5) * x * (Acc(1) + tanh(Acc(0.79788456080286535588) * (x + Acc(0.044715) * x * x * x)));
  } else if constexpr (A == kActSilu) {
    return x / (Acc(1) + exp(-x));
  } else {
    return x;
  }
}

template <int A, class Acc>
__device__ __forceinline__ Acc activation_slope(Acc x) {
  if constexpr (A == kActRelu) {
    return x > Acc(0) ? Acc(1) : Acc(0);
  } else if constexpr (A == kActGelu) {
    return Acc(0.5) * (Acc(1) + erf(x * Acc(0.70710678118654752440))) +
           x * Acc(0.39894228040143267794) * exp(Acc(-0.5) * x * x);
  } else if constexpr (A == kActGeluTanh) {
    const Acc t = tanh(Acc(0.79788456080286535588) * (x + Acc(0.044715) * x * x * x));
    return Acc(0.5) * (Acc(1) + t) +
           Acc(0.5) * x * (Acc(1) - t * t) * Acc(0.79788456080286535588) * (Acc(1) + Acc(3 * 0.044715) * x * x);
  } else if constexpr (A == kActSilu) {
    const Acc s = Acc(1) / (Acc(1) + exp(-x));
    return s * (Acc(1) + x * (Acc(1) - s));
  } else {
    return Acc(1);
  }
}

#define BARACUDA_FOR_EACH_ELEMENT(p)                                                       \
  for (int64 i = blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x; i < (p).total; \
       i += static_cast<int64>(gridDim.x) * blockDim.x)

// dst = act(scale * src + bias[(i % n) * bias_stride]), src of dst's type T (or absent: 0).
template <class T, int A>
__global__ void matmul_result(const MatmulPassParams p) {
  using Acc = acc_t<T>;
  BARACUDA_FOR_EACH_ELEMENT(p) {
    Acc v = Acc(0);
    if (p.src) v = static_cast<Acc>(p.scale) * to_acc<Acc>(static_cast<const T*>(p.src)[walk_offset(p.walk, 0, i)]);
    if (p.bias) v += to_acc<Acc>(static_cast<const T*>(p.bias)[(i % p.n) * p.bias_stride]);
    static_cast<T*>(p.dst)[walk_offset(p.walk, 2, i)] = round_to<T>(activate<A>(v));
  }
}

// The linear forward's y = act(pre) and backward's dpre = dy * act'(pre).
template <class T, int A>
__global__ void activation_forward(const MatmulPassParams p) {
  using Acc = acc_t<T>;
  BARACUDA_FOR_EACH_ELEMENT(p) {
    const Acc x = to_acc<Acc>(static_cast<const T*>(p.src)[walk_offset(p.walk, 0, i)]);
    static_cast<T*>(p.dst)[walk_offset(p.walk, 2, i)] = round_to<T>(activate<A>(x));
  }
}
template <class T, int A>
__global__ void activation_backward(const MatmulPassParams p) {
  using Acc = acc_t<T>;
  BARACUDA_FOR_EACH_ELEMENT(p) {
    const Acc dy = to_acc<Acc>(static_cast<const T*>(p.src)[walk_offset(p.walk, 0, i)]);
    const Acc x = to_acc<Acc>(static_cast<const T*>(p.pre)[walk_offset(p.walk, 1, i)]);
    static_cast<T*>(p.dst)[walk_offset(p.walk, 2, i)] = round_to<T>(dy * activation_slope<A>(x));
  }
}

// dst = src rounded, src the f32 accumulator.
template <class T>
__global__ void round_accumulator(const MatmulPassParams p) {
  BARACUDA_FOR_EACH_ELEMENT(p) {
    const float v = static_cast<const float*>(p.src)[walk_offset(p.walk, 0, i)];
    static_cast<T*>(p.dst)[walk_offset(p.walk, 2, i)] = round_to<T>(v);
  }
}

template <class T>
__global__ void fill_ones(const MatmulPassParams p) {
  BARACUDA_FOR_EACH_ELEMENT(p) { static_cast<T*>(p.dst)[i] = round_to<T>(1.0f); }
}

#undef BARACUDA_FOR_EACH_ELEMENT

}  // namespace baracuda::device

#pragma once
// The matmul family's elementwise passes around cuBLASLt's GEMMs: the activations cuBLASLt has no
// epilogue for (and their gradients), a GEMM's epilogue where its layout keeps cuBLASLt's from
// applying, c copied into out, an f32 accumulator rounded into a 16-bit output, and a vector of
// ones (the bias gradient as a GEMM). One thread an element, offsets from the walk.
#include "cuda/device/common.cuh"
#include "cuda/device/params.h"

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

// Element i's offset in tensor t: the walk's, or with kVec (every tensor contiguous, 16-byte
// aligned, total a whole number of vectors) i itself, the kernels then stepping a vector at a time.
template <bool kVec>
__device__ __forceinline__ int64 pass_offset(const MatmulPassParams& p, int t, int64 i) {
  return kVec ? i : walk_offset(p.walk, t, i);
}
template <class T, bool kVec>
inline constexpr int kPassWidth = kVec ? kVectorWidth<T> : 1;

// The kernels below take VW = kPassWidth elements a thread per step: one 16-byte vector with kVec.
#define BARACUDA_FOR_EACH_STEP(p, VW)                                                               \
  for (int64 i = (blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x) * (VW); i < (p).total; \
       i += static_cast<int64>(gridDim.x) * blockDim.x * (VW))

template <class T, int VW>
__device__ __forceinline__ void load_step(const void* base, int64 at, T (&out)[VW]) {
  if constexpr (VW > 1) {
    const Vector<T> v = load_vector(static_cast<const T*>(base) + at);
    for (int k = 0; k < VW; ++k) out[k] = v.e[k];
  } else {
    out[0] = static_cast<const T*>(base)[at];
  }
}
template <class T, int VW>
__device__ __forceinline__ void store_step(void* base, int64 at, const T (&in)[VW]) {
  if constexpr (VW > 1) {
    Vector<T> v;
    for (int k = 0; k < VW; ++k) v.e[k] = in[k];
    store_vector(static_cast<T*>(base) + at, v);
  } else {
    static_cast<T*>(base)[at] = in[0];
  }
}

// dst = act(scale * src + bias[(i % n) * bias_stride]), src of dst's type T (or absent: 0).
template <class T, int A, bool kVec>
__global__ void matmul_result(const __grid_constant__ MatmulPassParams p) {
  using Acc = acc_t<T>;
  constexpr int VW = kPassWidth<T, kVec>;
  BARACUDA_FOR_EACH_STEP(p, VW) {
    T src[VW], out[VW];
    if (p.src) load_step<T, VW>(p.src, pass_offset<kVec>(p, 0, i), src);
    for (int k = 0; k < VW; ++k) {
      Acc v = p.src ? static_cast<Acc>(p.scale) * to_acc<Acc>(src[k]) : Acc(0);
      if (p.bias) v += to_acc<Acc>(static_cast<const T*>(p.bias)[((i + k) % p.n) * p.bias_stride]);
      out[k] = round_to<T>(activate<A>(v));
    }
    store_step<T, VW>(p.dst, pass_offset<kVec>(p, 2, i), out);
  }
}

// The linear forward's y = act(pre) and backward's dpre = dy * act'(pre).
template <class T, int A, bool kVec>
__global__ void activation_forward(const __grid_constant__ MatmulPassParams p) {
  using Acc = acc_t<T>;
  constexpr int VW = kPassWidth<T, kVec>;
  BARACUDA_FOR_EACH_STEP(p, VW) {
    T x[VW], y[VW];
    load_step<T, VW>(p.src, pass_offset<kVec>(p, 0, i), x);
    for (int k = 0; k < VW; ++k) y[k] = round_to<T>(activate<A>(to_acc<Acc>(x[k])));
    store_step<T, VW>(p.dst, pass_offset<kVec>(p, 2, i), y);
  }
}
template <class T, int A, bool kVec>
__global__ void activation_backward(const __grid_constant__ MatmulPassParams p) {
  using Acc = acc_t<T>;
  constexpr int VW = kPassWidth<T, kVec>;
  BARACUDA_FOR_EACH_STEP(p, VW) {
    T dy[VW], x[VW], dx[VW];
    load_step<T, VW>(p.src, pass_offset<kVec>(p, 0, i), dy);
    load_step<T, VW>(p.pre, pass_offset<kVec>(p, 1, i), x);
    for (int k = 0; k < VW; ++k) dx[k] = round_to<T>(to_acc<Acc>(dy[k]) * activation_slope<A>(to_acc<Acc>(x[k])));
    store_step<T, VW>(p.dst, pass_offset<kVec>(p, 2, i), dx);
  }
}

// dst = src rounded, src the f32 accumulator.
template <class T>
__global__ void round_accumulator(const __grid_constant__ MatmulPassParams p) {
  BARACUDA_FOR_EACH_ELEMENT(p) {
    const float v = static_cast<const float*>(p.src)[walk_offset(p.walk, 0, i)];
    static_cast<T*>(p.dst)[walk_offset(p.walk, 2, i)] = round_to<T>(v);
  }
}

template <class T>
__global__ void fill_ones(const __grid_constant__ MatmulPassParams p) {
  BARACUDA_FOR_EACH_ELEMENT(p) { static_cast<T*>(p.dst)[i] = round_to<T>(1.0f); }
}

#undef BARACUDA_FOR_EACH_ELEMENT
#undef BARACUDA_FOR_EACH_STEP

}  // namespace baracuda::device

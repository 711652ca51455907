#pragma once
// What every kernel compiled at select shares: the 16-bit storage types and their conversions (by
// the PTX instructions, sm_80+, so no toolkit header is needed at run time), 16-byte vector
// access, element offsets from a Walk, and block-wide sums in a fixed order (deterministic).
// Self-contained: NVRTC compiles it with no include path.
#include "cuda/device/walk.h"

namespace baracuda::device {

using int64 = long long;

// 16-bit floats as their bits: f16 (IEEE binary16) and bf16 (bfloat16).
struct f16 {
  unsigned short bits;
};
struct bf16 {
  unsigned short bits;
};

__device__ __forceinline__ float to_float(f16 v) {
  float r;
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(v.bits));
  return r;
}
__device__ __forceinline__ float to_float(bf16 v) { return __uint_as_float(static_cast<unsigned>(v.bits) << 16); }

// The compute type: f64 stays f64, everything else computes in f32.
template <class T>
struct AccOf {
  using type = float;
};
template <>
struct AccOf<double> {
  using type = double;
};
template <class T>
using acc_t = typename AccOf<T>::type;

template <class Acc, class T>
__device__ __forceinline__ Acc to_acc(T v) {
  return static_cast<Acc>(v);
}
template <class Acc>
__device__ __forceinline__ Acc to_acc(f16 v) {
  return static_cast<Acc>(to_float(v));
}
template <class Acc>
__device__ __forceinline__ Acc to_acc(bf16 v) {
  return static_cast<Acc>(to_float(v));
}

// Rounded to nearest, ties to even (NaN stays NaN, overflow gives inf), as a cast in PyTorch.
template <class T>
struct Round {
  template <class Acc>
  __device__ __forceinline__ static T from(Acc v) {
    return static_cast<T>(v);
  }
};
template <>
struct Round<f16> {
  template <class Acc>
  __device__ __forceinline__ static f16 from(Acc v) {
    f16 r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(static_cast<float>(v)));
    return r;
  }
};
template <>
struct Round<bf16> {
  template <class Acc>
  __device__ __forceinline__ static bf16 from(Acc v) {
    bf16 r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(static_cast<float>(v)));
    return r;
  }
};
template <class T, class Acc>
__device__ __forceinline__ T round_to(Acc v) {
  return Round<T>::from(v);
}

// VW elements of T in one 16-byte access.
template <class T>
inline constexpr int kVectorWidth = 16 / static_cast<int>(sizeof(T));
template <class T>
union Vector {
  uint4 raw;
  T e[kVectorWidth<T>];
};
template <class T>
__device__ __forceinline__ Vector<T> load_vector(const T* p) {
  Vector<T> v;
  v.raw = *reinterpret_cast<const uint4*>(p);
  return v;
}
template <class T>
__device__ __forceinline__ void store_vector(T* p, const Vector<T>& v) {
  *reinterpret_cast<uint4*>(p) = v.raw;
}

// A shared-memory pointer as the 32-bit address PTX's shared instructions take.
__device__ __forceinline__ unsigned shared_address(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
// 16 bytes from global to shared memory without passing through registers (cp.async; L2 only), and
// the waits for a thread's copies (sm_80+).
__device__ __forceinline__ void copy_async_16(void* to_shared, const void* from) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared_address(to_shared)), "l"(from) : "memory");
}
// 16 bytes into shared memory (a shared address): the first `bytes` from `from`, zeros after them.
__device__ __forceinline__ void copy_async_16_fill(unsigned to_shared, const void* from, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(to_shared), "l"(from), "r"(bytes) : "memory");
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void copy_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
// Every group but the N committed last complete (an (N + 1)-stage pipeline).
template <int N>
__device__ __forceinline__ void copy_async_wait_pending() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Element `linear` of the walk's sizes: tensor t's offset (elements).
template <int NT>
__device__ __forceinline__ int64 walk_offset_inline(const Walk<NT>& w, int t, int64 linear) {
  int64 off = 0;
  for (int d = w.rank - 1; d > 0; --d) {
    const int64 q = linear / w.sizes[d];
    off += (linear - q * w.sizes[d]) * w.strides[t][d];
    linear = q;
  }
  return w.rank > 0 ? off + linear * w.strides[t][0] : 0;
}
// The same, not inlined, for per-element offsets: its 64-bit divisions, copied into every unrolled
// access, made kernels ten times the size and compile time. (A call costs registers saved around it:
// kernels that need an offset once per row use the inline form.)
// A walk in the kernel's parameters must come from a `const __grid_constant__` parameter: passing
// a plain parameter by reference copies the whole struct to local memory at each call (the norms
// moved four times their bytes that way: bench/NOTES.md).
template <int NT>
__device__ __noinline__ int64 walk_offset(const Walk<NT>& w, int t, int64 linear) {
  return walk_offset_inline(w, t, linear);
}

// The sum over the block of every thread's v, the same on every thread, in a fixed order: lanes by
// butterfly, then the warps' sums the same way. `shared` holds 32 values; the block's size is a
// multiple of 32. Each call begins with a barrier, so consecutive calls may share `shared`.
template <class Acc, int N>
__device__ __forceinline__ void block_sum(Acc (&v)[N], Acc* shared) {
  for (int o = 16; o > 0; o >>= 1)
    for (int i = 0; i < N; ++i) v[i] += __shfl_xor_sync(0xffffffffu, v[i], o);
  if (blockDim.x <= 32) return;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0)
    for (int i = 0; i < N; ++i) shared[i * 32 + warp] = v[i];
  __syncthreads();
  for (int i = 0; i < N; ++i) v[i] = lane < warps ? shared[i * 32 + lane] : Acc(0);
  for (int o = 16; o > 0; o >>= 1)
    for (int i = 0; i < N; ++i) v[i] += __shfl_xor_sync(0xffffffffu, v[i], o);
}

// Count, mean and sum of squared deviations of some values; merged by Chan's formula.
template <class Acc>
struct Moments {
  Acc n, mean, m2;
};
template <class Acc>
__device__ __forceinline__ Moments<Acc> merge(const Moments<Acc>& a, const Moments<Acc>& b) {
  if (b.n == Acc(0)) return a;
  if (a.n == Acc(0)) return b;
  const Acc n = a.n + b.n, delta = b.mean - a.mean, f = b.n / n;
  return {n, a.mean + delta * f, a.m2 + b.m2 + delta * delta * a.n * f};
}
// The moments of the whole block, the same on every thread: lanes by butterfly, the lower lane's
// moments always merged first (both lanes compute the same value), then the warps' in order.
// `shared` holds 96 values.
template <class Acc>
__device__ __forceinline__ Moments<Acc> block_moments(Moments<Acc> m, Acc* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int o = 1; o < 32; o <<= 1) {
    const Moments<Acc> other{__shfl_xor_sync(0xffffffffu, m.n, o), __shfl_xor_sync(0xffffffffu, m.mean, o),
                             __shfl_xor_sync(0xffffffffu, m.m2, o)};
    m = (lane & o) ? merge(other, m) : merge(m, other);
  }
  __syncthreads();
  if (lane == 0) {
    shared[warp] = m.n;
    shared[32 + warp] = m.mean;
    shared[64 + warp] = m.m2;
  }
  __syncthreads();
  Moments<Acc> all{shared[0], shared[32], shared[64]};
  for (int w = 1; w < warps; ++w) all = merge(all, Moments<Acc>{shared[w], shared[32 + w], shared[64 + w]});
  return all;
}

template <class Acc>
__device__ __forceinline__ Acc reciprocal_sqrt(Acc v) {
  return Acc(1) / sqrt(v);
}

}  // namespace baracuda::device

#pragma once
// The reductions of the scatter kernels, in the style of MLX's scatter_ops.cuh: a kernel names the
// op, the op says how values meet. Values are reduced in the accumulator type Acc (acc_t<T>) and
// stored in the element type T. Sum is the only op yet; max and min (scatter_reduce's amax / amin,
// segment_max / segment_min) come next, with their own identity and atomics.
// (NVRTC reads it: the indexing kernels compiled at select.)
#include "cuda/common/half_atomics.cuh"

namespace baracuda::detail::cuda {

struct ScatterSum {
  // The value of an empty reduction: a destination that receives it is unchanged.
  template <class Acc>
  __device__ __forceinline__ static Acc identity() {
    return Acc(0);
  }
  template <class Acc>
  __device__ __forceinline__ static Acc reduce(Acc a, Acc b) {
    return a + b;
  }
  // *p reduced with v, by the one thread that owns *p.
  template <class T, class Acc>
  __device__ __forceinline__ static void combine(T* p, Acc v) {
    *p = static_cast<T>(reduce(static_cast<Acc>(*p), v));
  }
  // The same with an atomic: the order of the additions varies from run to run.
  template <class T, class Acc>
  __device__ __forceinline__ static void atomic_combine(T* p, Acc v) {
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
      atomic_add(p, static_cast<T>(v));
    } else {
      atomicAdd(p, static_cast<T>(v));
    }
  }
  // Four f32 at once: one vector reduction (red.global.add.v4.f32, sm_90) per 16 bytes.
  __device__ __forceinline__ static void atomic_combine4(float* p, float4 x) {
#if __CUDA_ARCH__ >= 900
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(x.x), "f"(x.y), "f"(x.z), "f"(x.w)
                 : "memory");
#else
    atomicAdd(p, x.x);
    atomicAdd(p + 1, x.y);
    atomicAdd(p + 2, x.z);
    atomicAdd(p + 3, x.w);
#endif
  }
};

}  // namespace baracuda::detail::cuda

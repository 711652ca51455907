// Unary lab (bench/NOTES.md, "Queued timing; ..."): the library's vectorized elementwise launch
// (run_elementwise, as the headers and macros this lab is built with have it) on a one-input op,
// f32 and bf16, [16384, 4096], inputs rotated past L2, queued timing, beside a device copy of the same
// bytes timed the same way. Not part of the library or its build. Build (sm_90) with the library's
// flags; variants by macro (e.g. -DBARACUDA_UNROLL_ONE_INPUT=4 for 16-bit, -DBARACUDA_PERSISTENT=2) or by a
// header directory named first with -I, several builds run in one device call:
//   nvcc -O3 -std=c++20 --expt-relaxed-constexpr -arch=sm_90 -Isrc -Iinclude bench/labs/unary_lab.cu
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "common/unary_math.hpp"
#include "elementwise_lab.cuh"

#ifndef BARACUDA_PERSISTENT
#define BARACUDA_PERSISTENT 0
#endif

using namespace baracuda;
using namespace baracuda::detail;
using namespace baracuda::detail::cuda;

struct ScaleOp {  // memory-bound: one multiply-add an element
  using Acc = float;
  static constexpr int kIn = 1, kOut = 1;
  __device__ void operator()(const float (&x)[1], float (&y)[1]) const { y[0] = x[0] * 1.5f + 0.25f; }
};
struct ExpOp {
  using Acc = float;
  static constexpr int kIn = 1, kOut = 1;
  __device__ void operator()(const float (&x)[1], float (&y)[1]) const { y[0] = expf(x[0]); }
};

// A one-shot block per kThreadsL * kU vectors (no grid-stride loop), each thread kU vectors kThreadsL
// apart, all loaded before any is used: the shape PyTorch's vectorized loop has (128 threads).
template <class T, class Op, int kThreadsL, int kU>
__global__ void __launch_bounds__(kThreadsL) lab_oneshot_kernel(Op op, const T* in, T* out, int64_t vectors) {
  constexpr int kV = 16 / sizeof(T);
  const int64_t first = int64_t{blockIdx.x} * kThreadsL * kU + threadIdx.x;
  Pack<T, kV> x[kU];
#pragma unroll
  for (int u = 0; u < kU; ++u)
    if (first + u * kThreadsL < vectors) x[u] = load_pack<kV>(in + (first + u * kThreadsL) * kV);
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    if (first + u * kThreadsL < vectors) {
      Pack<T, kV> y;
#pragma unroll
      for (int e = 0; e < kV; ++e) {
        float a[1] = {static_cast<float>(x[u].v[e])}, b[1];
        op(a, b);
        y.v[e] = static_cast<T>(b[0]);
      }
      store_pack(out + (first + u * kThreadsL) * kV, y);
    }
  }
}

template <class T, class Op, int kThreadsL, int kU>
float oneshot_ms(T* const* in, T* const* out, int sets, int64_t n) {
  constexpr int kV = 16 / sizeof(T);
  const int64_t vectors = n / kV, per_block = int64_t{kThreadsL} * kU;
  const unsigned blocks = static_cast<unsigned>((vectors + per_block - 1) / per_block);
  return queued_median_ms([&](int i) {
    lab_oneshot_kernel<T, Op, kThreadsL, kU><<<blocks, kThreadsL>>>(Op{}, in[i % sets], out[i % sets], vectors);
  });
}

template <class T, class Op>
void run_case(int64_t rows, int64_t cols, int sms, const char* name) {
  const int64_t n = rows * cols;
  const size_t bytes = size_t(n) * sizeof(T);
  constexpr int kSets = 4;  // 4 x 2 x 128 MiB (bf16) or 256 MiB (f32): far past the 60 MB L2
  T *in[kSets], *out[kSets];
  for (int s = 0; s < kSets; ++s) {
    CK(cudaMalloc(&in[s], bytes));
    CK(cudaMalloc(&out[s], bytes));
    CK(cudaMemset(in[s], 0x3c, bytes));  // small finite values in either type
  }
  const float copy_ms = queued_median_ms(
      [&](int i) { CK(cudaMemcpyAsync(out[i % kSets], in[i % kSets], bytes, cudaMemcpyDeviceToDevice)); });
  ElementwiseTensors<1, 1> t;
  t.path = ElementwisePath::vectorized;
  t.shape.rank = 2;
  t.shape.dims[0] = rows;
  t.shape.dims[1] = cols;
  const float ms = queued_median_ms([&](int i) {
    t.in[0] = in[i % kSets];
    t.out[0] = out[i % kSets];
    if (!run_elementwise<T>(Stream::cuda(), sms, Op{}, t)) printf("launch failed\n");
  });
  printf("%-5s %-5s [%lld, %lld] vectors a thread %d persistent %d  %.4f ms  %5.1f%% of copy (copy %.4f)\n",
         sizeof(T) == 4 ? "f32" : "bf16", name, (long long)rows, (long long)cols, kPackUnroll<T, T, Op>,
         BARACUDA_PERSISTENT + 0, ms, 100.f * copy_ms / ms, copy_ms);
  const float one_128_2 = oneshot_ms<T, Op, 128, 2>(in, out, kSets, n);
  const float one_128_4 = oneshot_ms<T, Op, 128, 4>(in, out, kSets, n);
  const float one_256_4 = oneshot_ms<T, Op, 256, 4>(in, out, kSets, n);
  const float one_256_2 = oneshot_ms<T, Op, 256, 2>(in, out, kSets, n);
  printf("      one-shot blocks: 128 x 2 %.4f ms, 128 x 4 %.4f, 256 x 4 %.4f, 256 x 2 %.4f\n", one_128_2, one_128_4,
         one_256_4, one_256_2);
  for (int s = 0; s < kSets; ++s) {
    CK(cudaFree(in[s]));
    CK(cudaFree(out[s]));
  }
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  run_case<float, ScaleOp>(16384, 4096, sms, "scale");
  run_case<float, ExpOp>(16384, 4096, sms, "exp");
  run_case<__nv_bfloat16, ScaleOp>(16384, 4096, sms, "scale");
  run_case<__nv_bfloat16, ExpOp>(16384, 4096, sms, "exp");
  run_case<__nv_bfloat16, UnaryForward<GeluMath, float, true>>(16384, 4096, sms, "gelu");
  run_case<__nv_bfloat16, UnaryForward<SiluMath, float, true>>(16384, 4096, sms, "silu");
  run_case<__nv_bfloat16, UnaryForward<ExpMath, float, true>>(16384, 4096, sms, "exp16");
  return 0;
}

// Several-input lab (bench/NOTES.md, "Two-input vectors in flight"): the library's vectorized
// elementwise launch (run_elementwise, as the headers this lab is built with have it) on ops of two
// or more inputs, the library's own functors, memory-bound (add, mul) and compute-heavy (gelu's and
// silu's gradients, addcdiv and its three gradients),
// f32 and bf16, [16384, 4096], inputs rotated past L2, queued timing, beside a device copy of the
// same bytes. Not part of the library or its build. Variants by a header directory named first with
// -I (e.g. another kUnroll for two inputs), several builds run in one device call:
//   nvcc -O3 -std=c++20 --expt-relaxed-constexpr -arch=sm_90 -Isrc -Iinclude bench/labs/binary_lab.cu
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>

#include "common/binary_math.hpp"
#include "common/ternary_math.hpp"
#include "common/unary_math.hpp"
#include "elementwise_lab.cuh"

using namespace baracuda;
using namespace baracuda::detail;
using namespace baracuda::detail::cuda;

// n elements of each of Op's inputs and outputs; the time a device copy takes for as many bytes.
template <class T, class Op>
void run_case(const Op& op, int64_t rows, int64_t cols, int sms, const char* name) {
  constexpr int kIn = Op::kIn, kOut = Op::kOut, kSets = 3;  // 3 sets: far past the 60 MB L2
  const int64_t n = rows * cols;
  const size_t bytes = size_t(n) * sizeof(T);
  T *in[kSets][kIn], *out[kSets][kOut];
  for (int s = 0; s < kSets; ++s) {
    for (int k = 0; k < kIn; ++k) {
      CK(cudaMalloc(&in[s][k], bytes));
      CK(cudaMemset(in[s][k], 0x3c, bytes));  // small finite values in either type
    }
    for (int k = 0; k < kOut; ++k) CK(cudaMalloc(&out[s][k], bytes));
  }
  const float copy_ms = queued_median_ms(
      [&](int i) { CK(cudaMemcpyAsync(out[i % kSets][0], in[i % kSets][0], bytes, cudaMemcpyDeviceToDevice)); });
  const float ideal_ms = copy_ms * (kIn + kOut) / 2;  // the copy moves 2 x bytes
  ElementwiseTensors<kIn, kOut> t;
  t.path = ElementwisePath::vectorized;
  t.shape.rank = 2;
  t.shape.dims[0] = rows;
  t.shape.dims[1] = cols;
  const float ms = queued_median_ms([&](int i) {
    for (int k = 0; k < kIn; ++k) t.in[k] = in[i % kSets][k];
    for (int k = 0; k < kOut; ++k) t.out[k] = out[i % kSets][k];
    if (!run_elementwise<T>(Stream::cuda(), sms, op, t)) printf("launch failed\n");
  });
  printf("%-5s %-11s [%lld, %lld] vectors a thread %d  %.4f ms  %5.1f%% of copy (copy-rate time %.4f)\n",
         sizeof(T) == 4 ? "f32" : "bf16", name, (long long)rows, (long long)cols, kPackUnroll<T, T, Op>, ms,
         100.f * ideal_ms / ms, ideal_ms);
  for (int s = 0; s < kSets; ++s) {
    for (int k = 0; k < kIn; ++k) CK(cudaFree(in[s][k]));
    for (int k = 0; k < kOut; ++k) CK(cudaFree(out[s][k]));
  }
}

template <class T>
void run_all(int sms) {
  constexpr bool k16 = sizeof(T) == 2;
  run_case<T>(BinaryForward<AddMath, float>{1.0f}, 16384, 4096, sms, "add");
  run_case<T>(BinaryForward<MulMath, float>{1.0f}, 16384, 4096, sms, "mul");
  run_case<T>(UnaryBackward<GeluMath, float, k16>{}, 16384, 4096, sms, "gelu_bw");
  run_case<T>(UnaryBackward<SiluMath, float, k16>{}, 16384, 4096, sms, "silu_bw");
  run_case<T>(TernaryForward<AddcdivMath, float, 3>{{}, 0.5f}, 16384, 4096, sms, "addcdiv");
  run_case<T>(TernaryGradients<AddcdivMath, float, 4, 3>{{}, 0.5f, {0, 1, 2}}, 16384, 4096, sms, "addcdiv_bw");
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  run_all<float>(sms);
  run_all<__nv_bfloat16>(sms);
  return 0;
}

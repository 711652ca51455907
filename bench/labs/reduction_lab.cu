// Broadcast-reduction lab (bench/NOTES.md, "Broadcast reduction: registers of the 16-bit vectors
// kernel"): the library's run_split_reduction (cuda/common/broadcast_reduction.cuh, as the include
// path this lab is built with has it) on a bias gradient (db = column sums of dout [N, D]) and on the
// backward of a * b[D] (da = dout b, db = column sums of dout a), f32 and bf16, beside a device copy
// of the same bytes; and the rows kernel (reduced dim innermost: b [N, 1]) on the same two bodies.
// Not part of the library or its build. Build (sm_90) with the library's flags
// (`ninja -t commands` of any .cu: its -I, -D, -std and --expt flags); a variant of a header put in a
// directory named first with -I compiles against the same lab, for two builds run in one device call:
//   nvcc -O3 -std=c++20 --expt-relaxed-constexpr -arch=sm_90 -Isrc -Iinclude bench/labs/reduction_lab.cu
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cuda/common/broadcast_reduction.cuh"
#include "lab.cuh"

using namespace baracuda;
using namespace baracuda::detail;
using namespace baracuda::detail::cuda;

struct SumBody {  // db += dout
  using Acc = float;
  static constexpr int kIn = 1, kOut = 0;
  BARACUDA_HD float operator()(const float (&x)[1], float (&)[1]) const { return x[0]; }
};
struct MulBody {  // da = dout b, db += dout a
  using Acc = float;
  static constexpr int kIn = 3, kOut = 1;
  BARACUDA_HD float operator()(const float (&x)[3], float (&y)[1]) const {
    y[0] = x[0] * x[2];
    return x[0] * x[1];
  }
};

// [n, d] tensors dout, a (and da). rows false: b and db [d], the vectors kernel (column sums); rows
// true: b and db [n, 1], the rows kernel (row sums, a warp a row).
template <class T, class Body>
void run_case(int64_t n, int64_t d, int sms, bool rows = false) {
  constexpr int kIn = Body::kIn, kOut = Body::kOut, NT = kIn + kOut + 1;
  const int64_t kept = rows ? n : d, reduced = rows ? d : n;
  const size_t bytes = size_t(n) * d * sizeof(T);
  T *dout, *a, *da, *b, *db;
  CK(cudaMalloc(&dout, bytes));
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&da, bytes));
  CK(cudaMalloc(&b, kept * sizeof(T)));
  CK(cudaMalloc(&db, kept * sizeof(T)));
  CK(cudaMemset(dout, 0, bytes));
  CK(cudaMemset(a, 0, bytes));
  CK(cudaMemset(b, 0, kept * sizeof(T)));
  const int64_t planned = rows ? 64 : 4096;
  float* partial;
  CK(cudaMalloc(&partial, planned * kept * sizeof(float)));
  // a copy's time for the bytes the case moves (sum: reads dout; mul: reads dout and a, writes da),
  // from a copy of one tensor (two streams)
  const int streams = kIn == 1 ? 1 : 3;
  const float copy_ms =
      median_ms([&] { CK(cudaMemcpyAsync(da, dout, bytes, cudaMemcpyDeviceToDevice)); }) * streams / 2;
  BroadcastReduction<T, Body> k;
  const T* ins[3] = {dout, a, b};
  for (int i = 0; i < kIn; ++i) k.p.in[i] = ins[i];
  if (kOut) k.p.out[0] = da;
  k.p.out[kOut] = db;
  k.partial = partial;
  k.m = kept;
  k.r = reduced;
  k.s = planned;
  k.lanes_on_split = rows;
  k.kept.rank = 1;
  k.kept.sizes[0] = kept;
  k.reduced.rank = 1;
  k.reduced.sizes[0] = reduced;
  for (int i = 0; i < NT; ++i) {
    const bool of_b = (kIn == 3 && i == 2) || i == NT - 1;  // b and db: one value along the reduced dim
    k.kept.strides[i][0] = rows && !of_b ? d : 1;
    k.reduced.strides[i][0] = of_b ? 0 : rows ? 1 : d;
  }
  // (the registers of the kernel the layout takes; the vectors kernel's with one reduced dim)
  cudaFuncAttributes attr{};
  if (rows)
    CK(cudaFuncGetAttributes(&attr, broadcast_reduction_rows_kernel<T, Body, T>));
  else
    CK(cudaFuncGetAttributes(&attr, broadcast_reduction_vectors_kernel<T, Body, T, true>));
  const float ms = median_ms([&] {
    if (!run_split_reduction(Stream::cuda(), sms, k)) printf("launch failed\n");
  });
  printf("%s %s%s [%lld, %lld] regs %d  %.4f ms  %5.1f%% of copy (copy %.4f)\n", sizeof(T) == 4 ? "f32" : "bf16",
         kIn == 1 ? "sum" : "mul", rows ? " rows" : "", (long long)n, (long long)d, attr.numRegs, ms,
         100.f * copy_ms / ms, copy_ms);
  CK(cudaFree(dout));
  CK(cudaFree(a));
  CK(cudaFree(da));
  CK(cudaFree(b));
  CK(cudaFree(db));
  CK(cudaFree(partial));
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  run_case<__nv_bfloat16, SumBody>(16384, 4096, sms);
  run_case<float, SumBody>(16384, 4096, sms);
  run_case<__nv_bfloat16, MulBody>(16384, 4096, sms);
  run_case<float, MulBody>(16384, 4096, sms);
  run_case<__nv_bfloat16, SumBody>(65536, 768, sms);
  run_case<__nv_bfloat16, MulBody>(65536, 768, sms);
  run_case<__nv_bfloat16, MulBody>(16384, 4096, sms, true);
  run_case<float, MulBody>(16384, 4096, sms, true);
  run_case<__nv_bfloat16, SumBody>(16384, 4096, sms, true);
  return 0;
}

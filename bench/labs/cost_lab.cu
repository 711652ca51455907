// Element-cost lab (bench/NOTES.md, "Vectors a thread by the op's cost"): the library's elementwise
// launch (run_elementwise, as the headers this lab is built with have it) on the library's own
// functors in bf16, [16384, 4096], inputs rotated past L2, queued timing: one-input ops of each
// ElementCost on the vectorized path, and binary, gated and lerp ops on broadcast rows (b [D], b [N, 1],
// x's halves) on the strided_vectorized path. Times in ms and % of a device copy's rate over the
// bytes the full tensors hold. Not part of the library or its build. Build (sm_90) against two header
// trees (-DLAB_BASE for headers from before ElementCost) and run both in one device call:
//   nvcc -O3 -std=c++20 --expt-relaxed-constexpr -arch=sm_90 -Isrc -Iinclude bench/labs/cost_lab.cu
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/binary_math.hpp"
#include "common/binary_param_math.hpp"
#include "common/unary_math.hpp"
#include "elementwise_lab.cuh"
#include "ops/copy_problem.hpp"
#include "ops/gated_problem.hpp"

using namespace baracuda;
using namespace baracuda::detail;
using namespace baracuda::detail::cuda;

#ifndef LAB_T  // -DLAB_T=float for f32 tensors
#define LAB_T __nv_bfloat16
#endif
using T = LAB_T;
const char* const kTypeName = sizeof(T) == 2 ? "bf16" : "f32";
int64_t kRows = 16384, kCols = 4096;  // main's arguments may set them
constexpr int kSets = 3;              // 3 sets of every full tensor: far past the 60 MB L2

// How an input is laid over the [kRows, kCols] output: a full tensor, one value a column (b [D]),
// one a row (b [N, 1]), or a half of an [kRows, 2 kCols] x (the gated ops' a and b).
enum class Operand { full, row_vector, column, first_half, second_half };

// Values -8 .. 8 from a hash of the index (zeros might flatter the memory system).
__global__ void lab_fill_kernel(T* p, int64_t n) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<T>(float((uint32_t(i) * 2654435761u >> 20) % 17) * 0.25f - 2.f);
}
T* filled(int64_t n) {
  T* p = nullptr;
  CK(cudaMalloc(&p, size_t(n) * sizeof(T)));
  lab_fill_kernel<<<1024, 256>>>(p, n);
  CK(cudaGetLastError());
  return p;
}

int sm_count() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  return sms;
}

float copy_ms_of(int64_t elements) {
  T *a[kSets], *b[kSets];
  for (int s = 0; s < kSets; ++s) a[s] = filled(elements / 2), b[s] = filled(elements / 2);
  const size_t bytes = size_t(elements / 2) * sizeof(T);
  const float ms = queued_median_ms(
      [&](int i) { CK(cudaMemcpyAsync(b[i % kSets], a[i % kSets], bytes, cudaMemcpyDeviceToDevice)); });
  for (int s = 0; s < kSets; ++s) {
    CK(cudaFree(a[s]));
    CK(cudaFree(b[s]));
  }
  return ms;  // the copy reads and writes `elements` in all
}

template <class In = T, class Op>
void run_case(const Op& op, const char* name, const Operand (&layout)[Op::kIn], ElementwisePath path) {
  constexpr int kIn = Op::kIn;
  T* in[kSets][kIn];
  T* out[kSets];
  int64_t elements = kRows * kCols;  // the output's
  for (int k = 0; k < kIn; ++k) {
    const Operand l = layout[k];
    const int64_t n = l == Operand::full         ? kRows * kCols
                      : l == Operand::row_vector ? kCols
                      : l == Operand::column     ? kRows
                                                 : 0;
    if (l == Operand::full || l == Operand::first_half || l == Operand::second_half) elements += kRows * kCols;
    for (int s = 0; s < kSets; ++s) {
      if (l == Operand::second_half)
        in[s][k] = in[s][k - 1] + kCols;
      else
        in[s][k] = filled(l == Operand::first_half ? 2 * kRows * kCols : n);
    }
  }
  for (int s = 0; s < kSets; ++s) CK(cudaMalloc(&out[s], size_t(kRows * kCols) * sizeof(T)));
  ElementwiseTensors<kIn, 1> t;
  t.path = path;
  t.shape.rank = 2;
  t.shape.dims[0] = kRows;
  t.shape.dims[1] = kCols;
  for (int k = 0; k < kIn; ++k) {
    Strides& st = t.in_strides[k];
    switch (layout[k]) {
      case Operand::full:
        st[0] = kCols, st[1] = 1;
        break;
      case Operand::row_vector:
        st[0] = 0, st[1] = 1;
        break;
      case Operand::column:
        st[0] = 1, st[1] = 0;
        break;
      default:
        st[0] = 2 * kCols, st[1] = 1;
        break;
    }
  }
  t.out_strides[0][0] = kCols, t.out_strides[0][1] = 1;
  const float ms = queued_median_ms([&](int i) {
    for (int k = 0; k < kIn; ++k) t.in[k] = in[i % kSets][k];
    t.out[0] = out[i % kSets];
    // (In another 16-bit type: T's bits read as In, finite for the fill's values)
    if (!run_elementwise<In, T>(Stream::cuda(), sm_count(), op, t)) printf("launch failed\n");
  });
  const float ideal_ms = copy_ms_of(elements);
#ifdef LAB_BASE  // headers from before ElementCost
  const int cost = -1, vectors = -1;
#else
  const int cost = int(element_cost<Op>());
  const int vectors = kPackUnroll<In, T, Op>;  // (the flat rows kernel takes as many as the vectorized one)
#endif
  printf("%s [%lld,%lld] %-16s %-18s cost %2d vectors a thread %2d  %.4f ms  %5.1f%% of copy\n", kTypeName,
         (long long)kRows, (long long)kCols, name, std::string(path_name(path)).c_str(), cost, vectors, ms,
         100.f * ideal_ms / ms);
  for (int s = 0; s < kSets; ++s) {
    for (int k = 0; k < kIn; ++k)
      if (layout[k] != Operand::second_half) CK(cudaFree(in[s][k]));
    CK(cudaFree(out[s]));
  }
}

// The library's binary functor with its 16-bit maths (forward16) where the headers have them.
#ifdef LAB_BASE
template <class Math>
using Binary16 = BinaryForward<Math, float>;
#else
template <class Math>
using Binary16 = BinaryForward<Math, float, true>;
#endif

template <class Math>
void unary(const char* name) {
  run_case(UnaryForward<Math, float, true>{}, name, {Operand::full}, ElementwisePath::vectorized);
}
template <class Math>
void rows(const char* name) {
  run_case(Binary16<Math>{1.0f}, name, {Operand::full, Operand::row_vector}, ElementwisePath::strided_vectorized);
}
template <class Math>
void columns(const char* name) {
  run_case(Binary16<Math>{1.0f}, name, {Operand::full, Operand::column}, ElementwisePath::strided_vectorized);
}
template <class Math>
void gated(const char* name) {
  run_case(GatedForward<Math, float, true>{}, name, {Operand::first_half, Operand::second_half},
           ElementwisePath::strided_vectorized);
}

// Arguments: none for every case at [16384, 4096]; `rows R C` for the broadcast-row cases at [R, C].
int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "rows") {
    kRows = std::atoll(argv[2]), kCols = std::atoll(argv[3]);
    printf("[%lld, %lld]\n", (long long)kRows, (long long)kCols);
    rows<AddMath>("add b[D]");
    rows<DivMath>("div b[D]");
    columns<AddMath>("add b[N,1]");
    columns<MulMath>("mul b[N,1]");
    gated<GatedMath<SiluMath, GatedKind::swiglu>>("swiglu");
    run_case(TensorWeightForward<LerpMath, float>{}, "lerp w[D]", {Operand::full, Operand::full, Operand::row_vector},
             ElementwisePath::strided_vectorized);
    return 0;
  }
  unary<NegMath>("neg");
  unary<ReluMath>("relu");
  unary<ExpMath>("exp");
  unary<LogMath>("log");
  unary<Log2Math>("log2");
  unary<Exp2Math>("exp2");
  unary<SqrtMath>("sqrt");
  unary<ReciprocalMath>("reciprocal");
  unary<RsqrtMath>("rsqrt");
  unary<SigmoidMath>("sigmoid");
  unary<SiluMath>("silu");
  unary<TanhMath>("tanh");
  unary<GeluMath>("gelu");
  unary<ErfMath>("erf");
  rows<AddMath>("add b[D]");
  rows<MulMath>("mul b[D]");
  rows<MaximumMath>("maximum b[D]");
  rows<DivMath>("div b[D]");
  run_case(Binary16<DivMath>{1.0f}, "div", {Operand::full, Operand::full}, ElementwisePath::vectorized);
  run_case(Binary16<AddMath>{1.0f}, "add", {Operand::full, Operand::full}, ElementwisePath::vectorized);
  columns<AddMath>("add b[N,1]");
  columns<MulMath>("mul b[N,1]");
  gated<GatedMath<SiluMath, GatedKind::swiglu>>("swiglu");
  gated<GatedMath<ReluMath, GatedKind::reglu>>("reglu");
  run_case<__half>(CastFunctor<float>{}, "cast f16", {Operand::full}, ElementwisePath::vectorized);
  run_case<__half>(CastFunctor<float>{}, "cast f16 half", {Operand::first_half}, ElementwisePath::strided_vectorized);
  run_case(TensorWeightForward<LerpMath, float>{}, "lerp w[D]", {Operand::full, Operand::full, Operand::row_vector},
           ElementwisePath::strided_vectorized);
  return 0;
}

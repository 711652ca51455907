// A plan's cost on the host and on the GPU through the public API alone (bench/NOTES.md, "Broadcast
// rows in lanes; ..."): a + b[D] forward and its backward (db alone), bf16 and f32 [16384, 4096]. Per
// call: the host's time to enqueue (200 calls without waiting), the event-timed time of one call at a
// time (the profiler's way: the GPU idles while the host prepares), and the GPU's time a call back to
// back. Not part of the library's build. Build against a built library:
//   g++ -std=c++20 -O2 -Iinclude -I/usr/local/cuda/include bench/labs/plan_host_cost.cpp \
//     -Lbuild/dev -lbaracuda -L/usr/local/cuda/lib64 -lcudart -o plan_host_cost
#include <cuda_runtime.h>

#include <algorithm>
#include <baracuda/baracuda.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
using namespace baracuda;
template <class F>
void measure(const char* name, F&& run) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 10; ++i) run();
  cudaDeviceSynchronize();
  // host cost a call: enqueue 200 without waiting
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) run();
  auto t1 = std::chrono::steady_clock::now();
  cudaDeviceSynchronize();
  // event-timed, one at a time (the profiler's way)
  std::vector<float> one;
  for (int i = 0; i < 50; ++i) {
    cudaEventRecord(a);
    run();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    one.push_back(ms);
  }
  std::sort(one.begin(), one.end());
  // back to back: GPU time a call
  cudaEventRecord(a);
  for (int i = 0; i < 50; ++i) run();
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float total;
  cudaEventElapsedTime(&total, a, b);
  printf("%-28s host %.1f us a call; one at a time %.1f us (median); back to back %.1f us a call\n", name,
         std::chrono::duration<double, std::micro>(t1 - t0).count() / 200, one[25] * 1000, total * 1000 / 50);
}
int main() {
  const Stream stream = Stream::default_stream();
  const int64_t n = 16384, d = 4096;
  for (DType dt : {DType::bf16, DType::f32}) {
    const size_t es = dt == DType::bf16 ? 2 : 4;
    void *a, *b, *dout, *db, *out, *ws = nullptr;
    cudaMalloc(&a, n * d * es);
    cudaMalloc(&dout, n * d * es);
    cudaMalloc(&out, n * d * es);
    cudaMalloc(&b, d * es);
    cudaMalloc(&db, d * es);
    cudaMemset(a, 0, n * d * es);
    cudaMemset(dout, 0, n * d * es);
    cudaMemset(b, 0, d * es);
    auto view = [&]<class View>(View r, Shape s) {  // a contiguous view of s at r.data
      r.dtype = dt;
      r.shape = s;
      r.strides = contiguous_strides(s);
      r.capacity = s.numel();
      return r;
    };
    auto ref = [&](void* p, Shape s) { return view(AnyTensorRef{p}, s); };
    auto mut = [&](void* p, Shape s) { return view(AnyTensorMut{p}, s); };
    BinaryDescriptor desc;
    desc.kind = BinaryKind::add;
    desc.dtype = dt;
    desc.a_shape = {n, d};
    desc.b_shape = {d};
    Expected<BinaryBackwardPlan> bw = BinaryBackwardPlan::select(stream, desc);
    Expected<BinaryPlan> fw = BinaryPlan::select(stream, desc);
    if (!bw || !fw) {
      printf("select failed\n");
      return 1;
    }
    cudaMalloc(&ws, std::max<size_t>(1, bw->workspace_size()));
    BinaryBackwardArgs bargs{ref(dout, {n, d}), ref(a, {n, d}), ref(b, {d}), {}, mut(db, {d})};
    BinaryArgs fargs{ref(a, {n, d}), ref(b, {d}), mut(out, {n, d})};
    auto bwrun = [&] {
      Status s = bw->run(stream, {ws, bw->workspace_size()}, bargs);
      if (!s) printf("%s\n", s.to_string().c_str());
    };
    auto fwrun = [&] {
      Status s = fw->run(stream, {}, fargs);
      if (!s) printf("%s\n", s.to_string().c_str());
    };
    printf("%s (workspace %zu bytes)\n", dt == DType::bf16 ? "bf16" : "f32", bw->workspace_size());
    measure("a + b[D] backward, db alone", bwrun);
    measure("a + b[D] forward", fwrun);
    cudaFree(a);
    cudaFree(b);
    cudaFree(dout);
    cudaFree(db);
    cudaFree(out);
    cudaFree(ws);
  }
}

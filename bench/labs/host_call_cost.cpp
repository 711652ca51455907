// A plan's whole cost a call through the public API (the C++ side of bench/labs/python_overhead.py):
// gelu and exp over n f32 elements, `calls` runs back to back after a warm-up, the median of 5 rounds;
// on the host stream, or with "cuda" on the GPU's default stream (the host's cost to enqueue: the
// kernels of 4096 elements take less than the call). Not part of the library's build. Against a
// built CPU library:
//   g++ -std=c++20 -O2 -Iinclude bench/labs/host_call_cost.cpp -Lbuild/cpu-only -lbaracuda -fopenmp \
//     -lopenblas -ldnnl -o /tmp/host_call_cost && /tmp/host_call_cost 4096
// against a CUDA build: add -DWITH_CUDA -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcudart,
// then /tmp/host_call_cost 4096 cuda.
#ifdef WITH_CUDA
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <baracuda/baracuda.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
using namespace baracuda;

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 4096;
  const int calls = 20000;
  std::vector<float> host_x(static_cast<size_t>(n), 0.5f), host_y(static_cast<size_t>(n));
  float* x = host_x.data();
  float* y = host_y.data();
  Stream stream = Stream::host();
#ifdef WITH_CUDA
  if (argc > 2 && std::string(argv[2]) == "cuda") {
    stream = Stream::cuda();
    if (cudaMalloc(&x, sizeof(float) * n) != cudaSuccess || cudaMalloc(&y, sizeof(float) * n) != cudaSuccess) return 1;
    cudaMemcpy(x, host_x.data(), sizeof(float) * n, cudaMemcpyHostToDevice);
  }
#endif
  for (UnaryKind kind : {UnaryKind::gelu, UnaryKind::exp}) {
    UnaryDescriptor d;
    d.kind = kind;
    d.dtype = DType::f32;
    d.shape = Shape{n};
    Expected<UnaryPlan> plan = UnaryPlan::select(stream, d);
    if (!plan) return std::printf("%s\n", plan.status().to_string().c_str()), 1;
    const UnaryArgs args{AnyTensorRef::contiguous(x, DType::f32, d.shape),
                         AnyTensorMut::contiguous(y, DType::f32, d.shape)};
    std::vector<double> rounds;
    for (int r = 0; r < 6; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i)
        if (!plan->run(stream, {}, args)) return 1;
#ifdef WITH_CUDA
      cudaDeviceSynchronize();  // (each round's kernels done: the next round's enqueue cost alone)
#endif
      rounds.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                       calls);
    }
    rounds.erase(rounds.begin());  // (the warm-up round)
    std::sort(rounds.begin(), rounds.end());
    std::printf("%s n=%lld: %.3f us a call (C++ plan.run, %s)\n", std::string(unary_kind_name(kind)).c_str(),
                static_cast<long long>(n), rounds[rounds.size() / 2],
                std::string(backend_name(stream.backend())).c_str());
  }
#ifdef WITH_CUDA
  if (x != host_x.data()) cudaFree(x), cudaFree(y);
#endif
  return 0;
}

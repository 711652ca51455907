// What compiling kernels at select costs, through the public API alone (issue 58): UnaryPlan::select
// on a cold cache (NVRTC compiles the kind's program), again in the same process (the in-process
// cache: the kernel's own slot is only filled once a plan runs), and the host's cost of run (200
// calls enqueued without waiting) for exp f32 on n = 4096. Run it twice with the same
// BARACUDA_CACHE_DIR: the second process's first selects are disk hits. Not part of the library's build:
//   g++ -std=c++20 -O2 -Iinclude -I/usr/local/cuda/include bench/labs/jit_select_cost.cpp \
//     -Lbuild/dev -lbaracuda -L/usr/local/cuda/lib64 -lcudart -o jit_select_cost
#include <cuda_runtime.h>

#include <algorithm>
#include <baracuda/baracuda.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
using namespace baracuda;
using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

int main() {
  const Stream stream = Stream::default_stream();
  // First selects of 24 (kind, dtype) pairs: each compiles one program (cold) or reads one (disk hit).
  const UnaryKind kinds[] = {UnaryKind::exp,  UnaryKind::gelu,    UnaryKind::silu,   UnaryKind::sqrt,
                             UnaryKind::tanh, UnaryKind::lgamma,  UnaryKind::erfinv, UnaryKind::abs,
                             UnaryKind::relu, UnaryKind::sigmoid, UnaryKind::log1p,  UnaryKind::isnan};
  std::vector<double> first, again;
  for (UnaryKind k : kinds)
    for (DType t : {DType::f32, DType::bf16}) {
      UnaryDescriptor d;
      d.kind = k;
      d.dtype = t;
      d.shape = {4096};
      auto t0 = clock_type::now();
      Expected<UnaryPlan> p = UnaryPlan::select(stream, d);
      first.push_back(ms_since(t0));
      if (!p) {
        std::printf("select failed: %s\n", p.status().to_string().c_str());
        return 1;
      }
      t0 = clock_type::now();
      Expected<UnaryPlan> q = UnaryPlan::select(stream, d);
      again.push_back(ms_since(t0));
    }
  auto report = [](const char* what, std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::printf("%-44s median %.3f ms, p90 %.3f ms, max %.3f ms (%zu selects)\n", what, v[v.size() / 2],
                v[v.size() * 9 / 10], v.back(), v.size());
  };
  report("first select (cold: compile; warm disk: read)", first);
  report("select again (in-process cache)", again);
  // run's host cost: exp f32, n = 4096.
  UnaryDescriptor d;
  d.kind = UnaryKind::exp;
  d.dtype = DType::f32;
  d.shape = {4096};
  Expected<UnaryPlan> p = UnaryPlan::select(stream, d);
  void *x, *y;
  cudaMalloc(&x, 4096 * 4);
  cudaMalloc(&y, 4096 * 4);
  AnyTensorRef xr{x};
  xr.dtype = DType::f32;
  xr.shape = d.shape;
  xr.strides = contiguous_strides(d.shape);
  xr.capacity = 4096;
  AnyTensorMut yr{y};
  yr.dtype = DType::f32;
  yr.shape = d.shape;
  yr.strides = contiguous_strides(d.shape);
  yr.capacity = 4096;
  const UnaryArgs args{xr, yr};
  for (int i = 0; i < 20; ++i) (void)p->run(stream, {}, args);
  cudaDeviceSynchronize();
  double best = 1e9;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = clock_type::now();
    for (int i = 0; i < 200; ++i)
      if (Status s = p->run(stream, {}, args); !s) std::printf("%s\n", s.to_string().c_str());
    best = std::min(best, ms_since(t0) * 1000 / 200);
    cudaDeviceSynchronize();
  }
  std::printf("run, exp f32 n = 4096: host %.2f us a call (best of 5 rounds of 200)\n", best);
}

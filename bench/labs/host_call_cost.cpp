// A plan's whole cost a call on the host stream through the public API (the C++ side of
// bench/labs/python_overhead.py): gelu and exp over n f32 elements, `calls` runs back to back after a
// warm-up, the median of 5 rounds. Not part of the library's build. Against a built CPU library:
//   g++ -std=c++20 -O2 -Iinclude bench/labs/host_call_cost.cpp -Lbuild/cpu-only -lbaracuda -fopenmp \
//     -lopenblas -ldnnl -o /tmp/host_call_cost && /tmp/host_call_cost 4096
#include <algorithm>
#include <baracuda/baracuda.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
using namespace baracuda;

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 4096;
  const int calls = 20000;
  std::vector<float> x(static_cast<size_t>(n), 0.5f), y(static_cast<size_t>(n));
  for (UnaryKind kind : {UnaryKind::gelu, UnaryKind::exp}) {
    UnaryDescriptor d;
    d.kind = kind;
    d.dtype = DType::f32;
    d.shape = Shape{n};
    Expected<UnaryPlan> plan = UnaryPlan::select(Stream::host(), d);
    if (!plan) return std::printf("%s\n", plan.status().to_string().c_str()), 1;
    const UnaryArgs args{AnyTensorRef::contiguous(x.data(), DType::f32, d.shape),
                         AnyTensorMut::contiguous(y.data(), DType::f32, d.shape)};
    std::vector<double> rounds;
    for (int r = 0; r < 6; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i)
        if (!plan->run(Stream::host(), {}, args)) return 1;
      rounds.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                       calls);
    }
    rounds.erase(rounds.begin());  // (the warm-up round)
    std::sort(rounds.begin(), rounds.end());
    std::printf("%s n=%lld: %.3f us a call (C++ plan.run)\n", std::string(unary_kind_name(kind)).c_str(),
                static_cast<long long>(n), rounds[rounds.size() / 2]);
  }
  return 0;
}

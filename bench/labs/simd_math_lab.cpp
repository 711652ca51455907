// The host's f32 maths (common/simd_math.hpp) through the functors the CPU's unary kernels apply,
// in their loops (cpu/elementwise.hpp's apply_contiguous_chunk: f32 an `omp simd` loop, bf16 blocks of
// 256 through f32 buffers), one thread, 2^24 elements of [-8, 8]: ms per pass, median of 9 (`lab NAME
// hot`: 2^14 elements 2^10 times, the maths alone). Built as the library builds (clones,
// -ffp-contract=off). To compare two versions of simd_math.hpp, put the other at
// DIR/common/simd_math.hpp and build with -IDIR ahead of -Isrc (bench/NOTES.md, issue 66):
//   g++ -std=c++20 -O3 -ffp-contract=off -fno-math-errno -fopenmp -Iinclude -Isrc \
//     bench/labs/simd_math_lab.cpp -o simd_math_lab && ./simd_math_lab
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "common/convert.hpp"
#include "common/unary_math.hpp"
#include "cpu/vector_math.hpp"

using namespace baracuda;
using namespace baracuda::detail;

template <class Math>
BARACUDA_CPU_CLONES __attribute__((flatten)) void run_f32(const float* __restrict x, float* __restrict y, int64_t n) {
  const UnaryParams<float> p{};
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = Math::forward(x[i], p);
}
template <class Math>
BARACUDA_CPU_CLONES __attribute__((flatten)) void run_bf16(const bfloat16* x, bfloat16* y, int64_t n) {
  const UnaryParams<float> p{};
  float in[256], out[256];
  for (int64_t b = 0; b < n; b += 256) {
    const int m = static_cast<int>(std::min<int64_t>(256, n - b));
    for (int j = 0; j < m; ++j) in[j] = convert<float>(x[b + j]);
    for (int j = 0; j < m; ++j) out[j] = Math::forward(in[j], p);
    for (int j = 0; j < m; ++j) y[b + j] = convert<bfloat16>(out[j]);
  }
}

template <class F>
double median_ms(F&& f) {
  std::vector<double> t;
  f();
  for (int r = 0; r < 9; ++r) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[4];
}

int main(int argc, char** argv) {
  const int64_t n = int64_t{1} << 24;
  std::vector<float> x(n), y(n);
  std::vector<bfloat16> xb(n), yb(n);
  std::mt19937 rng(66);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  for (int64_t i = 0; i < n; ++i) x[i] = dist(rng), xb[i] = convert<bfloat16>(x[i]);
  const char* only = argc > 1 ? argv[1] : "";
  // "hot": the same 2^24 elements' work over 2^14 of them (in L2), the maths' cost without memory's.
  const bool hot = argc > 2 && std::strcmp(argv[2], "hot") == 0;
  const int64_t len = hot ? int64_t{1} << 14 : n, reps = n / len;
  auto one = [&](const char* name, auto math) {
    using Math = decltype(math);
    if (*only && std::strcmp(only, name) != 0) return;
    const double f = median_ms([&] {
      for (int64_t r = 0; r < reps; ++r) run_f32<Math>(x.data(), y.data(), len);
    });
    const double b = median_ms([&] {
      for (int64_t r = 0; r < reps; ++r) run_bf16<Math>(xb.data(), yb.data(), len);
    });
    std::printf("%-8s f32 %6.2f ms  bf16 %6.2f ms\n", name, f, b);
  };
  one("exp", ExpMath{});
  one("erf", ErfMath{});
  one("gelu", GeluMath{});
  one("sigmoid", SigmoidMath{});
  one("log1p", Log1pMath{});
  one("expm1", Expm1Math{});
  one("tanh", TanhMath{});
  return 0;
}

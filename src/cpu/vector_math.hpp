#pragma once
// Math the CPU kernels' tile loops vectorize, and the way a loop is built for wider vectors.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common/simd_math.hpp"    // exp and the rest: the tile loops' f32 math
#include "ops/reduce_problem.hpp"  // to_acc: the backends' one conversion to the compute type

namespace baracuda::detail::cpu {

// A function built three times (x86-64-v4, x86-64-v3, baseline x86-64), the widest the running CPU
// has picked once at load time (GCC's ifunc). The library itself targets baseline x86-64 (SSE2: 4
// f32 lanes), so a compute-bound tile loop needs this to use the host's width. x86-64-v4 rather than
// AVX-512 F alone: without BW, GCC keeps 16-bit loads, stores and conversions at AVX2 widths (the bf16
// softmax loses its width); x86-64-v3 (AVX2 with FMA) rather than AVX2 alone, whose build has no FMA
// instruction. The library's host files build with -ffp-contract=off (CMakeLists.txt): the wide
// builds have FMA, the baseline does not, and the clone taken must not change the bits, so a product
// is fused only where the code says so (__builtin_fmaf: one rounding everywhere, a library call in
// the baseline build); calls into libm, e.g. f64 exp, are glibc's, which picks its own variant by CPU. Clang (the
// fuzz and sanitizer builds) and other targets get the one baseline build, as does a build with
// BARACUDA_NO_CPU_CLONES (the ci preset, under the sanitizers: memory errors do not depend on the ISA, and three
// clones of every tile loop tripled its build on CI's two cores). What such a function calls must be
// `[[gnu::always_inline]] inline` (as simd_math's functions are): GCC does not inline a function of
// no target of its own into a clone unasked, and leaves it a call of the baseline build (softmax's
// lane_total took 15% of a 128-element row's time on an AVX2 host, and exp_to_87 was a scalar call
// an element of a vector loop). `objdump -d` of the `.arch_x86_64_v3` and `.arch_x86_64_v4` clones lists what
// calls remain.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(BARACUDA_NO_CPU_CLONES)
#define BARACUDA_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define BARACUDA_CPU_CLONES
#endif

// GCC vectorizes the tile loops (a float select, the exp's selects) only when asked (`omp simd`);
// clang vectorizes what it can unasked, and warns of an asked loop it leaves scalar (correct, and
// an error under -Werror).
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpass-failed"
#endif

// A row's independent sums for the cloned loops: element j into lane j % kSumLanes, the lanes folded
// in lane order after (lanes_sum), so that the bits do not depend on the vector width of the clone
// that runs.
inline constexpr int kSumLanes = 16;
template <class A>
[[gnu::always_inline]] inline A lanes_sum(const A (&lane)[kSumLanes]) {
  A total = lane[0];
  for (int u = 1; u < kSumLanes; ++u) total += lane[u];
  return total;
}

// The sum over n contiguous values of x in the compute type A (with `squares`, of x^2; with
// `centered`, of (x - mean)^2), in kSumLanes lanes folded by lanes_sum: the norms' row moments and
// group_norm's channel moments.
template <class A, class X>
BARACUDA_CPU_CLONES A lanes_moment(const X* x, int64_t n, bool squares, bool centered, A mean) {
  A lane[kSumLanes] = {};
  const int64_t body = n - n % kSumLanes;
  if (centered) {
    for (int64_t i = 0; i < body; i += kSumLanes)
#pragma omp simd
      for (int u = 0; u < kSumLanes; ++u) {
        const A v = to_acc<A>(x[i + u]) - mean;
        lane[u] += v * v;
      }
    for (int64_t i = body; i < n; ++i) {
      const A v = to_acc<A>(x[i]) - mean;
      lane[i - body] += v * v;
    }
  } else if (squares) {
    for (int64_t i = 0; i < body; i += kSumLanes)
#pragma omp simd
      for (int u = 0; u < kSumLanes; ++u) lane[u] += to_acc<A>(x[i + u]) * to_acc<A>(x[i + u]);
    for (int64_t i = body; i < n; ++i) lane[i - body] += to_acc<A>(x[i]) * to_acc<A>(x[i]);
  } else {
    for (int64_t i = 0; i < body; i += kSumLanes)
#pragma omp simd
      for (int u = 0; u < kSumLanes; ++u) lane[u] += to_acc<A>(x[i + u]);
    for (int64_t i = body; i < n; ++i) lane[i - body] += to_acc<A>(x[i]);
  }
  return lanes_sum(lane);
}

// `rows` runs of `columns` values, `step` apart (1: the loop vectorizes, 16-bit conversions too),
// `row_stride` apart from src, in the compute type A into rows of `to`: one call a tile (a call a row
// of 64 16-bit values cost as much as its conversions).
template <class A, class X>
BARACUDA_CPU_CLONES void convert_rows(const X* src, int64_t row_stride, int64_t step, int rows, int columns,
                                      A* __restrict to) {
  for (int r = 0; r < rows; ++r) {
    const X* __restrict from = src + r * row_stride;
    A* __restrict row = to + r * columns;
    if (step == 1)
      for (int j = 0; j < columns; ++j) row[j] = to_acc<A>(from[j]);
    else
      for (int j = 0; j < columns; ++j) row[j] = to_acc<A>(from[j * step]);
  }
}

}  // namespace baracuda::detail::cpu

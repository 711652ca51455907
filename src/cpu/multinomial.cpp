// multinomial on the CPU: the keys, sums and search of cuda/device/multinomial.h, which the CUDA
// kernels run too, so both backends draw the same indices. Rows in parallel; without replacement a
// row's (key, category) pairs sit in the thread's slice of the workspace, partially sorted.
#include "cuda/device/multinomial.h"

#include <omp.h>

#include <algorithm>
#include <cmath>  // (philox.h's normals use sqrt)
#include <cstring>
#include <utility>

#include "common/convert.hpp"
#include "common/dispatch.hpp"
#include "cpu/vector_math.hpp"
#include "ops/multinomial_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

using Pair = std::pair<uint32_t, int64_t>;  // (the key's bits, the category)

int64_t row_slots(int64_t rows) { return std::min(rows, kMultinomialCpuRowSlots); }

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

template <class I>
void write(const MultinomialProblem& p, int64_t r, int64_t j, int64_t value) {
  static_cast<I*>(p.out)[r * p.out_row_stride + j * p.out_stride] = static_cast<I>(value);
}

// Weight c of row r in the type the keys divide in (f64 for f64, else f32).
template <class T, class W = std::conditional_t<std::is_same_v<T, double>, double, float>>
W weight(const MultinomialProblem& p, int64_t r, int64_t c) {
  return convert<W>(static_cast<const T*>(p.probs)[r * p.probs_row_stride + c * p.probs_stride]);
}

// Categories whose keys are drawn at a time (their exponentials in a buffer).
inline constexpr int64_t kKeyBatch = 1024;

// The exponentials at positions start .. start + n - 1 (mod 2^64) into e: multinomial_key's draws,
// each Philox quad drawn once for its four positions (as the CUDA kernel multinomial_few walks them),
// not once a position. Built per instruction set (cpu/vector_math.hpp), so that the logarithm's fused
// multiply-adds (philox.h) are the FMA instruction, a library call only in the baseline build.
BARACUDA_CPU_CLONES void exponentials(unsigned long long seed, unsigned long long start, int64_t n, float* e) {
  for (int64_t i = 0; i < n;) {
    const unsigned long long position = start + static_cast<unsigned long long>(i);
    float quad[4];
    device::philox_exponential_quad(seed, position >> 2, quad);
    for (int j = static_cast<int>(position & 3); j < 4 && i < n; ++j, ++i) e[i] = quad[j];
  }
}

template <class T, class I>
void without_replacement(const MultinomialProblem& p, Pair* workspace) {
  const int64_t C = p.categories, S = p.desc.samples;
  const int slots = static_cast<int>(row_slots(p.rows));
#pragma omp parallel for schedule(dynamic) num_threads(std::min(slots, omp_get_max_threads()))
  for (int64_t r = 0; r < p.rows; ++r) {
    Pair* pairs = workspace + static_cast<int64_t>(omp_get_thread_num()) * C;
    decltype(weight<T>(p, r, 0)) largest;
    const bool ok = device::multinomial_row_largest(
        C, [&](long long c) { return weight<T>(p, r, c); }, largest);
    const auto inverse = decltype(largest)(1) / largest;
    if (ok) {
      const unsigned long long start = p.desc.offset + static_cast<uint64_t>(r * C);
      for (int64_t c0 = 0; c0 < C; c0 += kKeyBatch) {
        const int64_t n = std::min(kKeyBatch, C - c0);
        float e[kKeyBatch];
        exponentials(p.desc.seed, start + static_cast<uint64_t>(c0), n, e);
        for (int64_t c = c0; c < c0 + n; ++c)
          pairs[c] = {float_bits(device::multinomial_key_of(e[c - c0], weight<T>(p, r, c), inverse)), c};
      }
    } else {
      for (int64_t c = 0; c < C; ++c) pairs[c] = {float_bits(device::multinomial_never()), c};
    }
    std::partial_sort(pairs, pairs + S, pairs + C);
    for (int64_t j = 0; j < S; ++j)
      write<I>(p, r, j, pairs[j].first == float_bits(device::multinomial_never()) ? -1 : pairs[j].second);
  }
}

template <class T, class I>
void with_replacement(const MultinomialProblem& p) {
  const int64_t C = p.categories, S = p.desc.samples;
#pragma omp parallel for schedule(dynamic) if (p.rows * (C + S) >= (1 << 15))
  for (int64_t r = 0; r < p.rows; ++r) {
    auto w = [&](long long c) {
      return convert<double>(static_cast<const T*>(p.probs)[r * p.probs_row_stride + c * p.probs_stride]);
    };
    double ends[device::kMultinomialChunks];
    const bool ok = device::multinomial_row_ends(C, w, ends);
    for (int64_t j = 0; j < S; ++j) {
      const double u = device::multinomial_uniform(p.desc.seed, p.desc.offset + static_cast<uint64_t>(r * S + j));
      write<I>(p, r, j, ok ? device::multinomial_search(ends, C, u, w) : -1);
    }
  }
}

}  // namespace

size_t multinomial_workspace(const MultinomialDescriptor& d, int64_t rows, int64_t categories) {
  return d.replacement ? 0 : static_cast<size_t>(row_slots(rows) * categories) * sizeof(Pair);
}

Status launch(const LaunchContext& ctx, const MultinomialProblem& p) {
  return dispatch_float<half, bfloat16>(p.desc.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    auto run = [&](auto index) {
      using I = typename decltype(index)::type;
      if (p.desc.replacement)
        with_replacement<T, I>(p);
      else
        without_replacement<T, I>(p, static_cast<Pair*>(ctx.workspace.data));
    };
    if (p.desc.index_dtype == DType::i32)
      run(std::type_identity<int32_t>{});
    else
      run(std::type_identity<int64_t>{});
    return Status::ok();
  });
}

}  // namespace baracuda::detail::cpu

#pragma once
// MultinomialPlan's kernels (include/baracuda/ops/random.hpp), over the draws of multinomial.h that
// the CPU runs too. Without replacement: multinomial_keys (a block a row: the row's largest weight and
// validity, then every category's (row, key) and index), CUB's radix sort of them (cuda/
// randperm_sort.cu), multinomial_take (each row's first `samples`). With replacement:
// multinomial_replace, a block a row: the chunks' sums (one chunk a thread), their running sums, then
// each sample's search.
#include "cuda/device/common.cuh"
#include "cuda/device/multinomial.h"
#include "cuda/device/params.h"

namespace baracuda::device {

// The type the keys divide in: f64 weights in f64, the others in f32.
template <class T>
using MultinomialWeight = acc_t<T>;

template <class T, class W>
__device__ __forceinline__ W multinomial_weight_at(const MultinomialParams& p, long long r, long long c) {
  return to_acc<W>(static_cast<const T*>(p.probs)[r * p.probs_row_stride + c * p.probs_stride]);
}

// Whether row r can be drawn from (every weight finite and not negative, the largest above 0), and
// 1 / its largest weight: block-wide (warp shuffles, then the warps' maxima in warp_largest[blockDim /
// 32]). Every thread of the block calls it; the caller passes a barrier before the next call.
template <class T, class W>
__device__ __forceinline__ bool multinomial_row_scale(const MultinomialParams& p, long long r, W* warp_largest,
                                                      W& inverse) {
  W largest = 0;
  int ok = 1;
  for (long long c = threadIdx.x; c < p.categories; c += blockDim.x) {
    const W w = multinomial_weight_at<T, W>(p, r, c);
    ok &= multinomial_weight_ok(w) ? 1 : 0;
    largest = w > largest ? w : largest;
  }
  for (int o = 16; o > 0; o >>= 1) {
    const W other = __shfl_xor_sync(0xffffffffu, largest, o);
    largest = other > largest ? other : largest;
  }
  if ((threadIdx.x & 31) == 0) warp_largest[threadIdx.x >> 5] = largest;
  const int row_ok = __syncthreads_and(ok);  // (and the barrier before warp_largest is read)
  largest = warp_largest[0];
  for (int k = 1; k < static_cast<int>(blockDim.x >> 5); ++k)
    largest = warp_largest[k] > largest ? warp_largest[k] : largest;
  inverse = W(1) / largest;
  return row_ok && largest > 0;
}

template <class T>
__global__ void __launch_bounds__(256) multinomial_keys(const __grid_constant__ MultinomialParams p) {
  using W = MultinomialWeight<T>;
  __shared__ W warp_largest[8];
  for (long long r = blockIdx.x; r < p.rows; r += gridDim.x) {
    W inverse;
    const bool drawable = multinomial_row_scale<T>(p, r, warp_largest, inverse);
    for (long long c = threadIdx.x; c < p.categories; c += blockDim.x) {
      const long long i = r * p.categories + c;
      const float key = drawable ? multinomial_key(multinomial_weight_at<T, W>(p, r, c), inverse, p.seed,
                                                   p.offset + static_cast<unsigned long long>(i))
                                 : multinomial_never();
      p.keys[i] = (static_cast<unsigned long long>(r) << 32) | __float_as_uint(key);
      p.values[i] = c;
    }
    __syncthreads();  // (warp_largest is rewritten for the next row)
  }
}

// Without replacement, few samples (at most kMultinomialFewSamples): a block of 1024 threads a row,
// no sort. Each thread keeps its `samples` smallest (key, category) pairs, packed as key bits << 32 |
// category (so the smallest pair is the smallest integer: ties go to the lower category, as the
// sort's), walking the row's Philox quads (four exponentials a block, each drawn once); then
// `samples` rounds of a block-wide minimum over the threads' first pairs. The same pairs as the
// sort's first `samples`.
inline constexpr int kMultinomialFewSamples = 16;  // (ops/multinomial_problem.hpp's, for the host)

__device__ __forceinline__ unsigned long long block_min_u64(unsigned long long v, unsigned long long* shared) {
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, v, o);
    v = other < v ? other : v;
  }
  if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = v;
  __syncthreads();
  v = shared[0];
  for (int k = 1; k < static_cast<int>(blockDim.x >> 5); ++k) v = shared[k] < v ? shared[k] : v;
  __syncthreads();  // (shared is rewritten by the next call)
  return v;
}

template <class T, class I>
__global__ void __launch_bounds__(1024) multinomial_few(const __grid_constant__ MultinomialParams p) {
  using W = MultinomialWeight<T>;
  __shared__ W warp_largest[32];
  __shared__ unsigned long long warp_min[32];
  const unsigned long long kNone = ~0ull;
  I* out = static_cast<I*>(p.out);
  const int S = static_cast<int>(p.samples);
  for (long long r = blockIdx.x; r < p.rows; r += gridDim.x) {
    W inverse;
    const bool drawable = multinomial_row_scale<T>(p, r, warp_largest, inverse);
    unsigned long long best[kMultinomialFewSamples];
    for (int k = 0; k < kMultinomialFewSamples; ++k) best[k] = kNone;
    if (drawable) {
      // The row's positions start, start + 1, ..., start + C - 1 (mod 2^64), in quads of four.
      const unsigned long long start = p.offset + static_cast<unsigned long long>(r * p.categories);
      const long long quads =
          static_cast<long long>(((start & 3) + static_cast<unsigned long long>(p.categories) + 3) >> 2);
      for (long long q = threadIdx.x; q < quads; q += blockDim.x) {
        const unsigned long long g = ((start >> 2) + static_cast<unsigned long long>(q)) & 0x3FFFFFFFFFFFFFFFull;
        float e[4];
        philox_exponential_quad(p.seed, g, e);
        for (int j = 0; j < 4; ++j) {
          const long long c = static_cast<long long>((g << 2) + static_cast<unsigned long long>(j) - start);
          if (c < 0 || c >= p.categories) continue;
          const float key = multinomial_key_of(e[j], multinomial_weight_at<T, W>(p, r, c), inverse);
          if (key == multinomial_never()) continue;
          unsigned long long pair =
              (static_cast<unsigned long long>(__float_as_uint(key)) << 32) | static_cast<unsigned long long>(c);
          for (int k = 0; k < S; ++k) {  // insert into the sorted best[0..S)
            const unsigned long long here = best[k];
            best[k] = pair < here ? pair : here;
            pair = pair < here ? here : pair;
          }
        }
      }
    }
    // `samples` rounds: the block's smallest first pair is the next sample; its owner pops it.
    for (int j = 0; j < S; ++j) {
      const unsigned long long m = block_min_u64(best[0], warp_min);
      if (m != kNone && best[0] == m) {
        for (int k = 0; k + 1 < kMultinomialFewSamples; ++k) best[k] = best[k + 1];
        best[kMultinomialFewSamples - 1] = kNone;
      }
      if (threadIdx.x == 0)
        out[r * p.out_row_stride + j * p.out_stride] =
            m == kNone ? static_cast<I>(-1) : static_cast<I>(m & 0xffffffffull);
    }
  }
}

template <class I>
__global__ void __launch_bounds__(256) multinomial_take(const __grid_constant__ MultinomialParams p) {
  I* out = static_cast<I*>(p.out);
  const long long total = p.rows * p.samples;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / p.samples, j = i - r * p.samples, k = r * p.categories + j;
    const bool drawn = static_cast<unsigned>(p.sorted_keys[k] & 0xffffffffull) != 0x7f800000u;
    out[r * p.out_row_stride + j * p.out_stride] = drawn ? static_cast<I>(p.sorted_values[k]) : static_cast<I>(-1);
  }
}

// A block of kMultinomialChunks threads a row.
template <class T, class I>
__global__ void __launch_bounds__(kMultinomialChunks) multinomial_replace(const __grid_constant__ MultinomialParams p) {
  __shared__ double ends[kMultinomialChunks];
  I* out = static_cast<I*>(p.out);
  for (long long r = blockIdx.x; r < p.rows; r += gridDim.x) {
    auto weight = [&](long long c) { return multinomial_weight_at<T, double>(p, r, c); };
    long long begin, end;
    multinomial_chunk(p.categories, static_cast<int>(threadIdx.x), begin, end);
    double sum = 0.0;
    int ok = 1;
    for (long long c = begin; c < end; ++c) {
      const double w = weight(c);
      ok &= multinomial_weight_ok(w) ? 1 : 0;
      sum += w;
    }
    ends[threadIdx.x] = sum;
    const int row_ok = __syncthreads_and(ok);
    if (threadIdx.x == 0) {  // (in chunk order, as the CPU adds them)
      double running = 0.0;
      for (int t = 0; t < kMultinomialChunks; ++t) {
        running += ends[t];
        ends[t] = running;
      }
    }
    __syncthreads();
    const bool drawable = row_ok && ends[kMultinomialChunks - 1] > 0.0;
    for (long long j = threadIdx.x; j < p.samples; j += blockDim.x) {
      const double u = multinomial_uniform(p.seed, p.offset + static_cast<unsigned long long>(r * p.samples + j));
      const long long c = drawable ? multinomial_search(ends, p.categories, u, weight) : -1;
      out[r * p.out_row_stride + j * p.out_stride] = static_cast<I>(c);
    }
    __syncthreads();  // (ends is rewritten for the next row)
  }
}

}  // namespace baracuda::device

#pragma once
// MultinomialPlan's kernels (include/baracuda/ops/random.hpp), over the draws of multinomial.h that
// the CPU runs too. Without replacement: multinomial_keys (a block a row: the row's largest weight and
// validity, then every category's (row, key) and index), CUB's radix sort of them (cuda/
// randperm_sort.cu), multinomial_take (each row's first `samples`). With replacement:
// multinomial_replace, a block a row: the chunks' sums (one chunk a thread), their running sums, then
// each sample's search.
#include "cuda/device/common.cuh"
#include "cuda/device/multinomial.h"

namespace baracuda::device {

// The type the keys divide in: f64 weights in f64, the others in f32.
template <class T>
using MultinomialWeight = acc_t<T>;

template <class T, class W>
__device__ __forceinline__ W multinomial_weight_at(const MultinomialParams& p, long long r, long long c) {
  return to_acc<W>(static_cast<const T*>(p.probs)[r * p.probs_row_stride + c * p.probs_stride]);
}

template <class T>
__global__ void __launch_bounds__(256) multinomial_keys(const __grid_constant__ MultinomialParams p) {
  using W = MultinomialWeight<T>;
  __shared__ W warp_largest[8];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (long long r = blockIdx.x; r < p.rows; r += gridDim.x) {
    W largest = 0;
    int ok = 1;
    for (long long c = threadIdx.x; c < p.categories; c += blockDim.x) {
      const W w = multinomial_weight_at<T, W>(p, r, c);
      ok &= multinomial_weight_ok(static_cast<double>(w)) ? 1 : 0;
      largest = w > largest ? w : largest;
    }
    for (int o = 16; o > 0; o >>= 1) {
      const W other = __shfl_xor_sync(0xffffffffu, largest, o);
      largest = other > largest ? other : largest;
    }
    if (lane == 0) warp_largest[warp] = largest;
    const int row_ok = __syncthreads_and(ok);  // (and the barrier before warp_largest is read)
    largest = warp_largest[0];
    for (int k = 1; k < static_cast<int>(blockDim.x >> 5); ++k)
      largest = warp_largest[k] > largest ? warp_largest[k] : largest;
    const bool drawable = row_ok && largest > 0;
    for (long long c = threadIdx.x; c < p.categories; c += blockDim.x) {
      const long long i = r * p.categories + c;
      const float key = drawable ? multinomial_key(multinomial_weight_at<T, W>(p, r, c), largest, p.seed,
                                                   p.offset + static_cast<unsigned long long>(i))
                                 : __int_as_float(0x7f800000);
      p.keys[i] = (static_cast<unsigned long long>(r) << 32) | __float_as_uint(key);
      p.values[i] = c;
    }
    __syncthreads();  // (warp_largest is rewritten for the next row)
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

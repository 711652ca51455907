#pragma once
// The rotary plans' kernel (include/baracuda/ops/rotary.hpp): a thread per (token, item), grid-stride,
// consecutive threads on consecutive pairs of a token (so a warp's loads of a head are contiguous along
// D). An item below `pairs` computes its pair's cos / sin once (cuda/device/rotary_math.h, the host's
// arithmetic bit for bit; this program is compiled without FMA contraction, as the host's code is) and
// rotates that pair in every head of both tensors; a later item copies one dim past rotary_dim in every
// head of a tensor whose output is not its input. A thread loads kHeadBatch heads before it writes
// them: the pairs are its own, so in place is safe, and the loads overlap (a store may alias a later
// load, so the compiler would not move them itself).
#include "cuda/device/common.cuh"
#include "cuda/device/params.h"
#include "cuda/device/rotary_math.h"

namespace baracuda::device {

// Heads a thread loads before it writes them: 64 bytes of loads in flight a thread for 16-bit and
// f32 data (128 for f64), enough with ~800 threads an SM to cover the memory's latency.
template <class T>
inline constexpr int kHeadBatch = sizeof(T) == 2 ? 16 : 8;

template <class T, class I, bool kInterleaved>
__global__ void rotary(const __grid_constant__ RotaryParams p) {
  using Acc = acc_t<T>;
  const unsigned long long total = static_cast<unsigned long long>(p.tokens * p.items);
  for (unsigned long long l = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; l < total;
       l += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    const int64 token = static_cast<int64>(l / static_cast<unsigned long long>(p.items));
    const int64 j = static_cast<int64>(l) - token * p.items;
    const int64 b = token / p.seq, s = token - b * p.seq;
    const bool pair = j < p.pairs;
    Acc c = Acc(1), sn = Acc(0);
    if (pair) {
      double cd, sd;
      rotary_cos_sin(rotary_position<I>(p, b, s), rotary_inv_freq(p, j), p.sign, cd, sd);
      c = static_cast<Acc>(cd);
      sn = static_cast<Acc>(sd);
    }
    // The pair's dims (a, b), or the copied dim (a alone).
    const int64 ea = pair ? (kInterleaved ? 2 * j : j) : p.pairs + j, eb = kInterleaved ? ea + 1 : ea + p.pairs;
    for (int t = 0; t < 2; ++t) {
      if (p.heads[t] == 0 || (!pair && !p.copy[t])) continue;
      const T* x = static_cast<const T*>(p.src[t]) + b * p.src_strides[t][0] + s * p.src_strides[t][1];
      T* y = static_cast<T*>(p.dst[t]) + b * p.dst_strides[t][0] + s * p.dst_strides[t][1];
      const int64 xh = p.src_strides[t][2], yh = p.dst_strides[t][2];
      const int64 xa = ea * p.src_strides[t][3], xb = eb * p.src_strides[t][3];
      const int64 ya = ea * p.dst_strides[t][3], yb = eb * p.dst_strides[t][3];
      for (int64 h0 = 0; h0 < p.heads[t]; h0 += kHeadBatch<T>) {
        const int n = p.heads[t] - h0 < kHeadBatch<T> ? static_cast<int>(p.heads[t] - h0) : kHeadBatch<T>;
        T va[kHeadBatch<T>], vb[kHeadBatch<T>];
#pragma unroll
        for (int u = 0; u < kHeadBatch<T>; ++u) {
          if (u >= n) break;
          va[u] = x[(h0 + u) * xh + xa];
          if (pair) vb[u] = x[(h0 + u) * xh + xb];
        }
#pragma unroll
        for (int u = 0; u < kHeadBatch<T>; ++u) {
          if (u >= n) break;
          if (!pair) {
            y[(h0 + u) * yh + ya] = va[u];
            continue;
          }
          Acc out_a, out_b;
          rotary_rotate(to_acc<Acc>(va[u]), to_acc<Acc>(vb[u]), c, sn, out_a, out_b);
          y[(h0 + u) * yh + ya] = round_to<T>(out_a);
          y[(h0 + u) * yh + yb] = round_to<T>(out_b);
        }
      }
    }
  }
}

}  // namespace baracuda::device

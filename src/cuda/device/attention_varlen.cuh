#pragma once
// Packed sequences (varlen) through cuDNN's fused attention (cuda/attention.cpp): what cuDNN's ragged
// graphs need made from the offsets, and what the library's contract adds to cuDNN's results.
//   varlen_prepare   one block: the offsets checked whole (0 first, nondecreasing, each sequence
//                    within its longest, the totals last); cuDNN's per-sequence lengths and each
//                    tensor's ragged offsets (the sequence's first row x the view's row stride); where
//                    any offset is bad, every length and offset 0 (cuDNN then reads and writes
//                    nothing) and the flag set.
//   varlen_finish    after the forward: lse from cuDNN's padded statistics into [H_q, total_q]; a row
//                    with no visible key out 0 and lse -inf; with the flag every out and lse NaN.
//   varlen_stats_in  before the backward: lse into the padded statistics, -inf as +inf (a row with no
//                    key then has probabilities exactly 0, so zero gradients).
//   varlen_zero_keys after the backward: dk and dv of the keys of sequences with no query, and dq of
//                    the rows with no visible key, zeroed (cuDNN may leave them); with the flag every
//                    gradient NaN.
#include "cuda/device/common.cuh"
#include "cuda/device/params.h"

namespace baracuda::device {

inline constexpr int kVarlenTensors = 8;  // q, k, v, out, dout, dq, dk, dv

__device__ __forceinline__ int varlen_offset(const int* cu, long long stride, int64 b) { return cu[b * stride]; }

__global__ void __launch_bounds__(1024) varlen_prepare(const __grid_constant__ VarlenParams p) {
  int bad = 0;
  for (int64 b = threadIdx.x; b <= p.batch; b += blockDim.x) {
    const int64 q0 = varlen_offset(p.cu_q, p.cu_q_stride, b), k0 = varlen_offset(p.cu_kv, p.cu_kv_stride, b);
    if (b == 0) {
      bad |= q0 != 0 || k0 != 0;
    } else {
      const int64 qp = varlen_offset(p.cu_q, p.cu_q_stride, b - 1), kp = varlen_offset(p.cu_kv, p.cu_kv_stride, b - 1);
      bad |= q0 < qp || q0 - qp > p.seq_q || k0 < kp || k0 - kp > p.seq_kv;
    }
    if (b == p.batch) bad |= q0 != p.total_q || k0 != p.total_kv;
  }
  bad = __syncthreads_or(bad);
  if (threadIdx.x == 0) *p.flag = bad;
  for (int64 b = threadIdx.x; b <= p.batch; b += blockDim.x) {
    const int64 q0 = bad ? 0 : varlen_offset(p.cu_q, p.cu_q_stride, b);
    const int64 k0 = bad ? 0 : varlen_offset(p.cu_kv, p.cu_kv_stride, b);
    if (b < p.batch) {
      p.lens_q[b] = bad ? 0 : varlen_offset(p.cu_q, p.cu_q_stride, b + 1) - static_cast<int>(q0);
      p.lens_kv[b] = bad ? 0 : varlen_offset(p.cu_kv, p.cu_kv_stride, b + 1) - static_cast<int>(k0);
    }
    for (int t = 0; t < kVarlenTensors; ++t)
      p.ragged[t * (p.batch + 1) + b] =
          static_cast<int>((t == 1 || t == 2 || t == 6 || t == 7 ? k0 : q0) * p.row_strides[t]);
  }
}

// The keys [lo, hi) query s of a sequence of lq queries and lk keys sees (attention.hpp's masks).
__device__ __forceinline__ bool varlen_row_sees_a_key(const VarlenParams& p, int64 s, int64 lq, int64 lk) {
  const int64 diag = s + (p.bottom_right ? lk - lq : 0);
  int64 lo = 0, hi = lk;
  if (p.window_left >= 0) lo = diag - p.window_left > 0 ? diag - p.window_left : 0;
  if (p.window_right >= 0) hi = diag + p.window_right + 1 < lk ? diag + p.window_right + 1 : lk;
  return lo < hi;
}

template <class T>
__global__ void varlen_finish(const __grid_constant__ VarlenParams p) {
  const bool bad = *p.flag != 0;
  const int64 rows = p.total_q * p.heads_q;  // (token, head)
  const float nan = __int_as_float(0x7fc00000), minus_inf = __int_as_float(0xff800000);
  for (int64 r = blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x; r < p.batch * p.heads_q * p.seq_q;
       r += static_cast<int64>(gridDim.x) * blockDim.x) {
    // Padded row (b, h, s) of cuDNN's statistics.
    const int64 s = r % p.seq_q, h = (r / p.seq_q) % p.heads_q, b = r / (p.seq_q * p.heads_q);
    if (bad || s >= p.lens_q[b]) continue;
    const int64 t = varlen_offset(p.cu_q, p.cu_q_stride, b) + s;
    const bool sees = varlen_row_sees_a_key(p, s, p.lens_q[b], p.lens_kv[b]);
    if (p.lse) p.lse[h * p.lse_strides[0] + t * p.lse_strides[1]] = sees ? p.stats[r] : minus_inf;
    if (!sees) {
      T* o = static_cast<T*>(p.out) + t * p.out_strides[0] + h * p.out_strides[1];
      for (int64 e = 0; e < p.head_dim_v; ++e) o[e * p.out_strides[2]] = round_to<T>(0.0f);
    }
  }
  if (!bad) return;
  for (int64 i = blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x; i < rows * p.head_dim_v;
       i += static_cast<int64>(gridDim.x) * blockDim.x) {
    const int64 e = i % p.head_dim_v, r = i / p.head_dim_v, h = r % p.heads_q, t = r / p.heads_q;
    static_cast<T*>(p.out)[t * p.out_strides[0] + h * p.out_strides[1] + e * p.out_strides[2]] = round_to<T>(nan);
    if (e == 0 && p.lse) p.lse[h * p.lse_strides[0] + t * p.lse_strides[1]] = nan;
  }
}

__global__ void varlen_stats_in(const __grid_constant__ VarlenParams p) {
  const float inf = __int_as_float(0x7f800000);
  for (int64 r = blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x; r < p.batch * p.heads_q * p.seq_q;
       r += static_cast<int64>(gridDim.x) * blockDim.x) {
    const int64 s = r % p.seq_q, h = (r / p.seq_q) % p.heads_q, b = r / (p.seq_q * p.heads_q);
    float v = inf;
    if (s < p.lens_q[b]) {
      v = p.lse_in[h * p.lse_strides[0] + (varlen_offset(p.cu_q, p.cu_q_stride, b) + s) * p.lse_strides[1]];
      if (v == -inf) v = inf;
    }
    p.stats[r] = v;
  }
}

// Gradient g (dq, dk, dv) element i: every element NaN with the flag; else dk and dv of the keys of
// sequences with no query 0.
template <class T>
__global__ void varlen_zero_keys(const __grid_constant__ VarlenParams p) {
  const bool bad = *p.flag != 0;
  const float nan = __int_as_float(0x7fc00000);
  for (int g = 0; g < 3; ++g) {
    if (!p.grads[g]) continue;
    const int64 tokens = g == 0 ? p.total_q : p.total_kv, heads = g == 0 ? p.heads_q : p.heads_kv;
    const int64 dim = g == 2 ? p.head_dim_v : p.head_dim;
    if (!bad && g == 0) {  // dq of rows with no visible key, by padded row (b, h, s)
      for (int64 r = blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x; r < p.batch * p.heads_q * p.seq_q;
           r += static_cast<int64>(gridDim.x) * blockDim.x) {
        const int64 s = r % p.seq_q, h = (r / p.seq_q) % p.heads_q, b = r / (p.seq_q * p.heads_q);
        if (s >= p.lens_q[b] || varlen_row_sees_a_key(p, s, p.lens_q[b], p.lens_kv[b])) continue;
        T* row = static_cast<T*>(p.grads[0]) + (varlen_offset(p.cu_q, p.cu_q_stride, b) + s) * p.grad_strides[0][0] +
                 h * p.grad_strides[0][1];
        for (int64 e = 0; e < p.head_dim; ++e) row[e * p.grad_strides[0][2]] = round_to<T>(0.0f);
      }
      continue;
    }
    for (int64 b = 0; !bad && b < p.batch; ++b) {
      if (p.lens_q[b] != 0) continue;
      const int64 k0 = varlen_offset(p.cu_kv, p.cu_kv_stride, b), n = p.lens_kv[b] * heads * dim;
      for (int64 i = blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x; i < n;
           i += static_cast<int64>(gridDim.x) * blockDim.x) {
        const int64 e = i % dim, r = i / dim, h = r % heads, t = k0 + r / heads;
        static_cast<T*>(p.grads[g])[t * p.grad_strides[g][0] + h * p.grad_strides[g][1] + e * p.grad_strides[g][2]] =
            round_to<T>(0.0f);
      }
    }
    if (!bad) continue;
    for (int64 i = blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x; i < tokens * heads * dim;
         i += static_cast<int64>(gridDim.x) * blockDim.x) {
      const int64 e = i % dim, r = i / dim, h = r % heads, t = r / heads;
      static_cast<T*>(p.grads[g])[t * p.grad_strides[g][0] + h * p.grad_strides[g][1] + e * p.grad_strides[g][2]] =
          round_to<T>(nan);
    }
  }
}

}  // namespace baracuda::device

#pragma once
// The attention backward of ours over dense k and v (split_kv's, cuda/paged_attention.cpp): the
// cases cuDNN refuses (f32, f64, the soft-cap, head dims off its list, rows with no key). Two kernels,
// FlashAttention-2's passes on CUDA cores, no atomics (the same bits every run):
//   split_kv_dq    a block per (sequence, kv head, chunk of R (query head, query) rows): each row's
//                  delta = dout . out into the workspace, then over the keys the row sees, a tile at
//                  a time, the probabilities recomputed and dq = sum_j dx_ij k_j;
//   split_kv_dkdv  a block per (sequence, kv head, tile of keys): over the group's rows R at a time,
//                  dv_j = sum_i p_ij dout_i and dk_j = sum_i dx_ij q_i, summed in shared memory by the
//                  one thread that owns each element.
// with s_ij = cap(scale q_i . k_j) + bias_ij, p_ij = exp(s_ij - lse_i) (0 where masked, or where lse
// is -inf: a row with no key), dx_ij = p_ij (dout_i . v_j - delta_i) cap'(.) scale.
#include "cuda/device/paged_attention.cuh"
#include "cuda/device/params.h"

namespace baracuda::device {

inline constexpr int kBackwardThreads = 128;

// Shared memory (host: cuda/paged_attention.cpp's backward_layout, the same layout), Acc unless said:
//   k tile [tile_keys][D + pad] T, v tile [tile_keys][D_v + pad] T, q [R][D], dout [R][D_v], partial
//   dots [2][slices][R][tile_keys], p and dx [R][tile_keys] each, lse and delta [R] each; then (used by
//   split_kv_dkdv) dk [tile_keys][D + 1] and dv [tile_keys][D_v + 1]. The padded rows put the keys a
//   warp reads at once (a key a thread) in different banks.
template <class T>
inline constexpr int kBackwardPad = sizeof(T) == 2 ? 2 : 1;
template <class T, int R>
struct BackwardShared {
  T* k;
  T* v;
  acc_t<T>* q;
  acc_t<T>* dout;
  acc_t<T>* partial;
  acc_t<T>* p;
  acc_t<T>* dx;
  acc_t<T>* lse;
  acc_t<T>* delta;
  acc_t<T>* dk;
  acc_t<T>* dv;
  int slices, kp, vp, dkp, dvp;  // the pitches of k, v, dk, dv
  __device__ BackwardShared(unsigned char* base, const AttentionBackwardParams& a) {
    using Acc = acc_t<T>;
    const int TK = static_cast<int>(a.tile_keys);
    slices = kBackwardThreads / TK > 0 ? kBackwardThreads / TK : 1;
    kp = static_cast<int>(a.head_dim) + kBackwardPad<T>;
    vp = static_cast<int>(a.head_dim_v) + kBackwardPad<T>;
    dkp = static_cast<int>(a.head_dim) + 1;
    dvp = static_cast<int>(a.head_dim_v) + 1;
    k = reinterpret_cast<T*>(base);
    v = k + TK * kp;
    Acc* x = reinterpret_cast<Acc*>(base + a.tile_bytes);  // (tile_bytes: rounded to 16)
    q = x;
    dout = q + R * a.head_dim;
    partial = dout + R * a.head_dim_v;
    p = partial + 2 * slices * TK * R;
    dx = p + TK * R;
    lse = dx + TK * R;
    delta = lse + R;
    dk = delta + R;
    dv = dk + TK * dkp;
  }
};

// The rows of query heads h0 .. of kv head hkv: row r of the group is query s of head h.
struct BackwardRow {
  int64 h, s;
};
__device__ __forceinline__ BackwardRow backward_row(const AttentionBackwardParams& a, int64 hkv, int64 row) {
  return {hkv * a.group + row / a.seq_q, row % a.seq_q};
}

// The window [lo, hi) of query s (every sequence seq_kv keys).
__device__ __forceinline__ PagedWindow backward_window(const AttentionBackwardParams& a, int64 s) {
  return paged_window(a, s, a.seq_kv);
}

// The rows' q and dout (in Acc) and lse into shared memory; rows past `rows` zero, lse -inf.
template <class T, int R>
__device__ void backward_load_rows(const AttentionBackwardParams& a, const BackwardShared<T, R>& sh, int64 b, int64 hkv,
                                   int64 row0, int rows) {
  using Acc = acc_t<T>;
  const int tid = threadIdx.x, D = static_cast<int>(a.head_dim), DV = static_cast<int>(a.head_dim_v);
  for (int i = tid; i < R * (D + DV); i += kBackwardThreads) {
    const bool is_q = i < R * D;
    const int r = is_q ? i / D : (i - R * D) / DV, e = is_q ? i - r * D : i - R * D - r * DV;
    Acc x = Acc(0);
    if (r < rows) {
      const BackwardRow w = backward_row(a, hkv, row0 + r);
      x = is_q ? to_acc<Acc>(static_cast<const T*>(
                     a.q)[b * a.q_strides[0] + w.s * a.q_strides[1] + w.h * a.q_strides[2] + e * a.q_strides[3]])
               : to_acc<Acc>(static_cast<const T*>(a.dout)[b * a.dout_strides[0] + w.s * a.dout_strides[1] +
                                                           w.h * a.dout_strides[2] + e * a.dout_strides[3]]);
    }
    (is_q ? sh.q : sh.dout)[i - (is_q ? 0 : R * D)] = x;
  }
}

// The keys [t0, t0 + n) of (b, hkv) into the k and v tiles (element loads: any strides).
template <class T, int R>
__device__ void backward_load_keys(const AttentionBackwardParams& a, const BackwardShared<T, R>& sh, int64 b, int64 hkv,
                                   int64 t0, int n) {
  const int tid = threadIdx.x, D = static_cast<int>(a.head_dim), DV = static_cast<int>(a.head_dim_v);
  const T* k = static_cast<const T*>(a.k);
  const T* v = static_cast<const T*>(a.v);
  for (int i = tid; i < n * (D + DV); i += kBackwardThreads) {
    const int j = i / (D + DV), e = i - j * (D + DV);
    const int64 key = t0 + j;
    if (e < D)
      sh.k[j * sh.kp + e] = k[b * a.k_strides[0] + key * a.k_strides[1] + hkv * a.k_strides[2] + e * a.k_strides[3]];
    else
      sh.v[j * sh.vp + e - D] =
          v[b * a.v_strides[0] + key * a.v_strides[1] + hkv * a.v_strides[2] + (e - D) * a.v_strides[3]];
  }
}

// For the tile's n keys at t0 and the R rows in shared memory: p and dx of every (key, row) into
// shared memory (0 past n or rows, or outside a row's window). Ends with a barrier.
template <class T, int R>
__device__ void backward_probabilities(const AttentionBackwardParams& a, const BackwardShared<T, R>& sh, int64 b,
                                       int64 hkv, int64 row0, int rows, int64 t0, int n) {
  using Acc = acc_t<T>;
  const int tid = threadIdx.x, D = static_cast<int>(a.head_dim), DV = static_cast<int>(a.head_dim_v);
  const int TK = static_cast<int>(a.tile_keys), slices = sh.slices;
  const int slice = tid / TK, lane = tid - slice * TK;
  if (slice < slices) {
    Acc qk[R], dv[R];
#pragma unroll
    for (int r = 0; r < R; ++r) qk[r] = dv[r] = Acc(0);
    if (lane < n) {
      for (int e = D * slice / slices; e < D * (slice + 1) / slices; ++e) {
        const Acc kx = to_acc<Acc>(sh.k[lane * sh.kp + e]);
#pragma unroll
        for (int r = 0; r < R; ++r) qk[r] += sh.q[r * D + e] * kx;
      }
      for (int e = DV * slice / slices; e < DV * (slice + 1) / slices; ++e) {
        const Acc vx = to_acc<Acc>(sh.v[lane * sh.vp + e]);
#pragma unroll
        for (int r = 0; r < R; ++r) dv[r] += sh.dout[r * DV + e] * vx;
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      sh.partial[((0 * slices + slice) * R + r) * TK + lane] = qk[r];
      sh.partial[((1 * slices + slice) * R + r) * TK + lane] = dv[r];
    }
  }
  __syncthreads();
  const Acc scale = static_cast<Acc>(a.scale), softcap = static_cast<Acc>(a.softcap);
  for (int i = tid; i < TK * R; i += kBackwardThreads) {
    const int r = i / TK, j = i - r * TK;
    Acc p = Acc(0), dx = Acc(0);
    const int64 key = t0 + j;
    if (j < n && r < rows) {
      const BackwardRow w = backward_row(a, hkv, row0 + r);
      const PagedWindow win = backward_window(a, w.s);
      Acc s = Acc(0), dp = Acc(0);
      for (int sl = 0; sl < slices; ++sl) {
        s += sh.partial[((0 * slices + sl) * R + r) * TK + j];
        dp += sh.partial[((1 * slices + sl) * R + r) * TK + j];
      }
      s *= scale;
      Acc slope = Acc(1);  // d cap(x) / dx
      if (softcap > Acc(0)) {
        const Acc th = paged_tanh(s / softcap);
        s = softcap * th;
        slope = Acc(1) - th * th;
      }
      if (a.bias) s += bias_value<T, Acc>(a, b, w.h, w.s, key);
      const Acc lse = sh.lse[r];
      // (lse -inf: a row with no visible key, whose gradients are 0; a NaN lse stays NaN)
      if (key >= win.lo && key < win.hi && lse != -paged_infinity<Acc>()) {
        p = paged_exp(s - lse);
        dx = p * (dp - sh.delta[r]) * slope * scale;
      }
    }
    sh.p[r * TK + j] = p;
    sh.dx[r * TK + j] = dx;
  }
  __syncthreads();
}

template <class T, int R>
__global__ void __launch_bounds__(kBackwardThreads) split_kv_dq(const __grid_constant__ AttentionBackwardParams a) {
  using Acc = acc_t<T>;
  extern __shared__ __align__(16) unsigned char shared[];
  const BackwardShared<T, R> sh(shared, a);
  const int tid = threadIdx.x, D = static_cast<int>(a.head_dim), DV = static_cast<int>(a.head_dim_v);
  const int TK = static_cast<int>(a.tile_keys);
  const int64 chunks = (a.group * a.seq_q + R - 1) / R;
  const int64 chunk = blockIdx.x % chunks, hkv = (blockIdx.x / chunks) % a.heads_kv,
              b = blockIdx.x / (chunks * a.heads_kv);
  const int64 row0 = chunk * R;
  const int rows = static_cast<int>(imin(R, a.group * a.seq_q - row0));
  backward_load_rows<T, R>(a, sh, b, hkv, row0, rows);
  __syncthreads();
  // delta = dout . out of each row (a warp a row), and lse.
  const int warp = tid >> 5, lane = tid & 31;
  for (int r = warp; r < R; r += kBackwardThreads / 32) {
    Acc sum = Acc(0);
    if (r < rows) {
      const BackwardRow w = backward_row(a, hkv, row0 + r);
      for (int c = lane; c < DV; c += 32)
        sum +=
            sh.dout[r * DV + c] *
            to_acc<Acc>(static_cast<const T*>(
                a.out)[b * a.out_strides[0] + w.s * a.out_strides[1] + w.h * a.out_strides[2] + c * a.out_strides[3]]);
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) {
      Acc lse = -paged_infinity<Acc>();
      if (r < rows) {
        const BackwardRow w = backward_row(a, hkv, row0 + r);
        lse = static_cast<const Acc*>(a.lse)[b * a.lse_strides[0] + w.h * a.lse_strides[1] + w.s * a.lse_strides[2]];
        static_cast<Acc*>(a.delta)[(b * a.heads_q + w.h) * a.seq_q + w.s] = sum;
      }
      sh.delta[r] = sum;
      sh.lse[r] = lse;
    }
  }
  if (!a.dq) return;  // (delta alone asked for: dk and dv's)
  // The keys any row sees.
  int64 k_begin = a.seq_kv, k_end = 0;
  for (int r = 0; r < rows; ++r) {
    const PagedWindow w = backward_window(a, backward_row(a, hkv, row0 + r).s);
    if (w.lo < w.hi) {
      k_begin = imin(k_begin, w.lo);
      k_end = imax(k_end, w.hi);
    }
  }
  // dq: thread tid owns columns tid, tid + 128, ... (D <= 512) of every row.
  constexpr int kCols = 4;
  Acc dq[R][kCols];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int u = 0; u < kCols; ++u) dq[r][u] = Acc(0);
  for (int64 t0 = k_begin; t0 < k_end; t0 += TK) {
    const int n = static_cast<int>(imin(TK, k_end - t0));
    __syncthreads();  // the previous tile's reads done; rows, delta and lse written
    backward_load_keys<T, R>(a, sh, b, hkv, t0, n);
    __syncthreads();
    backward_probabilities<T, R>(a, sh, b, hkv, row0, rows, t0, n);
    for (int j = 0; j < n; ++j) {
      Acc x[R];
#pragma unroll
      for (int r = 0; r < R; ++r) x[r] = sh.dx[r * TK + j];
#pragma unroll
      for (int u = 0; u < kCols; ++u) {
        const int c = tid + u * kBackwardThreads;
        if (c >= D) break;
        const Acc kx = to_acc<Acc>(sh.k[j * sh.kp + c]);
#pragma unroll
        for (int r = 0; r < R; ++r) dq[r][u] += x[r] * kx;
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (r >= rows) break;
    const BackwardRow w = backward_row(a, hkv, row0 + r);
#pragma unroll
    for (int u = 0; u < kCols; ++u) {
      const int c = tid + u * kBackwardThreads;
      if (c >= D) break;
      static_cast<T*>(a.dq)[b * a.dq_strides[0] + w.s * a.dq_strides[1] + w.h * a.dq_strides[2] + c * a.dq_strides[3]] =
          round_to<T>(dq[r][u]);
    }
  }
}

template <class T, int R>
__global__ void __launch_bounds__(kBackwardThreads) split_kv_dkdv(const __grid_constant__ AttentionBackwardParams a) {
  using Acc = acc_t<T>;
  extern __shared__ __align__(16) unsigned char shared[];
  const BackwardShared<T, R> sh(shared, a);
  const int tid = threadIdx.x, D = static_cast<int>(a.head_dim), DV = static_cast<int>(a.head_dim_v);
  const int TK = static_cast<int>(a.tile_keys);
  const int64 tiles = (a.seq_kv + TK - 1) / TK;
  const int64 tile = blockIdx.x % tiles, hkv = (blockIdx.x / tiles) % a.heads_kv, b = blockIdx.x / (tiles * a.heads_kv);
  const int64 t0 = tile * TK;
  const int n = static_cast<int>(imin(TK, a.seq_kv - t0));
  backward_load_keys<T, R>(a, sh, b, hkv, t0, n);
  for (int i = tid; i < TK * (sh.dkp + sh.dvp); i += kBackwardThreads) sh.dk[i] = Acc(0);  // (dv follows dk)
  // Element (j, c) of dk and dv is thread ((c % slices) * TK + j)'s alone.
  const int slices = sh.slices, slice = tid / TK, lane = tid - slice * TK;
  const int64 rows_total = a.group * a.seq_q;
  for (int64 row0 = 0; row0 < rows_total; row0 += R) {
    const int rows = static_cast<int>(imin(R, rows_total - row0));
    // Skip a chunk of rows none of which sees a key of this tile.
    int sees = 0;
    if (tid < rows) {
      const PagedWindow w = backward_window(a, backward_row(a, hkv, row0 + tid).s);
      sees = w.lo < w.hi && w.lo < t0 + n && w.hi > t0;
    }
    __syncthreads();  // the previous chunk's p, dx, q and dout reads done
    if (!__syncthreads_or(sees)) continue;
    backward_load_rows<T, R>(a, sh, b, hkv, row0, rows);
    if (tid < R) {
      Acc lse = -paged_infinity<Acc>(), delta = Acc(0);
      if (tid < rows) {
        const BackwardRow w = backward_row(a, hkv, row0 + tid);
        lse = static_cast<const Acc*>(a.lse)[b * a.lse_strides[0] + w.h * a.lse_strides[1] + w.s * a.lse_strides[2]];
        delta = static_cast<const Acc*>(a.delta)[(b * a.heads_q + w.h) * a.seq_q + w.s];
      }
      sh.lse[tid] = lse;
      sh.delta[tid] = delta;
    }
    __syncthreads();
    backward_probabilities<T, R>(a, sh, b, hkv, row0, rows, t0, n);
    if (slice < slices && lane < n) {
      for (int c = slice; c < D; c += slices) {
        Acc sum = sh.dk[lane * sh.dkp + c];
#pragma unroll
        for (int r = 0; r < R; ++r) sum += sh.dx[r * TK + lane] * sh.q[r * D + c];
        sh.dk[lane * sh.dkp + c] = sum;
      }
      for (int c = slice; c < DV; c += slices) {
        Acc sum = sh.dv[lane * sh.dvp + c];
#pragma unroll
        for (int r = 0; r < R; ++r) sum += sh.p[r * TK + lane] * sh.dout[r * DV + c];
        sh.dv[lane * sh.dvp + c] = sum;
      }
    }
  }
  __syncthreads();
  for (int i = tid; i < n * (D + DV); i += kBackwardThreads) {
    const int j = i / (D + DV), e = i - j * (D + DV);
    const int64 key = t0 + j;
    if (e < D) {
      if (a.dk)
        static_cast<T*>(
            a.dk)[b * a.dk_strides[0] + key * a.dk_strides[1] + hkv * a.dk_strides[2] + e * a.dk_strides[3]] =
            round_to<T>(sh.dk[j * sh.dkp + e]);
    } else if (a.dv) {
      static_cast<T*>(
          a.dv)[b * a.dv_strides[0] + key * a.dv_strides[1] + hkv * a.dv_strides[2] + (e - D) * a.dv_strides[3]] =
          round_to<T>(sh.dv[j * sh.dvp + e - D]);
    }
  }
}

}  // namespace baracuda::device

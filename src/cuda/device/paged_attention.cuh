#pragma once
// Attention over a paged KV cache for decode (include/baracuda/ops/attention.hpp, `paged`), and over
// dense k and v (`paged` 0: the cases cuDNN refuses, with the bias): a block of 128 threads per
// (sequence, kv head, chunk of R query rows, key split). The R rows are the
// (query head of the kv head's group, query) pairs, so the cache's keys and values are read once for
// the whole group. Keys go through shared memory a tile of `tile_keys` at a time (16-byte cp.async
// where the cache's rows are aligned vectors), then:
//   scores  every thread takes one key and a slice of D, for all R rows; the slices summed in order;
//   softmax the online softmax (FlashAttention's): per row its running max m and sum l, the tile's
//           probabilities written over the scores and the accumulators rescaled by exp(m_old - m);
//   values  every thread takes pairs of output columns for all R rows over the keys of its key group
//           (key j to group j % pv_groups), the groups' sums added in order at the end.
// A split writes its rows normalized with their lse, straight to out and lse where there is one split,
// else to the workspace, where paged_attention_combine merges the splits in order (so the result is
// the same bits every run). A sequence whose length is outside [0, seq_kv], or whose keys reach a block
// entry outside [0, num_blocks), gets NaN in its rows' out and lse: nothing outside the cache is read.
#include "cuda/device/common.cuh"
#include "cuda/device/params.h"

namespace baracuda::device {

inline constexpr int kPagedThreads = 128;

// The math of f32 and f64 rows (NVRTC has no <cmath>: the overloads by hand).
__device__ __forceinline__ float paged_exp(float x) { return expf(x); }
__device__ __forceinline__ double paged_exp(double x) { return exp(x); }
__device__ __forceinline__ float paged_log(float x) { return logf(x); }
__device__ __forceinline__ double paged_log(double x) { return log(x); }
__device__ __forceinline__ float paged_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double paged_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float paged_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double paged_max(double a, double b) { return fmax(a, b); }
template <class Acc>
__device__ __forceinline__ Acc paged_infinity() {
  return sizeof(Acc) == 4 ? static_cast<Acc>(__int_as_float(0x7f800000))
                          : static_cast<Acc>(__longlong_as_double(0x7ff0000000000000LL));
}
template <class Acc>
__device__ __forceinline__ Acc paged_nan() {
  return sizeof(Acc) == 4 ? static_cast<Acc>(__int_as_float(0x7fc00000))
                          : static_cast<Acc>(__longlong_as_double(0x7ff8000000000000LL));
}
__device__ __forceinline__ int64 imin(int64 a, int64 b) { return a < b ? a : b; }
__device__ __forceinline__ int64 imax(int64 a, int64 b) { return a > b ? a : b; }

// The bias of query s of head h at key j of sequence b, in Acc (its dtype T or f32: bias_f32).
template <class T, class Acc, class Params>
__device__ __forceinline__ Acc bias_value(const Params& p, int64 b, int64 h, int64 s, int64 j) {
  const int64 at = b * p.bias_strides[0] + h * p.bias_strides[1] + s * p.bias_strides[2] + j * p.bias_strides[3];
  return p.bias_f32 ? static_cast<Acc>(static_cast<const float*>(p.bias)[at])
                    : to_acc<Acc>(static_cast<const T*>(p.bias)[at]);
}

// The keys [lo, hi) query s of a sequence of `len` keys sees (the forward's and the backward's params,
// which name the mask alike).
struct PagedWindow {
  int64 lo, hi;
};
template <class Params>
__device__ __forceinline__ PagedWindow paged_window(const Params& p, int64 s, int64 len) {
  const int64 diag = s + (p.bottom_right ? len - p.seq_q : 0);
  PagedWindow w{0, len};
  if (p.window_left >= 0) w.lo = imax(0, imin(len, diag - p.window_left));
  if (p.window_right >= 0) w.hi = imax(0, imin(len, diag + p.window_right + 1));
  return w;
}

// Shared memory (host: cuda/paged_attention.cpp's paged_layout, the same layout):
//   `stages` (1 or 2) of a k tile [tile_keys][k_pitch] T and a v tile [tile_keys][D_v] T (region_bytes:
//   also the key groups' sums [pv_groups][R][D_v] Acc at the end), key offsets [stages][tile_keys][2]
//   int64, windows [R][2] int64,
//   flag (16 bytes), q [R][D] Acc, scores [tile_keys][R] Acc, partial scores [slices][tile_keys][R] Acc,
//   row state m, l, corr [R] Acc each.
template <class T>
__device__ __forceinline__ int64 paged_k_pitch(const PagedAttentionParams& p) {
  return p.vector_kv ? p.head_dim + kVectorWidth<T> : p.head_dim + 1;
}

// Blocks an SM holds, as the registers allow (host: cuda/paged_attention.cpp's paged_layout counts on
// it): five of 128 threads fit 96 registers without spills, but for f64's rows.
template <class T>
inline constexpr int kPagedBlocksPerSm = sizeof(T) == 8 ? 3 : 5;

template <class T, int R>
__global__ void __launch_bounds__(kPagedThreads, kPagedBlocksPerSm<T>)
    paged_attention_split(const __grid_constant__ PagedAttentionParams p) {
  using Acc = acc_t<T>;
  extern __shared__ __align__(16) unsigned char shared[];
  const int tid = threadIdx.x;
  // (tile-local sizes and indices in 32 bits: head dims up to 512, tiles up to 128 keys)
  const int TK = static_cast<int>(p.tile_keys), D = static_cast<int>(p.head_dim), DV = static_cast<int>(p.head_dim_v);
  const int kp = static_cast<int>(paged_k_pitch<T>(p));
  const int64 chunks = (p.group * p.seq_q + R - 1) / R;
  int64 flat = blockIdx.x;
  const int64 chunk = flat % chunks;
  flat /= chunks;
  const int64 hkv = flat % p.heads_kv, b = flat / p.heads_kv;
  const int64 split = blockIdx.y;
  const int64 rows_total = p.group * p.seq_q, row0 = chunk * R;
  const int rows = static_cast<int>(imin(R, rows_total - row0));

  T* k_tile = reinterpret_cast<T*>(shared);                           // [2 stages][k tile, v tile]
  int64* key_at = reinterpret_cast<int64*>(shared + p.region_bytes);  // [stages][tile_keys][2]: k and v offsets
  int64* window = key_at + 2 * TK * p.stages;                         // [R][2]: each row's [lo, hi)
  int* flag = reinterpret_cast<int*>(window + 2 * R);
  Acc* q_s = reinterpret_cast<Acc*>(window + 2 * R + 2);  // (past the flag, 16-byte aligned)
  Acc* scores = q_s + R * D;
  const int slices = kPagedThreads / TK > 0 ? kPagedThreads / TK : 1;
  Acc* partial = scores + TK * R;
  Acc* m_s = partial + slices * TK * R;
  Acc* l_s = m_s + R;
  Acc* corr_s = l_s + R;

  const int64 raw_len = p.paged ? static_cast<int64>(p.seq_lens[b * p.seq_lens_stride]) : p.seq_kv;
  // (a length past the cache's blocks is as bad: the CPU refuses it too)
  const bool bad_len =
      p.paged && (raw_len < 0 || raw_len > p.seq_kv || (raw_len + p.block_size - 1) / p.block_size > p.num_blocks);
  const int64 len = bad_len ? 0 : raw_len;
  // Row r is query s of query head h; its window [lo, hi) (in shared memory: registers are the
  // accumulators'); the keys of this split that any row sees.
  auto row_s = [&](int r) { return (row0 + r) % p.seq_q; };
  auto row_h = [&](int r) { return hkv * p.group + (row0 + r) / p.seq_q; };
  int64 k_begin = len, k_end = 0;
  for (int r = 0; r < rows; ++r) {
    const PagedWindow w = paged_window(p, row_s(r), len);
    if (w.lo < w.hi) {
      k_begin = imin(k_begin, w.lo);
      k_end = imax(k_end, w.hi);
    }
  }
  k_begin = imax(k_begin, split * p.split_keys);
  k_end = imin(k_end, (split + 1) * p.split_keys);
  const Acc scale = static_cast<Acc>(p.scale), softcap = static_cast<Acc>(p.softcap);
  for (int i = tid; i < R * D; i += kPagedThreads) {
    const int r = i / D, e = i - r * D;
    Acc v = Acc(0);
    if (r < rows)
      v = to_acc<Acc>(static_cast<const T*>(
          p.q)[b * p.q_strides[0] + row_s(r) * p.q_strides[1] + row_h(r) * p.q_strides[2] + e * p.q_strides[3]]);
    q_s[i] = v;
  }
  if (tid < R) {
    const PagedWindow w = paged_window(p, row_s(tid), len);
    window[2 * tid] = w.lo;
    window[2 * tid + 1] = w.hi;
    m_s[tid] = -paged_infinity<Acc>();
    l_s[tid] = Acc(0);
  }
  if (tid == 0) *flag = bad_len ? 1 : 0;
  __syncthreads();  // (the flag before any thread's locate can set it)

  // Values: thread (group kg, slot cs) owns column pairs cs, cs + slots, ... for keys j % pv_groups == kg.
  const int pv_groups = static_cast<int>(p.pv_groups);
  const int slots = kPagedThreads / pv_groups, kg = tid / slots, cs = tid - kg * slots;
  constexpr int kPairs = 2;  // pairs a thread: D_v <= 512 with one group
  Acc acc[R][kPairs][2];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int u = 0; u < kPairs; ++u) acc[r][u][0] = acc[r][u][1] = Acc(0);

  // Two stages (where two tiles of 64 keys or more fit the default shared memory): the next tile's keys
  // are located and their copies issued before this tile's math, so the loads of one overlap the
  // arithmetic of the other. Else one stage of a larger tile (fewer barriers a key); other blocks of
  // the SM cover the loads.
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  const int tile_elems = TK * (kp + DV);
  // Each key's k and v row offsets, -1 for a block entry outside the cache (which poisons the rows).
  auto locate = [&](int64 t0, int stage) {
    const int n = static_cast<int>(imin(TK, k_end - t0));
    int64* at = key_at + 2 * TK * stage;
    if (tid < n && !p.paged) {
      const int64 j = t0 + tid;
      at[2 * tid] = b * p.k_strides[0] + j * p.k_strides[1] + hkv * p.k_strides[2];
      at[2 * tid + 1] = b * p.v_strides[0] + j * p.v_strides[1] + hkv * p.v_strides[2];
    } else if (tid < n) {
      const int64 j = t0 + tid, column = j / p.block_size;
      const int64 block = column < p.max_blocks ? p.table[b * p.table_strides[0] + column * p.table_strides[1]] : -1;
      if (block < 0 || block >= p.num_blocks) {
        *flag = 1;
        at[2 * tid] = at[2 * tid + 1] = -1;
      } else {
        const int64 row = j - column * p.block_size;
        at[2 * tid] = block * p.k_strides[0] + row * p.k_strides[1] + hkv * p.k_strides[2];
        at[2 * tid + 1] = block * p.v_strides[0] + row * p.v_strides[1] + hkv * p.v_strides[2];
      }
    }
  };
  // The tile's k and v rows into the stage's buffers: cp.async where rows are aligned vectors (waited
  // for by copy_async_wait_pending / _all), plain loads otherwise.
  auto fetch = [&](int64 t0, int stage) {
    const int n = static_cast<int>(imin(TK, k_end - t0));
    const int64* at = key_at + 2 * TK * stage;
    T* kt = k_tile + stage * tile_elems;
    T* vt = kt + TK * kp;
    if (p.vector_kv) {
      constexpr int VW = kVectorWidth<T>;
      const int kvec = D / VW, vvec = DV / VW, per_key = kvec + vvec;
      for (int i = tid; i < n * per_key; i += kPagedThreads) {
        const int j = i / per_key, u = i - j * per_key;
        if (u < kvec) {
          if (at[2 * j] >= 0) copy_async_16(kt + j * kp + u * VW, k + at[2 * j] + u * VW);
        } else if (at[2 * j + 1] >= 0) {
          copy_async_16(vt + j * DV + (u - kvec) * VW, v + at[2 * j + 1] + (u - kvec) * VW);
        }
      }
    } else {
      const int per_key = D + DV;
      for (int i = tid; i < n * per_key; i += kPagedThreads) {
        const int j = i / per_key, e = i - j * per_key;
        if (e < D) {
          if (at[2 * j] >= 0) kt[j * kp + e] = k[at[2 * j] + e * p.k_strides[3]];
        } else if (at[2 * j + 1] >= 0) {
          vt[j * DV + e - D] = v[at[2 * j + 1] + (e - D) * p.v_strides[3]];
        }
      }
    }
    copy_async_commit();
  };

  const int slice = tid / TK, key_lane = tid - slice * TK;
  if (k_begin < k_end) locate(k_begin, 0);
  __syncthreads();  // the first tile's offsets are written
  if (k_begin < k_end) fetch(k_begin, 0);
  int stage = 0;
  const int stage_flip = p.stages == 2 ? 1 : 0;
  for (int64 t0 = k_begin; t0 < k_end; t0 += TK, stage ^= stage_flip) {
    const int n = static_cast<int>(imin(TK, k_end - t0));  // keys in this tile
    if (p.stages == 2) {
      const bool more = t0 + TK < k_end;
      // (the other stage's buffers were last read by the previous tile's math, before its last barrier)
      if (more) locate(t0 + TK, stage ^ 1);
      __syncthreads();  // the next tile's offsets are written; every thread is past the previous tile's values
      if (more) {
        fetch(t0 + TK, stage ^ 1);
        copy_async_wait_pending<1>();  // this tile's copies landed (the next tile's may be in flight)
      } else {
        copy_async_wait_all();
      }
    } else {
      if (t0 != k_begin) {  // one stage: this tile's offsets and copies once the previous tile's math is done
        __syncthreads();
        locate(t0, 0);
        __syncthreads();
        fetch(t0, 0);
      }
      copy_async_wait_all();
    }
    __syncthreads();
    const T* k_tile_now = k_tile + stage * tile_elems;
    const T* v_tile_now = k_tile_now + TK * kp;
    const int64* key_now = key_at + 2 * TK * stage;

    // Scores: key key_lane, the slice of D of this thread's slice index, every row.
    if (slice < slices) {
      Acc dot[R];
#pragma unroll
      for (int r = 0; r < R; ++r) dot[r] = Acc(0);
      if (key_lane < n && key_now[2 * key_lane] >= 0) {
        const T* kr = k_tile_now + key_lane * kp;
        if (p.vector_kv) {
          constexpr int VW = kVectorWidth<T>;
          const int vecs = D / VW, from = vecs * slice / slices, to = vecs * (slice + 1) / slices;
          for (int u = from; u < to; ++u) {
            const Vector<T> kv = load_vector(kr + u * VW);
#pragma unroll
            for (int x = 0; x < VW; ++x) {
              const Acc kx = to_acc<Acc>(kv.e[x]);
#pragma unroll
              for (int r = 0; r < R; ++r) dot[r] += q_s[r * D + u * VW + x] * kx;
            }
          }
        } else {
          const int from = D * slice / slices, to = D * (slice + 1) / slices;
          for (int e = from; e < to; ++e) {
            const Acc kx = to_acc<Acc>(kr[e]);
#pragma unroll
            for (int r = 0; r < R; ++r) dot[r] += q_s[r * D + e] * kx;
          }
        }
      }
#pragma unroll
      for (int r = 0; r < R; ++r) partial[(slice * TK + key_lane) * R + r] = dot[r];
    }
    __syncthreads();
    if (tid < TK) {
      const int64 j = t0 + tid;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        Acc s = Acc(0);
        for (int sl = 0; sl < slices; ++sl) s += partial[(sl * TK + tid) * R + r];
        s *= scale;
        if (softcap > Acc(0)) s = softcap * paged_tanh(s / softcap);
        // (after the soft-cap; -inf entries mask)
        if (p.bias && tid < n && r < rows) s += bias_value<T, Acc>(p, b, row_h(r), row_s(r), j);
        const bool visible =
            tid < n && r < rows && j >= window[2 * r] && j < window[2 * r + 1] && key_now[2 * tid] >= 0;
        scores[tid * R + r] = visible ? s : -paged_infinity<Acc>();
      }
    }
    __syncthreads();
    // The online softmax: warp w takes rows w, w + 4, ...
    const int warp = tid >> 5, lane = tid & 31;
    for (int r = warp; r < R; r += kPagedThreads / 32) {
      Acc tile_max = -paged_infinity<Acc>();
      for (int j = lane; j < n; j += 32) tile_max = paged_max(tile_max, scores[j * R + r]);
      for (int o = 16; o > 0; o >>= 1) tile_max = paged_max(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, o));
      // (fmax skips NaN: a NaN score then makes e, and l, NaN, as the CPU's; a base of 0 where every
      // score so far is -inf, whose exps are exactly 0)
      const Acc m_old = m_s[r], m_new = paged_max(m_old, tile_max);
      const Acc base = m_new == -paged_infinity<Acc>() ? Acc(0) : m_new;
      Acc sum = Acc(0);
      for (int j = lane; j < n; j += 32) {
        const Acc s = scores[j * R + r];
        const Acc e = paged_exp(s - base);
        scores[j * R + r] = e;
        sum += e;
      }
      for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      // Every lane has read m_s[r] before lane 0 rewrites it: a shuffle orders the lanes' execution,
      // not their shared-memory accesses (racecheck's warp-level WAR hazard here).
      __syncwarp();
      if (lane == 0) {
        const Acc c = paged_exp(m_old - base);  // (0 from an m_old of -inf)
        corr_s[r] = c;
        l_s[r] = l_s[r] * c + sum;
        m_s[r] = m_new;
      }
    }
    __syncthreads();
    // Values.
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const Acc c = corr_s[r];
#pragma unroll
      for (int u = 0; u < kPairs; ++u) {
        acc[r][u][0] *= c;
        acc[r][u][1] *= c;
      }
    }
    for (int j = kg; j < n; j += pv_groups) {
      Acc pr[R];
#pragma unroll
      for (int r = 0; r < R; ++r) pr[r] = scores[j * R + r];
      const T* vr = v_tile_now + j * DV;
#pragma unroll
      for (int u = 0; u < kPairs; ++u) {
        const int c0 = 2 * (cs + u * slots);
        if (c0 >= DV) break;
        const Acc v0 = to_acc<Acc>(vr[c0]), v1 = c0 + 1 < DV ? to_acc<Acc>(vr[c0 + 1]) : Acc(0);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          acc[r][u][0] += pr[r] * v0;
          acc[r][u][1] += pr[r] * v1;
        }
      }
    }
  }

  // The key groups' sums, added in group order (through the k tile's memory), then written.
  __syncthreads();
  Acc* sums = reinterpret_cast<Acc*>(shared);  // [pv_groups][R][DV]: region_bytes hold it
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int u = 0; u < kPairs; ++u) {
      const int c0 = 2 * (cs + u * slots);
      if (c0 >= DV) break;
      sums[(kg * R + r) * DV + c0] = acc[r][u][0];
      if (c0 + 1 < DV) sums[(kg * R + r) * DV + c0 + 1] = acc[r][u][1];
    }
  __syncthreads();
  const bool poisoned = *flag != 0;
  const int64 pitch = p.splits;
  for (int i = tid; i < rows * DV; i += kPagedThreads) {
    const int r = i / DV, c = i - r * DV;
    Acc o = Acc(0);
    for (int g = 0; g < pv_groups; ++g) o += sums[(g * R + r) * DV + c];
    const Acc l = l_s[r];
    o = poisoned ? paged_nan<Acc>() : (l == Acc(0) ? Acc(0) : o / l);  // (a NaN l stays NaN)
    if (p.splits == 1) {
      static_cast<T*>(p.out)[b * p.out_strides[0] + row_s(r) * p.out_strides[1] + row_h(r) * p.out_strides[2] +
                             c * p.out_strides[3]] = round_to<T>(o);
    } else {
      const int64 row = (b * p.heads_q + row_h(r)) * p.seq_q + row_s(r);
      static_cast<Acc*>(p.partial_out)[(row * pitch + split) * DV + c] = o;
    }
  }
  if (tid < rows) {
    const int r = tid;
    const Acc l = l_s[r];
    const Acc lse = poisoned ? paged_nan<Acc>() : (l == Acc(0) ? -paged_infinity<Acc>() : m_s[r] + paged_log(l));
    if (p.splits == 1) {
      if (p.lse)
        static_cast<Acc*>(p.lse)[b * p.lse_strides[0] + row_h(r) * p.lse_strides[1] + row_s(r) * p.lse_strides[2]] =
            lse;
    } else {
      const int64 row = (b * p.heads_q + row_h(r)) * p.seq_q + row_s(r);
      static_cast<Acc*>(p.partial_lse)[row * pitch + split] = lse;
    }
  }
}

// The splits of each (b, h, s) row merged: weights exp(lse_i - max), in split order. A NaN lse
// (a poisoned sequence) gives NaN; no key in any split gives out 0 and lse -inf.
template <class T>
__global__ void __launch_bounds__(kPagedThreads)
    paged_attention_combine(const __grid_constant__ PagedAttentionParams p) {
  using Acc = acc_t<T>;
  const int64 rows = p.batch * p.heads_q * p.seq_q, S = p.splits, DV = p.head_dim_v;
  for (int64 row = blockIdx.x; row < rows; row += gridDim.x) {
    const Acc* lse = static_cast<const Acc*>(p.partial_lse) + row * S;
    const Acc* part = static_cast<const Acc*>(p.partial_out) + row * S * DV;
    Acc most = -paged_infinity<Acc>();
    bool nan = false;
    for (int64 i = 0; i < S; ++i) {
      nan = nan || lse[i] != lse[i];
      most = paged_max(most, lse[i]);
    }
    Acc total = Acc(0);
    if (!nan && most != -paged_infinity<Acc>())
      for (int64 i = 0; i < S; ++i) total += paged_exp(lse[i] - most);
    const int64 s = row % p.seq_q, h = (row / p.seq_q) % p.heads_q, b = row / (p.seq_q * p.heads_q);
    for (int64 c = threadIdx.x; c < DV; c += blockDim.x) {
      Acc o = Acc(0);
      if (nan) {
        o = paged_nan<Acc>();
      } else if (most != -paged_infinity<Acc>()) {
        for (int64 i = 0; i < S; ++i) o += paged_exp(lse[i] - most) * part[i * DV + c];
        o /= total;
      }
      static_cast<T*>(
          p.out)[b * p.out_strides[0] + s * p.out_strides[1] + h * p.out_strides[2] + c * p.out_strides[3]] =
          round_to<T>(o);
    }
    if (threadIdx.x == 0 && p.lse)
      static_cast<Acc*>(p.lse)[b * p.lse_strides[0] + h * p.lse_strides[1] + s * p.lse_strides[2]] =
          nan ? paged_nan<Acc>() : (most == -paged_infinity<Acc>() ? most : most + paged_log(total));
  }
}

}  // namespace baracuda::device

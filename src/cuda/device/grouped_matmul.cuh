#pragma once
// The grouped matmul (a mixture of experts' layers) with the group sizes read on the device: no
// host sync, so a CUDA graph may hold it. `grouped_prepare` turns the offsets into clamped ends and
// each group's first output tile; the product kernels then find their group from their tile.
// Splitting m (the forward, da): the tiles of every group one after another, then those of the
// rows in no group (written as zeros); splitting r (db): a group's C is the sum over its rows, an
// empty group's zeros.
// 16-bit types on the tensor cores (mma.sync m16n8k16, f32 accumulators; ldmatrix from tiles that
// cp.async fills four stages ahead); f32 and f64 by FMA on the CUDA cores (exact, no TF32).
#include "cuda/device/common.cuh"

namespace baracuda::device {

// ---- Group ends and tile starts (one block) ----

inline constexpr int kPrepareThreads = kGroupedPrepareThreads;

// Inclusive scan over the block of v by `op` (sum or max); `shared` holds 32 values. Begins with a
// barrier, so consecutive calls may share `shared`.
template <bool kMax>
__device__ __forceinline__ int64 block_inclusive_scan(int64 v, int64* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 1; o < 32; o <<= 1) {
    const int64 u = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v = kMax ? (u > v ? u : v) : v + u;
  }
  __syncthreads();
  if (lane == 31) shared[warp] = v;
  __syncthreads();
  for (int w = 0; w < warp; ++w) v = kMax ? (shared[w] > v ? shared[w] : v) : v + shared[w];
  return v;
}

// ends[g]: offset g clamped into [0, T] and to at least the ends before it; ends[G] = T. Offsets out
// of [0, T] or below their predecessor counted (the library's rule for sorted index arguments).
// tile_starts[g]: the m tiles of the groups before g, of kTileM rows (the rows after ends[G - 1]
// are group G's).
template <class I, int kTileM>
__global__ void __launch_bounds__(kPrepareThreads) grouped_prepare(const __grid_constant__ GroupedMatmulParams p) {
  __shared__ int64 scan[32];
  __shared__ int64 carry[3];  // the previous chunk's last raw offset, end and tile start
  const int64 t_rows = p.m;   // (the host passes T as m here)
  if (threadIdx.x == 0) {
    carry[0] = 0;
    carry[1] = 0;
    carry[2] = 0;
    p.tile_starts[0] = 0;
  }
  unsigned long long bad = 0;
  for (int64 base = 0; base < p.groups; base += kPrepareThreads) {
    const int64 g = base + threadIdx.x;
    __syncthreads();
    const int64 prev_raw = carry[0], prev_end = carry[1], prev_tiles = carry[2];
    int64 raw = 0;
    if (g < p.groups) {
      raw = static_cast<int64>(static_cast<const I*>(p.offsets)[g * p.offsets_stride]);
      if (raw < 0 || raw > t_rows) ++bad;
    }
    const int64 clamped = g < p.groups ? (raw < 0 ? 0 : raw > t_rows ? t_rows : raw) : 0;
    int64 end = block_inclusive_scan<true>(clamped, scan);
    if (end < prev_end) end = prev_end;
    const int64 raw_before = __shfl_up_sync(0xffffffffu, raw, 1), end_before_lane = __shfl_up_sync(0xffffffffu, end, 1);
    __syncthreads();
    __shared__ int64 last_raw[32], last_end[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 31) {
      last_raw[warp] = raw;
      last_end[warp] = end;
    }
    __syncthreads();
    const int64 before_raw = lane > 0 ? raw_before : warp > 0 ? last_raw[warp - 1] : prev_raw;
    const int64 before_end = lane > 0 ? end_before_lane : warp > 0 ? last_end[warp - 1] : prev_end;
    if (g < p.groups && g > 0 && raw < before_raw) ++bad;
    const int64 tiles = g < p.groups ? (end - before_end + kTileM - 1) / kTileM : 0;
    const int64 start = block_inclusive_scan<false>(tiles, scan) + prev_tiles;
    if (g < p.groups) {
      p.ends[g] = end;
      p.tile_starts[g + 1] = start;
    }
    __syncthreads();
    if (g == (base + kPrepareThreads < p.groups ? base + kPrepareThreads : p.groups) - 1) {
      carry[0] = raw;
      carry[1] = end;
      carry[2] = start;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const int64 last_end = carry[1];
    p.ends[p.groups] = t_rows;
    p.tile_starts[p.groups + 1] = carry[2] + (t_rows - last_end + kTileM - 1) / kTileM;
  }
  for (int o = 16; o > 0; o >>= 1) bad += __shfl_xor_sync(0xffffffffu, bad, o);
  if (p.bad_index_count && (threadIdx.x & 31) == 0 && bad) atomicAdd(p.bad_index_count, bad);
}

// ---- What the product kernels share ----

// A tile's place: its group, and the rows of m (splitting m) or r (splitting r) it covers.
struct GroupTile {
  int64 group;
  int64 m0, m_end;  // m rows [m0, min(m0 + tile, m_end))
  int64 n0;
  int64 r_begin, r_end;
};

// The group whose tiles hold tile t: the last g with tile_starts[g] <= t (binary search).
__device__ __forceinline__ int64 group_of_tile(const int64* tile_starts, int64 groups_and_tail, int64 t) {
  int64 lo = 0, hi = groups_and_tail;  // tile_starts[lo] <= t < tile_starts[hi]
  while (hi - lo > 1) {
    const int64 mid = lo + (hi - lo) / 2;
    if (tile_starts[mid] <= t)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// Linear tile `t` of the problem: false once past its last tile (every later t is too).
template <bool kSplitR, int kTileM, int kTileN>
__device__ __forceinline__ bool find_tile(const GroupedMatmulParams& p, int64 t, GroupTile& out) {
  const int64 tiles_n = (p.n + kTileN - 1) / kTileN;
  const int64 mt = t / tiles_n;
  out.n0 = (t - mt * tiles_n) * kTileN;
  if constexpr (kSplitR) {
    const int64 tiles_m = (p.m + kTileM - 1) / kTileM;
    const int64 g = mt / tiles_m;
    if (g >= p.groups) return false;
    out.group = g;
    out.m0 = (mt - g * tiles_m) * kTileM;
    out.m_end = p.m;
    out.r_begin = g == 0 ? 0 : p.ends[g - 1];
    out.r_end = p.ends[g];
  } else {
    if (mt >= p.tile_starts[p.groups + 1]) return false;
    const int64 g = group_of_tile(p.tile_starts, p.groups + 1, mt);
    const int64 start = g == 0 ? 0 : p.ends[g - 1];
    out.group = g;
    out.m0 = start + (mt - p.tile_starts[g]) * kTileM;
    out.m_end = p.ends[g];
    out.r_begin = 0;
    out.r_end = g < p.groups ? p.r : 0;  // the rows in no group: zeros
  }
  return true;
}

template <bool kSplitR>
__device__ __forceinline__ const char* group_b(const GroupedMatmulParams& p, int64 group, int size) {
  return static_cast<const char*>(p.b) + (kSplitR ? 0 : group * p.b_group * size);
}

// C[m, n] of the tile's group, rounded to O (m, n in range).
template <bool kSplitR, class O, class Acc>
__device__ __forceinline__ void store_c(const GroupedMatmulParams& p, int64 group, int64 m, int64 n, Acc v) {
  O* c = static_cast<O*>(p.c) + (kSplitR ? group * p.c_group : 0);
  c[m * p.c_m + n * p.c_n] = round_to<O>(v);
}

// ---- 16-bit inputs: tensor cores ----

inline constexpr int kMmaTileM = kGroupedMmaTile, kMmaTileN = kGroupedMmaTile, kMmaTileR = kGroupedMmaStep,
                     kMmaStages = kGroupedMmaStages, kMmaThreads = kGroupedProductThreads;
// A stage: A's tile then B's, 8 KiB each.
inline constexpr int kMmaTileBytes = kMmaTileM * kMmaTileR * 2, kMmaStageBytes = 2 * kMmaTileBytes;
static_assert(kMmaStages * kMmaStageBytes == kGroupedMmaSharedBytes);

// The tiles' layouts in shared memory, by which dim of the operand is contiguous: along r, a tile is
// [128 rows][32 r] (64-byte rows, their four 16-byte chunks rotated by (row / 2) % 4); along m or n,
// [32 r][128] (256-byte rows, chunks by r % 8). Either way the eight rows one ldmatrix phase reads
// fall on eight different bank groups.
template <bool kAlongR>
__device__ __forceinline__ int tile_offset(int row, int chunk) {
  return kAlongR ? row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4) : row * 256 + ((chunk ^ (row & 7)) << 4);
}

// Eight contiguous elements from `from` (`valid` of them in range) into 16 bytes of shared memory:
// cp.async when all eight are there and aligned, else element by element with zeros past `valid`.
__device__ __forceinline__ void load_chunk(char* to, const unsigned short* from, int valid) {
  if (valid == 8 && (reinterpret_cast<unsigned long long>(from) & 15) == 0) {
    copy_async_16(to, from);
    return;
  }
  unsigned short v[8];
  for (int e = 0; e < 8; ++e) v[e] = e < valid ? from[e] : 0;
  uint4 w;
  w.x = v[0] | (static_cast<unsigned>(v[1]) << 16);
  w.y = v[2] | (static_cast<unsigned>(v[3]) << 16);
  w.z = v[4] | (static_cast<unsigned>(v[5]) << 16);
  w.w = v[6] | (static_cast<unsigned>(v[7]) << 16);
  *reinterpret_cast<uint4*>(to) = w;
}

__device__ __forceinline__ int clamp_valid(int64 left) {
  return left <= 0 ? 0 : left >= 8 ? 8 : static_cast<int>(left);
}

// One operand's tile of 128 (m or n) x 32 (r) into `tile`: the operand's element (i, r) is at
// base + i * stride_i + r * stride_r, i in [i0, i_end), r in [r0, r_end); kAlongR: stride_r is 1,
// else stride_i is 1. 512 chunks, two a thread.
template <bool kAlongR>
__device__ __forceinline__ void load_tile(char* tile, const unsigned short* base, int64 stride_i, int64 stride_r,
                                          int64 i0, int64 i_end, int64 r0, int64 r_end) {
  for (int q = threadIdx.x; q < 512; q += kMmaThreads) {
    if constexpr (kAlongR) {
      const int row = q >> 2, chunk = q & 3;
      const int64 i = i0 + row, r = r0 + chunk * 8;
      const int valid = i < i_end ? clamp_valid(r_end - r) : 0;
      load_chunk(tile + tile_offset<true>(row, chunk), valid ? base + i * stride_i + r : base, valid);
    } else {
      const int row = q >> 4, chunk = q & 15;
      const int64 r = r0 + row, i = i0 + chunk * 8;
      const int valid = r < r_end ? clamp_valid(i_end - i) : 0;
      load_chunk(tile + tile_offset<false>(row, chunk), valid ? base + r * stride_r + i : base, valid);
    }
  }
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&d)[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(address));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&d)[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(address));
}

template <class T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1);
template <>
__device__ __forceinline__ void mma_16816<bf16>(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma_16816<f16>(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One 128 x 128 tile of C a block at a time (eight warps, 2 x 4, each 64 x 32), over the tiles from
// blockIdx.x on, gridDim.x apart. kAR / kBR: A's / B's unit stride is along r.
template <class T, class O, bool kAR, bool kBR, bool kSplitR>
__global__ void __launch_bounds__(kMmaThreads, 2) grouped_mma(const __grid_constant__ GroupedMatmulParams p) {
  extern __shared__ __align__(128) char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warp_m = (warp & 1) * 64, warp_n = (warp >> 1) * 32;
  const unsigned smem_base = shared_address(smem);
  GroupTile tile;
  for (int64 t = blockIdx.x; find_tile<kSplitR, kMmaTileM, kMmaTileN>(p, t, tile); t += gridDim.x) {
    const unsigned short* a = static_cast<const unsigned short*>(p.a);
    const unsigned short* b = reinterpret_cast<const unsigned short*>(group_b<kSplitR>(p, tile.group, 2));
    const int64 m_end = tile.m_end < tile.m0 + kMmaTileM ? tile.m_end : tile.m0 + kMmaTileM;
    const int64 n_end = p.n < tile.n0 + kMmaTileN ? p.n : tile.n0 + kMmaTileN;
    const int64 r_count = tile.r_end - tile.r_begin;
    const int steps = static_cast<int>((r_count + kMmaTileR - 1) / kMmaTileR);
    auto load_stage = [&](int step) {
      char* stage = smem + (step % kMmaStages) * kMmaStageBytes;
      const int64 r0 = tile.r_begin + static_cast<int64>(step) * kMmaTileR;
      load_tile<kAR>(stage, a, p.a_m, p.a_r, tile.m0, m_end, r0, tile.r_end);
      load_tile<kBR>(stage + kMmaTileBytes, b, p.b_n, p.b_r, tile.n0, n_end, r0, tile.r_end);
    };
    float acc[4][4][4];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
    for (int s = 0; s < kMmaStages - 1; ++s) {
      if (s < steps) load_stage(s);
      copy_async_commit();
    }
    for (int step = 0; step < steps; ++step) {
      copy_async_wait_pending<kMmaStages - 2>();
      __syncthreads();  // the stage is in; the one loaded next was read by every warp a step ago
      if (step + kMmaStages - 1 < steps) load_stage(step + kMmaStages - 1);
      copy_async_commit();
      const unsigned stage = smem_base + (step % kMmaStages) * kMmaStageBytes;
      const int j = lane >> 3, row8 = lane & 7;
      for (int ks = 0; ks < kMmaTileR / 16; ++ks) {
        unsigned af[4][4], bf[2][4];
        for (int i = 0; i < 4; ++i) {
          const int m = warp_m + 16 * i;
          if constexpr (kAR)
            ldmatrix_x4(af[i], stage + tile_offset<true>(m + row8 + (j & 1) * 8, ks * 2 + (j >> 1)));
          else
            ldmatrix_x4_trans(af[i], stage + tile_offset<false>(ks * 16 + row8 + (j >> 1) * 8, (m >> 3) + (j & 1)));
        }
        for (int q = 0; q < 2; ++q) {
          const int n = warp_n + 16 * q;
          const unsigned bt = stage + kMmaTileBytes;
          if constexpr (kBR)
            ldmatrix_x4(bf[q], bt + tile_offset<true>(n + row8 + (j >> 1) * 8, ks * 2 + (j & 1)));
          else
            ldmatrix_x4_trans(bf[q], bt + tile_offset<false>(ks * 16 + row8 + (j & 1) * 8, (n >> 3) + (j >> 1)));
        }
        for (int i = 0; i < 4; ++i)
          for (int q = 0; q < 4; ++q)
            mma_16816<T>(acc[i][q], af[i], bf[q >> 1][(q & 1) * 2], bf[q >> 1][(q & 1) * 2 + 1]);
      }
    }
    copy_async_wait_all();
    __syncthreads();  // every warp done with the stages before the next tile fills them
    const int g = lane >> 2, t4 = lane & 3;
    for (int i = 0; i < 4; ++i)
      for (int q = 0; q < 4; ++q)
        for (int e = 0; e < 4; ++e) {
          const int64 m = tile.m0 + warp_m + 16 * i + g + (e >> 1) * 8, n = tile.n0 + warp_n + 8 * q + 2 * t4 + (e & 1);
          if (m < m_end && n < n_end) store_c<kSplitR, O>(p, tile.group, m, n, acc[i][q][e]);
        }
  }
}

// ---- f32 and f64: FMA on the CUDA cores ----

__device__ __forceinline__ float fused_multiply_add(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double fused_multiply_add(double a, double b, double c) { return fma(a, b, c); }

inline constexpr int kFmaTile = kGroupedFmaTile, kFmaTileR = 16, kFmaThreads = kGroupedProductThreads;

// A 64 x 64 tile of C a block (each thread 4 x 4), r 16 at a time through shared memory.
template <class T, bool kSplitR>
__global__ void __launch_bounds__(kFmaThreads) grouped_fma(const __grid_constant__ GroupedMatmulParams p) {
  __shared__ T as[kFmaTileR][kFmaTile + 1], bs[kFmaTileR][kFmaTile + 1];
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  GroupTile tile;
  for (int64 t = blockIdx.x; find_tile<kSplitR, kFmaTile, kFmaTile>(p, t, tile); t += gridDim.x) {
    const T* a = static_cast<const T*>(p.a);
    const T* b = reinterpret_cast<const T*>(group_b<kSplitR>(p, tile.group, sizeof(T)));
    const int64 m_end = tile.m_end < tile.m0 + kFmaTile ? tile.m_end : tile.m0 + kFmaTile;
    const int64 n_end = p.n < tile.n0 + kFmaTile ? p.n : tile.n0 + kFmaTile;
    T acc[4][4];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) acc[i][j] = T(0);
    for (int64 r0 = tile.r_begin; r0 < tile.r_end; r0 += kFmaTileR) {
      // Consecutive threads along the operand's unit stride.
      for (int q = threadIdx.x; q < kFmaTile * kFmaTileR; q += kFmaThreads) {
        const int ai = p.a_r == 1 ? q / kFmaTileR : q % kFmaTile, ar = p.a_r == 1 ? q % kFmaTileR : q / kFmaTile;
        const int bi = p.b_r == 1 ? q / kFmaTileR : q % kFmaTile, br = p.b_r == 1 ? q % kFmaTileR : q / kFmaTile;
        const int64 am = tile.m0 + ai, bn = tile.n0 + bi, arr = r0 + ar, brr = r0 + br;
        as[ar][ai] = am < m_end && arr < tile.r_end ? a[am * p.a_m + arr * p.a_r] : T(0);
        bs[br][bi] = bn < n_end && brr < tile.r_end ? b[brr * p.b_r + bn * p.b_n] : T(0);
      }
      __syncthreads();
      for (int k = 0; k < kFmaTileR; ++k) {
        T av[4], bv[4];
        for (int i = 0; i < 4; ++i) av[i] = as[k][ty + 16 * i];
        for (int j = 0; j < 4; ++j) bv[j] = bs[k][tx + 16 * j];
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) acc[i][j] = fused_multiply_add(av[i], bv[j], acc[i][j]);
      }
      __syncthreads();
    }
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        const int64 m = tile.m0 + ty + 16 * i, n = tile.n0 + tx + 16 * j;
        if (m < m_end && n < n_end) store_c<kSplitR, T>(p, tile.group, m, n, acc[i][j]);
      }
  }
}

}  // namespace baracuda::device

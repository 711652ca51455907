#pragma once
// The grouped matmul (a mixture of experts' layers) with the group sizes read on the device: no
// host sync, so a CUDA graph may hold it. `grouped_prepare` turns the offsets into clamped ends and
// each group's first output tile; the product kernels then find their group from their tile.
// Splitting m (the forward, da): the tiles of every group one after another, then those of the
// rows in no group (written as zeros); splitting r (db): a group's C is the sum over its rows, an
// empty group's zeros.
// 16-bit types on the tensor cores (mma.sync m16n8k16, f32 accumulators; ldmatrix from tiles that
// cp.async fills two steps ahead, 64 deep); f32 and f64 by FMA on the CUDA cores (exact, no TF32).
#include "cuda/device/common.cuh"
#include "cuda/device/params.h"

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
// A stage: A's tile then B's, 16 KiB each.
inline constexpr int kMmaTileBytes = kMmaTileM * kMmaTileR * 2, kMmaStageBytes = 2 * kMmaTileBytes;
static_assert(kMmaStages * kMmaStageBytes == kGroupedMmaSharedBytes && kMmaTileM == kMmaTileN && kMmaTileR == 64);
// A tile of kRows (m or n) x 64 (r) is kRows * 8 chunks of 16 bytes (eight elements): four a thread
// for 128 rows, eight for 256.
template <int kRows>
inline constexpr int kChunksPerThread = kRows* kMmaTileR / 8 / kMmaThreads;

// The tiles' layouts in shared memory, by which dim of the operand is contiguous: along r, a tile is
// [rows][64 r] (128-byte rows); along m or n, kBlocked (wgmma's), blocks [64 r][64] one after the
// other (chunks 0-7 of a row of 128 or 256 in the first, 8-15 in the second, and so on), else
// [64 r][128] (mma.sync's, 256-byte rows: fewer registers for its ldmatrix addresses). A row's 16-byte
// chunks are rotated by row % 8: the eight rows one ldmatrix phase reads fall on eight different bank
// groups, and within 128-byte rows it is the 128-byte swizzle wgmma reads (K-major along r, MN-major
// along m or n; 1,024-byte aligned tiles).
template <bool kAlongR, bool kBlocked>
__device__ __forceinline__ unsigned tile_offset(int row, int chunk) {
  if constexpr (kAlongR || kBlocked)
    return (chunk >> 3) * 8192 + row * 128 + (((chunk ^ row) & 7) << 4);
  else
    return row * 256 + ((chunk ^ (row & 7)) << 4);
}

// A thread's chunks of a tile: the same chunk of rows kChunkRows apart, so one source, one count of
// what is left along r and one offset in the tile describe them all.
template <bool kAlongR, int kRows, bool kBlocked>
struct ChunkMap {
  static constexpr int kRowChunks = kAlongR ? 8 : kRows / 8, kChunkRows = kMmaThreads / kRowChunks;
  static __device__ __forceinline__ int row() { return threadIdx.x / kRowChunks; }
  static __device__ __forceinline__ int chunk() { return threadIdx.x % kRowChunks; }
  // From the thread's chunk k to the next one: in the tile, and in the operand (rows of i or of r).
  static constexpr unsigned kTileStep = kChunkRows * (kAlongR || kBlocked ? 128 : 256);
};

__device__ __forceinline__ int clamp_valid(int64 left) {
  return left <= 0 ? 0 : left >= 8 ? 8 : static_cast<int>(left);
}

// Eight contiguous elements from `from` (`valid` of them in range) into 16 bytes of shared memory,
// element by element with zeros past `valid` (any alignment).
__device__ __forceinline__ void load_chunk_slowly(char* to, const unsigned short* from, int valid) {
  unsigned short v[8];
  for (int e = 0; e < 8; ++e) v[e] = e < valid ? from[e] : 0;
  uint4 w;
  w.x = v[0] | (static_cast<unsigned>(v[1]) << 16);
  w.y = v[2] | (static_cast<unsigned>(v[3]) << 16);
  w.z = v[4] | (static_cast<unsigned>(v[5]) << 16);
  w.w = v[6] | (static_cast<unsigned>(v[7]) << 16);
  *reinterpret_cast<uint4*>(to) = w;
}

// One operand's tile of kRows (m or n) x 64 (r) into `tile`, element by element (misaligned
// operands): the operand's element (i, r) is at base + i * stride_i + r * stride_r, i in [i0, i_end),
// r in [r0, r_end); kAlongR: stride_r is 1, else stride_i is 1.
template <bool kAlongR, int kRows, bool kBlocked>
__device__ __forceinline__ void load_tile_slowly(char* tile, const unsigned short* base, int64 stride_i, int64 stride_r,
                                                 int64 i0, int64 i_end, int64 r0, int64 r_end) {
  using Map = ChunkMap<kAlongR, kRows, kBlocked>;
  for (int k = 0; k < kChunksPerThread<kRows>; ++k) {
    const int row = Map::row() + k * Map::kChunkRows, chunk = Map::chunk();
    const int64 i = kAlongR ? i0 + row : i0 + chunk * 8, r = kAlongR ? r0 + chunk * 8 : r0 + row;
    const int valid = kAlongR ? (i < i_end ? clamp_valid(r_end - r) : 0) : (r < r_end ? clamp_valid(i_end - i) : 0);
    load_chunk_slowly(tile + tile_offset<kAlongR, kBlocked>(row, chunk),
                      valid ? base + i * stride_i + r * stride_r : base, valid);
  }
}

// The aligned case, set up once a tile, so a step costs a cp.async a chunk and a few adds: the bytes
// past the operand's end zero-filled by the copy (its src-size).
template <bool kAlongR, int kRows, bool kBlocked>
struct TileChunks {
  using Map = ChunkMap<kAlongR, kRows, kBlocked>;
  static constexpr int kChunks = kChunksPerThread<kRows>;
  const unsigned short* src;  // the thread's first chunk at the next step
  int64 next_chunk;           // elements from one of its chunks to the next
  int64 advance;              // elements a step moves along r
  unsigned at;                // the first chunk's offset in the tile
  int left;                   // r from the first chunk's first element to r_end, at the next step
  int in_range;               // kAlongR: bit k, chunk k's row is below i_end; else the chunks' bytes below i_end

  __device__ __forceinline__ void set(const unsigned short* base, int64 stride_i, int64 stride_r, int64 i0, int64 i_end,
                                      int64 r0, int64 r_end) {
    const int row = Map::row(), chunk = Map::chunk();
    const int64 i = kAlongR ? i0 + row : i0 + chunk * 8, r = kAlongR ? r0 + chunk * 8 : r0 + row;
    at = tile_offset<kAlongR, kBlocked>(row, chunk);
    left = static_cast<int>(r_end - r);  // |r_end - r| < 2^30: the caller's condition
    next_chunk = Map::kChunkRows * (kAlongR ? stride_i : stride_r);
    advance = kAlongR ? kMmaTileR : kMmaTileR * stride_r;
    if constexpr (kAlongR) {
      in_range = 0;
      for (int k = 0; k < kChunks; ++k) in_range |= (i + k * Map::kChunkRows < i_end) << k;
    } else {
      in_range = 2 * clamp_valid(i_end - i);
    }
    src = base + (kAlongR ? i * stride_i + r : r * stride_r + (in_range ? i : i0));
  }

  // The next step's chunks into `tile` (a shared address); `fallback`, a readable address for the
  // chunks wholly out of range.
  __device__ __forceinline__ void issue(unsigned tile, const void* fallback) {
    for (int k = 0; k < kChunks; ++k) {
      const int bytes =
          kAlongR ? ((in_range >> k) & 1 ? 2 * clamp_valid(left) : 0) : (left - k * Map::kChunkRows > 0 ? in_range : 0);
      copy_async_16_fill(tile + at + k * Map::kTileStep, bytes ? src + k * next_chunk : fallback, bytes);
    }
    src += advance;
    left -= kMmaTileR;
  }
};

// A tile's A (kMmaTileM rows) and B (kRowsB rows) tiles of each step into a stage of shared memory,
// A's first: grouped_mma's and grouped_wgmma's loads. kFast: every chunk 16-byte aligned, by cp.async
// from chunks set up once a tile; else element by element.
template <bool kAR, bool kBR, int kRowsB, bool kBlocked, bool kSplitR, bool kFast>
struct StageLoader {
  const GroupedMatmulParams& p;
  const GroupTile& tile;
  const unsigned short *a, *b;
  int64 m_end, n_end;
  TileChunks<kAR, kMmaTileM, kBlocked> a_chunks;
  TileChunks<kBR, kRowsB, kBlocked> b_chunks;

  __device__ __forceinline__ StageLoader(const GroupedMatmulParams& params, const GroupTile& t)
      : p(params),
        tile(t),
        a(static_cast<const unsigned short*>(params.a)),
        b(reinterpret_cast<const unsigned short*>(group_b<kSplitR>(params, t.group, 2))),
        m_end(t.m_end < t.m0 + kMmaTileM ? t.m_end : t.m0 + kMmaTileM),
        n_end(params.n < t.n0 + kRowsB ? params.n : t.n0 + kRowsB) {
    if constexpr (kFast) {
      a_chunks.set(a, p.a_m, p.a_r, tile.m0, m_end, tile.r_begin, tile.r_end);
      b_chunks.set(b, p.b_n, p.b_r, tile.n0, n_end, tile.r_begin, tile.r_end);
    }
  }
  // Step `step`'s tiles into the stage at `stage` (generic) / `stage_address` (shared).
  __device__ __forceinline__ void load(int step, char* stage, unsigned stage_address) {
    if constexpr (kFast) {
      a_chunks.issue(stage_address, a);
      b_chunks.issue(stage_address + kMmaTileBytes, b);
    } else {
      const int64 r0 = tile.r_begin + static_cast<int64>(step) * kMmaTileR;
      load_tile_slowly<kAR, kMmaTileM, kBlocked>(stage, a, p.a_m, p.a_r, tile.m0, m_end, r0, tile.r_end);
      load_tile_slowly<kBR, kRowsB, kBlocked>(stage + kMmaTileBytes, b, p.b_n, p.b_r, tile.n0, n_end, r0, tile.r_end);
    }
  }
};

// C's elements (m, n) and (m, n + 1) of the tile's group, rounded to O, those inside [m_end, n_end):
// one 2-element store where C is contiguous along n.
template <bool kSplitR, class O>
__device__ __forceinline__ void store_c_pair(const GroupedMatmulParams& p, int64 group, int64 m, int64 n, int64 m_end,
                                             int64 n_end, float v0, float v1) {
  if (m >= m_end || n >= n_end) return;
  O* c = static_cast<O*>(p.c) + (kSplitR ? group * p.c_group : 0);
  struct alignas(2 * sizeof(O)) Pair {
    O x, y;
  };
  const bool pairs = p.c_n == 1 && p.c_m % 2 == 0 && reinterpret_cast<unsigned long long>(c) % (2 * sizeof(O)) == 0;
  if (pairs && n + 1 < n_end) {
    *reinterpret_cast<Pair*>(c + m * p.c_m + n) = Pair{round_to<O>(v0), round_to<O>(v1)};
  } else {
    c[m * p.c_m + n * p.c_n] = round_to<O>(v0);
    if (n + 1 < n_end) c[m * p.c_m + (n + 1) * p.c_n] = round_to<O>(v1);
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

// C's tile `tile` (128 x 128) by the block's eight warps (2 x 4, each 64 x 32). kFast: every chunk of
// A and B 16-byte aligned, loaded by cp.async from set-up chunks; else element by element (a loop of
// its own, so the common one keeps its registers).
template <class T, class O, bool kAR, bool kBR, bool kSplitR, bool kFast>
__device__ __forceinline__ void mma_tile(const GroupedMatmulParams& p, const GroupTile& tile, char* smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warp_m = (warp & 1) * 64, warp_n = (warp >> 1) * 32;
  const unsigned smem_base = shared_address(smem);
  const int steps = static_cast<int>((tile.r_end - tile.r_begin + kMmaTileR - 1) / kMmaTileR);
  StageLoader<kAR, kBR, kMmaTileN, false, kSplitR, kFast> loader(p, tile);
  auto load_stage = [&](int step) {
    const int slot = step % kMmaStages;
    loader.load(step, smem + slot * kMmaStageBytes, smem_base + slot * kMmaStageBytes);
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
          ldmatrix_x4(af[i], stage + tile_offset<true, false>(m + row8 + (j & 1) * 8, ks * 2 + (j >> 1)));
        else
          ldmatrix_x4_trans(af[i],
                            stage + tile_offset<false, false>(ks * 16 + row8 + (j >> 1) * 8, (m >> 3) + (j & 1)));
      }
      for (int q = 0; q < 2; ++q) {
        const int n = warp_n + 16 * q;
        const unsigned bt = stage + kMmaTileBytes;
        if constexpr (kBR)
          ldmatrix_x4(bf[q], bt + tile_offset<true, false>(n + row8 + (j >> 1) * 8, ks * 2 + (j & 1)));
        else
          ldmatrix_x4_trans(bf[q], bt + tile_offset<false, false>(ks * 16 + row8 + (j & 1) * 8, (n >> 3) + (j >> 1)));
      }
      for (int i = 0; i < 4; ++i)
        for (int q = 0; q < 4; ++q)
          mma_16816<T>(acc[i][q], af[i], bf[q >> 1][(q & 1) * 2], bf[q >> 1][(q & 1) * 2 + 1]);
    }
  }
  copy_async_wait_all();
  __syncthreads();  // every warp done with the stages before the next tile fills them
  // A thread holds pairs of neighbours along n.
  const int g = lane >> 2, t4 = lane & 3;
  for (int i = 0; i < 4; ++i)
    for (int q = 0; q < 4; ++q)
      for (int h = 0; h < 2; ++h)
        store_c_pair<kSplitR, O>(p, tile.group, tile.m0 + warp_m + 16 * i + g + h * 8,
                                 tile.n0 + warp_n + 8 * q + 2 * t4, loader.m_end, loader.n_end, acc[i][q][2 * h],
                                 acc[i][q][2 * h + 1]);
}

// Whether the tile's loads may take the fast path: every chunk's first element 16-byte aligned, and
// r's extent within an int.
template <bool kAR, bool kBR, bool kSplitR>
__device__ __forceinline__ bool grouped_fast_tile(const GroupedMatmulParams& p, const GroupTile& tile) {
  const auto aligned = [](const void* x, int64 s0, int64 s1) {
    return (reinterpret_cast<unsigned long long>(x) & 15) == 0 && s0 % 8 == 0 && s1 % 8 == 0;
  };
  return tile.r_end - tile.r_begin < (int64{1} << 30) &&
         aligned(p.a, kAR ? p.a_m : p.a_r, kAR ? tile.r_begin : tile.m0) &&
         aligned(group_b<kSplitR>(p, tile.group, 2), kBR ? p.b_n : p.b_r, kBR ? tile.r_begin : 0);
}

// The tiles from blockIdx.x on, gridDim.x apart. kAR / kBR: A's / B's unit stride is along r.
template <class T, class O, bool kAR, bool kBR, bool kSplitR>
__global__ void __launch_bounds__(kMmaThreads, 2) grouped_mma(const __grid_constant__ GroupedMatmulParams p) {
  extern __shared__ __align__(128) char smem[];
  GroupTile tile;
  for (int64 t = blockIdx.x; find_tile<kSplitR, kMmaTileM, kMmaTileN>(p, t, tile); t += gridDim.x) {
    if (grouped_fast_tile<kAR, kBR, kSplitR>(p, tile))
      mma_tile<T, O, kAR, kBR, kSplitR, true>(p, tile, smem);
    else
      mma_tile<T, O, kAR, kBR, kSplitR, false>(p, tile, smem);
  }
}

// ---- 16-bit inputs on Hopper: wgmma (sm_90a) ----
// Tiles of 128 (m) x 256 (n), 64 deep a step, loaded as grouped_mma's are (cp.async into the swizzled
// layout above) into four stages; the products by the two warpgroups, each 64 rows of m x 256 of n,
// reading A and B from shared memory through descriptors (wgmma.mma_async m64n256k16, f32
// accumulators in 128 registers a thread), one step's products still running while the next step's
// are issued. Compiled only for sm_90a (the program's only_arch, cuda/grouped_matmul.cpp).

inline constexpr int kWgmmaTileN = kGroupedWgmmaTileN, kWgmmaStages = kGroupedWgmmaStages;
inline constexpr int kWgmmaStageBytes = kMmaTileBytes + kWgmmaTileN * kMmaTileR * 2;  // A's 16 KiB, B's 32
static_assert(kWgmmaStages * kWgmmaStageBytes + 1024 == kGroupedWgmmaSharedBytes && kWgmmaStages >= 3);

// A shared-memory matrix descriptor of a 128-byte-swizzled tile: start address, the byte offsets
// between 64-element atoms along m / n (MN-major only) and between groups of eight rows (the
// 1,024 bytes of an atom), swizzle mode 1 (128 bytes).
__device__ __forceinline__ unsigned long long wgmma_descriptor(unsigned address, unsigned atoms_apart) {
  return static_cast<unsigned long long>((address & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>(atoms_apart >> 4) << 16) |
         (static_cast<unsigned long long>(1024 >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}
// Shared memory written by the threads (cp.async, stores) made visible to wgmma's reads (the async proxy).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// The accumulators are wgmma's between its issue and the wait: no access of them moved across.
template <int N>
__device__ __forceinline__ void fence_accumulators(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

template <class T>
inline constexpr bool kIsBf16 = false;
template <>
inline constexpr bool kIsBf16<bf16> = true;

// d += A B over k 16: A 64 x 16 and B 16 x 256 by their descriptors; kTransA / kTransB: MN-major.
#define BARACUDA_WGMMA_M64N256K16(type)                                                                                \
  asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32." type "." type                                            \
               " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "     \
               "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, "  \
               "%41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, "  \
               "%61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, "  \
               "%81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, " \
               "%101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, "      \
               "%117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, 1, 1, 1, %130, %131;"   \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),       \
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),            \
                 "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),            \
                 "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),            \
                 "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),            \
                 "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),            \
                 "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]),            \
                 "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]),            \
                 "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),            \
                 "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]),            \
                 "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]),            \
                 "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]),            \
                 "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]),            \
                 "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]),     \
                 "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]),     \
                 "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]),     \
                 "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])      \
               : "l"(a), "l"(b), "n"(kTransA), "n"(kTransB))
template <class T, int kTransA, int kTransB>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], unsigned long long a, unsigned long long b) {
  if constexpr (kIsBf16<T>)
    BARACUDA_WGMMA_M64N256K16("bf16");
  else
    BARACUDA_WGMMA_M64N256K16("f16");
}
#undef BARACUDA_WGMMA_M64N256K16

// C's tile `tile` (128 x 256): warpgroup w the rows [64 w, 64 w + 64). The stage of step s is loaded
// at step s - 2 into the slot of step s - 2 - 2 (after the barrier that follows every warpgroup's wait
// for its products of that step), so kWgmmaStages - 2 loads are in flight while the products run.
template <class T, class O, bool kAR, bool kBR, bool kSplitR, bool kFast>
__device__ __forceinline__ void wgmma_tile(const GroupedMatmulParams& p, const GroupTile& tile, char* smem) {
  constexpr int kAhead = kWgmmaStages - 2;
  const int warpgroup = threadIdx.x >> 7;
  const unsigned smem_base = shared_address(smem);
  const int steps = static_cast<int>((tile.r_end - tile.r_begin + kMmaTileR - 1) / kMmaTileR);
  StageLoader<kAR, kBR, kWgmmaTileN, true, kSplitR, kFast> loader(p, tile);
  auto load_stage = [&](int step) {
    const int slot = step % kWgmmaStages;
    loader.load(step, smem + slot * kWgmmaStageBytes, smem_base + slot * kWgmmaStageBytes);
  };
  float acc[128];  // (every loop over it unrolled: an index known at compile time keeps it in registers)
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;
  for (int s = 0; s < kAhead; ++s) {
    if (s < steps) load_stage(s);
    copy_async_commit();
  }
  // Along r a warpgroup's A rows start 64 rows (8 KiB) into the tile, and a step of 16 is 32 bytes
  // into each row; along m its block of the tile is the second 8 KiB, a step 16 rows (2 KiB) down.
  const unsigned a_at = warpgroup * 8192u, a_step = kAR ? 32u : 2048u, b_step = kBR ? 32u : 2048u;
  for (int step = 0; step < steps; ++step) {
    copy_async_wait_pending<kAhead - 1>();
    fence_proxy_async();
    __syncthreads();  // the stage is in; every warpgroup's products of step - 2 are done
    if (step + kAhead < steps) load_stage(step + kAhead);
    copy_async_commit();
    const unsigned stage = smem_base + (step % kWgmmaStages) * kWgmmaStageBytes;
    fence_accumulators(acc);
    wgmma_fence();
    for (int ks = 0; ks < kMmaTileR / 16; ++ks)
      wgmma_m64n256k16<T, kAR ? 0 : 1, kBR ? 0 : 1>(acc, wgmma_descriptor(stage + a_at + ks * a_step, 8192),
                                                    wgmma_descriptor(stage + kMmaTileBytes + ks * b_step, 8192));
    wgmma_commit();
    wgmma_wait<1>();
    fence_accumulators(acc);
  }
  wgmma_wait<0>();
  fence_accumulators(acc);
  copy_async_wait_all();
  __syncthreads();  // every warpgroup done with the stages before the next tile fills them
  // Warp q of the warpgroup holds rows 16 q + lane / 4 and 8 more; of each 8 columns, the pair at
  // 2 (lane % 4).
  const int lane = threadIdx.x & 31, row = 64 * warpgroup + 16 * ((threadIdx.x >> 5) & 3) + (lane >> 2);
#pragma unroll
  for (int j = 0; j < kWgmmaTileN / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      store_c_pair<kSplitR, O>(p, tile.group, tile.m0 + row + 8 * h, tile.n0 + 8 * j + 2 * (lane & 3), loader.m_end,
                               loader.n_end, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
}

template <class T, class O, bool kAR, bool kBR, bool kSplitR>
__global__ void __launch_bounds__(kMmaThreads, 1) grouped_wgmma(const __grid_constant__ GroupedMatmulParams p) {
  extern __shared__ __align__(1024) char smem_raw[];
  // wgmma's swizzle is of the address: the tiles 1,024-byte aligned (the launch asks 1 KiB more).
  char* smem = smem_raw + ((1024 - (shared_address(smem_raw) & 1023)) & 1023);
  GroupTile tile;
  for (int64 t = blockIdx.x; find_tile<kSplitR, kMmaTileM, kWgmmaTileN>(p, t, tile); t += gridDim.x) {
    if (grouped_fast_tile<kAR, kBR, kSplitR>(p, tile))
      wgmma_tile<T, O, kAR, kBR, kSplitR, true>(p, tile, smem);
    else
      wgmma_tile<T, O, kAR, kBR, kSplitR, false>(p, tile, smem);
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

#pragma once
// The KV cache append's kernels (include/baracuda/ops/kv_cache.hpp): a claim pass in which each token
// that maps to a cache row takes it by atomicMax of its index + 1 into `owner` (zeroed first) and bad
// entries are counted, then a copy pass, a warp a (token, head), in which only the row's owner
// writes: of two tokens mapped to one row the later in (b, i) order wins, as on the CPU, whatever
// order the blocks run in. Elements are moved as their bits (E: an unsigned type of their size).
#include "cuda/device/common.cuh"
#include "cuda/device/params.h"

namespace baracuda::device {

// Slots of the claim pass a sequence has: its tokens, and at least one (whose thread counts the
// sequence's own bad entries: a length, a new_lens) where it appends none.
__device__ __forceinline__ int64 append_slots(const KvCacheAppendParams& p) {
  return p.new_tokens > 0 ? p.new_tokens : 1;
}

// Slot t's cache row (block * block_size + row in block), or -1 where it writes nothing; with `count`,
// its bad entries are added to p.bad_index_count (the sequence's own by its first slot).
__device__ __forceinline__ int64 append_row(const KvCacheAppendParams& p, int64 t, bool count) {
  const int64 slots = append_slots(p), b = t / slots, i = t - b * slots;
  unsigned long long bad = 0;
  const int64 start = p.seq_lens[b * p.seq_lens_stride];
  int64 n = p.new_tokens;
  if (p.new_lens) {
    const int64 raw = p.new_lens[b * p.new_lens_stride];
    n = raw < 0 ? 0 : (raw > p.new_tokens ? p.new_tokens : raw);
    bad += i == 0 && n != raw ? 1 : 0;
  }
  int64 row = -1;
  if (start < 0) {
    bad += i == 0 ? 1 : 0;
  } else if (i < n) {
    const int64 position = start + i, column = position / p.block_size;
    if (column >= p.max_blocks) {
      bad += 1;  // past the sequence's table
    } else {
      const int64 block = p.table[b * p.table_strides[0] + column * p.table_strides[1]];
      if (block < 0 || block >= p.num_blocks)
        bad += 1;
      else
        row = block * p.block_size + (position - column * p.block_size);
    }
  }
  if (count && bad && p.bad_index_count) atomicAdd(p.bad_index_count, bad);
  return row;
}

__global__ void kv_cache_claim(const __grid_constant__ KvCacheAppendParams p) {
  const int64 total = p.batch * append_slots(p);
  for (int64 t = blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<int64>(gridDim.x) * blockDim.x) {
    const int64 row = append_row(p, t, true);
    if (row >= 0) atomicMax(p.owner + row, static_cast<unsigned>(t + 1));
  }
}

template <class E>
__global__ void kv_cache_copy(const __grid_constant__ KvCacheAppendParams p) {
  const int lane = threadIdx.x & 31;
  const int64 warps = static_cast<int64>(gridDim.x) * (blockDim.x >> 5);
  const int64 items = p.batch * p.new_tokens * p.heads;  // (token, head)
  for (int64 w = blockIdx.x * static_cast<int64>(blockDim.x >> 5) + (threadIdx.x >> 5); w < items; w += warps) {
    const int64 t = w / p.heads, h = w - t * p.heads;
    const int64 row = append_row(p, t, false);  // (new_tokens > 0 here: slots are tokens)
    if (row < 0 || p.owner[row] != static_cast<unsigned>(t + 1)) continue;
    const int64 b = t / p.new_tokens, i = t - b * p.new_tokens;
    const int64 block = row / p.block_size, r = row - block * p.block_size;
    for (int x = 0; x < 2; ++x) {
      const E* src =
          static_cast<const E*>(p.src[x]) + b * p.src_strides[x][0] + i * p.src_strides[x][1] + h * p.src_strides[x][2];
      E* dst = static_cast<E*>(p.cache[x]) + block * p.cache_strides[x][0] + r * p.cache_strides[x][1] +
               h * p.cache_strides[x][2];
      for (int64 e = lane; e < p.dims[x]; e += 32) dst[e * p.cache_strides[x][3]] = src[e * p.src_strides[x][3]];
    }
  }
}

}  // namespace baracuda::device

#pragma once
// Scatter-add of destination lines of a few entries, a warp each (either variant; always in one fixed
// order): the walk's innermost dim is dim (gather's backward of [tokens, experts] <- [tokens, k], of
// [rows, 1024] <- [rows, 64]; scatter_add into [rows, 4096] <- [rows, 64]). A warp takes an item of a
// few consecutive lines (at most kWarpItemEntries entries; or, adding, one line of more in tiles of
// kWarpItemEntries: up to kWarpLineEntries, in f32 / f64 and on column lines), adds its entries into
// its own sums in shared memory, in f32 for 16-bit types, then writes them:
//  - overwriting (a line of sums fits in kWarpLineBytes), the warp's sums are the item's whole lines,
//    written with one coalesced pass: the table's only write (zeros included), so the table is
//    written once at the full line rate where zeroing it first and adding the entries after would
//    write it, then read and rewrite every sector an entry reaches;
//  - adding into the table, only the slots the item reached are added to, each once, by the lane
//    that reached it first (its owner), with one rounding for 16-bit types. Where the item's lines
//    fit the warp's sums (as overwriting), a slot's sum is at its place in the lines and its owner
//    is marked by a bit; longer lines (any length) find a slot's sum in a small open-addressing table
//    of the warp's (twice an item's entries: never full). f32 and f64 owners add with a
//    fire-and-forget reduction (no load waited for; f32's flushes subnormal inputs and results to
//    zero, as PTX's red.add.f32 does); 16-bit ones load, add and store; into a table known to be
//    zero (`zeroed`), every type stores 0 + its sum.
// The same kernel adds column lines (ScatterKernel::column_lines: element mode along an outer dim, the
// gather's backward along dim 0 of a tall table; column_lines_by_warp): the walk with dim moved
// innermost (dim_innermost) makes each column's destination line a line here, its entries a lane each
// at the column's stride (the warps of a block take neighbouring columns, so they share sectors), its
// reached slots hashed (in tiles past kWarpItemEntries entries) and added to the table, zeroed
// first when overwritten.
// No block-wide barrier: a warp's item is its own, and the next item's entries are loaded while the
// current item is written.
//
// Each round of 32 entries (one a lane), lanes whose entries meet at one slot are matched
// (__match_any_sync) and the lowest sums them in lane order, then adds that sum to the slot: every
// slot sums its entries in entry order, a round's at a time, with no atomic order: the same bits on every
// run on a given GPU (where rounds fall depends on the lines an item takes, which follows the SM
// count).
//
// A lane's place advances by 32 entries (or write-back chunks) a step: its (line, column) is carried
// with a constant quotient and remainder, never divided. The write-back moves 16-byte chunks: a
// dense item as one run from its first aligned element, other lines where each starts aligned with
// unit stride; else single elements.
// Compiled at select (NVRTC; cuda/indexing/scatter_lines.cpp launches them), one program an element
// type, index type and WarpSums (cuda/indexing/strategies.hpp, with WarpItems and the sizes).
#include "cuda/common/line_write.cuh"
#include "cuda/common/scatter_ops.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {

inline constexpr int kRounds = static_cast<int>(kWarpItemEntries / 32);  // an item's entries, one a lane a round

// A place (line of the item, position in the line) that advances by 32 a step, for lines of `size`
// positions, from position `start` of the item: 32 = whole * size + rest, so a step is two adds and
// at most one carry.
struct Carried {
  int line = 0, at = 0, whole = 0, rest = 0, size = 1;
  __device__ __forceinline__ Carried(int size_, int start) : size(size_) {
    line = start / size;
    at = start - line * size;
    whole = 32 / size;
    rest = 32 - whole * size;
  }
  __device__ __forceinline__ void step() {
    line += whole;
    at += rest;
    if (at >= size) {
      at -= size;
      ++line;
    }
  }
};

template <class Acc>
struct WarpTile {
  int count = 0;     // the item's entries
  int key[kRounds];  // slot of the item's lines (line x line_size + slot), or -1 to skip (bad index, padding)
  Acc value[kRounds];
};

// Tile `tile` of item `item`'s entries, one a lane a round: coalesced, the values loaded independently
// of their index. kDense: the walk is [lines, entries] with unit steps in the values and the index (or
// one entry a line, consecutive), so an item's entries are one run in each and need no walker offsets.
template <bool kDense, class T, class Idx>
__device__ __forceinline__ void load_item(const IndexedLayout& layout, const WarpItems& g, const T* values,
                                          const Idx* index, int64_t item, int tile, WarpTile<acc_t<T>>& t) {
  const Walker<kRowTensors>& w = layout.rows;
  const int lane = threadIdx.x % 32;
  const int64_t line0 = item * g.per_item;
  const int first = tile * static_cast<int>(kWarpItemEntries);
  t.count = min(static_cast<int>(min(int64_t(g.per_item), g.lines - line0)) * g.entries - first,
                static_cast<int>(kWarpItemEntries));
  Carried e(g.entries, first + lane);
#pragma unroll
  for (int r = 0; r < kRounds; ++r) {
    const bool inside = r * 32 + lane < t.count;
    int64_t values_off = 0, index_off = 0;
    if constexpr (kDense) {
      values_off = index_off = line0 * g.entries + first + (inside ? r * 32 + lane : 0);
    } else {
      int64_t base[kRowTensors];
      w.offsets(line0 + (inside ? e.line : 0), base, g.outer_dims);
      // (e.at is 0 when dim left the walk: every line is one entry.)
      values_off = base[0] + e.at * w.inner_stride(0);
      index_off = base[1] + e.at * w.inner_stride(1);
    }
    const int64_t i = inside ? static_cast<int64_t>(index[index_off]) : -1;
    t.value[r] = inside ? static_cast<acc_t<T>>(values[values_off]) : acc_t<T>(0);
    const bool valid = i >= 0 && i < layout.dim_size && i != layout.padding;
    t.key[r] = valid ? e.line * g.line_size + static_cast<int>(i) : -1;
    e.step();
  }
}

// The warp's hash slot of a key (a slot of the item's lines: >= 0), put there if absent; `inserted`
// says whether this call put it. Linear probing from a multiplicative hash; the keys of one round are
// distinct, so lanes that race for a slot put different keys (where each lands may vary, its sum not).
__device__ __forceinline__ int find_or_insert(int* keys, int bits, int key, bool& inserted) {
  const unsigned last = (1u << bits) - 1;
  for (unsigned h = (static_cast<unsigned>(key) * 2654435769u) >> (32 - bits);; h = (h + 1) & last) {
    const int seen = atomicCAS(keys + h, -1, key);
    if (seen == -1 || seen == key) {
      inserted = seen == -1;
      return static_cast<int>(h);
    }
  }
}

// Adds a tile into the warp's sums, round by round, each slot's entries in lane order. Adding into the
// table, the first leader to reach a slot owns it and keeps its place in the sums in `owner` (else
// -1): add_owned then touches only the slots the item reached. `marks`: the warp's ownership bits
// (owned_lines) or hash keys (hashed).
template <WarpSums kSums, class Acc>
__device__ __forceinline__ void add_item(const WarpTile<Acc>& t, Acc* sums, Acc* stage, int* marks, int hash_bits,
                                         int (&owner)[kRounds]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < kRounds; ++r) {
    owner[r] = -1;
    if (r * 32 < t.count) {  // warp-uniform; no break, so the tile stays in registers
      stage[lane] = t.value[r];
      const unsigned same = __match_any_sync(0xffffffffu, static_cast<unsigned>(t.key[r]));
      __syncwarp();
      const int key = t.key[r];
      if (key >= 0 && lane == __ffs(same) - 1) {
        Acc sum = ScatterSum::identity<Acc>();
        for (unsigned m = same; m; m &= m - 1) sum = ScatterSum::reduce(sum, stage[__ffs(m) - 1]);
        int slot = key;
        bool inserted = false;
        if constexpr (kSums == WarpSums::hashed) slot = find_or_insert(marks, hash_bits, key, inserted);
        sums[slot] = ScatterSum::reduce(sums[slot], sum);
        if constexpr (kSums == WarpSums::owned_lines) {
          const unsigned bit = 1u << (key & 31);
          inserted = !(atomicOr(reinterpret_cast<unsigned*>(marks) + (key >> 5), bit) & bit);
        }
        if (kSums != WarpSums::lines && inserted) owner[r] = slot;
      }
      __syncwarp();  // the stage is rewritten next round
    }
  }
}

// Overwriting: writes an item's sums (zeros included) to its table lines and clears them for the
// next item.
//  - kDense: the item's lines are one run of the table (write_run: 16-byte chunks from its first
//    aligned element, any line length, any alignment of T);
//  - else each line on its own, in chunks of kVec (the lines are aligned: chunked_lines) or, with
//    kVec 1, element by element at the table's stride.
template <int kVec, bool kDense, class T, class Acc>
__device__ __forceinline__ void write_item(const IndexedLayout& layout, const WarpItems& g, int64_t item, Acc* sums,
                                           T* table) {
  using Elements = Chunk<T, kVec>;
  const int lane = threadIdx.x % 32;
  const int64_t line0 = item * g.per_item;
  const int lines = static_cast<int>(min(int64_t(g.per_item), g.lines - line0));
  int64_t base[kRowTensors] = {};
  if constexpr (kDense) {
    layout.rows.offsets(line0, base, g.outer_dims);
    write_run<kVec>(table + base[2], lines * g.line_size, sums, lane, 32, true);
  } else {
    const int line_chunks = g.line_size / kVec, chunks = lines * line_chunks;
    Carried c(line_chunks, lane);
    int based = -1;
    for (int k = lane; k < chunks; k += 32) {
      if (c.line != based) {
        layout.rows.offsets(line0 + c.line, base, g.outer_dims);
        based = c.line;
      }
      move_chunk(reinterpret_cast<Chunk<Acc, kVec>*>(sums)[k],
                 *reinterpret_cast<Elements*>(table + base[2] + int64_t(c.at) * kVec * layout.table_dim_stride), true);
      c.step();
    }
  }
  __syncwarp();  // the sums are cleared before the next item adds to them
}

// Adds each round's sum (sums[from[r]]) to its table element (at[r]; null: none) once, and clears
// the sum. f32 / f64 sums go as reductions no one waits for (with one owner a slot, the same bits as a
// load, add and store but for f32 subnormals, flushed to zero by the reduction); 16-bit types load
// their old values back to back, add in f32 (one rounding) and store (measured: bf16 reductions were
// 10-30% slower than that, bench/NOTES.md "Warp lines adding"). Where the table is known to hold
// zeros (`zeroed`: an overwriting scatter after zero_view), nothing is loaded: 0 + sum is stored.
template <class T, class Acc>
__device__ __forceinline__ void add_slots(T* (&at)[kRounds], const int (&from)[kRounds], Acc* sums, bool zeroed) {
  T old[kRounds];
#pragma unroll
  for (int r = 0; r < kRounds; ++r) {
    old[r] = static_cast<T>(0.0f);
    if (at[r] == nullptr || zeroed) continue;
    if constexpr (std::is_same_v<T, Acc>) {
      ScatterSum::atomic_combine(at[r], sums[from[r]]);
      sums[from[r]] = ScatterSum::identity<Acc>();
      at[r] = nullptr;
    } else {
      old[r] = *at[r];
    }
  }
#pragma unroll
  for (int r = 0; r < kRounds; ++r) {
    if (at[r] == nullptr) continue;
    ScatterSum::combine(&old[r], sums[from[r]]);
    *at[r] = old[r];
    sums[from[r]] = ScatterSum::identity<Acc>();
  }
}

// The table offset of line `line` (its slot 0).
template <bool kDense>
__device__ __forceinline__ int64_t table_line(const IndexedLayout& layout, const WarpItems& g, int64_t line) {
  if constexpr (kDense) {
    return line * g.line_size;
  } else {
    int64_t base[kRowTensors];
    layout.rows.offsets(line, base, g.outer_dims);
    return base[2];
  }
}

// Adding: each slot the item reached is added to by its owner lane (add_slots), then its mark is
// cleared.
template <WarpSums kSums, bool kDense, class T, class Acc>
__device__ __forceinline__ void add_owned(const IndexedLayout& layout, const WarpItems& g, int64_t item,
                                          const int (&owner)[kRounds], Acc* sums, int* marks, T* table) {
  const int64_t line0 = item * g.per_item;
  T* at[kRounds];
#pragma unroll
  for (int r = 0; r < kRounds; ++r) {
    at[r] = nullptr;
    if (owner[r] < 0) continue;
    const int key = kSums == WarpSums::hashed ? marks[owner[r]] : owner[r];
    const int line = key / g.line_size, slot = key - line * g.line_size;
    at[r] = table + table_line<kDense>(layout, g, line0 + line) + int64_t(slot) * layout.table_dim_stride;
  }
  add_slots(at, owner, sums, g.zeroed);
  if constexpr (kSums == WarpSums::hashed) {
#pragma unroll
    for (int r = 0; r < kRounds; ++r)
      if (owner[r] >= 0) marks[owner[r]] = -1;
  } else {
    __syncwarp();
    for (int w = threadIdx.x % 32; w < kOwnedWords; w += 32) marks[w] = 0;
  }
  __syncwarp();  // the sums and marks are clear before the next item adds to them
}

// Adding an item of one line in several tiles (hashed): the owners of earlier tiles are not known,
// so the warp scans its hash and adds each key's sum to its slot of the line (add_slots), then
// empties the hash.
template <bool kDense, class T, class Acc>
__device__ __forceinline__ void add_hashed_line(const IndexedLayout& layout, const WarpItems& g, int64_t line,
                                                Acc* sums, int* keys, T* table) {
  T* const line_start = table + table_line<kDense>(layout, g, line);
  const int lane = threadIdx.x % 32;
  for (int s0 = 0; s0 < g.warp_slots; s0 += 32 * kRounds) {
    T* at[kRounds];
    int from[kRounds];
#pragma unroll
    for (int r = 0; r < kRounds; ++r) {
      from[r] = s0 + r * 32 + lane;
      const int key = from[r] < g.warp_slots ? keys[from[r]] : -1;  // (a line's key is its slot)
      at[r] = key < 0 ? nullptr : line_start + int64_t(key) * layout.table_dim_stride;
    }
    add_slots(at, from, sums, g.zeroed);
#pragma unroll
    for (int r = 0; r < kRounds; ++r)
      if (from[r] < g.warp_slots) keys[from[r]] = -1;
  }
  __syncwarp();  // the hash is empty before the next item adds to it
}

// Where an item's slot 0 sits in its warp's sums. A dense item's run of the table starts `shift`
// elements past a 16-byte boundary; its slot 0 is put `shift` sums past the (16-byte aligned) warp
// sums, so that the run's first whole chunk and its sums are both aligned (write_item).
template <int kVec, bool kDense, class T, class Acc>
__device__ __forceinline__ Acc* item_sums(const IndexedLayout& layout, const WarpItems& g, int64_t item, const T* table,
                                          Acc* warp_sums) {
  if constexpr (!kDense) {
    return warp_sums;
  } else {
    int64_t base[kRowTensors];
    layout.rows.offsets(item * g.per_item, base, g.outer_dims);
    return warp_sums + run_shift(table + base[2]);
  }
}

// Four blocks an SM (at most 64 registers; 4 x 36 KB of shared memory for items of up to 4 KB of sums;
// fewer for longer lines and for a hash of up to 1024 slots: 64 KB f32, 96 KB f64).
// Adding (not WarpSums::lines), kVec is 1 (unused).
template <int kVec, bool kDense, WarpSums kSums, class T, class Idx>
__global__ void __launch_bounds__(kThreads, 4)
    scatter_warp_lines_kernel(IndexedLayout layout, WarpItems g, const T* values, T* table, const Idx* index) {
  using Acc = acc_t<T>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];  // the sums' chunks are 16-byte accesses
  __shared__ Acc stage[kWarps][32];
  const int warp_in_block = threadIdx.x / 32, lane = threadIdx.x % 32;
  Acc* warp_sums = reinterpret_cast<Acc*>(shared_bytes) + warp_in_block * g.warp_slots;
  // Adding: the warp's marks after every warp's sums (ownership bits, or hash keys with -1 empty).
  const int mark_count = kSums == WarpSums::hashed ? g.warp_slots : kSums == WarpSums::owned_lines ? kOwnedWords : 0;
  int* marks =
      reinterpret_cast<int*>(reinterpret_cast<Acc*>(shared_bytes) + kWarps * g.warp_slots) + warp_in_block * mark_count;
  for (int s = lane; s < g.warp_slots; s += 32) warp_sums[s] = ScatterSum::identity<Acc>();
  for (int s = lane; s < mark_count; s += 32) marks[s] = kSums == WarpSums::hashed ? -1 : 0;
  __syncwarp();
  const int64_t first = int64_t(blockIdx.x) * kWarps + warp_in_block, step = int64_t(gridDim.x) * kWarps;
  // One tile in registers: the next item's loads are issued once the current item is summed, and
  // are in flight while it is written.
  WarpTile<Acc> tile;
  if (first < g.items) load_item<kDense>(layout, g, values, index, first, 0, tile);
  for (int64_t item = first; item < g.items; item += step) {
    Acc* sums = kSums == WarpSums::hashed ? warp_sums : item_sums<kVec, kDense>(layout, g, item, table, warp_sums);
    int owner[kRounds];
    for (int t = 0; t < g.tiles; ++t) {
      add_item<kSums>(tile, sums, stage[warp_in_block], marks, g.hash_bits, owner);
      if (t + 1 < g.tiles) {
        load_item<kDense>(layout, g, values, index, item, t + 1, tile);
      } else if (item + step < g.items) {
        load_item<kDense>(layout, g, values, index, item + step, 0, tile);
      }
    }
    if constexpr (kSums == WarpSums::lines) {
      write_item<kVec, kDense>(layout, g, item, sums, table);
    } else if constexpr (kSums == WarpSums::hashed) {
      if (g.tiles > 1) {
        add_hashed_line<kDense>(layout, g, item, sums, marks, table);  // (an item of one line)
      } else {
        add_owned<kSums, kDense>(layout, g, item, owner, sums, marks, table);
      }
    } else {
      add_owned<kSums, kDense>(layout, g, item, owner, sums, marks, table);
    }
  }
}

}  // namespace baracuda::detail::cuda

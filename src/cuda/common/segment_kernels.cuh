#pragma once
// The CUDA kernels of the segment family, compiled at select (NVRTC; cuda/segment.cpp launches them
// and describes the flow of each variant).
//
// Segmented (sorted ids, offsets, and the sort variant's sorted rows): the positions of the walk are
// cut into tiles of `tile_rows` (SegmentTiles), every tile the same work whatever the segments'
// lengths (a group of lanes a segment left the longest segment of a warp setting its time, and paid
// a segment's fixed cost for each short one). A group of lanes takes a tile, each lane a unit of the
// row (a 16-byte vector where the rows allow, else one element; with D = 1 over contiguous rows one
// thread takes the tile in 16-byte vectors of rows), loads its rows four or eight at a time and folds each
// into the segment holding it (SegmentCursor): a segment the tile holds whole is written out at its
// end; the part of one that began before the tile goes to the tile's partial slot 0, the part of one
// that goes on past it to slot 1. segment_combine_kernel then folds each segment that crossed a
// tile's end: its slot 1, then the following tiles' slot 0, in order. N x D reads, S x D writes and
// a few partials: deterministic, the same fold order on every run.
#include "common/segment.hpp"
#include "cuda/common/row_lanes.hpp"
#include "cuda/common/threads.hpp"
#include "cuda/common/vector.cuh"
#include "ops/reduce_problem.hpp"  // to_acc
#include "ops/segment_problem.hpp"

namespace baracuda::detail::cuda::segment {

// A unit of a row: kV consecutive elements (a 16-byte vector) or, with kV == 1, the column `u`
// through the columns' walk (any strides) of the view kSide.
template <int kSide, int kV, class T, class A>
__device__ __forceinline__ void load_unit(const SegmentProblem& p, const T* row, int64_t u, A (&a)[kV]) {
  if constexpr (kV > 1) {
    const Vec16<T> x = load16(row + u * kV);
#pragma unroll
    for (int k = 0; k < kV; ++k) a[k] = to_acc<A>(x.v[k]);
  } else {
    int64_t off[kSegmentColumns];
    p.columns.offsets(u, off);
    a[0] = to_acc<A>(row[off[kSide]]);
  }
}
template <int kSide, int kV, class T, class A>
__device__ __forceinline__ void store_unit(const SegmentProblem& p, T* row, int64_t u, const A (&a)[kV]) {
  if constexpr (kV > 1) {
    Vec16<T> y;
#pragma unroll
    for (int k = 0; k < kV; ++k) y.v[k] = from_acc<T>(a[k]);
    store16(row + u * kV, y);
  } else {
    int64_t off[kSegmentColumns];
    p.columns.offsets(u, off);
    row[off[kSide]] = from_acc<T>(a[0]);
  }
}

template <class T>
__device__ __forceinline__ T empty_of(const SegmentProblem& p) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(p.empty_integer);
  else
    return from_acc<T>(p.empty_value);
}

// Writes segment s's unit u: the folded value (a mean divided by its count) or, for an empty
// segment, the empty value; max / min also the row of each extreme (-1 where empty).
template <SegmentReduction R, int kV, class T, class Idx, class A>
__device__ __forceinline__ void write_segment(const SegmentProblem& p, int64_t s, int64_t u, const A (&acc)[kV],
                                              const int64_t (&at)[kV], int64_t count) {
  T* dst = static_cast<T*>(p.segment_out) + s * p.segment_stride;
  A value[kV];
#pragma unroll
  for (int j = 0; j < kV; ++j) {
    value[j] = acc[j];
    if constexpr (R == SegmentReduction::mean) value[j] = count ? value[j] / static_cast<A>(count) : value[j];
  }
  if (count > 0) {
    store_unit<kSegmentSide, kV>(p, dst, u, value);
  } else if constexpr (kV > 1) {
    Vec16<T> y;
#pragma unroll
    for (int j = 0; j < kV; ++j) y.v[j] = empty_of<T>(p);
    store16(dst + u * kV, y);
  } else {
    int64_t off[kSegmentColumns];
    p.columns.offsets(u, off);
    dst[off[kSegmentSide]] = empty_of<T>(p);
  }
  if constexpr (SegmentFold<R, A>::kExtreme) {
    if (Idx* indices = static_cast<Idx*>(p.indices)) {
#pragma unroll
      for (int j = 0; j < kV; ++j) {
        int64_t off[kSegmentColumns];
        p.columns.offsets(u * kV + j, off);
        indices[s * p.indices_stride + off[kIndices]] = static_cast<Idx>(count > 0 ? at[j] : -1);
      }
    }
  }
}

// The two partial slots of tile k for column c: (k * 2 + slot) * D + c.
__device__ __forceinline__ int64_t slot_of(const SegmentProblem& p, int64_t tile, int slot, int64_t column) {
  return (tile * 2 + slot) * p.length + column;
}

// One lane's walk of a tile for unit u: the region it is in, that region's fold so far, and what to
// do with it at its end (write it out, or keep it in a slot). Max / min keep where each extreme is
// as a position in the tile (q - t0, 32 bits: half the registers and the slots' bytes of a row),
// made a row (through the sort's order) only when written out.
template <SegmentReduction R, int kV, class T, class Idx>
struct SegmentCursor {
  using A = acc_t<T>;
  using Fold = SegmentFold<R, A>;
  const SegmentProblem& p;
  const SegmentTiles& tiles;
  int64_t tile, t0, t1, unit;
  A* partials;
  int32_t* partial_at;
  int64_t r = 0, b = 0, e = 0;
  A acc[kV];
  int32_t at[kV];

  __device__ __forceinline__ void enter(int64_t region) {
    r = region;
    b = tiles.begin(r);
    e = tiles.end(r);
#pragma unroll
    for (int j = 0; j < kV; ++j) acc[j] = A(0), at[j] = -1;
  }
  __device__ __forceinline__ bool in_segment() const { return r >= 0 && r < p.segments; }
  // Folds v, at position q of the tile.
  __device__ __forceinline__ void fold(int j, A v, int64_t q) { Fold::fold(acc[j], at[j], v, int32_t(q - t0)); }
  __device__ __forceinline__ void keep(int slot) {
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      const int64_t at_slot = slot_of(p, tile, slot, unit * kV + j);
      partials[at_slot] = acc[j];
      if constexpr (Fold::kExtreme) partial_at[at_slot] = at[j];
    }
  }
  // The region has ended inside the tile: out if the tile holds it whole, else its tail to slot 0.
  __device__ __forceinline__ void finish() {
    if (!in_segment()) return;
    if (b >= t0) {
      int64_t rows[kV];
#pragma unroll
      for (int j = 0; j < kV; ++j) rows[j] = Fold::kExtreme && at[j] >= 0 ? tiles.row(t0 + at[j]) : -1;
      write_segment<R, kV, T, Idx>(p, r, unit, acc, rows, e - b);
    } else {
      keep(0);
    }
  }
  // Folds the positions [q0, qend) of a batch: fold_range(q, stop) folds those in [q, stop), all of
  // the current region, and the regions that end inside the batch are finished on the way. The
  // batch's fold and a region's end are each written once here (inlined into each unrolled step of
  // the batch, the end's writes made the kernels many times larger, and kept out of line the
  // cursor lived in local memory: both ran slower than a group a segment).
  template <class F>
  __device__ __forceinline__ void walk(int64_t q0, int64_t qend, F&& fold_range) {
    int64_t q = q0;
    for (;;) {
      if (q >= e) {
        finish();
        enter(r + 1);
        continue;
      }
      const int64_t stop = min(e, qend);
      if (in_segment()) fold_range(q, stop);
      q = stop;
      if (q >= qend) return;
    }
  }
  // After the tile's last position: the region holding it goes on past the tile (a slot), or ends
  // with it and is finished, and so are the empty regions after it that the tile owns.
  __device__ __forceinline__ void close(bool last_tile) {
    for (;;) {
      if (e > t1) {
        if (in_segment()) keep(b >= t0 ? 1 : 0);
        return;
      }
      finish();
      if (r >= p.segments) return;
      enter(r + 1);
      if (b >= t1 && !last_tile) return;
    }
  }
};

// Rows of a tile loaded at a time, their loads issued back to back, and the blocks an SM the kernel
// is fitted to, by the element's size (measured, bench/NOTES.md "the tiled walk"): 4- and 8-byte
// types 8 rows (4 rows and 3 blocks made f32 slower); 16-bit types 4 rows and 3 blocks (8 rows made
// bf16 slower).
template <class T>
inline constexpr int kTileBatch = sizeof(T) == 2 ? 4 : 8;
template <class T>
inline constexpr int kTileMinBlocks = sizeof(T) == 2 ? 3 : 1;

// A group of `lanes` threads a tile and a chunk of `lanes` units of the row, a lane a unit (see the
// top of this file): rows wider than a block take several groups.
template <SegmentReduction R, int kV, class T, class Idx>
__global__ void __launch_bounds__(kThreads, kTileMinBlocks<T>)
    segment_tiles_kernel(SegmentProblem p, SegmentTiles tiles, int lanes, acc_t<T>* partials, int32_t* partial_at) {
  using A = acc_t<T>;
  constexpr int kBatch = kTileBatch<T>;
  using Load = std::conditional_t<(kV > 1), Vec16<T>, T>;  // held as loaded, converted as folded
  const T* data = static_cast<const T*>(p.row_in);
  const int64_t units = p.length / kV;
  const int64_t chunks = ceil_div(units, int64_t{lanes});
  for_each_row(tiles.count * chunks, lanes, [&](int64_t w, int lane) {
    const int64_t k = w / chunks, u = (w - k * chunks) * lanes + lane;
    const int64_t t0 = k * tiles.tile_rows, t1 = min(tiles.rows, t0 + tiles.tile_rows);
    if (u >= units) return;
    const int64_t first = tiles.first_region(t0);
    int64_t column = u * kV;
    if constexpr (kV == 1) {
      int64_t off[kSegmentColumns];
      p.columns.offsets(u, off);
      column = off[kRowSide];
    }
    SegmentCursor<R, kV, T, Idx> c{p, tiles, k, t0, t1, u, partials, partial_at};
    c.enter(first);
    for (int64_t q0 = t0; q0 < t1; q0 += kBatch) {
      Load x[kBatch];
      int64_t row[kBatch];
#pragma unroll
      for (int t = 0; t < kBatch; ++t) row[t] = q0 + t < t1 ? tiles.row(q0 + t) : -1;
#pragma unroll
      for (int t = 0; t < kBatch; ++t) {
        if (row[t] < 0) continue;
        const T* at_row = data + row[t] * p.row_stride + column;
        if constexpr (kV > 1)
          x[t] = load16(at_row);
        else
          x[t] = *at_row;
      }
      c.walk(q0, min(t1, q0 + kBatch), [&](int64_t q, int64_t stop) {
#pragma unroll
        for (int t = 0; t < kBatch; ++t) {
          if (q0 + t < q || q0 + t >= stop) continue;
          if constexpr (kV > 1) {
#pragma unroll
            for (int j = 0; j < kV; ++j) c.fold(j, to_acc<A>(x[t].v[j]), q0 + t);
          } else {
            c.fold(0, to_acc<A>(x[t]), q0 + t);
          }
        }
      });
    }
    c.close(k == tiles.count - 1);
  });
}

// D = 1 over contiguous, 16-byte aligned rows (SegmentProblem::packed_rows, no sort order): a thread
// a tile, in 16-byte vectors of rows (a vector that would pass the last row read element by element).
template <SegmentReduction R, class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    segment_tiles_packed_kernel(SegmentProblem p, SegmentTiles tiles, acc_t<T>* partials, int32_t* partial_at) {
  using A = acc_t<T>;
  constexpr int kE = Vec16<T>::kSize, kBatch = 4;
  const T* data = static_cast<const T*>(p.row_in);
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < tiles.count;
       k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t0 = k * tiles.tile_rows, t1 = min(tiles.rows, t0 + tiles.tile_rows);
    SegmentCursor<R, 1, T, Idx> c{p, tiles, k, t0, t1, 0, partials, partial_at};
    c.enter(tiles.first_region(t0));
    for (int64_t q0 = t0; q0 < t1; q0 += int64_t{kE} * kBatch) {
      Vec16<T> x[kBatch];
#pragma unroll
      for (int t = 0; t < kBatch; ++t) {
        const int64_t q = q0 + t * kE;
        if (q + kE <= p.rows) {
          x[t] = load16(data + q);
        } else {
#pragma unroll
          for (int j = 0; j < kE; ++j)
            if (q + j < p.rows) x[t].v[j] = data[q + j];
        }
      }
      c.walk(q0, min(t1, q0 + int64_t{kE} * kBatch), [&](int64_t q, int64_t stop) {
#pragma unroll
        for (int t = 0; t < kBatch; ++t) {
#pragma unroll
          for (int j = 0; j < kE; ++j) {
            const int64_t at_q = q0 + t * kE + j;
            if (at_q >= q && at_q < stop) c.fold(0, to_acc<A>(x[t].v[j]), at_q);
          }
        }
      });
    }
    c.close(k == tiles.count - 1);
  }
}

// Each segment that crossed the end of the tile it began in: that tile's slot 1, then slot 0 of each
// following tile it reaches, folded in order (a few tiles' loads in flight), then written out.
template <SegmentReduction R, int kV, class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    segment_combine_kernel(SegmentProblem p, SegmentTiles tiles, int lanes, const acc_t<T>* partials,
                           const int32_t* partial_at) {
  using A = acc_t<T>;
  using Fold = SegmentFold<R, A>;
  constexpr int kBatch = kV >= 8 ? 2 : 4;
  const int64_t units = p.length / kV, P = tiles.tile_rows;
  const int64_t chunks = ceil_div(units, int64_t{lanes});
  for_each_row(tiles.count * chunks, lanes, [&](int64_t w, int lane) {
    const int64_t k = w / chunks, u = (w - k * chunks) * lanes + lane;
    const int64_t t0 = k * P, t1 = min(tiles.rows, t0 + P);
    if (u >= units || t1 <= t0) return;
    const int64_t s = tiles.region_of(t1 - 1);
    if (s < 0 || s >= p.segments) return;
    const int64_t b = tiles.begin(s), e = tiles.end(s);
    if (b < t0 || e <= t1) return;
    const int64_t last = (e - 1) / P;
    A acc[kV];
    int64_t at[kV];
#pragma unroll
    for (int j = 0; j < kV; ++j) acc[j] = A(0), at[j] = -1;
    for (int64_t k0 = k; k0 <= last; k0 += kBatch) {
      A v[kBatch][kV];
      int64_t v_at[kBatch][kV];
#pragma unroll
      for (int t = 0; t < kBatch; ++t) {
        if (k0 + t > last) continue;
#pragma unroll
        for (int j = 0; j < kV; ++j) {
          const int64_t at_slot = slot_of(p, k0 + t, k0 + t == k ? 1 : 0, u * kV + j);
          v[t][j] = partials[at_slot];
          // A slot's position is its tile's; sums never read it.
          const int32_t in_tile = Fold::kExtreme ? partial_at[at_slot] : 0;
          v_at[t][j] = in_tile < 0 ? -1 : (k0 + t) * P + in_tile;
        }
      }
#pragma unroll
      for (int t = 0; t < kBatch; ++t) {
        if (k0 + t > last) continue;
#pragma unroll
        for (int j = 0; j < kV; ++j) Fold::combine(acc[j], at[j], v[t][j], v_at[t][j]);
      }
    }
#pragma unroll
    for (int j = 0; j < kV; ++j) at[j] = Fold::kExtreme && at[j] >= 0 ? tiles.row(at[j]) : -1;
    write_segment<R, kV, T, Idx>(p, s, u, acc, at, e - b);
  });
}

// Unsorted sum and mean with atomics: each element added into the f32 / f64 / int64 scratch [S, D],
// each row counted once into `counts`; then the finish kernel writes out (empty segments from the
// counts).
template <class A>
__device__ __forceinline__ void atomic_add_acc(A* p, A v) {
  if constexpr (std::is_integral_v<A>)
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  else
    atomicAdd(p, v);
}

// kV accumulators added at p (16-byte vector atomics of f32 on sm_90: a quarter of the atomic
// operations; scalar ones elsewhere).
template <int kV, class A>
__device__ __forceinline__ void atomic_add_unit(A* p, const A (&v)[kV]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr bool kVector = std::is_same_v<A, float> && kV % 4 == 0;
#else
  constexpr bool kVector = false;
#endif
  if constexpr (kVector) {
#pragma unroll
    for (int k = 0; k < kV; k += 4)
      atomicAdd(reinterpret_cast<float4*>(p + k), make_float4(v[k], v[k + 1], v[k + 2], v[k + 3]));
  } else {
#pragma unroll
    for (int k = 0; k < kV; ++k) atomic_add_acc(p + k, v[k]);
  }
}

// Rows handled by a group of lanes at a time in the atomic and backward kernels: their ids, then
// their loads, issued back to back (a row at a time left a lane a chain of two dependent loads).
inline constexpr int kRowBatch = 4;

// A group of lanes per kRowBatch rows: each row's id read once, its units added into scratch row s
// (dense [S, D] of accumulators; a vector unit lands on kV consecutive accumulators, 16-byte aligned
// as D % kV == 0), the row counted once.
template <int kV, class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    segment_atomic_kernel(SegmentProblem p, int lanes, acc_t<T>* scratch, unsigned long long* counts) {
  using A = acc_t<T>;
  const T* data = static_cast<const T*>(p.row_in);
  const Idx* ids = static_cast<const Idx*>(p.ids);
  const int64_t units = p.length / kV;
  for_each_row(ceil_div(p.rows, int64_t{kRowBatch}), lanes, [&](int64_t g, int lane) {
    int64_t seg[kRowBatch];
#pragma unroll
    for (int t = 0; t < kRowBatch; ++t) {
      const int64_t i = g * kRowBatch + t;
      const int64_t s = i < p.rows ? static_cast<int64_t>(ids[i * p.ids_stride]) : -1;
      seg[t] = s >= 0 && s < p.segments ? s : -1;
    }
    for (int64_t u = lane; u < units; u += lanes) {
      A x[kRowBatch][kV];
#pragma unroll
      for (int t = 0; t < kRowBatch; ++t)
        if (seg[t] >= 0) load_unit<kRowSide, kV>(p, data + (g * kRowBatch + t) * p.row_stride, u, x[t]);
#pragma unroll
      for (int t = 0; t < kRowBatch; ++t)
        if (seg[t] >= 0) atomic_add_unit<kV>(scratch + seg[t] * p.length + u * kV, x[t]);
    }
    if (lane == 0 && counts) {
#pragma unroll
      for (int t = 0; t < kRowBatch; ++t)
        if (seg[t] >= 0) atomicAdd(counts + seg[t], 1ull);
    }
  });
}

template <SegmentReduction R, class T>
__global__ void __launch_bounds__(kThreads)
    segment_finish_kernel(SegmentProblem p, const acc_t<T>* scratch, const unsigned long long* counts) {
  using A = acc_t<T>;
  T* out = static_cast<T*>(p.segment_out);
  const T empty = empty_of<T>(p);
  const int64_t total = p.segments * p.length;
  for (int64_t w = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; w < total; w += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = w / p.length, c = w - s * p.length;
    int64_t off[kSegmentColumns];
    p.columns.offsets(c, off);
    const auto n = counts ? static_cast<int64_t>(counts[s]) : int64_t{1};  // no counts: empty is +0
    A v = scratch[w];
    if constexpr (R == SegmentReduction::mean) v = n ? v / static_cast<A>(n) : v;
    out[s * p.segment_stride + off[kSegmentSide]] = n ? from_acc<T>(v) : empty;
  }
}

// The row count of segment s that a mean's gradient divides by: the ids forms' counts (counted
// first, segment_counts_kernel), or the offsets' bounds.
template <class Idx>
__device__ __forceinline__ int64_t mean_count(const SegmentRows<Idx>& rows, const unsigned long long* counts,
                                              int64_t s) {
  if (counts) return static_cast<int64_t>(counts[s]);
  int64_t b = 0, e = 0;
  rows.bounds(s, b, e);
  return e - b;
}

// Backward: every row of ddata from its row's segment (a gather; deterministic): a group of lanes
// per kRowBatch rows, each row's segment found once, 16-byte units where both sides allow.
template <SegmentReduction R, int kV, class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    segment_backward_kernel(SegmentProblem p, SegmentRows<Idx> rows, int lanes, const unsigned long long* counts) {
  using A = acc_t<T>;
  const T* dout = static_cast<const T*>(p.segment_in);
  T* ddata = static_cast<T*>(p.row_out);
  const Idx* indices = static_cast<const Idx*>(p.indices);
  const int64_t units = p.length / kV;
  for_each_row(ceil_div(p.rows, int64_t{kRowBatch}), lanes, [&](int64_t g, int lane) {
    int64_t seg[kRowBatch];
    A count[kRowBatch];  // a mean's divisor
#pragma unroll
    for (int t = 0; t < kRowBatch; ++t) seg[t] = g * kRowBatch + t < p.rows ? rows.segment_of(g * kRowBatch + t) : -1;
#pragma unroll
    for (int t = 0; t < kRowBatch; ++t) {
      count[t] = A(1);
      if constexpr (R == SegmentReduction::mean)
        if (seg[t] >= 0) count[t] = static_cast<A>(mean_count(rows, counts, seg[t]));
    }
    for (int64_t u = lane; u < units; u += lanes) {
      A gr[kRowBatch][kV];
#pragma unroll
      for (int t = 0; t < kRowBatch; ++t) {
        if (seg[t] >= 0) {
          load_unit<kSegmentSide, kV>(p, dout + seg[t] * p.segment_stride, u, gr[t]);
        } else {
#pragma unroll
          for (int k = 0; k < kV; ++k) gr[t][k] = A(0);
        }
      }
#pragma unroll
      for (int t = 0; t < kRowBatch; ++t) {
        const int64_t i = g * kRowBatch + t;
        if (i >= p.rows) break;
#pragma unroll
        for (int k = 0; k < kV; ++k) {
          if constexpr (R == SegmentReduction::mean) gr[t][k] /= count[t];
          if constexpr (R == SegmentReduction::max || R == SegmentReduction::min) {
            if (seg[t] >= 0) {
              int64_t off[kSegmentColumns];
              p.columns.offsets(u * kV + k, off);
              if (static_cast<int64_t>(indices[seg[t] * p.indices_stride + off[kIndices]]) != i) gr[t][k] = A(0);
            }
          }
        }
        store_unit<kRowSide, kV>(p, ddata + i * p.row_stride, u, gr[t]);
      }
    }
  });
}

// Backward with D = 1 over contiguous rows (SegmentProblem::packed_rows): a thread takes a 16-byte
// vector of consecutive rows, their ids and then their gradients loaded back to back (one row a
// thread would leave each a chain of two dependent loads), one 16-byte store.
template <SegmentReduction R, class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    segment_backward_rows_kernel(SegmentProblem p, SegmentRows<Idx> rows, const unsigned long long* counts) {
  using A = acc_t<T>;
  constexpr int kV = Vec16<T>::kSize;
  const T* dout = static_cast<const T*>(p.segment_in);
  T* ddata = static_cast<T*>(p.row_out);
  const Idx* indices = static_cast<const Idx*>(p.indices);
  const int64_t vectors = (p.rows + kV - 1) / kV;
  for (int64_t v = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; v < vectors; v += int64_t(gridDim.x) * blockDim.x) {
    int64_t seg[kV];
#pragma unroll
    for (int k = 0; k < kV; ++k) seg[k] = v * kV + k < p.rows ? rows.segment_of(v * kV + k) : -1;
    Vec16<T> y;
#pragma unroll
    for (int k = 0; k < kV; ++k) {
      const int64_t s = seg[k];
      A g = s >= 0 ? to_acc<A>(dout[s * p.segment_stride]) : A(0);
      if constexpr (R == SegmentReduction::mean) {
        if (s >= 0) g /= static_cast<A>(mean_count(rows, counts, s));
      }
      if constexpr (R == SegmentReduction::max || R == SegmentReduction::min)
        if (s >= 0 && static_cast<int64_t>(indices[s * p.indices_stride]) != v * kV + k) g = A(0);
      y.v[k] = from_acc<T>(g);
    }
    if ((v + 1) * kV <= p.rows) {
      store16(ddata + v * kV, y);
    } else {
#pragma unroll
      for (int k = 0; k < kV; ++k)
        if (v * kV + k < p.rows) ddata[v * kV + k] = y.v[k];
    }
  }
}

// Bad ids and offsets (SegmentProblem::counted): outside the bound, or below their predecessor.
template <class Idx>
__global__ void __launch_bounds__(kThreads)
    segment_count_bad_kernel(const Idx* v, int64_t n, int64_t stride, int64_t bound, bool sorted,
                             unsigned long long* counter) {
  unsigned long long bad = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    bad += bad_index_weight(v[i * stride], i > 0 ? int64_t(v[(i - 1) * stride]) : 0, i > 0, bound, sorted);
  for (int o = 16; o > 0; o /= 2) bad += __shfl_down_sync(0xffffffffu, bad, o);
  if ((threadIdx.x & 31) == 0 && bad) atomicAdd(counter, bad);
}

// The sort variant's (segment key, row) pairs of the unsorted ids, for the radix sort.
template <class Idx, class V>
__global__ void __launch_bounds__(kThreads) segment_keys_kernel(SegmentProblem p, uint32_t* keys, V* rows) {
  const Idx* ids = static_cast<const Idx*>(p.ids);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < p.rows; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = static_cast<int64_t>(ids[i * p.ids_stride]);
    keys[i] = static_cast<uint32_t>(s >= 0 && s < p.segments ? s : p.segments);  // bad ids sort last
    rows[i] = static_cast<V>(i);
  }
}

// The segments' starts (SegmentTiles): offsets clamped into [0, N] (the host then takes their
// running maximum), or for ids lower_bound(s), one thread a search (a binary search's answers are
// nondecreasing in s over any ids, sorted or not).
template <class K>
__global__ void __launch_bounds__(kThreads) segment_starts_kernel(SegmentRows<K> rows, int64_t* starts) {
  for (int64_t s = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; s <= rows.segments;
       s += int64_t(gridDim.x) * blockDim.x)
    starts[s] = rows.offsets ? rows.offset(s) : rows.lower_bound(s);
}

// The mean's row count of each segment of the ids forms, for its backward.
template <class Idx>
__global__ void __launch_bounds__(kThreads) segment_counts_kernel(SegmentProblem p, unsigned long long* counts) {
  const Idx* ids = static_cast<const Idx*>(p.ids);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < p.rows; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = static_cast<int64_t>(ids[i * p.ids_stride]);
    if (s >= 0 && s < p.segments) atomicAdd(counts + s, 1ull);  // integers: the same sums in any order
  }
}

}  // namespace baracuda::detail::cuda::segment

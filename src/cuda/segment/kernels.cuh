#pragma once
// The CUDA kernels of the segment family (see segment.cu for the flow of each variant).
//
// Segmented (sorted ids, offsets, and the sort variant's sorted rows): a group of `lanes` threads per
// segment, each lane owning units of the row (16-byte vectors where the rows allow, else single
// elements), folds the segment's rows in row order and writes its output once: N x D reads, S x D
// writes, and the ids read by the bounds' searches (cached: neighbouring groups search neighbouring
// ids). A segment longer than a piece (piece_rows, chosen at select from D) would leave one group
// walking it alone: the pieces kernel first folds every piece of such segments into two partial
// slots per piece (slot 0: the long segment that began before the piece, slot 1: the one that
// begins in it and goes on past it; at most one of each, as segments are disjoint ranges), and the
// segment's group combines its pieces' partials in piece order. Deterministic: the same fold order
// on every run.
#include "common/segment.hpp"
#include "cuda/common/launch.cuh"
#include "cuda/common/row_walk.cuh"
#include "cuda/common/vector.cuh"
#include "ops/reduce_problem.hpp"  // to_acc
#include "ops/segment_problem.hpp"

namespace baracuda::detail::cuda {

// A unit of a row: kV consecutive elements (a 16-byte vector) or, with kV == 1, the column `u`
// through the columns' walk (any strides).
template <int kV, class T, class A>
__device__ __forceinline__ void load_unit(const SegmentProblem& p, const T* row, int64_t u, A (&a)[kV]) {
  if constexpr (kV > 1) {
    const Vec16<T> x = load16(row + u * kV);
#pragma unroll
    for (int k = 0; k < kV; ++k) a[k] = to_acc<A>(x.v[k]);
  } else {
    int64_t off[kSegmentColumns];
    p.columns.offsets(u, off);
    a[0] = to_acc<A>(row[off[kRowSide]]);
  }
}
template <int kV, class T, class A>
__device__ __forceinline__ void store_unit(const SegmentProblem& p, T* row, int64_t u, const A (&a)[kV]) {
  if constexpr (kV > 1) {
    Vec16<T> y;
#pragma unroll
    for (int k = 0; k < kV; ++k) y.v[k] = from_acc<T>(a[k]);
    store16(row + u * kV, y);
  } else {
    int64_t off[kSegmentColumns];
    p.columns.offsets(u, off);
    row[off[kSegmentSide]] = from_acc<T>(a[0]);
  }
}

template <class T>
__device__ __forceinline__ T empty_of(const SegmentProblem& p) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(p.empty_integer);
  else
    return from_acc<T>(p.empty_value);
}

// Folds positions [b, e) of segment s for unit u into (acc, at); returns the rows folded.
template <SegmentReduction R, int kV, class T, class A, class K>
__device__ __forceinline__ int64_t fold_rows(const SegmentProblem& p, const SegmentRows<K>& rows, int64_t s, int64_t b,
                                             int64_t e, int64_t u, A (&acc)[kV], int64_t (&at)[kV]) {
  using Fold = SegmentFold<R, A>;
  const T* data = static_cast<const T*>(p.row_in);
  int64_t count = 0;
  for (int64_t q = b; q < e; ++q) {
    if (!rows.holds(q, s)) continue;
    const int64_t i = rows.row(q);
    A x[kV];
    load_unit<kV>(p, data + i * p.row_stride, u, x);
#pragma unroll
    for (int k = 0; k < kV; ++k) Fold::fold(acc[k], at[k], x[k], i);
    ++count;
  }
  return count;
}

// The two partial slots of piece k for unit u: (piece * 2 + slot) * D + column.
template <class A>
__device__ __forceinline__ int64_t slot_of(const SegmentProblem& p, int64_t piece, int slot, int64_t column) {
  return (piece * 2 + slot) * p.length + column;
}

template <SegmentReduction R, int kV, class T, class K>
__global__ void __launch_bounds__(kThreads) segment_pieces_kernel(SegmentProblem p, SegmentRows<K> rows, int64_t pieces,
                                                                  int lanes, acc_t<T>* partials, int64_t* partial_at) {
  using A = acc_t<T>;
  const int64_t units = p.length / kV, P = p.piece_rows;
  for_each_row(pieces, lanes, [&](int64_t k, int lane) {
    const int64_t start = k * P, end = min(p.rows, start + P);
    for (int slot = 0; slot < 2; ++slot) {
      // Slot 0: the segment holding the piece's first position, begun before it; slot 1: the one
      // holding its last position, begun inside it. Each only when long.
      const int64_t q = slot == 0 ? start : end - 1;
      const int64_t s = rows.segment_of(q);
      if (s < 0) continue;
      int64_t b, e;
      rows.bounds(s, b, e);
      if (e - b <= P || q < b || q >= e || (slot == 0) != (b < start)) continue;
      if (slot == 1 && e <= end) continue;
      for (int64_t u = lane; u < units; u += lanes) {
        A acc[kV];
        int64_t at[kV];
#pragma unroll
        for (int j = 0; j < kV; ++j) acc[j] = A(0), at[j] = -1;
        fold_rows<R, kV, T>(p, rows, s, max(b, start), min(e, end), u, acc, at);
#pragma unroll
        for (int j = 0; j < kV; ++j) {
          partials[slot_of<A>(p, k, slot, u * kV + j)] = acc[j];
          if (partial_at) partial_at[slot_of<A>(p, k, slot, u * kV + j)] = at[j];
        }
      }
    }
  });
}

template <SegmentReduction R, int kV, class T, class Idx, class K>
__global__ void __launch_bounds__(kThreads) segment_kernel(SegmentProblem p, SegmentRows<K> rows, int lanes,
                                                           const acc_t<T>* partials, const int64_t* partial_at) {
  using A = acc_t<T>;
  using Fold = SegmentFold<R, A>;
  const int64_t units = p.length / kV, P = p.piece_rows;
  T* out = static_cast<T*>(p.segment_out);
  Idx* indices = static_cast<Idx*>(p.indices);
  const T empty = empty_of<T>(p);
  for_each_row(p.segments, lanes, [&](int64_t s, int lane) {
    int64_t b, e;
    rows.bounds(s, b, e);
    const bool split = P > 0 && e - b > P;
    for (int64_t u = lane; u < units; u += lanes) {
      A acc[kV];
      int64_t at[kV];
#pragma unroll
      for (int j = 0; j < kV; ++j) acc[j] = A(0), at[j] = -1;
      int64_t count = e - b;
      if (!split) {
        count = fold_rows<R, kV, T>(p, rows, s, b, e, u, acc, at);
      } else {
        const int64_t first = b / P, last = (e - 1) / P;
        for (int64_t k = first; k <= last; ++k) {
          const int slot = k == first ? 1 : 0;
#pragma unroll
          for (int j = 0; j < kV; ++j) {
            const int64_t at_slot = slot_of<A>(p, k, slot, u * kV + j);
            Fold::combine(acc[j], at[j], partials[at_slot], partial_at ? partial_at[at_slot] : k * P);
          }
        }
      }
      A value[kV];
#pragma unroll
      for (int j = 0; j < kV; ++j) {
        value[j] = acc[j];
        if constexpr (R == SegmentReduction::mean) value[j] = count ? value[j] / static_cast<A>(count) : value[j];
      }
      T* dst = out + s * p.segment_stride;
      if (count > 0) {
        store_unit<kV>(p, dst, u, value);
      } else if constexpr (kV > 1) {
        Vec16<T> y;
#pragma unroll
        for (int j = 0; j < kV; ++j) y.v[j] = empty;
        store16(dst + u * kV, y);
      } else {
        int64_t off[kSegmentColumns];
        p.columns.offsets(u, off);
        dst[off[kSegmentSide]] = empty;
      }
      if (indices) {
#pragma unroll
        for (int j = 0; j < kV; ++j) {
          int64_t off[kSegmentColumns];
          p.columns.offsets(u * kV + j, off);
          indices[s * p.indices_stride + off[kIndices]] = static_cast<Idx>(count > 0 ? at[j] : -1);
        }
      }
    }
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

template <class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    segment_atomic_kernel(SegmentProblem p, acc_t<T>* scratch, unsigned long long* counts) {
  using A = acc_t<T>;
  const T* data = static_cast<const T*>(p.row_in);
  const Idx* ids = static_cast<const Idx*>(p.ids);
  const int64_t total = p.rows * p.length;
  for (int64_t w = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; w < total; w += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = w / p.length, c = w - i * p.length;
    const int64_t s = static_cast<int64_t>(ids[i * p.ids_stride]);
    if (s < 0 || s >= p.segments) continue;
    int64_t off[kSegmentColumns];
    p.columns.offsets(c, off);
    atomic_add_acc(scratch + s * p.length + c, to_acc<A>(data[i * p.row_stride + off[kRowSide]]));
    if (c == 0) atomicAdd(counts + s, 1ull);
  }
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
    const auto n = static_cast<int64_t>(counts[s]);
    A v = scratch[w];
    if constexpr (R == SegmentReduction::mean) v = n ? v / static_cast<A>(n) : v;
    out[s * p.segment_stride + off[kSegmentSide]] = n ? from_acc<T>(v) : empty;
  }
}

// Backward: every element of ddata from its row's segment (a gather; deterministic).
template <SegmentReduction R, class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    segment_backward_kernel(SegmentProblem p, SegmentRows<Idx> rows, const unsigned long long* counts) {
  using A = acc_t<T>;
  const T* dout = static_cast<const T*>(p.segment_in);
  T* ddata = static_cast<T*>(p.row_out);
  const Idx* indices = static_cast<const Idx*>(p.indices);
  const int64_t total = p.rows * p.length;
  for (int64_t w = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; w < total; w += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = w / p.length, c = w - i * p.length;
    int64_t off[kSegmentColumns];
    p.columns.offsets(c, off);
    const int64_t s = rows.segment_of(i);
    A g = A(0);
    if (s >= 0) {
      g = to_acc<A>(dout[s * p.segment_stride + off[kSegmentSide]]);
      if constexpr (R == SegmentReduction::mean) {
        int64_t b = 0, e = 0;
        if (!counts) rows.bounds(s, b, e);
        g /= static_cast<A>(counts ? static_cast<int64_t>(counts[s]) : e - b);
      }
      if constexpr (R == SegmentReduction::max || R == SegmentReduction::min)
        if (static_cast<int64_t>(indices[s * p.indices_stride + off[kIndices]]) != i) g = A(0);
    }
    ddata[i * p.row_stride + off[kRowSide]] = from_acc<T>(g);
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

}  // namespace baracuda::detail::cuda

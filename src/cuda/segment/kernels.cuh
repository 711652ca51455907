#pragma once
// The CUDA kernels of the segment family (see launch.cuh for the flow of each variant).
//
// Segmented (sorted ids, offsets, and the sort variant's sorted rows): a group of `lanes` threads per
// segment, each lane owning units of the row (16-byte vectors where the rows allow, else single
// elements), folds the segment's rows in row order and writes its output once: N x D reads, S x D
// writes, and for ids the segments' starts, searched once before (segment_starts_kernel in
// launch.cuh). A segment longer than a piece (piece_rows, chosen at select from D) would leave one
// group walking it alone: the pieces kernel first folds every piece of such segments into two
// partial slots per piece (slot 0: the long segment that began before the piece, slot 1: the one
// that begins in it and goes on past it; at most one of each, as segments are disjoint ranges), and
// segment_split_kernel combines each such segment's partials in piece order. Deterministic: the
// same fold order on every run.
#include "common/segment.hpp"
#include "cuda/common/launch.cuh"
#include "cuda/common/row_walk.cuh"
#include "cuda/common/vector.cuh"
#include "ops/reduce_problem.hpp"  // to_acc
#include "ops/segment_problem.hpp"

namespace baracuda::detail::cuda {

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

// Folds positions [b, e) of segment s for unit u into (acc, at); returns the rows folded. The rows
// go kFoldBatch at a time, their loads issued back to back (a lane walks a segment alone: one load
// in flight at a time would leave it bound by latency).
inline constexpr int kFoldBatch = 4;

// D = 1 over contiguous rows (SegmentProblem::packed_rows): 16-byte vectors of consecutive rows,
// the vectors that straddle the segment's ends read whole and masked (a vector that would pass the
// last row is read element by element).
template <SegmentReduction R, class T, class A, class K>
__device__ __forceinline__ int64_t fold_packed_rows(const SegmentProblem& p, const SegmentRows<K>& rows, int64_t s,
                                                    int64_t b, int64_t e, A& acc, int64_t& at) {
  using Fold = SegmentFold<R, A>;
  constexpr int kV = Vec16<T>::kSize;
  const T* data = static_cast<const T*>(p.row_in);
  int64_t count = 0;
  for (int64_t q0 = b / kV * kV; q0 < e; q0 += int64_t{kV} * kFoldBatch) {
    Vec16<T> x[kFoldBatch];
#pragma unroll
    for (int t = 0; t < kFoldBatch; ++t) {
      const int64_t q = q0 + t * kV;
      if (q + kV <= p.rows) {
        x[t] = load16(data + q);
      } else {
#pragma unroll
        for (int k = 0; k < kV; ++k)
          if (q + k < p.rows) x[t].v[k] = data[q + k];
      }
    }
#pragma unroll
    for (int t = 0; t < kFoldBatch; ++t) {
#pragma unroll
      for (int k = 0; k < kV; ++k) {
        const int64_t q = q0 + t * kV + k;
        if (q < b || q >= e || !rows.holds(q, s)) continue;
        Fold::fold(acc, at, to_acc<A>(x[t].v[k]), q);
        ++count;
      }
    }
  }
  return count;
}

template <SegmentReduction R, int kV, class T, class A, class K>
__device__ __forceinline__ int64_t fold_rows(const SegmentProblem& p, const SegmentRows<K>& rows, int64_t s, int64_t b,
                                             int64_t e, int64_t u, A (&acc)[kV], int64_t (&at)[kV]) {
  using Fold = SegmentFold<R, A>;
  if constexpr (kV == 1)
    if (p.packed_rows && !rows.order) return fold_packed_rows<R, T>(p, rows, s, b, e, acc[0], at[0]);
  const T* data = static_cast<const T*>(p.row_in);
  int64_t count = 0;
  for (int64_t q0 = b; q0 < e; q0 += kFoldBatch) {
    // The batch held as loaded (16-byte vectors), converted as it is folded: a 16-bit batch in
    // f32 would take twice the registers.
    std::conditional_t<(kV > 1), Vec16<T>, T> x[kFoldBatch];
    int64_t row[kFoldBatch];
#pragma unroll
    for (int t = 0; t < kFoldBatch; ++t) {
      const int64_t q = q0 + t;
      row[t] = q < e && rows.holds(q, s) ? rows.row(q) : -1;
      if (row[t] < 0) continue;
      const T* at_row = data + row[t] * p.row_stride;
      if constexpr (kV > 1) {
        x[t] = load16(at_row + u * kV);
      } else {
        int64_t off[kSegmentColumns];
        p.columns.offsets(u, off);
        x[t] = at_row[off[kRowSide]];
      }
    }
#pragma unroll
    for (int t = 0; t < kFoldBatch; ++t) {
      if (row[t] < 0) continue;
      if constexpr (kV > 1) {
#pragma unroll
        for (int k = 0; k < kV; ++k) Fold::fold(acc[k], at[k], to_acc<A>(x[t].v[k]), row[t]);
      } else {
        Fold::fold(acc[0], at[0], to_acc<A>(x[t]), row[t]);
      }
      ++count;
    }
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
          if (SegmentFold<R, A>::kExtreme) partial_at[slot_of<A>(p, k, slot, u * kV + j)] = at[j];
        }
      }
    }
  });
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

// Every segment no longer than a piece: its rows folded in order, written once. The longer ones
// are segment_split_kernel's.
template <SegmentReduction R, int kV, class T, class Idx, class K>
__global__ void __launch_bounds__(kThreads, 3) segment_kernel(SegmentProblem p, SegmentRows<K> rows, int lanes) {
  using A = acc_t<T>;
  const int64_t units = p.length / kV, P = p.piece_rows;
  for_each_row(p.segments, lanes, [&](int64_t s, int lane) {
    int64_t b, e;
    rows.bounds(s, b, e);
    if (P > 0 && e - b > P) return;
    for (int64_t u = lane; u < units; u += lanes) {
      A acc[kV];
      int64_t at[kV];
#pragma unroll
      for (int j = 0; j < kV; ++j) acc[j] = A(0), at[j] = -1;
      const int64_t count = fold_rows<R, kV, T>(p, rows, s, b, e, u, acc, at);
      write_segment<R, kV, T, Idx>(p, s, u, acc, at, count);
    }
  });
}

// Every segment longer than a piece, found from the piece it begins in (the one holding that
// piece's last position): its pieces' partials combined in piece order, a few pieces' loads in
// flight (as many as keep the batch at 16 accumulators).
template <SegmentReduction R, int kV, class T, class Idx, class K>
__global__ void __launch_bounds__(kThreads)
    segment_split_kernel(SegmentProblem p, SegmentRows<K> rows, int64_t pieces, int lanes, const acc_t<T>* partials,
                         const int64_t* partial_at) {
  using A = acc_t<T>;
  using Fold = SegmentFold<R, A>;
  constexpr int kBatch = kV >= 8 ? 2 : kFoldBatch;
  const int64_t units = p.length / kV, P = p.piece_rows;
  for_each_row(pieces, lanes, [&](int64_t piece, int lane) {
    const int64_t start = piece * P, end = min(p.rows, start + P);
    const int64_t s = rows.segment_of(end - 1);
    if (s < 0) return;
    int64_t b, e;
    rows.bounds(s, b, e);
    if (e - b <= P || b < start || b >= end) return;
    const int64_t first = piece, last = (e - 1) / P;
    for (int64_t u = lane; u < units; u += lanes) {
      A acc[kV];
      int64_t at[kV];
#pragma unroll
      for (int j = 0; j < kV; ++j) acc[j] = A(0), at[j] = -1;
      for (int64_t k0 = first; k0 <= last; k0 += kBatch) {
        A v[kBatch][kV];
        int64_t v_at[kBatch][kV];
#pragma unroll
        for (int t = 0; t < kBatch; ++t) {
          const int64_t k = k0 + t;
          if (k > last) continue;
#pragma unroll
          for (int j = 0; j < kV; ++j) {
            const int64_t at_slot = slot_of<A>(p, k, k == first ? 1 : 0, u * kV + j);
            v[t][j] = partials[at_slot];
            v_at[t][j] = Fold::kExtreme ? partial_at[at_slot] : k * P;  // sums never read it
          }
        }
#pragma unroll
        for (int t = 0; t < kBatch; ++t) {
          if (k0 + t > last) continue;
#pragma unroll
          for (int j = 0; j < kV; ++j) Fold::combine(acc[j], at[j], v[t][j], v_at[t][j]);
        }
      }
      write_segment<R, kV, T, Idx>(p, s, u, acc, at, e - b);
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

// A group of lanes per row: the row's id read once, its units added into scratch row s (dense [S, D]
// of accumulators; a vector unit lands on kV consecutive accumulators, 16-byte aligned as D % kV == 0),
// the row counted once.
template <int kV, class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    segment_atomic_kernel(SegmentProblem p, int lanes, acc_t<T>* scratch, unsigned long long* counts) {
  using A = acc_t<T>;
  const T* data = static_cast<const T*>(p.row_in);
  const Idx* ids = static_cast<const Idx*>(p.ids);
  const int64_t units = p.length / kV;
  for_each_row(p.rows, lanes, [&](int64_t i, int lane) {
    const int64_t s = static_cast<int64_t>(ids[i * p.ids_stride]);
    if (s < 0 || s >= p.segments) return;
    for (int64_t u = lane; u < units; u += lanes) {
      A x[kV];
      load_unit<kRowSide, kV>(p, data + i * p.row_stride, u, x);
      atomic_add_unit<kV>(scratch + s * p.length + u * kV, x);
    }
    if (lane == 0 && counts) atomicAdd(counts + s, 1ull);
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
// per row, the row's segment found once, 16-byte units where both sides allow.
template <SegmentReduction R, int kV, class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    segment_backward_kernel(SegmentProblem p, SegmentRows<Idx> rows, int lanes, const unsigned long long* counts) {
  using A = acc_t<T>;
  const T* dout = static_cast<const T*>(p.segment_in);
  T* ddata = static_cast<T*>(p.row_out);
  const Idx* indices = static_cast<const Idx*>(p.indices);
  const int64_t units = p.length / kV;
  for_each_row(p.rows, lanes, [&](int64_t i, int lane) {
    const int64_t s = rows.segment_of(i);
    const int64_t count = R == SegmentReduction::mean && s >= 0 ? mean_count(rows, counts, s) : 1;
    for (int64_t u = lane; u < units; u += lanes) {
      A g[kV];
      if (s >= 0) {
        load_unit<kSegmentSide, kV>(p, dout + s * p.segment_stride, u, g);
#pragma unroll
        for (int k = 0; k < kV; ++k) {
          if constexpr (R == SegmentReduction::mean) g[k] /= static_cast<A>(count);
          if constexpr (R == SegmentReduction::max || R == SegmentReduction::min) {
            int64_t off[kSegmentColumns];
            p.columns.offsets(u * kV + k, off);
            if (static_cast<int64_t>(indices[s * p.indices_stride + off[kIndices]]) != i) g[k] = A(0);
          }
        }
      } else {
#pragma unroll
        for (int k = 0; k < kV; ++k) g[k] = A(0);
      }
      store_unit<kRowSide, kV>(p, ddata + i * p.row_stride, u, g);
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

}  // namespace baracuda::detail::cuda

#pragma once
// Deterministic sums of runs of equal sorted keys: the sorted scatter-add's second half, and what a
// segment reduction over sorted keys reuses. The rows, sorted by key (stable: a run keeps the rows'
// original order), are cut into windows; each window sums its runs of equal keys in sorted order in
// the accumulator type, adding complete runs straight into the table and leaving runs that cross a
// window edge as partial sums; a fix-up pass sums each crossing run's partials in window order. No
// atomics, so every run gives the same bits.
#include <algorithm>

#include "common/indexing.hpp"
#include "cuda/common/check.cuh"
#include "cuda/common/row_walk.cuh"
#include "cuda/common/scatter_ops.cuh"
#include "cuda/common/vector.cuh"
#include "ops/indexing_problem.hpp"

namespace baracuda::detail::cuda {

inline constexpr int64_t kRowsPerWindow = 32;      // rows mode: one block sums a window of rows
inline constexpr int64_t kElementsPerWindow = 32;  // element mode: one thread sums a window
// The window for rows of `row_length` elements.
inline int64_t sorted_window(int64_t row_length) { return row_length > 1 ? kRowsPerWindow : kElementsPerWindow; }

// Calls f(s, e, key, from_previous, into_next) for each run [s, e) of equal keys in the window
// [start, end) of the sorted keys, stopping at the sentinel (invalid rows sort last). A run that
// continues from the previous window or into the next one is a partial sum of its destination.
template <class F>
__device__ __forceinline__ void for_each_run(const uint64_t* keys, int64_t start, int64_t end, int64_t rows,
                                             uint64_t sentinel, F&& f) {
  int64_t s = start;
  while (s < end && keys[s] != sentinel) {
    const uint64_t key = keys[s];
    int64_t e = s + 1;
    while (e < end && keys[e] == key) ++e;
    f(s, e, key, s == start && start > 0 && keys[start - 1] == key, e == end && end < rows && keys[end] == key);
    s = e;
  }
}

// Sums the runs of window w (see the file comment). `lane` of `group` threads share the columns.
template <class T>
__device__ void sum_window(const IndexedLayout& layout, const T* values, T* table, const uint64_t* keys,
                           const int64_t* offsets, acc_t<T>* partials, int64_t window, int64_t w, int lane, int group) {
  using Acc = acc_t<T>;
  const int64_t rows = layout.row_count, length = layout.row_length;
  const int64_t start = w * window, end = min(start + window, rows);
  const uint64_t sentinel = static_cast<uint64_t>(layout.sentinel_key);
  for_each_run(keys, start, end, rows, sentinel,
               [&](int64_t s, int64_t e, uint64_t key, bool from_previous, bool into_next) {
                 for (int64_t c = lane; c < length; c += group) {
                   int64_t dv, dt;
                   layout.column(c, dv, dt);
                   Acc sum = ScatterSum::identity<Acc>();
                   for (int64_t i = s; i < e; ++i)
                     sum = ScatterSum::reduce(sum, static_cast<Acc>(values[offsets[i] + dv]));
                   if (!from_previous && !into_next) {
                     ScatterSum::combine(table + key + dt, sum);
                   } else {
                     partials[(w * 2 + (from_previous ? 0 : 1)) * length + c] = sum;
                   }
                 }
               });
}

// For a run that starts in window w and crosses into the next: its partials, in window order. The
// run's last window is found by binary search in the sorted keys, so the partials' loads are
// independent of each other (the sum itself stays in window order).
template <class T>
__device__ void fix_up_window(const IndexedLayout& layout, T* table, const uint64_t* keys, const acc_t<T>* partials,
                              int64_t window, int64_t w, int lane, int group) {
  using Acc = acc_t<T>;
  const int64_t rows = layout.row_count, length = layout.row_length;
  const int64_t start = w * window, end = min(start + window, rows);
  const uint64_t key = keys[end - 1];
  if (key == static_cast<uint64_t>(layout.sentinel_key) || end >= rows || keys[end] != key) return;
  if (keys[start] == key && start > 0 && keys[start - 1] == key) return;  // started in an earlier window
  int64_t lo = end, hi = rows;                                            // the first position past the run
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] == key)
      lo = mid + 1;
    else
      hi = mid;
  }
  const int64_t last = (lo - 1) / window;  // the run's last window
  for (int64_t c = lane; c < length; c += group) {
    int64_t dv, dt;
    layout.column(c, dv, dt);
    Acc sum = partials[(w * 2 + 1) * length + c];
    int64_t next = w + 1;
    for (; next + 4 <= last + 1; next += 4) {
      const Acc p0 = partials[(next * 2) * length + c], p1 = partials[((next + 1) * 2) * length + c];
      const Acc p2 = partials[((next + 2) * 2) * length + c], p3 = partials[((next + 3) * 2) * length + c];
      sum = ScatterSum::reduce(sum, p0);
      sum = ScatterSum::reduce(sum, p1);
      sum = ScatterSum::reduce(sum, p2);
      sum = ScatterSum::reduce(sum, p3);
    }
    for (; next <= last; ++next) sum = ScatterSum::reduce(sum, partials[(next * 2) * length + c]);
    ScatterSum::combine(table + key + dt, sum);
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    sum_windows_kernel(IndexedLayout layout, const T* values, T* table, const uint64_t* keys, const int64_t* offsets,
                       acc_t<T>* partials, int64_t window, int64_t windows, int lanes) {
  for_each_row(windows, lanes, [&](int64_t w, int lane) {
    sum_window(layout, values, table, keys, offsets, partials, window, w, lane, lanes);
  });
}

// Rows of one element (element mode): one thread per window, its keys, offsets and values all loaded
// up front (independent loads), then its runs summed in registers. Same runs, same order and same
// partial slots as sum_window.
template <class T>
__global__ void __launch_bounds__(kThreads)
    sum_element_windows_kernel(IndexedLayout layout, const T* values, T* table, const uint64_t* keys,
                               const int64_t* offsets, acc_t<T>* partials, int64_t windows) {
  using Acc = acc_t<T>;
  constexpr int kWindow = static_cast<int>(kElementsPerWindow);
  const int64_t rows = layout.row_count;
  const uint64_t sentinel = static_cast<uint64_t>(layout.sentinel_key);
  for (int64_t w = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; w < windows; w += int64_t(gridDim.x) * blockDim.x) {
    const int64_t start = w * kWindow;
    uint64_t key[kWindow];
    Acc v[kWindow];
#pragma unroll
    for (int j = 0; j < kWindow; ++j) key[j] = start + j < rows ? keys[start + j] : sentinel;
#pragma unroll
    for (int j = 0; j < kWindow; ++j) v[j] = key[j] != sentinel ? static_cast<Acc>(values[offsets[start + j]]) : Acc(0);
    const bool continues = start > 0 && key[0] != sentinel && keys[start - 1] == key[0];
    const uint64_t after = start + kWindow < rows ? keys[start + kWindow] : sentinel;
    Acc sum = ScatterSum::identity<Acc>();
#pragma unroll
    for (int j = 0; j < kWindow; ++j) {
      sum = ScatterSum::reduce(sum, v[j]);
      if (j + 1 < kWindow && key[j + 1] == key[j]) continue;  // the run goes on
      if (key[j] != sentinel) {
        const bool from_previous = continues && key[j] == key[0];  // the window's first run
        const bool into_next = j + 1 == kWindow && after == key[j];
        if (!from_previous && !into_next) {
          ScatterSum::combine(table + key[j], sum);
        } else {
          partials[w * 2 + (from_previous ? 0 : 1)] = sum;
        }
      }
      sum = ScatterSum::identity<Acc>();
    }
  }
}

// Rows mode, rows of whole 16-byte vectors: a block stages each window's keys and row offsets in
// shared memory, then every thread sums whole vectors of columns (kV accumulators) down each run.
// Same runs, same order and same partial slots as sum_window.
template <class T>
__global__ void __launch_bounds__(kThreads)
    sum_windows_vectorized_kernel(IndexedLayout layout, const T* values, T* table, const uint64_t* keys,
                                  const int64_t* row_offsets, acc_t<T>* partials, int64_t windows, int lanes) {
  using Acc = acc_t<T>;
  constexpr int kV = Vec16<T>::kSize;
  constexpr int kWindow = static_cast<int>(kRowsPerWindow);
  // One window per group of `lanes` threads; lanes >= kWindow, so the groups' offsets fit.
  __shared__ int64_t offsets[kThreads];
  const int groups = kThreads / lanes;
  const int group = threadIdx.x / lanes, lane = threadIdx.x % lanes;
  const int64_t rows = layout.row_count, length = layout.row_length;
  const int64_t vectors = length / kV;
  const uint64_t sentinel = static_cast<uint64_t>(layout.sentinel_key);
  for (int64_t base = int64_t(blockIdx.x) * groups; base < windows; base += int64_t(gridDim.x) * groups) {
    const int64_t w = base + group;
    const int64_t start = w * kWindow, end = w < windows ? min(start + kWindow, rows) : start;
    __syncthreads();
    for (int i = lane; i < kWindow; i += lanes)
      offsets[group * kWindow + i] = start + i < end ? row_offsets[start + i] : 0;
    __syncthreads();
    for_each_run(keys, start, end, rows, sentinel,
                 [&](int64_t s, int64_t e, uint64_t key, bool from_previous, bool into_next) {
                   for (int64_t v = lane; v < vectors; v += lanes) {
                     Acc sum[kV];
#pragma unroll
                     for (int k = 0; k < kV; ++k) sum[k] = ScatterSum::identity<Acc>();
                     for (int64_t i = s; i < e; ++i) {
                       const Vec16<T> x = load16(values + offsets[group * kWindow + (i - start)] + v * kV);
#pragma unroll
                       for (int k = 0; k < kV; ++k) sum[k] = ScatterSum::reduce(sum[k], static_cast<Acc>(x.v[k]));
                     }
                     if (!from_previous && !into_next) {
                       T* dst = table + key + v * kV;
                       Vec16<T> y = load16(dst);
#pragma unroll
                       for (int k = 0; k < kV; ++k) ScatterSum::combine(&y.v[k], sum[k]);
                       store16(dst, y);
                     } else {
                       Acc* slot = partials + (w * 2 + (from_previous ? 0 : 1)) * length + v * kV;
#pragma unroll
                       for (int k = 0; k < kV; ++k) slot[k] = sum[k];
                     }
                   }
                 });
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    fix_up_kernel(IndexedLayout layout, T* table, const uint64_t* keys, const acc_t<T>* partials, int64_t window,
                  int64_t windows, int lanes) {
  for_each_row(windows, lanes,
               [&](int64_t w, int lane) { fix_up_window(layout, table, keys, partials, window, w, lane, lanes); });
}

// Adds the layout's rows of `values` into `table` by runs of equal keys: `keys` are the rows'
// destinations (table offsets) sorted stably with the sentinel last, `offsets` the rows' values
// offsets in the same order, `partials` two rows of Acc per window (sorted_window(row_length) rows
// each). `vectorized_rows`: rows of whole 16-byte vectors, aligned.
template <class T>
Status sum_sorted_runs(cudaStream_t s, const IndexedLayout& layout, bool vectorized_rows, const T* values, T* table,
                       const uint64_t* keys, const int64_t* offsets, acc_t<T>* partials, int sm_count) {
  const int64_t rows = layout.row_count;
  const int64_t window = sorted_window(layout.row_length);
  const int64_t windows = (rows + window - 1) / window;
  const int lanes = layout.columns.rank == 0 ? 1 : lanes_for(layout.row_length);
  if (vectorized_rows) {
    // At least kRowsPerWindow lanes per window, so a block's windows fit its offsets in shared memory.
    const int vector_lanes = std::max<int>(lanes_for(layout.row_length / Vec16<T>::kSize), int(kRowsPerWindow));
    sum_windows_vectorized_kernel<T><<<row_blocks(windows, vector_lanes, sm_count), kThreads, 0, s>>>(
        layout, values, table, keys, offsets, partials, windows, vector_lanes);
    if (Status st = last_launch_status("sum_windows_vectorized_kernel"); !st) return st;
  } else if (layout.columns.rank == 0) {
    sum_element_windows_kernel<T><<<grid_stride_blocks(windows, sm_count), kThreads, 0, s>>>(
        layout, values, table, keys, offsets, partials, windows);
    if (Status st = last_launch_status("sum_element_windows_kernel"); !st) return st;
  } else {
    sum_windows_kernel<T><<<row_blocks(windows, lanes, sm_count), kThreads, 0, s>>>(
        layout, values, table, keys, offsets, partials, window, windows, lanes);
    if (Status st = last_launch_status("sum_windows_kernel"); !st) return st;
  }
  fix_up_kernel<T>
      <<<row_blocks(windows, lanes, sm_count), kThreads, 0, s>>>(layout, table, keys, partials, window, windows, lanes);
  return last_launch_status("fix_up_kernel");
}

}  // namespace baracuda::detail::cuda

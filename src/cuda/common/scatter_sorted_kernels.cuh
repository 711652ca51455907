#pragma once
// The sorted (deterministic) scatter-add's kernels (cuda/indexing/scatter_general.cpp launches them,
// CUB's radix sort between the keys and the sums: cuda/indexing/sort.cu). Each row's key is its
// destination's table offset (scatter_keys_kernel); the rows, sorted by key (stable: a run keeps the
// rows' original order), are cut into windows; each window sums its runs of equal keys in sorted
// order in the accumulator type, adding complete runs straight into the table and leaving runs that
// cross a window edge as partial sums; a fix-up pass sums each crossing run's partials in window
// order. No atomics, so every run gives the same bits. Compiled at select (NVRTC), one program an
// element type, index type and whether the table was zeroed first.
#include "common/indexing.hpp"
#include "cuda/common/row_walk.cuh"
#include "cuda/common/scatter_ops.cuh"
#include "cuda/common/vector.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {

// Calls f(s, e, key, from_previous, into_next) for each run [s, e) of equal keys in the window
// [start, end) of the sorted keys, stopping at the sentinel (invalid rows sort last). A run that
// continues from the previous window or into the next one is a partial sum of its destination.
template <class F>
__device__ __forceinline__ void for_each_run(const SortedKeys& k, int64_t start, int64_t end, int64_t rows, F&& f) {
  const uint64_t* keys = k.keys;
  const uint64_t sentinel = k.sentinel;
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
__device__ void sum_window(const IndexedLayout& layout, const SortedKeys& k, const T* values, T* table,
                           const int64_t* offsets, acc_t<T>* partials, int64_t window, int64_t w, int lane, int group) {
  using Acc = acc_t<T>;
  const int64_t rows = layout.row_count, length = layout.row_length;
  const int64_t start = w * window, end = min(start + window, rows);
  for_each_run(k, start, end, rows, [&](int64_t s, int64_t e, uint64_t key, bool from_previous, bool into_next) {
    for (int64_t c = lane; c < length; c += group) {
      int64_t dv, dt;
      layout.column(c, dv, dt);
      Acc sum = ScatterSum::identity<Acc>();
      for (int64_t i = s; i < e; ++i) sum = ScatterSum::reduce(sum, static_cast<Acc>(values[offsets[i] + dv]));
      if (!from_previous && !into_next) {
        ScatterSum::combine(table + k.table_offset(key) + dt, sum);
      } else {
        partials[(w * 2 + (from_previous ? 0 : 1)) * length + c] = sum;
      }
    }
  });
}

// Whether window w starts a run that crosses into the next window (w's partial slot 1 holds the
// run's first sum): then the run's key and its last window, found by galloping over the windows' first
// keys, then bisecting (one probe when the run ends in the next window, the common case).
__device__ inline bool crossing_run(const IndexedLayout& layout, const SortedKeys& k, int64_t window, int64_t w,
                                    uint64_t& key, int64_t& last) {
  const uint64_t* keys = k.keys;
  const int64_t rows = layout.row_count, windows = (rows + window - 1) / window;
  const int64_t start = w * window, end = min(start + window, rows);
  key = keys[end - 1];
  if (key == k.sentinel || end >= rows || keys[end] != key) return false;
  if (keys[start] == key && start > 0 && keys[start - 1] == key) return false;  // started in an earlier window
  // The run reaches window v when v's first key is the run's key; it reaches w + 1.
  int64_t step = 1;
  last = w + 1;
  while (last + step < windows && keys[(last + step) * window] == key) {
    last += step;
    step *= 2;
  }
  for (int64_t past = min(last + step, windows); past - last > 1;) {  // window `past` is not reached
    const int64_t mid = last + (past - last) / 2;
    if (keys[mid * window] == key)
      last = mid;
    else
      past = mid;
  }
  return true;
}

// For a run that starts in window w and crosses into the next: its partials, in window order, kBatch
// windows' loads in flight at once (the sum itself stays in window order).
inline constexpr int kFixUpBatch = 8;

// The partial rows of a run from window `next` on (next <= last), up to kFixUpBatch of them, `next`
// moved past them: a window's slot 0, or a chunk's sum. Returns how many; the rows after them repeat
// the last one (loaded with the others, not added).
__device__ __forceinline__ int next_partial_rows(int64_t& next, int64_t last, int64_t windows, bool chunked,
                                                 int64_t (&rows)[kFixUpBatch]) {
  int n = 0;
#pragma unroll
  for (int j = 0; j < kFixUpBatch; ++j) {
    if (next <= last) {
      const bool chunk = chunked && next % kChunkWindows == 0 && next + kChunkWindows <= last;
      rows[j] = chunk ? 2 * windows + next / kChunkWindows : 2 * next;
      next += chunk ? kChunkWindows : 1;
      ++n;
    } else {
      rows[j] = rows[j - 1];  // (j > 0: the caller asks while next <= last)
    }
  }
  return n;
}

// Adds a run's partial rows from window `next` to `last` (next_partial_rows) in order: add(load(row))
// for each, kFixUpBatch loads issued together. The one loop of the chunks' sums and both fix-ups.
template <class Load, class Add>
__device__ __forceinline__ void add_partial_rows(int64_t next, int64_t last, int64_t windows, bool chunked, Load&& load,
                                                 Add&& add) {
  while (next <= last) {
    int64_t rows[kFixUpBatch] = {};
    const int n = next_partial_rows(next, last, windows, chunked, rows);
    decltype(load(int64_t{})) p[kFixUpBatch];
#pragma unroll
    for (int j = 0; j < kFixUpBatch; ++j) p[j] = load(rows[j]);
#pragma unroll
    for (int j = 0; j < kFixUpBatch; ++j)
      if (j < n) add(p[j]);
  }
}

// The chunks' sums (see kChunkWindows): chunk c's 64 windows' slot 0 in window order, where they lie
// inside one run.
template <class Acc>
__global__ void __launch_bounds__(kThreads)
    sum_chunks_kernel(SortedKeys k, int64_t window, int64_t windows, int64_t length, Acc* partials, int lanes) {
  for_each_row(windows / kChunkWindows, lanes, [&](int64_t c, int lane) {
    const int64_t first = c * kChunkWindows, after = first + kChunkWindows;
    if (first == 0 || after >= windows) return;
    const uint64_t key = k.keys[first * window];
    if (key == k.sentinel || k.keys[first * window - 1] != key || k.keys[after * window] != key) return;
    for (int64_t col = lane; col < length; col += lanes) {
      Acc sum = partials[(first * 2) * length + col];
      add_partial_rows(
          first + 1, after - 1, windows, false, [&](int64_t row) { return partials[row * length + col]; },
          [&](Acc p) { sum = ScatterSum::reduce(sum, p); });
      partials[(2 * windows + c) * length + col] = sum;
    }
  });
}

template <class T>
__device__ void fix_up_window(const IndexedLayout& layout, const SortedKeys& k, T* table, const acc_t<T>* partials,
                              int64_t window, int64_t w, bool chunked, int lane, int group) {
  using Acc = acc_t<T>;
  const int64_t length = layout.row_length, windows = (layout.row_count + window - 1) / window;
  uint64_t key;
  int64_t last;
  if (!crossing_run(layout, k, window, w, key, last)) return;
  const int64_t table_off = k.table_offset(key);
  for (int64_t c = lane; c < length; c += group) {
    int64_t dv, dt;
    layout.column(c, dv, dt);
    Acc sum = partials[(w * 2 + 1) * length + c];
    add_partial_rows(
        w + 1, last, windows, chunked, [&](int64_t row) { return partials[row * length + c]; },
        [&](Acc p) { sum = ScatterSum::reduce(sum, p); });
    ScatterSum::combine(table + table_off + dt, sum);
  }
}

// The same for rows of whole 16-byte vectors: a thread sums kV columns, their partials loaded as
// 16-byte vectors of the accumulator type.
template <class T>
__global__ void __launch_bounds__(kThreads)
    fix_up_vectorized_kernel(IndexedLayout layout, SortedKeys k, T* table, const acc_t<T>* partials, int64_t windows,
                             int lanes, bool zeroed, bool chunked) {
  using Acc = acc_t<T>;
  constexpr int kV = Vec16<T>::kSize;
  constexpr int kParts = sizeof(Acc) / sizeof(T);  // 16-byte vectors of Acc a vector of T sums into
  const int64_t length = layout.row_length, vectors = length / kV;
  for_each_row(windows, lanes, [&](int64_t w, int lane) {
    uint64_t key;
    int64_t last;
    if (!crossing_run(layout, k, kRowsPerWindow, w, key, last)) return;
    T* const row = table + k.table_offset(key);
    struct Parts {  // a vector's kV sums, as 16-byte vectors of Acc
      Vec16<Acc> q[kParts];
    };
    for (int64_t v = lane; v < vectors; v += lanes) {
      const auto load = [&](int64_t row) {
        Parts p;
#pragma unroll
        for (int q = 0; q < kParts; ++q) p.q[q] = load16(partials + row * length + v * kV + q * (kV / kParts));
        return p;
      };
      Parts sum = load(w * 2 + 1);
      add_partial_rows(w + 1, last, windows, chunked, load, [&](const Parts& p) {
#pragma unroll
        for (int q = 0; q < kParts; ++q)
#pragma unroll
          for (int c = 0; c < kV / kParts; ++c) sum.q[q].v[c] = ScatterSum::reduce(sum.q[q].v[c], p.q[q].v[c]);
      });
      Vec16<T> y = zeroed ? Vec16<T>{} : load16(row + v * kV);
#pragma unroll
      for (int c = 0; c < kV; ++c) ScatterSum::combine(&y.v[c], sum.q[c / (kV / kParts)].v[c % (kV / kParts)]);
      store16(row + v * kV, y);
    }
  });
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    sum_windows_kernel(IndexedLayout layout, SortedKeys k, const T* values, T* table, const int64_t* offsets,
                       acc_t<T>* partials, int64_t window, int64_t windows, int lanes) {
  for_each_row(windows, lanes, [&](int64_t w, int lane) {
    sum_window(layout, k, values, table, offsets, partials, window, w, lane, lanes);
  });
}

// Rows of one element (element mode): one thread per window, its keys, offsets and values all loaded
// up front (independent loads), then its runs summed in registers. Same runs, same order and same
// partial slots as sum_window.
template <class T>
__global__ void __launch_bounds__(kThreads)
    sum_element_windows_kernel(IndexedLayout layout, SortedKeys k, const T* values, T* table, const int64_t* offsets,
                               acc_t<T>* partials, int64_t windows) {
  using Acc = acc_t<T>;
  constexpr int kWindow = static_cast<int>(kElementsPerWindow);
  const int64_t rows = layout.row_count;
  const uint64_t sentinel = k.sentinel;
  for (int64_t w = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; w < windows; w += int64_t(gridDim.x) * blockDim.x) {
    const int64_t start = w * kWindow;
    uint64_t key[kWindow];
    Acc v[kWindow];
#pragma unroll
    for (int j = 0; j < kWindow; ++j) key[j] = start + j < rows ? k.keys[start + j] : sentinel;
#pragma unroll
    for (int j = 0; j < kWindow; ++j) v[j] = key[j] != sentinel ? static_cast<Acc>(values[offsets[start + j]]) : Acc(0);
    const bool continues = start > 0 && key[0] != sentinel && k.keys[start - 1] == key[0];
    const uint64_t after = start + kWindow < rows ? k.keys[start + kWindow] : sentinel;
    Acc sum = ScatterSum::identity<Acc>();
#pragma unroll
    for (int j = 0; j < kWindow; ++j) {
      sum = ScatterSum::reduce(sum, v[j]);
      if (j + 1 < kWindow && key[j + 1] == key[j]) continue;  // the run goes on
      if (key[j] != sentinel) {
        const bool from_previous = continues && key[j] == key[0];  // the window's first run
        const bool into_next = j + 1 == kWindow && after == key[j];
        if (!from_previous && !into_next) {
          ScatterSum::combine(table + k.table_offset(key[j]), sum);
        } else {
          partials[w * 2 + (from_previous ? 0 : 1)] = sum;
        }
      }
      sum = ScatterSum::identity<Acc>();
    }
  }
}

// How a window's row ends its run, for the vectorized sums.
enum RowEnd : uint8_t {
  kSkippedRow,          // past the window's valid rows (rows of invalid index values sort last)
  kRunGoesOn,           // the run goes on at the next row of the window
  kRunToTable,          // a whole run ends here: added into the table
  kRunToFirstPartial,   // the run came from the previous window: partial slot 0
  kRunToSecondPartial,  // the run goes on into the next window: partial slot 1
};

// Rows mode, rows of whole 16-byte vectors: a block stages each window's row offsets, destinations
// and run ends in shared memory; then every thread sums whole vectors of columns (kV accumulators)
// down the window, kBatch rows' loads (and the table loads of the runs they end) in flight at once,
// across runs: a window of 32 one-row runs (the tail of a skewed index) is four rounds of loads, not
// 32 dependent ones. Same runs, same order and same partial slots as sum_window. kZeroed: the table
// holds zeros (an overwritten table, zeroed first), so runs are stored without loading it, and the
// registers the table's loads took hold twice the rows in flight.
template <class T, bool kZeroed>
__global__ void __launch_bounds__(kThreads)
    sum_windows_vectorized_kernel(IndexedLayout layout, SortedKeys k, const T* values, T* table,
                                  const int64_t* row_offsets, acc_t<T>* partials, int64_t windows, int lanes) {
  using Acc = acc_t<T>;
  constexpr int kV = Vec16<T>::kSize;
  constexpr int kWindow = static_cast<int>(kRowsPerWindow);
  constexpr int kBatch = kZeroed ? 16 : 8;
  static_assert(kWindow % kBatch == 0);
  // One window per group of `lanes` threads; lanes >= kWindow, so the groups' rows fit.
  __shared__ int64_t offsets[kThreads], destinations[kThreads];
  __shared__ RowEnd ends[kThreads];
  const int groups = kThreads / lanes;
  const int group = threadIdx.x / lanes, lane = threadIdx.x % lanes;
  const int64_t rows = layout.row_count, length = layout.row_length;
  const int64_t vectors = length / kV;
  for (int64_t base = int64_t(blockIdx.x) * groups; base < windows; base += int64_t(gridDim.x) * groups) {
    const int64_t w = base + group;
    const int64_t start = w * kWindow, end = w < windows ? min(start + kWindow, rows) : start;
    __syncthreads();
    if (lane < kWindow) {
      const int64_t r = start + lane;
      RowEnd how = kSkippedRow;
      int64_t offset = 0, destination = 0;
      const uint64_t key = r < end ? k.keys[r] : k.sentinel;
      if (key != k.sentinel) {
        offset = row_offsets[r];
        destination = k.table_offset(key);
        const uint64_t next = r + 1 < rows ? k.keys[r + 1] : k.sentinel;
        if (next == key && r + 1 < end)
          how = kRunGoesOn;
        else if (start > 0 && k.keys[start - 1] == key)
          how = kRunToFirstPartial;
        else
          how = next == key ? kRunToSecondPartial : kRunToTable;
      }
      offsets[group * kWindow + lane] = offset;
      destinations[group * kWindow + lane] = destination;
      ends[group * kWindow + lane] = how;
    }
    __syncthreads();
    for (int64_t v = lane; v < vectors; v += lanes) {
      Acc sum[kV];
#pragma unroll
      for (int c = 0; c < kV; ++c) sum[c] = ScatterSum::identity<Acc>();
      for (int b = group * kWindow; b < (group + 1) * kWindow && ends[b] != kSkippedRow; b += kBatch) {
        Vec16<T> x[kBatch], y[kBatch] = {};  // y: the table's rows (zeros when kZeroed)
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const RowEnd how = ends[b + j];
          x[j] = how != kSkippedRow ? load16(values + offsets[b + j] + v * kV) : Vec16<T>{};
          if (!kZeroed && how == kRunToTable) y[j] = load16(table + destinations[b + j] + v * kV);
        }
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const RowEnd how = ends[b + j];
          if (how == kSkippedRow) break;
#pragma unroll
          for (int c = 0; c < kV; ++c) sum[c] = ScatterSum::reduce(sum[c], static_cast<Acc>(x[j].v[c]));
          if (how == kRunGoesOn) continue;
          if (how == kRunToTable) {
#pragma unroll
            for (int c = 0; c < kV; ++c) ScatterSum::combine(&y[j].v[c], sum[c]);
            store16(table + destinations[b + j] + v * kV, y[j]);
          } else {
            Acc* slot = partials + (w * 2 + (how == kRunToFirstPartial ? 0 : 1)) * length + v * kV;
#pragma unroll
            for (int c = 0; c < kV; ++c) slot[c] = sum[c];
          }
#pragma unroll
          for (int c = 0; c < kV; ++c) sum[c] = ScatterSum::identity<Acc>();
        }
      }
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    fix_up_kernel(IndexedLayout layout, SortedKeys k, T* table, const acc_t<T>* partials, int64_t window,
                  int64_t windows, int lanes, bool chunked) {
  for_each_row(windows, lanes, [&](int64_t w, int lane) {
    fix_up_window(layout, k, table, partials, window, w, chunked, lane, lanes);
  });
}

// Each row's sort key (its destination's table offset over the key unit, or the sentinel for a
// skipped row) and its values offset, so the sums read the values without locating the row again.
template <class Idx>
__global__ void scatter_keys_kernel(IndexedLayout layout, const Idx* index, int64_t unit, uint64_t sentinel,
                                    uint64_t* keys, int64_t* offsets) {
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < layout.row_count;
       r += int64_t(gridDim.x) * blockDim.x) {
    int64_t values_off, table_off;
    const bool valid = layout.locate(index, r, values_off, table_off);
    keys[r] = valid ? static_cast<uint64_t>(unit == 1 ? table_off : table_off / unit) : sentinel;
    offsets[r] = values_off;
  }
}

}  // namespace baracuda::detail::cuda

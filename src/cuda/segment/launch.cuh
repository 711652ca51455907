#pragma once
// The host side of the segment family's CUDA variants, templated on the reduction: each of sum.cu,
// mean.cu, max.cu and min.cu instantiates its own (one translation unit a reduction, so the build
// parallelizes), segment.cu dispatches to them.
//  - segmented (sorted ids, offsets): the segments' starts, then the tiles kernel, and where there is
//    more than one tile the combine kernel for the segments that cross a tile's end;
//  - sort (unsorted ids, deterministic): (segment key, row) pairs radix-sorted (32-bit keys, stable:
//    a segment keeps its rows' order), then segmented over the sorted rows;
//  - atomic (unsorted sum / mean): atomic adds into a scratch, then the finish pass;
//  - backward: one gather pass (the mean of the ids forms first counts each segment's rows).
// Then the bad ids / offsets are counted.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "common/dispatch.hpp"
#include "cuda/common/check.cuh"
#include "cuda/segment/kernels.cuh"

namespace baracuda::detail::cuda::segment {

constexpr size_t kAlign = 256;
inline size_t round_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

constexpr bool extreme(SegmentReduction r) { return r == SegmentReduction::max || r == SegmentReduction::min; }
inline int64_t acc_bytes(DType dtype) { return dtype == DType::f64 || !is_floating(dtype) ? 8 : 4; }

// The tiles' partials: two slots of D accumulators (and, for max / min, D 32-bit positions) per tile.
inline CheckedSize tile_slots_bytes(const SegmentProblem& p) {
  if (p.tile_rows <= 0 || p.rows <= p.tile_rows) return 0;
  const CheckedSize slots = CheckedSize(ceil_div(p.rows, p.tile_rows)) * 2 * p.length;
  return round_up_to(slots * acc_bytes(p.dtype), kAlign) + (extreme(p.reduction) ? slots * 4 : CheckedSize(0));
}

// The sort's row indices: 32-bit where N allows (a third less to sort than 64-bit ones).
inline bool narrow_rows(int64_t rows) { return rows <= int64_t{UINT32_MAX}; }
inline size_t row_index_bytes(int64_t rows) { return narrow_rows(rows) ? 4 : 8; }

inline size_t sort_temp_bytes(int64_t rows) {
  size_t temp = 0;
  auto query = [&](auto* values) {
    cub::DeviceRadixSort::SortPairs(nullptr, temp, static_cast<const uint32_t*>(nullptr),
                                    static_cast<uint32_t*>(nullptr), values, values, rows);
  };
  if (narrow_rows(rows))
    query(static_cast<uint32_t*>(nullptr));
  else
    query(static_cast<int64_t*>(nullptr));
  return temp;
}

// The sort variant's scratch: keys in and out (4 bytes a row), row indices in and out (4 or 8), the
// sort's own.
struct SortBuffers {
  uint32_t *keys_in, *keys;
  void *rows_in, *rows;
  void* temp;
  size_t temp_bytes;
  char* rest;  // the starts and the tiles' partials
};
inline CheckedSize sort_bytes(int64_t rows) {
  return round_up_to(CheckedSize(rows) * 4, kAlign) * 2 +
         round_up_to(CheckedSize(rows) * static_cast<int64_t>(row_index_bytes(rows)), kAlign) * 2 +
         CheckedSize(static_cast<int64_t>(round_up(sort_temp_bytes(rows))));
}
inline SortBuffers carve_sort(void* workspace, int64_t rows) {
  char* p = static_cast<char*>(workspace);
  const size_t keys = round_up(size_t(rows) * 4), ids = round_up(size_t(rows) * row_index_bytes(rows));
  SortBuffers b;
  b.keys_in = reinterpret_cast<uint32_t*>(p);
  b.keys = reinterpret_cast<uint32_t*>(p + keys);
  b.rows_in = p + 2 * keys;
  b.rows = p + 2 * keys + ids;
  b.temp = p + 2 * keys + 2 * ids;
  b.temp_bytes = round_up(sort_temp_bytes(rows));
  b.rest = static_cast<char*>(b.temp) + b.temp_bytes;
  return b;
}

template <class Idx, class V>
__global__ void __launch_bounds__(kThreads) segment_keys_kernel(SegmentProblem p, uint32_t* keys, V* rows) {
  const Idx* ids = static_cast<const Idx*>(p.ids);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < p.rows; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = static_cast<int64_t>(ids[i * p.ids_stride]);
    keys[i] = static_cast<uint32_t>(s >= 0 && s < p.segments ? s : p.segments);  // bad ids sort last
    rows[i] = static_cast<V>(i);
  }
}

inline int key_bits(int64_t sentinel) {
  int bits = 1;
  while (bits < 32 && (int64_t{1} << bits) <= sentinel) ++bits;
  return bits;
}

// Sorts (key, row) pairs of the unsorted ids by key, stably.
template <class Idx, class V>
Status sort_rows(cudaStream_t stream, const SegmentProblem& p, const SortBuffers& b, int sm_count) {
  auto* rows_in = static_cast<V*>(b.rows_in);
  segment_keys_kernel<Idx, V><<<grid_stride_blocks(p.rows, sm_count), kThreads, 0, stream>>>(p, b.keys_in, rows_in);
  if (Status st = last_launch_status("segment_keys_kernel"); !st) return st;
  size_t temp = b.temp_bytes;
  return cuda_status(cub::DeviceRadixSort::SortPairs(b.temp, temp, b.keys_in, b.keys, rows_in, static_cast<V*>(b.rows),
                                                     p.rows, 0, key_bits(p.segments), stream),
                     "cub::DeviceRadixSort::SortPairs");
}

// The segments' starts (SegmentTiles): offsets clamped into [0, N] (launch_starts then takes their
// running maximum), or for ids lower_bound(s), one thread a search (a binary search's answers are
// nondecreasing in s over any ids, sorted or not).
template <class K>
__global__ void __launch_bounds__(kThreads) segment_starts_kernel(SegmentRows<K> rows, int64_t* starts) {
  for (int64_t s = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; s <= rows.segments;
       s += int64_t(gridDim.x) * blockDim.x)
    starts[s] = rows.offsets ? rows.offset(s) : rows.lower_bound(s);
}

struct MaxOfStarts {
  __host__ __device__ int64_t operator()(int64_t a, int64_t b) const { return a < b ? b : a; }
};
inline size_t offsets_scan_bytes(int64_t segments) {
  size_t temp = 0;
  cub::DeviceScan::InclusiveScan(nullptr, temp, static_cast<int64_t*>(nullptr), static_cast<int64_t*>(nullptr),
                                 MaxOfStarts{}, segments + 1);
  return temp;
}
// S + 1 starts, then (offsets) the scan's own scratch.
inline CheckedSize starts_bytes(const SegmentProblem& p) {
  const CheckedSize starts = round_up_to((CheckedSize(p.segments) + 1) * 8, kAlign);
  if (p.form != SegmentForm::offsets) return starts;
  return starts + CheckedSize(static_cast<int64_t>(round_up(offsets_scan_bytes(p.segments))));
}

// Fills starts (S + 1 of them at `scratch`): offsets that decrease are raised to their predecessor
// (the running maximum), so the regions are a partition whatever the offsets; valid offsets are
// unchanged. Returns the scratch past what it used.
template <class K>
Status launch_starts(cudaStream_t stream, const SegmentProblem& p, const SegmentRows<K>& rows, char*& scratch,
                     int sm_count) {
  auto* starts = reinterpret_cast<int64_t*>(scratch);
  const size_t starts_size = round_up(size_t(p.segments + 1) * 8);
  segment_starts_kernel<K><<<grid_stride_blocks(p.segments + 1, sm_count), kThreads, 0, stream>>>(rows, starts);
  if (Status st = last_launch_status("segment_starts_kernel"); !st) return st;
  if (rows.offsets) {
    size_t temp = offsets_scan_bytes(p.segments);
    if (Status st = cuda_status(cub::DeviceScan::InclusiveScan(scratch + starts_size, temp, starts, starts,
                                                               MaxOfStarts{}, p.segments + 1, stream),
                                "cub::DeviceScan::InclusiveScan");
        !st)
      return st;
  }
  scratch += starts_bytes(p).value();
  return Status::ok();
}

// The segmented walk over positions in row order, or (the sort variant) through order32 / order64.
template <SegmentReduction R, class T, class Idx, class K>
Status segmented(cudaStream_t stream, const SegmentProblem& p, const SegmentRows<K>& rows, char* scratch, int sm_count,
                 const uint32_t* order32 = nullptr, const int64_t* order64 = nullptr) {
  using A = acc_t<T>;
  const int64_t* starts = reinterpret_cast<const int64_t*>(scratch);
  if (Status st = launch_starts(stream, p, rows, scratch, sm_count); !st) return st;
  SegmentTiles tiles;
  tiles.starts = starts;
  tiles.order32 = order32;
  tiles.order64 = order64;
  tiles.rows = p.rows;
  tiles.segments = p.segments;
  tiles.tile_rows = p.tile_rows;
  tiles.count = std::max<int64_t>(1, ceil_div(p.rows, p.tile_rows));
  A* partials = nullptr;
  int32_t* partial_at = nullptr;
  if (tile_slots_bytes(p).value() > 0) {
    partials = reinterpret_cast<A*>(scratch);
    const size_t slots = size_t(tiles.count) * 2 * size_t(p.length);
    if (extreme(R)) partial_at = reinterpret_cast<int32_t*>(scratch + round_up(slots * sizeof(A)));
  }
  auto launch = [&](auto vector) {
    constexpr int kV = decltype(vector)::value;
    const int lanes = lanes_for(p.length / kV);
    const int64_t chunks = ceil_div(p.length / kV, int64_t{lanes});  // groups a tile: rows wider than a block
    if (p.packed_rows && !order32 && !order64) {
      segment_tiles_packed_kernel<R, T, Idx>
          <<<grid_stride_blocks(tiles.count, sm_count), kThreads, 0, stream>>>(p, tiles, partials, partial_at);
      if (Status st = last_launch_status("segment_tiles_packed_kernel"); !st) return st;
    } else {
      segment_tiles_kernel<R, kV, T, Idx><<<row_blocks(tiles.count * chunks, lanes, sm_count), kThreads, 0, stream>>>(
          p, tiles, lanes, partials, partial_at);
      if (Status st = last_launch_status("segment_tiles_kernel"); !st) return st;
    }
    if (tiles.count == 1) return Status::ok();
    segment_combine_kernel<R, kV, T, Idx><<<row_blocks(tiles.count * chunks, lanes, sm_count), kThreads, 0, stream>>>(
        p, tiles, lanes, partials, partial_at);
    return last_launch_status("segment_combine_kernel");
  };
  if (p.vectorized) return launch(std::integral_constant<int, Vec16<T>::kSize>{});
  return launch(std::integral_constant<int, 1>{});
}

template <SegmentReduction R, class T, class Idx>
Status forward(cudaStream_t stream, const SegmentProblem& p, int sm_count) {
  using A = acc_t<T>;
  if (p.segments == 0 || p.length == 0) return Status::ok();
  char* ws = static_cast<char*>(p.workspace);
  if (p.form != SegmentForm::unsorted_ids) return segmented<R, T, Idx>(stream, p, p.segment_rows<Idx>(), ws, sm_count);
  if (p.variant == SegmentVariant::sort) {
    const SortBuffers b = carve_sort(ws, p.rows);
    SegmentRows<uint32_t> rows;  // the sorted keys
    rows.keys = b.keys;
    rows.rows = p.rows;
    rows.segments = p.segments;
    const bool narrow = narrow_rows(p.rows);
    if (p.rows > 0) {
      const Status st =
          narrow ? sort_rows<Idx, uint32_t>(stream, p, b, sm_count) : sort_rows<Idx, int64_t>(stream, p, b, sm_count);
      if (!st) return st;
    }
    return segmented<R, T, Idx>(stream, p, rows, b.rest, sm_count, narrow ? static_cast<uint32_t*>(b.rows) : nullptr,
                                narrow ? nullptr : static_cast<int64_t*>(b.rows));
  }
  if constexpr (extreme(R)) {
    return Status::error(StatusCode::unsupported, "segment max / min have no atomic kernel");  // select never picks it
  } else {
    const size_t scratch_bytes = round_up(size_t(p.segments) * size_t(p.length) * sizeof(A));
    auto* scratch = reinterpret_cast<A*>(ws);
    auto* counts = reinterpret_cast<unsigned long long*>(ws + scratch_bytes);
    if (Status st =
            cuda_status(cudaMemsetAsync(ws, 0, scratch_bytes + size_t(p.segments) * 8, stream), "cudaMemsetAsync");
        !st)
      return st;
    // A sum whose empty value is +0 (no initial, or +0) needs no counts: its scratch starts there.
    const bool counted =
        R == SegmentReduction::mean ||
        (is_floating(p.dtype) ? p.empty_value != 0 || std::signbit(p.empty_value) : p.empty_integer != 0);
    if (p.rows > 0) {
      auto add = [&](auto vector) {
        constexpr int kV = decltype(vector)::value;
        const int lanes = lanes_for(p.length / kV);
        segment_atomic_kernel<kV, T, Idx><<<row_blocks(p.rows, lanes, sm_count), kThreads, 0, stream>>>(
            p, lanes, scratch, counted ? counts : nullptr);
        return last_launch_status("segment_atomic_kernel");
      };
      if (Status st = p.vectorized ? add(std::integral_constant<int, Vec16<T>::kSize>{})
                                   : add(std::integral_constant<int, 1>{});
          !st)
        return st;
    }
    segment_finish_kernel<R, T><<<grid_stride_blocks(p.segments * p.length, sm_count), kThreads, 0, stream>>>(
        p, scratch, counted ? counts : nullptr);
    return last_launch_status("segment_finish_kernel");
  }
}

template <class Idx>
__global__ void __launch_bounds__(kThreads) segment_counts_kernel(SegmentProblem p, unsigned long long* counts) {
  const Idx* ids = static_cast<const Idx*>(p.ids);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < p.rows; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t s = static_cast<int64_t>(ids[i * p.ids_stride]);
    if (s >= 0 && s < p.segments) atomicAdd(counts + s, 1ull);  // integers: the same sums in any order
  }
}

template <SegmentReduction R, class T, class Idx>
Status backward(cudaStream_t stream, const SegmentProblem& p, int sm_count) {
  if (p.rows == 0 || p.length == 0) return Status::ok();
  unsigned long long* counts = nullptr;
  if (R == SegmentReduction::mean && p.form != SegmentForm::offsets && p.segments > 0) {
    counts = static_cast<unsigned long long*>(p.workspace);
    if (Status st = cuda_status(cudaMemsetAsync(counts, 0, size_t(p.segments) * 8, stream), "cudaMemsetAsync"); !st)
      return st;
    segment_counts_kernel<Idx><<<grid_stride_blocks(p.rows, sm_count), kThreads, 0, stream>>>(p, counts);
    if (Status st = last_launch_status("segment_counts_kernel"); !st) return st;
  }
  if (p.packed_rows) {
    segment_backward_rows_kernel<R, T, Idx>
        <<<grid_stride_blocks(ceil_div(p.rows, int64_t{Vec16<T>::kSize}), sm_count), kThreads, 0, stream>>>(
            p, p.segment_rows<Idx>(), counts);
    return last_launch_status("segment_backward_rows_kernel");
  }
  auto gather = [&](auto vector) {
    constexpr int kV = decltype(vector)::value;
    const int lanes = lanes_for(p.length / kV);
    segment_backward_kernel<R, kV, T, Idx>
        <<<row_blocks(p.rows, lanes, sm_count), kThreads, 0, stream>>>(p, p.segment_rows<Idx>(), lanes, counts);
    return last_launch_status("segment_backward_kernel");
  };
  return p.vectorized ? gather(std::integral_constant<int, Vec16<T>::kSize>{})
                      : gather(std::integral_constant<int, 1>{});
}

template <SegmentReduction R>
Status run(cudaStream_t stream, const SegmentProblem& p, int sm_count) {
  return dispatch_index(p.index_dtype, [&](auto index_tag) {
    using Idx = typename decltype(index_tag)::type;
    const Status st =
        p.backward ? dispatch_float<__half, __nv_bfloat16>(
                         p.dtype,
                         [&](auto tag) { return backward<R, typename decltype(tag)::type, Idx>(stream, p, sm_count); })
                   : dispatch_float<__half, __nv_bfloat16, int32_t, int64_t>(p.dtype, [&](auto tag) {
                       return forward<R, typename decltype(tag)::type, Idx>(stream, p, sm_count);
                     });
    if (!st || !p.bad_index_count || p.counted_size() == 0) return st;
    segment_count_bad_kernel<Idx><<<grid_stride_blocks(p.counted_size(), sm_count), kThreads, 0, stream>>>(
        static_cast<const Idx*>(p.counted()), p.counted_size(), p.counted_stride(), p.counted_bound(),
        p.counted_sorted(), reinterpret_cast<unsigned long long*>(p.bad_index_count));
    return last_launch_status("segment_count_bad_kernel");
  });
}

// One reduction's forward or backward, each defined in its own file (sum.cu, mean.cu, max.cu, min.cu).
Status launch_sum(cudaStream_t stream, const SegmentProblem& p, int sm_count);
Status launch_mean(cudaStream_t stream, const SegmentProblem& p, int sm_count);
Status launch_max(cudaStream_t stream, const SegmentProblem& p, int sm_count);
Status launch_min(cudaStream_t stream, const SegmentProblem& p, int sm_count);

}  // namespace baracuda::detail::cuda::segment

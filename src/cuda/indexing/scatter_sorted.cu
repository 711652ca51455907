// Scatter-add, sorted (deterministic), for the walks the line scatter does not take: each row's key
// (its destination's table offset) and values offset are radix-sorted (stable), then the runs of
// equal keys are summed by window with a fix-up pass (sorted_window.cuh). No atomics, so every run
// gives the same bits.
#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <numeric>

#include "common/checked.hpp"
#include "cuda/common/check.cuh"
#include "cuda/common/launch.cuh"
#include "cuda/common/sorted_window.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {
namespace {

// The sorted scatter's scratch within the workspace.
struct SortedBuffers {
  uint64_t* keys_in;
  uint64_t* keys;       // sorted
  int64_t* offsets_in;  // each row's values offset: the sort's payload
  int64_t* offsets;     // sorted
  void* partials;
  void* sort_temp;
  size_t sort_temp_bytes;
};

size_t round_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

SortedBuffers carve(void* workspace, const SortedScatterWorkspace& sizes) {
  char* p = static_cast<char*>(workspace);
  SortedBuffers b;
  b.keys_in = reinterpret_cast<uint64_t*>(p);
  b.keys = reinterpret_cast<uint64_t*>(p + sizes.keys);
  b.offsets_in = reinterpret_cast<int64_t*>(p + 2 * sizes.keys);
  b.offsets = reinterpret_cast<int64_t*>(p + 2 * sizes.keys + sizes.offsets);
  b.partials = p + 2 * sizes.keys + 2 * sizes.offsets;
  b.sort_temp = p + 2 * sizes.keys + 2 * sizes.offsets + sizes.partials;
  b.sort_temp_bytes = sizes.sort_temp;
  return b;
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

// The greatest common divisor of the table strides the rows step along (with dim's): every
// destination offset is a multiple of it. An embedding table of 768-element rows sorts 16-bit row
// numbers (two radix passes) instead of 26-bit offsets (four).
int64_t key_unit(const IndexedLayout& layout) {
  int64_t unit = layout.table_dim_stride;
  for (int d = 0; d < layout.rows.rank; ++d) unit = std::gcd(unit, layout.rows.strides[2][d]);
  return unit > 0 ? unit : 1;
}

int key_bits(uint64_t sentinel) {
  int bits = 1;
  while (bits < 64 && (uint64_t{1} << bits) <= sentinel) ++bits;
  return bits;
}

}  // namespace

template <class T, class Idx>
Status scatter_sorted(const Stream& stream, const IndexedProblem& p, int sm_count) {
  const IndexedLayout& layout = p.layout;
  cudaStream_t s = native(stream);
  const int64_t rows = layout.row_count;
  const SortedScatterWorkspace sizes = sorted_scatter_workspace(rows, layout.row_length, p.desc.dtype);
  const SortedBuffers b = carve(p.workspace, sizes);
  const int64_t unit = key_unit(layout);
  // The sentinel over the unit, rounded up: above every valid key (valid offsets are below sentinel_key).
  const SortedKeys k{b.keys, static_cast<uint64_t>((layout.sentinel_key + unit - 1) / unit), unit};
  const unsigned key_blocks = grid_stride_blocks(rows, sm_count);
  scatter_keys_kernel<Idx><<<key_blocks, kThreads, 0, s>>>(layout, static_cast<const Idx*>(p.index), unit, k.sentinel,
                                                           b.keys_in, b.offsets_in);
  if (Status st = last_launch_status("scatter_keys_kernel"); !st) return st;
  size_t temp_bytes = b.sort_temp_bytes;
  if (Status st = cuda_status(cub::DeviceRadixSort::SortPairs(b.sort_temp, temp_bytes, b.keys_in, b.keys, b.offsets_in,
                                                              b.offsets, rows, 0, key_bits(k.sentinel), s),
                              "cub::DeviceRadixSort::SortPairs");
      !st)
    return st;
  // Overwriting, the table was zeroed first (indexing.cu).
  const bool zeroed = !p.desc.accumulate;
  return sum_sorted_runs<T>(s, layout, p.vectorized_rows, zeroed, static_cast<const T*>(p.values),
                            static_cast<T*>(p.table), k, b.offsets, static_cast<acc_t<T>*>(b.partials), sm_count);
}

#define BARACUDA_INSTANTIATE(T, Idx) template Status scatter_sorted<T, Idx>(const Stream&, const IndexedProblem&, int);
BARACUDA_SCATTER_TYPES(BARACUDA_INSTANTIATE)
#undef BARACUDA_INSTANTIATE

SortedScatterWorkspace sorted_scatter_workspace(int64_t rows, int64_t row_length, DType dtype) {
  SortedScatterWorkspace w;
  const int64_t n = std::max<int64_t>(rows, 1);  // rows and row_length are below kMaxElements
  const CheckedSize keys = round_up_to(CheckedSize(n) * 8, 256);
  const int64_t window = sorted_window(row_length);
  const int64_t windows = (n + window - 1) / window;
  const CheckedSize partials =  // two rows a window, a row a chunk of windows (sorted_window.cuh)
      round_up_to(CheckedSize(2 * windows + windows / kChunkWindows) * std::max<int64_t>(row_length, 1) *
                      (dtype == DType::f64 ? 8 : 4),
                  256);
  // Past kMaxBytes the plan is refused at select; the sort is not even asked its scratch size.
  if (!(keys * 4 + partials).below(kMaxBytes)) return {};
  w.keys = w.offsets = static_cast<size_t>(keys.value());
  w.partials = static_cast<size_t>(partials.value());
  size_t temp = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, temp, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
                                  static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr), n, 0, 64);
  w.sort_temp = round_up(temp);
  w.fits = true;
  return w;
}

}  // namespace baracuda::detail::cuda

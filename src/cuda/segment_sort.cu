// The segment family's CUB calls (cuda/segment_sort.hpp): only the instantiations the host launcher
// uses.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda/common/check.cuh"
#include "cuda/segment_sort.hpp"

namespace baracuda::detail::cuda::segment {

struct MaxOfStarts {
  __host__ __device__ int64_t operator()(int64_t a, int64_t b) const { return a < b ? b : a; }
};

namespace {

template <class V>
size_t sort_pairs_bytes_of(int64_t count) {
  size_t temp = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, temp, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
                                  static_cast<V*>(nullptr), static_cast<V*>(nullptr), count);
  return temp;
}

template <class V>
Status sort_pairs_of(void* temp, size_t temp_bytes, const uint32_t* keys_in, uint32_t* keys_out, const V* rows_in,
                     V* rows_out, int64_t count, int key_bits, cudaStream_t stream) {
  return cuda_status(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, rows_in, rows_out, count, 0,
                                                     key_bits, stream),
                     "cub::DeviceRadixSort::SortPairs");
}

}  // namespace

size_t sort_pairs_bytes(int64_t count, bool narrow) {
  return narrow ? sort_pairs_bytes_of<uint32_t>(count) : sort_pairs_bytes_of<int64_t>(count);
}
Status sort_pairs(void* temp, size_t temp_bytes, const uint32_t* keys_in, uint32_t* keys_out, const uint32_t* rows_in,
                  uint32_t* rows_out, int64_t count, int key_bits, cudaStream_t stream) {
  return sort_pairs_of(temp, temp_bytes, keys_in, keys_out, rows_in, rows_out, count, key_bits, stream);
}
Status sort_pairs(void* temp, size_t temp_bytes, const uint32_t* keys_in, uint32_t* keys_out, const int64_t* rows_in,
                  int64_t* rows_out, int64_t count, int key_bits, cudaStream_t stream) {
  return sort_pairs_of(temp, temp_bytes, keys_in, keys_out, rows_in, rows_out, count, key_bits, stream);
}

size_t running_max_bytes(int64_t count) {
  size_t temp = 0;
  cub::DeviceScan::InclusiveScan(nullptr, temp, static_cast<int64_t*>(nullptr), static_cast<int64_t*>(nullptr),
                                 MaxOfStarts{}, count);
  return temp;
}
Status running_max(void* temp, size_t temp_bytes, int64_t* starts, int64_t count, cudaStream_t stream) {
  return cuda_status(cub::DeviceScan::InclusiveScan(temp, temp_bytes, starts, starts, MaxOfStarts{}, count, stream),
                     "cub::DeviceScan::InclusiveScan");
}

}  // namespace baracuda::detail::cuda::segment

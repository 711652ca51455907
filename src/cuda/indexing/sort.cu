// The sorted scatter-add's sort on CUDA: CUB's radix sort of (key, values offset) pairs, compiled
// ahead of time (a CUB device-wide algorithm: the kernels compiled at select cannot carry it), for
// the one instantiation the scatter uses: 64-bit keys and offsets, counted in int64.
#include <cub/device/device_radix_sort.cuh>

#include "cuda/common/check.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {

size_t sort_pairs_scratch(int64_t rows) {
  size_t temp = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, temp, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
                                  static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr), rows, 0, 64);
  return temp;
}

Status sort_pairs(void* scratch, size_t scratch_bytes, const uint64_t* keys_in, uint64_t* keys,
                  const int64_t* offsets_in, int64_t* offsets, int64_t rows, int key_bits, const Stream& stream) {
  size_t temp_bytes = scratch_bytes;
  return cuda_status(cub::DeviceRadixSort::SortPairs(scratch, temp_bytes, keys_in, keys, offsets_in, offsets, rows, 0,
                                                     key_bits, native(stream)),
                     "cub::DeviceRadixSort::SortPairs");
}

}  // namespace baracuda::detail::cuda

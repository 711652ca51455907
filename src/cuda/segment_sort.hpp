#pragma once
// The segment family's CUB calls, compiled ahead of time (cuda/segment_sort.cu: CUB's device-wide
// algorithms are not compiled at select), behind plain functions for the host launcher
// (cuda/segment.cpp): the sort variant's radix sort of (segment key, row) pairs, and the running
// maximum of the offsets' starts. Each *_bytes is CUB's own scratch for the call of that size.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "baracuda/core/status.hpp"

namespace baracuda::detail::cuda::segment {

// The pairs sorted by the keys' low `key_bits` bits, stably; rows of 32 bits (`narrow`) or 64.
size_t sort_pairs_bytes(int64_t count, bool narrow);
Status sort_pairs(void* temp, size_t temp_bytes, const uint32_t* keys_in, uint32_t* keys_out, const uint32_t* rows_in,
                  uint32_t* rows_out, int64_t count, int key_bits, cudaStream_t stream);
Status sort_pairs(void* temp, size_t temp_bytes, const uint32_t* keys_in, uint32_t* keys_out, const int64_t* rows_in,
                  int64_t* rows_out, int64_t count, int key_bits, cudaStream_t stream);

// Each of the `count` starts raised to the largest before it, in place.
size_t running_max_bytes(int64_t count);
Status running_max(void* temp, size_t temp_bytes, int64_t* starts, int64_t count, cudaStream_t stream);

}  // namespace baracuda::detail::cuda::segment

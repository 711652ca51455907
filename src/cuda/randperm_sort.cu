// randperm's sort on CUDA: CUB's radix sort of (key, value) pairs, compiled ahead of time (a CUB
// device-wide algorithm: the kernels compiled at select cannot carry it). The workspace holds keys in,
// keys out, values in, values out (n 8-byte words each), then CUB's scratch.
#include <cub/device/device_radix_sort.cuh>

#include "cuda/common/check.cuh"
#include "ops/randperm_problem.hpp"

namespace baracuda::detail::cuda {

namespace {
size_t sort_scratch(int64_t n) {
  size_t temp = 0;
  // (a failed query leaves 0: the sort then refuses at run, a status)
  cub::DeviceRadixSort::SortPairs(nullptr, temp, static_cast<const unsigned long long*>(nullptr),
                                  static_cast<unsigned long long*>(nullptr), static_cast<const long long*>(nullptr),
                                  static_cast<long long*>(nullptr), static_cast<int>(n), 0, 64);
  return temp;
}
}  // namespace

size_t randperm_workspace(int64_t n) { return 4 * randperm_array_bytes(n) + sort_scratch(n); }

Status randperm_sort(const Stream& stream, const Workspace& workspace, int64_t n) {
  auto* base = static_cast<unsigned char*>(workspace.data);
  const size_t array = randperm_array_bytes(n);
  auto* keys_in = reinterpret_cast<unsigned long long*>(base);
  auto* keys_out = reinterpret_cast<unsigned long long*>(base + array);
  auto* values_in = reinterpret_cast<long long*>(base + 2 * array);
  auto* values_out = reinterpret_cast<long long*>(base + 3 * array);
  // CUB's scratch: what the workspace holds past the arrays (at least what select planned; CUB
  // refuses, as a status, a size short of its need).
  size_t temp = workspace.size - 4 * array;
  return cuda_status(cub::DeviceRadixSort::SortPairs(base + 4 * array, temp, keys_in, keys_out, values_in, values_out,
                                                     static_cast<int>(n), 0, 64, native(stream)),
                     "cub::DeviceRadixSort::SortPairs");
}

}  // namespace baracuda::detail::cuda

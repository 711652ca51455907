#pragma once
// The CUDA runtime as the rest of the library sees it, with no CUDA header needed. Implemented in
// src/cuda/device.cpp, or in src/cuda/no_cuda.cpp when the library is built without CUDA.
#include <cstdint>

#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"

namespace baracuda::detail {

struct CudaDeviceInfo {
  int arch = 0;  // compute capability * 10
  int sm_count = 0;
  int shared_per_block = 0;  // bytes a block may opt in to (cudaDevAttrMaxSharedMemoryPerBlockOptin)
  int shared_per_sm = 0;     // bytes an SM holds for its blocks
};
// Cached per device; an error (no GPU, bad ordinal) comes back as a Status.
Expected<CudaDeviceInfo> cuda_device_info(int device);

// The device's shared memory: a block's most, opted in, and an SM's (sm_90's 227 and 228 KiB where
// the runtime cannot say).
struct SharedLimits {
  int64_t block = 227 * 1024, sm = 228 * 1024;
};
inline SharedLimits shared_limits(int device) {
  SharedLimits s;
  if (Expected<CudaDeviceInfo> info = cuda_device_info(device); info && info->shared_per_block > 0) {
    s.block = info->shared_per_block;
    s.sm = info->shared_per_sm > s.block ? info->shared_per_sm : s.block;
  }
  return s;
}
Status cuda_synchronize(CUstream_st* stream, int device);

// Makes `device` current for a scope and restores the previous one (a no-op without CUDA).
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
  int device_ = -1;
};

}  // namespace baracuda::detail

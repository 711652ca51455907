#pragma once
// CUDA errors become Status values (never an abort), and the device is set for the launch.
#include <cuda_runtime.h>

#include <string>

#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"

namespace baracuda::detail::cuda {

inline Status cuda_status(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  return Status::error(StatusCode::backend_error,
                       std::string(what) + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

// The launch error of the kernel just queued, if any.
inline Status last_launch_status(const char* kernel) { return cuda_status(cudaGetLastError(), kernel); }

// Makes `device` current for a scope and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    cudaGetDevice(&previous_);
    if (previous_ != device) cudaSetDevice(device);
    device_ = device;
  }
  ~DeviceGuard() {
    if (previous_ != device_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  int device_ = 0;
};

inline cudaStream_t native(const Stream& stream) { return stream.cuda_stream(); }

}  // namespace baracuda::detail::cuda

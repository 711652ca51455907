// Device discovery and synchronization through the CUDA runtime.
#include <cuda_runtime.h>

#include <array>
#include <mutex>
#include <string>

#include "cuda/runtime.hpp"

namespace baracuda {
namespace {

struct DeviceTable {
  int count = 0;
  std::string reason;  // why count is 0
  static constexpr int kMaxDevices = 64;
  std::array<detail::CudaDeviceInfo, kMaxDevices> info{};
};

const DeviceTable& devices() {
  static const DeviceTable table = [] {
    DeviceTable t;
    const cudaError_t err = cudaGetDeviceCount(&t.count);
    if (err != cudaSuccess) {
      t.count = 0;
      t.reason = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
      cudaGetLastError();  // clear it: no device is a normal condition for this library
      return t;
    }
    if (t.count == 0) t.reason = "the CUDA runtime reports no device";
    for (int d = 0; d < t.count && d < DeviceTable::kMaxDevices; ++d) {
      int major = 0, minor = 0, sms = 0, block_shared = 0, sm_shared = 0;
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d);
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d);
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d);
      cudaDeviceGetAttribute(&block_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, d);
      cudaDeviceGetAttribute(&sm_shared, cudaDevAttrMaxSharedMemoryPerMultiprocessor, d);
      t.info[d] = {major * 10 + minor, sms, block_shared, sm_shared};
    }
    return t;
  }();
  return table;
}

}  // namespace

int cuda_device_count() { return devices().count; }
std::string_view cuda_unavailable_reason() { return devices().reason; }

namespace detail {

Expected<CudaDeviceInfo> cuda_device_info(int device) {
  const DeviceTable& t = devices();
  if (t.count == 0) return Status::error(StatusCode::backend_error, "no CUDA device is usable (" + t.reason + ")");
  if (device < 0 || device >= t.count || device >= DeviceTable::kMaxDevices)
    return Status::error(StatusCode::invalid_problem, "CUDA device " + std::to_string(device) + " does not exist (" +
                                                          std::to_string(t.count) + " present)");
  return t.info[device];
}

DeviceScope::DeviceScope(int device) : device_(device) {
  cudaGetDevice(&previous_);
  if (previous_ != device_) cudaSetDevice(device_);
}

DeviceScope::~DeviceScope() {
  if (previous_ != device_) cudaSetDevice(previous_);
}

Status cuda_synchronize(CUstream_st* stream, int device) {
  const DeviceScope scope(device);
  const cudaError_t err = cudaStreamSynchronize(stream);
  if (err != cudaSuccess)
    return Status::error(StatusCode::backend_error, std::string("cudaStreamSynchronize: ") + cudaGetErrorName(err) +
                                                        ": " + cudaGetErrorString(err));
  return Status::ok();
}

}  // namespace detail
}  // namespace baracuda

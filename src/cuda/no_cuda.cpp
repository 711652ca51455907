// Built instead of the CUDA backend when BARACUDA_ENABLE_CUDA is OFF: no device is ever usable.
#include "cuda/runtime.hpp"

namespace baracuda {

int cuda_device_count() { return 0; }
std::string_view cuda_unavailable_reason() { return "baracuda was built without CUDA"; }

namespace detail {
Expected<CudaDeviceInfo> cuda_device_info(int) {
  return Status::error(StatusCode::unsupported, "baracuda was built without CUDA");
}
Status cuda_synchronize(CUstream_st*, int) {
  return Status::error(StatusCode::unsupported, "baracuda was built without CUDA");
}
}  // namespace detail
}  // namespace baracuda

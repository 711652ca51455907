// Built instead of the CUDA backend when BARACUDA_ENABLE_CUDA is OFF: no device is ever usable.
#include "baracuda/core/kernels.hpp"
#include "cuda/runtime.hpp"
#include "ops/indexing_problem.hpp"
#include "ops/segment_problem.hpp"

namespace baracuda {

int cuda_device_count() { return 0; }
std::string_view cuda_unavailable_reason() { return "baracuda was built without CUDA"; }
Expected<PrecompileReport> precompile(const PrecompileOptions&) {
  return Status::error(StatusCode::unsupported, "precompile: baracuda was built without CUDA: no kernel to compile");
}
std::string kernel_cache_directory() { return ""; }

namespace detail {
Expected<CudaDeviceInfo> cuda_device_info(int) {
  return Status::error(StatusCode::unsupported, "baracuda was built without CUDA");
}
DeviceScope::DeviceScope(int device) : device_(device) {}
DeviceScope::~DeviceScope() = default;
Status cuda_synchronize(CUstream_st*, int) {
  return Status::error(StatusCode::unsupported, "baracuda was built without CUDA");
}
// Never reached: select fails first, as no CUDA stream resolves to a device.
namespace cuda {
ScatterStrategy scatter_strategy(const IndexedProblemDesc&, std::optional<IndexVariant>, bool) { return {}; }
CheckedSize segment_workspace(const SegmentProblem&) { return 0; }
}  // namespace cuda
}  // namespace detail
}  // namespace baracuda

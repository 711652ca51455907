#pragma once
// Launching the kernels compiled at select: the plan's module (PlanChoice::kernels, from jit::load at
// select) and one launch of a kernel whose only parameter is its params struct, passed by value
// (`const __grid_constant__` on the device side), with `shared` bytes of dynamic shared memory.
#include <cuda_runtime.h>

#include "cuda/common/check.cuh"
#include "cuda/jit/jit.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail::cuda {

inline const jit::Module& jit_module(const LaunchContext& ctx) {
  return *static_cast<const jit::Module*>(ctx.choice.kernels);
}

template <class Params>
Status launch_jit(const void* kernel, int64_t grid, int threads, Params& params, const Stream& stream, const char* what,
                  size_t shared = 0) {
  void* args[] = {&params};
  return cuda_status(cudaLaunchKernel(kernel, dim3(static_cast<unsigned>(grid)), dim3(static_cast<unsigned>(threads)),
                                      args, shared, native(stream)),
                     what);
}

// How many clusters of `cluster` blocks of `threads` the current device holds at once (sm_90's
// clusters); for one block, its blocks an SM times `sm_count`. 0: the device cannot place one.
Expected<int> resident_clusters(const void* kernel, int threads, int cluster, int sm_count, const char* what);

// A launch of `clusters` clusters of `cluster` blocks of `threads` (a plain launch for one block).
template <class Params>
Status launch_jit_clusters(const void* kernel, int64_t clusters, int threads, int cluster, const Params& params,
                           const Stream& stream, const char* what) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(clusters * cluster));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.stream = native(stream);
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(cluster);
  attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = cluster > 1 ? 1 : 0;
  void* args[] = {const_cast<Params*>(&params)};  // (read, never written)
  return cuda_status(cudaLaunchKernelExC(&config, kernel, args), what);
}

// A kernel attribute raised to `value` on the current device (a dynamic shared memory limit, a carveout):
// the largest asked so far stays, so that a launch asking less never lowers it under another's. The
// CUDA call is made once per (kernel, device, attribute, larger value), not on every run (its host
// cost shows in short runs). `what` names the caller in an error.
Status raise_kernel_attribute(const void* kernel, cudaFuncAttribute attribute, int value, const char* what);

}  // namespace baracuda::detail::cuda

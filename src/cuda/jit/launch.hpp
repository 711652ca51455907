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

}  // namespace baracuda::detail::cuda

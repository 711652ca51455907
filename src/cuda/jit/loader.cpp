// The in-process kernel cache: compiled programs loaded as CUDA libraries (context-independent, so
// one load serves every device), kept for the life of the process.
#include <cuda_runtime.h>

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "cuda/jit/jit.hpp"
#include "cuda/jit/launch.hpp"

namespace baracuda::detail::jit {
namespace {

Expected<const Module*> load_compiled(const Program& program, int arch, std::string_view plan) {
  Expected<Compiled> compiled = compile(program, arch, plan);
  if (!compiled) return compiled.status();
  auto fail = [&](const char* step, cudaError_t err) -> Status {
    cudaGetLastError();  // a failed load leaves no sticky error: clear the runtime's last error
    return Status::error(StatusCode::backend_error, std::string(plan) + ": kernel " + program.name + ": " + step +
                                                        ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
  };
  cudaLibrary_t library = nullptr;
  cudaError_t err = cudaLibraryLoadData(&library, compiled->cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (err != cudaSuccess) return fail("cudaLibraryLoadData", err);
  // Never unloaded: plans hold the kernels, and unloading at exit races the runtime's own teardown.
  auto module = std::make_unique<Module>();
  for (const std::string& name : compiled->lowered) {
    cudaKernel_t kernel = nullptr;
    if ((err = cudaLibraryGetKernel(&kernel, library, name.c_str())) != cudaSuccess) {
      cudaLibraryUnload(library);
      return fail("cudaLibraryGetKernel", err);
    }
    module->kernels.push_back(reinterpret_cast<void*>(kernel));
  }
  return module.release();
}

struct Cache {
  std::mutex mutex;
  // One entry per key, made by the first thread to ask; the others wait on its future.
  std::map<std::string, std::shared_future<Expected<const Module*>>> entries;
};
Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: modules outlive static destruction
  return *c;
}

}  // namespace

Expected<const Module*> load(const Program& program, int arch, std::string_view plan) {
  const std::string key = cache_key(program, arch);
  Cache& c = cache();
  std::promise<Expected<const Module*>> promise;
  std::shared_future<Expected<const Module*>> future;
  bool mine = false;
  {
    const std::lock_guard lock(c.mutex);
    auto [it, inserted] = c.entries.try_emplace(key);
    if (inserted) {
      it->second = promise.get_future().share();
      mine = true;
    }
    future = it->second;
  }
  if (mine) {
    Expected<const Module*> loaded = load_compiled(program, arch, plan);
    if (!loaded) {  // not kept: a later select may find NVRTC or the device in a better state
      const std::lock_guard lock(c.mutex);
      c.entries.erase(key);
    }
    promise.set_value(std::move(loaded));
  }
  return future.get();
}

}  // namespace baracuda::detail::jit

namespace baracuda::detail::cuda {

Expected<int> resident_clusters(const void* kernel, int threads, int cluster, int sm_count, const char* what) {
  int resident = 0;
  if (cluster <= 1) {
    if (Status s = cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, threads, 0), what); !s)
      return s;
    return resident * sm_count;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(cluster));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(cluster);
  attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  if (Status s = cuda_status(cudaOccupancyMaxActiveClusters(&resident, kernel, &config), what); !s) return s;
  return resident;
}

Status raise_kernel_attribute(const void* kernel, cudaFuncAttribute attribute, int value, const char* what) {
  int device = 0;
  if (Status s = cuda_status(cudaGetDevice(&device), what); !s) return s;
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int, int>, int> raised;  // (kernel, device, attribute): value
  const std::lock_guard lock(mutex);
  int& current = raised[std::make_tuple(kernel, device, static_cast<int>(attribute))];
  if (current >= value) return Status::ok();
  if (Status s = cuda_status(cudaFuncSetAttribute(kernel, attribute, value), what); !s) return s;
  current = value;
  return Status::ok();
}

}  // namespace baracuda::detail::cuda

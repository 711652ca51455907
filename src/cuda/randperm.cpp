// randperm on CUDA: the keys and the write compiled at select (cuda/device/randperm.cuh), CUB's radix
// sort between them (cuda/randperm_sort.cu).
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/common/check.cuh"
#include "cuda/device/params.h"
#include "cuda/jit/jit.hpp"
#include "ops/randperm_problem.hpp"

namespace baracuda::detail::cuda {

// The program's kernels: randperm_keys, randperm_write<T>.
jit::Program randperm_program(DType t) {
  jit::Program p;
  p.name = "randperm<" + std::string(dtype_name(t)) + ">";
  p.source = "#include \"cuda/device/randperm.cuh\"\n";
  p.kernels = {"baracuda::device::randperm_keys",
               std::string("baracuda::device::randperm_write<") + (t == DType::i32 ? "int" : "long long") + ">"};
  return p;
}

Expected<const void*> randperm_kernels(const PlanTarget& target, DType dtype, std::string_view plan) {
  Expected<const jit::Module*> m = jit::load(randperm_program(dtype), target.arch, plan);
  if (!m) return m.status();
  return static_cast<const void*>(*m);
}

Status launch(const LaunchContext& ctx, const RandpermProblem& p) {
  const int64_t n = p.desc.n;
  const jit::Module& m = *static_cast<const jit::Module*>(ctx.choice.kernels);
  auto* base = static_cast<unsigned char*>(ctx.workspace.data);
  const size_t array = randperm_array_bytes(n);
  device::RandpermParams params{};
  params.keys = reinterpret_cast<unsigned long long*>(base);
  params.values = reinterpret_cast<long long*>(base + 2 * array);
  params.sorted = reinterpret_cast<const long long*>(base + 3 * array);
  params.out = p.out;
  params.n = n;
  params.out_stride = p.out_stride;
  params.seed = p.desc.seed;
  params.offset = p.desc.offset;
  const unsigned blocks = static_cast<unsigned>(
      std::clamp<int64_t>((n + 255) / 256, 1, 32 * static_cast<int64_t>(std::max(ctx.target.sm_count, 1))));
  void* args[] = {&params};
  if (Status s = cuda_status(cudaLaunchKernel(m.kernels[0], dim3(blocks), dim3(256), args, 0, native(ctx.stream)),
                             "randperm_keys");
      !s)
    return s;
  if (Status s = randperm_sort(ctx.stream, ctx.workspace, n); !s) return s;
  return cuda_status(cudaLaunchKernel(m.kernels[1], dim3(blocks), dim3(256), args, 0, native(ctx.stream)),
                     "randperm_write");
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {
std::vector<Program> randperm_programs() {
  return {cuda::randperm_program(DType::i32), cuda::randperm_program(DType::i64)};
}
}  // namespace baracuda::detail::jit

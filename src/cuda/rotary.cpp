// The CUDA side of the rotary plans: the kernels of cuda/device/rotary.cuh, compiled at select per
// dtype and index dtype without FMA contraction (so the cos / sin and the rotation round as the host's
// do), and their launch.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/jit/jit.hpp"
#include "cuda/jit/launch.hpp"
#include "ops/rotary_problem.hpp"

namespace baracuda::detail::cuda {

// The program's kernels: rotary<T, I, half_split>, rotary<T, I, interleaved>.
jit::Program rotary_program(DType t, DType index) {
  jit::Program p;
  const std::string T = jit::device_type(t), I = index == DType::i32 ? "int" : "long long";
  p.name = "rotary<" + std::string(dtype_name(t)) + ", " + std::string(dtype_name(index)) + ">";
  p.source = "#include \"cuda/device/rotary.cuh\"\n";
  p.options = {"--fmad=false"};
  p.kernels.push_back("baracuda::device::rotary<" + T + ", " + I + ", false>");
  p.kernels.push_back("baracuda::device::rotary<" + T + ", " + I + ", true>");
  return p;
}

Expected<const void*> rotary_kernels(const PlanTarget& target, DType dtype, DType index_dtype, std::string_view plan) {
  Expected<const jit::Module*> m = jit::load(rotary_program(dtype, index_dtype), target.arch, plan);
  if (!m) return m.status();
  return static_cast<const void*>(*m);
}

Status launch(const LaunchContext& ctx, const RotaryProblem& p) {
  device::RotaryParams params = p.params;
  const int64_t total = params.tokens * params.items;
  if (total == 0) return Status::ok();
  // A thread an item (a pair, or a copied dim, of one token), grid-stride beyond 32 blocks an SM.
  const int64_t blocks =
      std::clamp<int64_t>((total + 255) / 256, 1, 32 * static_cast<int64_t>(std::max(ctx.target.sm_count, 1)));
  const void* kernel = jit_module(ctx).kernels[p.layout == RotaryLayout::interleaved ? 1 : 0];
  return launch_jit(kernel, blocks, 256, params, ctx.stream, "rotary");
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {
std::vector<Program> rotary_programs() {
  std::vector<Program> out;
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (DType index : {DType::i32, DType::i64}) out.push_back(cuda::rotary_program(t, index));
  return out;
}
}  // namespace baracuda::detail::jit

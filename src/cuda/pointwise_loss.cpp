// The CUDA side of the pointwise loss plans: the kernels of cuda/device/pointwise_loss.cuh, compiled
// at select per dtype, and their launches.
#include "cuda/device/pointwise_loss.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/jit/jit.hpp"
#include "cuda/jit/launch.hpp"
#include "ops/pointwise_loss_problem.hpp"

namespace baracuda::detail::cuda {

// The program's kernels, kContig true then false: none, chunks, backward; then total.
jit::Program pointwise_loss_program(DType t) {
  jit::Program p;
  const std::string T = jit::device_type(t);
  p.name = "pointwise_loss<" + std::string(dtype_name(t)) + ">";
  p.source = "#include \"cuda/device/pointwise_loss.cuh\"\n";
  // No FMA contraction: the vector and element-wise paths (and the contiguous and walked kernels)
  // then add exactly the same terms, so a sum's bits do not depend on the views.
  p.options = {"--fmad=false"};
  for (const char* contig : {"true", "false"})
    for (const char* kernel : {"pointwise_loss_none", "pointwise_loss_chunks", "pointwise_loss_backward"})
      p.kernels.push_back("baracuda::device::" + std::string(kernel) + "<" + T + ", " + contig + ">");
  p.kernels.push_back("baracuda::device::pointwise_loss_total<" + T + ">");
  return p;
}

Expected<const void*> pointwise_loss_kernels(const PlanTarget& target, DType dtype, std::string_view plan) {
  Expected<const jit::Module*> m = jit::load(pointwise_loss_program(dtype), target.arch, plan);
  if (!m) return m.status();
  return static_cast<const void*>(*m);
}

Status launch(const LaunchContext& ctx, const PointwiseLossProblem& p) {
  device::PointwiseLossParams params = p.params;
  const jit::Module& m = jit_module(ctx);
  const int base = params.contiguous ? 0 : 3;
  // Elementwise: a thread a 16-byte slot of elements, grid-stride past 32 blocks an SM.
  const int64_t slot = 16 / static_cast<int64_t>(dtype_size(p.dtype)), slots = (params.n + slot - 1) / slot;
  const int64_t blocks =
      std::clamp<int64_t>((slots + 255) / 256, 1, 32 * static_cast<int64_t>(std::max(ctx.target.sm_count, 1)));
  if (p.backward) {
    if (params.n == 0) return Status::ok();
    return launch_jit(m.kernels[base + 2], blocks, 256, params, ctx.stream, "pointwise_loss_backward");
  }
  if (params.reduction == device::kReduceNone) {
    if (params.n == 0) return Status::ok();
    return launch_jit(m.kernels[base], blocks, 256, params, ctx.stream, "pointwise_loss_none");
  }
  if (params.chunks > 0x7fffffff)
    return Status::error(StatusCode::unsupported, "PointwiseLossPlan: descriptor.shape: more than 2^31 - 1 chunks of " +
                                                      std::to_string(params.chunk) + " elements for one launch");
  if (params.chunks > 0)
    if (Status s = launch_jit(m.kernels[base + 1], params.chunks, 256, params, ctx.stream, "pointwise_loss_chunks"); !s)
      return s;
  return launch_jit(m.kernels[6], 1, 1024, params, ctx.stream, "pointwise_loss_total");
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {
std::vector<Program> pointwise_loss_programs() {
  std::vector<Program> out;
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) out.push_back(cuda::pointwise_loss_program(t));
  return out;
}
}  // namespace baracuda::detail::jit

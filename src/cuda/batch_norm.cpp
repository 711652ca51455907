// The CUDA side of the batch norm plans: the kernels of cuda/device/batch_norm.cuh, compiled at
// select for the plan's dtypes and direction, and their launches.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/device/params.h"
#include "cuda/jit/jit.hpp"
#include "cuda/jit/launch.hpp"
#include "ops/batch_norm_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {

namespace {
// The kernel shapes, in a program's order: [vectors, flat, any walk].
constexpr const char* kShapes[] = {"true, true", "true, false", "false, false"};
}  // namespace

// The program's kernels: the first kernel's three shapes (moments / sums), then the second's
// (apply / dx).
jit::Program batch_norm_program(DType t, DType w, bool backward) {
  jit::Program p;
  p.name = std::string(backward ? "batch_norm_backward<" : "batch_norm_forward<") + std::string(dtype_name(t)) + ", " +
           std::string(dtype_name(w)) + ">";
  p.source = "#include \"cuda/device/batch_norm.cuh\"\n";
  const std::string T = jit::device_type(t), W = jit::device_type(w);
  for (const char* shape : kShapes)
    p.kernels.push_back(backward ? "baracuda::device::batch_norm_sums<" + T + ", " + W + ", " + shape + ">"
                                 : "baracuda::device::batch_norm_moments<" + T + ", " + shape + ">");
  for (const char* shape : kShapes)
    p.kernels.push_back(std::string("baracuda::device::") + (backward ? "batch_norm_dx<" : "batch_norm_apply<") + T +
                        ", " + W + ", " + shape + ">");
  return p;
}

namespace {

device::BatchNormParams params_of(const BatchNormGeometry& g, const BatchNormDescriptor& d) {
  device::BatchNormParams p{};
  p.channels = g.channels;
  p.elements = g.elements;
  p.chunks = g.chunks;
  p.chunk_len = g.chunk_len;
  for (int t = 0; t < kBatchNormViews; ++t) p.c_stride[t] = g.c_stride[t];
  p.eps = d.eps;
  p.momentum = d.momentum;
  p.training = d.training;
  p.walk.rank = g.walk.rank;
  for (int k = 0; k < kMaxRank; ++k) {
    p.walk.sizes[k] = g.walk.sizes[k];
    for (int t = 0; t < kBatchNormViews; ++t) p.walk.strides[t][k] = g.walk.strides[t][k];
  }
  return p;
}

// The kernel shape for the views: [0] 16-byte vectors along the inner dim (every x-shaped view
// present unit-strided there, its other strides whole vectors, 16-byte aligned, the inner size and
// the chunks whole vectors), [1] the other dims at most two, [2] any.
int shape_index(const BatchNormGeometry& g, DType dtype, std::initializer_list<const void*> views) {
  if (g.walk.rank > 2) return 2;
  const int64_t vw = 16 / static_cast<int64_t>(dtype_size(dtype));
  const int r = g.walk.rank;
  if (r == 0 || g.walk.sizes[r - 1] % vw != 0 || g.chunk_len % vw != 0) return 1;
  int t = 0;
  for (const void* data : views) {
    if (data && (!aligned16(data) || g.walk.strides[t][r - 1] != 1 || g.c_stride[t] % vw != 0 ||
                 (r == 2 && g.walk.strides[t][0] % vw != 0)))
      return 1;
    ++t;
  }
  return 0;
}

// Blocks: a (channel, chunk) each at a time, at most 2^20; 512 threads, fewer for short chunks.
int64_t blocks_for(const BatchNormGeometry& g) { return std::min<int64_t>(g.channels * g.chunks, int64_t{1} << 20); }
int threads_for(const BatchNormGeometry& g) {
  return static_cast<int>(std::clamp<int64_t>((g.chunk_len / 16 + 31) / 32 * 32, 64, 512));
}

}  // namespace

Expected<const void*> batch_norm_kernels(const PlanTarget& target, DType dtype, DType weight_dtype, bool backward,
                                         std::string_view plan) {
  Expected<const jit::Module*> m = jit::load(batch_norm_program(dtype, weight_dtype, backward), target.arch, plan);
  if (!m) return m.status();
  return static_cast<const void*>(*m);
}

Status launch(const LaunchContext& ctx, const BatchNormForwardProblem& p) {
  const BatchNormGeometry& g = p.geometry;
  const BatchNormArgs& a = p.args;
  device::BatchNormParams params = params_of(g, p.desc);
  params.x = a.x.data;
  params.y = a.y.data;
  params.weight = p.desc.has_weight ? a.weight.data : nullptr;
  params.bias = p.desc.has_bias ? a.bias.data : nullptr;
  params.running_mean = p.desc.running_stats ? a.running_mean.data : nullptr;
  params.running_var = p.desc.running_stats ? a.running_var.data : nullptr;
  params.save_mean = p.desc.training ? a.save_mean.data : nullptr;
  params.save_rstd = p.desc.training ? a.save_rstd.data : nullptr;
  params.partial = ctx.workspace.data;
  const int64_t* cs = g.channel_stride;
  params.weight_stride = cs[0];
  params.bias_stride = cs[1];
  params.running_mean_stride = cs[2];
  params.running_var_stride = cs[3];
  params.save_mean_stride = cs[4];
  params.save_rstd_stride = cs[5];
  const int64_t blocks = blocks_for(g);
  if (blocks == 0) return Status::ok();
  const int shape = shape_index(g, p.desc.dtype, {params.x, params.y});
  const jit::Module& m = jit_module(ctx);
  if (p.desc.training)
    if (Status s = launch_jit(m.kernels[shape], blocks, threads_for(g), params, ctx.stream, "batch_norm_moments"); !s)
      return s;
  return launch_jit(m.kernels[3 + shape], blocks, threads_for(g), params, ctx.stream, "batch_norm_apply");
}

Status launch(const LaunchContext& ctx, const BatchNormBackwardProblem& p) {
  const BatchNormGeometry& g = p.geometry;
  const BatchNormBackwardArgs& a = p.args;
  device::BatchNormParams params = params_of(g, p.desc);
  params.dy = a.dy.data;
  params.x = a.x.data;
  params.dx = a.dx.data;
  params.weight = p.desc.has_weight ? a.weight.data : nullptr;
  params.save_mean = p.desc.training ? const_cast<void*>(a.save_mean.data) : nullptr;
  params.save_rstd = p.desc.training ? const_cast<void*>(a.save_rstd.data) : nullptr;
  params.running_mean = p.desc.training ? nullptr : const_cast<void*>(a.running_mean.data);
  params.running_var = p.desc.training ? nullptr : const_cast<void*>(a.running_var.data);
  params.dweight = a.dweight.data;
  params.dbias = a.dbias.data;
  params.partial = ctx.workspace.data;
  const int64_t* cs = g.channel_stride;
  params.weight_stride = cs[0];
  params.save_mean_stride = cs[1];
  params.save_rstd_stride = cs[2];
  params.running_mean_stride = cs[3];
  params.running_var_stride = cs[4];
  params.dweight_stride = cs[5];
  params.dbias_stride = cs[6];
  const int64_t blocks = blocks_for(g);
  if (blocks == 0 || (!params.dx && !params.dweight && !params.dbias)) return Status::ok();
  const int shape = shape_index(g, p.desc.dtype, {params.dy, params.x, params.dx});
  const jit::Module& m = jit_module(ctx);
  if (Status s = launch_jit(m.kernels[shape], blocks, threads_for(g), params, ctx.stream, "batch_norm_sums"); !s)
    return s;
  return launch_jit(m.kernels[3 + shape], blocks, threads_for(g), params, ctx.stream, "batch_norm_dx");
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

std::vector<Program> batch_norm_programs() {
  std::vector<Program> out;
  for (bool backward : {false, true})
    for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      out.push_back(cuda::batch_norm_program(t, t, backward));
      if (t != DType::f32) out.push_back(cuda::batch_norm_program(t, DType::f32, backward));
    }
  return out;
}

}  // namespace baracuda::detail::jit

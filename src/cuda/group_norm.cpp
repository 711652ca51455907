// The CUDA side of the group norm plans: the kernels of cuda/device/group_norm.cuh, compiled at
// select for the plan's dtypes, direction and activation, and their launches.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "common/checked.hpp"
#include "cuda/device/params.h"
#include "cuda/jit/jit.hpp"
#include "cuda/jit/launch.hpp"
#include "ops/group_norm_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {

// 16-byte vectors a thread holds in the held forward (its kHeld).
constexpr int kGroupHeld = 8;

// The program's kernels: [flat spatial dims in vectors, flat, any spatial dims], then the forward's
// held kernel or the backward's finalize.
jit::Program group_norm_program(DType t, DType w, bool backward, bool silu) {
  jit::Program p;
  const std::string name = backward ? "group_norm_backward" : "group_norm_forward";
  p.name = name + "<" + std::string(dtype_name(t)) + ", " + std::string(dtype_name(w)) + (silu ? ", silu" : "") + ">";
  p.source = "#include \"cuda/device/group_norm.cuh\"\n";
  const std::string types = jit::device_type(t) + ", " + jit::device_type(w) + ", " + (silu ? "true" : "false");
  for (const char* shape : {"true, true", "true, false", "false, false"})
    p.kernels.push_back("baracuda::device::" + name + "<" + types + ", " + shape + ">");
  if (backward)
    p.kernels.push_back("baracuda::device::norm_finalize<" + jit::device_type(t) + ", " + jit::device_type(w) + ">");
  else
    p.kernels.push_back("baracuda::device::group_norm_forward_held<" + types + ", " + std::to_string(kGroupHeld) + ">");
  return p;
}

namespace {

device::GroupNormParams params_of(const GroupNormGeometry& g, double eps) {
  device::GroupNormParams p{};
  p.samples = g.samples;
  p.channels = g.channels;
  p.groups = g.groups;
  p.group_channels = g.group_channels;
  p.spatial = g.spatial;
  for (int t = 0; t < kGroupNormViews; ++t) {
    p.n_stride[t] = g.n_stride[t];
    p.c_stride[t] = g.c_stride[t];
  }
  p.weight_stride = g.weight_stride;
  p.bias_stride = g.bias_stride;
  for (int k = 0; k < 2; ++k) {
    p.mean_stride[k] = g.mean_stride[k];
    p.rstd_stride[k] = g.rstd_stride[k];
  }
  p.eps = eps;
  p.channel_minor = g.channel_minor;
  p.space.rank = g.space.rank;
  for (int d = 0; d < kMaxRank; ++d) {
    p.space.sizes[d] = g.space.sizes[d];
    for (int t = 0; t < kGroupNormViews; ++t) p.space.strides[t][d] = g.space.strides[t][d];
  }
  return p;
}

// The kernel for the views: [0] 16-byte vectors along the fast axis (every x-shaped view present
// unit-strided along it, whole vectors of it in a group, its other strides whole vectors, 16-byte
// aligned), [1] the spatial dims one, [2] any.
int kernel_index(const GroupNormGeometry& g, DType dtype, std::initializer_list<const void*> views) {
  if (g.space.rank > 1) return 2;
  const int64_t vw = 16 / static_cast<int64_t>(dtype_size(dtype));
  const int64_t fast = g.channel_minor ? g.group_channels : g.spatial;
  if (g.space.rank == 0 || fast % vw != 0) return 1;
  int t = 0;
  for (const void* data : views) {
    if (data) {
      const int64_t along = g.channel_minor ? g.c_stride[t] : g.space.strides[t][0];
      const int64_t across = g.channel_minor ? g.space.strides[t][0] : g.c_stride[t];
      if (!aligned16(data) || along != 1 || across % vw != 0 || g.n_stride[t] % vw != 0) return 1;
    }
    ++t;
  }
  return 0;
}

// The held forward's blocks for a group of `vectors` 16-byte vectors, from the group's size alone (so
// every sum's order is batch-invariant): one block of 64 to 512 threads where the group fits it,
// else on sm_90 a cluster of up to 8 blocks of 256 (several clusters an SM, so one's loads overlap
// another's reduction), else none (cluster 0: the two-pass kernels, which read x twice).
struct HeldShape {
  int threads = 0, cluster = 0;
};
HeldShape held_shape(int64_t vectors, int arch) {
  if (vectors <= 0) return {};
  if (vectors <= 512 * kGroupHeld)
    return {static_cast<int>(std::clamp<int64_t>((ceil_div(vectors, kGroupHeld) + 31) / 32 * 32, 64, 512)), 1};
  const int64_t cluster = ceil_div(vectors, int64_t{256} * kGroupHeld);
  if (arch >= 90 && cluster <= 8) return {256, static_cast<int>(cluster)};
  return {};
}

}  // namespace

Expected<const void*> group_norm_kernels(const PlanTarget& target, DType dtype, DType weight_dtype, bool backward,
                                         bool silu, std::string_view plan) {
  Expected<const jit::Module*> m =
      jit::load(group_norm_program(dtype, weight_dtype, backward, silu), target.arch, plan);
  if (!m) return m.status();
  return static_cast<const void*>(*m);
}

Status launch(const LaunchContext& ctx, const GroupNormForwardProblem& p) {
  const GroupNormGeometry& g = p.geometry;
  device::GroupNormParams params = params_of(g, p.desc.eps);
  params.x = p.args.x.data;
  params.weight = p.desc.has_weight ? p.args.weight.data : nullptr;
  params.bias = p.desc.has_bias ? p.args.bias.data : nullptr;
  params.y = p.args.y.data;
  params.mean = p.args.mean.data;
  params.rstd = p.args.rstd.data;
  const int threads = group_norm_threads(g.group_size());
  const int64_t items = g.samples * g.groups, blocks = group_norm_blocks(items);
  // (No channel or no spatial element: nothing to normalize, only statistics asked for have elements.)
  if (blocks == 0 || (g.group_size() == 0 && !params.mean && !params.rstd)) return Status::ok();
  const jit::Module& m = jit_module(ctx);
  const int index = kernel_index(g, p.desc.dtype, {params.x, params.y});
  const HeldShape held =
      held_shape(g.group_size() / (16 / static_cast<int64_t>(dtype_size(p.desc.dtype))), ctx.target.arch);
  if (index == 0 && held.cluster > 0) {
    const Expected<int> resident =
        resident_clusters(m.kernels[3], held.threads, held.cluster, ctx.target.sm_count, "group_norm_forward");
    if (!resident) return resident.status();
    if (*resident > 0)  // (else the device cannot place the cluster: the two-pass kernel)
      return launch_jit_clusters(m.kernels[3], std::min<int64_t>(items, *resident), held.threads, held.cluster, params,
                                 ctx.stream, "group_norm_forward");
  }
  return launch_jit(m.kernels[index], blocks, threads, params, ctx.stream, "group_norm_forward");
}

Status launch(const LaunchContext& ctx, const GroupNormBackwardProblem& p) {
  const GroupNormGeometry& g = p.geometry;
  const GroupNormBackwardArgs& a = p.args;
  const bool partials = ctx.choice.workspace > 0 && (a.dweight.data || a.dbias.data);
  device::GroupNormParams params = params_of(g, 0.0);
  params.dy = a.dy.data;
  params.x = a.x.data;
  params.weight = p.desc.has_weight ? a.weight.data : nullptr;
  params.bias = p.desc.has_bias && p.desc.silu ? a.bias.data : nullptr;
  params.mean = const_cast<void*>(a.mean.data);
  params.rstd = const_cast<void*>(a.rstd.data);
  params.dx = a.dx.data;
  params.partial = partials ? ctx.workspace.data : nullptr;
  const jit::Module& m = jit_module(ctx);
  const int threads = group_norm_threads(g.group_size());
  if (g.group_channels == 0) return Status::ok();  // no channel: dx, dweight and dbias are empty
  // No spatial element: dx is empty and dweight, dbias zeros, without the kernel's pass over the groups'
  // empty channels (a block sum each).
  const bool elements = g.spatial > 0;
  const int64_t blocks = group_norm_blocks(g.samples * g.groups);
  if (blocks > 0 && elements && (params.dx || partials))
    if (Status s = launch_jit(m.kernels[kernel_index(g, p.desc.dtype, {params.dy, params.x, params.dx})], blocks,
                              threads, params, ctx.stream, "group_norm_backward");
        !s)
      return s;
  if (!a.dweight.data && !a.dbias.data) return Status::ok();
  device::NormFinalizeParams fin{};
  fin.partial = ctx.workspace.data;
  fin.dweight = a.dweight.data;
  fin.dbias = a.dbias.data;
  fin.n = g.channels;
  fin.chunks = partials && elements ? g.samples : 0;  // no samples or no element: zeros
  fin.inner.rank = 1;
  fin.inner.sizes[0] = g.channels;
  fin.inner.strides[0][0] = g.dweight_stride;
  fin.inner.strides[1][0] = g.dbias_stride;
  return launch_jit(m.kernels[3], std::clamp<int64_t>((g.channels + 31) / 32, 1, 4096), 1024, fin, ctx.stream,
                    "group_norm_finalize");
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

std::vector<Program> group_norm_programs() {
  std::vector<Program> out;
  for (bool backward : {false, true})
    for (bool silu : {false, true})
      for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
        out.push_back(cuda::group_norm_program(t, t, backward, silu));
        if (t != DType::f32) out.push_back(cuda::group_norm_program(t, DType::f32, backward, silu));
      }
  return out;
}

}  // namespace baracuda::detail::jit

// The CUDA side of the norm plans: the kernels of cuda/device/norm.cuh, compiled at select for the
// plan's dtypes, kind, variant, row length (the rows a thread holds) and fused add (the forward's
// stages follow from those and the device's shared memory), and their launches.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>

#include "cuda/device/params.h"
#include "cuda/jit/jit.hpp"
#include "cuda/jit/launch.hpp"
#include "cuda/runtime.hpp"
#include "ops/norm_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {
namespace {

int vector_width(DType t) { return 16 / static_cast<int>(dtype_size(t)); }

// Blocks of a held kernel an SM is planned for (cuda/device/norm.cuh's kNormMinBlocks: 1024 threads).
int blocks_per_sm(const NormBlockShape& b) { return std::max(1, 1024 / b.threads()); }

// Shared memory of one stage of a held, vectorized forward block (cuda/device/norm.cuh: the next
// rows' x and residual copied there): a 16-byte slot a vector held, a staged tensor.
int64_t stage_bytes(const NormBlockShape& b, bool add) { return int64_t{b.threads()} * b.held * 16 * (add ? 2 : 1); }

// Rows a held, vectorized forward block copies ahead (norm.cuh's kStages), 0 for the other kernels:
// one for 4- and 8-byte rows (x, and the residual), none for 16-bit ones (measured slower when those
// kernels spilled: bench/NOTES.md), fewer where a block's shared memory or the SM's blocks do not
// hold them (sm_90: a block's threads hold up to 64 bytes a tensor at 1024 threads an SM, so even
// two stages of x fit its 227 KiB; sm_86 / sm_89 fewer). BARACUDA_NORM_STAGES, read once, sets the
// count (up to two, one with the residual) for measurement: two stages, and 16-bit staging now that
// the plain kernels keep their registers, are compiled and reviewed but not yet run on a GPU.
int forward_stages(const NormBlockShape& b, bool vec, bool add, DType dtype, const SharedLimits& limits) {
  if (!vec || b.held == 0) return 0;
  static const int forced = [] {
    const char* e = std::getenv("BARACUDA_NORM_STAGES");
    return e ? std::atoi(e) : -1;
  }();
  constexpr int64_t kReserved = 2048;  // a block's static arrays and the 1 KiB the runtime keeps
  const int64_t bytes = stage_bytes(b, add);
  int stages = forced >= 0 ? std::min(forced, add ? 1 : 2) : dtype_size(dtype) >= 4 ? 1 : 0;
  while (stages > 0 &&
         (stages * bytes + kReserved > limits.block || blocks_per_sm(b) * (stages * bytes + kReserved) > limits.sm))
    --stages;
  return stages;
}

}  // namespace

// The program's kernels: [vectorized, by element] (+ the backward's finalize).
jit::Program norm_program(NormKind kind, DType t, DType w, bool backward, bool held, int64_t n, bool add,
                          const SharedLimits& limits) {
  jit::Program p;
  const std::string name = backward ? "norm_backward" : "norm_forward";
  const std::string add_arg = backward ? "" : add ? ", true" : ", false";  // (the backward reads dh at run time)
  const std::string types =
      jit::device_type(t) + ", " + jit::device_type(w) + ", " + (kind == NormKind::rms ? "true" : "false") + add_arg;
  p.name = std::string(add && !backward ? "add_" : "") + (kind == NormKind::rms ? "rms_" : "layer_") + name + "<" +
           std::string(dtype_name(t)) + ", " + std::string(dtype_name(w)) + ", " + (held ? "held" : "streamed") +
           ", n " + std::to_string(n) + ">";
  p.source = "#include \"cuda/device/norm.cuh\"\n";
  for (int vw : {vector_width(t), 1}) {
    const NormBlockShape b = norm_block_shape(n, vw, held, backward, t);
    const std::string stages = backward ? "" : std::to_string(forward_stages(b, vw > 1, add, t, limits)) + ", ";
    p.kernels.push_back("baracuda::device::" + name + "<" + types + ", " + stages + (vw > 1 ? "true" : "false") + ", " +
                        std::to_string(b.held) + ", " + std::to_string(b.row_threads) + ", " + std::to_string(b.rows) +
                        ">");
  }
  if (backward)
    p.kernels.push_back("baracuda::device::norm_finalize<" + jit::device_type(t) + ", " + jit::device_type(w) + ">");
  return p;
}

namespace {

template <int NT, int M>
device::Walk<NT> walk_of(const Walker<M>& w, const std::array<int, NT>& slots) {
  device::Walk<NT> out{};
  out.rank = w.rank;
  for (int d = 0; d < kMaxRank; ++d) {
    out.sizes[d] = w.sizes[d];
    for (int t = 0; t < NT; ++t) out.strides[t][d] = w.strides[slots[t]][d];
  }
  return out;
}

// Rows read as 16-byte vectors: every row tensor present (slots 0..3) has unit stride along one
// collapsed normalized dim, rows starting on 16-byte boundaries, and n is whole vectors; the
// tensors of the normalized shape (slots 4, 5) are contiguous and 16-byte aligned.
bool vectorizable(const NormGeometry& g, int vw, std::initializer_list<const void*> row_tensors,
                  std::initializer_list<const void*> inner_tensors) {
  if (vw <= 1 || g.inner.rank != 1 || g.n % vw != 0) return false;
  int t = 0;
  for (const void* data : row_tensors) {
    if (data) {
      if (!aligned16(data) || g.inner.strides[t][0] != 1) return false;
      for (int k = 0; k < g.row.rank; ++k)
        if (g.row.strides[t][k] % vw != 0) return false;
    }
    ++t;
  }
  for (const void* data : inner_tensors) {
    if (data && (!aligned16(data) || g.inner.strides[t][0] != 1)) return false;
    ++t;
  }
  return true;
}

// Dynamic shared memory of a forward block: its stages.
size_t copy_slot_bytes(const NormBlockShape& b, bool vec, bool add, DType dtype, const SharedLimits& limits) {
  return static_cast<size_t>(stage_bytes(b, add) * forward_stages(b, vec, add, dtype, limits));
}

// Blocks of a held, vectorized forward's grid: as many as the GPU holds at once (each takes rows a
// grid apart), fewer for fewer row groups.
int64_t held_grid(const NormBlockShape& b, int64_t row_groups, int sm_count) {
  return std::min<int64_t>(row_groups, int64_t{std::max(1, sm_count)} * blocks_per_sm(b));
}

}  // namespace

Expected<const void*> norm_kernels(const PlanTarget& target, NormKind kind, DType dtype, DType weight_dtype,
                                   bool backward, bool held, int64_t n, bool add, std::string_view plan) {
  const SharedLimits limits = shared_limits(target.device);
  Expected<const jit::Module*> m =
      jit::load(norm_program(kind, dtype, weight_dtype, backward, held, n, add, limits), target.arch, plan);
  if (!m) return m.status();
  const NormBlockShape b = norm_block_shape(n, vector_width(dtype), held, backward, dtype);
  if (!backward && forward_stages(b, true, add, dtype, limits) > 0) {
    // The staged forward may take more than the default 48 KiB of shared memory a block, and its
    // blocks an SM need the carveout for it (set once here, the same for every plan of the kernel).
    const void* kernel = (*m)->kernels[0];
    cudaFuncAttributes attributes{};
    if (Status s = cuda_status(cudaFuncGetAttributes(&attributes, kernel), "norm: cudaFuncGetAttributes"); !s) return s;
    const size_t bytes = copy_slot_bytes(b, true, add, dtype, limits);
    // (Percent of the SM's shared memory; a block also reserves 1 KiB, and has its static arrays.)
    const size_t per_sm_bytes = (bytes + attributes.sharedSizeBytes + 1024) * static_cast<size_t>(blocks_per_sm(b));
    const size_t most = static_cast<size_t>(limits.sm);
    const int carveout = static_cast<int>(std::min<size_t>(100, (per_sm_bytes * 100 + most - 1) / most));
    if (Status s = cuda_status(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
            "norm: cudaFuncSetAttribute (shared memory)");
        !s)
      return s;
    if (Status s = cuda_status(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, carveout),
                               "norm: cudaFuncSetAttribute (carveout)");
        !s)
      return s;
  }
  return static_cast<const void*>(*m);
}

Status launch(const LaunchContext& ctx, const NormForwardProblem& p) {
  const NormGeometry& g = p.geometry;
  const NormArgs& a = p.args;
  const bool held = ctx.choice.knob != 0;
  device::NormForwardParams params{};
  params.x = a.x.data;
  params.residual = p.desc.residual ? a.residual.data : nullptr;
  params.weight = p.desc.has_weight ? a.weight.data : nullptr;
  params.bias = p.desc.has_bias && p.kind == NormKind::layer ? a.bias.data : nullptr;
  params.y = a.y.data;
  params.h = p.desc.residual ? a.h.data : nullptr;
  params.mean = p.kind == NormKind::layer ? a.mean.data : nullptr;
  params.rstd = a.rstd.data;
  params.rows = g.rows;
  params.n = g.n;
  params.eps = p.desc.eps;
  params.weight_offset = p.desc.weight_offset;
  params.row = walk_of<6>(g.row, {0, 1, 2, 3, 4, 5});
  params.inner = walk_of<6>(g.inner, {0, 1, 2, 3, 4, 5});
  const int vw = vector_width(p.desc.dtype);
  const bool vec = vectorizable(g, vw, {params.x, params.residual, params.y, params.h}, {params.weight, params.bias});
  const NormBlockShape b = norm_block_shape(g.n, vec ? vw : 1, held, false, p.desc.dtype);
  const int64_t row_groups = (g.rows + b.rows - 1) / b.rows;
  const size_t shared = copy_slot_bytes(b, vec, p.desc.residual, p.desc.dtype, shared_limits(ctx.target.device));
  const int64_t blocks = vec && b.held > 0 ? held_grid(b, row_groups, ctx.target.sm_count)
                                           : std::min<int64_t>(row_groups, int64_t{1} << 20);
  return launch_jit(jit_module(ctx).kernels[vec ? 0 : 1], blocks, b.threads(), params, ctx.stream, "norm_forward",
                    shared);
}

Status launch(const LaunchContext& ctx, const NormBackwardProblem& p) {
  const NormGeometry& g = p.geometry;
  const NormBackwardArgs& a = p.args;
  const bool held = ctx.choice.knob != 0;
  const bool partials = ctx.choice.workspace > 0 && (a.dweight.data || a.dbias.data);
  device::NormBackwardParams params{};
  params.dy = a.dy.data;
  params.h = a.x.data;
  params.weight = p.desc.has_weight ? a.weight.data : nullptr;
  params.mean = p.kind == NormKind::layer ? a.mean.data : nullptr;
  params.rstd = a.rstd.data;
  params.dh = p.desc.residual ? a.dh.data : nullptr;
  params.dx = a.dx.data;
  params.partial = partials ? ctx.workspace.data : nullptr;
  params.want_dweight = partials && a.dweight.data;
  params.want_dbias = partials && a.dbias.data;
  params.rows = g.rows;
  params.n = g.n;
  params.rows_per_chunk = p.chunks.rows_per_chunk;
  params.weight_offset = p.desc.weight_offset;
  params.row = walk_of<6>(g.row, {0, 1, 2, 3, 4, 5});
  params.inner = walk_of<5>(g.inner, {0, 1, 2, 3, 4});
  if (!params.dx && !partials) return Status::ok();
  const int vw = vector_width(p.desc.dtype);
  const bool vec = vectorizable(g, vw, {params.dy, params.h, params.dh, params.dx}, {params.weight});
  const NormBlockShape b = norm_block_shape(g.n, vec ? vw : 1, held, true, p.desc.dtype);
  const jit::Module& m = jit_module(ctx);
  if (Status s = launch_jit(m.kernels[vec ? 0 : 1], p.chunks.chunks, b.threads(), params, ctx.stream, "norm_backward");
      !s)
    return s;
  if (!partials) return Status::ok();
  device::NormFinalizeParams fin{};
  fin.partial = ctx.workspace.data;
  fin.dweight = a.dweight.data;
  fin.dbias = a.dbias.data;
  fin.n = g.n;
  fin.chunks = p.chunks.chunks;
  fin.inner = walk_of<2>(g.inner, {5, 6});
  return launch_jit(m.kernels[2], std::clamp<int64_t>((g.n + 31) / 32, 1, 4096), 1024, fin, ctx.stream,
                    "norm_finalize");
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

std::vector<Program> norm_programs(const std::vector<int64_t>& row_lengths) {
  std::vector<Program> out;
  for (NormKind kind : {NormKind::layer, NormKind::rms})
    for (bool backward : {false, true})
      for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
        for (DType w : {t, DType::f32}) {
          for (int64_t n : row_lengths) {
            for (bool add : {false, true}) {  // (stages as sm_90's shared memory allows)
              if (backward && add) continue;  // the backward's dh is read or not at run time
              if (n <= norm_held_limit(backward, t))
                out.push_back(cuda::norm_program(kind, t, w, backward, true, n, add, SharedLimits{}));
              out.push_back(cuda::norm_program(kind, t, w, backward, false, n, add, SharedLimits{}));
            }
          }
        }
  // One program per key: the streamed ones do not depend on n.
  std::vector<Program> unique;
  for (Program& p : out) {
    const bool seen = std::any_of(unique.begin(), unique.end(), [&](const Program& u) {
      return u.kernels == p.kernels && u.source == p.source && u.options == p.options;
    });
    if (!seen) unique.push_back(std::move(p));
  }
  return unique;
}

}  // namespace baracuda::detail::jit

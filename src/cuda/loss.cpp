// The CUDA side of the cross-entropy plans: the kernels of cuda/device/loss.cuh, compiled at select
// for the plan's dtypes and row length (its block size), and their launches.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/device/params.h"
#include "cuda/jit/jit.hpp"
#include "cuda/jit/launch.hpp"
#include "ops/loss_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {
namespace {

int vector_width(DType t) { return 16 / static_cast<int>(dtype_size(t)); }

// A block's threads for rows (or chunks) of n classes read vw at a time: about 8 vectors a thread,
// 32 to 512 threads. Fixed by C and the dtype alone (a row's bits depend on it).
int block_threads(int64_t classes, int vw) {
  const int64_t vectors = (std::min(classes, kLossChunk) + vw - 1) / vw;
  return static_cast<int>(std::clamp<int64_t>(((vectors + 7) / 8 + 31) / 32 * 32, 32, 512));
}

std::string index_type(DType index) { return index == DType::i32 ? "int" : "long long"; }

}  // namespace

// The program's kernels: forward [vectorized, by element, combine, reduce, nll]; backward
// [vectorized, by element, totals, soft_mass]. Soft targets: index unused (i64 in the key).
jit::Program cross_entropy_program(DType t, DType w, DType index, bool backward, int64_t classes, bool soft) {
  jit::Program p;
  if (soft) index = DType::i64;
  const std::string name = backward ? "cross_entropy_backward" : "cross_entropy_forward";
  const std::string types = jit::device_type(t) + ", " + jit::device_type(w) + ", " + index_type(index);
  const int vw = vector_width(t);
  p.name = name + "<" + std::string(dtype_name(t)) + ", " + std::string(dtype_name(w)) + ", " +
           std::string(soft ? "soft" : dtype_name(index)) + ", " + std::to_string(block_threads(classes, vw)) +
           " threads>";
  p.source = "#include \"cuda/device/loss.cuh\"\n";
  for (int v : {vw, 1})
    p.kernels.push_back("baracuda::device::" + name + "<" + types + ", " + (v > 1 ? "true" : "false") + ", " +
                        std::to_string(block_threads(classes, v)) + ", " + (soft ? "true" : "false") + ">");
  if (backward) {
    p.kernels.push_back("baracuda::device::cross_entropy_totals<" + types + ">");
    if (soft)
      p.kernels.push_back("baracuda::device::cross_entropy_soft_mass<" + jit::device_type(t) + ", " +
                          jit::device_type(w) + ">");
  } else {
    p.kernels.push_back("baracuda::device::cross_entropy_combine<" + types + ">");
    p.kernels.push_back("baracuda::device::cross_entropy_reduce<" + jit::device_type(t) + ">");
    p.kernels.push_back("baracuda::device::nll_forward<" + types + ">");
  }
  return p;
}

namespace {

// The logits (and dlogits, soft targets) read as 16-byte vectors: classes contiguous, every row
// starting on a 16-byte boundary, and C whole vectors.
bool vectorizable(const LossGeometry& g, int vw, std::initializer_list<std::pair<const void*, int>> tensors) {
  if (vw <= 1 || g.classes % vw != 0) return false;
  for (const auto& [data, slot] : tensors) {
    if (!data) continue;
    const int64_t class_stride = slot == 0 ? g.class_stride : slot == 1 ? g.dclass_stride : g.target_class_stride;
    if (!aligned16(data) || class_stride != 1) return false;
    for (int k = 0; k < g.row.rank; ++k)
      if (g.row.strides[slot][k] % vw != 0) return false;
  }
  return true;
}

device::CrossEntropyParams params_of(const CrossEntropyDescriptor& d, const LossGeometry& g, const void* weight,
                                     int64_t weight_stride, int64_t* bad_index_count) {
  device::CrossEntropyParams params{};
  params.weight = d.has_weight ? weight : nullptr;
  params.weight_stride = weight_stride;
  params.bad_index_count = reinterpret_cast<unsigned long long*>(bad_index_count);
  params.rows = g.rows;
  params.classes = g.classes;
  params.chunks = loss_chunks(g.classes);
  params.chunk_len = std::min(g.classes, kLossChunk);
  params.class_stride = g.class_stride;
  params.dclass_stride = g.dclass_stride;
  params.target_class_stride = g.target_class_stride;
  params.soft = d.soft_targets ? 1 : 0;
  params.ignore_index = d.ignore_index;
  params.smoothing = d.label_smoothing;
  params.z = d.z_loss;
  params.reduction = static_cast<int>(d.reduction);
  params.log_probs = d.log_probs ? 1 : 0;
  params.row.rank = g.row.rank;
  for (int k = 0; k < kMaxRank; ++k) {
    params.row.sizes[k] = g.row.sizes[k];
    for (int t = 0; t < kLossRowTensors; ++t) params.row.strides[t][k] = g.row.strides[t][k];
  }
  return params;
}

// Items (rows, or chunks of rows) per launch: a block each up to 2^20 blocks, then strided over them.
int64_t grid_of(int64_t items) { return std::clamp<int64_t>(items, 1, int64_t{1} << 20); }

}  // namespace

Expected<const void*> cross_entropy_kernels(const PlanTarget& target, const CrossEntropyDescriptor& d, bool backward,
                                            std::string_view plan) {
  Expected<const jit::Module*> m = jit::load(
      cross_entropy_program(d.dtype, weight_dtype_of(d), d.index_dtype, backward, class_count(d), d.soft_targets),
      target.arch, plan);
  if (!m) return m.status();
  return static_cast<const void*>(*m);
}

Status launch(const LaunchContext& ctx, const CrossEntropyForwardProblem& p) {
  const LossGeometry& g = p.geometry;
  const CrossEntropyArgs& a = p.args;
  const CrossEntropyDescriptor& d = p.desc;
  device::CrossEntropyParams params =
      params_of(d, g, a.weight.data, a.weight.data ? a.weight.strides[0] : 0, a.bad_index_count);
  params.logits = a.logits.data;
  params.targets = a.targets.data;
  params.loss = a.loss.data;
  params.lse = a.lse.data;
  const bool reduced = d.reduction != LossReduction::none;
  const size_t terms_bytes =
      reduced ? (static_cast<size_t>(g.rows) * 4 * dtype_size(acc_dtype(d.dtype)) + 255) / 256 * 256 : 0;
  params.terms = ctx.workspace.data;
  params.pieces = static_cast<char*>(ctx.workspace.data) + terms_bytes;
  const jit::Module& m = jit_module(ctx);
  const int vw = vector_width(d.dtype);
  const bool vec = vectorizable(g, vw, {{a.logits.data, 0}, {d.soft_targets ? a.targets.data : nullptr, 2}});
  if (g.rows > 0 && d.log_probs) {
    if (Status s = launch_jit(m.kernels[4], std::clamp<int64_t>((g.rows + 255) / 256, 1, 4096), 256, params, ctx.stream,
                              "nll_forward");
        !s)
      return s;
  } else if (g.rows > 0) {
    if (Status s = launch_jit(m.kernels[vec ? 0 : 1], grid_of(g.rows * params.chunks),
                              block_threads(g.classes, vec ? vw : 1), params, ctx.stream, "cross_entropy_forward");
        !s)
      return s;
    if (params.chunks > 1)
      if (Status s = launch_jit(m.kernels[2], std::clamp<int64_t>((g.rows + 255) / 256, 1, 4096), 256, params,
                                ctx.stream, "cross_entropy_combine");
          !s)
        return s;
  }
  if (!reduced) return Status::ok();
  return launch_jit(m.kernels[3], 1, 1024, params, ctx.stream, "cross_entropy_reduce");
}

Status launch(const LaunchContext& ctx, const CrossEntropyBackwardProblem& p) {
  const LossGeometry& g = p.geometry;
  const CrossEntropyBackwardArgs& a = p.args;
  const CrossEntropyDescriptor& d = p.desc;
  device::CrossEntropyParams params =
      params_of(d, g, a.weight.data, a.weight.data ? a.weight.strides[0] : 0, a.bad_index_count);
  params.logits = a.logits.data;
  params.dlogits = a.dlogits.data;
  params.targets = a.targets.data;
  params.dloss = a.dloss.data;
  params.lse = const_cast<void*>(a.lse.data);
  params.totals = ctx.workspace.data;
  params.masses = static_cast<char*>(ctx.workspace.data) + 256;
  const jit::Module& m = jit_module(ctx);
  if (g.rows == 0) return Status::ok();
  // The totals: W (a weight with smoothing) and the mean's divisors (class indices).
  if ((d.has_weight && d.label_smoothing != 0) || (d.reduction == LossReduction::mean && !d.soft_targets))
    if (Status s = launch_jit(m.kernels[2], 1, 1024, params, ctx.stream, "cross_entropy_totals"); !s) return s;
  if (d.soft_targets)
    if (Status s = launch_jit(m.kernels[3], grid_of(g.rows), 512, params, ctx.stream, "cross_entropy_soft_mass"); !s)
      return s;
  const int vw = vector_width(d.dtype);
  const bool vec =
      vectorizable(g, vw, {{a.logits.data, 0}, {a.dlogits.data, 1}, {d.soft_targets ? a.targets.data : nullptr, 2}});
  return launch_jit(m.kernels[vec ? 0 : 1], grid_of(g.rows * params.chunks), block_threads(g.classes, vec ? vw : 1),
                    params, ctx.stream, "cross_entropy_backward");
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

std::vector<Program> cross_entropy_programs() {
  // A program depends on C only through the block size, the same (512 threads) for every vocabulary
  // of 16384 classes or more: one program per direction and dtypes covers the language models'.
  std::vector<Program> out;
  for (bool backward : {false, true})
    for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
      for (DType w : {t, DType::f32})
        for (DType index : {DType::i32, DType::i64}) {
          Program p = cuda::cross_entropy_program(t, w, index, backward, 32000, false);
          const bool seen =
              std::any_of(out.begin(), out.end(), [&](const Program& u) { return u.kernels == p.kernels; });
          if (!seen) out.push_back(std::move(p));
        }
  for (bool backward : {false, true})
    for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
      for (DType w : {t, DType::f32}) {
        Program p = cuda::cross_entropy_program(t, w, DType::i64, backward, 32000, true);
        if (std::none_of(out.begin(), out.end(), [&](const Program& u) { return u.kernels == p.kernels; }))
          out.push_back(std::move(p));
      }
  return out;
}

}  // namespace baracuda::detail::jit

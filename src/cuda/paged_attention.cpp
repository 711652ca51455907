// The attention kernels of ours: the split-key attention (cuda/device/paged_attention.cuh) over a
// paged KV cache, and over dense k and v where cuDNN refuses; the KV cache append
// (cuda/device/kv_cache.cuh), compiled at select per dtype (the append per element size), and their
// launches; and the programs of the glue around cuDNN's ragged graphs for packed sequences
// (cuda/device/attention_varlen.cuh, launched by cuda/attention.cpp). The split-key kernel's blocks
// (rows a block, keys a tile, splits of the keys) are a function of the descriptor and the device
// alone, so select's workspace and run's launch agree and every run of a plan takes the same order of
// sums.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/device/params.h"
#include "cuda/jit/jit.hpp"
#include "cuda/jit/launch.hpp"
#include "cuda/runtime.hpp"
#include "ops/attention_problem.hpp"
#include "ops/kv_cache_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {
namespace {

constexpr int kThreads = 128;                  // device::kPagedThreads
constexpr int64_t kSharedDefault = 48 * 1024;  // no opt-in needed

constexpr int64_t kMinSplitKeys = 256;  // a split's keys at least (its partial costs D_v + 1 values)
constexpr int64_t kWaves = 8;           // waves of blocks the splits aim for

int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

// The split kernel of R rows a block in the program's kernel list (R = 1, 2, 4, 8).
int rows_kernel(int rows) { return rows == 1 ? 0 : rows == 2 ? 1 : rows == 4 ? 2 : 3; }

// The rows a block (1, 2, 4, 8: the kernels' R), keys a tile, key groups of the values, splits.
struct PagedLayout {
  int rows = 1;
  int64_t chunks = 1, tile_keys = 1, pv_groups = 1, splits = 1, split_keys = 1, region_bytes = 0, shared = 0;
  int64_t stages = 1;    // tiles in flight a block
  size_t workspace = 0;  // partial out and lse, [B, H_q, S_q, splits] rows, where splits > 1
  int64_t partial_out_offset = 0;
  bool too_large = false;  // that workspace past 2^40 values
  bool fits = true;        // the tile fits the device's shared memory
};

// The (query head, query) rows of a kv head a block takes (1, 2, 4 or 8: the kernels' R, the
// fewest holding the group's rows up to 8) and the chunks of them a kv head makes.
struct RowChunks {
  int rows = 1;
  int64_t chunks = 0;
};
RowChunks row_chunks(const AttentionDescriptor& d) {
  RowChunks c;
  const int64_t group_rows = d.heads_q / std::max<int64_t>(d.heads_kv, 1) * d.seq_q;
  while (c.rows < 8 && c.rows < group_rows) c.rows *= 2;
  c.chunks = (group_rows + c.rows - 1) / c.rows;
  return c;
}

PagedLayout paged_layout(const PlanTarget& t, const AttentionDescriptor& d) {
  PagedLayout l;
  const RowChunks rc = row_chunks(d);
  l.rows = rc.rows;
  l.chunks = std::max<int64_t>(1, rc.chunks);
  const auto elem = static_cast<int64_t>(dtype_size(d.dtype));
  const int64_t acc = d.dtype == DType::f64 ? 8 : 4;
  const int64_t pitch = d.head_dim + 16 / elem;  // the vector path's (the scalar one's is shorter)
  l.pv_groups = d.head_dim_v <= 128 ? 4 : d.head_dim_v <= 256 ? 2 : 1;
  const int64_t sums = l.pv_groups * l.rows * d.head_dim_v * acc;
  // The largest tile (up to a key a thread) of `stages` within `limit`.
  auto fit = [&](int64_t stages, int64_t limit) {
    l.stages = stages;
    for (l.tile_keys = kThreads;; l.tile_keys /= 2) {
      const int64_t tk = l.tile_keys, slices = std::max<int64_t>(1, kThreads / tk);
      l.region_bytes = round16(std::max(stages * tk * (pitch + d.head_dim_v) * elem, sums));
      l.shared = l.region_bytes + 16 * stages * tk + 16 * l.rows + 16 +
                 (l.rows * d.head_dim + tk * l.rows + slices * tk * l.rows + 3 * l.rows) * acc;
      if (l.shared <= limit || tk == 1) return l.shared <= limit;
    }
  };
  // Two stages where tiles of 64 keys or more fit the default 48 KiB; else one stage of the largest
  // tile there (a tile's barriers and softmax are a fixed cost, which tiles of 32 keys pay twice as
  // often: bench/NOTES.md, eleventh session); else one stage past 48 KiB.
  const SharedLimits limits = shared_limits(t.device);  // (f64 and head dims past 256 opt in)
  if (!fit(2, kSharedDefault) || l.tile_keys < 64)
    if (!fit(1, kSharedDefault)) fit(1, limits.block);
  l.fits = l.shared <= limits.block;
  // Splits: enough blocks for kWaves waves of the blocks an SM holds (shared memory's count, and at most
  // the registers' bound, device::kPagedBlocksPerSm), each split at least kMinSplitKeys. Many waves keep the last
  // one's idle share small, and balance sequences of unequal lengths.
  const int64_t per_sm = std::clamp<int64_t>(limits.sm / (l.shared + 1024), 1, elem == 8 ? 3 : 5);
  const int64_t base = std::max<int64_t>(1, d.batch * d.heads_kv * l.chunks);
  const int64_t want = (kWaves * per_sm * std::max(t.sm_count, 1) + base - 1) / base;
  const int64_t most = std::max<int64_t>(1, (d.seq_kv + kMinSplitKeys - 1) / kMinSplitKeys);
  l.splits = std::clamp<int64_t>(want, 1, std::min<int64_t>(most, 1024));
  l.split_keys = std::max<int64_t>(1, (d.seq_kv + l.splits - 1) / l.splits);
  l.split_keys = (l.split_keys + l.tile_keys - 1) / l.tile_keys * l.tile_keys;
  l.splits = std::max<int64_t>(1, (d.seq_kv + l.split_keys - 1) / l.split_keys);
  // (batch, heads and queries below 2^62 each, by check_shape: their product in double)
  const double values = static_cast<double>(d.batch) * static_cast<double>(d.heads_q) * static_cast<double>(d.seq_q) *
                        static_cast<double>(l.splits) * static_cast<double>(d.head_dim_v + 1);
  l.too_large = l.splits > 1 && values > 0x1p40;
  if (l.splits > 1 && !l.too_large) {
    const int64_t partial_rows = d.batch * d.heads_q * d.seq_q * l.splits;
    l.partial_out_offset = round16(partial_rows * acc);  // after the partial lse
    l.workspace = static_cast<size_t>(l.partial_out_offset + round16(partial_rows * d.head_dim_v * acc));
  }
  return l;
}

// A kernel's dynamic shared memory raised to `bytes` where past the default (the largest any plan
// asked so far stays).
Status allow_shared(const void* kernel, int64_t bytes) {
  if (bytes <= kSharedDefault) return Status::ok();
  return raise_kernel_attribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes),
                                "attention: cudaFuncSetAttribute (shared memory)");
}

// The backward's blocks: R rows a block of split_kv_dq (as the forward's), keys a tile (both kernels),
// one shared memory size for both (device::BackwardShared's layout, dkdv's R = 8), the workspace
// (delta, [B, H_q, S_q]).
struct BackwardLayout {
  int rows = 1;
  int64_t chunks = 1, tile_keys = 1, tiles = 0, tile_bytes = 0, shared = 0;
  size_t workspace = 0;
  bool fits = true;  // the tile fits the device's shared memory
};

BackwardLayout backward_layout(const PlanTarget& t, const AttentionDescriptor& d) {
  BackwardLayout l;
  const RowChunks rc = row_chunks(d);
  l.rows = rc.rows;
  l.chunks = rc.chunks;
  const auto elem = static_cast<int64_t>(dtype_size(d.dtype));
  const int64_t acc = d.dtype == DType::f64 ? 8 : 4, R = 8, dims = d.head_dim + d.head_dim_v;
  // The largest tile (up to 64 keys) within 96 KiB (two blocks an SM), else within the most a block takes.
  auto fit = [&](int64_t limit) {
    for (l.tile_keys = 64;; l.tile_keys /= 2) {
      const int64_t tk = l.tile_keys, slices = std::max<int64_t>(1, kThreads / tk);
      const int64_t pad = elem == 2 ? 2 : 1;  // device::kBackwardPad: k and v rows padded, dk and dv by 1
      l.tile_bytes = round16(tk * (dims + 2 * pad) * elem);
      l.shared = l.tile_bytes + acc * (R * dims + 2 * slices * tk * R + 2 * tk * R + 2 * R + tk * (dims + 2));
      if (l.shared <= limit || tk == 1) return l.shared <= limit;
    }
  };
  const SharedLimits limits = shared_limits(t.device);
  if (!fit(std::min<int64_t>(96 * 1024, limits.block))) l.fits = fit(limits.block);
  l.tiles = (d.seq_kv + l.tile_keys - 1) / l.tile_keys;
  l.workspace = static_cast<size_t>(round16(d.batch * d.heads_q * d.seq_q * acc));
  return l;
}

// k and v rows of whole, aligned 16-byte vectors (the tiles' cp.async).
bool vector_rows(const AnyTensorRef& v) {
  const int64_t width = 16 / static_cast<int64_t>(dtype_size(v.dtype));
  if (reinterpret_cast<uintptr_t>(v.data) % 16 != 0 || v.strides[3] != 1 || v.shape.dims[3] % width != 0) return false;
  for (int i = 0; i < 3; ++i)
    if (v.strides[i] % width != 0) return false;
  return true;
}

template <class View>
void copy4(long long (&to)[4], const View& v) {
  for (int i = 0; i < 4; ++i) to[i] = v.strides[i];
}

// The fields the forward's and the backward's params share (of the same names): q, k, v and the bias,
// the sizes, the mask, the scale and the soft-cap.
template <class Params, class Problem>
void set_shared_fields(Params& p, const Problem& problem) {
  const AttentionDescriptor& d = problem.desc;
  const auto& a = problem.args;
  p.q = a.q.data;
  p.k = a.k.data;
  p.v = a.v.data;
  copy4(p.q_strides, a.q);
  copy4(p.k_strides, a.k);
  copy4(p.v_strides, a.v);
  p.bias = d.has_bias ? a.bias.data : nullptr;
  if (d.has_bias) copy4(p.bias_strides, a.bias);
  p.bias_f32 = problem.bias_dtype == DType::f32 ? 1 : 0;
  p.batch = d.batch;
  p.seq_q = d.seq_q;
  p.seq_kv = d.seq_kv;
  p.heads_q = d.heads_q;
  p.heads_kv = d.heads_kv;
  p.group = d.heads_q / d.heads_kv;
  p.head_dim = d.head_dim;
  p.head_dim_v = d.head_dim_v;
  p.window_left = problem.mask.left;
  p.window_right = problem.mask.right;
  p.bottom_right = d.alignment == CausalAlignment::bottom_right ? 1 : 0;
  p.scale = problem.scale;
  p.softcap = d.softcap;
}

}  // namespace

jit::Program paged_attention_program(DType t) {
  jit::Program p;
  const std::string T = jit::device_type(t);
  p.name = "paged_attention<" + std::string(dtype_name(t)) + ">";
  p.source = "#include \"cuda/device/paged_attention.cuh\"\n";
  for (int rows : {1, 2, 4, 8})
    p.kernels.push_back("baracuda::device::paged_attention_split<" + T + ", " + std::to_string(rows) + ">");
  p.kernels.push_back("baracuda::device::paged_attention_combine<" + T + ">");
  return p;
}

jit::Program split_kv_backward_program(DType t) {
  jit::Program p;
  const std::string T = jit::device_type(t);
  p.name = "split_kv_backward<" + std::string(dtype_name(t)) + ">";
  p.source = "#include \"cuda/device/attention_backward.cuh\"\n";
  for (int rows : {1, 2, 4, 8})
    p.kernels.push_back("baracuda::device::split_kv_dq<" + T + ", " + std::to_string(rows) + ">");
  p.kernels.push_back("baracuda::device::split_kv_dkdv<" + T + ", 8>");
  return p;
}

jit::Program attention_varlen_program(DType t) {
  jit::Program p;
  const std::string T = jit::device_type(t);
  p.name = "attention_varlen<" + std::string(dtype_name(t)) + ">";
  p.source = "#include \"cuda/device/attention_varlen.cuh\"\n";
  p.kernels = {"baracuda::device::varlen_prepare", "baracuda::device::varlen_finish<" + T + ">",
               "baracuda::device::varlen_stats_in", "baracuda::device::varlen_zero_keys<" + T + ">"};
  return p;
}

Expected<const void*> attention_varlen_kernels(const PlanTarget& t, DType dtype, std::string_view plan) {
  Expected<const jit::Module*> m = jit::load(attention_varlen_program(dtype), t.arch, plan);
  if (!m) return m.status();
  return static_cast<const void*>(*m);
}

const char* element_bits(int64_t size) {
  return size == 2 ? "unsigned short" : size == 4 ? "unsigned int" : "unsigned long long";
}
jit::Program kv_cache_program(int64_t element_size) {
  jit::Program p;
  p.name = "kv_cache_append<" + std::to_string(element_size * 8) + "-bit>";
  p.source = "#include \"cuda/device/kv_cache.cuh\"\n";
  p.kernels.push_back("baracuda::device::kv_cache_claim");
  p.kernels.push_back(std::string("baracuda::device::kv_cache_copy<") + element_bits(element_size) + ">");
  return p;
}

Expected<SplitKvChoice> split_kv_select(const PlanTarget& t, const AttentionDescriptor& d, std::string_view plan) {
  const PagedLayout l = paged_layout(t, d);
  if (!l.fits)
    return plan_error(StatusCode::unsupported, plan, "descriptor.head_dim",
                      "the paged decode kernel's tile does not fit a block's shared memory at these head dims");
  if (l.too_large)
    return plan_error(StatusCode::unsupported, plan, "descriptor.batch",
                      "the split keys' partial rows would pass 2^40 values of workspace");
  if (static_cast<double>(d.batch) * static_cast<double>(d.heads_kv) * static_cast<double>(l.chunks) > INT32_MAX)
    return plan_error(StatusCode::unsupported, plan, "descriptor.batch",
                      "more than 2^31 - 1 (sequence, kv head, row chunk) blocks");
  Expected<const jit::Module*> m = jit::load(paged_attention_program(d.dtype), t.arch, plan);
  if (!m) return m.status();
  if (Status s = allow_shared((*m)->kernels[static_cast<size_t>(rows_kernel(l.rows))], l.shared); !s) return s;
  return SplitKvChoice{static_cast<const void*>(*m), l.workspace};
}

Status launch_split_kv(const LaunchContext& ctx, const AttentionProblem& problem) {
  const AttentionDescriptor& d = problem.desc;
  const AttentionArgs& a = problem.args;
  const PagedLayout l = paged_layout(ctx.target, d);
  device::PagedAttentionParams p{};
  set_shared_fields(p, problem);
  p.out = a.out.data;
  p.lse = a.lse.data;
  p.paged = d.paged ? 1 : 0;
  p.table = static_cast<const int*>(a.block_table.data);
  p.seq_lens = static_cast<const int*>(a.seq_lens_kv.data);
  p.partial_lse = ctx.workspace.data;
  if (l.splits > 1) p.partial_out = static_cast<unsigned char*>(ctx.workspace.data) + l.partial_out_offset;
  p.block_size = d.block_size;
  p.num_blocks = d.num_blocks;
  p.max_blocks = d.max_blocks;
  copy4(p.out_strides, a.out);
  for (int i = 0; i < 3; ++i) p.lse_strides[i] = a.lse.data ? a.lse.strides[i] : 0;
  if (d.paged) {
    p.table_strides[0] = a.block_table.strides[0];
    p.table_strides[1] = a.block_table.strides[1];
    p.seq_lens_stride = a.seq_lens_kv.strides[0];
  }
  p.splits = l.splits;
  p.split_keys = l.split_keys;
  p.tile_keys = l.tile_keys;
  p.stages = l.stages;
  p.pv_groups = l.pv_groups;
  p.region_bytes = l.region_bytes;
  p.vector_kv = vector_rows(a.k) && vector_rows(a.v) ? 1 : 0;
  const jit::Module& m = jit_module(ctx);
  const int which = rows_kernel(l.rows);
  void* args[] = {&p};
  const dim3 grid(static_cast<unsigned>(d.batch * d.heads_kv * l.chunks), static_cast<unsigned>(l.splits));
  if (Status s = cuda_status(cudaLaunchKernel(m.kernels[which], grid, dim3(kThreads), args,
                                              static_cast<size_t>(l.shared), native(ctx.stream)),
                             "paged_attention_split");
      !s)
    return s;
  if (l.splits == 1) return Status::ok();
  const int64_t rows = d.batch * d.heads_q * d.seq_q;
  const int64_t blocks = std::clamp<int64_t>(rows, 1, 64 * static_cast<int64_t>(std::max(ctx.target.sm_count, 1)));
  return launch_jit(m.kernels[4], blocks, kThreads, p, ctx.stream, "paged_attention_combine");
}

Expected<SplitKvChoice> split_kv_backward_select(const PlanTarget& t, const AttentionDescriptor& d,
                                                 std::string_view plan) {
  const BackwardLayout l = backward_layout(t, d);
  if (!l.fits)
    return plan_error(StatusCode::unsupported, plan, "descriptor.head_dim",
                      "the split_kv backward's tile does not fit a block's shared memory at these head dims");
  const double blocks =
      static_cast<double>(d.batch) * static_cast<double>(d.heads_kv) * static_cast<double>(std::max(l.chunks, l.tiles));
  if (blocks > INT32_MAX ||
      static_cast<double>(d.batch) * static_cast<double>(d.heads_q) * static_cast<double>(d.seq_q) > 0x1p40)
    return plan_error(StatusCode::unsupported, plan, "descriptor.batch",
                      "more than 2^31 - 1 blocks, or 2^40 rows, for the split_kv backward");
  Expected<const jit::Module*> m = jit::load(split_kv_backward_program(d.dtype), t.arch, plan);
  if (!m) return m.status();
  for (const void* kernel : {(*m)->kernels[static_cast<size_t>(rows_kernel(l.rows))], (*m)->kernels[4]})
    if (Status s = allow_shared(kernel, l.shared); !s) return s;
  return SplitKvChoice{static_cast<const void*>(*m), l.workspace};
}

Status launch_split_kv_backward(const LaunchContext& ctx, const AttentionBackwardProblem& problem) {
  const AttentionDescriptor& d = problem.desc;
  const AttentionBackwardArgs& a = problem.args;
  const BackwardLayout l = backward_layout(ctx.target, d);
  device::AttentionBackwardParams p{};
  set_shared_fields(p, problem);
  p.out = a.out.data;
  p.dout = a.dout.data;
  p.lse = a.lse.data;
  p.dq = a.dq.data;
  p.dk = a.dk.data;
  p.dv = a.dv.data;
  p.delta = ctx.workspace.data;
  copy4(p.out_strides, a.out);
  copy4(p.dout_strides, a.dout);
  if (a.dq.data) copy4(p.dq_strides, a.dq);
  if (a.dk.data) copy4(p.dk_strides, a.dk);
  if (a.dv.data) copy4(p.dv_strides, a.dv);
  for (int i = 0; i < 3; ++i) p.lse_strides[i] = a.lse.strides[i];
  p.tile_keys = l.tile_keys;
  p.tile_bytes = l.tile_bytes;
  const jit::Module& m = jit_module(ctx);
  const auto shared = static_cast<size_t>(l.shared);
  // (dq's pass first: it writes delta, which dkdv's reads)
  if (const int64_t blocks = d.batch * d.heads_kv * l.chunks; blocks > 0)
    if (Status s = launch_jit(m.kernels[static_cast<size_t>(rows_kernel(l.rows))], blocks, kThreads, p, ctx.stream,
                              "split_kv_dq", shared);
        !s)
      return s;
  if (const int64_t blocks = d.batch * d.heads_kv * l.tiles; blocks > 0 && (a.dk.data || a.dv.data))
    return launch_jit(m.kernels[4], blocks, kThreads, p, ctx.stream, "split_kv_dkdv", shared);
  return Status::ok();
}

// The append: owner rows zeroed, the claim pass, the copy pass.
Expected<const void*> kv_cache_kernels(const PlanTarget& t, DType dtype, std::string_view plan) {
  Expected<const jit::Module*> m = jit::load(kv_cache_program(static_cast<int64_t>(dtype_size(dtype))), t.arch, plan);
  if (!m) return m.status();
  return static_cast<const void*>(*m);
}

Status launch(const LaunchContext& ctx, const KvCacheAppendProblem& problem) {
  const KvCacheAppendDescriptor& d = problem.desc;
  const KvCacheAppendArgs& a = problem.args;
  device::KvCacheAppendParams p{};
  const AnyTensorRef src[2] = {a.k_new, a.v_new};
  const AnyTensorMut cache[2] = {a.k_cache, a.v_cache};
  for (int x = 0; x < 2; ++x) {
    p.src[x] = src[x].data;
    p.cache[x] = cache[x].data;
    for (int i = 0; i < 4; ++i) {
      p.src_strides[x][i] = src[x].strides[i];
      p.cache_strides[x][i] = cache[x].strides[i];
    }
  }
  p.table = static_cast<const int*>(a.block_table.data);
  p.seq_lens = static_cast<const int*>(a.seq_lens.data);
  p.new_lens = static_cast<const int*>(a.new_lens.data);
  p.owner = static_cast<unsigned*>(ctx.workspace.data);
  p.bad_index_count = reinterpret_cast<unsigned long long*>(a.bad_index_count);
  p.batch = d.batch;
  p.new_tokens = d.new_tokens;
  p.heads = d.heads_kv;
  p.dims[0] = d.head_dim;
  p.dims[1] = d.head_dim_v;
  p.block_size = d.block_size;
  p.num_blocks = d.num_blocks;
  p.max_blocks = d.max_blocks;
  p.table_strides[0] = a.block_table.strides[0];
  p.table_strides[1] = a.block_table.strides[1];
  p.seq_lens_stride = a.seq_lens.strides[0];
  p.new_lens_stride = a.new_lens.data ? a.new_lens.strides[0] : 0;
  const size_t owner_bytes = kv_cache_workspace(d);
  if (owner_bytes > 0)
    if (Status s = cuda_status(cudaMemsetAsync(ctx.workspace.data, 0, owner_bytes, native(ctx.stream)),
                               "kv_cache_append: cudaMemsetAsync");
        !s)
      return s;
  const jit::Module& m = jit_module(ctx);
  const int64_t sm = std::max(ctx.target.sm_count, 1);
  const int64_t slots = d.batch * std::max<int64_t>(d.new_tokens, 1);
  if (Status s = launch_jit(m.kernels[0], std::clamp<int64_t>((slots + 255) / 256, 1, 32 * sm), 256, p, ctx.stream,
                            "kv_cache_claim");
      !s)
    return s;
  const int64_t items = d.batch * d.new_tokens * d.heads_kv;  // a warp each
  if (items == 0) return Status::ok();
  return launch_jit(m.kernels[1], std::clamp<int64_t>((items + 7) / 8, 1, 32 * sm), 256, p, ctx.stream,
                    "kv_cache_copy");
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {
std::vector<Program> attention_programs() {
  std::vector<Program> out;
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    out.push_back(cuda::paged_attention_program(t));
    out.push_back(cuda::split_kv_backward_program(t));
  }
  for (int64_t size : {2, 4, 8}) out.push_back(cuda::kv_cache_program(size));
  for (DType t : {DType::f16, DType::bf16}) out.push_back(cuda::attention_varlen_program(t));
  return out;
}
}  // namespace baracuda::detail::jit

// The attention plans (forward and backward): validation, kernel choice and the masks, shared by
// both backends, as hooks of the one plan life cycle (ops/plan_impl.hpp). The CPU runs
// FlashAttention's tiled online softmax (cpu/attention.cpp); CUDA runs cuDNN's fused attention
// through the cuDNN frontend (cuda/attention.cpp), for the cases cudnn_refusal lets through and the
// views cuda::attention_views does, and a split-key decode kernel of ours for a paged KV cache
// (cuda/paged_attention.cpp), which also takes, over dense k and v, the forward cases cuDNN refuses
// (f32, f64, the soft-cap, other head dims, fully masked rows), and a backward of ours for those
// (cuda/device/attention_backward.cuh).
#include "baracuda/ops/attention.hpp"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "ops/arg_views.hpp"
#include "ops/attention_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda::detail {
namespace {

// The largest head dim (of q and k, and of v): FlashAttention's and cuDNN's limit is 256; the CPU's
// tiles take up to 512 (DeepSeek's MLA uses 576 / 512 in decode, which this does not cover yet).
inline constexpr int64_t kMaxHeadDim = 512;

// In AttentionVariant order (the forward has the first two, then its paged decode kernel).
enum class AttentionVariant : int { tiled, cudnn, cudnn_deterministic };
constexpr int kPagedDecodeVariant = 2;  // the forward's third
constexpr int kSplitKvVariant = 3;      // both directions' fourth
constexpr VariantInfo kForwardVariants[] = {
    {"tiled", true, true, false,
     "CPU: FlashAttention's tiled online softmax over (b, head, query tile), OpenBLAS on f32 / f64 tile panels"},
    {"cudnn", true, false, true,
     "CUDA: cuDNN's fused flash attention (cuDNN frontend graph); f16 / bf16, head dims multiples of 8 up to 256, "
     "causal, sliding windows and the bias, no soft-cap"},
    {"paged_decode", true, false, true,
     "CUDA: a paged KV cache read by a split-key decode kernel of ours (the query heads of a kv head "
     "together, splits merged in order); every dtype, mask and head dim, the soft-cap"},
    {"split_kv", true, false, true,
     "CUDA: paged_decode's kernel over dense k and v, for what cuDNN refuses (f32, f64, the soft-cap, head "
     "dims off cuDNN's, rows with no key) and the bias; CUDA cores, a block per 8 query rows: slower than cuDNN "
     "at prefill lengths"},
};
constexpr VariantInfo kBackwardVariants[] = {
    kForwardVariants[0],
    {"cudnn", false, false, true,
     "CUDA: cuDNN's fused flash attention backward, dq summed by atomics (the default where determinism is not "
     "required)"},
    {"cudnn_deterministic", true, false, true,
     "CUDA: cuDNN's deterministic backward (no atomics: the same bits every run), chosen where determinism is "
     "required"},
    {"split_kv", true, false, true,
     "CUDA: a backward of ours for what cuDNN refuses (split_kv's cases and the bias): FlashAttention-2's two "
     "passes (dq by rows, dk and dv by key tiles) on CUDA cores, no atomics"},
};

// Why cuDNN's fused attention does not take a descriptor ("": it does), naming the field: first, a
// build without it (cuda::cudnn_built). What is
// left is what the cuDNN frontend's SDPA support surface refuses on Hopper (node/
// sdpa_support_surface.h and the backward node's validation): head dims past 256, a left window
// with seq_q > seq_kv, a left bound below 1, and rows with no visible key, whose out 0 and lse -inf
// are this library's contract, not cuDNN's.
std::pair<std::string, std::string> cudnn_refusal(const AttentionDescriptor& d, bool backward) {
#if BARACUDA_HAS_CUDA
  if (!cuda::cudnn_built())
    return {"stream",
            "this build has no cuDNN attention (configured without the cuDNN frontend's headers: pip install "
            "nvidia-cudnn-frontend, then configure again)"};
#endif
  if (d.dtype != DType::f16 && d.dtype != DType::bf16)
    return {"descriptor.dtype",
            std::string(dtype_name(d.dtype)) + " attention: cuDNN's fused attention takes f16 and bf16"};
  for (auto [field, dim] :
       {std::pair{"descriptor.head_dim", d.head_dim}, std::pair{"descriptor.head_dim_v", d.head_dim_v}})
    if (dim % 8 != 0 || dim > 256)
      return {field,
              std::to_string(dim) + ": cuDNN's fused attention takes head dims that are multiples of 8, up to 256"};
  // cuDNN's score modifier (the frontend's set_score_mod) would carry the soft-cap, but excludes the
  // causal and window masks it would be used with (Gemma 2's).
  if (d.softcap > 0)
    return {"descriptor.softcap", "the CUDA path has no soft-cap (cuDNN's score modifier excludes its masks)"};
  if (d.seq_q == 0 || d.seq_kv == 0 || d.heads_q == 0)
    return {"descriptor", "the CUDA path takes no empty sequence or head count"};
  if (backward && d.seq_q == 1 && d.seq_kv == 1)
    return {"descriptor.seq_q", "cuDNN's fused attention backward takes no single query with a single key"};
  // A row sees no key where its window ends before key 0 (the first row) or starts past the last key
  // (the last row): attention_mask's [lo, hi) empty. (Packed sequences: each sequence's lengths decide,
  // and the glue after cuDNN writes such rows; but cuDNN's band is the padded graph's, so bottom-right
  // with a longest query sequence past the longest key one, which cudnn_band shifts, is refused.)
  const AttentionMask m = attention_mask(d);
  const bool bottom_right = d.alignment == CausalAlignment::bottom_right && m.shift != 0;
  if (d.varlen) {
    if (bottom_right && d.seq_q > d.seq_kv && (m.left >= 0 || m.right >= 0))
      return {"descriptor.alignment",
              "packed sequences on CUDA take a bottom-right mask where seq_q <= seq_kv (the longest of each)"};
    if (d.batch == 0) return {"descriptor.batch", "the CUDA path takes packed sequences of one sequence or more"};
    if (static_cast<double>(d.batch) * static_cast<double>(d.heads_q) * static_cast<double>(d.seq_q) > 0x1p40)
      return {"descriptor.batch", "packed sequences' padded statistics would pass 2^40 values"};
  } else if ((m.right >= 0 && m.shift + m.right < 0) || (m.left >= 0 && d.seq_q - 1 + m.shift - m.left >= d.seq_kv))
    return {bottom_right                              ? "descriptor.alignment"
            : (m.right >= 0 && m.shift + m.right < 0) ? "descriptor.window_right"
                                                      : "descriptor.window_left",
            "this mask leaves query rows with no key (out 0, lse -inf): the CUDA path does not take them"};
  const CudnnBand band = cudnn_band(d);
  if (band.left && d.seq_q > d.seq_kv)
    return {"descriptor.window_left", "cuDNN's sliding window takes seq_q <= seq_kv"};
  if (band.left && *band.left < 1)
    return {"descriptor.window_left",
            "with a bias, cuDNN takes a bottom-right window only as a top-left one, which needs window_left >= "
            "seq_kv - seq_q (" +
                std::to_string(d.seq_kv - d.seq_q) + ")"};
  return {};
}

DType bias_dtype_of(const AttentionDescriptor& d) { return d.bias_dtype.value_or(d.dtype); }

// The views' shapes: [B, S, H, D], or with varlen the packed [total, H, D] (lse [H_q, total_q]), or
// with paged the caches [num_blocks, block_size, H_kv, D].
Shape rows_shape(const AttentionDescriptor& d, bool queries, int64_t heads, int64_t dim) {
  if (d.varlen) return {queries ? d.total_q : d.total_kv, heads, dim};
  if (d.paged && !queries) return {d.num_blocks, d.block_size, heads, dim};
  return {d.batch, queries ? d.seq_q : d.seq_kv, heads, dim};
}
Shape q_shape(const AttentionDescriptor& d) { return rows_shape(d, true, d.heads_q, d.head_dim); }
Shape k_shape(const AttentionDescriptor& d) { return rows_shape(d, false, d.heads_kv, d.head_dim); }
Shape v_shape(const AttentionDescriptor& d) { return rows_shape(d, false, d.heads_kv, d.head_dim_v); }
Shape out_shape(const AttentionDescriptor& d) { return rows_shape(d, true, d.heads_q, d.head_dim_v); }
Shape lse_shape(const AttentionDescriptor& d) {
  return d.varlen ? Shape{d.heads_q, d.total_q} : Shape{d.batch, d.heads_q, d.seq_q};
}
Shape bias_shape(const AttentionDescriptor& d) { return {d.batch, d.heads_q, d.seq_q, d.seq_kv}; }
// (saturated: a batch past 2^62 is refused by check_shape, not wrapped)
int64_t plus_one(int64_t n) { return n < INT64_MAX ? n + 1 : n; }
Shape offsets_shape(const AttentionDescriptor& d) { return {plus_one(d.batch)}; }
Shape block_table_shape(const AttentionDescriptor& d) { return {d.batch, d.max_blocks}; }

double resolved_scale(const AttentionDescriptor& d) {
  return d.scale != 0 ? d.scale : 1.0 / std::sqrt(static_cast<double>(d.head_dim));
}

template <bool kBackward>
struct AttentionHooks {
  using Descriptor = AttentionDescriptor;
  using Args = std::conditional_t<kBackward, AttentionBackwardArgs, AttentionArgs>;
  static constexpr std::string_view kPlan = kBackward ? "AttentionBackwardPlan" : "AttentionPlan";
  static constexpr std::string_view kOp = kBackward ? "attention_backward" : "attention";
  static constexpr std::span<const VariantInfo> kVariants{kBackward ? std::span<const VariantInfo>(kBackwardVariants)
                                                                    : std::span<const VariantInfo>(kForwardVariants)};
  static constexpr OpSchema kSchema{kPlan, kOp, "attention", kFloats, {}, kVariants};

  static constexpr auto fields() {
    if constexpr (kBackward)
      return std::array<ArgField<Args>, 12>{{{"q", &Args::q},
                                             {"k", &Args::k},
                                             {"v", &Args::v},
                                             {"bias", &Args::bias},
                                             {"out", &Args::out},
                                             {"dout", &Args::dout},
                                             {"lse", &Args::lse},
                                             {"dq", nullptr, &Args::dq},
                                             {"dk", nullptr, &Args::dk},
                                             {"dv", nullptr, &Args::dv},
                                             {"cu_seqlens_q", &Args::cu_seqlens_q},
                                             {"cu_seqlens_kv", &Args::cu_seqlens_kv}}};
    else
      return std::array<ArgField<Args>, 10>{{{"q", &Args::q},
                                             {"k", &Args::k},
                                             {"v", &Args::v},
                                             {"bias", &Args::bias},
                                             {"out", nullptr, &Args::out},
                                             {"lse", nullptr, &Args::lse},
                                             {"cu_seqlens_q", &Args::cu_seqlens_q},
                                             {"cu_seqlens_kv", &Args::cu_seqlens_kv},
                                             {"block_table", &Args::block_table},
                                             {"seq_lens_kv", &Args::seq_lens_kv}}};
  }
  static constexpr auto kFields = fields();

  static Status check(const Descriptor& d) {
    const std::pair<const char*, int64_t> sizes[] = {
        {"descriptor.batch", d.batch},           {"descriptor.seq_q", d.seq_q},
        {"descriptor.seq_kv", d.seq_kv},         {"descriptor.heads_q", d.heads_q},
        {"descriptor.heads_kv", d.heads_kv},     {"descriptor.total_q", d.total_q},
        {"descriptor.total_kv", d.total_kv},     {"descriptor.block_size", d.block_size},
        {"descriptor.num_blocks", d.num_blocks}, {"descriptor.max_blocks", d.max_blocks}};
    for (const auto& [field, size] : sizes)
      if (size < 0)
        return plan_error(StatusCode::invalid_problem, kPlan, field, "size " + std::to_string(size) + " is negative");
    if (d.heads_kv < 1 || d.heads_q % d.heads_kv != 0)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.heads_kv",
                        std::to_string(d.heads_kv) + " does not divide heads_q (" + std::to_string(d.heads_q) +
                            "): each kv head serves a whole group of query heads");
    for (const auto& [field, dim] :
         {std::pair{"descriptor.head_dim", d.head_dim}, {"descriptor.head_dim_v", d.head_dim_v}})
      if (dim < 1 || dim > kMaxHeadDim)
        return plan_error(StatusCode::invalid_problem, kPlan, field,
                          std::to_string(dim) + " is outside 1.." + std::to_string(kMaxHeadDim));
    for (const Shape& s :
         {q_shape(d), k_shape(d), v_shape(d), out_shape(d), bias_shape(d), offsets_shape(d), block_table_shape(d)})
      if (Status st = check_shape(kPlan, "descriptor", s); !st) return st;
    if (Status st = check_paged(d); !st) return st;
    if (d.varlen && d.has_bias)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.has_bias",
                        "packed sequences (varlen) take no bias");
    if (!d.varlen && (d.total_q != 0 || d.total_kv != 0))
      return plan_error(StatusCode::invalid_problem, kPlan,
                        d.total_q != 0 ? "descriptor.total_q" : "descriptor.total_kv",
                        "is for packed sequences: set varlen, or leave it 0");
    if (d.scale < 0 || !std::isfinite(d.scale))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.scale",
                        std::to_string(d.scale) + " is not a positive finite number (or 0: 1 / sqrt(head_dim))");
    if (d.softcap < 0 || !std::isfinite(d.softcap))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.softcap",
                        std::to_string(d.softcap) + " is not a finite number >= 0 (0: no soft-cap)");
    if (d.window_left < -1)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.window_left",
                        std::to_string(d.window_left) + " is below -1 (-1: unbounded)");
    if (d.window_right < -1)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.window_right",
                        std::to_string(d.window_right) + " is below -1 (-1: unbounded)");
    if (d.causal && d.window_right > 0)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.window_right",
                        std::to_string(d.window_right) + " lets a causal query see keys past its diagonal");
    if (d.alignment != CausalAlignment::top_left && d.alignment != CausalAlignment::bottom_right)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.alignment",
                        "is neither top_left nor bottom_right");
    const DType b = bias_dtype_of(d);
    if (d.has_bias && b != d.dtype && b != DType::f32)
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.bias_dtype",
                        std::string(valid_dtype(b) ? dtype_name(b) : "?") + " is neither dtype (" +
                            std::string(dtype_name(d.dtype)) + ") nor f32");
    return Status::ok();
  }

  static Status check_paged(const Descriptor& d) {
    if (!d.paged) {
      if (d.block_size != 0 || d.num_blocks != 0 || d.max_blocks != 0)
        return plan_error(StatusCode::invalid_problem, kPlan,
                          d.block_size != 0   ? "descriptor.block_size"
                          : d.num_blocks != 0 ? "descriptor.num_blocks"
                                              : "descriptor.max_blocks",
                          "is for a paged KV cache: set paged, or leave it 0");
      return Status::ok();
    }
    if (kBackward)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.paged",
                        "a paged KV cache is for inference: the backward takes dense or packed keys");
    if (d.varlen || d.has_bias)
      return plan_error(StatusCode::invalid_problem, kPlan, d.varlen ? "descriptor.varlen" : "descriptor.has_bias",
                        "a paged KV cache takes neither packed sequences nor a bias");
    if (d.block_size < 1)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.block_size",
                        std::to_string(d.block_size) + " rows a block: at least 1");
    // (the longest sequence must fit its block table: seq_kv <= max_blocks * block_size, without overflow)
    if (d.max_blocks < d.seq_kv / d.block_size + (d.seq_kv % d.block_size != 0 ? 1 : 0))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.max_blocks",
                        std::to_string(d.max_blocks) + " blocks of " + std::to_string(d.block_size) +
                            " rows do not hold seq_kv (" + std::to_string(d.seq_kv) + ") keys");
    return Status::ok();
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    const DType stats = acc_dtype(d.dtype);
    auto set = [&](int i, DType dtype, const Shape& shape, bool present, bool optional = false) {
      specs[i].dtype = dtype;
      specs[i].shape = shape;
      specs[i].present = present;
      specs[i].optional = optional;
    };
    set(0, d.dtype, q_shape(d), true);                    // q
    set(1, d.dtype, k_shape(d), true);                    // k
    set(2, d.dtype, v_shape(d), true);                    // v
    set(3, bias_dtype_of(d), bias_shape(d), d.has_bias);  // bias
    int next = 4;
    if constexpr (kBackward) {
      set(4, d.dtype, out_shape(d), true);      // out
      set(5, d.dtype, out_shape(d), true);      // dout
      set(6, stats, lse_shape(d), true);        // lse
      set(7, d.dtype, q_shape(d), true, true);  // dq
      set(8, d.dtype, k_shape(d), true, true);  // dk
      set(9, d.dtype, v_shape(d), true, true);  // dv
      next = 10;
    } else {
      set(4, d.dtype, out_shape(d), true);      // out
      set(5, stats, lse_shape(d), true, true);  // lse
      next = 6;
    }
    // cu_seqlens_q, cu_seqlens_kv: offsets from 0 to the totals, nondecreasing
    for (int i = 0; i < 2; ++i) {
      set(next + i, DType::i32, offsets_shape(d), d.varlen);
      specs[next + i].index_bound = plus_one(i == 0 ? d.total_q : d.total_kv);
      specs[next + i].sorted = true;
    }
    if constexpr (!kBackward) {
      set(8, DType::i32, block_table_shape(d), d.paged);  // block_table: entries in [0, num_blocks)
      specs[8].index_bound = d.num_blocks;
      set(9, DType::i32, Shape{d.batch}, d.paged);  // seq_lens_kv: in [0, seq_kv]
      specs[9].index_bound = plus_one(d.seq_kv);
    }
  }

  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference& pref,
                                     std::optional<int> forced) {
    PlanChoice c;
    if (t.backend == Backend::cpu) {
      c.variant = static_cast<int>(AttentionVariant::tiled);
      return c;
    }
    // The backward: cuDNN's faster atomic dq unless determinism is required (or the variant forced).
    const bool deterministic = kBackward && (pref.determinism == Determinism::required ||
                                             forced == static_cast<int>(AttentionVariant::cudnn_deterministic));
    c.variant = static_cast<int>(deterministic ? AttentionVariant::cudnn_deterministic : AttentionVariant::cudnn);
    // A forced variant names the kernel: paged_decode reads only a paged cache, cuDNN and split_kv
    // never do; split_kv takes no packed sequences.
    const bool paged = !kBackward && d.paged;
    if (!kBackward && forced && (*forced == kPagedDecodeVariant) != paged)
      return plan_error(StatusCode::unsupported, kPlan, "preference.variant",
                        paged ? "a paged KV cache is read by 'paged_decode' alone"
                              : "'paged_decode' reads a paged KV cache (descriptor.paged)");
    if (forced == kSplitKvVariant && d.varlen)
      return plan_error(StatusCode::unsupported, kPlan, "preference.variant",
                        "'split_kv' takes no packed sequences (descriptor.varlen)");
    // The kernels of ours: the paged cache's, and over dense k and v whatever cuDNN refuses (the
    // backward of nothing keeps cuDNN's name).
    const bool own_kernel =
        paged || forced == kSplitKvVariant ||
        (!forced && !d.varlen && !cudnn_refusal(d, kBackward).first.empty() && (!kBackward || !nothing_to_do(d)));
    if (own_kernel) {
      c.variant = paged ? kPagedDecodeVariant : kSplitKvVariant;
      if (nothing_to_do(d)) return c;
#if BARACUDA_HAS_CUDA
      Expected<cuda::SplitKvChoice> own =
          kBackward ? cuda::split_kv_backward_select(t, d, kPlan) : cuda::split_kv_select(t, d, kPlan);
      if (!own) return own.status();
      c.kernels = own->kernels;
      c.workspace = own->workspace;
#endif
      return c;
    }
    if (nothing_to_do(d)) return c;
    if (auto [field, why] = cudnn_refusal(d, kBackward); !field.empty())
      return forced ? plan_error(StatusCode::unsupported, kPlan, "preference.variant",
                                 "'" + std::string(kVariants[*forced].name) + "' does not take this case: " + field +
                                     ": " + why)
                    : plan_error(StatusCode::unsupported, kPlan, field, why);
#if BARACUDA_HAS_CUDA
    Expected<size_t> ws = cuda::attention_workspace(t, d, resolved_scale(d), kBackward, deterministic, kPlan);
    if (!ws) return ws.status();
    c.knob = static_cast<int64_t>(*ws);
    c.workspace = *ws;
    if (d.varlen) {  // the glue's kernels and scratch (ops/attention_problem.hpp)
      Expected<const void*> glue = cuda::attention_varlen_kernels(t, d.dtype, kPlan);
      if (!glue) return glue.status();
      c.kernels = *glue;
      c.workspace = attention_scratch_offset(c.knob) + attention_varlen_bytes(d);
    }
    if constexpr (kBackward)
      c.workspace = attention_scratch_offset(c.knob) + attention_varlen_bytes(d) +
                    attention_scratch_bytes(q_shape(d), d.dtype) + attention_scratch_bytes(k_shape(d), d.dtype) +
                    attention_scratch_bytes(v_shape(d), d.dtype);
#endif
    return c;
  }

  // The views cuDNN's kernels take (cuda/attention.cpp): a view the CPU would take may be refused here,
  // unsupported and naming the field.
  static Status check_args(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args& a) {
    // (the split-key kernel of ours takes any strides)
    if (t.backend != Backend::cuda || nothing_to_do(d) || split_kv(c)) return Status::ok();
#if BARACUDA_HAS_CUDA
    return cuda::attention_views(kPlan, d, a);
#else
    (void)a;
    return Status::ok();
#endif
  }

  // The kernels of ours (paged_decode, split_kv) rather than cuDNN's (CUDA).
  static bool split_kv(const PlanChoice& c) {
    return c.variant == kSplitKvVariant || (!kBackward && c.variant == kPagedDecodeVariant);
  }

  static bool nothing_to_do(const Descriptor& d) {
    // The backward of no queries still writes dk and dv (zeros); the forward of no keys writes out (0)
    // and lse (-inf). (Packed sequences: their offsets are checked all the same.)
    if (d.varlen) return false;
    // (no query: nothing is computed, and the lengths and block table are not read: with no output,
    // nothing bounds the batch a broadcast view of them describes)
    if (d.paged) return d.batch == 0 || d.seq_q == 0 || d.heads_q == 0;
    if constexpr (kBackward)
      return d.batch == 0 || (d.seq_q == 0 && d.seq_kv == 0) || (d.heads_q == 0 && d.seq_kv == 0);
    else
      return d.batch == 0 || d.seq_q == 0 || d.heads_q == 0;
  }

  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice& c) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = acc_dtype(d.dtype);
    // cuDNN's default backward sums dq by atomics.
    g.deterministic = g.bit_stable = !(kBackward && c.variant == static_cast<int>(AttentionVariant::cudnn));
    return g;
  }

  static std::vector<AnyTensorRef> views_of(const Args& a) { return given_views<Args>(kFields, a); }

  static KernelShape kernel(const PlanTarget&, const Descriptor&, const PlanChoice& c, const Args* a) {
    KernelShape k{std::string(kVariants[c.variant].name), Layout::contiguous};
    if (a) k.layout = layout_of(views_of(*a));
    return k;
  }

  // No kInPlace: no output may be an input, not even exactly (every plan's rule, ops/validate.hpp). A
  // forward tile writes its rows of out while other tiles still read q, k and v; the backward writes
  // dk and dv before its second pass reads q, k, v and dout again.

  // The args with every view the descriptor does not use cleared (ops/arg_views.hpp).
  static Args used(const Descriptor& d, const Args& a) { return without_unused_views<AttentionHooks>(d, a); }

  static auto problem(const LaunchContext& ctx, const Descriptor& d, const Args& args) {
    if constexpr (kBackward)
      return AttentionBackwardProblem{d,
                                      resolved_scale(d),
                                      bias_dtype_of(d),
                                      attention_mask(d),
                                      used(d, args),
                                      ctx.choice.variant == static_cast<int>(AttentionVariant::cudnn_deterministic),
                                      split_kv(ctx.choice)};
    else
      return AttentionProblem{
          d, resolved_scale(d), bias_dtype_of(d), attention_mask(d), used(d, args), split_kv(ctx.choice)};
  }
};

}  // namespace

template <>
struct OpHooks<AttentionOp> : AttentionHooks<false> {};
template <>
struct OpHooks<AttentionBackwardOp> : AttentionHooks<true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<AttentionOp>;
template class Plan<AttentionBackwardOp>;
}  // namespace baracuda

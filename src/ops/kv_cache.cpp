// The KV cache append plan: validation and the argument table, as hooks of the one plan life cycle
// (ops/plan_impl.hpp). The CPU writes the rows (cpu/kv_cache.cpp), CUDA claims and copies them
// (cuda/paged_attention.cpp).
#include "baracuda/ops/kv_cache.hpp"

#include <algorithm>
#include <string>

#include "common/elementwise.hpp"
#include "ops/arg_views.hpp"
#include "ops/kv_cache_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda::detail {
namespace {

constexpr VariantInfo kVariants[] = {
    {"rows", true, true, false, "CPU: each token's rows copied into its cache row, in (sequence, token) order"},
    {"claim_copy", true, false, true,
     "CUDA: each cache row claimed by its last token (atomicMax of the token's index), then a warp copies a "
     "(token, head)"},
};

Shape new_shape(const KvCacheAppendDescriptor& d, int64_t dim) { return Shape{d.batch, d.new_tokens, d.heads_kv, dim}; }
Shape cache_shape(const KvCacheAppendDescriptor& d, int64_t dim) {
  return Shape{d.num_blocks, d.block_size, d.heads_kv, dim};
}

struct KvCacheAppendHooks {
  using Descriptor = KvCacheAppendDescriptor;
  using Args = KvCacheAppendArgs;
  static constexpr std::string_view kPlan = "KvCacheAppendPlan";
  static constexpr OpSchema kSchema{kPlan, "kv_cache_append", "attention", kFloats, {}, kVariants};
  static constexpr ArgField<Args> kFields[] = {
      {"k_new", &Args::k_new},
      {"v_new", &Args::v_new},
      {"block_table", &Args::block_table},
      {"seq_lens", &Args::seq_lens},
      {"new_lens", &Args::new_lens},
      {"k_cache", nullptr, &Args::k_cache},
      {"v_cache", nullptr, &Args::v_cache},
  };

  static Status check(const Descriptor& d) {
    for (auto [field, size] :
         {std::pair{"descriptor.batch", d.batch}, std::pair{"descriptor.new_tokens", d.new_tokens},
          std::pair{"descriptor.heads_kv", d.heads_kv}, std::pair{"descriptor.head_dim", d.head_dim},
          std::pair{"descriptor.head_dim_v", d.head_dim_v}, std::pair{"descriptor.num_blocks", d.num_blocks},
          std::pair{"descriptor.max_blocks", d.max_blocks}})
      if (size < 0) return plan_error(StatusCode::invalid_problem, kPlan, field, std::to_string(size) + " is negative");
    if (d.block_size < 1)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.block_size",
                        std::to_string(d.block_size) + ": a block holds one row or more");
    for (auto [field, shape] : {std::pair{"descriptor.head_dim", new_shape(d, d.head_dim)},
                                std::pair{"descriptor.head_dim_v", new_shape(d, d.head_dim_v)},
                                std::pair{"descriptor.num_blocks", cache_shape(d, d.head_dim)},
                                std::pair{"descriptor.num_blocks", cache_shape(d, d.head_dim_v)},
                                std::pair{"descriptor.max_blocks", Shape{d.batch, d.max_blocks}}})
      if (Status s = check_shape(kPlan, field, shape); !s) return s;
    // Positions (seq_lens[b] + i, i32 lengths) and the rows a table reaches stay far from overflow.
    int64_t rows = 0;
    if (__builtin_mul_overflow(d.max_blocks, d.block_size, &rows) || rows > (int64_t{1} << 62))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.max_blocks",
                        "max_blocks x block_size overflows");
    return Status::ok();
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    auto set = [&](int i, DType dtype, const Shape& shape) {
      specs[i].dtype = dtype;
      specs[i].shape = shape;
    };
    set(0, d.dtype, new_shape(d, d.head_dim));
    set(1, d.dtype, new_shape(d, d.head_dim_v));
    set(2, DType::i32, Shape{d.batch, d.max_blocks});
    specs[2].index_bound = d.num_blocks;
    set(3, DType::i32, Shape{d.batch});
    specs[3].index_bound = std::max<int64_t>(1, std::min<int64_t>(d.max_blocks * d.block_size, INT32_MAX));
    set(4, DType::i32, Shape{d.batch});
    specs[4].index_bound = d.new_tokens + 1;
    specs[4].optional = true;
    set(5, d.dtype, cache_shape(d, d.head_dim));
    set(6, d.dtype, cache_shape(d, d.head_dim_v));
    specs[5].accumulates = specs[6].accumulates = true;  // every row not appended keeps its bits
  }

  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int>) {
    if (t.backend == Backend::cuda) {
      PlanChoice c;
      c.variant = 1;
      if (nothing_to_do(d)) return c;
      // The owners: a u32 a cache row (at most 2^40 rows), the token indices + 1 below 2^32.
      int64_t rows = 0, slots = 0;
      if (__builtin_mul_overflow(d.num_blocks, d.block_size, &rows) || rows > (int64_t{1} << 40))
        return plan_error(StatusCode::unsupported, kPlan, "descriptor.num_blocks",
                          "CUDA's append takes caches of at most 2^40 rows");
      if (__builtin_mul_overflow(d.batch, std::max<int64_t>(d.new_tokens, 1), &slots) || slots >= INT64_C(0xffffffff))
        return plan_error(StatusCode::unsupported, kPlan, "descriptor.new_tokens",
                          "CUDA's append takes fewer than 2^32 - 1 tokens a run");
#if BARACUDA_HAS_CUDA
      Expected<const void*> kernels = cuda::kv_cache_kernels(t, d.dtype, kPlan);
      if (!kernels) return kernels.status();
      c.kernels = *kernels;
      c.workspace = kv_cache_workspace(d);
#endif
      return c;
    }
    // At most 2^40 elements copied a run: broadcast inputs can describe far more tokens than any
    // cache holds (a sequence's tokens past its table are counted, not copied).
    int64_t copies = std::min(d.new_tokens, d.max_blocks * d.block_size);
    for (int64_t factor : {d.batch, d.heads_kv, d.head_dim + d.head_dim_v})
      if (__builtin_mul_overflow(copies, factor, &copies)) copies = INT64_MAX;
    if (copies > (int64_t{1} << 40))
      return plan_error(StatusCode::unsupported, kPlan, "descriptor",
                        "the CPU copies at most 2^40 elements a run (hours of work past that)");
    PlanChoice c;
    c.variant = 0;
    return c;
  }

  static bool nothing_to_do(const Descriptor& d) { return d.batch == 0; }

  static KernelShape kernel(const PlanTarget&, const Descriptor&, const PlanChoice& c, const Args* a) {
    KernelShape k{std::string(kVariants[std::max(c.variant, 0)].name), Layout::contiguous};
    if (a) k.layout = layout_of(given_views<Args>(kFields, *a));
    return k;
  }

  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;  // (a copy: exact)
    g.compute = g.accumulator = d.dtype;
    return g;
  }

  static KvCacheAppendProblem problem(const LaunchContext&, const Descriptor& d, const Args& a) { return {d, a}; }
};

}  // namespace

template <>
struct OpHooks<KvCacheAppendOp> : KvCacheAppendHooks {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<KvCacheAppendOp>;
}  // namespace baracuda

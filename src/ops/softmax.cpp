// The softmax plans (softmax / log_softmax, forward and backward): validation and kernel choice,
// shared by both backends, as hooks of the one plan life cycle (ops/plan_impl.hpp).
#include "baracuda/ops/softmax.hpp"

#include <optional>
#include <string>

#include "ops/softmax_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda::detail {
namespace {

// In SoftmaxVariant order. A thread holds 128 bytes of compute-type values (SoftmaxShape::held).
constexpr VariantInfo kVariants[] = {
    {"warp_row", true, false, true, "a row of up to 32 x 128 bytes (1024 f32, forward) in a (sub-)warp's registers"},
    {"block_row", true, false, true, "a row of up to 1024 x 128 bytes (32768 f32, forward) in a block's registers"},
    {"cluster_row", true, false, true,
     "sm_90: a row of up to 8 x 1024 x 128 bytes (262144 f32, forward) in a cluster of 2 to 8 blocks"},
    {"split_row", true, false, true,
     "any row: pieces of 8192 to 131072 elements, a block each: their partials, then the outputs (x read twice)"},
    {"outer", true, true, true, "dim not innermost: threads own vectors of columns and walk dim twice"},
    {"rows", true, true, false, "CPU: rows in parallel (a long row's pieces in parallel), two passes"},
    {"pass_row", true, false, true,
     "sparsemax / entmax15 forward: a block per row, reading it from memory once per pass (any length, strides)"},
};
// The backward has no multi-pass kernel: its schema stops before pass_row.
constexpr std::span<const VariantInfo> kBackwardVariants(kVariants, static_cast<size_t>(SoftmaxVariant::pass_row));

SoftmaxVariant variant_of(const PlanChoice& c) { return static_cast<SoftmaxVariant>(c.variant); }

int normalized_dim(const SoftmaxDescriptor& d) { return d.dim < 0 ? d.dim + d.shape.rank : d.dim; }
DType out_dtype_of(const SoftmaxDescriptor& d) { return d.out_dtype.value_or(d.dtype); }

Status check_descriptor(std::string_view plan, const SoftmaxDescriptor& d) {
  if (Status s = check_shape(plan, "descriptor.shape", d.shape); !s) return s;
  if (d.shape.rank < 1)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.shape.rank",
                      "a softmax needs a dim: rank 0 is outside 1.." + std::to_string(kMaxRank));
  if (d.dim < -d.shape.rank || d.dim >= d.shape.rank)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.dim",
                      std::to_string(d.dim) + " is not a dim of a rank-" + std::to_string(d.shape.rank) + " tensor");
  const DType out = out_dtype_of(d);
  if (out != d.dtype && out != DType::f32)
    return plan_error(StatusCode::unsupported, plan, "descriptor.out_dtype",
                      std::string(dtype_name(out)) + " is neither the input's dtype (" +
                          std::string(dtype_name(d.dtype)) + ") nor f32");
  if (d.kind != SoftmaxKind::softmax && d.kind != SoftmaxKind::log_softmax && !is_sparse(d.kind))
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.kind", "is not a SoftmaxKind");
  return Status::ok();
}

// The variant of a problem, from its shape: rows held in registers while they fit, by the smallest
// unit that holds them (but the 16-bit forward's longest, split where the workspace limit allows);
// a dim that is not innermost walked along its columns. The multi-pass forward (sparsemax,
// entmax15) reads any row it cannot hold once per pass, a block a row (on the CPU: the rows
// variant, along any strides).
SoftmaxVariant default_variant(const PlanTarget& t, const SoftmaxShape& s, size_t workspace_limit) {
  const SoftmaxVariant unheld = s.multi_pass ? SoftmaxVariant::pass_row : SoftmaxVariant::split_row;
  if (t.backend == Backend::cpu) return s.innermost || s.multi_pass ? SoftmaxVariant::rows : SoftmaxVariant::outer;
  if (!s.innermost) return s.multi_pass ? unheld : SoftmaxVariant::outer;
  for (SoftmaxVariant v : {SoftmaxVariant::warp_row, SoftmaxVariant::block_row, SoftmaxVariant::cluster_row}) {
    const std::optional<SoftmaxGeometry> g = softmax_geometry(v, s, t.arch, t.sm_count);
    // A 16-bit forward row that needs a cluster of 8 is faster split, read twice: the held rows are
    // bound by instructions there. H200, bf16, same run: [4096, 98304] 0.843 -> 0.666 ms, [4096,
    // 131072] 1.035 -> 0.861 (45-49% -> 57-59% of copy); [2048, 65536] (a cluster of 2) 0.239 and
    // 0.233, left held. f32 and the backward lose split ([2048, 65536] f32 0.314 -> 0.439).
    if (g && v == SoftmaxVariant::cluster_row && g->cluster == kMaxCluster && s.narrow_forward) {
      const CheckedSize split_bytes = softmax_geometry(unheld, s, t.arch, t.sm_count)->workspace;
      if (split_bytes.below(kMaxBytes) && static_cast<size_t>(split_bytes.value()) <= workspace_limit) return unheld;
    }
    if (g) return v;
  }
  return unheld;
}

// The rows of the views: a Walker over every dim but `dim`, and the strides along it.
void rows_of(const SoftmaxDescriptor& d, const AnyTensorRef (&views)[kSoftmaxTensors], SoftmaxProblem& p) {
  const int dim = normalized_dim(d);
  const Strides* strides[kSoftmaxTensors];
  bool keep[kMaxRank] = {};
  for (int t = 0; t < kSoftmaxTensors; ++t) {
    strides[t] = &views[t].strides;
    p.dim_stride[t] = views[t].strides[dim];
  }
  for (int k = 0; k < d.shape.rank; ++k) keep[k] = k != dim;
  p.walk = make_walker<kSoftmaxTensors>(d.shape, strides, keep);
}

// 16-byte accesses: along dim for the row variants (unit strides along dim, every row's start
// 16-byte aligned), along the innermost other dim for `outer` (unit strides there, whole vectors of
// columns, every other step a multiple of the vector).
bool vectorizable(const SoftmaxProblem& p, int vector, const AnyTensorRef (&views)[kSoftmaxTensors]) {
  const Walker<kSoftmaxTensors>& w = p.walk;
  const bool outer = p.variant == SoftmaxVariant::outer;
  if (outer && (w.rank == 0 || w.sizes[w.rank - 1] % vector != 0)) return false;
  for (int t = 0; t < kSoftmaxTensors; ++t) {
    if (!aligned16(views[t].data)) return false;
    if (p.length > 1 && (outer ? p.dim_stride[t] % vector != 0 : p.dim_stride[t] != 1)) return false;
    for (int k = 0; k < w.rank; ++k) {
      const bool unit_dim = outer && k == w.rank - 1;
      if (unit_dim ? w.strides[t][k] != 1 : w.strides[t][k] % vector != 0) return false;
    }
  }
  return true;
}

std::string geometry_name(SoftmaxVariant v, const SoftmaxGeometry& g) {
  auto x = [](auto... n) {
    std::string s;
    ((s += (s.empty() ? "" : "x") + std::to_string(n)), ...);
    return s;
  };
  switch (v) {
    case SoftmaxVariant::warp_row:
      return x(g.lanes, g.chunks);
    case SoftmaxVariant::block_row:
      return x(g.threads, g.chunks);
    case SoftmaxVariant::cluster_row:
      return x(g.cluster, g.threads, g.chunks);
    case SoftmaxVariant::split_row:
      return x(g.splits, g.split_length);
    case SoftmaxVariant::outer:
      return x(g.lanes, g.slices, g.cluster);
    case SoftmaxVariant::pass_row:
      return x(g.threads);
    case SoftmaxVariant::rows:
      return "";
  }
  return "";
}

// The argument table of each direction, in the problem's tensor order (in0, in1, out).
template <bool kBackward>
struct SoftmaxArgTable;
template <>
struct SoftmaxArgTable<false> {
  using Args = SoftmaxArgs;
  static constexpr OpSchema kSchema{"SoftmaxPlan", "softmax", "reduction", kFloats, {}, kVariants};
  static constexpr ArgField<Args> kFields[] = {{"x", &Args::x, nullptr}, {"y", nullptr, &Args::y}};
  static constexpr InPlace kInPlace[] = {{"y", "x"}};
  static void views_of(const Args& a, AnyTensorRef (&views)[kSoftmaxTensors]) {
    views[0] = views[1] = a.x;
    views[2] = a.y;
  }
};
template <>
struct SoftmaxArgTable<true> {
  using Args = SoftmaxBackwardArgs;
  static constexpr OpSchema kSchema{"SoftmaxBackwardPlan", "softmax_backward", "reduction", kFloats, {},
                                    kBackwardVariants};
  static constexpr ArgField<Args> kFields[] = {
      {"y", &Args::y, nullptr}, {"dy", &Args::dy, nullptr}, {"dx", nullptr, &Args::dx}};
  static constexpr InPlace kInPlace[] = {{"dx", "y"}, {"dx", "dy"}};
  static void views_of(const Args& a, AnyTensorRef (&views)[kSoftmaxTensors]) {
    views[0] = a.y;
    views[1] = a.dy;
    views[2] = a.dx;
  }
};

// The hooks both directions share.
template <bool kBackward>
struct SoftmaxHooks : SoftmaxArgTable<kBackward> {
  using Table = SoftmaxArgTable<kBackward>;
  using Descriptor = SoftmaxDescriptor;
  using Table::kSchema;
  using Table::views_of;
  using typename Table::Args;

  static Status check(const Descriptor& d) { return check_descriptor(kSchema.plan, d); }
  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    for (ArgSpec& s : specs) {
      s.shape = d.shape;
      const bool x_like = s.output == kBackward;  // the forward's x, the backward's dx
      s.dtype = x_like ? d.dtype : out_dtype_of(d);
    }
  }
  static SoftmaxShape shape_of(const Descriptor& d) { return softmax_shape(d, normalized_dim(d), kBackward); }
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference& pref,
                                     std::optional<int> forced) {
    const SoftmaxShape s = shape_of(d);
    const SoftmaxVariant v =
        forced ? static_cast<SoftmaxVariant>(*forced) : default_variant(t, s, pref.workspace_limit);
    if (!variant_runs(v, s))
      return plan_error(StatusCode::unsupported, kSchema.plan, "preference.variant",
                        "'" + pref.variant + "' does not run " +
                            (s.multi_pass ? "the sparsemax / entmax15 forward (it needs several passes per row)"
                                          : "this kind (pass_row is the sparsemax / entmax15 forward's)"));
    const std::optional<SoftmaxGeometry> g = softmax_geometry(v, s, t.arch, t.sm_count);
    if (!g)
      return plan_error(StatusCode::unsupported, kSchema.plan, "preference.variant",
                        "'" + pref.variant + "' cannot run rows of " + std::to_string(s.length) + " elements" +
                            (v == SoftmaxVariant::cluster_row && t.arch < 90
                                 ? " on sm_" + std::to_string(t.arch) + " (clusters need sm_90)"
                                 : " (it holds at most " + std::to_string(held_capacity(v, s)) + ")"));
    if (!g->workspace.below(kMaxBytes))
      return plan_error(StatusCode::invalid_problem, kSchema.plan, "descriptor.shape",
                        "the split_row workspace would reach 2^63 bytes");
#if BARACUDA_HAS_CUDA
    // The plan's kernels compiled now (both access forms: the views come with the run).
    if (t.backend == Backend::cuda) {
      SoftmaxProblem p;
      p.backward = kBackward;
      p.kind = d.kind;
      p.in_dtype = d.dtype;
      p.out_dtype = out_dtype_of(d);
      p.variant = v;
      p.geometry = *g;
      p.length = s.length;
      p.rows = s.rows;
      if (Status st = cuda::prepare_softmax(t, p); !st) return st;
    }
#endif
    return PlanChoice{static_cast<int>(v), static_cast<size_t>(g->workspace.value()), 0};
  }
  static bool nothing_to_do(const Descriptor& d) { return d.shape.numel() == 0; }
  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = d.dtype == DType::f64 ? DType::f64 : DType::f32;
    return g;
  }

  static SoftmaxProblem problem_of(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args& a) {
    SoftmaxProblem p;
    const SoftmaxShape s = shape_of(d);
    p.backward = kBackward;
    p.kind = d.kind;
    p.in_dtype = d.dtype;
    p.out_dtype = out_dtype_of(d);
    p.variant = variant_of(c);
    p.geometry = *softmax_geometry(p.variant, s, t.arch, t.sm_count);  // select checked it fits
    p.length = s.length;
    p.rows = s.rows;
    AnyTensorRef views[kSoftmaxTensors];
    views_of(a, views);
    rows_of(d, views, p);
    p.in[0] = views[0].data;
    p.in[1] = views[1].data;
    p.out = const_cast<void*>(views[2].data);  // checked as an output by can_implement
    p.vectorized = t.backend == Backend::cuda && vectorizable(p, s.vector, views);
    return p;
  }
  static KernelShape kernel(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    KernelShape k{std::string(kVariants[c.variant].name), Layout::contiguous};
    if (a) {
      AnyTensorRef views[kSoftmaxTensors];
      views_of(*a, views);
      k.layout = layout_of(views);
    }
    if (t.backend == Backend::cpu) return k;
    const SoftmaxVariant v = variant_of(c);
    const bool vectorized = !a || problem_of(t, d, c, *a).vectorized;  // without views: contiguous, aligned
    k.variant += "." + geometry_name(v, *softmax_geometry(v, shape_of(d), t.arch, t.sm_count)) +
                 (vectorized ? ".vec16" : ".strided");
    return k;
  }
  static SoftmaxProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    SoftmaxProblem p = problem_of(ctx.target, d, ctx.choice, a);
    p.workspace = ctx.workspace.data;
    return p;
  }
};

}  // namespace

template <>
struct OpHooks<SoftmaxOp> : SoftmaxHooks<false> {};
template <>
struct OpHooks<SoftmaxBackwardOp> : SoftmaxHooks<true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<SoftmaxOp>;
template class Plan<SoftmaxBackwardOp>;
}  // namespace baracuda

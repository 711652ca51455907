// The scan plans (every ScanKind, forward and backward): validation and kernel choice, shared by
// both backends, as hooks of the one plan life cycle (ops/plan_impl.hpp).
#include "baracuda/ops/scan.hpp"

#include <string>

#include "ops/scan_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda::detail {
namespace {

constexpr DType kForwardDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64};
constexpr DType kIndexTypes[] = {DType::i32, DType::i64};

// In ScanVariant order.
constexpr VariantInfo kVariants[] = {
    {"rows", true, true, true,
     "the scanned dim innermost: threads along a line fold runs of consecutive elements (16-byte loads), "
     "a scan over the block's threads joins them; long lines cut into pieces whose totals are scanned first"},
    {"columns", true, true, true,
     "the scanned dim outer: threads across (16-byte vectors of) neighbouring lines walk down them, a scan "
     "over the block joins their runs; long walks cut into pieces as rows"},
};

std::string_view kind_name(ScanKind kind) {
  constexpr std::string_view kNames[] = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"};
  const auto k = static_cast<size_t>(kind);
  return k < std::size(kNames) ? kNames[k] : "?";
}

bool has_indices(ScanKind k) { return k == ScanKind::cummax || k == ScanKind::cummin; }
// As PyTorch's: an integer cumsum is i64 (torch.cumsum promotes); x's own dtype may be asked for (it
// wraps), or f32 for a floating x.
DType natural_out_dtype(const ScanDescriptor& d) { return is_floating(d.dtype) ? d.dtype : DType::i64; }
DType out_dtype_of(const ScanDescriptor& d) { return d.out_dtype.value_or(natural_out_dtype(d)); }
// The scanned dim in [0, rank) (a scalar's is 0); select has checked it.
int dim_of(const ScanDescriptor& d) { return d.dim < 0 ? d.dim + std::max(d.shape.rank, 1) : d.dim; }

Status check_descriptor(std::string_view plan, const ScanDescriptor& d) {
  if (Status s = check_shape(plan, "descriptor.shape", d.shape); !s) return s;
  const int rank = std::max(d.shape.rank, 1);
  if (d.dim < -rank || d.dim >= rank)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.dim",
                      std::to_string(d.dim) + " is not a dim of a rank-" + std::to_string(d.shape.rank) + " tensor");
  if (static_cast<unsigned>(d.kind) > static_cast<unsigned>(ScanKind::logcumsumexp))
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.kind", "is not a ScanKind");
  const bool floating = is_floating(d.dtype);
  if (!floating && d.kind != ScanKind::cumsum)
    return plan_error(StatusCode::unsupported, plan, "descriptor.dtype",
                      std::string(kind_name(d.kind)) + " of " + std::string(dtype_name(d.dtype)) +
                          " is not supported (integers take cumsum)");
  const DType other = floating ? DType::f32 : d.dtype;
  if (d.out_dtype && *d.out_dtype != natural_out_dtype(d) && *d.out_dtype != other)
    return plan_error(StatusCode::unsupported, plan, "descriptor.out_dtype",
                      std::string(dtype_name(*d.out_dtype)) + " is not an output dtype of " +
                          std::string(kind_name(d.kind)) + " of " + std::string(dtype_name(d.dtype)) + " (" +
                          std::string(dtype_name(natural_out_dtype(d))) + " or " + std::string(dtype_name(other)) +
                          ")");
  return Status::ok();
}

// The shape with the scanned dim last of the others' order: sizes of the lines and the scan.
ScanShape shape_of(const ScanDescriptor& d, bool backward) {
  ScanShape s;
  s.backward = backward;
  s.indexed = !backward && has_indices(d.kind);
  const int dim = dim_of(d);
  s.n = d.shape.rank ? d.shape.dims[dim] : 1;
  s.lines = s.n ? d.shape.numel() / s.n : 0;
  for (int k = 0; k < d.shape.rank; ++k)
    if (k != dim && d.shape.dims[k] == 0) s.lines = 0;
  s.vector = static_cast<int>(16 / dtype_size(d.dtype));
  const bool f64 = d.dtype == DType::f64;
  auto size = [](auto m) { return int64_t{sizeof(typename decltype(m)::type::State)}; };
  if (backward)
    s.state_bytes = f64 ? sizeof(AffineMath<double>::State) : sizeof(AffineMath<float>::State);
  else
    s.state_bytes =
        with_acc_type(d.dtype, [&](auto a) { return with_scan_math<typename decltype(a)::type>(d.kind, size); });
  for (int k = d.shape.rank - 1; k >= 0; --k) {
    if (d.shape.dims[k] == 1) continue;
    s.innermost = k == dim;
    // columns: as many neighbouring lines a thread as divide the innermost size, up to a vector
    // (16-byte accesses need the whole vector; fewer still share the walk's bookkeeping).
    if (k != dim)
      while (s.column_vector < s.vector && d.shape.dims[k] % (2 * s.column_vector) == 0) s.column_vector *= 2;
    break;
  }
  return s;
}

ScanVariant default_variant(const ScanShape& s) { return s.innermost ? ScanVariant::rows : ScanVariant::columns; }

std::string geometry_name(const ScanGeometry& g) {
  return std::to_string(g.lanes) + "x" + std::to_string(g.slices) + "x" + std::to_string(g.items) +
         (g.pieces > 1 ? ".split" + std::to_string(g.pieces) : "");
}

template <bool kBackward>
struct ScanArgTable;
template <>
struct ScanArgTable<false> {
  using Args = ScanArgs;
  static constexpr OpSchema kSchema{"ScanPlan", "scan", "reduction", kForwardDTypes, kIndexTypes, kVariants};
  static constexpr ArgField<Args> kFields[] = {
      {"x", &Args::x, nullptr}, {"out", nullptr, &Args::out}, {"indices", nullptr, &Args::indices}};
  static void arg_specs(const ScanDescriptor& d, std::span<ArgSpec> specs) {
    specs[0].dtype = d.dtype;
    specs[0].shape = d.shape;
    specs[1].dtype = out_dtype_of(d);
    specs[1].shape = d.shape;
    specs[2].dtype = d.index_dtype;
    specs[2].shape = d.shape;
    specs[2].present = has_indices(d.kind);
  }
};
template <>
struct ScanArgTable<true> {
  using Args = ScanBackwardArgs;
  static constexpr OpSchema kSchema{"ScanBackwardPlan", "scan_backward", "reduction", kFloats, kIndexTypes, kVariants};
  static constexpr ArgField<Args> kFields[] = {{"x", &Args::x, nullptr},
                                               {"out", &Args::out, nullptr},
                                               {"indices", &Args::indices, nullptr},
                                               {"dout", &Args::dout, nullptr},
                                               {"dx", nullptr, &Args::dx}};
  static bool reads_x(ScanKind k) { return k == ScanKind::cumprod || k == ScanKind::logcumsumexp; }
  static void arg_specs(const ScanDescriptor& d, std::span<ArgSpec> specs) {
    const DType out = out_dtype_of(d);
    const int dim = dim_of(d);
    const int64_t n = d.shape.rank ? d.shape.dims[dim] : 1;
    specs[0] = {specs[0].name, false, false, reads_x(d.kind), d.dtype, d.shape};
    specs[1] = {specs[1].name, false, false, reads_x(d.kind), out, d.shape};
    specs[2] = {specs[2].name, false, false, has_indices(d.kind), d.index_dtype, d.shape, n};
    specs[3] = {specs[3].name, false, false, true, out, d.shape};
    specs[4] = {specs[4].name, true, false, true, d.dtype, d.shape};
  }
};

template <bool kBackward>
struct ScanHooks : ScanArgTable<kBackward> {
  using Table = ScanArgTable<kBackward>;
  using Descriptor = ScanDescriptor;
  using Table::kSchema;
  using typename Table::Args;

  static Status check(const Descriptor& d) { return check_descriptor(kSchema.plan, d); }
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int> forced) {
    const ScanShape s = shape_of(d, kBackward);
    const ScanVariant v = forced ? static_cast<ScanVariant>(*forced) : default_variant(s);
    CheckedSize workspace;
    if (t.backend == Backend::cuda) workspace = scan_geometry(v, s, t.sm_count).workspace;
#if BARACUDA_HAS_CUDA
    if (t.backend == Backend::cuda) {
      ScanProblem p;
      p.backward = kBackward;
      p.kind = d.kind;
      p.dtype = d.dtype;
      p.variant = v;
      if (Status st = cuda::prepare_scan(t, p); !st) return st;
    }
#endif
    if (!workspace.below(kMaxBytes))
      return plan_error(StatusCode::invalid_problem, kSchema.plan, "descriptor.shape",
                        "the workspace would reach 2^63 bytes");
    return PlanChoice{static_cast<int>(v), static_cast<size_t>(workspace.value()), 0};
  }
  static bool nothing_to_do(const Descriptor& d) { return d.shape.numel() == 0; }
  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = acc_dtype(d.dtype);
    return g;
  }

  static void views_of(const Args& a, std::vector<AnyTensorRef>& views) {
    for (const auto& f : Table::kFields) views.push_back(f.get(a));
  }

  static ScanProblem problem_of(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args& a) {
    ScanProblem p;
    const ScanShape s = shape_of(d, kBackward);
    p.backward = kBackward;
    p.kind = d.kind;
    p.reverse = d.reverse;
    p.dtype = d.dtype;
    p.out_dtype = out_dtype_of(d);
    p.index_dtype = d.index_dtype;
    p.variant = static_cast<ScanVariant>(c.variant);
    p.geometry = scan_geometry(p.variant, s, t.sm_count);
    p.n = s.n;
    p.lines = s.lines;
    const Strides none{};
    AnyTensorRef views[kScanTensors] = {a.x, AnyTensorRef(a.out), AnyTensorRef(a.indices), {}, {}};
    if constexpr (kBackward) {
      views[kScanDout] = a.dout;
      views[kScanDx] = AnyTensorRef(a.dx);
      p.x = Table::reads_x(d.kind) ? a.x.data : nullptr;
      p.out = Table::reads_x(d.kind) ? const_cast<void*>(a.out.data) : nullptr;
      p.indices = has_indices(d.kind) ? const_cast<void*>(a.indices.data) : nullptr;
      p.dout = a.dout.data;
      p.dx = a.dx.data;
    } else {
      p.x = a.x.data;
      p.out = a.out.data;
      p.indices = has_indices(d.kind) ? a.indices.data : nullptr;
    }
    const void* data[kScanTensors] = {p.x, p.out, p.indices, p.dout, p.dx};
    const Strides* strides[kScanTensors];
    for (int t = 0; t < kScanTensors; ++t) strides[t] = data[t] ? &views[t].strides : &none;
    const int dim = dim_of(d);
    bool other[kMaxRank] = {};
    for (int k = 0; k < d.shape.rank; ++k) other[k] = k != dim;
    p.walk = make_walker<kScanTensors>(d.shape, strides, other);
    for (int t = 0; t < kScanTensors; ++t) p.along[t] = d.shape.rank ? (*strides[t])[dim] : 0;
    if (t.backend == Backend::cuda)
      for (int k = 0; k < kScanTensors; ++k) p.vector[k] = vectorizable(p, s, k, data[k]);
    return p;
  }

  // 16-byte accesses of view t: rows: unit stride along the lines, every line's first element
  // aligned; columns: a whole vector of lines at unit stride, every other step a multiple of the
  // vector. Values have x's element size; the indices' accesses cover the indices of a vector of x's
  // elements (a run of a line, or a unit of lines) in whole 16-byte words.
  static bool vectorizable(const ScanProblem& p, const ScanShape& s, int t, const void* data) {
    if (!data || !aligned16(data)) return false;
    const DType dtype = t == kScanIndices ? p.index_dtype : t == kScanOut || t == kScanDout ? p.out_dtype : p.dtype;
    const int64_t v = 16 / static_cast<int64_t>(dtype_size(dtype));  // elements a 16-byte access
    if (t == kScanIndices ? s.vector % v != 0 : dtype != p.dtype) return false;
    if (p.variant == ScanVariant::rows) {
      if (p.along[t] != 1) return false;
      for (int k = 0; k < p.walk.rank; ++k)
        if (p.walk.strides[t][k] % v != 0) return false;
      return true;
    }
    if (s.column_vector != s.vector || p.walk.rank == 0 || p.walk.inner_stride(t) != 1 || p.along[t] % v != 0)
      return false;
    for (int k = 0; k + 1 < p.walk.rank; ++k)
      if (p.walk.strides[t][k] % v != 0) return false;
    return true;
  }

  static KernelShape kernel(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    KernelShape k{std::string(kVariants[c.variant].name) + "." + std::string(kind_name(d.kind)), Layout::contiguous};
    if (a) {
      std::vector<AnyTensorRef> views;
      views_of(*a, views);
      k.layout = layout_of(views);
    }
    if (t.backend == Backend::cpu) return k;
    const bool vectorized = !a || problem_of(t, d, c, *a).vector[kBackward ? kScanDout : kScanX];
    k.variant += "." +
                 geometry_name(scan_geometry(static_cast<ScanVariant>(c.variant), shape_of(d, kBackward), t.sm_count)) +
                 (vectorized ? ".vec16" : ".strided");
    return k;
  }
  static ScanProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    ScanProblem p = problem_of(ctx.target, d, ctx.choice, a);
    p.partials = ctx.workspace.data;
    return p;
  }
};

}  // namespace

template <>
struct OpHooks<ScanOp> : ScanHooks<false> {};
template <>
struct OpHooks<ScanBackwardOp> : ScanHooks<true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<ScanOp>;
template class Plan<ScanBackwardOp>;
}  // namespace baracuda

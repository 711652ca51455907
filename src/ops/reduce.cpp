// The reduction plans (every ReduceKind, forward and backward): validation and kernel choice, shared
// by both backends, as hooks of the one plan life cycle (ops/plan_impl.hpp).
#include "baracuda/ops/reduce.hpp"

#include <cmath>
#include <string>

#include "ops/reduce_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda {

ReduceDims::ReduceDims(std::initializer_list<int> list) : count(static_cast<int>(list.size())) {
  int k = 0;
  for (int d : list) {
    if (k < kMaxRank) dims[k] = d;
    ++k;
  }
}

}  // namespace baracuda

namespace baracuda::detail {
namespace {

// The forward's: integers and bools take the kinds reduce_takes_integers / reduce_takes_bools name.
constexpr DType kForwardDTypes[] = {DType::f32, DType::f64, DType::f16,    DType::bf16,
                                    DType::i32, DType::i64, DType::boolean};
constexpr DType kIndexTypes[] = {DType::i32, DType::i64};

// In ReduceVariant order.
constexpr VariantInfo kVariants[] = {
    {"rows", true, true, true,
     "a group of threads per output (a thread on the CPU) folds its elements; 16-byte loads where they are "
     "innermost and contiguous"},
    {"split_rows", true, false, true,
     "few long outputs: pieces over blocks, partial states through the workspace, folded in order"},
    {"columns", true, true, true,
     "reduced dims outer: threads own (16-byte vectors of) outputs and walk the reduced elements, long walks "
     "split over blocks through the workspace"},
};

// The CPU reads every element of x, one by one, broadcast or not: 2^40 of them take minutes on all its
// cores; a larger x is a broadcast view of far more elements than memory holds (4 TiB of f32), whose
// walk would take hours or days (2^48: about a day).
constexpr int64_t kCpuMaxElements = int64_t{1} << 40;

ReduceVariant variant_of(const PlanChoice& c) { return static_cast<ReduceVariant>(c.variant); }

std::string_view kind_name(ReduceKind kind) {
  constexpr std::string_view kNames[] = {"sum",       "mean",   "prod",   "amax",          "amin",    "max",
                                         "min",       "argmax", "argmin", "var",           "std",     "norm",
                                         "logsumexp", "any",    "all",    "count_nonzero", "var_mean"};
  const auto k = static_cast<size_t>(kind);
  return k < std::size(kNames) ? kNames[k] : "?";
}

bool has_values(ReduceKind k) { return k != ReduceKind::argmax && k != ReduceKind::argmin; }
bool has_indices(ReduceKind k) {
  return k == ReduceKind::max || k == ReduceKind::min || k == ReduceKind::argmax || k == ReduceKind::argmin;
}
// As PyTorch's: an integer sum or product is i64 (torch.sum promotes).
DType natural_out_dtype(const ReduceDescriptor& d) {
  if (d.kind == ReduceKind::any || d.kind == ReduceKind::all) return DType::boolean;
  if (d.kind == ReduceKind::count_nonzero) return DType::i64;
  if (!is_floating(d.dtype) && (d.kind == ReduceKind::sum || d.kind == ReduceKind::prod)) return DType::i64;
  return d.dtype;
}
// The out dtype a descriptor may ask for besides the natural one: f32 for a floating value kind
// (torch.sum(x, dtype=f32)); x's own for an integer sum or product (jnp.sum keeps it; it wraps).
std::optional<DType> other_out_dtype(const ReduceDescriptor& d) {
  if (!has_values(d.kind)) return std::nullopt;
  if (is_floating(d.dtype)) return natural_out_dtype(d) == d.dtype ? std::optional(DType::f32) : std::nullopt;
  if (d.kind == ReduceKind::sum || d.kind == ReduceKind::prod) return d.dtype;
  return std::nullopt;
}
DType out_dtype_of(const ReduceDescriptor& d) { return d.out_dtype.value_or(natural_out_dtype(d)); }

// Which dims are reduced (select has checked the list).
std::array<bool, kMaxRank> reduced_mask(const ReduceDescriptor& d) {
  std::array<bool, kMaxRank> mask{};
  for (int k = 0; k < d.shape.rank; ++k) mask[k] = d.dims.count == 0;
  for (int i = 0; i < d.dims.count; ++i)
    mask[d.dims.dims[i] < 0 ? d.dims.dims[i] + d.shape.rank : d.dims.dims[i]] = true;
  return mask;
}

Shape out_shape(const ReduceDescriptor& d) {
  const auto mask = reduced_mask(d);
  Shape s;
  for (int k = 0; k < d.shape.rank; ++k) {
    if (!mask[k])
      s.dims[s.rank++] = d.shape.dims[k];
    else if (d.keepdim)
      s.dims[s.rank++] = 1;
  }
  return s;
}

ReduceParams params_of(const ReduceDescriptor& d) {
  const auto mask = reduced_mask(d);
  ReduceParams p;
  p.kind = d.kind;
  p.count = 1;
  for (int k = 0; k < d.shape.rank; ++k)
    if (mask[k]) p.count *= d.shape.dims[k];  // below kMaxElements: check_shape bounded the product
  p.correction = d.correction;
  p.p = d.p;
  return p;
}

Status check_descriptor(std::string_view plan, const ReduceDescriptor& d, bool backward) {
  if (Status s = check_shape(plan, "descriptor.shape", d.shape); !s) return s;
  if (d.dims.count < 0 || d.dims.count > d.shape.rank)
    return plan_error(
        StatusCode::invalid_problem, plan, "descriptor.dims",
        "lists " + std::to_string(d.dims.count) + " dims of a rank-" + std::to_string(d.shape.rank) + " tensor");
  bool seen[kMaxRank] = {};
  for (int i = 0; i < d.dims.count; ++i) {
    const int dim = d.dims.dims[i];
    if (dim < -d.shape.rank || dim >= d.shape.rank)
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.dims",
                        std::to_string(dim) + " is not a dim of a rank-" + std::to_string(d.shape.rank) + " tensor");
    const int k = dim < 0 ? dim + d.shape.rank : dim;
    if (seen[k])
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.dims",
                        "dim " + std::to_string(k) + " is repeated");
    seen[k] = true;
  }
  if (static_cast<unsigned>(d.kind) > static_cast<unsigned>(ReduceKind::var_mean))
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.kind", "is not a ReduceKind");
  if (backward && !differentiable(d.kind))
    return plan_error(StatusCode::unsupported, plan, "descriptor.kind",
                      std::string(kind_name(d.kind)) + " has no gradient");
  const bool boolean = d.dtype == DType::boolean;
  if (!is_floating(d.dtype) && !(boolean ? reduce_takes_bools(d.kind) : reduce_takes_integers(d.kind)))
    return plan_error(StatusCode::unsupported, plan, "descriptor.dtype",
                      std::string(kind_name(d.kind)) + " of " + std::string(dtype_name(d.dtype)) +
                          " is not supported (" +
                          (boolean ? "bool takes any, all and count_nonzero"
                                   : "integers take sum, prod, amax, amin, max, min, argmax, argmin, any, all and "
                                     "count_nonzero") +
                          ")");
  if (d.out_dtype) {
    const DType out = *d.out_dtype, natural = natural_out_dtype(d);
    const std::optional<DType> other = other_out_dtype(d);
    if (!has_values(d.kind) || (out != natural && out != other))
      return plan_error(
          StatusCode::unsupported, plan, "descriptor.out_dtype",
          std::string(dtype_name(out)) + " is not an output dtype of " + std::string(kind_name(d.kind)) +
              (has_values(d.kind)
                   ? " of " + std::string(dtype_name(d.dtype)) + " (" + std::string(dtype_name(natural)) +
                         (other && *other != natural ? " or " + std::string(dtype_name(*other)) + ")" : ")")
                   : " (it has only indices)"));
  }
  if (std::isnan(d.p)) return plan_error(StatusCode::invalid_problem, plan, "descriptor.p", "is NaN");
  if (std::isnan(d.correction) || std::isinf(d.correction))
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.correction", "is not finite");
  if (picks_element(d.kind, d.p) && params_of(d).count == 0)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.shape",
                      std::string(kind_name(d.kind)) + " of an empty set of elements (a reduced dim has size 0)");
  return Status::ok();
}

// The shape's kernel facts; the state is the forward math's, or the backward statistic's.
ReduceShape shape_of(const ReduceDescriptor& d, bool backward) {
  const auto mask = reduced_mask(d);
  const ReduceParams prm = params_of(d);
  ReduceShape s;
  s.count = prm.count;
  s.outputs = out_shape(d).numel();
  s.vector = vector_of(d.dtype);
  const bool stats = backward && reduce_stats(d.kind, d.p) != ReduceStats::none;
  s.state_bytes = stats || !backward ? state_bytes(prm, d.dtype, stats) : 0;
  const int unit = column_unit(static_cast<int>(dtype_size(d.dtype)), s.state_bytes);
  for (int k = d.shape.rank - 1; k >= 0; --k) {
    if (d.shape.dims[k] == 1) continue;
    s.innermost = mask[k];
    if (!mask[k]) s.column_vector = d.shape.dims[k] % unit == 0 ? unit : 1;
    break;
  }
  return s;
}

// The statistics of the backward, before the partials in its workspace.
int64_t stats_bytes(const ReduceDescriptor& d, bool backward) {
  if (!backward || reduce_stats(d.kind, d.p) == ReduceStats::none) return 0;
  return (d.dtype == DType::f64 ? int64_t{sizeof(GradStat<double>)} : int64_t{sizeof(GradStat<float>)});
}

ReduceVariant default_variant(const PlanTarget& t, const ReduceShape& s) {
  if (!s.innermost) return ReduceVariant::columns;
  if (t.backend == Backend::cpu) return ReduceVariant::rows;
  // Rows whose groups leave half the device idle split along their elements.
  const ReduceGeometry rows = reduce_geometry(ReduceVariant::rows, s, t.sm_count);
  const bool idle = std::max<int64_t>(s.outputs, 1) * rows.group < int64_t{t.sm_count} * kResidentThreads / 2;
  return idle && reduce_geometry(ReduceVariant::split_rows, s, t.sm_count).splits > 1 ? ReduceVariant::split_rows
                                                                                      : ReduceVariant::rows;
}

// The views' strides over x's dims: an output-shaped view's are zero along the reduced dims.
Strides over_x(const ReduceDescriptor& d, const AnyTensorRef& view) {
  const auto mask = reduced_mask(d);
  Strides s{};
  int j = 0;
  for (int k = 0; k < d.shape.rank; ++k) {
    if (mask[k]) {
      j += d.keepdim;
      continue;
    }
    s[k] = view.strides[j++];
  }
  return s;
}

// Row-major strides of the kept dims (the statistics' layout) or of the reduced dims (an element's
// index in its reduced set), zero along the others.
Strides row_major_over(const ReduceDescriptor& d, bool reduced) {
  const auto mask = reduced_mask(d);
  Strides s{};
  int64_t step = 1;
  for (int k = d.shape.rank - 1; k >= 0; --k) {
    if (mask[k] != reduced) continue;
    s[k] = step;
    step *= d.shape.dims[k];
  }
  return s;
}

std::string geometry_name(ReduceVariant v, const ReduceGeometry& g) {
  switch (v) {
    case ReduceVariant::rows:
      return std::to_string(g.group);
    case ReduceVariant::split_rows:
      return std::to_string(g.splits) + "x" + std::to_string(g.group);
    case ReduceVariant::columns:
      return std::to_string(g.lanes) + "x" + std::to_string(g.slices) + "x" + std::to_string(g.splits);
  }
  return "";
}

template <bool kBackward>
struct ReduceArgTable;
template <>
struct ReduceArgTable<false> {
  using Args = ReduceArgs;
  static constexpr OpSchema kSchema{"ReducePlan", "reduce", "reduction", kForwardDTypes, kIndexTypes, kVariants};
  static constexpr ArgField<Args> kFields[] = {{"x", &Args::x, nullptr},
                                               {"out", nullptr, &Args::out},
                                               {"indices", nullptr, &Args::indices},
                                               {"mean", nullptr, &Args::mean}};
  static void arg_specs(const ReduceDescriptor& d, std::span<ArgSpec> specs) {
    specs[0].dtype = d.dtype;
    specs[0].shape = d.shape;
    specs[1].dtype = out_dtype_of(d);
    specs[1].shape = out_shape(d);
    specs[1].present = has_values(d.kind);
    specs[2].dtype = d.index_dtype;
    specs[2].shape = out_shape(d);
    specs[2].present = has_indices(d.kind);
    specs[3].dtype = out_dtype_of(d);
    specs[3].shape = out_shape(d);
    specs[3].present = d.kind == ReduceKind::var_mean;
  }
};
template <>
struct ReduceArgTable<true> {
  using Args = ReduceBackwardArgs;
  static constexpr OpSchema kSchema{"ReduceBackwardPlan", "reduce_backward", "reduction", kFloats,
                                    kIndexTypes,          kVariants};
  static constexpr ArgField<Args> kFields[] = {
      {"x", &Args::x, nullptr},       {"out", &Args::out, nullptr}, {"indices", &Args::indices, nullptr},
      {"dout", &Args::dout, nullptr}, {"dx", nullptr, &Args::dx},   {"dmean", &Args::dmean, nullptr}};
  static bool reads_x(ReduceKind k) {
    return k != ReduceKind::sum && k != ReduceKind::mean && k != ReduceKind::max && k != ReduceKind::min;
  }
  static bool reads_out(ReduceKind k) { return k == ReduceKind::norm || k == ReduceKind::logsumexp; }
  static void arg_specs(const ReduceDescriptor& d, std::span<ArgSpec> specs) {
    const DType out = out_dtype_of(d);
    specs[0] = {specs[0].name, false, false, reads_x(d.kind), d.dtype, d.shape};
    specs[1] = {specs[1].name, false, false, reads_out(d.kind), out, out_shape(d)};
    specs[2] = {specs[2].name, false, false, has_indices(d.kind), d.index_dtype, out_shape(d), params_of(d).count};
    specs[3] = {specs[3].name, false, false, true, out, out_shape(d)};
    specs[4] = {specs[4].name, true, false, true, d.dtype, d.shape};
    const bool mean = d.kind == ReduceKind::var_mean;
    specs[5] = {specs[5].name, false, false, mean, out, out_shape(d), 0, mean};
  }
};

template <bool kBackward>
struct ReduceHooks : ReduceArgTable<kBackward> {
  using Table = ReduceArgTable<kBackward>;
  using Descriptor = ReduceDescriptor;
  using Table::kSchema;
  using typename Table::Args;

  static Status check(const Descriptor& d) { return check_descriptor(kSchema.plan, d, kBackward); }
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int> forced) {
    if (t.backend == Backend::cpu && d.shape.numel() > kCpuMaxElements)
      return plan_error(StatusCode::unsupported, kSchema.plan, "descriptor.shape",
                        d.shape.to_string() + " has more than 2^40 elements, the most the CPU backend reduces");
    const ReduceShape s = shape_of(d, kBackward);
    const ReduceVariant v = forced ? static_cast<ReduceVariant>(*forced) : default_variant(t, s);
#if BARACUDA_HAS_CUDA
    if (t.backend == Backend::cuda) {
      ReduceProblem p;
      p.backward = kBackward;
      p.params = params_of(d);
      p.dtype = d.dtype;
      p.out_dtype = out_dtype_of(d);
      p.has_stats = kBackward && reduce_stats(d.kind, d.p) != ReduceStats::none;
      if (Status st = cuda::prepare_reduce(t, p); !st) return st;
    }
#endif
    CheckedSize workspace = CheckedSize(stats_bytes(d, kBackward)) * s.outputs;
    if (t.backend == Backend::cuda) workspace += reduce_geometry(v, s, t.sm_count).workspace;
    if (!workspace.below(kMaxBytes))
      return plan_error(StatusCode::invalid_problem, kSchema.plan, "descriptor.shape",
                        "the workspace would reach 2^63 bytes");
    return PlanChoice{static_cast<int>(v), static_cast<size_t>(workspace.value()), 0};
  }
  static bool nothing_to_do(const Descriptor& d) {
    return kBackward ? d.shape.numel() == 0 : out_shape(d).numel() == 0;
  }
  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = acc_dtype(d.dtype);
    return g;
  }

  static void views_of(const Args& a, std::vector<AnyTensorRef>& views) {
    for (const auto& f : Table::kFields) views.push_back(f.get(a));
  }

  static ReduceProblem problem_of(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args& a) {
    ReduceProblem p;
    const ReduceShape s = shape_of(d, kBackward);
    const auto mask = reduced_mask(d);
    bool kept[kMaxRank] = {}, reduced[kMaxRank] = {};
    for (int k = 0; k < d.shape.rank; ++k) reduced[k] = !(kept[k] = !mask[k]);
    p.backward = kBackward;
    p.params = params_of(d);
    p.dtype = d.dtype;
    p.out_dtype = out_dtype_of(d);
    p.index_dtype = d.index_dtype;
    p.variant = variant_of(c);
    p.geometry = reduce_geometry(p.variant, s, t.sm_count);
    p.outputs = s.outputs;
    const Strides none{};
    if constexpr (kBackward) {
      p.has_stats = reduce_stats(d.kind, d.p) != ReduceStats::none;
      p.x = Table::reads_x(d.kind) ? a.x.data : nullptr;
      p.dout = a.dout.data;
      p.dx = a.dx.data;
      // var_mean reads no out: its dmean takes out's place (the map's kMapOut; empty: zeros).
      const bool mean = d.kind == ReduceKind::var_mean;
      const AnyTensorRef& out_view = mean ? a.dmean : a.out;
      p.out = Table::reads_out(d.kind) || mean ? const_cast<void*>(out_view.data) : nullptr;
      p.indices = has_indices(d.kind) ? const_cast<void*>(a.indices.data) : nullptr;
      const Strides x = p.x ? a.x.strides : none, out = p.out ? over_x(d, out_view) : none,
                    indices = p.indices ? over_x(d, a.indices) : none, dout = over_x(d, a.dout),
                    stats = p.has_stats ? row_major_over(d, false) : none, index = row_major_over(d, true);
      const Strides* map[kMapTensors] = {};
      map[kMapX] = &x;
      map[kMapDx] = &a.dx.strides;
      map[kMapOut] = &out;
      map[kMapDout] = &dout;
      map[kMapIndices] = &indices;
      map[kMapStats] = &stats;
      map[kMapReducedIndex] = &index;
      p.map = make_walker<kMapTensors>(d.shape, map);
      const Strides* walk[3] = {&x, &none, &none};
      p.kept = make_walker<3>(d.shape, walk, kept);
      const Strides* along[1] = {&x};
      p.reduced = make_walker<1>(d.shape, along, reduced);
    } else {
      p.x = a.x.data;
      p.out = has_values(d.kind) ? a.out.data : nullptr;
      p.indices = has_indices(d.kind) ? a.indices.data : nullptr;
      p.mean = d.kind == ReduceKind::var_mean ? a.mean.data : nullptr;
      // The kept walker's third view: indices, or var_mean's mean (no kind writes both).
      const Strides out = p.out ? over_x(d, a.out) : none;
      const Strides third = p.indices ? over_x(d, a.indices) : p.mean ? over_x(d, a.mean) : none;
      const Strides* walk[3] = {&a.x.strides, &out, &third};
      p.kept = make_walker<3>(d.shape, walk, kept);
      const Strides* along[1] = {&a.x.strides};
      p.reduced = make_walker<1>(d.shape, along, reduced);
    }
    p.vectorized = t.backend == Backend::cuda && vectorizable(p, s, a);
    return p;
  }

  // 16-byte loads of x: rows: the reduced elements one unit-stride dim, every output's first
  // 16-byte aligned; columns: the innermost kept dim unit-stride in whole vectors, every other
  // step a multiple of the vector.
  static bool vectorizable(const ReduceProblem& p, const ReduceShape& s, const Args& a) {
    if (!p.x || !aligned16(p.x)) return false;
    const int64_t v = s.vector;
    const bool columns = p.variant == ReduceVariant::columns;
    if (columns) {
      const int64_t unit = column_unit(static_cast<int>(dtype_size(p.dtype)), s.state_bytes);
      if (s.column_vector != unit || p.kept.rank == 0 || p.kept.inner_stride(0) != 1) return false;
      for (int k = 0; k + 1 < p.kept.rank; ++k)
        if (p.kept.strides[0][k] % unit != 0) return false;
      for (int k = 0; k < p.reduced.rank; ++k)
        if (p.reduced.strides[0][k] % unit != 0) return false;
      return true;
    }
    (void)a;
    if (p.reduced.rank > 1 || (p.reduced.rank == 1 && p.reduced.strides[0][0] != 1)) return false;
    for (int k = 0; k < p.kept.rank; ++k)
      if (p.kept.strides[0][k] % v != 0) return false;
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
    const ReduceVariant v = variant_of(c);
    const bool vectorized = !a || problem_of(t, d, c, *a).vectorized;  // without views: contiguous, aligned
    k.variant += "." + geometry_name(v, reduce_geometry(v, shape_of(d, kBackward), t.sm_count)) +
                 (vectorized ? ".vec16" : ".strided");
    return k;
  }
  static ReduceProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    ReduceProblem p = problem_of(ctx.target, d, ctx.choice, a);
    auto* base = static_cast<unsigned char*>(ctx.workspace.data);
    const int64_t stats = stats_bytes(d, kBackward) * p.outputs;
    p.stats = stats ? base : nullptr;
    p.partials = base ? base + stats : nullptr;
    return p;
  }
};

}  // namespace

template <>
struct OpHooks<ReduceOp> : ReduceHooks<false> {};
template <>
struct OpHooks<ReduceBackwardOp> : ReduceHooks<true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<ReduceOp>;
template class Plan<ReduceBackwardOp>;
}  // namespace baracuda

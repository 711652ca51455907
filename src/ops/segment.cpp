// The segment plans (sum, mean, max, min; forward and backward; sorted ids, unsorted ids, offsets):
// validation and kernel choice, shared by both backends, as hooks of the one plan life cycle
// (ops/plan_impl.hpp).
#include "baracuda/ops/segment.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ops/segment_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda::detail {
namespace {

constexpr DType kFloatsAndIntegers[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64};
constexpr DType kIndexTypes[] = {DType::i32, DType::i64};

constexpr VariantInfo kSegmented{
    "segmented", true, true, true,
    "sorted ids or offsets: each segment folds its rows in row order (CUDA: tiles of rows, "
    "segments across a tile's end combined in order)"};
constexpr VariantInfo kAtomic{"atomic", false, false, true,
                              "unsorted ids: atomic adds into an f32 / f64 / int64 scratch, then one pass to out"};
constexpr VariantInfo kSort{"sort", true, true, true,
                            "unsorted ids: rows sorted by segment (stable), then segmented: bit-identical"};
constexpr VariantInfo kSumVariants[] = {kSegmented, kAtomic, kSort};
constexpr VariantInfo kExtremeVariants[] = {kSegmented, kSort};
constexpr VariantInfo kBackwardVariants[] = {
    {"gather", true, true, true, "each row of ddata reads its segment's dout (and, for max / min, its indices)"}};

std::string_view form_name(SegmentForm f) {
  switch (f) {
    case SegmentForm::sorted_ids:
      return "sorted_ids";
    case SegmentForm::unsorted_ids:
      return "unsorted_ids";
    case SegmentForm::offsets:
      return "offsets";
  }
  return "?";
}

SegmentVariant variant_named(std::string_view name) {
  if (name == "atomic") return SegmentVariant::atomic;
  if (name == "sort") return SegmentVariant::sort;
  if (name == "gather") return SegmentVariant::gather;
  return SegmentVariant::segmented;
}

constexpr bool extreme(SegmentReduction r) { return r == SegmentReduction::max || r == SegmentReduction::min; }

Shape segments_shape(const SegmentDescriptor& d) {
  Shape s = d.data_shape;
  s.dims[0] = d.num_segments;
  return s;
}
int64_t row_length(const Shape& data) {
  int64_t n = 1;
  for (int k = 1; k < data.rank; ++k) n *= data.dims[k];
  return n;
}

// The rows of a tile of the segmented walk on CUDA: 256 (fewer past D = 1024, down to 64), so that a
// tile's two partial slots stay a few percent of its bytes. Measured on the H200 (bench/NOTES.md,
// "32-bit extreme positions, tile sizes"): tiles of 32 or 64 rows, for more lanes in flight, made
// sums 6-23% slower.
int64_t segment_tile_rows(int64_t length) {
  return std::clamp<int64_t>((int64_t{1} << 18) / std::max<int64_t>(length, 1), 64, 256);
}

// An empty segment's value: the descriptor's initial, else 0 / -inf / +inf (integers: their lowest
// and highest).
void empty_values(const SegmentDescriptor& d, SegmentReduction r, double& value, int64_t& integer) {
  const bool i32 = d.dtype == DType::i32;
  const int64_t lowest = i32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
  const int64_t highest = i32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  const double inf = std::numeric_limits<double>::infinity();
  value = r == SegmentReduction::max ? -inf : r == SegmentReduction::min ? inf : 0.0;
  integer = r == SegmentReduction::max ? lowest : r == SegmentReduction::min ? highest : 0;
  if (d.initial) {
    value = *d.initial;
    if (!is_floating(d.dtype)) integer = static_cast<int64_t>(*d.initial);  // select checked it fits
  }
}

constexpr std::string_view kPlanNames[2][4] = {
    {"SegmentSumPlan", "SegmentMeanPlan", "SegmentMaxPlan", "SegmentMinPlan"},
    {"SegmentSumBackwardPlan", "SegmentMeanBackwardPlan", "SegmentMaxBackwardPlan", "SegmentMinBackwardPlan"}};
constexpr std::string_view kOpNames[2][4] = {
    {"segment_sum", "segment_mean", "segment_max", "segment_min"},
    {"segment_sum_backward", "segment_mean_backward", "segment_max_backward", "segment_min_backward"}};

template <SegmentReduction R, bool kBackward>
constexpr OpSchema segment_schema() {
  const bool integers = !kBackward && R != SegmentReduction::mean;
  const auto r = static_cast<int>(R);
  return {kPlanNames[kBackward][r],
          kOpNames[kBackward][r],
          "segment",
          integers ? std::span<const DType>(kFloatsAndIntegers) : std::span<const DType>(kFloats),
          kIndexTypes,
          kBackward    ? std::span<const VariantInfo>(kBackwardVariants)
          : extreme(R) ? std::span<const VariantInfo>(kExtremeVariants)
                       : std::span<const VariantInfo>(kSumVariants)};
}

template <SegmentReduction R, bool kBackward>
struct SegmentHooks {
  using Descriptor = SegmentDescriptor;
  static constexpr OpSchema kSchema = segment_schema<R, kBackward>();

  static Status check(const Descriptor& d) {
    const std::string_view name = kSchema.plan;
    if (Status s = check_shape(name, "descriptor.data_shape", d.data_shape); !s) return s;
    if (d.data_shape.rank < 1)
      return plan_error(StatusCode::invalid_problem, name, "descriptor.data_shape", "has rank 0: data has no rows");
    if (d.num_segments < 0 || d.num_segments >= kMaxElements)
      return plan_error(StatusCode::invalid_problem, name, "descriptor.num_segments",
                        std::to_string(d.num_segments) + " is outside [0, 2^62)");
    if (Status s = check_shape(name, "descriptor.num_segments", segments_shape(d)); !s) return s;
    if (static_cast<unsigned>(d.form) > static_cast<unsigned>(SegmentForm::offsets))
      return plan_error(StatusCode::invalid_problem, name, "descriptor.form", "is not a SegmentForm");
    const int64_t n = d.data_shape.dims[0];
    const bool counts_rows = d.form == SegmentForm::offsets || extreme(R);
    if (d.index_dtype == DType::i32 && counts_rows && n > std::numeric_limits<int32_t>::max())
      return plan_error(StatusCode::unsupported, name, "descriptor.index_dtype",
                        "i32 cannot name the " + std::to_string(n) + " rows of data (use i64)");
    if (d.initial && !is_floating(d.dtype)) {
      const double v = *d.initial;
      const double lo = d.dtype == DType::i32 ? -2147483648.0 : -9223372036854775808.0;
      if (!(v >= lo && v < -lo) || std::trunc(v) != v)
        return plan_error(StatusCode::invalid_problem, name, "descriptor.initial",
                          std::to_string(v) + " is not a value of " + std::string(dtype_name(d.dtype)));
    }
    return Status::ok();
  }

  static SegmentProblem shape_of(const PlanTarget& t, const Descriptor& d, const PlanChoice& c) {
    SegmentProblem p;
    p.backward = kBackward;
    p.reduction = R;
    p.form = d.form;
    p.variant = c.variant >= 0 ? variant_named(variants()[c.variant].name) : SegmentVariant::segmented;
    p.dtype = d.dtype;
    p.index_dtype = d.index_dtype;
    p.rows = d.data_shape.dims[0];
    p.segments = d.num_segments;
    p.length = row_length(d.data_shape);
    p.tile_rows = t.backend == Backend::cuda ? segment_tile_rows(p.length) : 0;
    empty_values(d, R, p.empty_value, p.empty_integer);
    return p;
  }
  static std::span<const VariantInfo> variants() { return kSchema.variants; }
  static int index_of(std::string_view name) {
    const auto v = variants();
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].name == name) return static_cast<int>(i);
    return -1;
  }

  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference& pref,
                                     std::optional<int> forced) {
    const std::string_view name = kSchema.plan;
    int v = 0;
    if (!kBackward) {
      const bool unsorted = d.form == SegmentForm::unsorted_ids;
      const bool atomic_ok = unsorted && !extreme(R) && t.backend == Backend::cuda;
      const int fallback = index_of(unsorted ? "sort" : "segmented");
      v = atomic_ok && pref.determinism != Determinism::required ? index_of("atomic") : fallback;
      if (forced) {
        const std::string_view f = variants()[*forced].name;
        if (unsorted != (f != "segmented"))
          return plan_error(StatusCode::unsupported, name, "preference.variant",
                            std::string(f) + " does not run the " + std::string(form_name(d.form)) + " form (" +
                                (unsorted ? "atomic or sort do" : "segmented does") + ")");
        v = *forced;
      }
    }
    PlanChoice c{v, 0, 0};
    SegmentProblem p = shape_of(t, d, c);
    const CheckedSize ws = t.backend == Backend::cuda ? cuda::segment_workspace(p) : cpu::segment_workspace(p);
    if (!ws.below(kMaxBytes))
      return plan_error(StatusCode::invalid_problem, name, "descriptor.data_shape",
                        "the workspace for this many rows and segments would reach 2^63 bytes");
    if (t.backend == Backend::cuda && p.variant == SegmentVariant::sort && d.num_segments >= (int64_t{1} << 31))
      return plan_error(StatusCode::unsupported, name, "descriptor.num_segments",
                        "the sort variant sorts 32-bit segment keys: at most 2^31 - 1 segments");
#if BARACUDA_HAS_CUDA
    if (t.backend == Backend::cuda)
      if (Status st = cuda::prepare_segment(t, p); !st) return st;
#endif
    c.workspace = static_cast<size_t>(ws.value());
    c.knob = p.tile_rows;
    return c;
  }
  static bool nothing_to_do(const Descriptor&) { return false; }  // the index values are counted still
  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice& c) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = acc_dtype(d.dtype);
    g.deterministic = g.bit_stable = variants()[c.variant].deterministic;
    return g;
  }
};

// The argument tables. segment_ids and offsets: an index bound only on the one the form uses (a
// reader of the specs takes a bound for "an index tensor").
void index_specs(const SegmentDescriptor& d, ArgSpec& ids, ArgSpec& offsets) {
  const int64_t n = d.data_shape.dims[0];
  const bool by_ids = d.form != SegmentForm::offsets;
  ids = {ids.name, false, false, by_ids, d.index_dtype, Shape{n}, by_ids ? d.num_segments : 0};
  ids.sorted = d.form == SegmentForm::sorted_ids;
  offsets = {offsets.name, false, false, !by_ids, d.index_dtype, Shape{d.num_segments + 1}, by_ids ? 0 : n + 1};
  offsets.sorted = !by_ids;
}

template <SegmentReduction R>
struct ForwardTable {
  using Args = SegmentArgs;
  static constexpr ArgField<Args> kFields[] = {{"data", &Args::data, nullptr},
                                               {"segment_ids", &Args::segment_ids, nullptr},
                                               {"offsets", &Args::offsets, nullptr},
                                               {"out", nullptr, &Args::out},
                                               {"indices", nullptr, &Args::indices}};
  static void arg_specs(const SegmentDescriptor& d, std::span<ArgSpec> specs) {
    specs[0] = {specs[0].name, false, false, true, d.dtype, d.data_shape};
    index_specs(d, specs[1], specs[2]);
    specs[3] = {specs[3].name, true, false, true, d.dtype, segments_shape(d)};
    specs[4] = {specs[4].name, true, false, extreme(R), d.index_dtype, segments_shape(d), 0, true};
  }
};
template <SegmentReduction R>
struct BackwardTable {
  using Args = SegmentBackwardArgs;
  static constexpr ArgField<Args> kFields[] = {{"dout", &Args::dout, nullptr},
                                               {"segment_ids", &Args::segment_ids, nullptr},
                                               {"offsets", &Args::offsets, nullptr},
                                               {"indices", &Args::indices, nullptr},
                                               {"ddata", nullptr, &Args::ddata}};
  static void arg_specs(const SegmentDescriptor& d, std::span<ArgSpec> specs) {
    specs[0] = {specs[0].name, false, false, true, d.dtype, segments_shape(d)};
    index_specs(d, specs[1], specs[2]);
    specs[3] = {specs[3].name, false, false, extreme(R), d.index_dtype, segments_shape(d)};
    specs[4] = {specs[4].name, true, false, true, d.dtype, d.data_shape};
  }
};

// Rows of whole 16-byte vectors, 16-byte aligned, on both sides (CUDA's vector loads).
bool vectorizable(const SegmentProblem& p) {
  const int64_t v = 16 / static_cast<int64_t>(dtype_size(p.dtype));
  const void* row_side = p.backward ? static_cast<const void*>(p.row_out) : p.row_in;
  const void* seg_side = p.backward ? p.segment_in : static_cast<const void*>(p.segment_out);
  if (p.length % v != 0 || !aligned16(row_side) || !aligned16(seg_side)) return false;
  if (p.columns.rank > 1 ||
      (p.columns.rank == 1 && (p.columns.strides[kRowSide][0] != 1 || p.columns.strides[kSegmentSide][0] != 1)))
    return false;
  return p.row_stride % v == 0 && p.segment_stride % v == 0;
}

template <template <SegmentReduction> class TableOf, SegmentReduction R, bool kBackward>
struct SegmentOpHooks : TableOf<R>, SegmentHooks<R, kBackward> {
  using Base = SegmentHooks<R, kBackward>;
  using Table = TableOf<R>;
  using Base::kSchema;
  using Table::kFields;
  using typename Table::Args;

  static SegmentProblem problem_of(const PlanTarget& t, const SegmentDescriptor& d, const PlanChoice& c,
                                   const Args& a) {
    SegmentProblem p = Base::shape_of(t, d, c);
    // Field order: forward (data, segment_ids, offsets, out, indices), backward (dout, segment_ids,
    // offsets, indices, ddata).
    const AnyTensorRef rows_view = kFields[kBackward ? 4 : 0].get(a), segs_view = kFields[kBackward ? 0 : 3].get(a);
    const AnyTensorRef indices = extreme(R) ? kFields[kBackward ? 3 : 4].get(a) : AnyTensorRef{};
    const Strides none{};
    const Strides* walk[kSegmentColumns] = {&rows_view.strides, &segs_view.strides,
                                            indices.data ? &indices.strides : &none};
    bool trailing[kMaxRank] = {};
    for (int k = 1; k < d.data_shape.rank; ++k) trailing[k] = true;
    p.columns = make_walker<kSegmentColumns>(d.data_shape, walk, trailing);
    p.row_stride = rows_view.strides[0];
    p.segment_stride = segs_view.strides[0];
    p.indices_stride = indices.data ? indices.strides[0] : 0;
    if constexpr (kBackward) {
      p.row_out = const_cast<void*>(rows_view.data);
      p.segment_in = segs_view.data;
    } else {
      p.row_in = rows_view.data;
      p.segment_out = const_cast<void*>(segs_view.data);
    }
    p.indices = const_cast<void*>(indices.data);
    if (d.form == SegmentForm::offsets) {
      p.offsets = a.offsets.data;
      p.offsets_stride = a.offsets.strides[0];
    } else {
      p.ids = a.segment_ids.data;
      p.ids_stride = a.segment_ids.strides[0];
    }
    p.bad_index_count = a.bad_index_count;
    p.vectorized = t.backend == Backend::cuda && vectorizable(p);
    p.packed_rows = t.backend == Backend::cuda && p.length == 1 && p.row_stride == 1 &&
                    aligned16(p.backward ? static_cast<const void*>(p.row_out) : p.row_in);
    return p;
  }
  static KernelShape kernel(const PlanTarget& t, const SegmentDescriptor& d, const PlanChoice& c, const Args* a) {
    KernelShape k{std::string(Base::variants()[c.variant].name) + "." + std::string(form_name(d.form)),
                  Layout::contiguous};
    if (a) {
      std::vector<AnyTensorRef> views;
      for (const auto& f : kFields) views.push_back(f.get(*a));
      k.layout = layout_of(views);
    }
    if (t.backend == Backend::cuda) {
      // .vec16: 16-byte units of a row; .rows16: 16-byte vectors of rows (D = 1); .strided: elements.
      const SegmentProblem p = a ? problem_of(t, d, c, *a) : SegmentProblem{};
      k.variant += !a || p.vectorized ? ".vec16" : p.packed_rows ? ".rows16" : ".strided";
    }
    return k;
  }
  static SegmentProblem problem(const LaunchContext& ctx, const SegmentDescriptor& d, const Args& a) {
    SegmentProblem p = problem_of(ctx.target, d, ctx.choice, a);
    p.workspace = ctx.workspace.data;
    p.workspace_size = ctx.workspace.size;
    return p;
  }
};

}  // namespace

template <>
struct OpHooks<SegmentSumOp> : SegmentOpHooks<ForwardTable, SegmentReduction::sum, false> {};
template <>
struct OpHooks<SegmentMeanOp> : SegmentOpHooks<ForwardTable, SegmentReduction::mean, false> {};
template <>
struct OpHooks<SegmentMaxOp> : SegmentOpHooks<ForwardTable, SegmentReduction::max, false> {};
template <>
struct OpHooks<SegmentMinOp> : SegmentOpHooks<ForwardTable, SegmentReduction::min, false> {};
template <>
struct OpHooks<SegmentSumBackwardOp> : SegmentOpHooks<BackwardTable, SegmentReduction::sum, true> {};
template <>
struct OpHooks<SegmentMeanBackwardOp> : SegmentOpHooks<BackwardTable, SegmentReduction::mean, true> {};
template <>
struct OpHooks<SegmentMaxBackwardOp> : SegmentOpHooks<BackwardTable, SegmentReduction::max, true> {};
template <>
struct OpHooks<SegmentMinBackwardOp> : SegmentOpHooks<BackwardTable, SegmentReduction::min, true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<SegmentSumOp>;
template class Plan<SegmentMeanOp>;
template class Plan<SegmentMaxOp>;
template class Plan<SegmentMinOp>;
template class Plan<SegmentSumBackwardOp>;
template class Plan<SegmentMeanBackwardOp>;
template class Plan<SegmentMaxBackwardOp>;
template class Plan<SegmentMinBackwardOp>;
}  // namespace baracuda

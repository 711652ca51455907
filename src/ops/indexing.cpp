// The indexing plans: each op's descriptor and views resolved into one canonical problem (a gather
// or a scatter-add along dim), validated once here for both backends, as hooks of the one plan life
// cycle (ops/plan_impl.hpp). Each backend's scatter policy is its own (scatter_strategy).
#include "baracuda/ops/indexing.hpp"

#include <algorithm>
#include <string>

#include "ops/indexing_problem.hpp"
#include "ops/plan_impl.hpp"

namespace baracuda::detail {

IndexedLayout make_indexed_layout(const IndexedProblemDesc& desc, const Strides& values_strides,
                                  const Strides& index_strides, const Strides& table_strides, int64_t table_extent) {
  Strides table_without_dim = table_strides, marker{};
  table_without_dim[desc.dim] = 0;
  marker[desc.dim] = 1;
  const Strides* const row_tensors[kRowTensors] = {&values_strides, &index_strides, &table_without_dim, &marker};
  IndexedLayout layout;
  bool row_dims[kMaxRank] = {}, column_dims[kMaxRank] = {};
  for (int d = 0; d < desc.shape.rank; ++d) {
    row_dims[d] = !desc.broadcast_index || d <= desc.dim;
    column_dims[d] = !row_dims[d];
  }
  layout.rows = make_walker<kRowTensors>(desc.shape, row_tensors, row_dims);
  const Strides* const column_tensors[kColumnTensors] = {&values_strides, &table_strides};
  layout.columns = make_walker<kColumnTensors>(desc.shape, column_tensors, column_dims);
  layout.row_count = layout.rows.numel();
  layout.row_length = layout.columns.numel();
  layout.dim_size = desc.table_shape.dims[desc.dim];
  layout.table_dim_stride = table_strides[desc.dim];
  layout.padding = desc.padding_idx.value_or(kNoPadding);
  layout.sentinel_key = table_extent;
  return layout;
}

bool covers_every_table_line(const IndexedProblemDesc& desc) {
  for (int d = 0; d < desc.shape.rank; ++d)
    if (d != desc.dim && desc.shape.dims[d] != desc.table_shape.dims[d]) return false;
  return true;
}

void rows_and_length(const IndexedProblemDesc& p, int64_t& rows, int64_t& length) {
  rows = 1;
  length = 1;
  for (int d = 0; d < p.shape.rank; ++d) ((!p.broadcast_index || d <= p.dim) ? rows : length) *= p.shape.dims[d];
}

namespace {

constexpr DType kCopyable[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64};
constexpr DType kIndexTypes[] = {DType::i32, DType::i64};
constexpr VariantInfo kGatherVariants[] = {{"copy", true, true, true, "rows copied, 16-byte vectors where rows allow"}};
// In IndexVariant order after copy: variant index v is IndexVariant(v + 1).
constexpr VariantInfo kScatterVariants[] = {
    {"atomic", false, false, true, "atomic adds (f32 shared-memory lines along the innermost dim)"},
    {"sorted", true, true, true, "each destination sums its entries in one fixed order, in f32/f64"},
};

Expected<int> normalize_dim(std::string_view plan, int dim, int rank) {
  if (dim < -rank || dim >= rank || rank == 0)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.dim",
                      std::to_string(dim) + " is not a dim of a rank-" + std::to_string(rank) + " tensor");
  return dim < 0 ? dim + rank : dim;
}

// gather / gather backward / scatter_add: index has the table's rank, and fits inside it off dim.
Expected<IndexedProblemDesc> along_dim(std::string_view plan, bool scatter, DType dtype, DType index_dtype,
                                       const Shape& table, const char* table_field, const Shape& index, int dim) {
  if (Status s = check_shape(plan, table_field, table); !s) return s;
  if (Status s = check_shape(plan, "descriptor.index_shape", index); !s) return s;
  if (index.rank != table.rank)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.index_shape",
                      "rank " + std::to_string(index.rank) + " differs from " + table_field + "'s rank " +
                          std::to_string(table.rank));
  Expected<int> d = normalize_dim(plan, dim, table.rank);
  if (!d) return d.status();
  for (int k = 0; k < table.rank; ++k)
    if (k != *d && index.dims[k] > table.dims[k])
      return plan_error(
          StatusCode::invalid_problem, plan, "descriptor.index_shape[" + std::to_string(k) + "]",
          "size " + std::to_string(index.dims[k]) + " exceeds " + table_field + "'s " + std::to_string(table.dims[k]));
  IndexedProblemDesc p;
  p.plan = plan;
  p.scatter = scatter;
  p.dtype = dtype;
  p.index_dtype = index_dtype;
  p.shape = index;
  p.table_shape = table;
  p.dim = *d;
  p.size_field = "descriptor.index_shape";
  return p;
}

// index_select / its backward / embedding: a 1-D index along dim of the table.
Expected<IndexedProblemDesc> select_along_dim(std::string_view plan, bool scatter, DType dtype, DType index_dtype,
                                              const Shape& table, const char* table_field, int dim, int64_t num_indices,
                                              const char* count_field) {
  if (Status s = check_shape(plan, table_field, table); !s) return s;
  Expected<int> d = normalize_dim(plan, dim, table.rank);
  if (!d) return d.status();
  if (num_indices < 0)
    return plan_error(StatusCode::invalid_problem, plan, count_field, std::to_string(num_indices) + " is negative");
  IndexedProblemDesc p;
  p.plan = plan;
  p.scatter = scatter;
  p.dtype = dtype;
  p.index_dtype = index_dtype;
  p.table_shape = table;
  p.shape = table;
  p.shape.dims[*d] = num_indices;
  p.dim = *d;
  p.broadcast_index = true;
  p.size_field = count_field;
  // The walked shape (out, or the added values) is the table with dim resized: within the limits too.
  if (Status s = check_shape(plan, count_field, p.shape); !s) return s;
  return p;
}

Expected<IndexedProblemDesc> embedding(std::string_view plan, bool scatter, const EmbeddingDescriptor& e) {
  if (e.num_embeddings < 0 || e.embedding_dim < 0)
    return plan_error(StatusCode::invalid_problem, plan,
                      e.num_embeddings < 0 ? "descriptor.num_embeddings" : "descriptor.embedding_dim", "is negative");
  Expected<IndexedProblemDesc> p =
      select_along_dim(plan, scatter, e.dtype, e.index_dtype, {e.num_embeddings, e.embedding_dim}, "descriptor.weight",
                       0, e.num_indices, "descriptor.num_indices");
  if (!p) return p;
  if (e.padding_idx) {
    if (*e.padding_idx < -e.num_embeddings || *e.padding_idx >= e.num_embeddings)
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.padding_idx",
                        std::to_string(*e.padding_idx) + " is outside [-num_embeddings, num_embeddings)");
    p->padding_idx = *e.padding_idx < 0 ? *e.padding_idx + e.num_embeddings : *e.padding_idx;
  }
  return p;
}

Shape index_shape_of(const IndexedProblemDesc& p) { return p.broadcast_index ? Shape{p.shape.dims[p.dim]} : p.shape; }

Strides expanded_index_strides(const IndexedProblemDesc& p, const AnyTensorRef& index) {
  if (!p.broadcast_index) return index.strides;
  Strides s{};
  s[p.dim] = index.strides[0];
  return s;
}

std::string_view variant_name(IndexVariant v) {
  switch (v) {
    case IndexVariant::copy:
      return "copy";
    case IndexVariant::atomic:
      return "atomic";
    case IndexVariant::sorted:
      return "sorted";
  }
  return "?";
}

// The sku's mark of a CUDA scatter kernel beside the general ones.
const char* kernel_suffix(ScatterKernel k) {
  switch (k) {
    case ScatterKernel::general:
      return "";
    case ScatterKernel::shared_line:
      return "_shared";
    case ScatterKernel::short_lines:
      return "_short";
    case ScatterKernel::column_tiles:
      return "_columns";
    case ScatterKernel::warp_lines:
      return "_warp";
    case ScatterKernel::column_lines:
      return "_column_lines";
  }
  return "?";
}

// Rows of whole 16-byte vectors at 16-byte aligned addresses, in the values and the table.
bool vectorizable_rows(const IndexedLayout& layout, const void* values, const void* table, DType dtype) {
  const int64_t v = 16 / static_cast<int64_t>(dtype_size(dtype));
  if (layout.columns.rank != 1 || layout.columns.strides[0][0] != 1 || layout.columns.strides[1][0] != 1 ||
      layout.row_length % v != 0 || !aligned16(values) || !aligned16(table) || layout.table_dim_stride % v != 0)
    return false;
  for (int d = 0; d < layout.rows.rank; ++d)
    if (layout.rows.strides[0][d] % v != 0 || layout.rows.strides[2][d] % v != 0) return false;
  return true;
}

// The hooks every indexing op shares. `Op` supplies kSchema, kFields (with the values, index and
// table views at kValues, kIndex, kTable) and describe(descriptor).
template <class Op>
struct IndexHooks {
  using Descriptor = typename Op::Descriptor;
  using Args = typename Op::Args;

  static IndexedProblemDesc problem_of(const Descriptor& d) {
    IndexedProblemDesc p = Op::describe(d).value();  // select validated it
    p.accumulate = d.accumulate;                     // every descriptor has it; only scatters read it
    return p;
  }
  static Status check(const Descriptor& d) { return Op::describe(d).status(); }
  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    const IndexedProblemDesc p = problem_of(d);
    specs[Op::kValues].dtype = specs[Op::kTable].dtype = p.dtype;
    specs[Op::kValues].shape = p.shape;
    specs[Op::kTable].shape = p.table_shape;
    specs[Op::kTable].accumulates = p.scatter && p.accumulate;
    specs[Op::kIndex].dtype = p.index_dtype;
    specs[Op::kIndex].shape = index_shape_of(p);
    specs[Op::kIndex].index_bound = p.table_shape.dims[p.dim];
  }
  static IndexVariant variant_of(const PlanChoice& c) {
    return Op::kScatter ? static_cast<IndexVariant>(c.variant + 1) : IndexVariant::copy;
  }
  static ScatterKernel kernel_of(const PlanChoice& c) { return static_cast<ScatterKernel>(c.knob); }
  // CUDA: compiles (or finds in the caches) the kernels the plan runs, from what select knows.
  static Status prepare([[maybe_unused]] const PlanTarget& t, [[maybe_unused]] const IndexedProblemDesc& p,
                        [[maybe_unused]] IndexVariant variant, [[maybe_unused]] ScatterKernel kernel) {
#if BARACUDA_HAS_CUDA
    if (t.backend == Backend::cuda) {
      IndexedProblem problem;
      problem.desc = p;
      problem.variant = variant;
      problem.kernel = kernel;
      return cuda::prepare_indexing(t, problem);
    }
#endif
    return Status::ok();
  }
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference& pref,
                                     std::optional<int> forced) {
    const IndexedProblemDesc p = problem_of(d);
    if (!Op::kScatter) {
      if (Status st = prepare(t, p, IndexVariant::copy, ScatterKernel::general); !st) return st;
      return PlanChoice{0, 0, 0};
    }
    std::optional<IndexVariant> forced_variant;
    if (forced) forced_variant = static_cast<IndexVariant>(*forced + 1);
    const bool deterministic = pref.determinism == Determinism::required;
    const ScatterStrategy s = t.backend == Backend::cuda ? cuda::scatter_strategy(p, forced_variant, deterministic)
                                                         : cpu::scatter_strategy(p, forced_variant, deterministic);
    if (!s.workspace.below(kMaxBytes))
      return plan_error(StatusCode::invalid_problem, Op::kSchema.plan, p.size_field,
                        "the " + std::string(variant_name(s.variant)) +
                            " scatter's workspace for this many entries would reach 2^63 bytes");
    if (Status st = prepare(t, p, s.variant, s.kernel); !st) return st;
    return PlanChoice{static_cast<int>(s.variant) - 1, static_cast<size_t>(s.workspace.value()),
                      static_cast<int64_t>(s.kernel)};
  }
  static bool nothing_to_do(const Descriptor& d) {
    const IndexedProblemDesc p = problem_of(d);
    // An overwriting scatter with nothing to add still zeroes its table, and the values of a 1-D
    // index along an empty table are still counted.
    return index_shape_of(p).numel() == 0 && !(p.scatter && !p.accumulate);
  }
  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice& c) {
    PrecisionGuarantee g;
    const IndexVariant v = variant_of(c);
    const DType wide = d.dtype == DType::f64 ? DType::f64 : DType::f32;
    if (v == IndexVariant::copy) {
      g.compute = g.accumulator = d.dtype;  // an exact copy
    } else {
      // Sorted sums in f32 (f64 for f64); atomic adds into the output itself, in its own type,
      // except in a shared-memory line or a short line's group of lanes (f32).
      g.compute = wide;
      g.accumulator = v == IndexVariant::atomic && kernel_of(c) == ScatterKernel::general ? d.dtype : wide;
    }
    // As the schema's variants say (a forced atomic on short lines runs in entry order all the same,
    // but promises no more than atomic does).
    g.deterministic = g.bit_stable = v != IndexVariant::atomic;
    return g;
  }
  static IndexedLayout layout_of_views(const IndexedProblemDesc& p, const Args& a) {
    const AnyTensorRef values = Op::kFields[Op::kValues].get(a), table = Op::kFields[Op::kTable].get(a);
    return make_indexed_layout(p, values.strides, expanded_index_strides(p, Op::kFields[Op::kIndex].get(a)),
                               table.strides, table.extent());
  }
  static KernelShape kernel(const PlanTarget& t, const Descriptor& d, const PlanChoice& c, const Args* a) {
    const IndexedProblemDesc p = problem_of(d);
    const IndexVariant v = variant_of(c);
    KernelShape k{
        std::string(variant_name(v)) + (p.broadcast_index ? ".rows" : ".elements") + kernel_suffix(kernel_of(c)),
        Layout::contiguous};
    if (!a) return k;
    const AnyTensorRef views[] = {Op::kFields[0].get(*a), Op::kFields[1].get(*a), Op::kFields[2].get(*a)};
    k.layout = layout_of(views);
    // The CUDA 16-byte row kernels: the gather copy, the sorted sums, and f32's vector atomics.
    const bool has_vector_kernel = v != IndexVariant::atomic || p.dtype == DType::f32;
    if (t.backend == Backend::cuda && has_vector_kernel && p.broadcast_index &&
        vectorizable_rows(layout_of_views(p, *a), Op::kFields[Op::kValues].get(*a).data,
                          Op::kFields[Op::kTable].get(*a).data, p.dtype))
      k.variant += "_vectorized";
    return k;
  }
  static IndexedProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    IndexedProblem p;
    p.desc = problem_of(d);
    p.variant = variant_of(ctx.choice);
    p.layout = layout_of_views(p.desc, a);
    const AnyTensorRef values = Op::kFields[Op::kValues].get(a), table = Op::kFields[Op::kTable].get(a);
    // The written view was checked as an output by can_implement.
    p.values = const_cast<void*>(values.data);
    p.table = const_cast<void*>(table.data);
    p.index_view = Op::kFields[Op::kIndex].get(a);
    p.index = p.index_view.data;
    p.table_view = table;
    p.bad_index_count = a.bad_index_count;
    p.workspace = ctx.workspace.data;
    p.workspace_size = ctx.workspace.size;
    p.vectorized_rows = ctx.target.backend == Backend::cuda && p.desc.broadcast_index &&
                        vectorizable_rows(p.layout, p.values, p.table, p.desc.dtype);
    p.kernel = kernel_of(ctx.choice);
    return p;
  }
};

template <class Args>
constexpr ArgField<Args> in(std::string_view name, AnyTensorRef Args::*field) {
  return {name, field, nullptr};
}
template <class Args>
constexpr ArgField<Args> out(std::string_view name, AnyTensorMut Args::*field) {
  return {name, nullptr, field};
}

// Gather-shaped ops: (table, index, values); scatter-shaped ones: (values, index, table).
template <bool kScatter_>
struct IndexOpBase {
  static constexpr bool kScatter = kScatter_;
  static constexpr int kValues = kScatter ? 0 : 2, kIndex = 1, kTable = kScatter ? 2 : 0;
};

constexpr OpSchema index_schema(std::string_view plan, std::string_view op, bool scatter) {
  return {plan,        op,
          "indexing",  scatter ? std::span<const DType>(kFloats) : std::span<const DType>(kCopyable),
          kIndexTypes, scatter ? std::span<const VariantInfo>(kScatterVariants) : kGatherVariants};
}

struct GatherTraits : IndexOpBase<false> {
  using Descriptor = GatherDescriptor;
  using Args = GatherArgs;
  static constexpr OpSchema kSchema = index_schema("GatherPlan", "gather", false);
  static constexpr ArgField<Args> kFields[] = {in("src", &Args::src), in("index", &Args::index),
                                               out("out", &Args::out)};
  static Expected<IndexedProblemDesc> describe(const Descriptor& d) {
    return along_dim(kSchema.plan, false, d.dtype, d.index_dtype, d.src_shape, "descriptor.src_shape", d.index_shape,
                     d.dim);
  }
};
struct GatherBackwardTraits : IndexOpBase<true> {
  using Descriptor = GatherDescriptor;
  using Args = GatherBackwardArgs;
  static constexpr OpSchema kSchema = index_schema("GatherBackwardPlan", "gather_backward", true);
  static constexpr ArgField<Args> kFields[] = {in("dout", &Args::dout), in("index", &Args::index),
                                               out("dsrc", &Args::dsrc)};
  static Expected<IndexedProblemDesc> describe(const Descriptor& d) {
    return along_dim(kSchema.plan, true, d.dtype, d.index_dtype, d.src_shape, "descriptor.src_shape", d.index_shape,
                     d.dim);
  }
};
struct ScatterAddTraits : IndexOpBase<true> {
  using Descriptor = ScatterAddDescriptor;
  using Args = ScatterAddArgs;
  static constexpr OpSchema kSchema = index_schema("ScatterAddPlan", "scatter_add", true);
  static constexpr ArgField<Args> kFields[] = {in("src", &Args::src), in("index", &Args::index),
                                               out("dst", &Args::dst)};
  static Expected<IndexedProblemDesc> describe(const Descriptor& d) {
    return along_dim(kSchema.plan, true, d.dtype, d.index_dtype, d.dst_shape, "descriptor.dst_shape", d.index_shape,
                     d.dim);
  }
};
struct IndexSelectTraits : IndexOpBase<false> {
  using Descriptor = IndexSelectDescriptor;
  using Args = IndexSelectArgs;
  static constexpr OpSchema kSchema = index_schema("IndexSelectPlan", "index_select", false);
  static constexpr ArgField<Args> kFields[] = {in("src", &Args::src), in("index", &Args::index),
                                               out("out", &Args::out)};
  static Expected<IndexedProblemDesc> describe(const Descriptor& d) {
    return select_along_dim(kSchema.plan, false, d.dtype, d.index_dtype, d.src_shape, "descriptor.src_shape", d.dim,
                            d.num_indices, "descriptor.num_indices");
  }
};
struct IndexSelectBackwardTraits : IndexOpBase<true> {
  using Descriptor = IndexSelectDescriptor;
  using Args = IndexSelectBackwardArgs;
  static constexpr OpSchema kSchema = index_schema("IndexSelectBackwardPlan", "index_select_backward", true);
  static constexpr ArgField<Args> kFields[] = {in("dout", &Args::dout), in("index", &Args::index),
                                               out("dsrc", &Args::dsrc)};
  static Expected<IndexedProblemDesc> describe(const Descriptor& d) {
    return select_along_dim(kSchema.plan, true, d.dtype, d.index_dtype, d.src_shape, "descriptor.src_shape", d.dim,
                            d.num_indices, "descriptor.num_indices");
  }
};
struct EmbeddingTraits : IndexOpBase<false> {
  using Descriptor = EmbeddingDescriptor;
  using Args = EmbeddingArgs;
  static constexpr OpSchema kSchema = index_schema("EmbeddingPlan", "embedding", false);
  static constexpr ArgField<Args> kFields[] = {in("weight", &Args::weight), in("indices", &Args::indices),
                                               out("out", &Args::out)};
  static Expected<IndexedProblemDesc> describe(const Descriptor& d) { return embedding(kSchema.plan, false, d); }
};
struct EmbeddingBackwardTraits : IndexOpBase<true> {
  using Descriptor = EmbeddingDescriptor;
  using Args = EmbeddingBackwardArgs;
  static constexpr OpSchema kSchema = index_schema("EmbeddingBackwardPlan", "embedding_backward", true);
  static constexpr ArgField<Args> kFields[] = {in("dout", &Args::dout), in("indices", &Args::indices),
                                               out("dweight", &Args::dweight)};
  static Expected<IndexedProblemDesc> describe(const Descriptor& d) { return embedding(kSchema.plan, true, d); }
};

}  // namespace

template <class Traits>
struct IndexOpHooks : Traits, IndexHooks<Traits> {
  using typename Traits::Args;
  using typename Traits::Descriptor;
};
template <>
struct OpHooks<GatherOp> : IndexOpHooks<GatherTraits> {};
template <>
struct OpHooks<GatherBackwardOp> : IndexOpHooks<GatherBackwardTraits> {};
template <>
struct OpHooks<ScatterAddOp> : IndexOpHooks<ScatterAddTraits> {};
template <>
struct OpHooks<IndexSelectOp> : IndexOpHooks<IndexSelectTraits> {};
template <>
struct OpHooks<IndexSelectBackwardOp> : IndexOpHooks<IndexSelectBackwardTraits> {};
template <>
struct OpHooks<EmbeddingOp> : IndexOpHooks<EmbeddingTraits> {};
template <>
struct OpHooks<EmbeddingBackwardOp> : IndexOpHooks<EmbeddingBackwardTraits> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<GatherOp>;
template class Plan<GatherBackwardOp>;
template class Plan<ScatterAddOp>;
template class Plan<IndexSelectOp>;
template class Plan<IndexSelectBackwardOp>;
template class Plan<EmbeddingOp>;
template class Plan<EmbeddingBackwardOp>;
}  // namespace baracuda

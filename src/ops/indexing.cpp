// The indexing plans: each op's descriptor and views resolved into one canonical problem (a gather
// or a scatter-add along dim), validated once here for both backends.
#include "baracuda/ops/indexing.hpp"

#include <algorithm>
#include <string>

#include "ops/indexing_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda {
namespace detail {

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

bool shared_rows(const IndexedProblemDesc& desc) {
  int last = desc.shape.rank - 1;
  while (last > desc.dim && desc.shape.dims[last] == 1) --last;
  const size_t acc = desc.dtype == DType::f64 ? 8 : 4;
  // dims[dim] > 1 keeps dim in the walk (a size-1 dim is dropped), so it is the walk's innermost.
  return desc.scatter && last == desc.dim && desc.shape.dims[desc.dim] > 1 &&
         static_cast<size_t>(desc.table_shape.dims[desc.dim]) * acc <= kSharedRowBytes;
}

bool covers_every_table_line(const IndexedProblemDesc& desc) {
  for (int d = 0; d < desc.shape.rank; ++d)
    if (d != desc.dim && desc.shape.dims[d] != desc.table_shape.dims[d]) return false;
  return true;
}

}  // namespace detail

namespace {

using detail::IndexedProblemDesc;
using detail::IndexVariant;
using detail::plan_error;
using detail::ViewRole;

// The views of an op's args in canonical roles.
struct ResolvedViews {
  AnyTensorRef values, index, table;
  const char *values_field, *index_field, *table_field;
  int64_t* bad_index_count;
};

Expected<int> normalize_dim(std::string_view plan, int dim, int rank) {
  if (dim < -rank || dim >= rank || rank == 0)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.dim",
                      std::to_string(dim) + " is not a dim of a rank-" + std::to_string(rank) + " tensor");
  return dim < 0 ? dim + rank : dim;
}

Status check_dtypes(std::string_view plan, DType dtype, DType index_dtype, bool accumulates) {
  const bool copyable = is_floating(dtype) || dtype == DType::i32 || dtype == DType::i64;
  if (accumulates ? !is_floating(dtype) : !copyable)
    return plan_error(StatusCode::unsupported, plan, "descriptor.dtype",
                      std::string(dtype_name(dtype)) + " is not supported (supported: f16, bf16, f32, f64" +
                          (accumulates ? ")" : ", i32, i64)"));
  if (!is_index(index_dtype))
    return plan_error(StatusCode::unsupported, plan, "descriptor.index_dtype",
                      std::string(dtype_name(index_dtype)) + " is not an index type (i32, i64)");
  return Status::ok();
}

// gather / gather backward / scatter_add: index has the table's rank, and fits inside it off dim.
Expected<IndexedProblemDesc> along_dim(std::string_view plan, bool scatter, DType dtype, DType index_dtype,
                                       const Shape& table, const char* table_field, const Shape& index, int dim) {
  if (Status s = check_dtypes(plan, dtype, index_dtype, scatter); !s) return s;
  if (Status s = detail::check_shape(plan, table_field, table); !s) return s;
  if (Status s = detail::check_shape(plan, "descriptor.index_shape", index); !s) return s;
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
  p.scatter = scatter;
  p.dtype = dtype;
  p.index_dtype = index_dtype;
  p.shape = index;
  p.table_shape = table;
  p.dim = *d;
  return p;
}

// index_select / its backward / embedding: a 1-D index along dim of the table.
Expected<IndexedProblemDesc> select_along_dim(std::string_view plan, bool scatter, DType dtype, DType index_dtype,
                                              const Shape& table, const char* table_field, int dim, int64_t num_indices,
                                              const char* count_field) {
  if (Status s = check_dtypes(plan, dtype, index_dtype, scatter); !s) return s;
  if (Status s = detail::check_shape(plan, table_field, table); !s) return s;
  Expected<int> d = normalize_dim(plan, dim, table.rank);
  if (!d) return d.status();
  if (num_indices < 0)
    return plan_error(StatusCode::invalid_problem, plan, count_field, std::to_string(num_indices) + " is negative");
  IndexedProblemDesc p;
  p.scatter = scatter;
  p.dtype = dtype;
  p.index_dtype = index_dtype;
  p.table_shape = table;
  p.shape = table;
  p.shape.dims[*d] = num_indices;
  p.dim = *d;
  p.broadcast_index = true;
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

template <class Op>
struct Traits;

template <>
struct Traits<GatherOp> {
  static constexpr std::string_view kPlan = "GatherPlan", kOp = "gather";
  static Expected<IndexedProblemDesc> problem(const GatherDescriptor& d) {
    return along_dim(kPlan, false, d.dtype, d.index_dtype, d.src_shape, "descriptor.src_shape", d.index_shape, d.dim);
  }
  static ResolvedViews views(const GatherArgs& a) {
    return {a.out, a.index, a.src, "args.out", "args.index", "args.src", a.bad_index_count};
  }
};
template <>
struct Traits<GatherBackwardOp> {
  static constexpr std::string_view kPlan = "GatherBackwardPlan", kOp = "gather_backward";
  static Expected<IndexedProblemDesc> problem(const GatherDescriptor& d) {
    return along_dim(kPlan, true, d.dtype, d.index_dtype, d.src_shape, "descriptor.src_shape", d.index_shape, d.dim);
  }
  static ResolvedViews views(const GatherBackwardArgs& a) {
    return {a.dout, a.index, a.dsrc, "args.dout", "args.index", "args.dsrc", a.bad_index_count};
  }
};
template <>
struct Traits<ScatterAddOp> {
  static constexpr std::string_view kPlan = "ScatterAddPlan", kOp = "scatter_add";
  static Expected<IndexedProblemDesc> problem(const ScatterAddDescriptor& d) {
    return along_dim(kPlan, true, d.dtype, d.index_dtype, d.dst_shape, "descriptor.dst_shape", d.index_shape, d.dim);
  }
  static ResolvedViews views(const ScatterAddArgs& a) {
    return {a.src, a.index, a.dst, "args.src", "args.index", "args.dst", a.bad_index_count};
  }
};
template <>
struct Traits<IndexSelectOp> {
  static constexpr std::string_view kPlan = "IndexSelectPlan", kOp = "index_select";
  static Expected<IndexedProblemDesc> problem(const IndexSelectDescriptor& d) {
    return select_along_dim(kPlan, false, d.dtype, d.index_dtype, d.src_shape, "descriptor.src_shape", d.dim,
                            d.num_indices, "descriptor.num_indices");
  }
  static ResolvedViews views(const IndexSelectArgs& a) {
    return {a.out, a.index, a.src, "args.out", "args.index", "args.src", a.bad_index_count};
  }
};
template <>
struct Traits<IndexSelectBackwardOp> {
  static constexpr std::string_view kPlan = "IndexSelectBackwardPlan", kOp = "index_select_backward";
  static Expected<IndexedProblemDesc> problem(const IndexSelectDescriptor& d) {
    return select_along_dim(kPlan, true, d.dtype, d.index_dtype, d.src_shape, "descriptor.src_shape", d.dim,
                            d.num_indices, "descriptor.num_indices");
  }
  static ResolvedViews views(const IndexSelectBackwardArgs& a) {
    return {a.dout, a.index, a.dsrc, "args.dout", "args.index", "args.dsrc", a.bad_index_count};
  }
};
template <>
struct Traits<EmbeddingOp> {
  static constexpr std::string_view kPlan = "EmbeddingPlan", kOp = "embedding";
  static Expected<IndexedProblemDesc> problem(const EmbeddingDescriptor& d) { return embedding(kPlan, false, d); }
  static ResolvedViews views(const EmbeddingArgs& a) {
    return {a.out, a.indices, a.weight, "args.out", "args.indices", "args.weight", a.bad_index_count};
  }
};
template <>
struct Traits<EmbeddingBackwardOp> {
  static constexpr std::string_view kPlan = "EmbeddingBackwardPlan", kOp = "embedding_backward";
  static Expected<IndexedProblemDesc> problem(const EmbeddingDescriptor& d) { return embedding(kPlan, true, d); }
  static ResolvedViews views(const EmbeddingBackwardArgs& a) {
    return {a.dout, a.indices, a.dweight, "args.dout", "args.indices", "args.dweight", a.bad_index_count};
  }
};

// R rows of L elements, from the shapes alone (see IndexedLayout).
void rows_and_length(const IndexedProblemDesc& p, int64_t& rows, int64_t& length) {
  rows = 1;
  length = 1;
  for (int d = 0; d < p.shape.rank; ++d) ((!p.broadcast_index || d <= p.dim) ? rows : length) *= p.shape.dims[d];
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

// Rows of whole 16-byte vectors at 16-byte aligned addresses, in the values and the table.
bool vectorizable_rows(const detail::IndexedLayout& layout, const void* values, const void* table, DType dtype) {
  const int64_t v = 16 / static_cast<int64_t>(dtype_size(dtype));
  if (layout.columns.rank != 1 || layout.columns.strides[0][0] != 1 || layout.columns.strides[1][0] != 1 ||
      layout.row_length % v != 0 || !detail::aligned16(values) || !detail::aligned16(table) ||
      layout.table_dim_stride % v != 0)
    return false;
  for (int d = 0; d < layout.rows.rank; ++d)
    if (layout.rows.strides[0][d] % v != 0 || layout.rows.strides[2][d] % v != 0) return false;
  return true;
}

}  // namespace

template <class Op>
Expected<IndexPlan<Op>> IndexPlan<Op>::select(const Stream& stream, const Descriptor& desc,
                                              const PlanPreference& preference) {
  constexpr std::string_view plan_name = Traits<Op>::kPlan;
  Expected<detail::BackendTarget> target = detail::resolve_backend(plan_name, stream, preference);
  if (!target) return target.status();
  Expected<IndexedProblemDesc> problem = Traits<Op>::problem(desc);
  if (!problem) return problem.status();
  problem->accumulate = desc.accumulate;  // every descriptor has it; only scatters read it
  IndexPlan plan;
  plan.desc_ = desc;
  plan.problem_ = *problem;
  plan.backend_ = target->backend;
  plan.arch_ = target->arch;
  plan.device_ = target->device;
  const bool required = preference.determinism == Determinism::required;
  if (!problem->scatter) {
    if (!preference.variant.empty() && preference.variant != "copy")
      return plan_error(StatusCode::unsupported, plan_name, "preference.variant",
                        "'" + preference.variant + "' is not a variant of this plan (copy)");
    plan.variant_ = IndexVariant::copy;
    return plan;
  }
  // Scatter-add: sorted (deterministic, f32 accumulation) or atomic (CUDA only). Along the innermost
  // dim, CUDA sums each destination line in shared memory, in f32, with either variant.
  const bool cuda = target->backend == Backend::cuda;
  plan.shared_rows_ = cuda && detail::shared_rows(*problem);
  const bool sixteen_bit = problem->dtype == DType::f16 || problem->dtype == DType::bf16;
  // 16-bit types accumulate in f32 by default: atomically only in the shared line.
  const bool atomic_default = cuda && !required && (!sixteen_bit || plan.shared_rows_);
  IndexVariant variant = atomic_default ? IndexVariant::atomic : IndexVariant::sorted;
  if (preference.variant == "sorted") {
    variant = IndexVariant::sorted;
  } else if (preference.variant == "atomic") {
    if (!cuda || required)
      return plan_error(StatusCode::unsupported, plan_name, "preference.variant",
                        !cuda ? "'atomic' is not a CPU variant (the CPU kernel is sorted)"
                              : "'atomic' is not deterministic, but determinism is required");
    variant = IndexVariant::atomic;
  } else if (!preference.variant.empty()) {
    return plan_error(StatusCode::unsupported, plan_name, "preference.variant",
                      "'" + preference.variant + "' is not a variant of this plan (atomic, sorted)");
  }
  plan.variant_ = variant;
  if (variant == IndexVariant::sorted && !plan.shared_rows_) {
    int64_t rows = 0, length = 0;
    rows_and_length(*problem, rows, length);
    size_t bytes = 0;
    if (!cuda) {
      bytes = static_cast<size_t>(rows) * 16;  // (key, position) pairs sorted in place
    } else {
#if BARACUDA_HAS_CUDA
      bytes = detail::cuda::sorted_scatter_workspace(rows, length, problem->dtype).total();
#endif
    }
    if (bytes > preference.workspace_limit)
      return plan_error(StatusCode::unsupported, plan_name, "preference.workspace_limit",
                        "the sorted variant needs " + std::to_string(bytes) + " bytes of workspace");
    plan.workspace_ = bytes;
  }
  return plan;
}

template <class Op>
Status IndexPlan<Op>::can_implement(const Args& args) const {
  constexpr std::string_view plan_name = Traits<Op>::kPlan;
  const ResolvedViews v = Traits<Op>::views(args);
  const bool scatter = problem_.scatter;
  Status s = detail::check_view(plan_name, v.values_field, v.values, problem_.dtype, problem_.shape,
                                scatter ? ViewRole::input : ViewRole::output);
  if (!s) return s;
  s = detail::check_view(plan_name, v.index_field, v.index, problem_.index_dtype, index_shape_of(problem_),
                         ViewRole::input);
  if (!s) return s;
  s = detail::check_view(plan_name, v.table_field, v.table, problem_.dtype, problem_.table_shape,
                         scatter ? ViewRole::output : ViewRole::input);
  if (!s) return s;
  if (v.bad_index_count && reinterpret_cast<uintptr_t>(v.bad_index_count) % alignof(int64_t) != 0)
    return plan_error(StatusCode::misaligned_operand, plan_name, "args.bad_index_count", "is not aligned to 8 bytes");
  return Status::ok();
}

template <class Op>
PrecisionGuarantee IndexPlan<Op>::precision_guarantee() const {
  PrecisionGuarantee g;
  const DType wide = problem_.dtype == DType::f64 ? DType::f64 : DType::f32;
  if (variant_ == IndexVariant::copy) {
    g.compute = g.accumulator = problem_.dtype;  // an exact copy
  } else {
    // Sorted sums in f32 (f64 for f64); atomic adds into the output itself, in its own type.
    g.compute = wide;
    g.accumulator = variant_ == IndexVariant::atomic && !shared_rows_ ? problem_.dtype : wide;
  }
  g.deterministic = g.bit_stable = variant_ != IndexVariant::atomic;
  return g;
}

template <class Op>
KernelSku IndexPlan<Op>::sku() const {
  KernelSku sku;
  sku.category = "indexing";
  sku.op = std::string(Traits<Op>::kOp);
  sku.element = problem_.dtype;
  sku.index = problem_.index_dtype;
  sku.layout = Layout::contiguous;
  sku.arch = arch_;
  sku.backend = backend_;
  sku.variant = std::string(variant_name(variant_)) + (problem_.broadcast_index ? ".rows" : ".elements") +
                (shared_rows_ ? "_shared" : "");
  sku.precision = precision_guarantee();
  return sku;
}

template <class Op>
KernelSku IndexPlan<Op>::sku(const Args& args) const {
  KernelSku k = sku();
  const ResolvedViews v = Traits<Op>::views(args);
  const bool contiguous = v.values.is_contiguous() && v.index.is_contiguous() && v.table.is_contiguous();
  k.layout = contiguous ? Layout::contiguous : Layout::strided;
  // The CUDA 16-byte row kernels: the gather copy, the sorted sums, and f32's vector atomics.
  const bool has_vector_kernel = variant_ != IndexVariant::atomic || problem_.dtype == DType::f32;
  if (backend_ == Backend::cuda) {
    const detail::IndexedLayout layout = detail::make_indexed_layout(
        problem_, v.values.strides, expanded_index_strides(problem_, v.index), v.table.strides, v.table.extent());
    if (has_vector_kernel && problem_.broadcast_index &&
        vectorizable_rows(layout, v.values.data, v.table.data, problem_.dtype))
      k.variant += "_vectorized";
  }
  return k;
}

template <class Op>
Status IndexPlan<Op>::run(const Stream& stream, Workspace workspace, const Args& args) const {
  constexpr std::string_view plan_name = Traits<Op>::kPlan;
  if (Status s = detail::check_stream(plan_name, stream, {backend_, device_, arch_, 0}); !s) return s;
  if (Status s = can_implement(args); !s) return s;
  // Nothing to walk: a no-op, unless an overwriting scatter still has its table to zero.
  const bool zero_only = problem_.shape.numel() == 0 && problem_.scatter && !problem_.accumulate;
  if (problem_.shape.numel() == 0 && !zero_only) return Status::ok();
  if (Status s = detail::check_workspace(plan_name, workspace, zero_only ? 0 : workspace_); !s) return s;
  const ResolvedViews v = Traits<Op>::views(args);
  detail::IndexedProblem p;
  p.desc = problem_;
  p.variant = variant_;
  p.layout = detail::make_indexed_layout(problem_, v.values.strides, expanded_index_strides(problem_, v.index),
                                         v.table.strides, v.table.extent());
  // The written view was checked as an output above.
  p.values = const_cast<void*>(v.values.data);
  p.table = const_cast<void*>(v.table.data);
  p.index = v.index.data;
  p.index_view = v.index;
  p.table_view = v.table;
  p.bad_index_count = v.bad_index_count;
  p.workspace = workspace.data;
  p.workspace_size = workspace.size;
  p.vectorized_rows = backend_ == Backend::cuda && problem_.broadcast_index &&
                      vectorizable_rows(p.layout, p.values, p.table, problem_.dtype);
  p.shared_rows = shared_rows_;
  if (backend_ == Backend::cpu)
    return problem_.scatter ? detail::cpu::indexed_scatter_add(p) : detail::cpu::indexed_gather(p);
#if BARACUDA_HAS_CUDA
  return problem_.scatter ? detail::cuda::indexed_scatter_add(stream, p) : detail::cuda::indexed_gather(stream, p);
#else
  return plan_error(StatusCode::unsupported, plan_name, "stream", "baracuda was built without CUDA");
#endif
}

template class IndexPlan<GatherOp>;
template class IndexPlan<GatherBackwardOp>;
template class IndexPlan<ScatterAddOp>;
template class IndexPlan<IndexSelectOp>;
template class IndexPlan<IndexSelectBackwardOp>;
template class IndexPlan<EmbeddingOp>;
template class IndexPlan<EmbeddingBackwardOp>;

}  // namespace baracuda

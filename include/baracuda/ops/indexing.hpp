#pragma once
// The indexing family: gather and scatter-add along a dim, and the ops built on them.
//   GatherPlan            out[c] = src[c with c[dim] -> index[c]]        (torch.gather, take_along_axis)
//   GatherBackwardPlan    dsrc[c with c[dim] -> index[c]] += dout[c]
//   ScatterAddPlan        dst[c with c[dim] -> index[c]] += src[c]       (Tensor.scatter_add_)
//   IndexSelectPlan       out[.., j, ..] = src[.., index[j], ..]         (torch.index_select)
//   IndexSelectBackwardPlan  dsrc[.., index[j], ..] += dout[.., j, ..]   (Tensor.index_add_)
//   EmbeddingPlan         out[n, :] = weight[indices[n], :]              (nn.functional.embedding)
//   EmbeddingBackwardPlan dweight[indices[n], :] += dout[n, :]          (embedding_dense_backward)
// Every plan shares one gather engine and one scatter-add engine (index_select and embedding are a
// gather whose index is broadcast off `dim`).
//
// Index values outside [0, size along dim), and for embeddings the padding index, never cause an
// out-of-bounds access: forward ops write zeros there, backward ops skip them. Out-of-range values
// (not the padding index) are counted into `bad_index_count` when it is given: an int64 in the
// stream's memory (device memory on CUDA) that the plan adds to, so a caller can detect them
// without losing its CUDA context.
//
// Accumulating ops (the backward ones and scatter-add) add into their output when the descriptor's
// `accumulate` is true (the default), and overwrite it (as if it were zeroed first, with the
// zeroing fused where the kernel writes every element) when it is false. Forward plans ignore it. They have two
// variants: "atomic" (fast; not deterministic) and "sorted" (bit-identical across runs: equal destination indices are
// put in a fixed order by a stable sort and summed in the accumulator type). "sorted" is chosen when determinism is
// required, and always on the CPU; otherwise "atomic" on CUDA. Along the innermost dim (gather's and index_select's
// backward along the last dim) CUDA sums each destination line in f32 in shared memory with either variant, so
// there 16-bit types default to "atomic" too; elsewhere they default to "sorted" (f32 sums), and asking for
// "atomic" by name gives 16-bit atomics.
#include <optional>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct GatherDescriptor {
  DType dtype = DType::f32;  // f16, bf16, f32, f64, i32, i64 (backward: floating only)
  DType index_dtype = DType::i64;
  Shape src_shape;
  Shape index_shape;       // same rank as src; index_shape[d] <= src_shape[d] for d != dim; out has it
  int dim = 0;             // negative counts from the end
  bool accumulate = true;  // backward: add into dsrc (true) or overwrite it (false)
};
struct GatherArgs {
  AnyTensorRef src;
  AnyTensorRef index;
  AnyTensorMut out;
  int64_t* bad_index_count = nullptr;
};
struct GatherBackwardArgs {
  AnyTensorRef dout;  // index_shape
  AnyTensorRef index;
  AnyTensorMut dsrc;  // src_shape, accumulated into
  int64_t* bad_index_count = nullptr;
};

struct ScatterAddDescriptor {
  DType dtype = DType::f32;
  DType index_dtype = DType::i64;
  Shape dst_shape;
  Shape index_shape;  // src has it; same rank as dst; index_shape[d] <= dst_shape[d] for d != dim
  int dim = 0;
  bool accumulate = true;  // add into dst (true) or overwrite it (false)
};
struct ScatterAddArgs {
  AnyTensorRef src;
  AnyTensorRef index;
  AnyTensorMut dst;  // accumulated into
  int64_t* bad_index_count = nullptr;
};

struct IndexSelectDescriptor {
  DType dtype = DType::f32;
  DType index_dtype = DType::i64;
  Shape src_shape;
  int dim = 0;
  int64_t num_indices = 0;  // index is 1-D; out is src_shape with dim's size replaced by it
  bool accumulate = true;   // backward: add into dsrc (true) or overwrite it (false)
};
struct IndexSelectArgs {
  AnyTensorRef src;
  AnyTensorRef index;
  AnyTensorMut out;
  int64_t* bad_index_count = nullptr;
};
struct IndexSelectBackwardArgs {
  AnyTensorRef dout;
  AnyTensorRef index;
  AnyTensorMut dsrc;  // accumulated into
  int64_t* bad_index_count = nullptr;
};

struct EmbeddingDescriptor {
  DType dtype = DType::f32;
  DType index_dtype = DType::i64;
  int64_t num_embeddings = 0;          // V
  int64_t embedding_dim = 0;           // D
  int64_t num_indices = 0;             // N: indices are 1-D (flatten them), out is [N, D]
  std::optional<int64_t> padding_idx;  // rows with this index are zeros and get no gradient
  bool accumulate = true;              // backward: add into dweight (true) or overwrite it (false)
};
struct EmbeddingArgs {
  AnyTensorRef weight;   // [V, D]
  AnyTensorRef indices;  // [N]
  AnyTensorMut out;      // [N, D]
  int64_t* bad_index_count = nullptr;
};
struct EmbeddingBackwardArgs {
  AnyTensorRef dout;     // [N, D]
  AnyTensorRef indices;  // [N]
  AnyTensorMut dweight;  // [V, D], accumulated into
  int64_t* bad_index_count = nullptr;
};

namespace detail {
// What every indexing plan reduces to (see src/ops/indexing.cpp).
struct IndexedProblemDesc {
  bool scatter = false;  // gather (false) or scatter-add (true)
  DType dtype = DType::f32;
  DType index_dtype = DType::i64;
  Shape shape;        // the shape walked: out (gather) or the added values (scatter)
  Shape table_shape;  // src (gather) or dst (scatter)
  int dim = 0;
  bool broadcast_index = false;  // index is 1-D along dim (index_select, embedding)
  std::optional<int64_t> padding_idx;
  bool accumulate = true;  // scatter: add into the table, or overwrite it
};
enum class IndexVariant : unsigned char { copy, atomic, sorted };
}  // namespace detail

// One plan type for every indexing op; Op names the op's descriptor and args (below).
template <class Op>
class IndexPlan {
 public:
  using Descriptor = typename Op::Descriptor;
  using Args = typename Op::Args;
  static Expected<IndexPlan> select(const Stream& stream, const Descriptor& desc,
                                    const PlanPreference& preference = {});
  Status can_implement(const Args& args) const;
  size_t workspace_size() const { return workspace_; }
  KernelSku sku() const;
  KernelSku sku(const Args& args) const;
  PrecisionGuarantee precision_guarantee() const;
  Status run(const Stream& stream, Workspace workspace, const Args& args) const;
  const Descriptor& descriptor() const { return desc_; }

 private:
  Descriptor desc_;
  detail::IndexedProblemDesc problem_;
  detail::IndexVariant variant_ = detail::IndexVariant::copy;
  bool shared_rows_ = false;  // CUDA, along the innermost dim: each destination line summed in shared memory
  Backend backend_ = Backend::cpu;
  int arch_ = 0;
  int device_ = -1;
  size_t workspace_ = 0;
};

struct GatherOp {
  using Descriptor = GatherDescriptor;
  using Args = GatherArgs;
};
struct GatherBackwardOp {
  using Descriptor = GatherDescriptor;
  using Args = GatherBackwardArgs;
};
struct ScatterAddOp {
  using Descriptor = ScatterAddDescriptor;
  using Args = ScatterAddArgs;
};
struct IndexSelectOp {
  using Descriptor = IndexSelectDescriptor;
  using Args = IndexSelectArgs;
};
struct IndexSelectBackwardOp {
  using Descriptor = IndexSelectDescriptor;
  using Args = IndexSelectBackwardArgs;
};
struct EmbeddingOp {
  using Descriptor = EmbeddingDescriptor;
  using Args = EmbeddingArgs;
};
struct EmbeddingBackwardOp {
  using Descriptor = EmbeddingDescriptor;
  using Args = EmbeddingBackwardArgs;
};

using GatherPlan = IndexPlan<GatherOp>;
using GatherBackwardPlan = IndexPlan<GatherBackwardOp>;
using ScatterAddPlan = IndexPlan<ScatterAddOp>;
using IndexSelectPlan = IndexPlan<IndexSelectOp>;
using IndexSelectBackwardPlan = IndexPlan<IndexSelectBackwardOp>;
using EmbeddingPlan = IndexPlan<EmbeddingOp>;
using EmbeddingBackwardPlan = IndexPlan<EmbeddingBackwardOp>;

}  // namespace baracuda

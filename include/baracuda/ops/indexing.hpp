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
// `accumulate` is true (the default), and overwrite it (as if it were zeroed first) when it is
// false; forward plans ignore it. Their variants: "atomic" (CUDA only, the fast default; not
// deterministic) and "sorted" (every destination sums its contributions in one fixed order, in f32
// for 16-bit types: bit-identical across runs; chosen when determinism is required, and always on
// the CPU). precision_guarantee() says which ran and what it accumulates in.
#include <optional>

#include "baracuda/core/plan.hpp"

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

struct GatherOp : OpTag<GatherDescriptor, GatherArgs> {};
struct GatherBackwardOp : OpTag<GatherDescriptor, GatherBackwardArgs> {};
struct ScatterAddOp : OpTag<ScatterAddDescriptor, ScatterAddArgs> {};
struct IndexSelectOp : OpTag<IndexSelectDescriptor, IndexSelectArgs> {};
struct IndexSelectBackwardOp : OpTag<IndexSelectDescriptor, IndexSelectBackwardArgs> {};
struct EmbeddingOp : OpTag<EmbeddingDescriptor, EmbeddingArgs> {};
struct EmbeddingBackwardOp : OpTag<EmbeddingDescriptor, EmbeddingBackwardArgs> {};

using GatherPlan = Plan<GatherOp>;
using GatherBackwardPlan = Plan<GatherBackwardOp>;
using ScatterAddPlan = Plan<ScatterAddOp>;
using IndexSelectPlan = Plan<IndexSelectOp>;
using IndexSelectBackwardPlan = Plan<IndexSelectBackwardOp>;
using EmbeddingPlan = Plan<EmbeddingOp>;
using EmbeddingBackwardPlan = Plan<EmbeddingBackwardOp>;

}  // namespace baracuda

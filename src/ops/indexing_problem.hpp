#pragma once
// What the indexing plans hand to a backend: views resolved into the canonical problem (see
// src/common/indexing.hpp), the variant, and the workspace.
// NVRTC reads the layouts and the kinds (the CUDA kernels compiled at select); the rest is the host's.
#include "common/indexing.hpp"
#if !defined(__CUDACC_RTC__)
#include <optional>
#include <string_view>
#include <vector>

#include "baracuda/ops/indexing.hpp"
#include "common/checked.hpp"
#include "ops/launch.hpp"
#endif

namespace baracuda::detail {

enum class IndexVariant : unsigned char { copy, atomic, sorted };

// The CUDA scatter kernels a strategy may pick beside the general ones (atomic or sorted), for a
// walk whose innermost dim is dim with one index value per entry (see src/cuda/indexing/):
//  - shared_line: each destination line summed in shared memory (the line fits in it);
//  - short_lines: lines of at most 32 entries, each summed by a group of lanes in entry order, any
//    line length (also every entry alone on its line: an index of size 1 along dim);
//  - warp_lines: lines of at most 128 entries (adding in f32 / f64, sparse lines of up to 512), a few
//    a warp, each summed in the warp's shared memory in entry order, then written once (overwriting
//    lines of up to 2048 f32 sums, zeros included) or added slot by slot where reached (any length);
//  - column_tiles: element mode along a dim that is not the walk's innermost (gather's backward
//    along dim 0): a tile of adjacent columns by a slab of destination rows summed in shared memory;
//  - column_lines: the same problems with few entries a column on a tall table: each column's line
//    summed as warp_lines or shared_line add (the table zeroed first when overwritten).
enum class ScatterKernel : unsigned char { general, shared_line, short_lines, column_tiles, warp_lines, column_lines };

#if !defined(__CUDACC_RTC__)
// What every indexing plan reduces to (see src/ops/indexing.cpp).
struct IndexedProblemDesc {
  std::string_view plan;  // for errors: "GatherPlan"
  bool scatter = false;   // gather (false) or scatter-add (true)
  DType dtype = DType::f32;
  DType index_dtype = DType::i64;
  Shape shape;        // the shape walked: out (gather) or the added values (scatter)
  Shape table_shape;  // src (gather) or dst (scatter)
  int dim = 0;
  bool broadcast_index = false;  // index is 1-D along dim (index_select, embedding)
  std::optional<int64_t> padding_idx;
  bool accumulate = true;       // scatter: add into the table, or overwrite it
  std::string_view size_field;  // the descriptor field that sets the walk's size (errors name it)
};

// How a backend runs a scatter, decided at select.
struct ScatterStrategy {
  IndexVariant variant = IndexVariant::sorted;
  ScatterKernel kernel = ScatterKernel::general;
  CheckedSize workspace = 0;  // bytes; select refuses a problem whose workspace reaches kMaxBytes
};

struct IndexedProblem {
  IndexedProblemDesc desc;
  IndexVariant variant = IndexVariant::copy;
  bool vectorized_rows = false;                   // rows of whole 16-byte vectors, aligned (CUDA fast path)
  ScatterKernel kernel = ScatterKernel::general;  // CUDA scatter: see ScatterKernel
  IndexedLayout layout;
  void* values = nullptr;       // out (gather) or the added values (scatter)
  void* table = nullptr;        // src (gather) or dst (scatter)
  const void* index = nullptr;  // first element of the index view
  AnyTensorRef index_view;      // as given, for counting bad values
  AnyTensorRef table_view;      // as given, for zeroing it when overwriting
  int64_t* bad_index_count = nullptr;
  void* workspace = nullptr;
  size_t workspace_size = 0;
};

// Builds the layout from the views: values and index walk desc.shape, table has desc.table_shape.
// `index_strides` are already expanded to desc.shape (zero off dim for a 1-D index).
IndexedLayout make_indexed_layout(const IndexedProblemDesc& desc, const Strides& values_strides,
                                  const Strides& index_strides, const Strides& table_strides, int64_t table_extent);

// The walk reaches every line of the table along dim (so a shared-row kernel writes every table
// element and can overwrite without zeroing first).
bool covers_every_table_line(const IndexedProblemDesc& desc);

// R rows of L elements, from the shapes alone (see IndexedLayout).
void rows_and_length(const IndexedProblemDesc& p, int64_t& rows, int64_t& length);

// Each backend's scatter policy: the default variant (or the forced one), its kernel and workspace.
namespace cpu {
ScatterStrategy scatter_strategy(const IndexedProblemDesc& problem, std::optional<IndexVariant> forced,
                                 bool deterministic);
Status launch(const LaunchContext& ctx, const IndexedProblem& problem);
Status indexed_gather(const IndexedProblem& problem);
Status indexed_scatter_add(const IndexedProblem& problem);
}  // namespace cpu
namespace cuda {  // (the kernels are compiled at select)
ScatterStrategy scatter_strategy(const IndexedProblemDesc& problem, std::optional<IndexVariant> forced,
                                 bool deterministic);
Status launch(const LaunchContext& ctx, const IndexedProblem& problem);
// Compiles (or finds in the caches) the kernels the problem's plan runs, from what select knows (the
// descriptor, the variant and the scatter kernel): select's part.
Status prepare_indexing(const PlanTarget& target, const IndexedProblem& problem);
}  // namespace cuda
#endif

}  // namespace baracuda::detail

#if !defined(__CUDACC_RTC__)
namespace baracuda::detail::jit {
struct Program;
// Every indexing program: each strategy's kernels for each element type, index type and the
// constants select decides (cuda/indexing.cpp).
std::vector<Program> indexing_programs();
}  // namespace baracuda::detail::jit
#endif

#pragma once
// What the indexing plans hand to a backend: views resolved into the canonical problem (see
// src/common/indexing.hpp), the variant, and the workspace.
#include "baracuda/ops/indexing.hpp"
#include "common/indexing.hpp"

namespace baracuda::detail {

struct IndexedProblem {
  IndexedProblemDesc desc;
  IndexVariant variant = IndexVariant::copy;
  bool vectorized_rows = false;  // rows of whole 16-byte vectors, aligned (CUDA fast path)
  bool shared_rows = false;      // scatter along the innermost dim, each line summed in shared memory
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

// The deterministic scatter's scratch, laid out in one workspace (sizes in bytes).
struct SortedScatterWorkspace {
  size_t keys = 0, offsets = 0, partials = 0, sort_temp = 0;
  size_t total() const { return 2 * keys + 2 * offsets + partials + sort_temp; }
};
inline constexpr int64_t kRowsPerWindow = 32;      // rows mode: one block sums a window of rows
inline constexpr int64_t kElementsPerWindow = 32;  // element mode: one thread sums a window
// The sorted scatter's window for rows of `row_length` elements.
inline int64_t sorted_window(int64_t row_length) { return row_length > 1 ? kRowsPerWindow : kElementsPerWindow; }
inline constexpr int64_t kSharedRowBytes = 48 * 1024;  // the shared-memory row of shared_rows

// CUDA scatter whose walk has dim innermost with one index value per element (element mode, or a
// 1-D index with nothing after dim) and whose destination line fits in shared memory: each line is
// summed in shared memory. Decided from the shapes alone (strides do not move dim in the walk).
bool shared_rows(const IndexedProblemDesc& desc);
// The walk reaches every line of the table along dim (so a shared-row kernel writes every table
// element and can overwrite without zeroing first).
bool covers_every_table_line(const IndexedProblemDesc& desc);

namespace cpu {
Status indexed_gather(const IndexedProblem& problem);
Status indexed_scatter_add(const IndexedProblem& problem);
}  // namespace cpu
namespace cuda {
Status indexed_gather(const Stream& stream, const IndexedProblem& problem);
Status indexed_scatter_add(const Stream& stream, const IndexedProblem& problem);
// Bytes of scratch the sorted scatter needs for `rows` rows of `row_length` (device sort included).
SortedScatterWorkspace sorted_scatter_workspace(int64_t rows, int64_t row_length, DType dtype);
}  // namespace cuda

}  // namespace baracuda::detail

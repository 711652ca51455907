#pragma once
// Shared by the CPU and CUDA backends: how an indexed problem (gather or scatter-add along `dim`)
// maps a source row to its place in the table. The walked tensor ("values": out for a gather, the
// added values for a scatter) is cut into R rows of L elements:
//  - rows mode (index_select, embedding: the index is 1-D along dim): a row is one (prefix, j)
//    position over dims [0, dim], and its L elements are the dims after dim; the whole row shares
//    one index value;
//  - element mode (gather, scatter_add): every element is a row (L = 1) with its own index value.
// A row's destination in the table is its table offset with dim's coordinate replaced by the index
// value; that offset is also the sort key of the deterministic scatter (unique per destination row
// as long as the table does not overlap itself).
// The layouts are read by NVRTC too (the CUDA kernels compiled at select); the views are the host's.
#include "common/elementwise.hpp"

namespace baracuda::detail {

// Walker tensor order: values, index, table with its dim stride zeroed, and a marker (stride 1 at
// dim, 0 elsewhere) whose only job is to keep dim from being merged with its neighbours.
inline constexpr int kRowTensors = 4;
inline constexpr int kColumnTensors = 2;  // values, table
// "No padding index": the padding value is compared only with index values already in range, so
// an out-of-range one stands for none (and every index value outside [0, dim_size) counts as bad).
inline constexpr int64_t kNoPadding = -1;

struct IndexedLayout {
  Walker<kRowTensors> rows;        // over dims [0, dim] (rows mode) or every dim (element mode)
  Walker<kColumnTensors> columns;  // over dims after dim (rows mode); rank 0 in element mode
  int64_t row_count = 0;           // R
  int64_t row_length = 1;          // L
  int64_t dim_size = 0;            // the table's size along dim: valid index values are [0, dim_size)
  int64_t table_dim_stride = 0;
  int64_t padding = kNoPadding;  // the skipped index value (embedding's padding_idx)
  int64_t sentinel_key = 0;      // sorts after every valid key (the table's extent)

  // Row r's values offset, and its table offset when its index value is valid.
  template <class Idx>
  BARACUDA_HD bool locate(const Idx* index, int64_t r, int64_t& values_off, int64_t& table_off) const {
    int64_t off[kRowTensors];
    rows.offsets(r, off);
    values_off = off[0];
    return table_row(index[off[1]], off[2], table_off);
  }
  // The table offset of index value `value` for a row whose table offset off dim is `table_base`,
  // when the value is valid.
  template <class Idx>
  BARACUDA_HD bool table_row(Idx value, int64_t table_base, int64_t& table_off) const {
    const int64_t i = static_cast<int64_t>(value);
    // Range first: an index value of INT64_MAX must not reach the multiplication.
    const bool valid = i >= 0 && i < dim_size && i != padding;
    table_off = table_base + (valid ? i : 0) * table_dim_stride;
    return valid;
  }
  // Whether a row's elements are consecutive in the values and the table (one element, or unit
  // strides): then a row is one contiguous run on both sides.
  BARACUDA_HD bool unit_columns() const {
    return columns.rank == 0 || (columns.rank == 1 && columns.strides[0][0] == 1 && columns.strides[1][0] == 1);
  }
  // Offsets of element c within a row, in the values and the table.
  BARACUDA_HD void column(int64_t c, int64_t& values_step, int64_t& table_step) const {
    if (columns.rank == 0) {
      values_step = table_step = 0;
      return;
    }
    int64_t off[kColumnTensors];
    columns.offsets(c, off);
    values_step = off[0];
    table_step = off[1];
  }
};

// An element-mode walk seen as [lines, entries, columns] (both backends' column scatters): entries
// along dim (the marker tensor's only non-zero stride; 1 where dim left the walk), columns along the
// walk's innermost dim when that is not dim (else 1), lines over the other dims. Tensors: values,
// index, table.
struct EntryColumnWalk {
  Walker<3> lines;
  int64_t entries = 1;
  int64_t entry_stride[2] = {};  // values, index along dim
  int64_t columns = 1;
  int64_t column_stride[3] = {};  // values, index, table along the innermost dim
};
inline EntryColumnWalk entry_column_walk(const Walker<kRowTensors>& w) {
  EntryColumnWalk e;
  for (int d = 0; d < w.rank; ++d) {
    if (w.strides[kRowTensors - 1][d] != 0) {
      e.entries = w.sizes[d];
      for (int t = 0; t < 2; ++t) e.entry_stride[t] = w.strides[t][d];
    } else if (d == w.rank - 1) {
      e.columns = w.sizes[d];
      for (int t = 0; t < 3; ++t) e.column_stride[t] = w.strides[t][d];
    } else {
      e.lines.sizes[e.lines.rank] = w.sizes[d];
      for (int t = 0; t < 3; ++t) e.lines.strides[t][e.lines.rank] = w.strides[t][d];
      ++e.lines.rank;
    }
  }
  return e;
}

#if !defined(__CUDACC_RTC__)
// The index view's distinct elements, for counting bad values: a walker over its dims with non-zero
// strides, and how many times each element repeats along the zero-stride (broadcast) dims. So a
// broadcast index costs what it stores, not what it describes.
inline Walker<1> distinct_elements(const AnyTensorRef& index, int64_t& repeats) {
  bool stored[kMaxRank] = {};
  repeats = 1;
  for (int d = 0; d < index.rank(); ++d) {
    stored[d] = index.strides[d] != 0;
    if (!stored[d]) repeats *= index.shape.dims[d];  // a factor of numel: below kMaxElements
  }
  const Strides* strides[1] = {&index.strides};
  return make_walker<1>(index.shape, strides, stored);
}
#endif

// An index value to count as bad: outside [0, dim_size) (the padding value, when there is one, is
// inside it: skipped, not an error).
template <class Idx>
BARACUDA_HD bool bad_index(Idx value, int64_t dim_size) {
  const int64_t i = static_cast<int64_t>(value);
  return i < 0 || i >= dim_size;
}

}  // namespace baracuda::detail

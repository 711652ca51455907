#pragma once
// Naive double-precision references for the indexing family, on host views of any strides.
// Problems in canonical form: `shape` is walked (gather's out, scatter's values); the index has
// `shape` (or is 1-D along dim when broadcast); the table (gather's src, scatter's dst) has `shape`
// except along dim.
#include <cmath>
#include <cstdint>
#include <vector>

#include "harness/op_table.hpp"

namespace baracuda::reference {

inline void coords_of(const Shape& shape, int64_t linear, int64_t* coords) {
  for (int d = shape.rank - 1; d >= 0; --d) {
    coords[d] = linear % shape.dims[d];
    linear /= shape.dims[d];
  }
}

inline constexpr int64_t kNoPadding = INT64_MIN;

struct IndexedCase {
  Shape shape;
  int dim = 0;
  bool broadcast_index = false;
  int64_t padding = kNoPadding;
};

// Calls visit(linear, index value, coords with coords[dim] replaced by that value) for every element
// of c.shape whose index value is a valid row of a table `dim_size` long along dim, and returns how
// many index values were out of range (each 1-D index value counts once, used or not; the padding
// index is neither visited nor counted).
template <class Visit>
int64_t for_each_indexed(const IndexedCase& c, const harness::HostView& index, int64_t dim_size, Visit visit) {
  const int64_t n = c.shape.numel();
  int64_t coords[kMaxRank] = {}, bad = 0;
  if (n == 0 && c.broadcast_index) {  // an empty walk uses no index value, but each still counts
    for (int64_t j = 0; j < c.shape.dims[c.dim]; ++j) {
      const int64_t k = static_cast<int64_t>(index.at_offset(j * index.strides[0]));
      bad += k < 0 || k >= dim_size ? 1 : 0;
    }
    return bad;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) {  // next coordinates, row-major
      for (int d = c.shape.rank - 1; d >= 0 && ++coords[d] == c.shape.dims[d]; --d) coords[d] = 0;
    }
    bool first_use = true;
    if (c.broadcast_index)
      for (int d = 0; d < c.shape.rank; ++d) first_use = first_use && (d == c.dim || coords[d] == 0);
    const int64_t k = static_cast<int64_t>(c.broadcast_index ? index.at_offset(coords[c.dim] * index.strides[0])
                                                             : index.at_coords(coords));
    if (k < 0 || k >= dim_size) {
      bad += first_use ? 1 : 0;
      continue;
    }
    if (k == c.padding) continue;
    int64_t table_coords[kMaxRank];
    std::copy(coords, coords + c.shape.rank, table_coords);
    table_coords[c.dim] = k;
    visit(i, table_coords);
  }
  return bad;
}

inline int64_t row_major(const Shape& shape, const int64_t* coords) {
  int64_t t = 0;
  for (int d = 0; d < shape.rank; ++d) t = t * shape.dims[d] + coords[d];
  return t;
}

// gather: out[i] = table[coords with dim -> index]; a bad or padding index leaves a zero.
inline int64_t gather(const IndexedCase& c, const harness::HostView& index, const harness::HostView& table,
                      harness::RefOutput& out) {
  return for_each_indexed(c, index, table.shape.dims[c.dim], [&](int64_t i, const int64_t* table_coords) {
    if (out.wanted(i)) out.set(i, table.at_coords(table_coords));
  });
}

// scatter-add: table[coords with dim -> index] += values[i].
inline int64_t scatter_add(const IndexedCase& c, const harness::HostView& values, const harness::HostView& index,
                           const Shape& table_shape, harness::RefOutput& table) {
  return for_each_indexed(c, index, table_shape.dims[c.dim], [&](int64_t i, const int64_t* table_coords) {
    const int64_t t = row_major(table_shape, table_coords);
    if (table.wanted(t)) table.add(t, values.at(i));
  });
}

// The same on whole harness tensors: gather's every element, and scatter-add's expected table
// (row-major, from its current contents) with each element's sum of magnitudes, for tolerances.
inline std::vector<double> gather(const IndexedCase& c, const harness::Tensor& index, const harness::Tensor& table) {
  harness::RefOutput out(c.shape.numel(), c.shape.numel());
  gather(c, harness::HostView::of(index), harness::HostView::of(table), out);
  std::vector<double> values(static_cast<size_t>(c.shape.numel()));
  for (int64_t i = 0, numel = c.shape.numel(); i < numel; ++i) values[i] = out.value(i);
  return values;
}

inline void scatter_add(const IndexedCase& c, const harness::Tensor& values, const harness::Tensor& index,
                        const harness::Tensor& table_before, std::vector<double>& expected,
                        std::vector<double>& magnitude) {
  const int64_t n = table_before.shape.numel();
  harness::RefOutput table(n, n);
  table.start_from(harness::HostView::of(table_before));
  scatter_add(c, harness::HostView::of(values), harness::HostView::of(index), table_before.shape, table);
  expected.resize(static_cast<size_t>(n));
  magnitude.resize(expected.size());
  for (int64_t t = 0; t < n; ++t) {
    expected[t] = table.value(t);
    magnitude[t] = table.magnitude(t);
  }
}

}  // namespace baracuda::reference

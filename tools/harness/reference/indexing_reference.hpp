#pragma once
// Naive double-precision references for the indexing family, on harness tensors (any strides).
// Problems in canonical form: `shape` is walked (gather's out, scatter's values); the index has
// `shape` (or is 1-D along dim when broadcast); the table (gather's src, scatter's dst) has `shape`
// except along dim.
#include <cmath>
#include <cstdint>
#include <vector>

#include "harness/data.hpp"

namespace baracuda::reference {

inline void coords_of(const Shape& shape, int64_t linear, int64_t* coords) {
  for (int d = shape.rank - 1; d >= 0; --d) {
    coords[d] = linear % shape.dims[d];
    linear /= shape.dims[d];
  }
}

inline double at_coords(const harness::Tensor& t, const int64_t* coords) {
  int64_t off = 0;
  for (int d = 0; d < t.shape.rank; ++d) off += coords[d] * t.strides[d];
  return t.host[static_cast<size_t>(t.offset + off)];
}

inline constexpr int64_t kNoPadding = INT64_MIN;

struct IndexedCase {
  Shape shape;
  int dim = 0;
  bool broadcast_index = false;
  int64_t padding = kNoPadding;
};

// The index value that element `linear` of `shape` uses.
inline int64_t index_value(const IndexedCase& c, const harness::Tensor& index, int64_t linear) {
  int64_t coords[kMaxRank];
  coords_of(c.shape, linear, coords);
  if (c.broadcast_index) return static_cast<int64_t>(index.at(coords[c.dim]));
  return static_cast<int64_t>(at_coords(index, coords));
}

inline bool valid_index(const IndexedCase& c, const harness::Tensor& table, int64_t i) {
  return i >= 0 && i < table.shape.dims[c.dim] && i != c.padding;
}

// gather: out[linear] for every element of shape.
inline std::vector<double> gather(const IndexedCase& c, const harness::Tensor& index, const harness::Tensor& table) {
  std::vector<double> out(static_cast<size_t>(c.shape.numel()));
  for (int64_t i = 0; i < c.shape.numel(); ++i) {
    int64_t coords[kMaxRank];
    coords_of(c.shape, i, coords);
    const int64_t k = index_value(c, index, i);
    if (!valid_index(c, table, k)) continue;
    coords[c.dim] = k;
    out[i] = at_coords(table, coords);
  }
  return out;
}

// scatter-add: the table's expected values (row-major over its shape) and, for tolerances, the sum
// of the magnitudes of what went into each element.
inline void scatter_add(const IndexedCase& c, const harness::Tensor& values, const harness::Tensor& index,
                        const harness::Tensor& table_before, std::vector<double>& expected,
                        std::vector<double>& magnitude) {
  const Shape& ts = table_before.shape;
  expected.assign(static_cast<size_t>(ts.numel()), 0.0);
  magnitude.assign(expected.size(), 0.0);
  for (int64_t t = 0; t < ts.numel(); ++t) {
    int64_t coords[kMaxRank];
    coords_of(ts, t, coords);
    expected[t] = at_coords(table_before, coords);
    magnitude[t] = std::fabs(expected[t]);
  }
  for (int64_t i = 0; i < c.shape.numel(); ++i) {
    const int64_t k = index_value(c, index, i);
    if (!valid_index(c, table_before, k)) continue;
    int64_t coords[kMaxRank];
    coords_of(c.shape, i, coords);
    const double v = values.at(i);
    coords[c.dim] = k;
    int64_t t = 0;
    for (int d = 0; d < ts.rank; ++d) t = t * ts.dims[d] + coords[d];
    expected[t] += v;
    magnitude[t] += std::fabs(v);
  }
}

}  // namespace baracuda::reference

#pragma once
// Naive double-precision references for the segment family (include/baracuda/ops/segment.hpp), on
// host views of any strides: each row's segment and the bad-index count, then each output element
// from the rows of its segment in row order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "harness/op_table.hpp"

namespace baracuda::reference {

enum class SegmentKind { sum, mean, max, min };

struct SegmentCase {
  int64_t rows = 0, segments = 0, length = 1;  // N, S, D
  std::vector<int64_t> segment_of;             // per row, or -1
  int64_t bad = 0;
};

inline SegmentCase segment_case(const SegmentDescriptor& d, const harness::RefIO& io) {
  SegmentCase c;
  c.rows = d.data_shape.dims[0];
  c.segments = d.num_segments;
  for (int k = 1; k < d.data_shape.rank; ++k) c.length *= d.data_shape.dims[k];
  c.segment_of.assign(static_cast<size_t>(c.rows), -1);
  if (d.form != SegmentForm::offsets) {
    const harness::HostView& ids = io.in("segment_ids");
    for (int64_t i = 0; i < c.rows; ++i) {
      const auto v = static_cast<int64_t>(ids.at(i));
      const bool valid = v >= 0 && v < c.segments;
      c.bad += valid ? 0 : 1;
      if (d.form == SegmentForm::sorted_ids && i > 0 && v < static_cast<int64_t>(ids.at(i - 1))) ++c.bad;
      if (valid) c.segment_of[static_cast<size_t>(i)] = v;
    }
    return c;
  }
  const harness::HostView& offsets = io.in("offsets");
  std::vector<int64_t> raw(static_cast<size_t>(c.segments + 1));
  for (int64_t k = 0; k <= c.segments; ++k) {
    raw[static_cast<size_t>(k)] = static_cast<int64_t>(offsets.at(k));
    c.bad += raw[static_cast<size_t>(k)] < 0 || raw[static_cast<size_t>(k)] > c.rows ? 1 : 0;
  }
  for (int64_t s = 0; s < c.segments; ++s) {
    const int64_t lo = raw[static_cast<size_t>(s)], hi = raw[static_cast<size_t>(s + 1)];
    if (hi < lo) {
      ++c.bad;
      continue;
    }
    for (int64_t i = std::clamp<int64_t>(lo, 0, c.rows); i < std::clamp<int64_t>(hi, 0, c.rows); ++i)
      c.segment_of[static_cast<size_t>(i)] = s;
  }
  return c;
}

// An empty segment's value in `dtype`.
inline double segment_empty_value(SegmentKind kind, const SegmentDescriptor& d) {
  if (d.initial) return *d.initial;
  const bool i32 = d.dtype == DType::i32, integer = !is_floating(d.dtype);
  const double inf = std::numeric_limits<double>::infinity();
  if (kind == SegmentKind::max) return integer ? (i32 ? -2147483648.0 : -9223372036854775808.0) : -inf;
  if (kind == SegmentKind::min) return integer ? (i32 ? 2147483647.0 : 9223372036854775807.0) : inf;
  return 0.0;
}

inline void segment_forward(SegmentKind kind, const SegmentDescriptor& d, harness::RefIO& io) {
  const SegmentCase c = segment_case(d, io);
  io.bad_index_count = c.bad;
  const harness::HostView& data = io.in("data");
  harness::RefOutput& out = io.out("out");
  const bool indexed = kind == SegmentKind::max || kind == SegmentKind::min;
  harness::RefOutput* indices = indexed && io.specs[io.index_of("indices")].present ? &io.out("indices") : nullptr;
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(c.segments));
  for (int64_t i = 0; i < c.rows; ++i)
    if (c.segment_of[static_cast<size_t>(i)] >= 0) members[static_cast<size_t>(c.segment_of[i])].push_back(i);
  for (int64_t s = 0; s < c.segments; ++s) {
    const std::vector<int64_t>& rows = members[static_cast<size_t>(s)];
    for (int64_t j = 0; j < c.length; ++j) {
      const int64_t o = s * c.length + j;
      if (rows.empty()) {
        if (out.wanted(o)) out.set(o, segment_empty_value(kind, d));
        if (indices && indices->wanted(o)) indices->set(o, -1);
        continue;
      }
      if (!indexed) {
        if (!out.wanted(o)) continue;
        for (int64_t i : rows) out.add(o, data.at(i * c.length + j) / (kind == SegmentKind::mean ? rows.size() : 1.0));
        continue;
      }
      double best = data.at(rows[0] * c.length + j);
      int64_t at = rows[0];
      for (int64_t i : rows) {
        const double v = data.at(i * c.length + j);
        if (std::isnan(best)) break;
        if (std::isnan(v) || (kind == SegmentKind::max ? v > best : v < best)) best = v, at = i;
      }
      if (out.wanted(o)) out.set(o, best);
      if (indices && indices->wanted(o)) indices->set(o, static_cast<double>(at));
    }
  }
}

inline void segment_backward(SegmentKind kind, const SegmentDescriptor& d, harness::RefIO& io) {
  const SegmentCase c = segment_case(d, io);
  io.bad_index_count = c.bad;
  const harness::HostView& dout = io.in("dout");
  harness::RefOutput& ddata = io.out("ddata");
  std::vector<int64_t> counts(static_cast<size_t>(c.segments), 0);
  for (int64_t s : c.segment_of)
    if (s >= 0) ++counts[static_cast<size_t>(s)];
  const bool indexed = kind == SegmentKind::max || kind == SegmentKind::min;
  for (int64_t i = 0; i < c.rows; ++i) {
    const int64_t s = c.segment_of[static_cast<size_t>(i)];
    for (int64_t j = 0; j < c.length; ++j) {
      const int64_t o = i * c.length + j;
      if (!ddata.wanted(o)) continue;
      double g = 0;
      if (s >= 0) {
        g = dout.at(s * c.length + j);
        if (kind == SegmentKind::mean) g /= static_cast<double>(counts[static_cast<size_t>(s)]);
        if (indexed && static_cast<int64_t>(io.in("indices").at(s * c.length + j)) != i) g = 0;
      }
      ddata.set(o, g);
    }
  }
}

}  // namespace baracuda::reference

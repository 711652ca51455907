// CPU kernels of the indexing family. Gather: rows in parallel. Scatter-add: (key, position) pairs
// sorted in the workspace, then each destination summed in the original order by one thread, in
// the accumulator type: deterministic and free of races for any number of threads.
#include <omp.h>

#include <algorithm>

#include "common/dispatch.hpp"
#include "cpu/parallel.hpp"
#include "ops/indexing_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

constexpr int64_t kColumnChunk = 256;

template <class Idx>
void count_bad_indices(const IndexedProblem& p) {
  if (!p.bad_index_count) return;
  const AnyTensorRef& v = p.index_view;
  const Idx* index = static_cast<const Idx*>(v.data);
  int64_t repeats = 1;
  const Walker<1> walker = distinct_elements(v, repeats);
  int64_t bad = 0;
  const int64_t n = v.numel() == 0 ? 0 : walker.numel();
#pragma omp parallel for reduction(+ : bad) if (n > kParallelThreshold)
  for (int64_t i = 0; i < n; ++i) {
    int64_t off[1];
    walker.offsets(i, off);
    bad += bad_index(index[off[0]], p.layout.dim_size) ? 1 : 0;
  }
  *p.bad_index_count += bad * repeats;
}

// Copies are done on the element's bits: one kernel per element size.
template <class Bits, class Idx>
Status gather(const IndexedProblem& p) {
  const IndexedLayout& layout = p.layout;
  Bits* values = static_cast<Bits*>(p.values);
  const Bits* table = static_cast<const Bits*>(p.table);
  const Idx* index = static_cast<const Idx*>(p.index);
  const int64_t length = layout.row_length;
  const int64_t chunks_per_row = (length + kColumnChunk - 1) / kColumnChunk;
  const int64_t chunks = layout.row_count * chunks_per_row;
#pragma omp parallel for schedule(static) if (layout.row_count * length > kParallelThreshold)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t values_off, table_off;
    const bool valid = layout.locate(index, c / chunks_per_row, values_off, table_off);
    const int64_t begin = (c % chunks_per_row) * kColumnChunk, end = std::min(length, begin + kColumnChunk);
    for (int64_t i = begin; i < end; ++i) {
      int64_t dv, dt;
      layout.column(i, dv, dt);
      values[values_off + dv] = valid ? table[table_off + dt] : Bits{0};
    }
  }
  count_bad_indices<Idx>(p);
  return Status::ok();
}

// Zeroes every element of a (strided) view: an overwriting scatter's table before its sums.
template <class Bits>
void zero_view(const AnyTensorRef& view) {
  Bits* data = static_cast<Bits*>(const_cast<void*>(view.data));
  const Strides* strides[1] = {&view.strides};
  const Walker<1> walker = make_walker<1>(view.shape, strides);
  const int64_t n = view.numel();
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (int64_t i = 0; i < n; ++i) {
    int64_t off[1];
    walker.offsets(i, off);
    data[off[0]] = Bits{0};
  }
}

struct KeyPosition {
  int64_t key;
  int64_t position;
};

template <class T, class Idx>
Status scatter_add(const IndexedProblem& p) {
  using Acc = acc_t<T>;
  const IndexedLayout& layout = p.layout;
  const T* values = static_cast<const T*>(p.values);
  T* table = static_cast<T*>(p.table);
  const Idx* index = static_cast<const Idx*>(p.index);
  const int64_t rows = layout.row_count, length = layout.row_length;
  if (!p.desc.accumulate) zero_view<T>(p.table_view);
  if (rows == 0 || p.desc.shape.numel() == 0) {  // nothing to add; the index values still count
    count_bad_indices<Idx>(p);
    return Status::ok();
  }
  KeyPosition* pairs = static_cast<KeyPosition*>(p.workspace);
#pragma omp parallel for schedule(static) if (rows > kParallelThreshold)
  for (int64_t r = 0; r < rows; ++r) pairs[r] = {layout.key(index, r), r};
  // Ordering by (key, position) makes the sort stable without a stable sort's allocation.
  std::sort(pairs, pairs + rows, [](const KeyPosition& a, const KeyPosition& b) {
    return a.key < b.key || (a.key == b.key && a.position < b.position);
  });
  // Blocks of sorted positions in parallel; a destination belongs to the block where it starts.
  const int64_t block = std::max<int64_t>(16, rows / (8 * omp_get_max_threads()));
  const int64_t blocks = (rows + block - 1) / block;
#pragma omp parallel for schedule(dynamic) if (rows * length > kParallelThreshold)
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t s = b * block;
    const int64_t e = std::min(rows, s + block);
    if (s > 0)
      while (s < e && pairs[s].key == pairs[s - 1].key) ++s;
    while (s < e && pairs[s].key != layout.sentinel_key) {
      const int64_t key = pairs[s].key;
      int64_t t = s + 1;
      while (t < rows && pairs[t].key == key) ++t;
      for (int64_t c0 = 0; c0 < length; c0 += kColumnChunk) {
        const int64_t c1 = std::min(length, c0 + kColumnChunk);
        Acc sum[kColumnChunk] = {};
        for (int64_t i = s; i < t; ++i) {
          int64_t values_off, table_off;
          layout.locate(index, pairs[i].position, values_off, table_off);
          for (int64_t c = c0; c < c1; ++c) {
            int64_t dv, dt;
            layout.column(c, dv, dt);
            sum[c - c0] += static_cast<Acc>(values[values_off + dv]);
          }
        }
        for (int64_t c = c0; c < c1; ++c) {
          int64_t dv, dt;
          layout.column(c, dv, dt);
          T& out = table[key + dt];
          out = static_cast<T>(static_cast<Acc>(out) + sum[c - c0]);
        }
      }
      s = t;
    }
  }
  count_bad_indices<Idx>(p);
  return Status::ok();
}

}  // namespace

Status indexed_gather(const IndexedProblem& p) {
  return dispatch_index(p.desc.index_dtype, [&](auto index_tag) {
    using Idx = typename decltype(index_tag)::type;
    switch (dtype_size(p.desc.dtype)) {
      case 2:
        return gather<uint16_t, Idx>(p);
      case 4:
        return gather<uint32_t, Idx>(p);
      default:
        return gather<uint64_t, Idx>(p);
    }
  });
}

Status indexed_scatter_add(const IndexedProblem& p) {
  return dispatch_index(p.desc.index_dtype, [&](auto index_tag) {
    using Idx = typename decltype(index_tag)::type;
    return dispatch_float<half, bfloat16>(p.desc.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return scatter_add<T, Idx>(p);
    });
  });
}

}  // namespace baracuda::detail::cpu

namespace baracuda::detail::cpu {

// The CPU scatter is always sorted: (key, position) pairs sorted in place in the workspace.
ScatterStrategy scatter_strategy(const IndexedProblemDesc& problem, std::optional<IndexVariant>, bool) {
  int64_t rows = 0, length = 0;
  rows_and_length(problem, rows, length);
  const CheckedSize bytes =
      problem.shape.numel() == 0 ? CheckedSize(0) : CheckedSize(rows) * static_cast<int64_t>(sizeof(KeyPosition));
  return {IndexVariant::sorted, false, bytes};
}

Status launch(const LaunchContext&, const IndexedProblem& problem) {
  return problem.desc.scatter ? indexed_scatter_add(problem) : indexed_gather(problem);
}

}  // namespace baracuda::detail::cpu

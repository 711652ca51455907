// Gather: rows in parallel, `lanes` threads per row (a power of two up to a block, fitted to the
// row's length), 16-byte vectors when rows allow; invalid index values write zeros.
#include "cuda/common/check.cuh"
#include "cuda/common/row_walk.cuh"
#include "cuda/common/vector.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {
namespace {

// Vectors per thread per step of the row gather, all loaded before any is stored (8 measured best:
// 2 -> 84.5%, 4 -> 87.3%, 8 -> 87.7% of copy for bf16 embedding rows; bench/NOTES.md).
inline constexpr int kRowVectors = 8;

template <class Bits, class Idx>
__global__ void __launch_bounds__(kThreads)
    gather_vectorized_kernel(IndexedLayout layout, Bits* values, const Bits* table, const Idx* index, int lanes) {
  constexpr int kV = Vec16<Bits>::kSize;
  const int64_t vectors = layout.row_length / kV;
  for_each_row(layout.row_count, lanes, [&](int64_t r, int lane) {
    int64_t values_off, table_off;
    const bool valid = layout.locate(index, r, values_off, table_off);
    for (int64_t v0 = lane; v0 < vectors; v0 += int64_t(kRowVectors) * lanes) {
      Vec16<Bits> x[kRowVectors];
#pragma unroll
      for (int k = 0; k < kRowVectors; ++k) {
        const int64_t v = v0 + k * int64_t(lanes);
#pragma unroll
        for (int e = 0; e < kV; ++e) x[k].v[e] = Bits{0};
        if (valid && v < vectors) x[k] = load16(table + table_off + v * kV);
      }
#pragma unroll
      for (int k = 0; k < kRowVectors; ++k) {
        const int64_t v = v0 + k * int64_t(lanes);
        if (v < vectors) store16(values + values_off + v * kV, x[k]);
      }
    }
  });
}

template <class Bits, class Idx>
__global__ void __launch_bounds__(kThreads)
    gather_kernel(IndexedLayout layout, Bits* values, const Bits* table, const Idx* index, int lanes) {
  for_each_row(layout.row_count, lanes, [&](int64_t r, int lane) {
    int64_t values_off, table_off;
    const bool valid = layout.locate(index, r, values_off, table_off);
    for (int64_t c = lane; c < layout.row_length; c += lanes) {
      int64_t dv, dt;
      layout.column(c, dv, dt);
      values[values_off + dv] = valid ? table[table_off + dt] : Bits{0};
    }
  });
}

template <class Bits, class Idx>
__global__ void __launch_bounds__(kThreads)
    gather_elements_kernel(IndexedLayout layout, Bits* values, const Bits* table, const Idx* index, int lanes) {
  for_each_element_batch(layout, index, lanes,
                         [&](const ElementOffsets& values_off, const ElementOffsets& table_off,
                             const ElementFlags& valid, const ElementFlags& inside) {
                           Bits x[kElementBatch];
#pragma unroll
                           for (int u = 0; u < kElementBatch; ++u) x[u] = valid[u] ? table[table_off[u]] : Bits{0};
#pragma unroll
                           for (int u = 0; u < kElementBatch; ++u)
                             if (inside[u]) values[values_off[u]] = x[u];
                         });
}

}  // namespace

template <class Bits, class Idx>
Status gather(const Stream& stream, const IndexedProblem& p, int sm_count) {
  const IndexedLayout& layout = p.layout;
  Bits* values = static_cast<Bits*>(p.values);
  const Bits* table = static_cast<const Bits*>(p.table);
  const Idx* index = static_cast<const Idx*>(p.index);
  if (p.vectorized_rows) {
    const int64_t vectors = layout.row_length / Vec16<Bits>::kSize;
    const int lanes = lanes_for((vectors + kRowVectors - 1) / kRowVectors);
    gather_vectorized_kernel<Bits, Idx><<<row_blocks(layout.row_count, lanes, sm_count), kThreads, 0, native(stream)>>>(
        layout, values, table, index, lanes);
    return last_launch_status("gather_vectorized_kernel");
  }
  if (layout.columns.rank == 0 && layout.rows.rank > 0) {
    const int64_t inner = layout.rows.inner_size();
    const int lanes = lanes_for((inner + kElementBatch - 1) / kElementBatch);
    gather_elements_kernel<Bits, Idx>
        <<<row_blocks(layout.row_count / inner, lanes, sm_count), kThreads, 0, native(stream)>>>(layout, values, table,
                                                                                                 index, lanes);
    return last_launch_status("gather_elements_kernel");
  }
  const int lanes = lanes_for(layout.row_length);
  gather_kernel<Bits, Idx><<<row_blocks(layout.row_count, lanes, sm_count), kThreads, 0, native(stream)>>>(
      layout, values, table, index, lanes);
  return last_launch_status("gather_kernel");
}

#define BARACUDA_INSTANTIATE(Bits, Idx) template Status gather<Bits, Idx>(const Stream&, const IndexedProblem&, int);
BARACUDA_GATHER_TYPES(BARACUDA_INSTANTIATE)
#undef BARACUDA_INSTANTIATE

}  // namespace baracuda::detail::cuda

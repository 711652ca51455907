#pragma once
// Gather: rows in parallel, `lanes` threads per row (a power of two up to a block, fitted to the
// row's length), 16-byte vectors when rows allow; invalid index values write zeros. Compiled at
// select (NVRTC; cuda/indexing.cpp launches them), one program an element size and index type.
#include "cuda/common/row_walk.cuh"
#include "cuda/common/vector.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {

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

}  // namespace baracuda::detail::cuda

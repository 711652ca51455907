// Scatter-add with atomics: the walk of the gather (rows, or elements in batches), each value added
// into its destination with an atomic; f32 rows of whole 4-vectors use one vector reduction per 16
// bytes. The order of the additions varies from run to run.
#include <type_traits>

#include "cuda/common/check.cuh"
#include "cuda/common/row_walk.cuh"
#include "cuda/common/scatter_ops.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {
namespace {

template <class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    scatter_atomic_kernel(IndexedLayout layout, const T* values, T* table, const Idx* index, int lanes) {
  using Acc = acc_t<T>;
  for_each_row(layout.row_count, lanes, [&](int64_t r, int lane) {
    int64_t values_off, table_off;
    if (!layout.locate(index, r, values_off, table_off)) return;
    for (int64_t c = lane; c < layout.row_length; c += lanes) {
      int64_t dv, dt;
      layout.column(c, dv, dt);
      ScatterSum::atomic_combine(table + table_off + dt, static_cast<Acc>(values[values_off + dv]));
    }
  });
}

template <class T, class Idx>
__global__ void __launch_bounds__(kThreads)
    scatter_atomic_elements_kernel(IndexedLayout layout, const T* values, T* table, const Idx* index, int lanes) {
  using Acc = acc_t<T>;
  for_each_element_batch(layout, index, lanes,
                         [&](const ElementOffsets& values_off, const ElementOffsets& table_off,
                             const ElementFlags& valid, const ElementFlags&) {
                           Acc x[kElementBatch];
#pragma unroll
                           for (int u = 0; u < kElementBatch; ++u)
                             x[u] = valid[u] ? static_cast<Acc>(values[values_off[u]]) : Acc(0);
#pragma unroll
                           for (int u = 0; u < kElementBatch; ++u)
                             if (valid[u]) ScatterSum::atomic_combine(table + table_off[u], x[u]);
                         });
}

// f32 rows of whole 4-vectors: one vector reduction per 16 bytes (ScatterSum::atomic_combine4).
template <class Idx>
__global__ void __launch_bounds__(kThreads)
    scatter_atomic_v4_kernel(IndexedLayout layout, const float* values, float* table, const Idx* index, int lanes) {
  const int64_t vectors = layout.row_length / 4;
  for_each_row(layout.row_count, lanes, [&](int64_t r, int lane) {
    int64_t values_off, table_off;
    if (!layout.locate(index, r, values_off, table_off)) return;
    for (int64_t v = lane; v < vectors; v += lanes) {
      const float4 x = *reinterpret_cast<const float4*>(values + values_off + v * 4);
      ScatterSum::atomic_combine4(table + table_off + v * 4, x);
    }
  });
}

}  // namespace

template <class T, class Idx>
Status scatter_atomic(const Stream& stream, const IndexedProblem& p, int sm_count) {
  const IndexedLayout& layout = p.layout;
  const T* values = static_cast<const T*>(p.values);
  T* table = static_cast<T*>(p.table);
  const Idx* index = static_cast<const Idx*>(p.index);
  cudaStream_t s = native(stream);
  if constexpr (std::is_same_v<T, float>) {
    if (p.vectorized_rows) {
      const int lanes = lanes_for(layout.row_length / 4);
      scatter_atomic_v4_kernel<Idx>
          <<<row_blocks(layout.row_count, lanes, sm_count), kThreads, 0, s>>>(layout, values, table, index, lanes);
      return last_launch_status("scatter_atomic_v4_kernel");
    }
  }
  if (layout.columns.rank == 0 && layout.rows.rank > 0) {
    const int64_t inner = layout.rows.inner_size();
    const int lanes = lanes_for((inner + kElementBatch - 1) / kElementBatch);
    scatter_atomic_elements_kernel<T, Idx><<<row_blocks(layout.row_count / inner, lanes, sm_count), kThreads, 0, s>>>(
        layout, values, table, index, lanes);
    return last_launch_status("scatter_atomic_elements_kernel");
  }
  const int lanes = lanes_for(layout.row_length);
  scatter_atomic_kernel<T, Idx>
      <<<row_blocks(layout.row_count, lanes, sm_count), kThreads, 0, s>>>(layout, values, table, index, lanes);
  return last_launch_status("scatter_atomic_kernel");
}

#define BARACUDA_INSTANTIATE(T, Idx) template Status scatter_atomic<T, Idx>(const Stream&, const IndexedProblem&, int);
BARACUDA_SCATTER_TYPES(BARACUDA_INSTANTIATE)
#undef BARACUDA_INSTANTIATE

}  // namespace baracuda::detail::cuda

#pragma once
// Scatter-add with atomics: the walk of the gather (rows, or elements in batches), the values added
// into their destinations with atomics; f32 rows of whole 4-vectors use one vector reduction per 16
// bytes. A thread group takes a span of kSpan consecutive rows (or a batch of elements) at once:
// their loads are in flight together, and a run of equal destinations among them (a repeated token,
// padding-free batches of one token) is summed in registers first, one atomic per run: a table row
// every row adds into is contended kSpan times less. Where spans would leave the device short of
// groups, a row a group, long rows cut into pieces (spans_pay, pieces_of). The order of the additions
// varies from run to run.
// Compiled at select (NVRTC; cuda/indexing/scatter_general.cpp launches them), one program an element
// type and index type.
#include "cuda/common/row_walk.cuh"
#include "cuda/common/scatter_ops.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {

__device__ __forceinline__ float4 operator+(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// Adds x[j] into its destination off[j] for each valid j, one add(off, sum) per run of equal
// consecutive destinations (an invalid entry ends a run).
template <int kN, class Acc, class Add>
__device__ __forceinline__ void add_runs(const int64_t (&off)[kN], const bool (&valid)[kN], const Acc (&x)[kN],
                                         Add&& add) {
  Acc sum = x[0];
#pragma unroll
  for (int j = 0; j < kN; ++j) {
    if (!valid[j]) continue;
    sum = j > 0 && valid[j - 1] && off[j - 1] == off[j] ? sum + x[j] : x[j];
    if (j + 1 == kN || !valid[j + 1] || off[j + 1] != off[j]) add(off[j], sum);
  }
}

// The walk's rows kRows (1 or kSpan) at a time, each span's units (columns or vectors) cut into
// `pieces` parts: f(values_off, table_off, valid, first, end, lane) for each span and part [first,
// end) of `units`, the span's rows located together (valid: the row exists and its index value is in
// range, not padding).
template <int kRows, class Idx, class F>
__device__ __forceinline__ void for_each_span(const IndexedLayout& layout, const Idx* index, int64_t units,
                                              int64_t pieces, int lanes, F&& f) {
  const int64_t rows = layout.row_count, per_piece = (units + pieces - 1) / pieces;
  for_each_row((rows + kRows - 1) / kRows * pieces, lanes, [&](int64_t item, int lane) {
    const int64_t s = item / pieces, first = (item - s * pieces) * per_piece;
    int64_t values_off[kRows] = {}, table_off[kRows] = {};
    bool valid[kRows];
#pragma unroll
    for (int j = 0; j < kRows; ++j)
      valid[j] = s * kRows + j < rows && layout.locate(index, s * kRows + j, values_off[j], table_off[j]);
    f(values_off, table_off, valid, first, min(units, first + per_piece), lane);
  });
}

template <int kRows, class T, class Idx>
__global__ void __launch_bounds__(kThreads) scatter_atomic_kernel(IndexedLayout layout, const T* values, T* table,
                                                                  const Idx* index, int64_t pieces, int lanes) {
  using Acc = acc_t<T>;
  for_each_span<kRows>(layout, index, layout.row_length, pieces, lanes,
                       [&](const int64_t(&values_off)[kRows], const int64_t(&table_off)[kRows],
                           const bool(&valid)[kRows], int64_t first, int64_t end, int lane) {
                         for (int64_t c = first + lane; c < end; c += lanes) {
                           int64_t dv, dt;
                           layout.column(c, dv, dt);
                           Acc x[kRows];
#pragma unroll
                           for (int j = 0; j < kRows; ++j)
                             x[j] = valid[j] ? static_cast<Acc>(values[values_off[j] + dv]) : Acc(0);
                           add_runs(table_off, valid, x,
                                    [&](int64_t off, Acc sum) { ScatterSum::atomic_combine(table + off + dt, sum); });
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
                           add_runs(table_off, valid, x,
                                    [&](int64_t off, Acc sum) { ScatterSum::atomic_combine(table + off, sum); });
                         });
}

// f32 rows of whole 4-vectors: one vector reduction per 16 bytes (ScatterSum::atomic_combine4).
template <int kRows, class Idx>
__global__ void __launch_bounds__(kThreads)
    scatter_atomic_v4_kernel(IndexedLayout layout, const float* values, float* table, const Idx* index, int64_t pieces,
                             int lanes) {
  const int64_t vectors = layout.row_length / 4;
  for_each_span<kRows>(
      layout, index, vectors, pieces, lanes,
      [&](const int64_t(&values_off)[kRows], const int64_t(&table_off)[kRows], const bool(&valid)[kRows], int64_t first,
          int64_t end, int lane) {
        for (int64_t v = first + lane; v < end; v += lanes) {
          float4 x[kRows];
#pragma unroll
          for (int j = 0; j < kRows; ++j)
            x[j] = valid[j] ? *reinterpret_cast<const float4*>(values + values_off[j] + v * 4) : float4{};
          add_runs(table_off, valid, x,
                   [&](int64_t off, float4 sum) { ScatterSum::atomic_combine4(table + off + v * 4, sum); });
        }
      });
}

}  // namespace baracuda::detail::cuda

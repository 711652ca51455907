// Scatter-add with atomics: the walk of the gather (rows, or elements in batches), the values added
// into their destinations with atomics; f32 rows of whole 4-vectors use one vector reduction per 16
// bytes. A thread group takes a span of kSpan consecutive rows (or a batch of elements) at once:
// their loads are in flight together, and a run of equal destinations among them (a repeated token,
// padding-free batches of one token) is summed in registers first, one atomic per run: a table row
// every row adds into is contended kSpan times less. Where spans would leave the device short of
// groups, a row a group, long rows cut into pieces (spans_pay, pieces_of). The order of the additions
// varies from run to run.
#include <algorithm>
#include <type_traits>

#include "common/checked.hpp"
#include "cuda/common/check.cuh"
#include "cuda/common/row_walk.cuh"
#include "cuda/common/scatter_ops.cuh"
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {
namespace {

inline constexpr int kSpan = 8;

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

// Spans of kSpan rows while they give the device 4 groups an SM (each group a block where rows are
// long: 8192 rows of 768 measured even with a row a group, bench/NOTES.md); else a row a group, as
// many groups as rows, the kernels' one-row instantiation, and rows of more than a block's units cut
// into pieces of at least a block's, up to 4 groups an SM (16 rows of 262144 f32 were 16 blocks on
// 132 SMs: 0.88x PyTorch).
inline bool spans_pay(int64_t rows, int sm_count) { return rows >= int64_t(kSpan) * 4 * sm_count; }
inline int64_t pieces_of(int64_t rows, int64_t units, int sm_count) {
  if (spans_pay(rows, sm_count) || rows == 0) return 1;
  return std::max<int64_t>(1, std::min((int64_t(4) * sm_count + rows - 1) / rows, units / kThreads));
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

}  // namespace

template <class T, class Idx>
Status scatter_atomic(const Stream& stream, const IndexedProblem& p, int sm_count) {
  const IndexedLayout& layout = p.layout;
  const T* values = static_cast<const T*>(p.values);
  T* table = static_cast<T*>(p.table);
  const Idx* index = static_cast<const Idx*>(p.index);
  cudaStream_t s = native(stream);
  const bool spans = spans_pay(layout.row_count, sm_count);
  if constexpr (std::is_same_v<T, float>) {
    if (p.vectorized_rows) {
      const int64_t vectors = layout.row_length / 4, pieces = pieces_of(layout.row_count, vectors, sm_count);
      const int lanes = lanes_for(vectors);
      const auto kernel = spans ? scatter_atomic_v4_kernel<kSpan, Idx> : scatter_atomic_v4_kernel<1, Idx>;
      kernel<<<row_blocks(ceil_div(layout.row_count, int64_t{spans ? kSpan : 1}) * pieces, lanes, sm_count), kThreads,
               0, s>>>(layout, values, table, index, pieces, lanes);
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
  const int64_t pieces = pieces_of(layout.row_count, layout.row_length, sm_count);
  const int lanes = lanes_for(layout.row_length);
  const auto kernel = spans ? scatter_atomic_kernel<kSpan, T, Idx> : scatter_atomic_kernel<1, T, Idx>;
  kernel<<<row_blocks(ceil_div(layout.row_count, int64_t{spans ? kSpan : 1}) * pieces, lanes, sm_count), kThreads, 0,
           s>>>(layout, values, table, index, pieces, lanes);
  return last_launch_status("scatter_atomic_kernel");
}

#define BARACUDA_INSTANTIATE(T, Idx) template Status scatter_atomic<T, Idx>(const Stream&, const IndexedProblem&, int);
BARACUDA_SCATTER_TYPES(BARACUDA_INSTANTIATE)
#undef BARACUDA_INSTANTIATE

}  // namespace baracuda::detail::cuda

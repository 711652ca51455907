// CUDA entry of the indexing family: the dtype / index dispatch, the zeroing of an
// overwritten table, the strategy (src/cuda/indexing/, see strategies.hpp) and the bad-index count.
//  - gather: gather.cu;
//  - scatter-add along the innermost dim (either variant): scatter_warp.cu for lines of a few
//    entries (at most 128, or sparse f32 / f64 adds of up to 512: added to at any length,
//    overwritten while short), scatter_short.cu for lines of at most 32 entries, else
//    scatter_line.cu where the destination line fits in shared memory; f32 / f64 atomics
//    (scatter_atomic.cu) where they add to lines other than dense shared ones (strategy.cpp);
//  - element-mode scatter-add along an outer dim: scatter_columns.cu while its slabs are few, the
//    warp or shared lines over columns (column lines) for a few entries a column of a tall table;
//  - scatter-add elsewhere: scatter_atomic.cu, or scatter_sorted.cu (deterministic).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/dispatch.hpp"
#include "cuda/common/bad_index.cuh"
#include "cuda/common/check.cuh"
#include "cuda/common/zero_view.cuh"
#include "cuda/indexing/strategies.hpp"
#include "ops/indexing_problem.hpp"

namespace baracuda::detail::cuda {
namespace {

template <class T, class Idx>
Status run_scatter(const Stream& stream, const IndexedProblem& p, bool fused_overwrite, int sm_count) {
  switch (p.kernel) {
    case ScatterKernel::shared_line:
      return scatter_line<T, Idx>(stream, p, p.layout, fused_overwrite, false, sm_count);
    case ScatterKernel::column_tiles:
      return scatter_columns<T, Idx>(stream, p, fused_overwrite, sm_count);
    case ScatterKernel::warp_lines:
      return scatter_warp_lines<T, Idx>(stream, p, p.layout, fused_overwrite, false, sm_count);
    case ScatterKernel::short_lines:
      return scatter_short_lines<T, Idx>(stream, p, sm_count);
    case ScatterKernel::column_lines: {
      // The walk with dim innermost, added into the table (zeroed first when overwritten).
      const IndexedLayout columns = dim_innermost(p.layout);
      const bool zeroed = !p.desc.accumulate;
      return column_lines_by_warp(p.desc) ? scatter_warp_lines<T, Idx>(stream, p, columns, false, zeroed, sm_count)
                                          : scatter_line<T, Idx>(stream, p, columns, false, zeroed, sm_count);
    }
    case ScatterKernel::general:
      break;
  }
  return p.variant == IndexVariant::atomic ? scatter_atomic<T, Idx>(stream, p, sm_count)
                                           : scatter_sorted<T, Idx>(stream, p, sm_count);
}

template <class T, class Idx>
Status scatter_add(const Stream& stream, const IndexedProblem& p, int sm_count) {
  // Overwriting: the shared-memory kernels write every table element themselves when the walk covers
  // every line of the table; otherwise (and always for column lines) the table is zeroed first and
  // the sums are added.
  const bool shared_sums = p.kernel == ScatterKernel::shared_line || p.kernel == ScatterKernel::column_tiles ||
                           p.kernel == ScatterKernel::warp_lines;
  const bool fused_overwrite = !p.desc.accumulate && shared_sums && covers_every_table_line(p.desc);
  if (!p.desc.accumulate && !fused_overwrite)
    if (Status st = zero_view<T>(stream, p.table_view, sm_count); !st) return st;
  // Nothing to add (a 1-D index along an empty table): its values are still counted.
  if (p.layout.row_count == 0 || p.desc.shape.numel() == 0) return count_bad<Idx>(stream, p, sm_count);
  if (Status st = run_scatter<T, Idx>(stream, p, fused_overwrite, sm_count); !st) return st;
  return count_bad<Idx>(stream, p, sm_count);
}

}  // namespace

Status launch(const LaunchContext& ctx, const IndexedProblem& p) {
  const Stream& stream = ctx.stream;
  const int sm_count = ctx.target.sm_count;
  return dispatch_index(p.desc.index_dtype, [&](auto index_tag) {
    using Idx = typename decltype(index_tag)::type;
    if (p.desc.scatter)
      return dispatch_float<__half, __nv_bfloat16>(p.desc.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        return scatter_add<T, Idx>(stream, p, sm_count);
      });
    const size_t size = dtype_size(p.desc.dtype);
    if (p.desc.shape.numel() == 0) return count_bad<Idx>(stream, p, sm_count);
    if (Status st = size == 2   ? gather<uint16_t, Idx>(stream, p, sm_count)
                    : size == 4 ? gather<uint32_t, Idx>(stream, p, sm_count)
                                : gather<uint64_t, Idx>(stream, p, sm_count);
        !st)
      return st;
    return count_bad<Idx>(stream, p, sm_count);
  });
}

}  // namespace baracuda::detail::cuda

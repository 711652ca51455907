// The CUDA indexing policy, decided at select: which scatter kernel, which default variant, and the
// workspace.
#include "cuda/indexing/strategies.hpp"

namespace baracuda::detail::cuda {
namespace {

// A scatter whose walk has dim innermost with one index value per element (element mode, or a 1-D
// index with nothing after dim) and whose destination line fits in shared memory: each line is
// summed in shared memory. Decided from the shapes alone (strides do not move dim in the walk).
bool shared_rows(const IndexedProblemDesc& desc) {
  int last = desc.shape.rank - 1;
  while (last > desc.dim && desc.shape.dims[last] == 1) --last;
  const size_t acc = desc.dtype == DType::f64 ? 8 : 4;
  // dims[dim] > 1 keeps dim in the walk (a size-1 dim is dropped), so it is the walk's innermost.
  return desc.scatter && last == desc.dim && desc.shape.dims[desc.dim] > 1 &&
         static_cast<size_t>(desc.table_shape.dims[desc.dim]) * acc <= kSharedRowBytes;
}

}  // namespace

ScatterStrategy scatter_strategy(const IndexedProblemDesc& problem, std::optional<IndexVariant> forced,
                                 bool deterministic) {
  ScatterStrategy s;
  s.shared_rows = shared_rows(problem);
  // 16-bit types accumulate in f32 by default: atomically only in the shared line, else sorted.
  const bool sixteen_bit = problem.dtype == DType::f16 || problem.dtype == DType::bf16;
  const bool atomic_default = !deterministic && (!sixteen_bit || s.shared_rows);
  s.variant = forced.value_or(atomic_default ? IndexVariant::atomic : IndexVariant::sorted);
  if (s.variant == IndexVariant::sorted && !s.shared_rows && problem.shape.numel() > 0) {
    int64_t rows = 0, length = 0;
    rows_and_length(problem, rows, length);
    s.workspace = sorted_scatter_workspace(rows, length, problem.dtype).total();
  }
  return s;
}

}  // namespace baracuda::detail::cuda

#include "ops/elementwise_layout.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/elementwise.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail {

bool rows_vectorizable(const Shape& shape, std::initializer_list<AnyTensorRef> views, int inputs) {
  std::vector<const Strides*> strides;
  std::vector<const void*> data;
  int64_t vector = 16;
  for (const AnyTensorRef& v : views) {
    strides.push_back(&v.strides);
    data.push_back(v.data);
    vector = std::min(vector, 16 / static_cast<int64_t>(dtype_size(v.dtype)));  // 16 bytes of the widest
  }
  int64_t sizes[kMaxRank];
  int64_t collapsed[16][kMaxRank];
  const int count = static_cast<int>(strides.size());
  if (count > 16) return false;
  const int rank = collapse_dims(shape, strides.data(), count, nullptr, sizes, collapsed);
  if (rank == 0 || sizes[rank - 1] % vector != 0) return false;
  for (int t = 0; t < count; ++t) {
    const int64_t inner = collapsed[t][rank - 1];
    // An input broadcast along the row is one scalar load per row: no vector constraints.
    if (t < inputs && inner == 0) continue;
    if (inner != 1 || !aligned16(data[t])) return false;
    for (int d = 0; d + 1 < rank; ++d)
      if (collapsed[t][d] % vector != 0) return false;
  }
  return true;
}

namespace {
// The tiles of CUDA's transposed kernel over the views, 0 where they make no TransposedWalk (the ops
// that have the path take two or three views).
int64_t transposed_tiles(const Shape& shape, std::initializer_list<AnyTensorRef> views, int inputs) {
  size_t widest = 1;
  for (const AnyTensorRef& view : views) widest = std::max(widest, dtype_size(view.dtype));
  const int64_t side = int64_t{kTransposedLanes} * transposed_piece(widest);
  auto tiles = [&](const auto& walk) -> int64_t {
    if (!walk) return 0;  // (each factor at most a dim's size: the product at most the element count)
    return (walk->p_size + side - 1) / side * ((walk->q_size + side - 1) / side) * walk->batches;
  };
  const AnyTensorRef* v = views.begin();
  if (views.size() == 2) return tiles(transposed_walk<2>(shape, {&v[0].strides, &v[1].strides}, inputs));
  if (views.size() == 3) return tiles(transposed_walk<3>(shape, {&v[0].strides, &v[1].strides, &v[2].strides}, inputs));
  return 0;
}
// Fewer tiles than about one an SM of an H200 leave SMs idle where the strided path's rows fill them
// (H200, a + b.t() bf16 [1000, 1001], 64 tiles: 0.0195 ms, strided 0.0153 ms, PyTorch 0.0169 ms).
constexpr int64_t kMinTransposedTiles = 128;
}  // namespace

ElementwisePath layout_path(Backend backend, const Shape& shape, std::initializer_list<AnyTensorRef> views, int inputs,
                            bool transposes) {
  bool contiguous = true, aligned = true;
  for (const AnyTensorRef& v : views) {
    contiguous = contiguous && v.is_contiguous();
    aligned = aligned && aligned16(v.data);
  }
  if (contiguous)
    return backend == Backend::cuda && aligned ? ElementwisePath::vectorized : ElementwisePath::contiguous;
  if (backend == Backend::cuda && rows_vectorizable(shape, views, inputs)) return ElementwisePath::strided_vectorized;
  if (transposes) {
    const int64_t tiles = transposed_tiles(shape, views, inputs);
    if (tiles > 0 && (backend != Backend::cuda || tiles >= kMinTransposedTiles)) return ElementwisePath::transposed;
  }
  return ElementwisePath::strided;
}

int64_t reduction_splits(const PlanTarget& target, int64_t m, int64_t r, DType dtype, size_t workspace_limit,
                         size_t& workspace) {
  // CUDA: enough for half the threads it holds at once to take a 16-byte vector each (its kernels of
  // one element, or a warp a row, take as many or fewer: src/cuda/common/broadcast_reduction.cuh).
  const int64_t vector = 16 / static_cast<int64_t>(dtype_size(dtype));
  const int64_t target_items = target.backend == Backend::cuda ? int64_t(target.sm_count) * 1024 * vector : 1024;
  int64_t splits = std::clamp<int64_t>((target_items + m - 1) / std::max<int64_t>(m, 1), 1, std::max<int64_t>(r, 1));
  const size_t acc = dtype == DType::f64 ? 8 : 4;
  const int64_t budget = static_cast<int64_t>(std::min<size_t>(workspace_limit, SIZE_MAX / 2) / acc);
  if (splits > 1 && m * splits > budget) splits = std::max<int64_t>(1, budget / std::max<int64_t>(m, 1));
  // m * splits <= m + target_items (splits is a ceiling of target_items / m): no overflow.
  if (splits > 1) workspace = std::max(workspace, static_cast<size_t>(m * splits) * acc);
  return splits;
}

Status check_forced_path(std::string_view plan, ElementwisePath forced, const Shape& shape,
                         std::initializer_list<AnyTensorRef> views, int inputs) {
  const std::string name(path_name(forced));
  if (forced == ElementwisePath::strided_vectorized && !rows_vectorizable(shape, views, inputs))
    return plan_error(StatusCode::invalid_problem, plan, "preference.variant",
                      "'" + name + "' needs 16-byte aligned rows of whole vectors with unit or zero inner strides");
  if (forced == ElementwisePath::transposed && transposed_tiles(shape, views, inputs) == 0)
    return plan_error(StatusCode::invalid_problem, plan, "preference.variant",
                      "'" + name +
                          "' needs the outputs' innermost dim at unit stride, one input's unit stride on "
                          "another dim, the other inputs' stride 1 or 0 along the innermost, both dims of at least " +
                          std::to_string(kTransposedMinSize) + " elements");
  if (forced != ElementwisePath::contiguous && forced != ElementwisePath::vectorized) return Status::ok();
  for (const AnyTensorRef& v : views) {
    if (!v.is_contiguous())
      return plan_error(StatusCode::invalid_problem, plan, "preference.variant",
                        "'" + name + "' needs contiguous views");
    if (forced == ElementwisePath::vectorized && !aligned16(v.data))
      return plan_error(StatusCode::misaligned_operand, plan, "preference.variant",
                        "'vectorized' needs 16-byte aligned pointers");
  }
  return Status::ok();
}

}  // namespace baracuda::detail

#pragma once
// What the copy plans (cast, fill) hand to a backend: the validated views, the path the plan chose,
// and the functors, each element converted by common/convert.hpp. A cast is one functor over every
// (dtype, out_dtype) pair; the backends compile the pairs in two translation units by x's dtype
// (floats, integers and bool) so the build parallelizes.
#include <cstdint>
#include <optional>
#include <type_traits>

#include "baracuda/ops/copy.hpp"
#include "common/convert.hpp"
#include "common/dispatch.hpp"
#include "common/elementwise.hpp"
#include "ops/elementwise_layout.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

// The paths of a cast: the elementwise ones, then `transpose` (CUDA: x's unit-stride dim is not y's).
inline constexpr int kCastTranspose = static_cast<int>(ElementwisePath::broadcast_reduce);

struct CastProblem {
  CastDescriptor desc;
  int path = 0;  // an ElementwisePath, or kCastTranspose
  AnyTensorRef x;
  AnyTensorMut y;
};

struct FillProblem {
  FillDescriptor desc;
  ElementwisePath path = ElementwisePath::strided;
  AnyTensorMut y;
};

// A cast's compute type: x's own, but f32 for the 16-bit floats (their values are exact in it).
template <class In>
using cast_acc_t = std::conditional_t<is_16bit_float_v<In>, float, In>;

template <class Acc_>
struct CastFunctor {
  using Acc = Acc_;
  static constexpr int kIn = 1, kOut = 1;
  BARACUDA_HD void operator()(const Acc (&x)[1], Acc (&y)[1]) const { y[0] = x[0]; }
};

// y = value, already in y's type (converted once, on the host).
template <class Out>
struct FillFunctor {
  using Acc = Out;
  static constexpr int kIn = 0, kOut = 1;
  Out value;
  BARACUDA_HD void operator()(const Acc (&)[1], Acc (&y)[1]) const { y[0] = value; }
};

// Calls f(std::type_identity<T>{}) with the element type of any dtype (the backend's 16-bit types).
template <class Half, class BFloat16, class F>
Status dispatch_any(DType dtype, F&& f) {
  return dispatch_float<Half, BFloat16, int8_t, uint8_t, int32_t, int64_t, bool>(dtype, std::forward<F>(f));
}

// The ElementwiseTensors of a cast along an elementwise path.
inline ElementwiseTensors<1, 1> cast_tensors(const CastProblem& p) {
  return {static_cast<ElementwisePath>(p.path), p.desc.shape, {p.x.data}, {p.x.strides}, {p.y.data}, {p.y.strides}};
}
inline ElementwiseTensors<0, 1> fill_tensors(const FillProblem& p) {
  ElementwiseTensors<0, 1> t;
  t.path = p.path;
  t.shape = p.desc.shape;
  t.out[0] = p.y.data;
  t.out_strides[0] = p.y.strides;
  return t;
}

// The fill value in Out (select checked it fits an integer dtype).
template <class Out>
Out fill_value(const FillDescriptor& d) {
  if (d.integer_value) return convert<Out>(*d.integer_value);
  return convert<Out>(d.value);
}

// The 2-D tiles a transpose moves: after collapsing dims, y's innermost dim (unit stride in y) and the
// dim where x has unit stride; the other dims are batches.
struct TransposeShape {
  int rank = 0;     // collapsed
  int x_unit = -1;  // the dim where x's stride is 1 (not the innermost)
  int64_t sizes[kMaxRank] = {};
  int64_t strides[2][kMaxRank] = {};  // x, y
};
// Whether a cast takes the transpose path, and along which dims: y's innermost collapsed dim has
// stride 1, x's does not (nor 0), x has a stride-1 dim elsewhere; both dims at least kTransposeMinSize.
inline constexpr int64_t kTransposeMinSize = 16;
std::optional<TransposeShape> transpose_shape(const Shape& shape, const AnyTensorRef& x, const AnyTensorRef& y);
// The transpose's walk, for both backends: P (y's unit-stride dim) by Q (x's), and the batches of the
// other collapsed dims; none where the views do not make a transpose.
struct TransposeWalk {
  int64_t p_size = 0, q_size = 0;
  int64_t x_p = 0, y_q = 0;  // x's stride along P and y's along Q
  Walker<2> batch;           // x, y
  int64_t batches = 1;
};
inline std::optional<TransposeWalk> transpose_walk(const CastProblem& problem) {
  const std::optional<TransposeShape> shape = transpose_shape(problem.desc.shape, problem.x, problem.y);
  if (!shape) return std::nullopt;
  const TransposeShape& ts = *shape;
  TransposeWalk w;
  const int p = ts.rank - 1, q = ts.x_unit;
  w.p_size = ts.sizes[p];
  w.q_size = ts.sizes[q];
  w.x_p = ts.strides[0][p];
  w.y_q = ts.strides[1][q];
  for (int d = 0; d < ts.rank; ++d) {
    if (d == p || d == q) continue;
    w.batch.sizes[w.batch.rank] = ts.sizes[d];
    for (int k = 0; k < 2; ++k) w.batch.strides[k][w.batch.rank] = ts.strides[k][d];
    ++w.batch.rank;
  }
  w.batches = w.batch.numel();
  return w;
}
// The path a cast of x into y takes by itself (CastPlan's, and the casts other plans run first).
int cast_path(Backend backend, const Shape& shape, const AnyTensorRef& x, const AnyTensorRef& y);

namespace cpu {
Status launch(const LaunchContext& ctx, const CastProblem& problem);
Status launch(const LaunchContext& ctx, const FillProblem& problem);
template <bool kFromFloat>
Status launch_cast(const CastProblem& problem);
}  // namespace cpu
namespace cuda {
Status launch(const LaunchContext& ctx, const CastProblem& problem);
Status launch(const LaunchContext& ctx, const FillProblem& problem);
template <bool kFromFloat>
Status launch_cast(const LaunchContext& ctx, const CastProblem& problem);
}  // namespace cuda

}  // namespace baracuda::detail

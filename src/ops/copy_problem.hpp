#pragma once
// What the copy plans (cast, fill) hand to a backend: the validated views, the path the plan chose,
// and the functors, each element converted by common/convert.hpp. A cast is one functor over every
// (dtype, out_dtype) pair; the backends compile the pairs in two translation units by x's dtype
// (floats, integers and bool) so the build parallelizes.
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "baracuda/ops/copy.hpp"
#include "common/convert.hpp"
#include "common/copy_math.hpp"
#include "common/dispatch.hpp"
#include "common/elementwise.hpp"
#include "ops/elementwise_layout.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

struct CastProblem {
  CastDescriptor desc;
  ElementwisePath path = ElementwisePath::strided;  // (transposed: x's unit-stride dim is not y's)
  AnyTensorRef x;
  AnyTensorMut y;
};

struct FillProblem {
  FillDescriptor desc;
  ElementwisePath path = ElementwisePath::strided;
  AnyTensorMut y;
};

// Calls f(std::type_identity<T>{}) with the element type of any dtype (the backend's 16-bit types).
template <class Half, class BFloat16, class F>
Status dispatch_any(DType dtype, F&& f) {
  return dispatch_float<Half, BFloat16, int8_t, uint8_t, int32_t, int64_t, bool>(dtype, std::forward<F>(f));
}

// The ElementwiseTensors of a cast along an elementwise path.
inline ElementwiseTensors<1, 1> cast_tensors(const CastProblem& p) {
  return {p.path, p.desc.shape, {p.x.data}, {p.x.strides}, {p.y.data}, {p.y.strides}};
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

// The path a cast of x into y takes by itself (CastPlan's, and the casts other plans run first).
ElementwisePath cast_path(Backend backend, const Shape& shape, const AnyTensorRef& x, const AnyTensorRef& y);

namespace cpu {
Status launch(const LaunchContext& ctx, const CastProblem& problem);
Status launch(const LaunchContext& ctx, const FillProblem& problem);
template <bool kFromFloat>
Status launch_cast(const CastProblem& problem);
}  // namespace cpu
namespace cuda {  // (no halves by dtype: the kernels are compiled at select)
Status launch(const LaunchContext& ctx, const CastProblem& problem);
Status launch(const LaunchContext& ctx, const FillProblem& problem);
// Compile (or find in the caches) the kernels a plan of the descriptor runs: select's part (the
// cast's transposed path compiles at its first run).
Status prepare_cast(const PlanTarget& target, const CastDescriptor& desc);
Status prepare_fill(const PlanTarget& target, const FillDescriptor& desc);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
// Every cast and fill program: each dtype pair and path, each dtype (cuda/copy.cpp).
std::vector<Program> copy_programs();
}  // namespace baracuda::detail::jit

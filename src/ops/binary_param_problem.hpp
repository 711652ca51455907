#pragma once
// What the BinaryParam plans hand to a backend: the validated views, with the weight expanded to the
// output's rank (zero strides where it is broadcast), the path the plan chose, and which op's math
// (an index into BinaryParamMaths). The dispatch from (op, mode, dtype) to a functor is written here
// once; a backend supplies
//   launch(op, const ElementwiseTensors<kIn, kOut>&)             for the elementwise paths, and
//   reduce(const BroadcastReduction<T, Body>&)                   for the broadcast-reduce backward.
#include <vector>

#include "baracuda/ops/binary_param.hpp"
#include "common/binary_param_math.hpp"
#include "common/dispatch.hpp"
#include "ops/elementwise_layout.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

struct BinaryParamForwardProblem {
  BinaryParamDescriptor desc;
  int math = 0;  // index into BinaryParamMaths
  ElementwisePath path = ElementwisePath::strided;
  AnyTensorRef a, b, weight;  // weight expanded to desc.shape's rank (tensor mode)
  AnyTensorMut out;
};

struct BinaryParamBackwardProblem {
  BinaryParamDescriptor desc;
  int math = 0;
  ElementwisePath path = ElementwisePath::strided;
  AnyTensorRef dout, a, b, weight;  // weight expanded (tensor mode)
  AnyTensorMut da, db, dweight;     // dweight expanded (tensor mode)
  int64_t reduce_splits = 1;
  void* workspace = nullptr;
};

// Calls f(std::type_identity<Math>{}) for the op's math.
template <class F, size_t I = 0>
Status dispatch_math(int math, F&& f) {
  if constexpr (I < std::tuple_size_v<BinaryParamMaths>) {
    if (math == static_cast<int>(I)) return f(std::type_identity<std::tuple_element_t<I, BinaryParamMaths>>{});
    return dispatch_math<F, I + 1>(math, std::forward<F>(f));
  } else {
    return Status::error(StatusCode::invalid_problem, "no BinaryParam op " + std::to_string(math));
  }
}

// Calls f(std::type_identity<Math>{}, std::type_identity<T>{}) for the problem's op and element type
// (the backend's own 16-bit types).
template <class Half, class BFloat16, class Problem, class F>
Status dispatch_binary_param(const Problem& p, F&& f) {
  return dispatch_math(p.math, [&](auto math) {
    return dispatch_float<Half, BFloat16>(p.desc.dtype, [&](auto element) { return f(math, element); });
  });
}

// The weight's shape right-aligned to `shape`: for each out dim, is the weight broadcast there?
// (Dims past the output's rank are false: every entry is written.)
inline void weight_broadcast_dims(const BinaryParamDescriptor& desc, bool (&broadcast)[kMaxRank]) {
  const int offset = desc.shape.rank - desc.weight_shape.rank;
  for (bool& b : broadcast) b = false;
  for (int d = 0; d < desc.shape.rank; ++d)
    broadcast[d] = d < offset || (desc.weight_shape.dims[d - offset] == 1 && desc.shape.dims[d] != 1);
}

// M (weight elements that vary) and R (elements each is broadcast over).
inline void weight_reduce_sizes(const BinaryParamDescriptor& desc, int64_t& m, int64_t& r) {
  bool broadcast[kMaxRank];
  weight_broadcast_dims(desc, broadcast);
  m = 1;
  r = 1;
  for (int d = 0; d < desc.shape.rank; ++d) (broadcast[d] ? r : m) *= desc.shape.dims[d];
}

template <class Math, class T, class Launch>
Status binary_param_forward_typed(const BinaryParamForwardProblem& p, Launch&& launch) {
  using Acc = acc_t<T>;
  if (p.desc.weight_mode == WeightMode::scalar) {
    ElementwiseTensors<2, 1> t{p.path,       p.desc.shape,   {p.a.data, p.b.data}, {p.a.strides, p.b.strides},
                               {p.out.data}, {p.out.strides}};
    return launch(ScalarWeightForward<Math, Acc>{static_cast<Acc>(p.desc.weight)}, t);
  }
  ElementwiseTensors<3, 1> t{
      p.path,       p.desc.shape,   {p.a.data, p.b.data, p.weight.data}, {p.a.strides, p.b.strides, p.weight.strides},
      {p.out.data}, {p.out.strides}};
  return launch(TensorWeightForward<Math, Acc>{}, t);
}

template <class Math, class T>
auto make_broadcast_weight_backward(const BinaryParamBackwardProblem& p) {
  const ElementwiseTensors<4, 3> t{p.path,
                                   p.desc.shape,
                                   {p.dout.data, p.a.data, p.b.data, p.weight.data},
                                   {p.dout.strides, p.a.strides, p.b.strides, p.weight.strides},
                                   {p.da.data, p.db.data, p.dweight.data},
                                   {p.da.strides, p.db.strides, p.dweight.strides}};
  bool broadcast[kMaxRank];
  weight_broadcast_dims(p.desc, broadcast);
  return make_broadcast_reduction<T>(BroadcastWeightGradient<Math, acc_t<T>>{}, t, broadcast, p.reduce_splits,
                                     p.workspace);
}

template <class Math, class T, class Launch, class Reduce>
Status binary_param_backward_typed(const BinaryParamBackwardProblem& p, Launch&& launch, Reduce&& reduce) {
  using Acc = acc_t<T>;
  if (p.desc.weight_mode == WeightMode::scalar) {
    ElementwiseTensors<1, 2> t{p.path,           p.desc.shape,           {p.dout.data},
                               {p.dout.strides}, {p.da.data, p.db.data}, {p.da.strides, p.db.strides}};
    return launch(ScalarWeightBackward<Math, Acc>{static_cast<Acc>(p.desc.weight)}, t);
  }
  if (p.path == ElementwisePath::broadcast_reduce) return reduce(make_broadcast_weight_backward<Math, T>(p));
  ElementwiseTensors<4, 3> t{p.path,
                             p.desc.shape,
                             {p.dout.data, p.a.data, p.b.data, p.weight.data},
                             {p.dout.strides, p.a.strides, p.b.strides, p.weight.strides},
                             {p.da.data, p.db.data, p.dweight.data},
                             {p.da.strides, p.db.strides, p.dweight.strides}};
  return launch(TensorWeightBackward<Math, Acc>{}, t);
}

// Backend entry points.
namespace cpu {
Status launch(const LaunchContext& ctx, const BinaryParamForwardProblem& problem);
Status launch(const LaunchContext& ctx, const BinaryParamBackwardProblem& problem);
}  // namespace cpu
namespace cuda {  // (the kernels are compiled at first use)
Status launch(const LaunchContext& ctx, const BinaryParamForwardProblem& problem);
Status launch(const LaunchContext& ctx, const BinaryParamBackwardProblem& problem);
}  // namespace cuda

}  // namespace baracuda::detail

namespace baracuda::detail::jit {
struct Program;
// Every lerp and addcmul program (cuda/binary_param.cpp).
std::vector<Program> binary_param_programs();
}  // namespace baracuda::detail::jit

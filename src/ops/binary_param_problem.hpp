#pragma once
// What the BinaryParam plans hand to a backend: the validated views, with the weight expanded to
// the output's rank (zero strides where it is broadcast), and the path the plan chose. The
// dispatch from (mode, dtype) to a functor is written here once; a backend supplies
//   launch(op, const ElementwiseTensors<kIn, kOut>&)        for the elementwise paths, and
//   reduce(const LerpBackwardReduce<T>&)                     for the broadcast-reduce backward.
#include "baracuda/ops/binary_param.hpp"
#include "common/binary_param_math.hpp"
#include "common/dispatch.hpp"

namespace baracuda::detail {

template <int kIn_, int kOut_>
struct ElementwiseTensors {
  static constexpr int kIn = kIn_, kOut = kOut_;
  ElementwisePath path = ElementwisePath::strided;
  Shape shape;
  const void* in[kIn] = {};
  Strides in_strides[kIn] = {};
  void* out[kOut] = {};
  Strides out_strides[kOut] = {};
};

struct BinaryParamForwardProblem {
  BinaryParamDescriptor desc;
  ElementwisePath path = ElementwisePath::strided;
  AnyTensorRef a, b, weight;  // weight expanded to desc.shape's rank (tensor mode)
  AnyTensorMut out;
};

struct BinaryParamBackwardProblem {
  BinaryParamDescriptor desc;
  ElementwisePath path = ElementwisePath::strided;
  AnyTensorRef dout, a, b, weight;  // weight expanded (tensor mode)
  AnyTensorMut da, db, dweight;     // dweight expanded (tensor mode)
  int64_t reduce_splits = 1;
  void* workspace = nullptr;
};

// The weight's shape right-aligned to `shape`: for each out dim, is the weight broadcast there?
inline void weight_broadcast_dims(const BinaryParamDescriptor& desc, bool (&broadcast)[kMaxRank]) {
  const int offset = desc.shape.rank - desc.weight_shape.rank;
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

template <class T, class Launch>
Status binary_param_forward_typed(const BinaryParamForwardProblem& p, Launch&& launch) {
  using Acc = acc_t<T>;
  if (p.desc.weight_mode == WeightMode::scalar) {
    ElementwiseTensors<2, 1> t{p.path,       p.desc.shape,   {p.a.data, p.b.data}, {p.a.strides, p.b.strides},
                               {p.out.data}, {p.out.strides}};
    return launch(LerpScalarForward<Acc>{static_cast<Acc>(p.desc.weight)}, t);
  }
  ElementwiseTensors<3, 1> t{
      p.path,       p.desc.shape,   {p.a.data, p.b.data, p.weight.data}, {p.a.strides, p.b.strides, p.weight.strides},
      {p.out.data}, {p.out.strides}};
  return launch(LerpTensorForward<Acc>{}, t);
}

template <class T>
LerpBackwardReduce<T> make_lerp_backward_reduce(const BinaryParamBackwardProblem& p) {
  LerpBackwardReduce<T> k{};
  k.dout = static_cast<const T*>(p.dout.data);
  k.a = static_cast<const T*>(p.a.data);
  k.b = static_cast<const T*>(p.b.data);
  k.w = static_cast<const T*>(p.weight.data);
  k.da = static_cast<T*>(p.da.data);
  k.db = static_cast<T*>(p.db.data);
  k.dw = static_cast<T*>(p.dweight.data);
  k.partial = static_cast<acc_t<T>*>(p.workspace);
  const Strides* const strides[kLerpBackwardTensors] = {
      &p.dout.strides, &p.a.strides, &p.b.strides, &p.weight.strides, &p.da.strides, &p.db.strides, &p.dweight.strides};
  bool broadcast[kMaxRank];
  weight_broadcast_dims(p.desc, broadcast);
  bool kept[kMaxRank];
  for (int d = 0; d < kMaxRank; ++d) kept[d] = !broadcast[d];
  k.kept = make_walker<kLerpBackwardTensors>(p.desc.shape, strides, kept);
  k.reduced = make_walker<kLerpBackwardTensors>(p.desc.shape, strides, broadcast);
  weight_reduce_sizes(p.desc, k.m, k.r);
  k.s = p.reduce_splits;
  // Coalescing: neighbouring items should touch neighbouring elements along the innermost dim.
  int inner = p.desc.shape.rank - 1;
  while (inner > 0 && p.desc.shape.dims[inner] == 1) --inner;
  k.lanes_on_split = inner >= 0 && broadcast[inner];
  return k;
}

template <class T, class Launch, class Reduce>
Status binary_param_backward_typed(const BinaryParamBackwardProblem& p, Launch&& launch, Reduce&& reduce) {
  using Acc = acc_t<T>;
  if (p.desc.weight_mode == WeightMode::scalar) {
    ElementwiseTensors<1, 2> t{p.path,           p.desc.shape,           {p.dout.data},
                               {p.dout.strides}, {p.da.data, p.db.data}, {p.da.strides, p.db.strides}};
    return launch(LerpScalarBackward<Acc>{static_cast<Acc>(p.desc.weight)}, t);
  }
  if (p.path == ElementwisePath::broadcast_reduce) return reduce(make_lerp_backward_reduce<T>(p));
  ElementwiseTensors<4, 3> t{p.path,
                             p.desc.shape,
                             {p.dout.data, p.a.data, p.b.data, p.weight.data},
                             {p.dout.strides, p.a.strides, p.b.strides, p.weight.strides},
                             {p.da.data, p.db.data, p.dweight.data},
                             {p.da.strides, p.db.strides, p.dweight.strides}};
  return launch(LerpTensorBackward<Acc>{}, t);
}

// Backend entry points.
namespace cpu {
Status binary_param_forward(const BinaryParamForwardProblem& problem);
Status binary_param_backward(const BinaryParamBackwardProblem& problem);
}  // namespace cpu
namespace cuda {
Status binary_param_forward(const Stream& stream, const BinaryParamForwardProblem& problem);
Status binary_param_backward(const Stream& stream, const BinaryParamBackwardProblem& problem);
}  // namespace cuda

}  // namespace baracuda::detail

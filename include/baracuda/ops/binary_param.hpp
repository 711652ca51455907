#pragma once
// Binary elementwise ops with a parameter: out = f(a, b; w), w either a scalar (the descriptor's
// `weight`) or a tensor broadcastable to the output shape (right-aligned, as PyTorch broadcasts).
//   LerpPlan       out = a + w (b - a)       torch.lerp
//   AddcmulPlan    out = a + w b             torch.addcmul(a, b, w); with a scalar w, torch.add(a, b, alpha=w)
// Each has a backward plan that computes, in one pass over dout, da and db, and for a tensor weight
// dweight, summed over the dims along which the weight is broadcast in a fixed order (deterministic,
// no atomics):
//   lerp:    da = (1 - w) dout,  db = w dout,  dweight = sum((b - a) dout)
//   addcmul: da = dout,          db = w dout,  dweight = sum(b dout)
//
// Views: a, b, weight and dout may be strided or broadcast (zero strides); outputs may be strided
// but must not overlap themselves (no zero stride on a dimension of size > 1). Every view of the
// output shape has exactly that shape; the weight views have exactly `weight_shape`. An output may
// share memory with an input only as that very view (in place), and not at all in a backward whose
// weight broadcasts (dweight is reduced from dout, a and b after da and db are written).
#include "baracuda/core/plan.hpp"

namespace baracuda {

enum class WeightMode : unsigned char { scalar, tensor };

struct BinaryParamDescriptor {
  DType dtype = DType::f32;  // a, b, weight, out (and every gradient) share it
  Shape shape;               // the output shape
  WeightMode weight_mode = WeightMode::scalar;
  double weight = 0.5;  // used when weight_mode == scalar
  Shape weight_shape;   // used when weight_mode == tensor; broadcastable to shape
};

struct BinaryParamArgs {
  AnyTensorRef a;
  AnyTensorRef b;
  AnyTensorRef weight;  // tensor mode only
  AnyTensorMut out;
};

struct BinaryParamBackwardArgs {
  AnyTensorRef dout;
  AnyTensorRef a;       // tensor mode only (dweight needs them)
  AnyTensorRef b;       // tensor mode only
  AnyTensorRef weight;  // tensor mode only
  AnyTensorMut da;
  AnyTensorMut db;
  AnyTensorMut dweight;  // tensor mode only; shape weight_shape, overwritten (not accumulated)
};

struct LerpOp : OpTag<BinaryParamDescriptor, BinaryParamArgs> {};
struct LerpBackwardOp : OpTag<BinaryParamDescriptor, BinaryParamBackwardArgs> {};
struct AddcmulOp : OpTag<BinaryParamDescriptor, BinaryParamArgs> {};
struct AddcmulBackwardOp : OpTag<BinaryParamDescriptor, BinaryParamBackwardArgs> {};

using LerpPlan = Plan<LerpOp>;
using LerpBackwardPlan = Plan<LerpBackwardOp>;
using AddcmulPlan = Plan<AddcmulOp>;
using AddcmulBackwardPlan = Plan<AddcmulBackwardOp>;
// The family's first op kept its family's name.
using BinaryParamPlan = LerpPlan;
using BinaryParamBackwardPlan = LerpBackwardPlan;

}  // namespace baracuda

#pragma once
// Gated linear units over the two halves of the last dim: x = [a, b] (each [..., D]) and
//   GatedPlan          out = a * act(b)                                   out [..., D]
//   GatedBackwardPlan  dx = [dout * act(b), dout * a * act'(b)]           dx [..., 2D] (reads dout, x)
// one pass each, as Liger-Kernel fuses SwiGLU / GeGLU. Kinds: glu (act = sigmoid: F.glu(x, -1)),
// swiglu (silu), geglu (gelu, erf form), geglu_tanh (gelu's tanh approximation), reglu (relu).
// The activation is on the second half (F.glu's convention); for Liger's silu(gate) * up, pass
// x = [up, gate]. Activations, edge values and gradients at kinks are the unary plans' (unary.hpp:
// relu'(0) = 0, ...).
//
// dtypes: f32, f64, f16, bf16 (16-bit compute in f32, f64 in f64; every tensor shares the dtype).
// Views: any strides (x's halves are views of x); dout may broadcast. dx may be x exactly (in place);
// any other overlap of an output with an input is an error naming the output.
#include "baracuda/core/plan.hpp"
#include "baracuda/ops/gated_kind.hpp"

namespace baracuda {

struct GatedDescriptor {
  GatedKind kind = GatedKind::swiglu;
  DType dtype = DType::f32;
  Shape shape;  // x's: rank >= 1, the last dim even (2D)
};

struct GatedArgs {
  AnyTensorRef x;    // shape
  AnyTensorMut out;  // shape with the last dim halved, overwritten
};

struct GatedBackwardArgs {
  AnyTensorRef dout;  // shape with the last dim halved
  AnyTensorRef x;
  AnyTensorMut dx;  // shape, overwritten
};

struct GatedOp : OpTag<GatedDescriptor, GatedArgs> {};
struct GatedBackwardOp : OpTag<GatedDescriptor, GatedBackwardArgs> {};

using GatedPlan = Plan<GatedOp>;
using GatedBackwardPlan = Plan<GatedBackwardOp>;

// "swiglu": the kind's name (SKUs and errors say it); "?" for a value that is no kind.
std::string_view gated_kind_name(GatedKind kind);

}  // namespace baracuda

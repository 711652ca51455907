#pragma once
// Binary elementwise ops with a parameter: out = f(a, b; w). The first kind is Lerp,
//   out = a + w * (b - a)            (torch.lerp, jax.numpy lerp-style interpolation)
// with w either a scalar (the descriptor's `weight`) or a tensor broadcastable to the output shape
// (right-aligned, as torch.lerp allows). The backward computes, in one pass over dout,
//   da = (1 - w) * dout,  db = w * dout,  and for a tensor weight  dweight = sum((b - a) * dout)
// where the sum runs over the dimensions along which the weight is broadcast (in a fixed order, so
// the result is deterministic and needs no atomics).
//
// Views: a, b, weight and dout may be strided or broadcast (zero strides); outputs may be strided
// but must not overlap themselves (no zero stride on a dimension of size > 1). Every view of the
// output shape has exactly that shape; the weight view has exactly `weight_shape`.
#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

enum class BinaryParamKind : unsigned char { lerp };
enum class WeightMode : unsigned char { scalar, tensor };
std::string_view binary_param_kind_name(BinaryParamKind kind);

struct BinaryParamDescriptor {
  BinaryParamKind kind = BinaryParamKind::lerp;
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
  AnyTensorRef a;       // tensor mode only (dweight needs b - a)
  AnyTensorRef b;       // tensor mode only
  AnyTensorRef weight;  // tensor mode only
  AnyTensorMut da;
  AnyTensorMut db;
  AnyTensorMut dweight;  // tensor mode only; shape weight_shape, overwritten (not accumulated)
};

// How a backend walks the problem; chosen by the plan from the views, never by the caller.
enum class ElementwisePath : unsigned char {
  vectorized,          // contiguous, every pointer 16-byte aligned: 16-byte accesses
  contiguous,          // contiguous, some pointer not 16-byte aligned: one element per access
  strided,             // general strides (zero strides broadcast): offsets computed per row
  strided_vectorized,  // rows of 16-byte vectors; an input may be broadcast along the row (stride 0)
  broadcast_reduce,    // backward with a broadcast weight: dweight reduced in a fixed order
};

class BinaryParamPlan {
 public:
  static Expected<BinaryParamPlan> select(const Stream& stream, const BinaryParamDescriptor& desc,
                                          const PlanPreference& preference = {});
  Status can_implement(const BinaryParamArgs& args) const;
  size_t workspace_size() const { return 0; }
  // The kernel used for contiguous, aligned views (or the forced variant).
  KernelSku sku() const;
  // The kernel these args would run.
  KernelSku sku(const BinaryParamArgs& args) const;
  PrecisionGuarantee precision_guarantee() const;
  Status run(const Stream& stream, Workspace workspace, const BinaryParamArgs& args) const;
  const BinaryParamDescriptor& descriptor() const { return desc_; }

 private:
  ElementwisePath path_for(const BinaryParamArgs& args) const;
  BinaryParamDescriptor desc_;
  Backend backend_ = Backend::cpu;
  int arch_ = 0;
  int device_ = -1;
  std::optional<ElementwisePath> forced_path_;
};

class BinaryParamBackwardPlan {
 public:
  static Expected<BinaryParamBackwardPlan> select(const Stream& stream, const BinaryParamDescriptor& desc,
                                                  const PlanPreference& preference = {});
  Status can_implement(const BinaryParamBackwardArgs& args) const;
  // Partial sums of dweight when the weight is broadcast and the reduction is split.
  size_t workspace_size() const;
  KernelSku sku() const;
  KernelSku sku(const BinaryParamBackwardArgs& args) const;
  PrecisionGuarantee precision_guarantee() const;
  Status run(const Stream& stream, Workspace workspace, const BinaryParamBackwardArgs& args) const;
  const BinaryParamDescriptor& descriptor() const { return desc_; }

 private:
  ElementwisePath path_for(const BinaryParamBackwardArgs& args) const;
  BinaryParamDescriptor desc_;
  Backend backend_ = Backend::cpu;
  int arch_ = 0;
  int device_ = -1;
  std::optional<ElementwisePath> forced_path_;
  int64_t reduce_splits_ = 1;  // splits of the dweight reduction (fixed at select: deterministic)
};

}  // namespace baracuda

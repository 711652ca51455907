// Every plan of the library, one line each: bind_plan (bindings.hpp) exposes it from its schema and
// argument table. A new plan is one more line here (and, for a new descriptor, its class in
// descriptors.cpp).
#include "bindings.hpp"
#include "ffi.hpp"

namespace baracuda::python {

void bind_plans(nb::module_& m) {
  // matmul.hpp
  bind_plan<MatmulPlan>(m, "MatmulPlan");
  bind_plan<MatmulBackwardPlan>(m, "MatmulBackwardPlan");
  bind_plan<LinearPlan>(m, "LinearPlan");
  bind_plan<LinearBackwardPlan>(m, "LinearBackwardPlan");
  bind_plan<GroupedMatmulPlan>(m, "GroupedMatmulPlan");
  bind_plan<GroupedMatmulBackwardPlan>(m, "GroupedMatmulBackwardPlan");
  // norm.hpp
  bind_plan<LayerNormPlan>(m, "LayerNormPlan");
  bind_plan<RmsNormPlan>(m, "RmsNormPlan");
  bind_plan<LayerNormBackwardPlan>(m, "LayerNormBackwardPlan");
  bind_plan<RmsNormBackwardPlan>(m, "RmsNormBackwardPlan");
  bind_plan<GroupNormPlan>(m, "GroupNormPlan");
  bind_plan<GroupNormBackwardPlan>(m, "GroupNormBackwardPlan");
  bind_plan<BatchNormPlan>(m, "BatchNormPlan");
  bind_plan<BatchNormBackwardPlan>(m, "BatchNormBackwardPlan");
  // softmax.hpp
  bind_plan<SoftmaxPlan>(m, "SoftmaxPlan");
  bind_plan<SoftmaxBackwardPlan>(m, "SoftmaxBackwardPlan");
  // random.hpp
  bind_plan<RandomPlan>(m, "RandomPlan");
  bind_plan<RandpermPlan>(m, "RandpermPlan");
  bind_plan<MultinomialPlan>(m, "MultinomialPlan");
  bind_plan<DropoutPlan>(m, "DropoutPlan");
  bind_plan<DropoutBackwardPlan>(m, "DropoutBackwardPlan");
  bind_plan<AttentionPlan>(m, "AttentionPlan");
  bind_plan<AttentionBackwardPlan>(m, "AttentionBackwardPlan");
  bind_plan<KvCacheAppendPlan>(m, "KvCacheAppendPlan");
  bind_plan<CrossEntropyPlan>(m, "CrossEntropyPlan");
  bind_plan<CrossEntropyBackwardPlan>(m, "CrossEntropyBackwardPlan");
  bind_plan<LinearCrossEntropyPlan>(m, "LinearCrossEntropyPlan");
  bind_plan<LinearCrossEntropyBackwardPlan>(m, "LinearCrossEntropyBackwardPlan");
  bind_plan<PointwiseLossPlan>(m, "PointwiseLossPlan");
  bind_plan<PointwiseLossBackwardPlan>(m, "PointwiseLossBackwardPlan");
  // rotary.hpp
  bind_plan<RotaryPlan>(m, "RotaryPlan");
  bind_plan<RotaryBackwardPlan>(m, "RotaryBackwardPlan");
  // unary.hpp, binary.hpp, ternary.hpp, binary_param.hpp, gated.hpp
  bind_plan<UnaryPlan>(m, "UnaryPlan");
  bind_plan<UnaryBackwardPlan>(m, "UnaryBackwardPlan");
  bind_plan<BinaryPlan>(m, "BinaryPlan");
  bind_plan<BinaryBackwardPlan>(m, "BinaryBackwardPlan");
  bind_plan<TernaryPlan>(m, "TernaryPlan");
  bind_plan<TernaryBackwardPlan>(m, "TernaryBackwardPlan");
  bind_plan<LerpPlan>(m, "LerpPlan");
  bind_plan<LerpBackwardPlan>(m, "LerpBackwardPlan");
  bind_plan<AddcmulPlan>(m, "AddcmulPlan");
  bind_plan<AddcmulBackwardPlan>(m, "AddcmulBackwardPlan");
  bind_plan<GatedPlan>(m, "GatedPlan");
  bind_plan<GatedBackwardPlan>(m, "GatedBackwardPlan");
  // reduce.hpp, scan.hpp, segment.hpp
  bind_plan<ReducePlan>(m, "ReducePlan");
  bind_plan<ReduceBackwardPlan>(m, "ReduceBackwardPlan");
  bind_plan<ScanPlan>(m, "ScanPlan");
  bind_plan<ScanBackwardPlan>(m, "ScanBackwardPlan");
  bind_plan<SegmentSumPlan>(m, "SegmentSumPlan");
  bind_plan<SegmentMeanPlan>(m, "SegmentMeanPlan");
  bind_plan<SegmentMaxPlan>(m, "SegmentMaxPlan");
  bind_plan<SegmentMinPlan>(m, "SegmentMinPlan");
  bind_plan<SegmentSumBackwardPlan>(m, "SegmentSumBackwardPlan");
  bind_plan<SegmentMeanBackwardPlan>(m, "SegmentMeanBackwardPlan");
  bind_plan<SegmentMaxBackwardPlan>(m, "SegmentMaxBackwardPlan");
  bind_plan<SegmentMinBackwardPlan>(m, "SegmentMinBackwardPlan");
  // copy.hpp, indexing.hpp
  bind_plan<CastPlan>(m, "CastPlan");
  bind_plan<FillPlan>(m, "FillPlan");
  bind_plan<GatherPlan>(m, "GatherPlan");
  bind_plan<GatherBackwardPlan>(m, "GatherBackwardPlan");
  bind_plan<ScatterAddPlan>(m, "ScatterAddPlan");
  bind_plan<IndexSelectPlan>(m, "IndexSelectPlan");
  bind_plan<IndexSelectBackwardPlan>(m, "IndexSelectBackwardPlan");
  bind_plan<EmbeddingPlan>(m, "EmbeddingPlan");
  bind_plan<EmbeddingBackwardPlan>(m, "EmbeddingBackwardPlan");
}

}  // namespace baracuda::python

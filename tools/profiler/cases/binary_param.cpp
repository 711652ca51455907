// Profiler cases of the BinaryParam family: lerp with a scalar weight and with a per-feature weight
// (shape [D], broadcast over the rows), forward and backward.
#include "harness/data.hpp"
#include "profiler/case_tensor.hpp"
#include "profiler/profiler.hpp"
#include "reference/binary_param_reference.hpp"

namespace baracuda::profiler {
namespace {

constexpr int64_t kMaxChecks = 1 << 20;

// The weight of the tensor cases: the output's last dim (per-feature interpolation).
Shape feature_shape(const Shape& shape) { return shape.rank == 0 ? Shape{} : Shape{shape.dims[shape.rank - 1]}; }

BinaryParamDescriptor descriptor(const CaseConfig& c, bool tensor_weight) {
  return {BinaryParamKind::lerp,
          c.dtype,
          c.shape,
          tensor_weight ? WeightMode::tensor : WeightMode::scalar,
          0.3,
          tensor_weight ? feature_shape(c.shape) : Shape{}};
}

class LerpForwardCase : public ProfilerCase {
 public:
  explicit LerpForwardCase(bool tensor_weight) : tensor_weight_(tensor_weight) {}

  double bytes_moved(const CaseConfig& c) const override {
    const double s = static_cast<double>(dtype_size(c.dtype));
    return s * (3.0 * c.shape.numel() + (tensor_weight_ ? feature_shape(c.shape).numel() : 0));
  }

  Status setup(const CaseConfig& c, int sets) override {
    config_ = c;
    desc_ = descriptor(c, tensor_weight_);
    Expected<BinaryParamPlan> plan = BinaryParamPlan::select(c.stream, desc_, c.preference);
    if (!plan) return plan.status();
    plan_ = *plan;
    if (Status s = a_.allocate_random(c.stream, c.dtype, c.shape, sets, c.seed); !s) return s;
    if (Status s = b_.allocate_random(c.stream, c.dtype, c.shape, sets, c.seed + 1); !s) return s;
    if (tensor_weight_)
      if (Status s = w_.allocate_random(c.stream, c.dtype, desc_.weight_shape, sets, c.seed + 2, -0.5, 1.5); !s)
        return s;
    return out_.allocate_output(c.stream, c.dtype, c.shape, sets);
  }

  KernelSku sku() const override { return plan_.sku(args(0)); }

  Status run(int set) override { return plan_.run(config_.stream, {}, args(set)); }

  Verification verify() override {
    if (Status s = out_.download_set0(); !s) return {false, 0, 0, 0, 0, s.to_string()};
    const int64_t d = desc_.weight_shape.numel();
    return verify_sampled(
        out_.numel(), kMaxChecks, harness::tolerance(config_.dtype), [&](int64_t i) { return out_.at(i); },
        [&](int64_t i) { return reference::lerp(a_.at(i), b_.at(i), tensor_weight_ ? w_.at(i % d) : desc_.weight); });
  }

 private:
  BinaryParamArgs args(int set) const {
    auto& self = const_cast<LerpForwardCase&>(*this);
    return {a_.ref(set), b_.ref(set), tensor_weight_ ? w_.ref(set) : AnyTensorRef{}, self.out_.mut(set)};
  }
  bool tensor_weight_;
  CaseConfig config_;
  BinaryParamDescriptor desc_;
  BinaryParamPlan plan_;
  CaseTensor a_, b_, w_, out_;
};

class LerpBackwardCase : public ProfilerCase {
 public:
  explicit LerpBackwardCase(bool tensor_weight) : tensor_weight_(tensor_weight) {}

  double bytes_moved(const CaseConfig& c) const override {
    const double s = static_cast<double>(dtype_size(c.dtype));
    const double n = static_cast<double>(c.shape.numel());
    // scalar: read dout, write da, db. tensor: also read a, b, w and write dweight.
    return tensor_weight_ ? s * (5.0 * n + 2.0 * feature_shape(c.shape).numel()) : s * 3.0 * n;
  }

  Status setup(const CaseConfig& c, int sets) override {
    config_ = c;
    desc_ = descriptor(c, tensor_weight_);
    Expected<BinaryParamBackwardPlan> plan = BinaryParamBackwardPlan::select(c.stream, desc_, c.preference);
    if (!plan) return plan.status();
    plan_ = *plan;
    Expected<harness::Buffer> ws = allocate_workspace(c.stream, plan_.workspace_size());
    if (!ws) return ws.status();
    workspace_ = std::move(*ws);
    if (Status s = dout_.allocate_random(c.stream, c.dtype, c.shape, sets, c.seed); !s) return s;
    if (tensor_weight_) {
      if (Status s = a_.allocate_random(c.stream, c.dtype, c.shape, sets, c.seed + 1); !s) return s;
      if (Status s = b_.allocate_random(c.stream, c.dtype, c.shape, sets, c.seed + 2); !s) return s;
      if (Status s = w_.allocate_random(c.stream, c.dtype, desc_.weight_shape, sets, c.seed + 3, -0.5, 1.5); !s)
        return s;
      if (Status s = dw_.allocate_output(c.stream, c.dtype, desc_.weight_shape, sets); !s) return s;
    }
    if (Status s = da_.allocate_output(c.stream, c.dtype, c.shape, sets); !s) return s;
    return db_.allocate_output(c.stream, c.dtype, c.shape, sets);
  }

  KernelSku sku() const override { return plan_.sku(args(0)); }

  Status run(int set) override { return plan_.run(config_.stream, {workspace_.data(), workspace_.size()}, args(set)); }

  Verification verify() override {
    for (CaseTensor* t : {&da_, &db_})
      if (Status s = t->download_set0(); !s) return {false, 0, 0, 0, 0, s.to_string()};
    const double tol = harness::tolerance(config_.dtype);
    const int64_t d = desc_.weight_shape.numel();
    auto w = [&](int64_t i) { return tensor_weight_ ? w_.at(i % d) : desc_.weight; };
    std::vector<Verification> parts{verify_sampled(
                                        da_.numel(), kMaxChecks, tol, [&](int64_t i) { return da_.at(i); },
                                        [&](int64_t i) { return reference::lerp_da(dout_.at(i), w(i)); }),
                                    verify_sampled(
                                        db_.numel(), kMaxChecks, tol, [&](int64_t i) { return db_.at(i); },
                                        [&](int64_t i) { return reference::lerp_db(dout_.at(i), w(i)); })};
    if (tensor_weight_) {
      if (Status s = dw_.download_set0(); !s) return {false, 0, 0, 0, 0, s.to_string()};
      // Column sums, judged against the sum of their terms' magnitudes (as in the tests).
      const int64_t rows = dout_.numel() / std::max<int64_t>(d, 1);
      double magnitude = 0;
      auto column_sum = [&](int64_t k) {
        double sum = 0;
        magnitude = 0;
        for (int64_t r = 0; r < rows; ++r) {
          const double term = reference::lerp_dw(dout_.at(r * d + k), a_.at(r * d + k), b_.at(r * d + k));
          sum += term;
          magnitude += std::fabs(term);
        }
        return sum;
      };
      parts.push_back(verify_sampled(
          d, std::max<int64_t>(1, kMaxChecks / std::max<int64_t>(rows, 1)), tol, [&](int64_t k) { return dw_.at(k); },
          column_sum, [&](int64_t) { return magnitude; }));
    }
    return combine(parts);
  }

 private:
  BinaryParamBackwardArgs args(int set) const {
    auto& self = const_cast<LerpBackwardCase&>(*this);
    if (!tensor_weight_) return {dout_.ref(set), {}, {}, {}, self.da_.mut(set), self.db_.mut(set), {}};
    return {dout_.ref(set),    a_.ref(set),       b_.ref(set),      w_.ref(set),
            self.da_.mut(set), self.db_.mut(set), self.dw_.mut(set)};
  }
  bool tensor_weight_;
  CaseConfig config_;
  BinaryParamDescriptor desc_;
  BinaryParamBackwardPlan plan_;
  harness::Buffer workspace_;
  CaseTensor dout_, a_, b_, w_, da_, db_, dw_;
};

std::vector<Shape> standard_shapes(Backend backend) {
  // 2^26 elements on the GPU (far past L2), 2^22 on the CPU; plus an odd size off the vector width.
  if (backend == Backend::cuda) return {{16384, 4096}, {1000, 1001}};
  return {{1024, 4096}, {1000, 1001}};
}

template <class Plan>
std::vector<KernelSku> skus_of(const Stream& stream, DType dtype, bool tensor_weight) {
  CaseConfig c;
  c.dtype = dtype;
  c.shape = {1024, 1024};
  const BinaryParamDescriptor desc = descriptor(c, tensor_weight);
  std::vector<KernelSku> out;
  for (const char* variant : {"", "vectorized", "contiguous", "strided", "broadcast_reduce"}) {
    PlanPreference pref;
    pref.variant = variant;
    if (Expected<Plan> plan = Plan::select(stream, desc, pref)) {
      const KernelSku sku = plan->sku();
      bool seen = false;
      for (const KernelSku& k : out) seen = seen || k.to_string() == sku.to_string();
      if (!seen) out.push_back(sku);
    }
  }
  return out;
}

const std::vector<DType> kFloats = {DType::f32, DType::bf16, DType::f16, DType::f64};

const bool registered = [] {
  register_op({"lerp", "binary_param", "torch.lerp(a, b, 0.3)", kFloats, standard_shapes,
               [] { return std::make_unique<LerpForwardCase>(false); },
               [](const Stream& s, DType d) { return skus_of<BinaryParamPlan>(s, d, false); }});
  register_op({"lerp_backward", "binary_param", "autograd of torch.lerp(a, b, 0.3)", kFloats, standard_shapes,
               [] { return std::make_unique<LerpBackwardCase>(false); },
               [](const Stream& s, DType d) { return skus_of<BinaryParamBackwardPlan>(s, d, false); }});
  register_op({"lerp_feature_weight", "binary_param", "torch.lerp(a, b, w[D])", kFloats, standard_shapes,
               [] { return std::make_unique<LerpForwardCase>(true); },
               [](const Stream& s, DType d) { return skus_of<BinaryParamPlan>(s, d, true); }});
  register_op({"lerp_feature_weight_backward", "binary_param", "autograd of torch.lerp(a, b, w[D])", kFloats,
               standard_shapes, [] { return std::make_unique<LerpBackwardCase>(true); },
               [](const Stream& s, DType d) { return skus_of<BinaryParamBackwardPlan>(s, d, true); }});
  return true;
}();

}  // namespace
}  // namespace baracuda::profiler

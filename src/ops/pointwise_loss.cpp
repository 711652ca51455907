// The pointwise loss plans (forward and backward): validation, kernel choice and the element walk,
// shared by both backends, as hooks of the one plan life cycle (ops/plan_impl.hpp). On CUDA, select
// also compiles the plan's kernels (NVRTC, cached), so run only launches.
#include <cmath>
#include <string>
#include <vector>

#include "baracuda/ops/loss.hpp"
#include "common/checked.hpp"
#include "common/elementwise.hpp"
#include "ops/arg_views.hpp"
#include "ops/pointwise_loss_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda {

std::string_view pointwise_loss_name(PointwiseLossKind kind) {
  switch (kind) {
    case PointwiseLossKind::mse:
      return "mse";
    case PointwiseLossKind::l1:
      return "l1";
    case PointwiseLossKind::smooth_l1:
      return "smooth_l1";
    case PointwiseLossKind::huber:
      return "huber";
    case PointwiseLossKind::bce:
      return "bce";
    case PointwiseLossKind::bce_with_logits:
      return "bce_with_logits";
    case PointwiseLossKind::kl_div:
      return "kl_div";
  }
  return "?";
}

}  // namespace baracuda

namespace baracuda::detail {
namespace {

enum class PointwiseLossVariant : int { chunks };
constexpr VariantInfo kVariants[] = {
    {"chunks", true, true, true,
     "elementwise (none, the backward); sum and mean: chunks of 8192 elements summed in order, then the chunks in "
     "order"},
};

constexpr InPlace kBackwardInPlace[] = {{"dinput", "input"}, {"dinput", "dloss"}};

// The sum and mean's partials: a compute-type value a chunk.
CheckedSize workspace_bytes(const PointwiseLossDescriptor& d, bool backward) {
  if (backward || d.reduction == LossReduction::none) return CheckedSize(0);
  return CheckedSize(pointwise_loss_chunks(d.shape.numel())) * static_cast<int64_t>(dtype_size(acc_dtype(d.dtype)));
}

template <bool kBackward>
struct PointwiseLossHooks {
  using Descriptor = PointwiseLossDescriptor;
  using Args = std::conditional_t<kBackward, PointwiseLossBackwardArgs, PointwiseLossArgs>;
  static constexpr std::string_view kPlan = kBackward ? "PointwiseLossBackwardPlan" : "PointwiseLossPlan";
  static constexpr std::string_view kOp = kBackward ? "pointwise_loss_backward" : "pointwise_loss";
  static constexpr OpSchema kSchema{kPlan, kOp, "loss", kFloats, {}, kVariants};

  static constexpr auto fields() {
    if constexpr (kBackward)
      return std::array<ArgField<Args>, 6>{{{"dloss", &Args::dloss},
                                            {"input", &Args::input},
                                            {"target", &Args::target},
                                            {"weight", &Args::weight},
                                            {"pos_weight", &Args::pos_weight},
                                            {"dinput", nullptr, &Args::dinput}}};
    else
      return std::array<ArgField<Args>, 5>{{{"input", &Args::input},
                                            {"target", &Args::target},
                                            {"weight", &Args::weight},
                                            {"pos_weight", &Args::pos_weight},
                                            {"loss", nullptr, &Args::loss}}};
  }
  static constexpr auto kFields = fields();

  static Status check(const Descriptor& d) {
    if (Status s = check_shape(kPlan, "descriptor.shape", d.shape); !s) return s;
    if (static_cast<int>(d.kind) > static_cast<int>(PointwiseLossKind::kl_div))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.kind",
                        std::to_string(static_cast<int>(d.kind)) + " is no PointwiseLossKind");
    if (static_cast<int>(d.reduction) > static_cast<int>(LossReduction::mean))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.reduction",
                        std::to_string(static_cast<int>(d.reduction)) + " is not none, sum or mean");
    const bool huber = d.kind == PointwiseLossKind::huber;
    if (!std::isfinite(d.beta) || d.beta < 0 || (huber && d.beta == 0))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.beta",
                        std::to_string(d.beta) +
                            (huber ? " is not a finite number > 0 (huber's delta)" : " is not a finite number >= 0"));
    const bool bce = d.kind == PointwiseLossKind::bce || d.kind == PointwiseLossKind::bce_with_logits;
    if (d.has_weight && !bce)
      return plan_error(
          StatusCode::invalid_problem, kPlan, "descriptor.has_weight",
          "a weight is bce's and bce_with_logits', not " + std::string(pointwise_loss_name(d.kind)) + "'s");
    if (d.has_pos_weight && d.kind != PointwiseLossKind::bce_with_logits)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.has_pos_weight",
                        "a pos_weight is bce_with_logits', not " + std::string(pointwise_loss_name(d.kind)) + "'s");
    if (!workspace_bytes(d, kBackward).below(kMaxBytes))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.shape",
                        d.shape.to_string() + " needs a workspace past the limit of every buffer");
    return Status::ok();
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    const Shape loss = d.reduction == LossReduction::none ? d.shape : Shape{};
    auto set = [&](int i, const Shape& shape, bool present = true) {
      specs[i].dtype = d.dtype;
      specs[i].shape = shape;
      specs[i].present = present;
    };
    const int first = kBackward ? 1 : 0;
    if constexpr (kBackward) set(0, loss);  // dloss
    set(first, d.shape);                    // input
    set(first + 1, d.shape);                // target
    set(first + 2, d.shape, d.has_weight);
    set(first + 3, d.shape, d.has_pos_weight);
    set(first + 4, kBackward ? d.shape : loss);  // dinput, loss
  }

  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int>) {
    PlanChoice c;
    c.variant = static_cast<int>(PointwiseLossVariant::chunks);
    c.workspace = static_cast<size_t>(workspace_bytes(d, kBackward).saturated());
    if (t.backend == Backend::cpu) return c;
#if BARACUDA_HAS_CUDA
    Expected<const void*> kernels = cuda::pointwise_loss_kernels(t, d.dtype, kPlan);
    if (!kernels) return kernels.status();
    c.kernels = *kernels;
#endif
    return c;
  }

  static bool nothing_to_do(const Descriptor& d) {
    // An empty input still gives a sum (0) and a mean (NaN).
    return d.shape.numel() == 0 && (kBackward || d.reduction == LossReduction::none);
  }

  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = acc_dtype(d.dtype);
    return g;
  }

  static std::vector<AnyTensorRef> views_of(const Args& a) { return given_views<Args>(kFields, a); }

  static KernelShape kernel(const PlanTarget&, const Descriptor&, const PlanChoice& c, const Args* a) {
    KernelShape k{std::string(kVariants[c.variant].name), Layout::contiguous};
    if (a) k.layout = layout_of(views_of(*a));
    return k;
  }

  // dinput may be the input or dloss exactly: each element is read, then written, by one thread.
  static constexpr std::span<const InPlace> kInPlace =
      kBackward ? std::span<const InPlace>(kBackwardInPlace) : std::span<const InPlace>();

  static Args used(const Descriptor& d, const Args& a) { return without_unused_views<PointwiseLossHooks>(d, a); }

  static PointwiseLossProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    PointwiseLossProblem p;
    p.dtype = d.dtype;
    p.backward = kBackward;
    device::PointwiseLossParams& q = p.params;
    const bool none = d.reduction == LossReduction::none;
    AnyTensorRef out, dloss;
    if constexpr (kBackward) {
      q.input = a.input.data, q.target = a.target.data, q.dloss = a.dloss.data, q.out = a.dinput.data;
      out = a.dinput;
      if (none) dloss = a.dloss;
    } else {
      q.input = a.input.data, q.target = a.target.data, q.out = a.loss.data;
      if (none) out = a.loss;
    }
    q.partial = ctx.workspace.data;
    q.n = d.shape.numel();
    q.chunk = kPointwiseLossChunk;
    q.chunks = pointwise_loss_chunks(q.n);
    q.kind = static_cast<int>(d.kind);
    q.reduction = static_cast<int>(d.reduction);
    q.log_target = d.log_target;
    q.beta = d.beta;
    const AnyTensorRef weight = d.has_weight ? a.weight : AnyTensorRef{};
    const AnyTensorRef pos_weight = d.has_pos_weight ? a.pos_weight : AnyTensorRef{};
    q.weight = weight.data, q.pos_weight = pos_weight.data;
    // The walk over the shape (kPointwiseLossTensors' order); a view not in the walk keeps strides 0.
    const AnyTensorRef views[kPointwiseLossTensors] = {a.input, a.target, out, dloss, weight, pos_weight};
    Strides strides[kPointwiseLossTensors] = {};
    const Strides* walks[kPointwiseLossTensors];
    for (int t = 0; t < kPointwiseLossTensors; ++t) {
      if (views[t].data) strides[t] = views[t].strides;
      walks[t] = &strides[t];
    }
    const Walker<kPointwiseLossTensors> w = make_walker<kPointwiseLossTensors>(d.shape, walks);
    q.walk.rank = w.rank;
    bool unit = w.rank <= 1;
    for (int k = 0; k < kMaxRank; ++k) {
      q.walk.sizes[k] = w.sizes[k];
      for (int t = 0; t < kPointwiseLossTensors; ++t) q.walk.strides[t][k] = w.strides[t][k];
    }
    if (w.rank == 1)
      for (int t = 0; t < kPointwiseLossTensors; ++t)
        if (views[t].data && w.strides[t][0] != 1) unit = false;
    q.contiguous = unit;
    p.walk = w;
    return p;
  }
};

}  // namespace

template <>
struct OpHooks<PointwiseLossOp> : PointwiseLossHooks<false> {};
template <>
struct OpHooks<PointwiseLossBackwardOp> : PointwiseLossHooks<true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<PointwiseLossOp>;
template class Plan<PointwiseLossBackwardOp>;
}  // namespace baracuda

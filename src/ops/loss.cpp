// The cross-entropy plans (forward and backward): validation, kernel choice and the row walk, shared
// by both backends, as hooks of the one plan life cycle (ops/plan_impl.hpp). On CUDA, select also
// compiles the plan's kernels (cuda::cross_entropy_kernels: NVRTC, cached), so run only launches.
#include "baracuda/ops/loss.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "common/checked.hpp"
#include "cuda/device/cross_entropy.h"
#include "ops/arg_views.hpp"
#include "ops/loss_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda {

std::string_view loss_reduction_name(LossReduction reduction) {
  switch (reduction) {
    case LossReduction::none:
      return "none";
    case LossReduction::sum:
      return "sum";
    case LossReduction::mean:
      return "mean";
  }
  return "?";
}

}  // namespace baracuda

namespace baracuda::detail {

Shape row_shape(const CrossEntropyDescriptor& d) {
  Shape s;
  const int cd = class_dim(d);
  for (int k = 0; k < d.shape.rank; ++k)
    if (k != cd) s.dims[s.rank++] = d.shape.dims[k];
  return s;
}

LossGeometry loss_geometry(const CrossEntropyDescriptor& d, const AnyTensorRef& logits, const AnyTensorRef& dlogits,
                           std::initializer_list<AnyTensorRef> row_views) {
  const int rank = d.shape.rank, cd = class_dim(d);
  LossGeometry g;
  g.rows = row_shape(d).numel();
  g.classes = class_count(d);
  bool keep[kMaxRank] = {};
  for (int k = 0; k < rank; ++k) keep[k] = k != cd;
  // Every view's strides laid along the logits' dims (an absent view's are zero).
  Strides strides[kLossRowTensors] = {};
  if (logits.data) strides[0] = logits.strides, g.class_stride = logits.strides[cd];
  if (dlogits.data) strides[1] = dlogits.strides, g.dclass_stride = dlogits.strides[cd];
  int t = 2;
  for (const AnyTensorRef& v : row_views) {
    if (v.data && t == 2 && d.soft_targets) {
      strides[t] = v.strides;
      g.target_class_stride = v.strides[cd];
    } else if (v.data) {
      for (int k = 0, j = 0; k < rank; ++k)
        if (k != cd) strides[t][k] = v.strides[j++];
    }
    ++t;
  }
  const Strides* walks[kLossRowTensors];
  for (int k = 0; k < kLossRowTensors; ++k) walks[k] = &strides[k];
  g.row = make_walker<kLossRowTensors>(d.shape, walks, keep);
  return g;
}

Status check_cross_entropy_options(std::string_view plan, LossReduction reduction, double label_smoothing,
                                   double z_loss) {
  if (static_cast<int>(reduction) > static_cast<int>(LossReduction::mean))
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.reduction",
                      std::to_string(static_cast<int>(reduction)) + " is not none, sum or mean");
  if (!(label_smoothing >= 0 && label_smoothing <= 1))
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.label_smoothing",
                      std::to_string(label_smoothing) + " is outside [0, 1]");
  if (!(z_loss >= 0) || !std::isfinite(z_loss))
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.z_loss",
                      std::to_string(z_loss) + " is not a finite number >= 0");
  return Status::ok();
}

namespace {

// In LossVariant order.
enum class LossVariant : int { blocks, rows };
constexpr VariantInfo kVariants[] = {
    {"blocks", true, false, true,
     "a block a row (a row of more than 32768 classes: a block per 32768, merged in order); one pass, online "
     "logsumexp"},
    {"rows", true, true, false, "CPU: rows in parallel, each row in order by one thread"},
};

constexpr DType kIndexTypes[] = {DType::i32, DType::i64};

// The sum and mean reductions' sizes, checked: [rows][4] terms and [rows][chunks][kRowValues] pieces.
CheckedSize workspace_bytes(const CrossEntropyDescriptor& d, bool backward) {
  const CheckedSize acc = static_cast<int64_t>(dtype_size(acc_dtype(d.dtype)));
  // The totals (W, sum(w_t), count), and each row's Q for soft targets.
  if (backward) return CheckedSize(256) + (d.soft_targets ? CheckedSize(row_shape(d).numel()) * acc : CheckedSize(0));
  const int64_t rows = row_shape(d).numel(), chunks = loss_chunks(class_count(d));
  CheckedSize bytes = 0;
  if (d.reduction != LossReduction::none) bytes += (CheckedSize(rows) * 4 * acc + 255);
  if (chunks > 1 && !d.log_probs) bytes += CheckedSize(rows) * chunks * device::kRowValues * acc;
  return bytes;
}

}  // namespace

size_t cross_entropy_workspace(const CrossEntropyDescriptor& d, bool backward) {
  return static_cast<size_t>(workspace_bytes(d, backward).saturated());
}

namespace {

constexpr InPlace kCrossEntropyBackwardInPlace[] = {{"dlogits", "logits"}};

template <bool kBackward>
struct CrossEntropyHooks {
  using Descriptor = CrossEntropyDescriptor;
  using Args = std::conditional_t<kBackward, CrossEntropyBackwardArgs, CrossEntropyArgs>;
  static constexpr std::string_view kPlan = kBackward ? "CrossEntropyBackwardPlan" : "CrossEntropyPlan";
  static constexpr std::string_view kOp = kBackward ? "cross_entropy_backward" : "cross_entropy";
  static constexpr OpSchema kSchema{kPlan, kOp, "loss", kFloats, kIndexTypes, kVariants};

  static constexpr auto fields() {
    if constexpr (kBackward)
      return std::array<ArgField<Args>, 6>{{{"dloss", &Args::dloss},
                                            {"logits", &Args::logits},
                                            {"targets", &Args::targets},
                                            {"weight", &Args::weight},
                                            {"lse", &Args::lse},
                                            {"dlogits", nullptr, &Args::dlogits}}};
    else
      return std::array<ArgField<Args>, 5>{{{"logits", &Args::logits},
                                            {"targets", &Args::targets},
                                            {"weight", &Args::weight},
                                            {"loss", nullptr, &Args::loss},
                                            {"lse", nullptr, &Args::lse}}};
  }
  static constexpr auto kFields = fields();

  static Status check(const Descriptor& d) {
    if (Status s = check_shape(kPlan, "descriptor.shape", d.shape); !s) return s;
    if (d.shape.rank < 1)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.shape.rank",
                        "the logits need a class dim: rank 0 is outside 1.." + std::to_string(kMaxRank));
    if (class_count(d) == 0 && row_shape(d).numel() > 0)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.shape[" + std::to_string(class_dim(d)) + "]",
                        "0 classes: every target would be out of range");
    if (Status s = check_cross_entropy_options(kPlan, d.reduction, d.label_smoothing, d.z_loss); !s) return s;
    if (d.log_probs && d.label_smoothing != 0)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.label_smoothing",
                        "must be 0 with log_probs (F.nll_loss smooths nothing)");
    if (d.log_probs && d.soft_targets)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.soft_targets",
                        "must be false with log_probs (F.nll_loss takes class indices)");
    if (d.log_probs && d.z_loss != 0)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.z_loss",
                        "must be 0 with log_probs (no logsumexp to penalize)");
    const DType w = weight_dtype_of(d);
    if (w != d.dtype && w != DType::f32)
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.weight_dtype",
                        std::string(valid_dtype(w) ? dtype_name(w) : "?") + " is neither dtype (" +
                            std::string(dtype_name(d.dtype)) + ") nor f32");
    if (!workspace_bytes(d, kBackward).below(kMaxBytes))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.shape",
                        d.shape.to_string() + " needs a workspace past the limit of every buffer");
    return Status::ok();
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    const Shape rows = row_shape(d), weight{class_count(d)};
    const Shape loss = d.reduction == LossReduction::none ? rows : Shape{};
    auto set = [&](int i, DType dtype, const Shape& shape, bool present, bool optional = false) {
      specs[i].dtype = dtype;
      specs[i].shape = shape;
      specs[i].present = present;
      specs[i].optional = optional;
    };
    const int target = 1 + kBackward;
    if constexpr (kBackward) {
      set(0, d.dtype, loss, true);                       // dloss
      set(1, d.dtype, d.shape, !d.log_probs);            // logits (nll's gradient does not read them)
      set(3, weight_dtype_of(d), weight, d.has_weight);  // weight
      set(4, acc_dtype(d.dtype), rows, !d.log_probs);    // lse
      set(5, d.dtype, d.shape, true);                    // dlogits
    } else {
      set(0, d.dtype, d.shape, true);                        // logits
      set(2, weight_dtype_of(d), weight, d.has_weight);      // weight
      set(3, d.dtype, loss, true);                           // loss
      set(4, acc_dtype(d.dtype), rows, !d.log_probs, true);  // lse
    }
    if (d.soft_targets) {
      set(target, d.dtype, d.shape, true);  // targets: probabilities
    } else {
      set(target, d.index_dtype, rows, true);  // targets: class indices
      specs[target].index_bound = class_count(d);
    }
  }

  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int> forced) {
    PlanChoice c;
    if (t.backend == Backend::cpu) {
      c.variant = static_cast<int>(LossVariant::rows);
      // sum and mean: the rows' terms, then added in row order (cpu/loss.cpp).
      if (!kBackward && d.reduction != LossReduction::none)
        c.workspace = static_cast<size_t>(row_shape(d).numel()) * 4 * dtype_size(acc_dtype(d.dtype));
      return c;
    }
    c.variant = forced.value_or(static_cast<int>(LossVariant::blocks));
    c.workspace = cross_entropy_workspace(d, kBackward);
#if BARACUDA_HAS_CUDA
    Expected<const void*> kernels = cuda::cross_entropy_kernels(t, d, kBackward, kPlan);
    if (!kernels) return kernels.status();
    c.kernels = *kernels;
#endif
    return c;
  }

  static bool nothing_to_do(const Descriptor& d) {
    // Zero rows still give a sum (0) and a mean (NaN); the backward of zero rows writes nothing.
    return row_shape(d).numel() == 0 && (kBackward || d.reduction == LossReduction::none);
  }

  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = acc_dtype(d.dtype);
    return g;
  }

  static std::vector<AnyTensorRef> views_of(const Args& a) { return given_views<Args>(kFields, a); }

  static KernelShape kernel(const PlanTarget&, const Descriptor& d, const PlanChoice& c, const Args* a) {
    KernelShape k{std::string(kVariants[c.variant].name), Layout::contiguous};
    if (c.variant == static_cast<int>(LossVariant::blocks) && !kBackward && d.log_probs)
      k.variant += ".nll";  // a thread a row
    else if (c.variant == static_cast<int>(LossVariant::blocks) && loss_chunks(class_count(d)) > 1)
      k.variant += ".chunked";
    if (d.soft_targets) k.variant += ".soft";
    if (a) k.layout = layout_of(views_of(*a));
    return k;
  }

  // The overlap rule (ops/validate.hpp) refuses every output over an input but this pair: dlogits
  // may be the logits exactly (each element is read, then written, by one thread).
  static constexpr std::span<const InPlace> kInPlace =
      kBackward ? std::span<const InPlace>(kCrossEntropyBackwardInPlace) : std::span<const InPlace>();

  // The args with every view the descriptor does not use cleared (ops/arg_views.hpp).
  static Args used(const Descriptor& d, const Args& a) { return without_unused_views<CrossEntropyHooks>(d, a); }

  static auto problem(const LaunchContext&, const Descriptor& d, const Args& args) {
    const Args a = used(d, args);
    const bool none = d.reduction == LossReduction::none;
    if constexpr (kBackward) {
      return CrossEntropyBackwardProblem{
          d, weight_dtype_of(d), a,
          loss_geometry(d, a.logits, a.dlogits, {a.targets, none ? a.dloss : AnyTensorRef{}, a.lse})};
    } else {
      return CrossEntropyForwardProblem{
          d, weight_dtype_of(d), a,
          loss_geometry(d, a.logits, AnyTensorRef{}, {a.targets, none ? AnyTensorRef(a.loss) : AnyTensorRef{}, a.lse})};
    }
  }
};

}  // namespace

template <>
struct OpHooks<CrossEntropyOp> : CrossEntropyHooks<false> {};
template <>
struct OpHooks<CrossEntropyBackwardOp> : CrossEntropyHooks<true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<CrossEntropyOp>;
template class Plan<CrossEntropyBackwardOp>;
}  // namespace baracuda

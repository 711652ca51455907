// The batch norm plans (BatchNormPlan, BatchNormBackwardPlan): validation, the geometry shared by
// both backends, as hooks of the one plan life cycle (ops/plan_impl.hpp). On CUDA, select also
// compiles the plan's kernels (cuda::batch_norm_kernels: NVRTC, cached), so run only launches.
#include <cmath>
#include <string>
#include <vector>

#include "ops/arg_views.hpp"
#include "ops/batch_norm_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda::detail {

BatchNormGeometry batch_norm_geometry(const BatchNormDescriptor& d, std::initializer_list<AnyTensorRef> full,
                                      std::initializer_list<AnyTensorRef> channel) {
  BatchNormGeometry g;
  const Shape& s = d.shape;
  g.channels = s.dims[d.channel_dim];
  g.elements = g.channels > 0 ? s.numel() / g.channels : 0;
  Strides strides[kBatchNormViews] = {};
  int t = 0;
  for (const AnyTensorRef& v : full) {
    if (v.data) {
      strides[t] = v.strides;
      g.c_stride[t] = v.strides[d.channel_dim];
    }
    ++t;
  }
  const Strides* pointers[kBatchNormViews];
  for (int k = 0; k < kBatchNormViews; ++k) pointers[k] = &strides[k];
  bool others[kMaxRank] = {};
  for (int k = 0; k < s.rank; ++k) others[k] = k != d.channel_dim;
  g.walk = make_walker<kBatchNormViews>(s, pointers, others);
  int c = 0;
  for (const AnyTensorRef& v : channel) {
    if (v.data) g.channel_stride[c] = v.strides[0];
    ++c;
  }
  return g;
}

namespace {

Shape channel_shape(const BatchNormDescriptor& d) {
  const bool ok = d.channel_dim >= 0 && d.channel_dim < d.shape.rank;
  return Shape{ok ? d.shape.dims[d.channel_dim] : 0};
}
DType weight_dtype_of(const BatchNormDescriptor& d) { return d.weight_dtype.value_or(d.dtype); }

constexpr VariantInfo kVariants[] = {
    {"chunks", true, false, true,
     "a block a (channel, chunk): the chunks' moments (or sums) merged in order by a second kernel, which writes"},
    {"channels", true, true, false, "CPU: channels in parallel, two passes for the statistics"},
};
enum class BatchNormVariant : int { chunks, channels };

constexpr InPlace kForwardInPlace[] = {{"y", "x"}};
constexpr InPlace kBackwardInPlace[] = {{"dx", "dy"}, {"dx", "x"}};

template <bool kBackward>
struct BatchNormHooks {
  using Descriptor = BatchNormDescriptor;
  using Args = std::conditional_t<kBackward, BatchNormBackwardArgs, BatchNormArgs>;
  static constexpr std::string_view kPlan = kBackward ? "BatchNormBackwardPlan" : "BatchNormPlan";
  static constexpr std::string_view kOp = kBackward ? "batch_norm_backward" : "batch_norm";
  static constexpr OpSchema kSchema{kPlan, kOp, "normalization", kFloats, {}, kVariants};

  static constexpr auto fields() {
    if constexpr (kBackward)
      return std::array<ArgField<Args>, 10>{{{"dy", &Args::dy},
                                             {"x", &Args::x},
                                             {"weight", &Args::weight},
                                             {"save_mean", &Args::save_mean},
                                             {"save_rstd", &Args::save_rstd},
                                             {"running_mean", &Args::running_mean},
                                             {"running_var", &Args::running_var},
                                             {"dx", nullptr, &Args::dx},
                                             {"dweight", nullptr, &Args::dweight},
                                             {"dbias", nullptr, &Args::dbias}}};
    else
      return std::array<ArgField<Args>, 8>{{{"x", &Args::x},
                                            {"weight", &Args::weight},
                                            {"bias", &Args::bias},
                                            {"y", nullptr, &Args::y},
                                            {"running_mean", nullptr, &Args::running_mean},
                                            {"running_var", nullptr, &Args::running_var},
                                            {"save_mean", nullptr, &Args::save_mean},
                                            {"save_rstd", nullptr, &Args::save_rstd}}};
  }
  static constexpr auto kFields = fields();
  static constexpr std::span<const InPlace> kInPlace =
      kBackward ? std::span<const InPlace>(kBackwardInPlace) : kForwardInPlace;

  static Status check(const Descriptor& d) {
    if (Status s = check_shape(kPlan, "descriptor.shape", d.shape); !s) return s;
    if (d.shape.rank < 1)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.shape.rank",
                        "a batch norm needs a channel dim: rank 0 is outside 1.." + std::to_string(kMaxRank));
    if (d.channel_dim < 0 || d.channel_dim >= d.shape.rank)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.channel_dim",
                        std::to_string(d.channel_dim) + " is outside 0.." + std::to_string(d.shape.rank - 1));
    if (!(d.eps > 0) || !std::isfinite(d.eps))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.eps",
                        std::to_string(d.eps) + " is not a positive finite number");
    if (!(d.momentum >= 0 && d.momentum <= 1))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.momentum",
                        std::to_string(d.momentum) + " is outside [0, 1]");
    if (!d.training && !d.running_stats)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.running_stats",
                        "inference (training = false) normalizes by the running statistics: running_stats must be set");
    const int64_t channels = d.shape.dims[d.channel_dim];
    if (d.training && channels > 0 && d.shape.numel() <= channels)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.shape",
                        "training needs more than one value a channel (" + d.shape.to_string() + ")");
    const DType w = weight_dtype_of(d);
    if (w != d.dtype && w != DType::f32)
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.weight_dtype",
                        std::string(valid_dtype(w) ? dtype_name(w) : "?") + " is neither dtype (" +
                            std::string(dtype_name(d.dtype)) + ") nor f32");
    return Status::ok();
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    const DType w = weight_dtype_of(d), stats = acc_dtype(d.dtype);
    const Shape channels = channel_shape(d);
    auto set = [&](int i, DType dtype, const Shape& shape, bool present, bool optional = false) {
      specs[i].dtype = dtype;
      specs[i].shape = shape;
      specs[i].present = present;
      specs[i].optional = optional;
    };
    if constexpr (kBackward) {
      set(0, d.dtype, d.shape, true);           // dy
      set(1, d.dtype, d.shape, true);           // x
      set(2, w, channels, d.has_weight);        // weight
      set(3, stats, channels, d.training);      // save_mean
      set(4, stats, channels, d.training);      // save_rstd
      set(5, w, channels, !d.training);         // running_mean
      set(6, w, channels, !d.training);         // running_var
      set(7, d.dtype, d.shape, true, true);     // dx
      set(8, w, channels, d.has_weight, true);  // dweight
      set(9, w, channels, d.has_bias, true);    // dbias
    } else {
      set(0, d.dtype, d.shape, true);             // x
      set(1, w, channels, d.has_weight);          // weight
      set(2, w, channels, d.has_bias);            // bias
      set(3, d.dtype, d.shape, true);             // y
      set(4, w, channels, d.running_stats);       // running_mean
      set(5, w, channels, d.running_stats);       // running_var
      set(6, stats, channels, d.training, true);  // save_mean
      set(7, stats, channels, d.training, true);  // save_rstd
      // Training reads the running statistics and writes them back updated.
      specs[4].accumulates = specs[5].accumulates = true;
    }
  }

  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int>) {
    PlanChoice c;
    if (t.backend == Backend::cpu) {
      c.variant = static_cast<int>(BatchNormVariant::channels);
      return c;
    }
    c.variant = static_cast<int>(BatchNormVariant::chunks);
    // Each (channel, chunk)'s moments (3 values) or the backward's two sums.
    BatchNormGeometry g;
    g.channels = d.shape.dims[d.channel_dim];
    g.elements = g.channels > 0 ? d.shape.numel() / g.channels : 0;
    batch_norm_chunks(g, t.sm_count, 16 / static_cast<int64_t>(dtype_size(d.dtype)));
    c.workspace = static_cast<size_t>((kBackward ? 2 : 3) * g.channels * g.chunks) * dtype_size(acc_dtype(d.dtype));
#if BARACUDA_HAS_CUDA
    Expected<const void*> kernels = cuda::batch_norm_kernels(t, d.dtype, weight_dtype_of(d), kBackward, kPlan);
    if (!kernels) return kernels.status();
    c.kernels = *kernels;
#endif
    return c;
  }

  static bool nothing_to_do(const Descriptor& d) {
    // No channels: nothing. Channels of no elements (inference alone: training refuses them): the
    // forward has nothing to write, the backward still writes dweight and dbias (zeros).
    return d.shape.dims[d.channel_dim] == 0 || (!kBackward && d.shape.numel() == 0);
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

  static Args used(const Descriptor& d, const Args& a) { return without_unused_views<BatchNormHooks>(d, a); }

  static auto problem(const LaunchContext& ctx, const Descriptor& d, const Args& args) {
    const Args a = used(d, args);
    auto with_chunks = [&](BatchNormGeometry g) {
      batch_norm_chunks(g, ctx.target.sm_count, 16 / static_cast<int64_t>(dtype_size(d.dtype)));
      return g;
    };
    if constexpr (kBackward)
      return BatchNormBackwardProblem{
          d, weight_dtype_of(d), a,
          with_chunks(batch_norm_geometry(
              d, {a.dy, a.x, a.dx},
              {a.weight, a.save_mean, a.save_rstd, a.running_mean, a.running_var, a.dweight, a.dbias}))};
    else
      return BatchNormForwardProblem{
          d, weight_dtype_of(d), a,
          with_chunks(batch_norm_geometry(
              d, {a.x, a.y, {}}, {a.weight, a.bias, a.running_mean, a.running_var, a.save_mean, a.save_rstd}))};
  }
};

}  // namespace

template <>
struct OpHooks<BatchNormOp> : BatchNormHooks<false> {};
template <>
struct OpHooks<BatchNormBackwardOp> : BatchNormHooks<true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<BatchNormOp>;
template class Plan<BatchNormBackwardOp>;
}  // namespace baracuda

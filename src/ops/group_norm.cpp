// The group norm plans (GroupNormPlan, GroupNormBackwardPlan): validation, the geometry shared by
// both backends, as hooks of the one plan life cycle (ops/plan_impl.hpp). On CUDA, select also
// compiles the plan's kernels (cuda::group_norm_kernels: NVRTC, cached), so run only launches.
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "ops/arg_views.hpp"
#include "ops/group_norm_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda::detail {

GroupNormGeometry group_norm_geometry(const GroupNormDescriptor& d, int x_slot,
                                      std::initializer_list<AnyTensorRef> full,
                                      std::initializer_list<AnyTensorRef> channel,
                                      std::initializer_list<AnyTensorRef> stats) {
  GroupNormGeometry g;
  const Shape& s = d.shape;
  g.samples = s.dims[0];
  g.channels = s.dims[1];
  g.groups = d.groups;
  g.group_channels = g.channels / d.groups;
  for (int k = 2; k < s.rank; ++k) g.spatial *= s.dims[k];
  Strides strides[kGroupNormViews] = {};
  int t = 0;
  for (const AnyTensorRef& v : full) {
    if (v.data) {
      strides[t] = v.strides;
      g.n_stride[t] = v.strides[0];
      g.c_stride[t] = v.strides[1];
    }
    ++t;
  }
  const Strides* pointers[kGroupNormViews];
  for (int k = 0; k < kGroupNormViews; ++k) pointers[k] = &strides[k];
  bool spatial[kMaxRank] = {};
  for (int k = 2; k < s.rank; ++k) spatial[k] = true;
  g.space = make_walker<kGroupNormViews>(s, pointers, spatial);
  int64_t* channel_strides[] = {&g.weight_stride, &g.bias_stride, &g.dweight_stride, &g.dbias_stride};
  int c = 0;
  for (const AnyTensorRef& v : channel) {
    if (v.data) *channel_strides[c] = v.strides[0];
    ++c;
  }
  int64_t(*stat_strides[])[2] = {&g.mean_stride, &g.rstd_stride};
  int k = 0;
  for (const AnyTensorRef& v : stats) {
    if (v.data) {
      (*stat_strides[k])[0] = v.strides[0];
      (*stat_strides[k])[1] = v.strides[1];
    }
    ++k;
  }
  g.channel_minor =
      g.space.rank > 0 && std::llabs(g.c_stride[x_slot]) < std::llabs(g.space.strides[x_slot][g.space.rank - 1]);
  return g;
}

namespace {

Shape channel_shape(const GroupNormDescriptor& d) { return Shape{d.shape.rank >= 2 ? d.shape.dims[1] : 0}; }
Shape stats_shape(const GroupNormDescriptor& d) { return Shape{d.shape.rank >= 2 ? d.shape.dims[0] : 0, d.groups}; }
DType weight_dtype_of(const GroupNormDescriptor& d) { return d.weight_dtype.value_or(d.dtype); }

constexpr VariantInfo kVariants[] = {
    {"groups", true, false, true,
     "a block a (sample, group): two passes for the statistics, then the output, each over the group in memory order"},
    {"rows", true, true, false, "CPU: groups in parallel, two passes for the statistics; dweight from per-sample sums"},
};
enum class GroupNormVariant : int { groups, rows };

constexpr InPlace kForwardInPlace[] = {{"y", "x"}};
constexpr InPlace kBackwardInPlace[] = {{"dx", "dy"}, {"dx", "x"}};

template <bool kBackward>
struct GroupNormHooks {
  using Descriptor = GroupNormDescriptor;
  using Args = std::conditional_t<kBackward, GroupNormBackwardArgs, GroupNormArgs>;
  static constexpr std::string_view kPlan = kBackward ? "GroupNormBackwardPlan" : "GroupNormPlan";
  static constexpr std::string_view kOp = kBackward ? "group_norm_backward" : "group_norm";
  static constexpr OpSchema kSchema{kPlan, kOp, "normalization", kFloats, {}, kVariants};

  static constexpr auto fields() {
    if constexpr (kBackward)
      return std::array<ArgField<Args>, 9>{{{"dy", &Args::dy},
                                            {"x", &Args::x},
                                            {"weight", &Args::weight},
                                            {"bias", &Args::bias},
                                            {"mean", &Args::mean},
                                            {"rstd", &Args::rstd},
                                            {"dx", nullptr, &Args::dx},
                                            {"dweight", nullptr, &Args::dweight},
                                            {"dbias", nullptr, &Args::dbias}}};
    else
      return std::array<ArgField<Args>, 6>{{{"x", &Args::x},
                                            {"weight", &Args::weight},
                                            {"bias", &Args::bias},
                                            {"y", nullptr, &Args::y},
                                            {"mean", nullptr, &Args::mean},
                                            {"rstd", nullptr, &Args::rstd}}};
  }
  static constexpr auto kFields = fields();
  // y and dx are written element by element after the last read of their element.
  static constexpr std::span<const InPlace> kInPlace =
      kBackward ? std::span<const InPlace>(kBackwardInPlace) : kForwardInPlace;

  static Status check(const Descriptor& d) {
    if (Status s = check_shape(kPlan, "descriptor.shape", d.shape); !s) return s;
    if (d.shape.rank < 2)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.shape.rank",
                        "a group norm's x is [N, C, *]: rank " + std::to_string(d.shape.rank) + " is outside 2.." +
                            std::to_string(kMaxRank));
    if (d.groups < 1)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.groups",
                        std::to_string(d.groups) + " is not a positive count");
    if (d.shape.dims[1] % d.groups != 0)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.groups",
                        std::to_string(d.groups) +
                            " does not divide the channels (C = shape[1] = " + std::to_string(d.shape.dims[1]) + ")");
    if (!(d.eps > 0) || !std::isfinite(d.eps))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.eps",
                        std::to_string(d.eps) + " is not a positive finite number");
    // The backward's per-sample, per-channel sums (2 N C values) must be countable in bytes.
    int64_t sums = 0;
    if (__builtin_mul_overflow(d.shape.dims[0], d.shape.dims[1], &sums) || sums > (int64_t{1} << 56))
      return plan_error(
          StatusCode::invalid_problem, kPlan, "descriptor.shape",
          "N x C = " + std::to_string(d.shape.dims[0]) + " x " + std::to_string(d.shape.dims[1]) + " is beyond 2^56");
    const DType w = weight_dtype_of(d);
    if (w != d.dtype && w != DType::f32)
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.weight_dtype",
                        std::string(valid_dtype(w) ? dtype_name(w) : "?") + " is neither dtype (" +
                            std::string(dtype_name(d.dtype)) + ") nor f32");
    return Status::ok();
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    const DType w = weight_dtype_of(d), stats = acc_dtype(d.dtype);
    const Shape channels = channel_shape(d), per_group = stats_shape(d);
    auto set = [&](int i, DType dtype, const Shape& shape, bool present, bool optional = false) {
      specs[i].dtype = dtype;
      specs[i].shape = shape;
      specs[i].present = present;
      specs[i].optional = optional;
    };
    if constexpr (kBackward) {
      set(0, d.dtype, d.shape, true);             // dy
      set(1, d.dtype, d.shape, true);             // x
      set(2, w, channels, d.has_weight);          // weight
      set(3, w, channels, d.has_bias && d.silu);  // bias (the activation's input)
      set(4, stats, per_group, true);             // mean
      set(5, stats, per_group, true);             // rstd
      set(6, d.dtype, d.shape, true, true);       // dx
      set(7, w, channels, d.has_weight, true);    // dweight
      set(8, w, channels, d.has_bias, true);      // dbias
    } else {
      set(0, d.dtype, d.shape, true);        // x
      set(1, w, channels, d.has_weight);     // weight
      set(2, w, channels, d.has_bias);       // bias
      set(3, d.dtype, d.shape, true);        // y
      set(4, stats, per_group, true, true);  // mean
      set(5, stats, per_group, true, true);  // rstd
    }
  }

  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int>) {
    PlanChoice c;
    // The backward's per-sample, per-channel sums of dz * xhat and dz (dweight, dbias).
    if (kBackward && (d.has_weight || d.has_bias))
      c.workspace = static_cast<size_t>(2 * d.shape.dims[0] * d.shape.dims[1]) * dtype_size(acc_dtype(d.dtype));
    if (t.backend == Backend::cpu) {
      c.variant = static_cast<int>(GroupNormVariant::rows);
      return c;
    }
    c.variant = static_cast<int>(GroupNormVariant::groups);
#if BARACUDA_HAS_CUDA
    Expected<const void*> kernels = cuda::group_norm_kernels(t, d.dtype, weight_dtype_of(d), kBackward, d.silu, kPlan);
    if (!kernels) return kernels.status();
    c.kernels = *kernels;
#endif
    return c;
  }

  static bool nothing_to_do(const Descriptor& d) {
    // No samples: the backward still writes dweight and dbias (zeros). No channels: nothing.
    return kBackward ? d.shape.dims[1] == 0 : d.shape.dims[0] == 0;
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

  static Args used(const Descriptor& d, const Args& a) { return without_unused_views<GroupNormHooks>(d, a); }

  static auto problem(const LaunchContext&, const Descriptor& d, const Args& args) {
    const Args a = used(d, args);
    if constexpr (kBackward)
      return GroupNormBackwardProblem{
          d, weight_dtype_of(d), a,
          group_norm_geometry(d, 1, {a.dy, a.x, a.dx}, {a.weight, a.bias, a.dweight, a.dbias}, {a.mean, a.rstd})};
    else
      return GroupNormForwardProblem{d, weight_dtype_of(d), a,
                                     group_norm_geometry(d, 0, {a.x, a.y, {}}, {a.weight, a.bias}, {a.mean, a.rstd})};
  }
};

}  // namespace

template <>
struct OpHooks<GroupNormOp> : GroupNormHooks<false> {};
template <>
struct OpHooks<GroupNormBackwardOp> : GroupNormHooks<true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<GroupNormOp>;
template class Plan<GroupNormBackwardOp>;
}  // namespace baracuda

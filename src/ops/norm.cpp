// The norm plans (LayerNorm, RmsNorm, forward and backward): validation, kernel choice and the walks,
// shared by both backends, as hooks of the one plan life cycle (ops/plan_impl.hpp). On CUDA, select
// also compiles the plan's kernels (cuda::norm_kernels: NVRTC, cached), so run only launches.
#include "baracuda/ops/norm.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "ops/arg_views.hpp"
#include "ops/norm_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda::detail {
namespace {

Shape leading_shape(const NormDescriptor& d) {
  Shape s;
  s.rank = d.shape.rank - d.normalized_dims;
  for (int k = 0; k < s.rank; ++k) s.dims[k] = d.shape.dims[k];
  return s;
}
Shape normalized_shape(const NormDescriptor& d) {
  Shape s;
  s.rank = d.normalized_dims;
  for (int k = 0; k < s.rank; ++k) s.dims[k] = d.shape.dims[d.shape.rank - d.normalized_dims + k];
  return s;
}

}  // namespace

NormGeometry norm_geometry(const NormDescriptor& d, std::initializer_list<AnyTensorRef> full,
                           std::initializer_list<AnyTensorRef> inner_only, std::initializer_list<AnyTensorRef> stats) {
  const int rank = d.shape.rank, lead = rank - d.normalized_dims;
  NormGeometry g;
  bool leading[kMaxRank] = {}, trailing[kMaxRank] = {};
  for (int k = 0; k < rank; ++k) (k < lead ? leading : trailing)[k] = true;
  g.rows = leading_shape(d).numel();
  g.n = normalized_shape(d).numel();
  // Every view's strides laid along x's dims (an absent view's are zero).
  Strides row_strides[kNormRowTensors] = {}, inner_strides[kNormInnerTensors] = {};
  int t = 0;
  for (const AnyTensorRef& v : full) {
    if (v.data) row_strides[t] = inner_strides[t] = v.strides;
    ++t;
  }
  int s = t;
  for (const AnyTensorRef& v : stats) {
    if (v.data)
      for (int k = 0; k < lead; ++k) row_strides[s][k] = v.strides[k];
    ++s;
  }
  for (const AnyTensorRef& v : inner_only) {
    if (v.data)
      for (int k = 0; k < d.normalized_dims; ++k) inner_strides[t][lead + k] = v.strides[k];
    ++t;
  }
  const Strides* rows[kNormRowTensors];
  const Strides* inner[kNormInnerTensors];
  for (int k = 0; k < kNormRowTensors; ++k) rows[k] = &row_strides[k];
  for (int k = 0; k < kNormInnerTensors; ++k) inner[k] = &inner_strides[k];
  g.row = make_walker<kNormRowTensors>(d.shape, rows, leading);
  g.inner = make_walker<kNormInnerTensors>(d.shape, inner, trailing);
  return g;
}

NormChunks norm_chunks(int64_t rows, int64_t n, int sm_count, bool partials, DType dtype, bool held) {
  const NormBlockShape shape = norm_block_shape(n, 16 / static_cast<int>(dtype_size(dtype)), held, true, dtype);
  // A chunk is a block's rows. With partial sums (2 x chunks x n of them, written then read again):
  // as many chunks as blocks an SM runs at once (1024 threads), fewer where that leaves a chunk
  // under 16 rows a row group (so the partials stay a small part of the bytes), but a chunk an SM
  // while rows last; at most 256 MiB of partials. Without: a block per row group up to 2^20 blocks.
  const int64_t groups = std::max<int64_t>(1, (rows + shape.rows - 1) / shape.rows);
  int64_t chunks = std::min<int64_t>(groups, int64_t{1} << 20);
  if (partials) {
    const int64_t sms = std::max(sm_count, 1);
    const int64_t resident = sms * std::max(1, 1024 / shape.threads());
    chunks = std::min(resident, std::max((groups + 15) / 16, std::min(sms, groups)));
    chunks = std::clamp<int64_t>(std::min(chunks, (int64_t{1} << 24) / std::max<int64_t>(n, 1)), 1, groups);
  }
  NormChunks c;
  c.rows_per_chunk = std::max<int64_t>(1, (rows + chunks - 1) / chunks);
  c.chunks = std::max<int64_t>(1, (rows + c.rows_per_chunk - 1) / c.rows_per_chunk);
  return c;
}

namespace {

// In NormVariant order.
enum class NormVariant : int { held, streamed, rows };
constexpr VariantInfo kVariants[] = {
    {"held", true, false, true,
     "a row's threads hold it in registers, read once (rows up to 32768 elements forward for 16-bit data, 16384 f32, "
     "8192 f64; 8192 backward, 4096 f64)"},
    {"streamed", true, false, true, "a block a row, read again for each pass, mostly from L2 (any length)"},
    {"rows", true, true, false, "CPU: rows in parallel, two passes for the statistics; dweight by column blocks"},
};

DType weight_dtype_of(const NormDescriptor& d) { return d.weight_dtype.value_or(d.dtype); }

constexpr InPlace kNormInPlace[] = {{"y", "x"}, {"y", "residual"}};
constexpr InPlace kNormBackwardInPlace[] = {{"dx", "dy"}, {"dx", "x"}, {"dx", "dh"}};

template <NormKind K, bool kBackward>
struct NormHooks {
  using Descriptor = NormDescriptor;
  using Args = std::conditional_t<kBackward, NormBackwardArgs, NormArgs>;
  static constexpr bool kRms = K == NormKind::rms;
  static constexpr std::string_view kPlan = kRms ? (kBackward ? "RmsNormBackwardPlan" : "RmsNormPlan")
                                                 : (kBackward ? "LayerNormBackwardPlan" : "LayerNormPlan");
  static constexpr std::string_view kOp =
      kRms ? (kBackward ? "rms_norm_backward" : "rms_norm") : (kBackward ? "layer_norm_backward" : "layer_norm");
  static constexpr OpSchema kSchema{kPlan, kOp, "normalization", kFloats, {}, kVariants};

  static constexpr auto fields() {
    if constexpr (kBackward)
      return std::array<ArgField<Args>, 9>{{{"dy", &Args::dy},
                                            {"x", &Args::x},
                                            {"weight", &Args::weight},
                                            {"mean", &Args::mean},
                                            {"rstd", &Args::rstd},
                                            {"dh", &Args::dh},
                                            {"dx", nullptr, &Args::dx},
                                            {"dweight", nullptr, &Args::dweight},
                                            {"dbias", nullptr, &Args::dbias}}};
    else
      return std::array<ArgField<Args>, 8>{{{"x", &Args::x},
                                            {"residual", &Args::residual},
                                            {"weight", &Args::weight},
                                            {"bias", &Args::bias},
                                            {"y", nullptr, &Args::y},
                                            {"h", nullptr, &Args::h},
                                            {"mean", nullptr, &Args::mean},
                                            {"rstd", nullptr, &Args::rstd}}};
  }
  static constexpr auto kFields = fields();
  // Only y and dx, written element by element after their inputs' last read, may be an input exactly.
  // h is written on the first pass while x and residual are read again on the later ones; dweight
  // and dbias are summed (on the CPU) before dx is written.
  static constexpr std::span<const InPlace> kInPlace =
      kBackward ? std::span<const InPlace>(kNormBackwardInPlace) : kNormInPlace;

  static Status check(const Descriptor& d) {
    if (Status s = check_shape(kPlan, "descriptor.shape", d.shape); !s) return s;
    if (d.shape.rank < 1)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.shape.rank",
                        "a norm needs a dim to normalize: rank 0 is outside 1.." + std::to_string(kMaxRank));
    if (d.normalized_dims < 1 || d.normalized_dims > d.shape.rank)
      return plan_error(
          StatusCode::invalid_problem, kPlan, "descriptor.normalized_dims",
          std::to_string(d.normalized_dims) + " is outside 1.." + std::to_string(d.shape.rank) + " (the rank)");
    if (!(d.eps > 0) || !std::isfinite(d.eps))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.eps",
                        std::to_string(d.eps) + " is not a positive finite number");
    if (!std::isfinite(d.weight_offset))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.weight_offset", "is not finite");
    if (d.weight_offset != 0 && !d.has_weight)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.weight_offset",
                        "applies to a weight, and has_weight is false");
    if (kRms && d.has_bias)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.has_bias", "RmsNorm has no bias");
    const DType w = weight_dtype_of(d);
    if (w != d.dtype && w != DType::f32)
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.weight_dtype",
                        std::string(valid_dtype(w) ? dtype_name(w) : "?") + " is neither dtype (" +
                            std::string(dtype_name(d.dtype)) + ") nor f32");
    return Status::ok();
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    const DType w = weight_dtype_of(d), stats = acc_dtype(d.dtype);
    const Shape lead = leading_shape(d), inner = normalized_shape(d);
    auto set = [&](int i, DType dtype, const Shape& shape, bool present, bool optional = false) {
      specs[i].dtype = dtype;
      specs[i].shape = shape;
      specs[i].present = present;
      specs[i].optional = optional;
    };
    const bool bias = !kRms && d.has_bias;
    if constexpr (kBackward) {
      set(0, d.dtype, d.shape, true);              // dy
      set(1, d.dtype, d.shape, true);              // x (h)
      set(2, w, inner, d.has_weight);              // weight
      set(3, stats, lead, !kRms);                  // mean
      set(4, stats, lead, true);                   // rstd
      set(5, d.dtype, d.shape, d.residual, true);  // dh
      set(6, d.dtype, d.shape, true, true);        // dx
      set(7, w, inner, d.has_weight, true);        // dweight
      set(8, w, inner, bias, true);                // dbias
    } else {
      set(0, d.dtype, d.shape, true);        // x
      set(1, d.dtype, d.shape, d.residual);  // residual
      set(2, w, inner, d.has_weight);        // weight
      set(3, w, inner, bias);                // bias
      set(4, d.dtype, d.shape, true);        // y
      set(5, d.dtype, d.shape, d.residual);  // h
      set(6, stats, lead, !kRms, true);      // mean
      set(7, stats, lead, true, true);       // rstd
    }
  }

  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int> forced) {
    PlanChoice c;
    [[maybe_unused]] const int64_t n = normalized_shape(d).numel(), rows = leading_shape(d).numel();
    if (t.backend == Backend::cpu) {
      c.variant = static_cast<int>(NormVariant::rows);
      return c;
    }
    const int64_t limit = norm_held_limit(kBackward, d.dtype);
    const bool fits = n <= limit;
    c.variant = forced.value_or(static_cast<int>(fits ? NormVariant::held : NormVariant::streamed));
    if (c.variant == static_cast<int>(NormVariant::held) && !fits)
      return plan_error(StatusCode::unsupported, kPlan, "preference.variant",
                        "held holds rows of up to " + std::to_string(limit) + " elements, not " + std::to_string(n));
    if constexpr (kBackward) {
      if (d.has_weight || (!kRms && d.has_bias)) {
        const NormChunks chunks =
            norm_chunks(rows, n, t.sm_count, true, d.dtype, c.variant == static_cast<int>(NormVariant::held));
        c.workspace = static_cast<size_t>(2 * chunks.chunks * n) * dtype_size(acc_dtype(d.dtype));
      }
    }
#if BARACUDA_HAS_CUDA
    c.knob = c.variant == static_cast<int>(NormVariant::held);
    Expected<const void*> kernels =
        cuda::norm_kernels(t, K, d.dtype, weight_dtype_of(d), kBackward, c.knob != 0, n, d.residual, kPlan);
    if (!kernels) return kernels.status();
    c.kernels = *kernels;
#endif
    return c;
  }

  static bool nothing_to_do(const Descriptor& d) {
    // The backward of zero rows still writes dweight and dbias (zeros); of an empty row, nothing.
    return kBackward ? normalized_shape(d).numel() == 0 : leading_shape(d).numel() == 0;
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

  // The args with every view the descriptor does not use cleared (ops/arg_views.hpp).
  static Args used(const Descriptor& d, const Args& a) { return without_unused_views<NormHooks>(d, a); }

  static auto problem(const LaunchContext& ctx, const Descriptor& d, const Args& args) {
    const Args a = used(d, args);
    if constexpr (kBackward) {
      NormBackwardProblem p{
          K, d, weight_dtype_of(d), a,
          norm_geometry(d, {a.dy, a.x, a.dh, a.dx}, {a.weight, a.dweight, a.dbias}, {a.mean, a.rstd})};
      p.chunks = norm_chunks(p.geometry.rows, p.geometry.n, ctx.target.sm_count, ctx.choice.workspace > 0, d.dtype,
                             ctx.choice.variant == static_cast<int>(NormVariant::held));
      return p;
    } else {
      return NormForwardProblem{K, d, weight_dtype_of(d), a,
                                norm_geometry(d, {a.x, a.residual, a.y, a.h}, {a.weight, a.bias}, {a.mean, a.rstd})};
    }
  }
};

}  // namespace

template <>
struct OpHooks<LayerNormOp> : NormHooks<NormKind::layer, false> {};
template <>
struct OpHooks<RmsNormOp> : NormHooks<NormKind::rms, false> {};
template <>
struct OpHooks<LayerNormBackwardOp> : NormHooks<NormKind::layer, true> {};
template <>
struct OpHooks<RmsNormBackwardOp> : NormHooks<NormKind::rms, true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<LayerNormOp>;
template class Plan<RmsNormOp>;
template class Plan<LayerNormBackwardOp>;
template class Plan<RmsNormBackwardOp>;
}  // namespace baracuda

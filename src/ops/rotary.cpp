// The rotary plans (forward and backward): validation and the kernels' parameters, shared by both
// backends, as hooks of the one plan life cycle (ops/plan_impl.hpp). On CUDA, select also compiles
// the kernels (cuda::rotary_kernels: NVRTC, cached), so run only launches.
#include "baracuda/ops/rotary.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "common/elementwise.hpp"
#include "ops/arg_views.hpp"
#include "ops/rotary_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda {

std::string_view rotary_layout_name(RotaryLayout layout) {
  switch (layout) {
    case RotaryLayout::half_split:
      return "half_split";
    case RotaryLayout::interleaved:
      return "interleaved";
  }
  return "?";
}

}  // namespace baracuda

namespace baracuda::detail {
namespace {

constexpr DType kIndexDTypes[] = {DType::i32, DType::i64};
constexpr VariantInfo kVariants[] = {
    {"pairs", true, true, true,
     "a GPU thread per (token, pair), a CPU loop step per token: cos / sin computed once in f64, applied to every "
     "head of q and k"},
};

int64_t rotary_dim_of(const RotaryDescriptor& d) { return d.rotary_dim ? d.rotary_dim : d.head_dim; }

Shape heads_shape(const RotaryDescriptor& d, int64_t heads) { return Shape{d.batch, d.seq_len, heads, d.head_dim}; }

// Arguments in kFields order: the two rotated inputs, positions, inv_freq, then the two outputs;
// output kOut + t is input t rotated.
enum : int { kQ = 0, kK = 1, kPositions = 2, kInvFreq = 3, kOut = 4 };

// An output may be its own input exactly (in place: a pair's elements are read before they are
// written, by the one thread or loop step that writes them), never the other tensor.
constexpr InPlace kRotaryInPlace[] = {{"q_out", "q"}, {"k_out", "k"}};
constexpr InPlace kRotaryBackwardInPlace[] = {{"dq", "dq_out"}, {"dk", "dk_out"}};

template <bool kBackward>
struct RotaryHooks {
  using Descriptor = RotaryDescriptor;
  using Args = std::conditional_t<kBackward, RotaryBackwardArgs, RotaryArgs>;
  static constexpr std::string_view kPlan = kBackward ? "RotaryBackwardPlan" : "RotaryPlan";
  static constexpr OpSchema kSchema{
      kPlan, kBackward ? "rotary_backward" : "rotary", "attention", kFloats, kIndexDTypes, kVariants};

  static constexpr auto fields() {
    if constexpr (kBackward)
      return std::array<ArgField<Args>, 6>{{{"dq_out", &Args::dq_out},
                                            {"dk_out", &Args::dk_out},
                                            {"positions", &Args::positions},
                                            {"inv_freq", &Args::inv_freq},
                                            {"dq", nullptr, &Args::dq},
                                            {"dk", nullptr, &Args::dk}}};
    else
      return std::array<ArgField<Args>, 6>{{{"q", &Args::q},
                                            {"k", &Args::k},
                                            {"positions", &Args::positions},
                                            {"inv_freq", &Args::inv_freq},
                                            {"q_out", nullptr, &Args::q_out},
                                            {"k_out", nullptr, &Args::k_out}}};
  }
  static constexpr auto kFields = fields();
  static constexpr std::span<const InPlace> kInPlace =
      kBackward ? std::span<const InPlace>(kRotaryBackwardInPlace) : kRotaryInPlace;

  static Status check(const Descriptor& d) {
    const std::pair<const char*, int64_t> sizes[] = {
        {"descriptor.batch", d.batch},
        {"descriptor.seq_len", d.seq_len},
        {"descriptor.q_heads", d.q_heads},
        {"descriptor.k_heads", d.k_heads},
    };
    for (const auto& [field, size] : sizes)
      if (size < 0)
        return plan_error(StatusCode::invalid_problem, kPlan, field, "size " + std::to_string(size) + " is negative");
    if (d.head_dim < 1)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.head_dim",
                        std::to_string(d.head_dim) + " is not a head dim (>= 1)");
    if (Status s = check_shape(kPlan, "descriptor.q_heads", heads_shape(d, d.q_heads)); !s) return s;
    if (Status s = check_shape(kPlan, "descriptor.k_heads", heads_shape(d, d.k_heads)); !s) return s;
    const int64_t rd = rotary_dim_of(d);
    if (rd < 0 || rd > d.head_dim || rd % 2 != 0)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.rotary_dim",
                        std::to_string(d.rotary_dim) +
                            (d.rotary_dim ? "" : " (the head_dim, " + std::to_string(rd) + ")") +
                            " is not an even number of dims in 2.." + std::to_string(d.head_dim) +
                            " (the head_dim; 0 rotates all of it)");
    if (rotary_layout_name(d.layout) == "?")
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.layout",
                        std::to_string(static_cast<int>(d.layout)) + " is no RotaryLayout");
    if (!(d.base > 0) || !std::isfinite(d.base))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.base",
                        std::to_string(d.base) + " is not a positive finite number");
    return Status::ok();
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    auto set = [&](int i, DType dtype, const Shape& shape, bool present) {
      specs[i].dtype = dtype;
      specs[i].shape = shape;
      specs[i].present = present;
    };
    const bool k = d.k_heads > 0;
    set(kQ, d.dtype, heads_shape(d, d.q_heads), true);
    set(kK, d.dtype, heads_shape(d, d.k_heads), k);
    set(kPositions, d.index_dtype, Shape{d.batch, d.seq_len}, true);
    set(kInvFreq, DType::f32, Shape{rotary_dim_of(d) / 2}, d.has_inv_freq);
    set(kOut + kQ, d.dtype, heads_shape(d, d.q_heads), true);
    set(kOut + kK, d.dtype, heads_shape(d, d.k_heads), k);
  }

  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int>) {
    PlanChoice c;
    c.variant = 0;
#if BARACUDA_HAS_CUDA
    if (t.backend == Backend::cuda) {
      Expected<const void*> kernels = cuda::rotary_kernels(t, d.dtype, d.index_dtype, kPlan);
      if (!kernels) return kernels.status();
      c.kernels = *kernels;
    }
#else
    static_cast<void>(t);
    static_cast<void>(d);
#endif
    return c;
  }

  static bool nothing_to_do(const Descriptor& d) {
    return d.batch * d.seq_len == 0 || (d.q_heads == 0 && d.k_heads == 0);
  }

  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = acc_dtype(d.dtype);
    return g;
  }

  static KernelShape kernel(const PlanTarget&, const Descriptor&, const PlanChoice&, const Args* a) {
    KernelShape k{"pairs", Layout::contiguous};
    if (a) k.layout = layout_of(given_views<Args>(kFields, *a));
    return k;
  }

  static RotaryProblem problem(const LaunchContext&, const Descriptor& d, const Args& a) {
    std::array<ArgSpec, std::size(kFields)> specs{};
    arg_specs(d, specs);
    RotaryProblem p;
    p.dtype = d.dtype;
    p.index_dtype = d.index_dtype;
    p.layout = d.layout;
    device::RotaryParams& q = p.params;
    const int64_t rd = rotary_dim_of(d);
    const int64_t heads[2] = {d.q_heads, d.k_heads};
    bool copies = false;
    for (int t = 0; t < 2; ++t) {
      if (!specs[kQ + t].present) continue;  // an unused view may hold anything: the kernels see nulls
      const AnyTensorRef src = kFields[kQ + t].get(a), dst = kFields[kOut + t].get(a);
      q.src[t] = src.data;
      q.dst[t] = const_cast<void*>(dst.data);
      q.heads[t] = heads[t];
      for (int k = 0; k < 4; ++k) {
        q.src_strides[t][k] = src.strides[k];
        q.dst_strides[t][k] = dst.strides[k];
      }
      q.copy[t] = dst.data != src.data && rd < d.head_dim;
      copies = copies || (q.copy[t] && heads[t] > 0);
    }
    const AnyTensorRef positions = kFields[kPositions].get(a);
    q.positions = positions.data;
    q.position_strides[0] = positions.strides[0];
    q.position_strides[1] = positions.strides[1];
    if (d.has_inv_freq) {
      const AnyTensorRef inv_freq = kFields[kInvFreq].get(a);
      q.inv_freq = static_cast<const float*>(inv_freq.data);
      q.inv_freq_stride = inv_freq.strides[0];
    }
    q.seq = d.seq_len;
    q.head_dim = d.head_dim;
    q.tokens = d.batch * d.seq_len;
    q.pairs = rd / 2;
    q.items = q.pairs + (copies ? d.head_dim - rd : 0);
    q.rotary_dim = static_cast<double>(rd);
    q.log2_base = std::log2(d.base);
    q.sign = kBackward ? -1.0 : 1.0;
    return p;
  }
};

}  // namespace

template <>
struct OpHooks<RotaryOp> : RotaryHooks<false> {};
template <>
struct OpHooks<RotaryBackwardOp> : RotaryHooks<true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<RotaryOp>;
template class Plan<RotaryBackwardOp>;
}  // namespace baracuda

// The random plans (Random, Dropout and its backward): validation and the draw's parameters, shared
// by both backends, as hooks of the one plan life cycle (ops/plan_impl.hpp). On CUDA, select also
// compiles the kernels (cuda::random_kernels: NVRTC, cached).
#include "baracuda/ops/random.hpp"

#include <cmath>
#include <string>

#include "common/elementwise.hpp"
#include "ops/arg_views.hpp"
#include "ops/random_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda {

std::string_view random_kind_name(RandomKind kind) {
  switch (kind) {
    case RandomKind::uniform:
      return "uniform";
    case RandomKind::bernoulli:
      return "bernoulli";
    case RandomKind::randint:
      return "randint";
    case RandomKind::normal:
      return "normal";
    case RandomKind::exponential:
      return "exponential";
  }
  return "?";
}

}  // namespace baracuda

namespace baracuda::detail {
namespace {

constexpr DType kRandomDTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64};
constexpr VariantInfo kVariants[] = {
    {"philox", true, true, true,
     "Philox-4x32-10, one position of the stream an element: the same bits on every backend"},
};

bool integral(DType t) { return t == DType::i32 || t == DType::i64; }

Expected<PlanChoice> random_choice(const PlanTarget& t, DType dtype, std::string_view plan) {
  PlanChoice c;
  c.variant = 0;
#if BARACUDA_HAS_CUDA
  if (t.backend == Backend::cuda) {
    Expected<const void*> kernels = cuda::random_kernels(t, dtype, plan);
    if (!kernels) return kernels.status();
    c.kernels = *kernels;
  }
#else
  static_cast<void>(t);
  static_cast<void>(dtype);
  static_cast<void>(plan);
#endif
  return c;
}

template <int NT>
device::Walk<NT> walk_over(const Shape& shape, const Strides* const (&strides)[NT]) {
  const Walker<NT> w = make_walker<NT>(shape, strides);
  device::Walk<NT> out{};
  out.rank = w.rank;
  for (int d = 0; d < kMaxRank; ++d) {
    out.sizes[d] = w.sizes[d];
    for (int t = 0; t < NT; ++t) out.strides[t][d] = w.strides[t][d];
  }
  return out;
}

// What the three plans' hooks share, over each one's own (Hooks: kFields, kPlan).
template <class Hooks, class Descriptor, class Args>
struct RandomFamilyHooks {
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference&,
                                     std::optional<int>) {
    return random_choice(t, d.dtype, Hooks::kPlan);
  }
  static bool nothing_to_do(const Descriptor& d) { return d.shape.numel() == 0; }
  static KernelShape kernel(const PlanTarget&, const Descriptor&, const PlanChoice&, const Args* a) {
    KernelShape k{"philox", Layout::contiguous};
    if (a) k.layout = layout_of(given_views<Args>(Hooks::kFields, *a));
    return k;
  }
};

struct RandomHooks : RandomFamilyHooks<RandomHooks, RandomDescriptor, RandomArgs> {
  using Descriptor = RandomDescriptor;
  using Args = RandomArgs;
  static constexpr std::string_view kPlan = "RandomPlan";
  static constexpr OpSchema kSchema{kPlan, "random", "random", kRandomDTypes, {}, kVariants};
  static constexpr std::array<ArgField<Args>, 1> kFields{{{"out", nullptr, &Args::out}}};

  static Status check(const Descriptor& d) {
    if (Status s = check_shape(kPlan, "descriptor.shape", d.shape); !s) return s;
    if (random_kind_name(d.kind) == "?")
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.kind",
                        std::to_string(static_cast<int>(d.kind)) + " is no RandomKind");
    const bool wants_int = d.kind == RandomKind::randint;
    if (integral(d.dtype) != wants_int)
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.dtype",
                        std::string(dtype_name(d.dtype)) + " is not a dtype of " +
                            std::string(random_kind_name(d.kind)) +
                            (wants_int ? " (i32, i64)" : " (f32, f64, f16, bf16)"));
    if (d.kind == RandomKind::normal) {
      if (!std::isfinite(d.mean))
        return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.mean", "is not finite");
      if (!(d.std >= 0) || !std::isfinite(d.std))
        return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.std",
                          std::to_string(d.std) + " is not a finite number >= 0");
      return Status::ok();
    }
    if (d.kind == RandomKind::exponential) {
      if (!(d.lambda > 0) || !std::isfinite(d.lambda))
        return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.lambda",
                          std::to_string(d.lambda) + " is not a finite rate > 0");
      return Status::ok();
    }
    if (d.kind == RandomKind::bernoulli) {
      if (!(d.p >= 0 && d.p <= 1))
        return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.p",
                          std::to_string(d.p) + " is outside [0, 1]");
      return Status::ok();
    }
    if (!std::isfinite(d.low) || !std::isfinite(d.high) || !(d.low < d.high))
      return plan_error(
          StatusCode::invalid_problem, kPlan, "descriptor.high",
          "[" + std::to_string(d.low) + ", " + std::to_string(d.high) + ") is not a finite, non-empty range");
    if (wants_int) {
      const double lo = d.dtype == DType::i32 ? -2147483648.0 : -9223372036854775808.0;
      const double hi = d.dtype == DType::i32 ? 2147483648.0 : 9223372036854775808.0;
      if (d.low != std::floor(d.low) || d.high != std::floor(d.high) || d.low < lo || d.high > hi)
        return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.low",
                          "randint's bounds are whole numbers within " + std::string(dtype_name(d.dtype)));
      if (d.high - d.low > 4294967296.0)
        return plan_error(StatusCode::unsupported, kPlan, "descriptor.high",
                          "randint's range high - low is at most 2^32 (one 32-bit draw an element)");
    }
    return Status::ok();
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    specs[0].dtype = d.dtype;
    specs[0].shape = d.shape;
  }

  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = d.dtype == DType::f64 ? DType::f64 : DType::f32;
    return g;
  }
  static RandomProblem problem(const LaunchContext&, const Descriptor& d, const Args& a) {
    RandomProblem p;
    p.kind = d.kind;
    p.dtype = d.dtype;
    device::RandomParams& q = p.params;
    q.out = a.out.data;
    q.total = d.shape.numel();
    q.seed = d.seed;
    q.offset = d.offset;
    q.threshold = random_threshold(d.p);
    q.range = d.kind == RandomKind::randint ? static_cast<unsigned long long>(d.high - d.low) : 1;
    q.range_magic = ~0ull / q.range + 1;  // (0 for a range of 1: random_below's product is 0 then)
    // The kernels' two parameters: [low, high), or normal's (mean, std), or exponential's (-, lambda).
    q.low = d.kind == RandomKind::normal ? d.mean : d.low;
    q.high = d.kind == RandomKind::normal ? d.std : d.kind == RandomKind::exponential ? d.lambda : d.high;
    // The f32 draws' affine step, one fused multiply-add z scale + shift (random.hpp).
    q.scale = static_cast<float>(d.kind == RandomKind::exponential ? 1.0 / d.lambda : d.std);
    q.shift = static_cast<float>(d.kind == RandomKind::normal ? d.mean : 0.0);
    const Strides* strides[1] = {&a.out.strides};
    q.walk = walk_over<1>(d.shape, strides);
    return p;
  }
};

// Element by element: y may be x exactly, dx dy (in place).
constexpr InPlace kDropoutInPlace[] = {{"y", "x"}};
constexpr InPlace kDropoutBackwardInPlace[] = {{"dx", "dy"}};

template <bool kBackward>
struct DropoutHooks : RandomFamilyHooks<DropoutHooks<kBackward>, DropoutDescriptor,
                                        std::conditional_t<kBackward, DropoutBackwardArgs, DropoutArgs>> {
  using Descriptor = DropoutDescriptor;
  using Args = std::conditional_t<kBackward, DropoutBackwardArgs, DropoutArgs>;
  static constexpr std::string_view kPlan = kBackward ? "DropoutBackwardPlan" : "DropoutPlan";
  static constexpr OpSchema kSchema{kPlan,    kBackward ? "dropout_backward" : "dropout", "random", kFloats, {},
                                    kVariants};
  static constexpr auto fields() {
    if constexpr (kBackward)
      return std::array<ArgField<Args>, 2>{{{"dy", &Args::dy}, {"dx", nullptr, &Args::dx}}};
    else
      return std::array<ArgField<Args>, 3>{{{"x", &Args::x}, {"y", nullptr, &Args::y}, {"mask", nullptr, &Args::mask}}};
  }
  static constexpr auto kFields = fields();
  static constexpr std::span<const InPlace> kInPlace =
      kBackward ? std::span<const InPlace>(kDropoutBackwardInPlace) : kDropoutInPlace;

  static Status check(const Descriptor& d) {
    if (Status s = check_shape(kPlan, "descriptor.shape", d.shape); !s) return s;
    if (!(d.p >= 0 && d.p <= 1))
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.p", std::to_string(d.p) + " is outside [0, 1]");
    return Status::ok();
  }
  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    for (size_t i = 0; i < specs.size(); ++i) {
      specs[i].dtype = i == 2 ? DType::boolean : d.dtype;
      specs[i].shape = d.shape;
      specs[i].optional = i == 2;
    }
  }
  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = acc_dtype(d.dtype);
    return g;
  }
  static DropoutProblem problem(const LaunchContext&, const Descriptor& d, const Args& a) {
    DropoutProblem p;
    p.dtype = d.dtype;
    device::DropoutParams& q = p.params;
    Strides none{};
    if constexpr (kBackward) {
      q.src = a.dy.data;
      q.dst = a.dx.data;
      const Strides* strides[3] = {&a.dy.strides, &a.dx.strides, &none};
      q.walk = walk_over<3>(d.shape, strides);
    } else {
      q.src = a.x.data;
      q.dst = a.y.data;
      q.mask = a.mask.data;
      const Strides* strides[3] = {&a.x.strides, &a.y.strides, a.mask.data ? &a.mask.strides : &none};
      q.walk = walk_over<3>(d.shape, strides);
    }
    q.total = d.shape.numel();
    q.seed = d.seed;
    q.offset = d.offset;
    q.threshold = random_threshold(d.p);
    // 1 / (1 - p) rounded once to the compute type here, so both backends multiply by the same value.
    const double scale = d.p < 1 ? 1.0 / (1.0 - d.p) : 0.0;
    q.scale = d.dtype == DType::f64 ? scale : static_cast<double>(static_cast<float>(scale));
    return p;
  }
};

}  // namespace

template <>
struct OpHooks<RandomOp> : RandomHooks {};
template <>
struct OpHooks<DropoutOp> : DropoutHooks<false> {};
template <>
struct OpHooks<DropoutBackwardOp> : DropoutHooks<true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<RandomOp>;
template class Plan<DropoutOp>;
template class Plan<DropoutBackwardOp>;
}  // namespace baracuda

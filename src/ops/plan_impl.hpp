#pragma once
// The plan life cycle, written once for every op (as CUTLASS's device adapter serves every GEMM).
// An op family supplies, per op tag, a specialization of OpHooks<Op> (in its src/ops/ file):
//
//   static constexpr OpSchema kSchema;                      names, dtypes, variants (as data)
//   static constexpr ArgField<Args> kFields[];               the args' views, in order
//   static Status check(const Descriptor&);                  what the schema's dtype lists cannot say
//   static void arg_specs(const Descriptor&, std::span<ArgSpec>);   each view's dtype and shape
//   static Expected<PlanChoice> choose(const PlanTarget&, const Descriptor&, const PlanPreference&,
//                                      std::optional<int> forced);   variant, workspace, knob
//   static bool nothing_to_do(const Descriptor&);            an empty problem: run is a no-op
//   static KernelShape kernel(const PlanTarget&, const Descriptor&, const PlanChoice&, const Args*);
//   static PrecisionGuarantee precision(const Descriptor&, const PlanChoice&);
//   static auto problem(const LaunchContext&, const Descriptor&, const Args&);
// and optionally
//   static Status check_args(const PlanTarget&, const Descriptor&, const PlanChoice&, const Args&);
//   static constexpr InPlace kInPlace[];                     outputs that may be an input exactly
//
// problem() returns the family's backend problem P; each backend provides
//   Status cpu::launch(const LaunchContext&, const P&)  and  Status cuda::launch(const LaunchContext&, const P&),
// declared in the family's problem header, which its .cpp includes before this one.
// Everything else is here: the stream and forced-backend checks, forced variants, dtype checks,
// can_implement before run, the empty no-op, the workspace check, device facts and the device guard,
// the SKU and the precision guarantee. A family's .cpp ends with `template class Plan<Op>;` per op.
#include <algorithm>
#include <array>
#include <exception>
#include <new>
#include <string>

#include "baracuda/core/plan.hpp"
#include "cuda/runtime.hpp"
#include "ops/launch.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail {

template <class Op>
struct OpHooks;

template <class Op>
constexpr int kArgCount = static_cast<int>(std::size(OpHooks<Op>::kFields));

template <class Op>
std::array<ArgSpec, kArgCount<Op>> specs_of(const typename Op::Descriptor& desc) {
  std::array<ArgSpec, kArgCount<Op>> specs{};
  for (int i = 0; i < kArgCount<Op>; ++i) {
    specs[i].name = OpHooks<Op>::kFields[i].name;
    specs[i].output = OpHooks<Op>::kFields[i].out != nullptr;
  }
  OpHooks<Op>::arg_specs(desc, specs);
  return specs;
}

// The args with the strides of every empty view zeroed. An empty view has no element, so its strides
// are not checked and may be anything; a kernel that walks a non-empty problem beside it (an index
// along an empty table, a dweight beside an empty dout) must not multiply them.
template <class Op>
typename Op::Args without_empty_strides(const typename Op::Args& args) {
  typename Op::Args out = args;
  for (const auto& field : OpHooks<Op>::kFields) {
    const AnyTensorRef v = field.get(args);
    if (v.numel() != 0) continue;
    AnyTensorMut cleared{const_cast<void*>(v.data), v.dtype, v.shape, Strides{}, v.capacity};
    field.set(out, cleared);
  }
  return out;
}

// The pairs an op lets an output be an input exactly (none unless its hooks list them).
template <class Op>
constexpr std::span<const InPlace> in_place_of() {
  if constexpr (requires { OpHooks<Op>::kInPlace; })
    return OpHooks<Op>::kInPlace;
  else
    return {};
}

template <class Args>
concept HasBadIndexCount = requires(Args a) {
  a.bad_index_count;
};

}  // namespace baracuda::detail

namespace baracuda {

template <class Op>
const OpSchema& Plan<Op>::schema() {
  return detail::OpHooks<Op>::kSchema;
}

template <class Op>
std::span<const ArgField<typename Op::Args>> Plan<Op>::arg_fields() {
  return detail::OpHooks<Op>::kFields;
}

template <class Op>
std::vector<ArgSpec> Plan<Op>::arg_specs() const {
  if (!selected_) return {};
  const auto specs = detail::specs_of<Op>(desc_);
  return {specs.begin(), specs.end()};
}

template <class Op>
Expected<Plan<Op>> Plan<Op>::select(const Stream& stream, const Descriptor& desc, const PlanPreference& preference) {
  using Hooks = detail::OpHooks<Op>;
  const OpSchema& s = Hooks::kSchema;
  Expected<detail::PlanTarget> target = detail::resolve_backend(s.plan, stream, preference);
  if (!target) return target.status();
  if (std::find(s.dtypes.begin(), s.dtypes.end(), desc.dtype) == s.dtypes.end())
    return detail::plan_error(
        StatusCode::unsupported, s.plan, "descriptor.dtype",
        std::string(dtype_name(desc.dtype)) + " is not supported (supported: " + detail::dtype_list(s.dtypes) + ")");
  if constexpr (requires { desc.index_dtype; }) {
    if (std::find(s.index_dtypes.begin(), s.index_dtypes.end(), desc.index_dtype) == s.index_dtypes.end())
      return detail::plan_error(StatusCode::unsupported, s.plan, "descriptor.index_dtype",
                                std::string(dtype_name(desc.index_dtype)) +
                                    " is not an index type (supported: " + detail::dtype_list(s.index_dtypes) + ")");
  }
  if (Status st = Hooks::check(desc); !st) return st;
  Expected<std::optional<int>> forced = detail::forced_variant(s, target->backend, preference);
  if (!forced) return forced.status();
  Expected<detail::PlanChoice> choice = Hooks::choose(*target, desc, preference, *forced);
  if (!choice) return choice.status();
  if (preference.batch_invariant && !Hooks::precision(desc, *choice).batch_invariant)
    return detail::plan_error(StatusCode::unsupported, s.plan, "preference.batch_invariant",
                              "this plan has no batch-invariant kernel for this descriptor");
  if (choice->workspace > preference.workspace_limit)
    return detail::plan_error(StatusCode::unsupported, s.plan, "preference.workspace_limit",
                              "the plan needs " + std::to_string(choice->workspace) + " bytes of workspace");
  Plan plan;
  plan.desc_ = desc;
  plan.target_ = *target;
  plan.choice_ = *choice;
  plan.selected_ = true;
  return plan;
}

template <class Op>
Status Plan<Op>::can_implement(const Args& args) const {
  using Hooks = detail::OpHooks<Op>;
  if (!selected_)
    return detail::plan_error(StatusCode::invalid_problem, Hooks::kSchema.plan, "plan",
                              "was default-constructed, not made by select");
  const auto specs = detail::specs_of<Op>(desc_);
  for (int i = 0; i < detail::kArgCount<Op>; ++i) {
    const ArgSpec& spec = specs[i];
    const AnyTensorRef view = Hooks::kFields[i].get(args);
    if (!spec.present && spec.output && view.data)  // the caller would wait for values never written
      return detail::plan_error(StatusCode::invalid_problem, Hooks::kSchema.plan, "args." + std::string(spec.name),
                                "must be empty (data null): this descriptor writes no such output");
    if (!spec.present || (spec.optional && !view.data)) continue;
    Status s = detail::check_view(Hooks::kSchema.plan, "args." + std::string(spec.name), view, spec.dtype, spec.shape,
                                  spec.output ? detail::ViewRole::output : detail::ViewRole::input);
    if (!s) return s;
  }
  if (Status s = detail::check_outputs_against_inputs<Args>(Hooks::kSchema.plan, Hooks::kFields, specs,
                                                            detail::in_place_of<Op>(), args);
      !s)
    return s;
  if constexpr (detail::HasBadIndexCount<Args>) {
    if (reinterpret_cast<uintptr_t>(args.bad_index_count) % alignof(int64_t) != 0)
      return detail::plan_error(StatusCode::misaligned_operand, Hooks::kSchema.plan, "args.bad_index_count",
                                "is not aligned to 8 bytes");
  }
  if constexpr (requires { Hooks::check_args(target_, desc_, choice_, args); })
    return Hooks::check_args(target_, desc_, choice_, args);
  return Status::ok();
}

// A default-constructed plan's descriptor was never validated: its descriptive members answer
// without the hooks (which may assume a valid one).
template <class Op>
PrecisionGuarantee Plan<Op>::precision_guarantee() const {
  if (!selected_) return {};
  return detail::OpHooks<Op>::precision(desc_, choice_);
}

template <class Op>
KernelSku Plan<Op>::sku() const {
  return sku_of(nullptr);
}

template <class Op>
KernelSku Plan<Op>::sku(const Args& args) const {
  // Views that can_implement rejects run nothing: they are not read, and the plan's own SKU answers.
  return sku_of(selected_ && can_implement(args) ? &args : nullptr);
}

template <class Op>
KernelSku Plan<Op>::sku_of(const Args* args) const {
  using Hooks = detail::OpHooks<Op>;
  KernelSku sku;
  sku.category = std::string(Hooks::kSchema.category);
  sku.op = std::string(Hooks::kSchema.op);
  sku.element = desc_.dtype;
  if constexpr (requires { desc_.index_dtype; }) sku.index = desc_.index_dtype;
  sku.arch = target_.arch;
  sku.backend = target_.backend;
  if (!selected_) {
    sku.variant = "unselected";
    return sku;
  }
  detail::KernelShape shape = Hooks::kernel(target_, desc_, choice_, args);
  sku.variant = std::move(shape.variant);
  sku.layout = shape.layout;
  sku.precision = precision_guarantee();
  return sku;
}

template <class Op>
Status Plan<Op>::run(const Stream& stream, Workspace workspace, const Args& args) const {
  using Hooks = detail::OpHooks<Op>;
  const std::string_view name = Hooks::kSchema.plan;
  if (!selected_) return can_implement(args);  // its error
  if (Status s = detail::check_stream(name, stream, target_); !s) return s;
  if (Status s = can_implement(args); !s) return s;
  if (Hooks::nothing_to_do(desc_)) return Status::ok();
  if (Status s = detail::check_workspace(name, workspace, choice_.workspace); !s) return s;
  const detail::LaunchContext ctx{stream, target_, choice_, workspace};
  const auto problem = Hooks::problem(ctx, desc_, detail::without_empty_strides<Op>(args));
  auto launch = [&](const auto& p) -> Status {
    if (target_.backend == Backend::cpu) {
      // A CPU kernel's host scratch is bounded, but an allocation may still fail (std::bad_alloc, or a
      // container's length_error): a Status, never an exception out of run.
      try {
        return detail::cpu::launch(ctx, p);
      } catch (const std::bad_alloc&) {
        return detail::plan_error(StatusCode::backend_error, name, "run", "host memory allocation failed");
      } catch (const std::exception& e) {
        return detail::plan_error(StatusCode::backend_error, name, "run",
                                  std::string("the CPU kernel failed: ") + e.what());
      }
    }
#if BARACUDA_HAS_CUDA
    const detail::DeviceScope device(target_.device);
    return detail::cuda::launch(ctx, p);
#else
    return detail::plan_error(StatusCode::unsupported, name, "stream", "baracuda was built without CUDA");
#endif
  };
  // A problem may carry casts to run around it (a type promotion's: ops/binary_problem.hpp).
  if constexpr (requires { problem.casts; })
    return run_with_casts(problem.casts, launch, [&] { return launch(problem); });
  else
    return launch(problem);
}

}  // namespace baracuda

// BinaryParamPlan / BinaryParamBackwardPlan: validation and kernel choice, shared by both backends.
#include "baracuda/ops/binary_param.hpp"

#include <algorithm>

#include "ops/binary_param_problem.hpp"
#include "ops/elementwise_layout.hpp"
#include "ops/validate.hpp"

namespace baracuda {
namespace {

using detail::path_name;
using detail::plan_error;
using detail::ViewRole;

constexpr std::string_view kForward = "BinaryParamPlan";
constexpr std::string_view kBackward = "BinaryParamBackwardPlan";

bool weight_is_broadcast(const BinaryParamDescriptor& desc) {
  return desc.weight_mode == WeightMode::tensor && desc.weight_shape.numel() != desc.shape.numel();
}

Status check_descriptor(std::string_view plan, const BinaryParamDescriptor& desc) {
  if (desc.kind != BinaryParamKind::lerp)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.kind", "is not a BinaryParamKind");
  if (!is_floating(desc.dtype))
    return plan_error(StatusCode::unsupported, plan, "descriptor.dtype",
                      std::string(dtype_name(desc.dtype)) + " is not supported by " +
                          std::string(binary_param_kind_name(desc.kind)) + " (supported: f16, bf16, f32, f64)");
  if (Status s = detail::check_shape(plan, "descriptor.shape", desc.shape); !s) return s;
  if (desc.weight_mode == WeightMode::scalar) return Status::ok();
  if (desc.weight_mode != WeightMode::tensor)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.weight_mode", "is not a WeightMode");
  if (Status s = detail::check_shape(plan, "descriptor.weight_shape", desc.weight_shape); !s) return s;
  if (desc.weight_shape.rank > desc.shape.rank)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.weight_shape",
                      "rank " + std::to_string(desc.weight_shape.rank) + " exceeds the output's rank " +
                          std::to_string(desc.shape.rank));
  const int offset = desc.shape.rank - desc.weight_shape.rank;
  for (int d = 0; d < desc.weight_shape.rank; ++d) {
    const int64_t w = desc.weight_shape.dims[d], o = desc.shape.dims[d + offset];
    if (w != 1 && w != o)
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.weight_shape[" + std::to_string(d) + "]",
                        "size " + std::to_string(w) + " does not broadcast to output size " + std::to_string(o));
  }
  return Status::ok();
}

// A forced variant, checked against what this backend and problem can run.
Expected<std::optional<ElementwisePath>> parse_variant(std::string_view plan, const PlanPreference& preference,
                                                       Backend backend, bool allow_reduce, bool require_reduce) {
  if (preference.variant.empty()) return std::optional<ElementwisePath>{};
  const std::optional<ElementwisePath> path = detail::parse_path(preference.variant);
  const bool cuda_only = path == ElementwisePath::vectorized || path == ElementwisePath::strided_vectorized;
  if (path && (!cuda_only || backend == Backend::cuda) &&
      (*path != ElementwisePath::broadcast_reduce || allow_reduce) &&
      (!require_reduce || *path == ElementwisePath::broadcast_reduce))
    return path;
  return plan_error(StatusCode::unsupported, plan, "preference.variant",
                    "'" + preference.variant + "' is not a variant this plan can run on " +
                        std::string(backend_name(backend)) + " for this problem");
}

// The weight view expanded to the output's rank: zero strides where it is broadcast.
template <class View>
View expand_weight(const BinaryParamDescriptor& desc, const View& weight) {
  View out = weight;
  out.shape = desc.shape;
  out.strides = {};
  const int offset = desc.shape.rank - desc.weight_shape.rank;
  for (int d = 0; d < desc.weight_shape.rank; ++d)
    out.strides[d + offset] = desc.weight_shape.dims[d] == 1 ? 0 : weight.strides[d];
  return out;
}

PrecisionGuarantee guarantee_for(DType dtype) {
  PrecisionGuarantee g;
  g.compute = g.accumulator = dtype == DType::f64 ? DType::f64 : DType::f32;
  g.bit_stable = true;
  g.deterministic = true;  // no atomics anywhere in this family
  return g;
}

KernelSku make_sku(const BinaryParamDescriptor& desc, std::string op, Backend backend, int arch, ElementwisePath path) {
  KernelSku sku;
  sku.category = "elementwise";
  sku.op = std::move(op);
  sku.element = desc.dtype;
  sku.layout = (path == ElementwisePath::vectorized || path == ElementwisePath::contiguous) ? Layout::contiguous
                                                                                            : Layout::strided;
  sku.arch = arch;
  sku.backend = backend;
  sku.variant = std::string(path_name(path));
  sku.precision = guarantee_for(desc.dtype);
  return sku;
}

}  // namespace

std::string_view binary_param_kind_name(BinaryParamKind kind) { return kind == BinaryParamKind::lerp ? "lerp" : "?"; }

// ---------------------------------------------------------------------------------------------
// Forward

Expected<BinaryParamPlan> BinaryParamPlan::select(const Stream& stream, const BinaryParamDescriptor& desc,
                                                  const PlanPreference& preference) {
  Expected<detail::BackendTarget> target = detail::resolve_backend(kForward, stream, preference);
  if (!target) return target.status();
  if (Status s = check_descriptor(kForward, desc); !s) return s;
  auto forced = parse_variant(kForward, preference, target->backend, false, false);
  if (!forced) return forced.status();
  BinaryParamPlan plan;
  plan.desc_ = desc;
  plan.backend_ = target->backend;
  plan.arch_ = target->arch;
  plan.device_ = target->device;
  plan.forced_path_ = *forced;
  return plan;
}

Status BinaryParamPlan::can_implement(const BinaryParamArgs& args) const {
  const Shape& shape = desc_.shape;
  if (Status s = detail::check_view(kForward, "args.a", args.a, desc_.dtype, shape, ViewRole::input); !s) return s;
  if (Status s = detail::check_view(kForward, "args.b", args.b, desc_.dtype, shape, ViewRole::input); !s) return s;
  if (desc_.weight_mode == WeightMode::tensor) {
    Status s =
        detail::check_view(kForward, "args.weight", args.weight, desc_.dtype, desc_.weight_shape, ViewRole::input);
    if (!s) return s;
  }
  if (Status s = detail::check_view(kForward, "args.out", args.out, desc_.dtype, shape, ViewRole::output); !s) return s;
  if (!forced_path_) return Status::ok();
  if (desc_.weight_mode == WeightMode::tensor)
    return detail::check_forced_path(kForward, *forced_path_, shape,
                                     {args.a, args.b, expand_weight(desc_, args.weight), args.out}, 3);
  return detail::check_forced_path(kForward, *forced_path_, shape, {args.a, args.b, args.out}, 2);
}

ElementwisePath BinaryParamPlan::path_for(const BinaryParamArgs& args) const {
  if (forced_path_) return *forced_path_;
  if (desc_.weight_mode == WeightMode::tensor)
    return detail::layout_path(backend_, desc_.shape, {args.a, args.b, expand_weight(desc_, args.weight), args.out}, 3);
  return detail::layout_path(backend_, desc_.shape, {args.a, args.b, args.out}, 2);
}

KernelSku BinaryParamPlan::sku() const {
  ElementwisePath path = backend_ == Backend::cuda ? ElementwisePath::vectorized : ElementwisePath::contiguous;
  if (weight_is_broadcast(desc_))
    path = backend_ == Backend::cuda ? ElementwisePath::strided_vectorized : ElementwisePath::strided;
  return make_sku(desc_, "lerp", backend_, arch_, forced_path_.value_or(path));
}

KernelSku BinaryParamPlan::sku(const BinaryParamArgs& args) const {
  return make_sku(desc_, "lerp", backend_, arch_, path_for(args));
}

PrecisionGuarantee BinaryParamPlan::precision_guarantee() const { return guarantee_for(desc_.dtype); }

Status BinaryParamPlan::run(const Stream& stream, Workspace, const BinaryParamArgs& args) const {
  if (Status s = detail::check_stream(kForward, stream, {backend_, device_, arch_, 0}); !s) return s;
  if (Status s = can_implement(args); !s) return s;
  if (desc_.shape.numel() == 0) return Status::ok();
  detail::BinaryParamForwardProblem problem{desc_, path_for(args), args.a, args.b, {}, args.out};
  if (desc_.weight_mode == WeightMode::tensor) problem.weight = expand_weight(desc_, args.weight);
  if (backend_ == Backend::cpu) return detail::cpu::binary_param_forward(problem);
#if BARACUDA_HAS_CUDA
  return detail::cuda::binary_param_forward(stream, problem);
#else
  return plan_error(StatusCode::unsupported, kForward, "stream", "baracuda was built without CUDA");
#endif
}

// ---------------------------------------------------------------------------------------------
// Backward

Expected<BinaryParamBackwardPlan> BinaryParamBackwardPlan::select(const Stream& stream,
                                                                  const BinaryParamDescriptor& desc,
                                                                  const PlanPreference& preference) {
  Expected<detail::BackendTarget> target = detail::resolve_backend(kBackward, stream, preference);
  if (!target) return target.status();
  if (Status s = check_descriptor(kBackward, desc); !s) return s;
  const bool broadcast = weight_is_broadcast(desc);
  auto forced =
      parse_variant(kBackward, preference, target->backend, desc.weight_mode == WeightMode::tensor, broadcast);
  if (!forced) return forced.status();
  BinaryParamBackwardPlan plan;
  plan.desc_ = desc;
  plan.backend_ = target->backend;
  plan.arch_ = target->arch;
  plan.device_ = target->device;
  plan.forced_path_ = *forced;
  if (broadcast || plan.forced_path_ == ElementwisePath::broadcast_reduce) {
    // Split the dweight reduction so that enough items run in parallel: about one per thread the
    // device holds at once (CUDA), or a few per core (CPU). Fixed here, so runs are identical.
    int64_t m = 0, r = 0;
    detail::weight_reduce_sizes(desc, m, r);
    const int64_t target_items = target->backend == Backend::cuda ? int64_t(target->sm_count) * 2048 : 1024;
    int64_t splits = std::clamp<int64_t>((target_items + m - 1) / std::max<int64_t>(m, 1), 1, std::max<int64_t>(r, 1));
    const size_t acc = desc.dtype == DType::f64 ? 8 : 4;
    const int64_t budget = static_cast<int64_t>(std::min<size_t>(preference.workspace_limit, SIZE_MAX / 2) / acc);
    if (splits > 1 && m * splits > budget) splits = std::max<int64_t>(1, budget / std::max<int64_t>(m, 1));
    plan.reduce_splits_ = splits;
  }
  return plan;
}

size_t BinaryParamBackwardPlan::workspace_size() const {
  if (reduce_splits_ <= 1) return 0;
  int64_t m = 0, r = 0;
  detail::weight_reduce_sizes(desc_, m, r);
  return static_cast<size_t>(m * reduce_splits_) * (desc_.dtype == DType::f64 ? 8 : 4);
}

Status BinaryParamBackwardPlan::can_implement(const BinaryParamBackwardArgs& args) const {
  const Shape& shape = desc_.shape;
  const DType dt = desc_.dtype;
  if (Status s = detail::check_view(kBackward, "args.dout", args.dout, dt, shape, ViewRole::input); !s) return s;
  if (desc_.weight_mode == WeightMode::tensor) {
    if (Status s = detail::check_view(kBackward, "args.a", args.a, dt, shape, ViewRole::input); !s) return s;
    if (Status s = detail::check_view(kBackward, "args.b", args.b, dt, shape, ViewRole::input); !s) return s;
    Status s = detail::check_view(kBackward, "args.weight", args.weight, dt, desc_.weight_shape, ViewRole::input);
    if (!s) return s;
  }
  if (Status s = detail::check_view(kBackward, "args.da", args.da, dt, shape, ViewRole::output); !s) return s;
  if (Status s = detail::check_view(kBackward, "args.db", args.db, dt, shape, ViewRole::output); !s) return s;
  if (desc_.weight_mode == WeightMode::scalar)
    return forced_path_ ? detail::check_forced_path(kBackward, *forced_path_, shape, {args.dout, args.da, args.db}, 1)
                        : Status::ok();
  Status s = detail::check_view(kBackward, "args.dweight", args.dweight, dt, desc_.weight_shape, ViewRole::output);
  if (!s) return s;
  if (!forced_path_ || *forced_path_ == ElementwisePath::broadcast_reduce) return Status::ok();
  return detail::check_forced_path(kBackward, *forced_path_, shape,
                                   {args.dout, args.a, args.b, expand_weight(desc_, args.weight), args.da, args.db,
                                    expand_weight(desc_, args.dweight)},
                                   4);
}

ElementwisePath BinaryParamBackwardPlan::path_for(const BinaryParamBackwardArgs& args) const {
  if (weight_is_broadcast(desc_)) return ElementwisePath::broadcast_reduce;
  if (forced_path_) return *forced_path_;
  if (desc_.weight_mode == WeightMode::scalar)
    return detail::layout_path(backend_, desc_.shape, {args.dout, args.da, args.db}, 1);
  return detail::layout_path(backend_, desc_.shape,
                             {args.dout, args.a, args.b, expand_weight(desc_, args.weight), args.da, args.db,
                              expand_weight(desc_, args.dweight)},
                             4);
}

KernelSku BinaryParamBackwardPlan::sku() const {
  ElementwisePath path = backend_ == Backend::cuda ? ElementwisePath::vectorized : ElementwisePath::contiguous;
  if (weight_is_broadcast(desc_)) path = ElementwisePath::broadcast_reduce;
  return make_sku(desc_, "lerp_backward", backend_, arch_, forced_path_.value_or(path));
}

KernelSku BinaryParamBackwardPlan::sku(const BinaryParamBackwardArgs& args) const {
  return make_sku(desc_, "lerp_backward", backend_, arch_, path_for(args));
}

PrecisionGuarantee BinaryParamBackwardPlan::precision_guarantee() const { return guarantee_for(desc_.dtype); }

Status BinaryParamBackwardPlan::run(const Stream& stream, Workspace workspace,
                                    const BinaryParamBackwardArgs& args) const {
  if (Status s = detail::check_stream(kBackward, stream, {backend_, device_, arch_, 0}); !s) return s;
  if (Status s = can_implement(args); !s) return s;
  if (desc_.shape.numel() == 0) return Status::ok();
  const ElementwisePath path = path_for(args);
  const size_t needed = path == ElementwisePath::broadcast_reduce ? workspace_size() : 0;
  if (Status s = detail::check_workspace(kBackward, workspace, needed); !s) return s;
  detail::BinaryParamBackwardProblem problem{desc_,
                                             path,
                                             args.dout,
                                             args.a,
                                             args.b,
                                             {},
                                             args.da,
                                             args.db,
                                             {},
                                             path == ElementwisePath::broadcast_reduce ? reduce_splits_ : 1,
                                             workspace.data};
  if (desc_.weight_mode == WeightMode::tensor) {
    problem.weight = expand_weight(desc_, args.weight);
    problem.dweight = expand_weight(desc_, args.dweight);
  }
  if (backend_ == Backend::cpu) return detail::cpu::binary_param_backward(problem);
#if BARACUDA_HAS_CUDA
  return detail::cuda::binary_param_backward(stream, problem);
#else
  return plan_error(StatusCode::unsupported, kBackward, "stream", "baracuda was built without CUDA");
#endif
}

}  // namespace baracuda

#include "ops/validate.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "common/checked.hpp"
#include "cuda/runtime.hpp"

namespace baracuda::detail {

Status plan_error(StatusCode code, std::string_view plan, std::string_view field, std::string_view what, int64_t needed,
                  int64_t got) {
  std::string message(plan);
  message += ": ";
  message += field;
  message += ": ";
  message += what;
  return Status::error(code, std::move(message), needed, got);
}

Status check_scalar_fits(std::string_view plan, std::string_view field, double value, DType dtype) {
  double lo = 0, hi = 0;  // the dtype's range, exact in a double (i64's top as 2^63, past it)
  switch (dtype) {
    case DType::boolean:
      lo = 0, hi = 1;
      break;
    case DType::i8:
      lo = -128, hi = 127;
      break;
    case DType::u8:
      lo = 0, hi = 255;
      break;
    case DType::i32:
      lo = -2147483648.0, hi = 2147483647.0;
      break;
    case DType::i64:
      lo = -0x1p63, hi = 0x1p63;
      break;
    default:
      return Status::ok();
  }
  const bool whole = std::isfinite(value) && value == std::floor(value);
  if (whole && value >= lo && (dtype == DType::i64 ? value < hi : value <= hi)) return Status::ok();
  std::ostringstream what;
  what.precision(17);
  what << value << (whole ? " is out of the range of " : " is not a whole number, as ") << dtype_name(dtype)
       << (whole ? "" : " needs");
  return plan_error(StatusCode::invalid_problem, plan, field, what.str());
}

Status check_shape(std::string_view plan, std::string_view field, const Shape& shape) {
  if (shape.rank < 0 || shape.rank > kMaxRank)
    return plan_error(StatusCode::invalid_problem, plan, std::string(field) + ".rank",
                      "rank " + std::to_string(shape.rank) + " is outside 0.." + std::to_string(kMaxRank));
  CheckedSize elements = 1;  // zero sizes count as one, so the strides of any view of it are bounded too
  for (int d = 0; d < shape.rank; ++d) {
    if (shape.dims[d] < 0)
      return plan_error(StatusCode::invalid_problem, plan, std::string(field) + "[" + std::to_string(d) + "]",
                        "size " + std::to_string(shape.dims[d]) + " is negative");
    elements *= std::max<int64_t>(shape.dims[d], 1);
  }
  if (!elements.below(kMaxElements))
    return plan_error(StatusCode::invalid_problem, plan, field,
                      shape.to_string() + " has 2^62 elements or more (the limit of every shape)");
  return Status::ok();
}

namespace {

// A sufficient test that no two elements of an output share an address: with its dims of size > 1
// ordered by stride, each stride steps past everything the smaller ones reach (so a written element
// is written once, and parallel writers never race). It rejects a few exotic interleavings that do
// not overlap (shape [3, 2], strides [2, 3]); no framework produces those.
Status check_no_self_overlap(std::string_view plan, const std::string& field, const AnyTensorRef& view) {
  int order[kMaxRank];  // the dims of size > 1, by stride (an insertion sort: at most 8)
  int n = 0;
  for (int d = 0; d < view.rank(); ++d) {
    if (view.shape.dims[d] <= 1) continue;
    int k = n++;
    for (; k > 0 && view.strides[order[k - 1]] > view.strides[d]; --k) order[k] = order[k - 1];
    order[k] = d;
  }
  CheckedSize reach = 0;  // the furthest offset the dims so far reach
  for (int k = 0; k < n; ++k) {
    const int d = order[k];
    if (!(reach.below(view.strides[d])))
      return plan_error(StatusCode::invalid_problem, plan, field + ".strides[" + std::to_string(d) + "]",
                        "an output must not overlap itself (stride " + std::to_string(view.strides[d]) +
                            " does not step past the " + std::to_string(reach.saturated()) +
                            " elements its smaller strides span)");
    reach += CheckedSize(view.shape.dims[d] - 1) * view.strides[d];
  }
  return Status::ok();
}

}  // namespace

namespace {
// [first byte, one past the last byte) of a view (its extent was checked: no overflow).
std::pair<uintptr_t, uintptr_t> byte_span(const AnyTensorRef& v) {
  int64_t reach = 1;
  for (int d = 0; d < v.rank(); ++d) reach += (v.shape.dims[d] - 1) * v.strides[d];
  const auto begin = reinterpret_cast<uintptr_t>(v.data);
  return {begin, begin + static_cast<uintptr_t>(reach) * dtype_size(v.dtype)};
}
bool share_memory(const AnyTensorRef& a, const AnyTensorRef& b) {
  if (!a.data || !b.data || a.numel() == 0 || b.numel() == 0) return false;
  const auto [a_begin, a_end] = byte_span(a);
  const auto [b_begin, b_end] = byte_span(b);
  return a_begin < b_end && b_begin < a_end;
}
}  // namespace

Status check_alias(std::string_view plan, std::string_view out_field, const AnyTensorRef& out,
                   std::string_view in_field, const AnyTensorRef& in) {
  if (!share_memory(out, in)) return Status::ok();
  bool same = out.data == in.data && out.dtype == in.dtype && out.shape == in.shape;
  for (int d = 0; same && d < out.rank(); ++d) same = out.shape.dims[d] == 1 || out.strides[d] == in.strides[d];
  if (same) return Status::ok();
  return plan_error(StatusCode::invalid_problem, plan, out_field,
                    "overlaps " + std::string(in_field) +
                        " without being the same view (an output may share memory with an input only as that "
                        "very view, in place)");
}

Status check_disjoint(std::string_view plan, std::string_view out_field, const AnyTensorRef& out,
                      std::string_view other_field, const AnyTensorRef& other) {
  if (!share_memory(out, other)) return Status::ok();
  return plan_error(
      StatusCode::invalid_problem, plan, out_field,
      "shares memory with " + std::string(other_field) + ", which it may not (not even as the same view)");
}

Status check_view(std::string_view plan, std::string_view field, const AnyTensorRef& view, DType dtype,
                  const Shape& shape, ViewRole role) {
  const std::string f(field);
  if (view.dtype != dtype)
    return plan_error(
        StatusCode::invalid_problem, plan, f + ".dtype",
        "is " + std::string(dtype_name(view.dtype)) + " but the descriptor says " + std::string(dtype_name(dtype)));
  if (Status s = check_shape(plan, f + ".shape", view.shape); !s) return s;
  if (!(view.shape == shape))
    return plan_error(StatusCode::invalid_problem, plan, f + ".shape",
                      "is " + view.shape.to_string() + " but must be " + shape.to_string());
  for (int d = 0; d < view.rank(); ++d) {
    if (view.strides[d] < 0)
      return plan_error(StatusCode::invalid_problem, plan, f + ".strides[" + std::to_string(d) + "]",
                        "stride " + std::to_string(view.strides[d]) + " is negative");
    // An empty view has no element to overlap (contiguous strides of a [4, 0] view are {0, 1}).
    if (role == ViewRole::output && view.strides[d] == 0 && view.shape.dims[d] > 1 && view.numel() > 0)
      return plan_error(StatusCode::invalid_problem, plan, f + ".strides[" + std::to_string(d) + "]",
                        "an output must not overlap itself (zero stride on a dim of size " +
                            std::to_string(view.shape.dims[d]) + ")");
  }
  if (view.numel() == 0) return Status::ok();
  if (role == ViewRole::output)
    if (Status s = check_no_self_overlap(plan, f, view); !s) return s;
  if (view.data == nullptr)
    return plan_error(StatusCode::invalid_problem, plan, f + ".data", "is null for a non-empty view");
  if (reinterpret_cast<uintptr_t>(view.data) % dtype_size(dtype) != 0)
    return plan_error(StatusCode::misaligned_operand, plan, f + ".data",
                      "is not aligned to its " + std::to_string(dtype_size(dtype)) + "-byte element");
  CheckedSize reach = 1;  // one past the furthest element
  for (int d = 0; d < view.rank(); ++d) reach += CheckedSize(view.shape.dims[d] - 1) * view.strides[d];
  if (!reach.below(kMaxElements) || !(reach * static_cast<int64_t>(dtype_size(dtype))).below(kMaxBytes))
    return plan_error(StatusCode::invalid_problem, plan, f + ".strides",
                      "the view reaches past 2^62 elements or 2^63 bytes (the limit of every view)");
  const int64_t needed = reach.value();
  if (needed > view.capacity)
    return plan_error(StatusCode::buffer_too_small, plan, f + ".capacity",
                      "the view reaches " + std::to_string(needed) + " elements but the buffer holds " +
                          std::to_string(view.capacity),
                      needed, view.capacity);
  return Status::ok();
}

Status check_workspace(std::string_view plan, const Workspace& workspace, size_t needed) {
  if (needed == 0) return Status::ok();
  if (workspace.size < needed || workspace.data == nullptr)
    return plan_error(
        StatusCode::workspace_too_small, plan, "workspace.size",
        "needs " + std::to_string(needed) + " bytes but got " + std::to_string(workspace.data ? workspace.size : 0),
        static_cast<int64_t>(needed), static_cast<int64_t>(workspace.data ? workspace.size : 0));
  if (!aligned16(workspace.data))
    return plan_error(StatusCode::misaligned_operand, plan, "workspace.data", "must be 16-byte aligned");
  return Status::ok();
}

Expected<PlanTarget> resolve_backend(std::string_view plan, const Stream& stream, const PlanPreference& preference) {
  if (preference.backend && *preference.backend != stream.backend())
    return plan_error(StatusCode::invalid_problem, plan, "preference.backend",
                      "asks for " + std::string(backend_name(*preference.backend)) + " but the stream is " +
                          std::string(backend_name(stream.backend())));
  PlanTarget target;
  target.backend = stream.backend();
  if (stream.backend() == Backend::cpu) return target;
  Expected<CudaDeviceInfo> info = cuda_device_info(stream.device());
  if (!info) return plan_error(info.status().code(), plan, "stream", info.status().message());
  target.device = stream.device();
  target.arch = info->arch;
  target.sm_count = info->sm_count;
  return target;
}

Status check_stream(std::string_view plan, const Stream& stream, const PlanTarget& target) {
  if (stream.backend() != target.backend || (target.backend == Backend::cuda && stream.device() != target.device))
    return plan_error(StatusCode::invalid_problem, plan, "stream",
                      "the plan was selected for " + std::string(backend_name(target.backend)) +
                          (target.backend == Backend::cuda ? " device " + std::to_string(target.device) : "") +
                          " but run on " + std::string(backend_name(stream.backend())) +
                          (stream.backend() == Backend::cuda ? " device " + std::to_string(stream.device()) : ""));
  return Status::ok();
}

}  // namespace baracuda::detail

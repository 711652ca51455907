#pragma once
// Validation shared by every op family. Every error names the plan and the field at fault:
//   "<Plan>: <field>: <what is wrong>".
#include <algorithm>
#include <span>
#include <string>
#include <string_view>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda::detail {

// The dtype lists of the schemas: the floats, and every dtype.
inline constexpr DType kFloats[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
inline constexpr DType kEveryDType[] = {DType::f32, DType::f64, DType::f16, DType::bf16,   DType::i8,
                                        DType::u8,  DType::i32, DType::i64, DType::boolean};

Status plan_error(StatusCode code, std::string_view plan, std::string_view field, std::string_view what,
                  int64_t needed = 0, int64_t got = 0);

// Rank within 0..kMaxRank and no negative size.
Status check_shape(std::string_view plan, std::string_view field, const Shape& shape);

// Whether a DType field holds one of the enum's values (a descriptor's field may hold any byte).
inline bool valid_dtype(DType d) { return static_cast<int>(d) <= static_cast<int>(DType::boolean); }

// A number of the descriptor (a scalar operand, alpha, a bound) for an op computing in `dtype`: any
// double for a float dtype; for an integer dtype a whole number within its range (PyTorch's "value
// cannot be converted to type int8_t without overflow"), for bool 0 or 1.
Status check_scalar_fits(std::string_view plan, std::string_view field, double value, DType dtype);

// A kind's dtype: an unsupported error naming descriptor.dtype, and the dtypes the kind takes, where
// takes(dtype) is false.
template <class Takes>
Status check_kind_dtype(std::string_view plan, std::string_view kind, DType dtype, Takes&& takes) {
  if (takes(dtype)) return Status::ok();
  std::string list;
  for (DType t : kEveryDType)
    if (takes(t)) list += (list.empty() ? "" : " ") + std::string(dtype_name(t));
  return plan_error(
      StatusCode::unsupported, plan, "descriptor.dtype",
      std::string(kind) + " takes " + (list.empty() ? "no dtype" : list) + ", not " + std::string(dtype_name(dtype)));
}

enum class ViewRole : unsigned char { input, output };
// The view has `dtype` and exactly `shape`, non-negative strides, an element-aligned non-null
// pointer when non-empty, stays inside its capacity and, as an output, does not overlap itself
// through a zero stride.
Status check_view(std::string_view plan, std::string_view field, const AnyTensorRef& view, DType dtype,
                  const Shape& shape, ViewRole role);

// An output that shares memory with an input must be that input exactly (the same first element,
// dtype and strides along every dim of size > 1: each element is read before it is written, in
// place); any other overlap of their memory spans is an error naming the output. Both views must
// have passed check_view against the same shape.
Status check_alias(std::string_view plan, std::string_view out_field, const AnyTensorRef& out,
                   std::string_view in_field, const AnyTensorRef& in);

// No byte of `out` is a byte of `other` (views with no data or no element share none).
Status check_disjoint(std::string_view plan, std::string_view out_field, const AnyTensorRef& out,
                      std::string_view other_field, const AnyTensorRef& other);

// An output that may be given exactly an input's view (in place), by argument names: an op lists the
// pairs its header allows (OpHooks::kInPlace), those whose kernels read each element of the input
// before they write that element of the output, and nothing else.
struct InPlace {
  std::string_view out, in;
};

// Every plan's overlap rule (plan_impl.hpp's can_implement): an output shares no memory with another
// output, and shares memory with an input only as that very view (check_alias), where `in_place`
// lists the pair. Arguments the descriptor does not use are no memory. A family that refuses a
// listed pair for some descriptors says so in check_args.
template <class Args>
Status check_outputs_against_inputs(std::string_view plan, std::span<const ArgField<Args>> fields,
                                    std::span<const ArgSpec> specs, std::span<const InPlace> in_place,
                                    const Args& args) {
  for (size_t o = 0; o < fields.size(); ++o) {
    if (!fields[o].out || !specs[o].present) continue;
    const std::string out_field = "args." + std::string(fields[o].name);
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i == o || !specs[i].present) continue;
      const std::string field = "args." + std::string(fields[i].name);
      const bool may_alias = !fields[i].out && std::any_of(in_place.begin(), in_place.end(), [&](const InPlace& p) {
        return p.out == fields[o].name && p.in == fields[i].name;
      });
      const Status s = may_alias ? check_alias(plan, out_field, fields[o].get(args), field, fields[i].get(args))
                                 : check_disjoint(plan, out_field, fields[o].get(args), field, fields[i].get(args));
      if (!s) return s;
    }
  }
  return Status::ok();
}

// A family's narrowing of that rule: no output `o` shares memory with an input `i` for which
// forbidden(o, i) holds (field indices), not even as the same view: where the op reads the input
// again after writing the output. Outputs without data are skipped.
template <class Args, class Forbidden>
Status check_no_alias(std::string_view plan, std::span<const ArgField<Args>> fields, const Args& args,
                      Forbidden&& forbidden) {
  for (size_t o = 0; o < fields.size(); ++o) {
    if (!fields[o].out || !fields[o].get(args).data) continue;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].out || !forbidden(o, i)) continue;
      const Status s = check_disjoint(plan, "args." + std::string(fields[o].name), fields[o].get(args),
                                      "args." + std::string(fields[i].name), fields[i].get(args));
      if (!s) return s;
    }
  }
  return Status::ok();
}

// The workspace is at least `needed` bytes and 16-byte aligned.
Status check_workspace(std::string_view plan, const Workspace& workspace, size_t needed);

// What select learns about the stream's backend: for CUDA, the device's arch and SM count.
Expected<PlanTarget> resolve_backend(std::string_view plan, const Stream& stream, const PlanPreference& preference);

// The stream given to run() must be of the backend and device the plan was selected for.
Status check_stream(std::string_view plan, const Stream& stream, const PlanTarget& target);

std::string dtype_list(std::span<const DType> dtypes);
std::string variant_list(std::span<const VariantInfo> variants);
// Resolves preference.variant against the schema: its index, or none when not forced.
Expected<std::optional<int>> forced_variant(const OpSchema& schema, Backend backend, const PlanPreference& preference);
// Contiguous when every present view is.
Layout layout_of(std::span<const AnyTensorRef> views);

// 16-byte alignment of a pointer (for the vectorized path).
inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace baracuda::detail

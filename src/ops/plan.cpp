// The non-template parts of the plan life cycle (ops/plan_impl.hpp): dtype and variant checks.
#include <algorithm>

#include "ops/validate.hpp"

namespace baracuda::detail {

std::string dtype_list(std::span<const DType> dtypes) {
  std::string s;
  for (DType d : dtypes) s += (s.empty() ? "" : ", ") + std::string(dtype_name(d));
  return s;
}

std::string variant_list(std::span<const VariantInfo> variants) {
  std::string s;
  for (const VariantInfo& v : variants) s += (s.empty() ? "" : ", ") + std::string(v.name);
  return s;
}

Expected<std::optional<int>> forced_variant(const OpSchema& schema, Backend backend, const PlanPreference& preference) {
  if (preference.variant.empty()) return std::optional<int>{};
  const auto it = std::find_if(schema.variants.begin(), schema.variants.end(),
                               [&](const VariantInfo& v) { return v.name == preference.variant; });
  const std::string quoted = "'" + preference.variant + "'";
  if (it == schema.variants.end())
    return plan_error(StatusCode::unsupported, schema.plan, "preference.variant",
                      quoted + " is not a variant of this plan (" + variant_list(schema.variants) + ")");
  if (!it->on(backend))
    return plan_error(StatusCode::unsupported, schema.plan, "preference.variant",
                      quoted + " is not a " + std::string(backend_name(backend)) + " variant");
  if (!it->deterministic && preference.determinism == Determinism::required)
    return plan_error(StatusCode::unsupported, schema.plan, "preference.variant",
                      quoted + " is not deterministic, but determinism is required");
  return std::optional<int>{static_cast<int>(it - schema.variants.begin())};
}

Layout layout_of(std::span<const AnyTensorRef> views) {
  for (const AnyTensorRef& v : views)
    if (!v.is_contiguous()) return Layout::strided;
  return Layout::contiguous;
}

}  // namespace baracuda::detail

#pragma once
// What the families' hooks ask of their argument tables (OpHooks::kFields): the views a call gives,
// and the args with every view the descriptor does not use cleared.
#include <array>
#include <span>
#include <vector>

#include "baracuda/core/plan.hpp"

namespace baracuda::detail {

// The views of `a` that are given (data not null), in the table's order.
template <class Args>
std::vector<AnyTensorRef> given_views(std::span<const ArgField<Args>> fields, const Args& a) {
  std::vector<AnyTensorRef> v;
  for (const ArgField<Args>& f : fields)
    if (f.get(a).data) v.push_back(f.get(a));
  return v;
}

// `a` with every view the descriptor does not use (Hooks::arg_specs: not present) cleared: an unused
// input may hold anything (a fuzzed stride of 2^63 - 1 once overflowed a walk), and the kernels
// then see only nulls.
template <class Hooks>
typename Hooks::Args without_unused_views(const typename Hooks::Descriptor& d, typename Hooks::Args a) {
  std::array<ArgSpec, std::size(Hooks::kFields)> specs{};
  Hooks::arg_specs(d, specs);
  for (size_t i = 0; i < specs.size(); ++i)
    if (!specs[i].present) Hooks::kFields[i].set(a, AnyTensorMut{});
  return a;
}

}  // namespace baracuda::detail

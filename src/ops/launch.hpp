#pragma once
// What the plan life cycle (ops/plan_impl.hpp) hands to a family's backend entry points.
#include <string>

#include "baracuda/core/plan.hpp"

namespace baracuda::detail {

// What a run hands to a backend besides its problem.
struct LaunchContext {
  Stream stream;
  PlanTarget target;  // device facts, queried once at select
  PlanChoice choice;
  Workspace workspace;
};

// The kernel a plan runs on some views: its variant's name (with the kernel shape) and layout.
struct KernelShape {
  std::string variant;
  Layout layout = Layout::contiguous;
};

}  // namespace baracuda::detail

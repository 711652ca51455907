#pragma once
// Plans as XLA FFI custom calls (baracuda.jax): a plan selected in Python is registered here as a
// target, an integer the custom call carries as its attribute `target`; one handler a platform
// (ffi.cpp) runs any target on the buffers XLA hands it, row-major and contiguous, in the order the
// target names them, the workspace (when the plan needs one) as the last result. A target lives as
// long as the process (a compiled JAX function may call it at any time); Python registers one per
// plan and argument list, not per call.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace baracuda::python {

struct FfiTarget {
  std::string plan;                  // for messages: "RmsNormPlan"
  std::vector<std::string> inputs;   // argument names of the call's operands, in order
  std::vector<std::string> outputs;  // of its results (the workspace, when any, after them)
  size_t workspace = 0;              // bytes the last result holds
  // Runs on `stream` (its backend the target's): the views in inputs / outputs order.
  std::function<Status(const Stream& stream, std::span<const AnyTensorMut> inputs,
                       std::span<const AnyTensorMut> outputs, Workspace workspace)>
      run;
  Backend backend = Backend::cpu;
};

// Registers a target; its id for the custom call's attribute.
int64_t add_ffi_target(FfiTarget target);

// The target for a plan selected on `selected`, whose operands are the arguments named `inputs` and
// whose results those named `outputs`. An argument both read and written (batch norm's running
// statistics) is an operand and a result the call aliases (input_output_aliases): the result's view
// is the one bound. On CUDA a call on another device than the plan's selects the plan again there,
// once. A name the plan does not have, or a result it does not write, is an error naming the field.
template <class P>
FfiTarget ffi_target_of(const P& plan, const Stream& selected, const PlanPreference& preference,
                        std::vector<std::string> inputs, std::vector<std::string> outputs) {
  const std::string_view name = P::schema().plan;
  auto field_of = [&](const std::string& arg, bool written) {
    for (const auto& f : P::arg_fields())
      if (f.name == arg) {
        if (written && !f.out) throw_error(StatusCode::invalid_problem, name, "args." + arg, "is read, not written");
        return f;
      }
    throw_error(StatusCode::invalid_problem, name, "args." + arg, "no such argument");
  };
  std::vector<ArgField<typename P::Args>> in_fields, out_fields;
  for (const auto& arg : inputs) in_fields.push_back(field_of(arg, false));
  for (const auto& arg : outputs) out_fields.push_back(field_of(arg, true));
  // A written argument is a result (XLA's operands are immutable); as an operand too only when aliased.
  for (size_t i = 0; i < inputs.size(); ++i)
    if (in_fields[i].out && std::find(outputs.begin(), outputs.end(), inputs[i]) == outputs.end())
      throw_error(StatusCode::invalid_problem, name, "args." + inputs[i],
                  "is written: list it among the results (and, to read its old values, alias it to the operand)");

  // The plan per CUDA device it has run on (the one selected first among them).
  struct Plans {
    std::mutex mutex;
    std::deque<std::pair<int, P>> by_device;  // (a deque: runs hold pointers into it)
  };
  auto plans = std::make_shared<Plans>();
  plans->by_device.emplace_back(selected.device(), plan);
  FfiTarget target;
  target.plan = std::string(name);
  target.inputs = std::move(inputs);
  target.outputs = std::move(outputs);
  target.workspace = plan.workspace_size();
  target.backend = selected.backend();
  target.run = [plans, preference, in_fields, out_fields](const Stream& stream, std::span<const AnyTensorMut> in,
                                                          std::span<const AnyTensorMut> out,
                                                          Workspace workspace) -> Status {
    const P* chosen = nullptr;
    {
      std::lock_guard lock(plans->mutex);
      for (const auto& [device, p] : plans->by_device)
        if (device == stream.device()) chosen = &p;
      if (!chosen) {
        Expected<P> again = P::select(stream, plans->by_device.front().second.descriptor(), preference);
        if (!again) return again.status();
        if (again->workspace_size() > workspace.size)
          return Status::error(StatusCode::invalid_problem,
                               std::string(P::schema().plan) + ": workspace: the plan on device " +
                                   std::to_string(stream.device()) + " needs more than the call was given");
        chosen = &plans->by_device.emplace_back(stream.device(), std::move(*again)).second;
      }
    }
    typename P::Args args{};
    for (size_t i = 0; i < in.size(); ++i) in_fields[i].set(args, in[i]);
    for (size_t i = 0; i < out.size(); ++i) out_fields[i].set(args, out[i]);
    return chosen->run(stream, workspace, args);
  };
  return target;
}

template <class P>
int64_t register_ffi_target(const P& plan, const Stream& selected, const PlanPreference& preference,
                            std::vector<std::string> inputs, std::vector<std::string> outputs) {
  return add_ffi_target(ffi_target_of(plan, selected, preference, std::move(inputs), std::move(outputs)));
}

}  // namespace baracuda::python

#pragma once
// What a caller may ask of plan selection, and what a plan reports about the kernel it runs.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/stream.hpp"

namespace baracuda {

enum class Determinism : unsigned char { any, required };

struct PlanPreference {
  size_t workspace_limit = std::numeric_limits<size_t>::max();  // bytes select may plan for
  Determinism determinism = Determinism::any;
  // When set, must match the stream's backend (select fails otherwise): a guard for tests.
  std::optional<Backend> backend;
  // Force a kernel variant by name (tests and benchmarks); empty lets the plan choose.
  std::string variant;
};

struct PrecisionGuarantee {
  DType compute = DType::f32;      // the precision the math is done in
  DType accumulator = DType::f32;  // the precision of sums (reductions)
  bool bit_stable = true;          // same inputs, same hardware: same bits
  bool deterministic = true;       // no atomics whose order changes the result
  std::string to_string() const;
};

enum class Layout : unsigned char { contiguous, strided };
std::string_view layout_name(Layout layout);

struct KernelSku {
  std::string category;  // e.g. "elementwise"
  std::string op;        // e.g. "lerp", "lerp_backward"
  DType element = DType::f32;
  std::optional<DType> index;  // for ops with index tensors
  Layout layout = Layout::contiguous;
  int arch = 0;  // compute capability * 10 of the device (90 for Hopper); 0 on the CPU
  Backend backend = Backend::cpu;
  std::string variant;  // e.g. "vec16", "strided"
  PrecisionGuarantee precision;
  std::string to_string() const;
};

}  // namespace baracuda

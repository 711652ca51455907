#pragma once
// What a caller may ask of plan selection, what a plan reports about the kernel it runs, and the one
// plan type every op uses: Plan<Op>, whose life cycle (select -> can_implement -> workspace_size ->
// run) is written once (src/ops/plan_impl.hpp) over hooks each op family supplies in src/ops/.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

enum class Determinism : unsigned char { any, required };

struct PlanPreference {
  size_t workspace_limit = std::numeric_limits<size_t>::max();  // bytes select may plan for
  Determinism determinism = Determinism::any;
  // When set, must match the stream's backend (select fails otherwise): a guard for tests.
  std::optional<Backend> backend;
  // Force a kernel variant by name (tests and benchmarks); empty lets the plan choose.
  std::string variant;
  // Each row of the result bit-identical whatever the other rows and how many there are (the batch
  // an inference server happens to form): plans whose precision_guarantee() cannot say so refuse it
  // at select. Matmul and linear forward have such a kernel, at a cost docs/OPS.md states.
  bool batch_invariant = false;
};

struct PrecisionGuarantee {
  DType compute = DType::f32;      // the precision the math is done in
  DType accumulator = DType::f32;  // the precision of sums (reductions)
  bool bit_stable = true;          // same inputs, same hardware: same bits
  bool deterministic = true;       // no atomics whose order changes the result
  bool tf32 = false;               // f32 inputs rounded to TF32 (10 mantissa bits) before their products
  bool batch_invariant = false;    // a row's result does not depend on the other rows or their count
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
  std::string variant;  // e.g. "vectorized", "sorted.rows"
  PrecisionGuarantee precision;
  std::string to_string() const;
};

// ---------------------------------------------------------------------------------------------
// An op described as data: read by select, the tests, the profiler and the docs.

// A kernel variant a plan can be forced to (PlanPreference::variant).
struct VariantInfo {
  std::string_view name;
  bool deterministic = true;  // bit-identical across runs
  bool cpu = true;            // the backends that have it
  bool cuda = true;
  std::string_view summary;  // one line for the op matrix
  bool on(Backend backend) const { return backend == Backend::cuda ? cuda : cpu; }
};

struct OpSchema {
  std::string_view plan;                // "LerpPlan": errors name it
  std::string_view op;                  // "lerp": SKUs and the profiler name it
  std::string_view category;            // "elementwise", "indexing"
  std::span<const DType> dtypes;        // of descriptor.dtype
  std::span<const DType> index_dtypes;  // of descriptor.index_dtype; empty when the op has none
  std::span<const VariantInfo> variants;
  bool variant_by_views = false;  // with no forced variant, the views pick it at run (elementwise paths)
};

// One tensor argument of an op's Args, as data: its field and whether the op reads or writes it.
template <class Args>
struct ArgField {
  using ReadView = AnyTensorRef Args::*;
  using WrittenView = AnyTensorMut Args::*;
  std::string_view name;      // "a": errors say "args.a"
  ReadView in = nullptr;      // a view the op reads, or
  WrittenView out = nullptr;  // one it writes
  AnyTensorRef get(const Args& args) const { return out ? AnyTensorRef(args.*out) : args.*in; }
  void set(Args& args, const AnyTensorMut& view) const {
    if (out)
      args.*out = view;
    else
      args.*in = view;
  }
};

// What one argument must be for a given descriptor (ArgField order).
struct ArgSpec {
  std::string_view name;
  bool output = false;       // written (no zero strides on dims of size > 1)
  bool accumulates = false;  // an output the op adds into (its old contents matter)
  bool present = true;       // false: this descriptor does not use the argument: an input is ignored, an
                             // output must be empty (data null: nothing would be written to it)
  DType dtype = DType::f32;
  Shape shape;
  int64_t index_bound = 0;  // an index tensor: values in [0, index_bound) are valid; 0 otherwise
  bool optional = false;    // present, yet it may be left empty (data null): the op reads zeros
  bool sorted = false;      // an index tensor whose values must be nondecreasing (a sorted plan's segment
                            // ids, offsets): each value below its predecessor is counted as bad too
};

namespace detail {
// What select learns about the stream's backend, once: for CUDA the device's arch and SM count.
struct PlanTarget {
  Backend backend = Backend::cpu;
  int device = -1;
  int arch = 0;
  int sm_count = 0;
};
// What select decided, fixed for the plan's life (so runs are reproducible).
struct PlanChoice {
  int variant = -1;               // index into the schema's variants; -1: the views pick it at run
  size_t workspace = 0;           // bytes
  int64_t knob = 0;               // a family's own select-time decision (e.g. how a reduction is split)
  const void* kernels = nullptr;  // CUDA: the kernels select compiled (a process-wide cache owns them)
  // A composite plan's sub-plans, selected with it (e.g. LinearCrossEntropyPlan's matmuls and
  // cross-entropy): shared, so that a plan stays cheap to copy and owns no device memory.
  std::shared_ptr<const void> parts{};
};
}  // namespace detail

// An op's tag names its Descriptor and Args; every op derives its own, so that Plan<Op> is its type:
//   struct LerpOp : OpTag<BinaryParamDescriptor, BinaryParamArgs> {};
template <class DescriptorT, class ArgsT>
struct OpTag {
  using Descriptor = DescriptorT;
  using Args = ArgsT;
};

// The plan of every op. `Op` is a tag naming the op's Descriptor and Args (see ops/*.hpp); its hooks
// (validation, variants, argument table, kernels) live in the op family's src/ops/ file.
template <class Op>
class Plan {
 public:
  using Descriptor = typename Op::Descriptor;
  using Args = typename Op::Args;

  // Validates the descriptor and picks a kernel variant for the stream's backend and device.
  static Expected<Plan> select(const Stream& stream, const Descriptor& desc, const PlanPreference& preference = {});
  // Checks the views against the descriptor: dtypes, shapes, strides, capacities, alignment.
  Status can_implement(const Args& args) const;
  size_t workspace_size() const { return choice_.workspace; }
  // The kernel used for contiguous, aligned views (or the forced variant).
  KernelSku sku() const;
  // The kernel these args would run (sku() when can_implement rejects them: they would run nothing).
  KernelSku sku(const Args& args) const;
  PrecisionGuarantee precision_guarantee() const;
  // can_implement, then the kernels, queued on `stream` (which must be the one selected for).
  Status run(const Stream& stream, Workspace workspace, const Args& args) const;
  const Descriptor& descriptor() const { return desc_; }

  static const OpSchema& schema();
  static std::span<const ArgField<Args>> arg_fields();
  // Every argument's required dtype and shape for this plan's descriptor, in arg_fields() order.
  std::vector<ArgSpec> arg_specs() const;

 private:
  KernelSku sku_of(const Args* args) const;  // args null: contiguous, aligned views
  Descriptor desc_{};
  detail::PlanTarget target_;
  detail::PlanChoice choice_;
  bool selected_ = false;  // a default-constructed plan runs nothing
};

}  // namespace baracuda

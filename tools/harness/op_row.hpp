#pragma once
// Writing a row of the op table: a RowSpec<Plan> (samples, reference, tolerances, error cases, bench
// samples, and for a backward plan its forward) turned into an OpRow by make_row<Plan>. Everything
// else (allocation, binding, variants, checks) is generic over the plan's schema and ArgSpec table.
#include <algorithm>
#include <memory>
#include <utility>

#include "harness/op_table.hpp"

namespace baracuda::harness {

// A descriptor select must reject, from a valid one: its code and the field its message names.
template <class Descriptor>
struct DescriptorError {
  std::string_view label;
  void (*mutate)(Descriptor&) = nullptr;
  StatusCode code = StatusCode::invalid_problem;
  std::string_view field;
};

// A case of the profiler's standard suite; the case's shape means what `describe` makes of it.
template <class Descriptor>
struct BenchSample {
  std::string_view name;
  std::string_view torch;
  std::vector<DType> dtypes;
  std::vector<Shape> (*shapes)(Backend) = nullptr;
  Descriptor (*describe)(DType, const Shape&) = nullptr;
  bool deterministic = false;
  bool skewed = false;
  std::string_view gathered{};
  std::string_view omitted{};     // an optional output left empty (not computed), as the peer does not write it
  std::string_view transposed{};  // an input viewed as the transpose of a contiguous buffer (x.t())
  std::span<const ValueRange> value_ranges{};          // its inputs' own ranges, as a Sample's (sqrt's x >= 0)
  int64_t (*reference_terms)(const Shape&) = nullptr;  // see BenchCase
  std::string_view channels_last{};  // the arguments (comma-separated) viewed channels-last ([N, C, *] as [N, *, C])
};

template <class Plan>
struct RowSpec {
  using Descriptor = typename Plan::Descriptor;
  std::vector<Sample<Descriptor>> (*samples)() = nullptr;
  void (*reference)(const Descriptor&, RefIO&) = nullptr;
  double (*tolerance)(DType) = harness::tolerance;
  std::vector<ValueRange> value_ranges{};
  std::vector<DescriptorError<Descriptor>> errors{};
  std::vector<BenchSample<Descriptor>> bench{};
  // A backward plan's forward (forward_of<ForwardPlan>) and its gradients' forward arguments.
  std::unique_ptr<Problem> (*forward)(const Descriptor&) = nullptr;
  Gradient gradient{};
  // The CUDA backend takes only some samples (Problem::cuda_partial).
  bool cuda_partial = false;
};

namespace detail {
// The dtypes select must reject: the first of every dtype the schema does not list.
inline std::optional<DType> unsupported_dtype(std::span<const DType> supported) {
  for (DType d :
       {DType::boolean, DType::i8, DType::u8, DType::i32, DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64})
    if (std::find(supported.begin(), supported.end(), d) == supported.end()) return d;
  return std::nullopt;
}
}  // namespace detail

template <class Plan>
class TypedProblem final : public Problem {
 public:
  using Descriptor = typename Plan::Descriptor;
  using Args = typename Plan::Args;
  static constexpr bool kCountsBadIndices = requires(Args & a) { a.bad_index_count; };

  TypedProblem(const RowSpec<Plan>* row, Sample<Descriptor> sample) : row_(row), desc_(std::move(sample.desc)) {
    views = sample.views;
    only = sample.only;
    index_values = sample.index_values;
    skewed_indices = sample.skewed_indices;
    note = std::move(sample.note);
    value_ranges = std::move(sample.value_ranges);
  }

  const OpSchema& schema() const override { return Plan::schema(); }
  Status select(const Stream& stream, const PlanPreference& preference) override {
    Expected<Plan> plan = Plan::select(stream, desc_, preference);
    if (!plan) {
      plan_.reset();
      return plan.status();
    }
    plan_ = std::move(*plan);
    return Status::ok();
  }
  std::vector<ArgSpec> arg_specs() const override { return plan_->arg_specs(); }
  void resize(int sets) override { args_.assign(static_cast<size_t>(sets), Args{}); }
  void bind(int set, int arg, const AnyTensorMut& view) override { Plan::arg_fields()[arg].set(args_[set], view); }
  AnyTensorRef view(int set, int arg) const override { return Plan::arg_fields()[arg].get(args_[set]); }
  bool counts_bad_indices() const override { return kCountsBadIndices; }
  void bind_bad_index_count([[maybe_unused]] int set, [[maybe_unused]] int64_t* count) override {
    if constexpr (kCountsBadIndices) args_[set].bad_index_count = count;
  }
  Status can_implement(int set) const override { return plan_->can_implement(args_[set]); }
  Status run(const Stream& stream, Workspace workspace, int set) const override {
    return plan_->run(stream, workspace, args_[set]);
  }
  KernelSku sku(int set) const override { return plan_->sku(args_[set]); }
  KernelSku plan_sku() const override { return plan_->sku(); }
  PrecisionGuarantee precision_guarantee() const override { return plan_->precision_guarantee(); }
  size_t workspace_size() const override { return plan_->workspace_size(); }
  void reference(RefIO& io) const override { row_->reference(desc_, io); }
  std::unique_ptr<Problem> forward() const override { return row_ && row_->forward ? row_->forward(desc_) : nullptr; }

  std::vector<SelectError> select_errors() const override {
    std::vector<SelectError> errors;
    auto add = [&](std::string label, StatusCode code, std::string field, Descriptor d) {
      errors.push_back({std::move(label), code, std::move(field),
                        [d](const Stream& stream) { return Plan::select(stream, d).status(); }});
    };
    if (std::optional<DType> bad = detail::unsupported_dtype(schema().dtypes)) {
      Descriptor d = desc_;
      d.dtype = *bad;
      add("unsupported dtype " + std::string(dtype_name(*bad)), StatusCode::unsupported, "descriptor.dtype", d);
    }
    if constexpr (requires { desc_.index_dtype; }) {
      Descriptor d = desc_;
      d.index_dtype = DType::f32;
      add("f32 indices", StatusCode::unsupported, "descriptor.index_dtype", d);
    }
    if (row_) {
      for (const DescriptorError<Descriptor>& e : row_->errors) {
        Descriptor d = desc_;
        e.mutate(d);
        add(std::string(e.label), e.code, std::string(e.field), d);
      }
    }
    return errors;
  }

 private:
  const RowSpec<Plan>* row_;
  Descriptor desc_;
  std::optional<Plan> plan_;
  std::vector<Args> args_ = std::vector<Args>(1);
};

// A backward row's `forward`: the forward plan of the same descriptor.
template <class ForwardPlan>
std::unique_ptr<Problem> forward_of(const typename ForwardPlan::Descriptor& desc) {
  return std::make_unique<TypedProblem<ForwardPlan>>(nullptr, Sample<typename ForwardPlan::Descriptor>{desc});
}

template <class Plan>
class TypedRow final : public OpRow {
 public:
  using Descriptor = typename Plan::Descriptor;

  explicit TypedRow(RowSpec<Plan> spec) : spec_(std::move(spec)) {
    for (const BenchSample<Descriptor>& b : spec_.bench) {
      const auto describe = b.describe;
      bench_.push_back(
          {b.name, b.torch, b.dtypes, b.shapes, b.deterministic, b.skewed, b.gathered, b.omitted, b.transposed,
           b.channels_last, b.reference_terms,
           [this, describe, ranges = b.value_ranges](DType dtype, const Shape& shape) -> std::unique_ptr<Problem> {
             Sample<Descriptor> sample{describe(dtype, shape)};
             sample.value_ranges.assign(ranges.begin(), ranges.end());
             return std::make_unique<TypedProblem<Plan>>(&spec_, std::move(sample));
           }});
    }
  }
  TypedRow(const TypedRow&) = delete;  // bench_ closures point at spec_
  TypedRow& operator=(const TypedRow&) = delete;

  const OpSchema& schema() const override { return Plan::schema(); }
  std::vector<std::unique_ptr<Problem>> samples(DType dtype) const override {
    std::vector<std::unique_ptr<Problem>> out;
    for (Sample<Descriptor>& s : spec_.samples()) {
      if (!s.dtypes.empty() && std::find(s.dtypes.begin(), s.dtypes.end(), dtype) == s.dtypes.end()) continue;
      s.desc.dtype = dtype;
      out.push_back(std::make_unique<TypedProblem<Plan>>(&spec_, std::move(s)));
      out.back()->cuda_partial = spec_.cuda_partial;
    }
    return out;
  }
  double tolerance(DType dtype) const override { return spec_.tolerance(dtype); }
  std::span<const ValueRange> value_ranges() const override { return spec_.value_ranges; }
  const Gradient* gradient() const override { return spec_.forward ? &spec_.gradient : nullptr; }
  std::span<const BenchCase> bench() const override { return bench_; }

 private:
  RowSpec<Plan> spec_;
  std::vector<BenchCase> bench_;
};

template <class Plan>
std::unique_ptr<OpRow> make_row(RowSpec<Plan> spec) {
  return std::make_unique<TypedRow<Plan>>(std::move(spec));
}

// Each family's rows (tools/harness/rows/<family>.cpp), gathered by op_table().
std::vector<std::unique_ptr<OpRow>> binary_param_rows();
std::vector<std::unique_ptr<OpRow>> indexing_rows();
std::vector<std::unique_ptr<OpRow>> softmax_rows();
std::vector<std::unique_ptr<OpRow>> reduce_rows();
std::vector<std::unique_ptr<OpRow>> scan_rows();
std::vector<std::unique_ptr<OpRow>> segment_rows();
std::vector<std::unique_ptr<OpRow>> unary_rows();
std::vector<std::unique_ptr<OpRow>> binary_rows();
std::vector<std::unique_ptr<OpRow>> copy_rows();
std::vector<std::unique_ptr<OpRow>> gated_rows();
std::vector<std::unique_ptr<OpRow>> ternary_rows();
std::vector<std::unique_ptr<OpRow>> norm_rows();
std::vector<std::unique_ptr<OpRow>> loss_rows();
std::vector<std::unique_ptr<OpRow>> pointwise_loss_rows();  // (loss_rows includes them)
std::vector<std::unique_ptr<OpRow>> matmul_rows();
std::vector<std::unique_ptr<OpRow>> attention_rows();
std::vector<std::unique_ptr<OpRow>> random_rows();
std::vector<std::unique_ptr<OpRow>> rotary_rows();

}  // namespace baracuda::harness

#pragma once
// The op table (PyTorch's OpInfo is the model): one row per plan, holding a sample generator, an f64
// reference, per-dtype tolerances, error cases, the profiler's bench samples and, for a backward plan,
// its forward and which forward argument each gradient belongs to. Rows are written per family in
// tools/harness/rows/ with make_row<Plan> (harness/op_row.hpp); the drivers (tests/test_op_table.cpp)
// and the profiler (tools/profiler/cases/op_table.cpp) read them only through the interface here.
// Every tensor is allocated from the plan's ArgSpec table, so a new op costs one row.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "harness/data.hpp"

namespace baracuda::harness {

// How a sample lays out its tensors.
enum class Views : uint8_t {
  contiguous,
  padded,         // gaps after every row (1-D: every other element)
  transposed,     // column-major
  broadcast,      // inputs repeat along their outermost dim of size > 1 (a zero stride); outputs padded
  misaligned,     // the first element one element past a 16-byte boundary
  channels_last,  // rank 3 and up: dim 1 innermost, then the others in order (NHWC); lower ranks contiguous
};
std::string_view views_name(Views views);

struct IndexRange {
  int64_t lo = 0, hi = 0;  // index values drawn from [lo, hi)
};
struct ValueRange {
  std::string_view arg;  // the argument's random values lie in [lo, hi) (integers: whole ones)
  double lo = -1.0, hi = 1.0;
  // A shuffled grid over [lo, hi) instead: floats no two closer than (hi - lo) / elements, none at
  // 0 (max / min's finite differences never step across a tie, nor across an initial value of 0).
  bool distinct = false;
};

// A sample of a row: the descriptor (its dtype is set by the driver) and how its tensors are laid out.
template <class Descriptor>
struct Sample {
  Descriptor desc{};
  Views views = Views::contiguous;
  std::string_view only{};                   // give `views` to this argument alone; empty: to every one
  std::optional<IndexRange> index_values{};  // default: [-2, index_bound + 2), so bad values occur
  std::string note{};                        // what the shapes alone do not say (dim, padding, weight)
  std::vector<DType> dtypes{};               // the dtypes it runs at; empty: every dtype of the schema
  std::vector<ValueRange> value_ranges{};    // its own, before the row's (which hold for floats alone)
  bool skewed_indices = false;               // index values log-uniform: the low ones far more frequent
};

// ---------------------------------------------------------------------------------------------
// References: naive f64, reading inputs through HostViews and writing expected outputs.

// The expected values of one output, row-major over its shape: every element (tests) or the evenly
// spaced ones the profiler's verify_sampled checks (step total / max_checks, and the last).
class RefOutput {
 public:
  RefOutput() = default;
  RefOutput(int64_t total, int64_t max_checks);
  int64_t total() const { return total_; }
  int64_t max_checks() const { return max_checks_; }
  bool wanted(int64_t i) const { return slot(i) >= 0; }
  void set(int64_t i, double value);  // a value (its magnitude is its own)
  void add(int64_t i, double term);   // a term of a sum (the magnitude sums the terms')
  // A value computed from `terms` elements otherwise than as their sum (a product, a root of a sum):
  // its error scale and term count, as a sum's would be kept.
  void set(int64_t i, double value, double magnitude, int64_t terms);
  double value(int64_t i) const;      // of a wanted element
  double magnitude(int64_t i) const;  // the scale its tolerance is relative to
  int64_t terms(int64_t i) const;     // how many values it sums (1 for a value)
  // The scale verify_sampled judges element i against: within (1 + magnitude) times the dtype's
  // tolerance `tol` plus one rounding of the plan's accumulator per term beyond the first (a plan
  // that sums in the output's own 16-bit type, e.g. with atomics, is that much less exact).
  double verify_scale(int64_t i, double tol, DType accumulator) const;
  // Starts every wanted element from an output's contents (an op that accumulates into it).
  void start_from(const HostView& before);

 private:
  int64_t slot(int64_t i) const;
  int64_t total_ = 0, max_checks_ = 0, step_ = 1;
  std::vector<double> value_, magnitude_;
  std::vector<int64_t> terms_;
};

// What a reference reads and writes, by argument name (arg_fields order underneath).
struct RefIO {
  std::vector<ArgSpec> specs;
  std::vector<HostView> inputs;    // per argument: an input's values
  std::vector<RefOutput> outputs;  // per argument: an output's expected values
  int64_t bad_index_count = 0;     // out-of-range index values (not the padding index) used

  explicit RefIO(std::vector<ArgSpec> arg_specs);
  const HostView& in(std::string_view name) const;
  RefOutput& out(std::string_view name);
  int index_of(std::string_view name) const;  // throws std::out_of_range naming an unknown argument
};

// ---------------------------------------------------------------------------------------------
// The type-erased row and the plan instances it makes.

// An error select must report for a descriptor: its code and the field its message names.
struct SelectError {
  std::string label;
  StatusCode code = StatusCode::invalid_problem;
  std::string field;
  std::function<Status(const Stream&)> select;
};

// One plan for one descriptor with `sets` copies of its args (the profiler rotates them).
class Problem {
 public:
  virtual ~Problem() = default;
  virtual const OpSchema& schema() const = 0;
  virtual Status select(const Stream& stream, const PlanPreference& preference) = 0;
  // The rest needs a selected plan.
  virtual std::vector<ArgSpec> arg_specs() const = 0;
  virtual void resize(int sets) = 0;  // args sets, every view empty
  virtual void bind(int set, int arg, const AnyTensorMut& view) = 0;
  virtual AnyTensorRef view(int set, int arg) const = 0;
  virtual bool counts_bad_indices() const = 0;                     // the args have bad_index_count
  virtual void bind_bad_index_count(int set, int64_t* count) = 0;  // a no-op when they have none
  virtual Status can_implement(int set = 0) const = 0;
  virtual Status run(const Stream& stream, Workspace workspace, int set = 0) const = 0;
  virtual KernelSku sku(int set = 0) const = 0;  // of these args
  virtual KernelSku plan_sku() const = 0;        // for contiguous, aligned views
  virtual PrecisionGuarantee precision_guarantee() const = 0;
  virtual size_t workspace_size() const = 0;
  virtual void reference(RefIO& io) const = 0;
  // A backward row's forward plan for this descriptor (not yet selected); null for other rows.
  virtual std::unique_ptr<Problem> forward() const = 0;
  // Descriptors select must reject: unsupported dtypes and the row's own cases, from this one.
  virtual std::vector<SelectError> select_errors() const = 0;

  Views views = Views::contiguous;
  // The CUDA backend takes only some of the row's samples (a family whose GPU path covers part of
  // its descriptors): there select may refuse this one, unsupported, naming a descriptor field.
  bool cuda_partial = false;
  std::string_view only;
  std::optional<IndexRange> index_values;
  bool skewed_indices = false;
  std::string note;
  std::vector<ValueRange> value_ranges;  // the sample's own
};

// How a backward row's gradients map onto its forward's arguments.
struct Gradient {
  std::string_view cotangent;  // the backward input that is the gradient of the forward's output ("dout")
  std::string_view output;     // that output ("out")
  std::vector<std::pair<std::string_view, std::string_view>> grads;  // backward output -> forward input
  // The forward's further outputs and their cotangents (backward input -> forward output: var_mean's
  // "dmean" -> "mean"), where the descriptor has them: their products join dout's in the loss.
  std::vector<std::pair<std::string_view, std::string_view>> more_cotangents{};
};

// A case of the profiler's standard suite, as baracuda-profiler names it and bench/compare_torch.py
// times PyTorch against it.
struct BenchCase {
  std::string_view name;   // the profiler's op name ("lerp_feature_weight")
  std::string_view torch;  // the PyTorch peer (compare_torch.py's builder key)
  std::vector<DType> dtypes;
  std::vector<Shape> (*shapes)(Backend) = nullptr;  // standard shapes; the first is the large one
  bool deterministic = false;                       // Determinism::required
  bool skewed = false;                              // index values log-uniform (small ones far more frequent)
  std::string_view gathered;                        // an input read only where indexed: its bytes count as the output's
  std::string_view omitted;                         // an optional output left empty: not computed, not counted
  std::string_view transposed;                      // an input viewed as the transpose of a contiguous buffer
  std::string_view channels_last;                   // arguments (comma-separated) viewed [N, C, *] as [N, *, C]
  // How many terms the reference sums for each element of an output (a matmul's K), where that is
  // more than the inputs' elements per output element: the profiler checks that many times fewer.
  int64_t (*reference_terms)(const Shape&) = nullptr;
  std::function<std::unique_ptr<Problem>(DType, const Shape&)> problem;  // a case's shape -> its plan
};

class OpRow {
 public:
  virtual ~OpRow() = default;
  virtual const OpSchema& schema() const = 0;
  virtual std::vector<std::unique_ptr<Problem>> samples(DType dtype) const = 0;
  virtual double tolerance(DType dtype) const = 0;
  virtual std::span<const ValueRange> value_ranges() const = 0;
  virtual const Gradient* gradient() const = 0;  // null unless a backward row
  virtual std::span<const BenchCase> bench() const = 0;
};

// Every row, in family order.
std::span<const OpRow* const> op_table();

// ---------------------------------------------------------------------------------------------
// A problem's tensors on one backend, for the tests: laid out as its sample says, inputs random (an
// index argument's values spread over [-2, index_bound + 2), so bad values occur), outputs poisoned
// or, where the op accumulates into them, random.

// What an output holds before a run where the op does not read it: NaN, a sentinel for integers, a
// byte that is neither false nor true for bools.
double poison_value(DType dtype);
// The view layout of an argument under `views`.
TensorSpec layout(const ArgSpec& spec, Views views);

struct ProblemTensors {
  Backend backend = Backend::cpu;
  std::vector<ArgSpec> specs;
  std::vector<Tensor> tensors;               // per argument; empty where not present
  std::vector<std::vector<double>> initial;  // per output: its buffer before every run
  Buffer counter;                            // the bad index count, when the args have one
  Buffer workspace;

  // Outputs back to `initial`, the counter to zero, a large enough workspace; then the plan's run.
  Status run(const Problem& problem, const Stream& stream);
  Status download_outputs();
  Expected<int64_t> bad_index_count() const;
  // The expected outputs for every element (accumulating outputs start from `initial`).
  RefIO reference(const Problem& problem) const;
  // Buffer elements of outputs outside their views that a run changed (first few, described).
  std::string written_outside_views() const;
};

// Allocates every argument the problem's (selected) plan uses and binds it to args set 0; with
// `contiguous_only` the sample's layout is ignored.
Expected<ProblemTensors> allocate(Problem& problem, Backend backend, std::span<const ValueRange> ranges,
                                  std::mt19937_64& rng, bool contiguous_only = false);

}  // namespace baracuda::harness

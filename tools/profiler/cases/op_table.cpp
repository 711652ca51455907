// baracuda-profiler's cases: one per bench sample of every op-table row. A case allocates its plan's
// arguments from the ArgSpec table, `sets` copies of each to rotate through, binds every set's args
// once at setup (a timed run is the plan's run and nothing more), and verifies set 0 against the
// row's f64 reference on an evenly spaced sample of each large output.
#include "profiler/cases/op_table.hpp"

#include <algorithm>

#include "harness/op_table.hpp"
#include "profiler/case_tensor.hpp"

namespace baracuda::profiler {
namespace {

constexpr int64_t kMaxChecks = int64_t{1} << 20;

PlanPreference preference_of(const harness::BenchCase& bench, PlanPreference preference) {
  if (bench.deterministic) preference.determinism = Determinism::required;
  return preference;
}

// Whether `name` is one of the comma-separated `names`.
bool names_in(std::string_view names, std::string_view name) {
  while (!names.empty()) {
    const size_t comma = names.find(',');
    if (names.substr(0, comma) == name) return true;
    if (comma == std::string_view::npos) break;
    names.remove_prefix(comma + 1);
  }
  return false;
}

double arg_bytes(const ArgSpec& s) { return static_cast<double>(s.shape.numel()) * dtype_size(s.dtype); }

// The fewest bytes the op must move: each input read once, each output written once (and read too
// where the op accumulates into it); an input read only where indexed counts as much as the output;
// an optional output the case leaves empty counts nothing.
double bytes_moved(const std::vector<ArgSpec>& specs, std::string_view gathered, std::string_view omitted) {
  double bytes = 0, outputs = 0;
  for (const ArgSpec& s : specs) {
    if (!s.present || s.name == gathered || s.name == omitted) continue;
    bytes += arg_bytes(s) * (s.accumulates ? 2 : 1);
    if (s.output) outputs += arg_bytes(s);
  }
  return bytes + (gathered.empty() ? 0.0 : outputs);
}

class TableCase final : public ProfilerCase {
 public:
  TableCase(const harness::OpRow& row, const harness::BenchCase& bench) : row_(row), bench_(bench) {}

  double bytes_moved(const CaseConfig& c) const override {
    std::unique_ptr<harness::Problem> p = bench_.problem(c.dtype, c.shape);
    if (!p->select(c.stream, preference_of(bench_, c.preference))) return 0;  // setup reports why
    return profiler::bytes_moved(p->arg_specs(), bench_.gathered, bench_.omitted);
  }

  Status setup(const CaseConfig& c, int sets) override {
    stream_ = c.stream;
    dtype_ = c.dtype;
    shape_ = c.shape;
    problem_ = bench_.problem(c.dtype, c.shape);
    if (Status s = problem_->select(c.stream, preference_of(bench_, c.preference)); !s) return s;
    Expected<harness::Buffer> ws = allocate_workspace(c.stream, problem_->workspace_size());
    if (!ws) return ws.status();
    workspace_buffer_ = std::move(*ws);
    workspace_ = {workspace_buffer_.data(), workspace_buffer_.size()};
    specs_ = problem_->arg_specs();
    tensors_ = std::vector<CaseTensor>(specs_.size());
    before_ = std::vector<HostSnapshot>(specs_.size());
    problem_->resize(sets);
    for (size_t k = 0; k < specs_.size(); ++k) {
      if (!specs_[k].present) continue;
      if (specs_[k].optional && specs_[k].name == bench_.omitted) {
        specs_[k].present = false;  // left empty: neither allocated, bound, counted nor verified
        continue;
      }
      if (Status s = allocate(c, k, sets); !s) return s;
      if (specs_[k].name == bench_.transposed) tensors_[k].view_transposed();
      if (names_in(bench_.channels_last, specs_[k].name)) tensors_[k].view_channels_last();
      for (int set = 0; set < sets; ++set) problem_->bind(set, static_cast<int>(k), tensors_[k].mut(set));
    }
    return Status::ok();
  }

  KernelSku sku() const override { return problem_->sku(0); }

  Status run(int set) override { return problem_->run(stream_, workspace_, set); }

  Verification verify() override {
    harness::RefIO io(specs_);
    int64_t dense = 1;  // the largest argument the op reads or writes in full
    for (const ArgSpec& s : specs_)
      if (s.present && s.name != bench_.gathered) dense = std::max(dense, s.shape.numel());
    for (size_t k = 0; k < specs_.size(); ++k) {
      const ArgSpec& s = specs_[k];
      if (!s.present) continue;
      if (!s.output) {
        io.inputs[k] = tensors_[k].host_view();
        continue;
      }
      if (Status st = tensors_[k].download_set0(); !st) return {false, 0, 0, 0, 0, st.to_string()};
      // About kMaxChecks reference terms per output: fewer checks where each element sums many.
      const int64_t n = s.shape.numel(), terms = bench_.reference_terms ? bench_.reference_terms(shape_) : 1;
      io.outputs[k] = harness::RefOutput(n, std::max<int64_t>(1, kMaxChecks * n / dense / std::max<int64_t>(1, terms)));
      if (s.accumulates) io.outputs[k].start_from(before_[k].view(s.shape));
    }
    problem_->reference(io);
    std::vector<Verification> parts;
    const double tol = row_.tolerance(dtype_);
    const DType accumulator = problem_->precision_guarantee().accumulator;
    for (size_t k = 0; k < specs_.size(); ++k) {
      if (!specs_[k].present || !specs_[k].output) continue;
      const harness::HostView got = tensors_[k].host_view();
      const harness::RefOutput& want = io.outputs[k];
      parts.push_back(verify_sampled(
          want.total(), want.max_checks(), tol, [&](int64_t i) { return got.at(i); },
          [&](int64_t i) { return want.value(i); }, [&](int64_t i) { return want.verify_scale(i, tol, accumulator); }));
    }
    return combine(parts);
  }

 private:
  // Index values over [0, index_bound); outputs the op overwrites poisoned; the rest random.
  Status allocate(const CaseConfig& c, size_t k, int sets) {
    const ArgSpec& s = specs_[k];
    CaseTensor& t = tensors_[k];
    const uint64_t seed = c.seed + k;
    if (s.index_bound > 0)
      return t.allocate_indices(c.stream, s.dtype, s.shape, sets, seed, s.index_bound, bench_.skewed, s.sorted);
    if (s.output && !s.accumulates) return t.allocate_output(c.stream, s.dtype, s.shape, sets);
    double lo = -1.0, hi = 1.0;  // the case's own range (BenchSample::value_ranges), else the row's
    for (const harness::ValueRange& r : row_.value_ranges())
      if (r.arg == s.name) lo = r.lo, hi = r.hi;
    for (const harness::ValueRange& r : problem_->value_ranges)
      if (r.arg == s.name) lo = r.lo, hi = r.hi;
    if (Status st = t.allocate_random(c.stream, s.dtype, s.shape, sets, seed, lo, hi); !st) return st;
    if (s.output) before_[k] = t.snapshot();  // set 0 before any run
    return Status::ok();
  }

  const harness::OpRow& row_;
  const harness::BenchCase& bench_;
  Shape shape_;
  Stream stream_ = Stream::host();
  DType dtype_ = DType::f32;
  std::unique_ptr<harness::Problem> problem_;
  std::vector<ArgSpec> specs_;
  std::vector<CaseTensor> tensors_;
  std::vector<HostSnapshot> before_;  // accumulating outputs before the first run
  harness::Buffer workspace_buffer_;
  Workspace workspace_;
};

// The plan SKUs a bench case can run on this stream: its default and every variant of the schema.
std::vector<KernelSku> skus_of(const harness::BenchCase& bench, const Stream& stream, DType dtype) {
  std::unique_ptr<harness::Problem> p = bench.problem(dtype, bench.shapes(stream.backend()).front());
  std::vector<std::string> variants = {""};
  for (const VariantInfo& v : p->schema().variants) variants.emplace_back(v.name);
  std::vector<KernelSku> out;
  for (const std::string& variant : variants) {
    PlanPreference pref;
    pref.variant = variant;
    if (!p->select(stream, preference_of(bench, pref))) continue;
    const KernelSku sku = p->plan_sku();
    if (std::none_of(out.begin(), out.end(), [&](const KernelSku& k) { return k.to_string() == sku.to_string(); }))
      out.push_back(sku);
  }
  return out;
}

const bool registered = [] {
  for (OpEntry& entry : op_table_entries()) register_op(std::move(entry));
  return true;
}();

}  // namespace

std::vector<OpEntry> op_table_entries() {
  std::vector<OpEntry> entries;
  for (const harness::OpRow* row : harness::op_table()) {
    for (const harness::BenchCase& bench : row->bench()) {
      const harness::BenchCase* b = &bench;
      entries.push_back({std::string(b->name), std::string(row->schema().category), std::string(b->torch), b->dtypes,
                         b->shapes, [row, b] { return std::make_unique<TableCase>(*row, *b); },
                         [b](const Stream& s, DType d) { return skus_of(*b, s, d); }});
    }
  }
  return entries;
}

}  // namespace baracuda::profiler

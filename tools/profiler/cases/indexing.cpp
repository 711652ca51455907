// Profiler cases of the indexing family. A case's shape is [A, B, K]:
//   embedding*:     weight [A, B] (V x D), K indices, values [K, B]
//   index_select_rows: src [A, B], K indices along dim 0, values [K, B]
//   index_select*:  src [A, B], K indices along dim 1, values [A, K]
//   gather*, scatter_add: src [A, B], index [A, K] along dim 1, values [A, K]
//   gather_rows*:   src [A, B], index [K, B] along dim 0, values [K, B]
// Backward cases overwrite their gradient (accumulate = false: the zeroing is part of the op, as in
// PyTorch's ops, which allocate and zero it); scatter_add accumulates into its destination as
// Tensor.scatter_add_ does.
#include <cmath>
#include <type_traits>
#include <unordered_map>

#include "harness/buffer.hpp"
#include "harness/data.hpp"
#include "profiler/case_tensor.hpp"
#include "profiler/profiler.hpp"

namespace baracuda::profiler {
namespace {

enum class Geometry { embedding, index_select_rows, index_select, gather, gather_rows };

// Geometries whose index runs along dim 0 of the table.
bool picks_rows(Geometry g) {
  return g == Geometry::embedding || g == Geometry::index_select_rows || g == Geometry::gather_rows;
}
// Geometries with one index value per element (gather and its backward, scatter_add).
bool per_element(Geometry g) { return g == Geometry::gather || g == Geometry::gather_rows; }

struct Spec {
  Geometry geometry;
  bool skewed = false;         // log-uniform index values
  bool deterministic = false;  // Determinism::required
  bool overwrite = false;      // accumulate = false (backward ops)
};

struct Dims {
  int64_t a, b, k;
  Shape table() const { return {a, b}; }
  Shape index(Geometry g) const { return !per_element(g) ? Shape{k} : picks_rows(g) ? Shape{k, b} : Shape{a, k}; }
  Shape values(Geometry g) const { return picks_rows(g) ? Shape{k, b} : Shape{a, k}; }
  int64_t index_range(Geometry g) const { return picks_rows(g) ? a : b; }
};

Dims dims_of(const Shape& s) { return {s.dims[0], s.rank > 1 ? s.dims[1] : 1, s.rank > 2 ? s.dims[2] : 1}; }

// The plan's descriptor for a case, by descriptor type (forward and backward plans share one).
template <class Plan>
typename Plan::Descriptor describe(DType dt, const Dims& d, const Spec& spec) {
  using Descriptor = typename Plan::Descriptor;
  const int dim = picks_rows(spec.geometry) ? 0 : 1;
  Descriptor desc;
  if constexpr (std::is_same_v<Descriptor, EmbeddingDescriptor>) {
    desc = {dt, DType::i64, d.a, d.b, d.k, {}};
  } else if constexpr (std::is_same_v<Descriptor, IndexSelectDescriptor>) {
    desc = {dt, DType::i64, d.table(), dim, d.k};
  } else {  // GatherDescriptor, ScatterAddDescriptor
    desc = {dt, DType::i64, d.table(), d.index(spec.geometry), dim};
  }
  desc.accumulate = !spec.overwrite;
  return desc;
}

constexpr int64_t kMaxChecks = 1 << 20;

template <class Plan, bool kScatter>
class IndexCase : public ProfilerCase {
 public:
  explicit IndexCase(Spec spec) : spec_(spec) {}

  double bytes_moved(const CaseConfig& c) const override {
    const Dims d = dims_of(c.shape);
    const double s = static_cast<double>(dtype_size(c.dtype));
    const double index = 8.0 * d.index(spec_.geometry).numel();
    const double values = s * d.values(spec_.geometry).numel();
    // Gather: read each selected element once, write it once. Scatter: read the values once and
    // write the table once (zeroing and sums fused in the ideal); scatter_add also reads the table.
    if (!kScatter) return index + 2 * values;
    return index + values + s * d.table().numel() * (spec_.overwrite ? 1 : 2);
  }

  Status setup(const CaseConfig& c, int sets) override {
    config_ = c;
    dims_ = dims_of(c.shape);
    PlanPreference pref = c.preference;
    if (spec_.deterministic) pref.determinism = Determinism::required;
    Expected<Plan> plan = Plan::select(c.stream, describe<Plan>(c.dtype, dims_, spec_), pref);
    if (!plan) return plan.status();
    plan_ = *plan;
    Expected<harness::Buffer> ws = allocate_workspace(c.stream, plan_.workspace_size());
    if (!ws) return ws.status();
    workspace_ = std::move(*ws);
    const Geometry g = spec_.geometry;
    if (Status s = index_.allocate_indices(c.stream, DType::i64, dims_.index(g), sets, c.seed, dims_.index_range(g),
                                           spec_.skewed);
        !s)
      return s;
    if (kScatter) {
      if (Status s = values_.allocate_random(c.stream, c.dtype, dims_.values(g), sets, c.seed + 1); !s) return s;
      if (Status s = table_.allocate_random(c.stream, c.dtype, dims_.table(), sets, c.seed + 2); !s) return s;
      if (!spec_.overwrite) table_before_ = table_.snapshot();  // set 0 before any run
      return Status::ok();
    }
    if (Status s = table_.allocate_random(c.stream, c.dtype, dims_.table(), sets, c.seed + 1); !s) return s;
    return values_.allocate_output(c.stream, c.dtype, dims_.values(g), sets);
  }

  KernelSku sku() const override { return plan_.sku(args(0)); }

  Status run(int set) override { return plan_.run(config_.stream, {workspace_.data(), workspace_.size()}, args(set)); }

  Verification verify() override {
    CaseTensor& out = kScatter ? table_ : values_;
    if (Status s = out.download_set0(); !s) return {false, 0, 0, 0, 0, s.to_string()};
    return kScatter ? verify_scatter() : verify_gather();
  }

 private:
  auto args(int set) const {
    // Every op's args list (values or table, index, table or values, counter) in its own roles.
    auto& self = const_cast<IndexCase&>(*this);
    if constexpr (kScatter) {
      return typename Plan::Args{values_.ref(set), index_.ref(set), self.table_.mut(set), nullptr};
    } else {
      return typename Plan::Args{table_.ref(set), index_.ref(set), self.values_.mut(set), nullptr};
    }
  }

  // The index value and table element of values element (r, c).
  int64_t index_of(int64_t r, int64_t c) const {
    switch (spec_.geometry) {
      case Geometry::embedding:
      case Geometry::index_select_rows:
        return static_cast<int64_t>(index_.at(r));
      case Geometry::index_select:
        return static_cast<int64_t>(index_.at(c));
      case Geometry::gather_rows:
        return static_cast<int64_t>(index_.at(r * dims_.b + c));
      default:
        return static_cast<int64_t>(index_.at(r * dims_.k + c));
    }
  }
  int64_t table_element(int64_t r, int64_t c, int64_t idx) const {
    return picks_rows(spec_.geometry) ? idx * dims_.b + c : r * dims_.b + idx;
  }

  Verification verify_gather() const {
    const int64_t cols = values_.shape().dims[1];
    return verify_sampled(
        values_.numel(), kMaxChecks, 0.0, [&](int64_t i) { return values_.at(i); },
        [&](int64_t i) {
          const int64_t r = i / cols, c = i % cols;
          return table_.at(table_element(r, c, index_of(r, c)));
        });
  }

  // Sums every contribution to a sample of table rows, then compares those rows.
  Verification verify_scatter() const {
    const int64_t rows = dims_.a, cols = dims_.b;
    const int64_t sample_rows =
        std::max<int64_t>(1, std::min<int64_t>(rows, kMaxChecks / 64 / std::max<int64_t>(cols, 1)));
    const int64_t step = std::max<int64_t>(1, rows / sample_rows);
    std::unordered_map<int64_t, size_t> slot;  // table row -> sample slot
    for (int64_t r = 0; r < rows; r += step) slot.emplace(r, slot.size());
    std::vector<double> sum(slot.size() * cols, 0.0), magnitude(sum.size(), 0.0);
    const int64_t value_rows = values_.shape().dims[0], value_cols = values_.shape().dims[1];
    for (int64_t r = 0; r < value_rows; ++r) {
      for (int64_t c = 0; c < value_cols; ++c) {
        const int64_t idx = index_of(r, c);
        const int64_t element = table_element(r, c, idx);
        const auto it = slot.find(element / cols);
        if (it == slot.end()) continue;
        const double v = values_.at(r * value_cols + c);
        sum[it->second * cols + element % cols] += v;
        magnitude[it->second * cols + element % cols] += std::fabs(v);
        const bool row_index = picks_rows(spec_.geometry) && !per_element(spec_.geometry);
        if (row_index && c == 0) {
          // Embedding rows: add the rest of the row here (the whole row shares the index).
          for (int64_t cc = 1; cc < value_cols; ++cc) {
            const double w = values_.at(r * value_cols + cc);
            sum[it->second * cols + cc] += w;
            magnitude[it->second * cols + cc] += std::fabs(w);
          }
        }
        if (row_index) break;
      }
    }
    std::vector<int64_t> sampled(slot.size());
    for (const auto& [row, s] : slot) sampled[s] = row;
    const double tol = harness::tolerance(config_.dtype);
    return verify_sampled(
        static_cast<int64_t>(sum.size()), static_cast<int64_t>(sum.size()), tol,
        [&](int64_t i) { return table_.at(sampled[i / cols] * cols + i % cols); },
        [&](int64_t i) {
          const double before = spec_.overwrite ? 0.0 : table_before_.at(sampled[i / cols] * cols + i % cols);
          return before + sum[i];
        },
        [&](int64_t i) { return magnitude[i]; });
  }

  Spec spec_;
  CaseConfig config_;
  Dims dims_{};
  Plan plan_;
  harness::Buffer workspace_;
  CaseTensor table_, index_, values_;
  HostSnapshot table_before_;
};

template <class Plan, bool kScatter>
std::vector<KernelSku> skus_of(const Stream& stream, DType dtype, Spec spec) {
  std::vector<KernelSku> out;
  for (const char* variant : {"", "atomic", "sorted"}) {
    PlanPreference pref;
    pref.variant = variant;
    if (spec.deterministic) pref.determinism = Determinism::required;
    if (Expected<Plan> plan = Plan::select(stream, describe<Plan>(dtype, {1024, 1024, 1024}, spec), pref)) {
      bool seen = false;
      for (const KernelSku& k : out) seen = seen || k.to_string() == plan->sku().to_string();
      if (!seen) out.push_back(plan->sku());
    }
  }
  return out;
}

template <class Plan, bool kScatter>
void add(const char* name, const char* torch, Spec spec, std::vector<DType> dtypes,
         std::vector<Shape> (*shapes)(Backend)) {
  register_op({name, "indexing", torch, std::move(dtypes), shapes,
               [spec] { return std::make_unique<IndexCase<Plan, kScatter>>(spec); },
               [spec](const Stream& s, DType d) { return skus_of<Plan, kScatter>(s, d, spec); }});
}

// The shapes of the benchmarks on the GPU; smaller ones on the CPU.
std::vector<Shape> embedding_shapes(Backend b) {
  return b == Backend::cuda ? std::vector<Shape>{{32000, 4096, 16384}} : std::vector<Shape>{{4000, 512, 2048}};
}
std::vector<Shape> skewed_shapes(Backend b) {
  return b == Backend::cuda ? std::vector<Shape>{{1000000, 128, 262144}} : std::vector<Shape>{{100000, 64, 16384}};
}
std::vector<Shape> along_dim1_shapes(Backend b) {
  return b == Backend::cuda ? std::vector<Shape>{{8192, 4096, 1024}} : std::vector<Shape>{{1024, 1024, 256}};
}

// gather along dim 0: src [4096, 8192], index [1024, 8192] (the dim-1 case transposed).
std::vector<Shape> gather_rows_shapes(Backend b) {
  return b == Backend::cuda ? std::vector<Shape>{{4096, 8192, 1024}} : std::vector<Shape>{{1024, 1024, 256}};
}

const std::vector<DType> kFloats = {DType::f32, DType::bf16, DType::f16, DType::f64};
const std::vector<DType> kBenchFloats = {DType::f32, DType::bf16};

const bool registered = [] {
  add<EmbeddingPlan, false>("embedding", "F.embedding", {Geometry::embedding}, kFloats, embedding_shapes);
  add<IndexSelectPlan, false>("index_select_rows", "torch.index_select(src, 0, idx)", {Geometry::index_select_rows},
                              kFloats, embedding_shapes);
  add<IndexSelectPlan, false>("index_select", "torch.index_select(src, 1, idx)", {Geometry::index_select}, kFloats,
                              along_dim1_shapes);
  add<GatherPlan, false>("gather", "torch.gather(src, 1, idx)", {Geometry::gather}, kFloats, along_dim1_shapes);
  add<EmbeddingBackwardPlan, true>("embedding_backward", "aten.embedding_dense_backward",
                                   {Geometry::embedding, false, false, true}, kBenchFloats, embedding_shapes);
  add<EmbeddingBackwardPlan, true>("embedding_backward_deterministic", "aten.embedding_dense_backward",
                                   {Geometry::embedding, false, true, true}, kBenchFloats, embedding_shapes);
  add<EmbeddingBackwardPlan, true>("embedding_backward_skewed", "aten.embedding_dense_backward (log-uniform)",
                                   {Geometry::embedding, true, false, true}, {DType::f32}, skewed_shapes);
  add<EmbeddingBackwardPlan, true>("embedding_backward_skewed_deterministic",
                                   "aten.embedding_dense_backward (log-uniform)",
                                   {Geometry::embedding, true, true, true}, {DType::f32}, skewed_shapes);
  add<IndexSelectBackwardPlan, true>("index_select_backward", "zeros().index_add_(1, idx, dout)",
                                     {Geometry::index_select, false, false, true}, kBenchFloats, along_dim1_shapes);
  add<IndexSelectBackwardPlan, true>("index_select_backward_deterministic", "zeros().index_add_(1, idx, dout)",
                                     {Geometry::index_select, false, true, true}, kBenchFloats, along_dim1_shapes);
  add<GatherBackwardPlan, true>("gather_backward", "zeros().scatter_add_(1, idx, dout)",
                                {Geometry::gather, false, false, true}, kBenchFloats, along_dim1_shapes);
  add<GatherBackwardPlan, true>("gather_backward_deterministic", "zeros().scatter_add_(1, idx, dout)",
                                {Geometry::gather, false, true, true}, kBenchFloats, along_dim1_shapes);
  add<GatherBackwardPlan, true>("gather_rows_backward", "zeros().scatter_add_(0, idx, dout)",
                                {Geometry::gather_rows, false, false, true}, kBenchFloats, gather_rows_shapes);
  add<GatherBackwardPlan, true>("gather_rows_backward_deterministic", "zeros().scatter_add_(0, idx, dout)",
                                {Geometry::gather_rows, false, true, true}, kBenchFloats, gather_rows_shapes);
  add<ScatterAddPlan, true>("scatter_add", "dst.scatter_add_(1, idx, src)", {Geometry::gather, false, false, false},
                            kBenchFloats, along_dim1_shapes);
  add<ScatterAddPlan, true>("scatter_add_deterministic", "dst.scatter_add_(1, idx, src)",
                            {Geometry::gather, false, true, false}, kBenchFloats, along_dim1_shapes);
  return true;
}();

}  // namespace
}  // namespace baracuda::profiler

// The op table's generic drivers: every row (tools/harness/rows/) on every backend and dtype of its
// schema. Every sample against the f64 reference under every variant; bit-identical reruns of the
// deterministic variants; every output over every input of its dtype and shape (in place) refused
// or bit-identical to the unaliased call; finite differences of every backward against its forward;
// each row's error cases; the profiler's cases; and docs/OPS.md against the schemas. A new row is
// covered by all of them without a line here.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "harness/op_table.hpp"
#include "profiler/cases/op_table.hpp"
#include "profiler/profiler.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::OpRow;
using harness::Problem;
using harness::ProblemTensors;
using testing::unwrap;

struct RowCase {
  const OpRow* row = nullptr;
  Backend backend = Backend::cpu;
  DType dtype = DType::f32;
};

void PrintTo(const RowCase& c, std::ostream* os) {
  *os << c.row->schema().op << " on " << backend_name(c.backend) << " in " << dtype_name(c.dtype);
}

std::string case_name(const ::testing::TestParamInfo<RowCase>& info) {
  return std::string(info.param.row->schema().op) + "_" + std::string(backend_name(info.param.backend)) + "_" +
         std::string(dtype_name(info.param.dtype));
}

// Every row on both backends, at each dtype of its schema (or at one: f64 for finite differences,
// the first listed for error cases).
enum class DTypes { each, f64, first };
std::vector<RowCase> row_cases(DTypes which, bool backward_only = false) {
  std::vector<RowCase> cases;
  for (const OpRow* row : harness::op_table()) {
    if (backward_only && !row->gradient()) continue;
    const std::span<const DType> dtypes = row->schema().dtypes;
    for (Backend b : {Backend::cpu, Backend::cuda}) {
      if (which == DTypes::first) {
        cases.push_back({row, b, dtypes.front()});
      } else {
        for (DType d : dtypes)
          if (which == DTypes::each || d == DType::f64) cases.push_back({row, b, d});
      }
    }
  }
  return cases;
}

class OpTableTest : public ::testing::TestWithParam<RowCase> {
 protected:
  void SetUp() override {
    BARACUDA_SKIP_UNLESS_AVAILABLE(GetParam().backend);
    rng_ = testing::rng_for_test();
    // A row with no variant on this backend (a family whose kernels there are still to come, as
    // attention's on CUDA): select refuses every sample, unsupported, naming the plan and the stream;
    // the row's other checks skip.
    if (std::none_of(schema().variants.begin(), schema().variants.end(),
                     [&](const VariantInfo& v) { return v.on(backend()); })) {
      for (std::unique_ptr<Problem>& p : row().samples(dtype()))
        EXPECT_TRUE(
            testing::is_error(p->select(stream(), {}), StatusCode::unsupported, std::string(schema().plan), "stream"));
      GTEST_SKIP() << schema().plan << " has no " << backend_name(backend()) << " kernel yet: select refuses";
    }
  }
  const OpRow& row() const { return *GetParam().row; }
  const OpSchema& schema() const { return row().schema(); }
  Backend backend() const { return GetParam().backend; }
  DType dtype() const { return GetParam().dtype; }
  Stream stream() const { return testing::stream_for(backend()); }

  // The plan's own choice (""), then every variant of the schema this backend has.
  std::vector<std::string> variants() const {
    std::vector<std::string> names = {""};
    for (const VariantInfo& v : schema().variants)
      if (v.on(backend())) names.emplace_back(v.name);
    return names;
  }

  // Selects the sample's default plan and allocates its tensors; a failure is the test's (and the
  // caller goes on to the next sample).
  std::optional<ProblemTensors> prepare(Problem& p, bool contiguous_only = false) {
    if (const Status s = p.select(stream(), {}); !s) {
      if (refused_here(p, s)) {
        ++refused_;
        return std::nullopt;
      }
      ADD_FAILURE() << "the plan's own choice does not select: " << s.to_string();
      return std::nullopt;
    }
    Expected<ProblemTensors> t = harness::allocate(p, backend(), row().value_ranges(), rng_, contiguous_only);
    if (!t) {
      ADD_FAILURE() << "allocation: " << t.status().to_string();
      return std::nullopt;
    }
    return std::move(*t);
  }

  // A sample this backend's path does not cover, refused as such (Problem::cuda_partial): skipped. select
  // names the descriptor's field; can_implement (so run) the field of a view the path does not read.
  bool refused_here(const Problem& p, const Status& s) const {
    const std::string plan(p.schema().plan);
    return backend() == Backend::cuda && p.cuda_partial && s.code() == StatusCode::unsupported &&
           (s.message().rfind(plan + ": descriptor", 0) == 0 || s.message().rfind(plan + ": args.", 0) == 0);
  }

  std::mt19937_64 rng_;
  int refused_ = 0;  // samples this backend refused as refused_here allows
};

// "sample #12 padded (dim 1, i32): src [7, 8, 9], index [5, 6, 4], out [5, 6, 4]".
std::string describe(const std::string& which, const Problem& p, const ProblemTensors& t) {
  std::string s = which + " " + std::string(harness::views_name(p.views));
  if (!p.only.empty()) s += " " + std::string(p.only) + " alone";
  if (!p.note.empty()) s += " (" + p.note + ")";
  const char* sep = ": ";
  for (const ArgSpec& spec : t.specs) {
    if (!spec.present) continue;
    s += sep + std::string(spec.name) + " " + spec.shape.to_string();
    sep = ", ";
  }
  return s;
}

// A forced variant may not fit a sample: select or the run says so with one of these.
bool rejects_variant(StatusCode code) {
  return code == StatusCode::unsupported || code == StatusCode::invalid_problem ||
         code == StatusCode::misaligned_operand;
}

// The schema variant an SKU's variant names: the longest one it starts with ("sorted.rows" -> sorted).
const VariantInfo* variant_of(const OpSchema& schema, std::string_view sku_variant) {
  const VariantInfo* found = nullptr;
  for (const VariantInfo& v : schema.variants) {
    const bool prefix =
        sku_variant.substr(0, v.name.size()) == v.name &&
        (sku_variant.size() == v.name.size() || sku_variant[v.name.size()] == '.' || sku_variant[v.name.size()] == '_');
    if (prefix && (!found || v.name.size() > found->name.size())) found = &v;
  }
  return found;
}

// Every element of every output within tolerance of the reference, relative to 1 + the sum of the
// magnitudes of its terms (see RefOutput::verify_scale); NaN (an element never written) fails. The
// tolerance is the row's at the problem's dtype, or at the output's own where that is looser (mixed
// dtypes: an integer a with an f32 b gives f32, an f32 a with a bf16 b a bf16 db).
void expect_outputs_match(const OpRow& row, const ProblemTensors& t, const harness::RefIO& want, double problem_tol,
                          DType accumulator) {
  for (size_t k = 0; k < t.specs.size(); ++k) {
    if (!t.specs[k].present || !t.specs[k].output) continue;
    const double tol = std::max(problem_tol, row.tolerance(t.specs[k].dtype));
    const harness::RefOutput& ref = want.outputs[k];
    const harness::Tensor& got = t.tensors[k];
    const std::vector<int64_t> offsets = harness::element_offsets(got.shape, got.strides);
    ASSERT_EQ(static_cast<int64_t>(offsets.size()), ref.total()) << t.specs[k].name;
    const profiler::Verification v = profiler::verify_sampled(
        ref.total(), ref.total(), tol,
        [&](int64_t i) { return got.host[static_cast<size_t>(got.offset + offsets[static_cast<size_t>(i)])]; },
        [&](int64_t i) { return ref.value(i); }, [&](int64_t i) { return ref.verify_scale(i, tol, accumulator); });
    EXPECT_TRUE(v.passed) << t.specs[k].name << ": " << v.note << " (error " << v.max_error << ", tolerance " << tol
                          << ")";
  }
}

// The bytes of every output buffer after one run from the initial contents (empty for the other
// arguments).
std::vector<std::vector<unsigned char>> output_bytes(const ProblemTensors& t) {
  std::vector<std::vector<unsigned char>> all(t.specs.size());
  for (size_t k = 0; k < t.specs.size(); ++k) {
    if (!t.specs[k].present || !t.specs[k].output) continue;
    const harness::Buffer& b = t.tensors[k].buffer;
    all[k].resize(b.size());
    EXPECT_TRUE(b.download(all[k].data(), b.size()).is_ok());
  }
  return all;
}

bool has_elements_out(const ProblemTensors& t) {
  for (const ArgSpec& s : t.specs)
    if (s.present && s.output && s.shape.numel() > 0) return true;
  return false;
}

// Every sample under the plan's own choice and each forced variant: within tolerance of the
// reference, the SKU naming the variant that ran and the precision guarantee telling the truth
// about it; a deterministic kernel's reruns write the same bytes (the whole buffers). A kernel
// (SKU) runs once a sample: the default is also one of the forced variants.
TEST_P(OpTableTest, SamplesMatchTheReferenceUnderEveryVariantAndRerunBitIdentically) {
  const double tol = row().tolerance(dtype());
  std::vector<std::unique_ptr<Problem>> samples = row().samples(dtype());
  int runs = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    Problem& p = *samples[i];
    std::optional<ProblemTensors> tensors = prepare(p);
    if (!tensors) continue;
    ProblemTensors& t = *tensors;
    const harness::RefIO want = t.reference(p);
    const std::string where = describe("sample #" + std::to_string(i), p, t);
    std::set<std::string> ran_skus;
    for (const std::string& variant : variants()) {
      SCOPED_TRACE(where + "; variant " + (variant.empty() ? "(default)" : variant));
      PlanPreference pref;
      pref.variant = variant;
      if (const Status s = p.select(stream(), pref); !s) {
        EXPECT_TRUE(rejects_variant(s.code()) && s.message().find("preference.variant") != std::string::npos)
            << s.to_string();
        continue;
      }
      // The SKU names the variant selected, and the precision guarantee tells the truth about it.
      const KernelSku sku = p.sku();
      EXPECT_EQ(sku.op, schema().op);
      EXPECT_EQ(sku.element, dtype());
      const VariantInfo* ran = variant_of(schema(), sku.variant);
      ASSERT_NE(ran, nullptr) << "SKU variant '" << sku.variant << "' is none of the schema's";
      if (!variant.empty()) {
        EXPECT_EQ(ran->name, variant);
      }
      const bool deterministic = p.precision_guarantee().deterministic;
      EXPECT_EQ(deterministic, ran->deterministic) << sku.to_string();
      if (ran_skus.count(sku.to_string())) continue;
      if (const Status s = t.run(p, stream()); !s) {
        if (variant.empty() && refused_here(p, s)) {
          ++refused_;
          break;
        }
        if (variant.empty()) {
          ADD_FAILURE() << "the plan's own choice does not run: " << s.to_string();
          break;
        }
        EXPECT_TRUE(rejects_variant(s.code())) << s.to_string();
        continue;
      }
      ++runs;
      ran_skus.insert(sku.to_string());
      ASSERT_OK(t.download_outputs());
      expect_outputs_match(row(), t, want, tol, p.precision_guarantee().accumulator);
      if (p.counts_bad_indices()) {
        EXPECT_EQ(unwrap(t.bad_index_count()), want.bad_index_count) << "bad_index_count";
      }
      EXPECT_EQ(t.written_outside_views(), "");
      if (!deterministic || !has_elements_out(t)) continue;
      const std::vector<std::vector<unsigned char>> first = output_bytes(t);
      for (int run = 1; run < testing::rerun_count(); ++run) {
        ASSERT_OK(t.run(p, stream()));
        ASSERT_EQ(output_bytes(t), first) << "run " << run << " differs from run 0";
      }
    }
  }
  EXPECT_GE(runs + refused_, static_cast<int>(samples.size()));  // the default ran on every sample it takes
}

INSTANTIATE_TEST_SUITE_P(OpTable, OpTableTest, ::testing::ValuesIn(row_cases(DTypes::each)), case_name);

// ---------------------------------------------------------------------------------------------
// Aliases: an output given exactly the view of an input of its dtype and shape, holding that input's
// values (in place), is either refused by can_implement (an error naming the output) or gives the
// same bits as the call with the input in a buffer of its own, laid out as the output. Every alias
// a plan's header allows is among those accepted.

class OpTableAliasTest : public OpTableTest {};

// The aliases each plan's header allows ("output over input"); every other plan allows none.
const std::map<std::string_view, std::vector<std::string_view>>& documented_aliases() {
  static const std::vector<std::string_view> binary_param_backward = {
      "da over dout", "da over a",      "da over b",         "da over weight", "db over dout",   "db over a",
      "db over b",    "db over weight", "dweight over dout", "dweight over a", "dweight over b", "dweight over weight"};
  static const std::map<std::string_view, std::vector<std::string_view>> aliases = {
      {"UnaryPlan", {"out over x"}},
      {"UnaryBackwardPlan", {"dx over dout", "dx over x"}},
      {"BinaryPlan", {"out over a", "out over b"}},
      {"BinaryBackwardPlan", {"da over dout", "db over dout"}},
      {"LerpPlan", {"out over a", "out over b", "out over weight"}},
      {"LerpBackwardPlan", binary_param_backward},
      {"AddcmulPlan", {"out over a", "out over b", "out over weight"}},
      {"AddcmulBackwardPlan", binary_param_backward},
      {"TernaryPlan", {"out over a", "out over b", "out over c"}},
      {"TernaryBackwardPlan", {"da over dout", "db over dout", "dc over dout"}},
      {"CastPlan", {"y over x"}},
      {"GatedBackwardPlan", {"dx over x"}},
      {"SoftmaxPlan", {"y over x"}},
      {"SoftmaxBackwardPlan", {"dx over y", "dx over dy"}},
      {"LayerNormPlan", {"y over x", "y over residual"}},
      {"RmsNormPlan", {"y over x", "y over residual"}},
      {"LayerNormBackwardPlan", {"dx over dy", "dx over x", "dx over dh"}},
      {"RmsNormBackwardPlan", {"dx over dy", "dx over x", "dx over dh"}},
      {"GroupNormPlan", {"y over x"}},
      {"GroupNormBackwardPlan", {"dx over dy", "dx over x"}},
      {"BatchNormPlan", {"y over x"}},
      {"BatchNormBackwardPlan", {"dx over dy", "dx over x"}},
      {"CrossEntropyBackwardPlan", {"dlogits over logits"}},
      {"PointwiseLossBackwardPlan", {"dinput over dloss", "dinput over input"}},
      {"MatmulPlan", {"out over c"}},
      {"DropoutPlan", {"y over x"}},
      {"DropoutBackwardPlan", {"dx over dy"}},
      {"RotaryPlan", {"q_out over q", "k_out over k"}},
      {"RotaryBackwardPlan", {"dq over dq_out", "dk over dk_out"}},
  };
  return aliases;
}

TEST_P(OpTableAliasTest, AcceptedAliasesGiveTheUnaliasedBits) {
  std::set<std::string> accepted;
  std::vector<std::unique_ptr<Problem>> samples = row().samples(dtype());
  for (size_t i = 0; i < samples.size(); ++i) {
    Problem& p = *samples[i];
    std::optional<ProblemTensors> tensors = prepare(p);
    if (!tensors) continue;
    ProblemTensors& t = *tensors;
    for (size_t o = 0; o < t.specs.size(); ++o) {
      const ArgSpec& out_spec = t.specs[o];
      if (!out_spec.present || !out_spec.output || out_spec.shape.numel() == 0) continue;
      for (size_t k = 0; k < t.specs.size(); ++k) {
        const ArgSpec& in_spec = t.specs[k];
        if (!in_spec.present || in_spec.output || in_spec.dtype != out_spec.dtype || !(in_spec.shape == out_spec.shape))
          continue;
        const std::string alias = std::string(out_spec.name) + " over " + std::string(in_spec.name);
        SCOPED_TRACE(describe("sample #" + std::to_string(i), p, t) + "; " + alias);
        // The input's values at the output's elements, in a copy of the output's buffer.
        harness::Tensor& out = t.tensors[o];
        const std::vector<double> initial = t.initial[o];
        harness::Tensor copy{out.dtype,  out.shape,    out.strides,
                             out.offset, out.capacity, unwrap(harness::Buffer::allocate(backend(), out.buffer.size())),
                             initial};
        for (int64_t j = 0, numel = out.shape.numel(); j < numel; ++j)
          copy.host[static_cast<size_t>(copy.offset + copy.element_offset(j))] = t.tensors[k].at(j);
        ASSERT_OK(copy.upload());
        t.initial[o] = copy.host;
        std::set<std::string> tried;  // SKUs
        for (const std::string& variant : variants()) {
          PlanPreference pref;
          pref.variant = variant;
          if (!p.select(stream(), pref) || !p.precision_guarantee().deterministic) continue;
          if (!tried.insert(p.sku().to_string()).second) continue;  // the default is also a forced variant
          p.bind(0, static_cast<int>(k), out.mut());
          const Status alias_fits = p.can_implement();
          p.bind(0, static_cast<int>(k), copy.mut());
          if (!p.can_implement()) continue;  // a forced variant that does not fit (checked above)
          if (!alias_fits) {
            EXPECT_TRUE(testing::is_error(alias_fits, StatusCode::invalid_problem, std::string(schema().plan),
                                          "args." + std::string(out_spec.name)))
                << "variant " << variant;
            continue;
          }
          if (!t.run(p, stream())) continue;
          const std::vector<std::vector<unsigned char>> unaliased = output_bytes(t);
          p.bind(0, static_cast<int>(k), out.mut());
          ASSERT_OK(t.run(p, stream()));
          const std::vector<std::vector<unsigned char>> aliased = output_bytes(t);
          for (size_t j = 0; j < aliased.size(); ++j)
            EXPECT_TRUE(aliased[j] == unaliased[j])
                << t.specs[j].name << " differs from the unaliased call's; variant " << variant;
          accepted.insert(alias);
        }
        p.bind(0, static_cast<int>(k), t.tensors[k].mut());
        t.initial[o] = initial;
      }
    }
  }
  const auto it = documented_aliases().find(schema().plan);
  const std::vector<std::string_view> documented =
      it == documented_aliases().end() ? std::vector<std::string_view>() : it->second;
  for (const std::string& alias : accepted)
    EXPECT_NE(std::find(documented.begin(), documented.end(), alias), documented.end())
        << alias << " is accepted, yet the header does not allow it";
  for (std::string_view alias : documented)
    EXPECT_TRUE(accepted.count(std::string(alias))) << alias << " is allowed by the header, yet no sample accepts it";
}

INSTANTIATE_TEST_SUITE_P(OpTable, OpTableAliasTest, ::testing::ValuesIn(row_cases(DTypes::each)), case_name);

// ---------------------------------------------------------------------------------------------
// Backward against forward: <grad, v> equals the central difference of L = <dout, forward(x)>
// along v, for every gradient and every sample (contiguous views), in f64.

class OpTableGradientTest : public OpTableTest {};

TEST_P(OpTableGradientTest, BackwardMatchesFiniteDifferencesOfItsForward) {
  const harness::Gradient& g = *row().gradient();
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<std::unique_ptr<Problem>> samples = row().samples(dtype());
  int checked = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    Problem& backward = *samples[i];
    if (backward.views != harness::Views::contiguous) continue;  // layouts are the other drivers' business
    std::unique_ptr<Problem> forward = backward.forward();
    ASSERT_NE(forward, nullptr);
    forward->cuda_partial = backward.cuda_partial;
    std::optional<ProblemTensors> backward_tensors = prepare(backward, true), forward_tensors = prepare(*forward, true);
    if (!backward_tensors || !forward_tensors) continue;
    ProblemTensors &bt = *backward_tensors, &ft = *forward_tensors;
    SCOPED_TRACE(describe("sample #" + std::to_string(i), backward, bt));
    // An argument's tensor; null where the plan has no such argument or does not use it.
    auto arg = [](ProblemTensors& t, std::string_view name) -> harness::Tensor* {
      for (size_t k = 0; k < t.specs.size(); ++k)
        if (t.specs[k].name == name) return t.specs[k].present ? &t.tensors[k] : nullptr;
      return nullptr;
    };
    // The inputs both plans read hold the same values.
    for (size_t k = 0; k < ft.specs.size(); ++k) {
      harness::Tensor* shared = ft.specs[k].output ? nullptr : arg(bt, ft.specs[k].name);
      if (!shared || !ft.specs[k].present) continue;
      ASSERT_EQ(shared->shape, ft.tensors[k].shape) << ft.specs[k].name;
      ft.tensors[k].host = shared->host;
      ASSERT_OK(ft.tensors[k].upload());
    }
    // Gradients start from zero (indexing backwards accumulate).
    for (size_t k = 0; k < bt.specs.size(); ++k)
      if (bt.specs[k].present && bt.specs[k].output) std::fill(bt.initial[k].begin(), bt.initial[k].end(), 0.0);
    const Status forward_ran = ft.run(*forward, stream());
    // A backward that reads its forward's outputs (softmax's saved y, segment max's indices) gets them.
    if (forward_ran) ASSERT_OK(ft.download_outputs());
    for (size_t k = 0; forward_ran && k < ft.specs.size(); ++k) {
      harness::Tensor* saved = ft.specs[k].output ? arg(bt, ft.specs[k].name) : nullptr;
      if (!saved || !ft.specs[k].present || bt.specs[&*saved - bt.tensors.data()].output) continue;
      const harness::Tensor& y = ft.tensors[k];
      for (int64_t j = 0, numel = y.shape.numel(); j < numel; ++j)
        saved->host[saved->offset + saved->element_offset(j)] = y.at(j);
      ASSERT_OK(saved->upload());
    }
    const Status backward_ran = bt.run(backward, stream());
    if (!backward_ran || !forward_ran) {
      ADD_FAILURE() << "the plans do not run: " << backward_ran.to_string() << "; " << forward_ran.to_string();
      continue;
    }
    ASSERT_OK(bt.download_outputs());
    const harness::Tensor* dout = arg(bt, g.cotangent);
    harness::Tensor* out = arg(ft, g.output);
    ASSERT_TRUE(dout && out);
    // (cotangent, output) pairs of the loss: dout's, and those of the descriptor's further outputs.
    std::vector<std::pair<const harness::Tensor*, harness::Tensor*>> terms = {{dout, out}};
    for (const auto& [cotangent, output] : g.more_cotangents)
      if (arg(bt, cotangent) && arg(ft, output)) terms.emplace_back(arg(bt, cotangent), arg(ft, output));
    auto loss = [&] {
      EXPECT_TRUE(ft.run(*forward, stream()).is_ok());
      double l = 0;
      for (const auto& [d, y] : terms) {
        EXPECT_TRUE(y->download().is_ok());
        for (int64_t j = 0, numel = y->shape.numel(); j < numel; ++j) l += d->at(j) * y->at(j);
      }
      return l;
    };
    for (const auto& [grad_name, input_name] : g.grads) {
      const harness::Tensor* grad = arg(bt, grad_name);
      harness::Tensor* x = arg(ft, input_name);
      if (!grad || !x || x->shape.numel() == 0) continue;
      SCOPED_TRACE(std::string(grad_name) + " of " + std::string(input_name));
      const std::vector<double> saved = x->host;
      double analytic = 0, magnitude = 0;
      std::vector<double> v(static_cast<size_t>(x->shape.numel()));
      for (size_t j = 0; j < v.size(); ++j) {
        v[j] = dist(rng_);
        analytic += v[j] * grad->at(static_cast<int64_t>(j));
        magnitude += std::fabs(v[j] * grad->at(static_cast<int64_t>(j)));
      }
      const double eps = 1e-4;
      auto shifted_loss = [&](double step) {
        for (size_t j = 0; j < v.size(); ++j) {
          const size_t at = static_cast<size_t>(x->offset + x->element_offset(static_cast<int64_t>(j)));
          x->host[at] = saved[at] + step * v[j];
        }
        EXPECT_TRUE(x->upload().is_ok());
        return loss();
      };
      // Richardson's extrapolation of two central differences: their eps^2 f''' / 6 term cancels (alone it
      // passed the tolerance where f''' is large: atanh near 0.9, f''' about 500).
      auto central = [&](double h) { return (shifted_loss(h) - shifted_loss(-h)) / (2 * h); };
      const double numeric = (4 * central(eps / 2) - central(eps)) / 3;
      x->host = saved;
      ASSERT_OK(x->upload());
      EXPECT_NEAR(numeric, analytic, 1e-7 * (1 + magnitude));
      ++checked;
    }
  }
  if (checked == 0 && !HasFailure() && backend() == Backend::cuda && !samples.empty() && samples[0]->cuda_partial)
    GTEST_SKIP() << "this backend refuses every sample (Problem::cuda_partial)";
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(OpTable, OpTableGradientTest, ::testing::ValuesIn(row_cases(DTypes::f64, true)), case_name);

// ---------------------------------------------------------------------------------------------
// Errors: the right code and a message that names the plan and the field; a rejected run writes
// nothing.

class OpTableErrorTest : public OpTableTest {
 protected:
  // A non-empty sample that uses every argument it can, and a workspace where one is needed.
  std::unique_ptr<Problem> base_sample() {
    std::unique_ptr<Problem> best;
    int best_score = -1;
    for (std::unique_ptr<Problem>& p : row().samples(dtype())) {
      if (!p->select(stream(), {})) continue;
      int score = p->workspace_size() > 0 ? 100 : 0;
      for (const ArgSpec& s : p->arg_specs()) {
        if (s.present && s.shape.numel() == 0) score = -1000;
        score += s.present;
      }
      if (score > best_score) best_score = score, best = std::move(p);
    }
    return best;
  }

  void expect_error(const Status& s, StatusCode code, const std::string& field, const std::string& what) {
    EXPECT_TRUE(testing::is_error(s, code, std::string(schema().plan), field)) << what;
  }
};

AnyTensorMut writable(const AnyTensorRef& v) {
  return {const_cast<void*>(v.data), v.dtype, v.shape, v.strides, v.capacity};
}

TEST_P(OpTableErrorTest, ErrorsNameThePlanAndTheField) {
  std::unique_ptr<Problem> base = base_sample();
  if (!base && backend() == Backend::cuda && !row().samples(dtype()).empty() && row().samples(dtype())[0]->cuda_partial)
    GTEST_SKIP() << "this backend refuses every sample (Problem::cuda_partial)";
  ASSERT_NE(base, nullptr) << "no non-empty sample";
  std::optional<ProblemTensors> tensors = prepare(*base, true);
  if (!tensors && !HasFailure()) GTEST_SKIP() << "this backend refuses the base sample (Problem::cuda_partial)";
  ASSERT_TRUE(tensors);
  ProblemTensors& t = *tensors;
  SCOPED_TRACE(describe("error cases from", *base, t));

  // Descriptors: unsupported dtypes and the row's own cases.
  for (const harness::SelectError& e : base->select_errors())
    expect_error(e.select(stream()), e.code, e.field, e.label);

  // Preferences.
  PlanPreference pref;
  pref.variant = "no_such_variant";
  expect_error(base->select(stream(), pref), StatusCode::unsupported, "preference.variant", "an unknown variant");
  for (const VariantInfo& v : schema().variants) {
    pref = {};
    pref.variant = std::string(v.name);
    if (!v.on(backend())) {
      expect_error(base->select(stream(), pref), StatusCode::unsupported, "preference.variant",
                   "a variant of the other backend: " + pref.variant);
    } else if (!v.deterministic) {
      pref.determinism = Determinism::required;
      expect_error(base->select(stream(), pref), StatusCode::unsupported, "preference.variant",
                   "a nondeterministic variant with determinism required: " + pref.variant);
    }
  }
  pref = {};
  pref.backend = backend() == Backend::cpu ? Backend::cuda : Backend::cpu;
  expect_error(base->select(stream(), pref), StatusCode::invalid_problem, "preference.backend", "another backend");
  ASSERT_OK(base->select(stream(), {}));

  // Outputs of other descriptors (which this one would not write) are refused when given; optional
  // arguments left empty run (the runs below reset the outputs this one writes).
  for (size_t k = 0; k < t.specs.size(); ++k) {
    const ArgSpec& spec = t.specs[k];
    const int arg = static_cast<int>(k);
    const std::string field = "args." + std::string(spec.name);
    if (!spec.present && spec.output) {
      for (size_t j = 0; j < t.specs.size(); ++j) {
        if (!t.specs[j].present) continue;
        base->bind(0, arg, writable(base->view(0, static_cast<int>(j))));  // some present argument's view
        expect_error(t.run(*base, stream()), StatusCode::invalid_problem, field, field + ": given, not used");
        base->bind(0, arg, {});
        break;
      }
    }
    if (spec.present && spec.optional) {
      const AnyTensorRef good = base->view(0, arg);
      base->bind(0, arg, {});
      EXPECT_TRUE(t.run(*base, stream()).is_ok()) << field << " left empty";
      base->bind(0, arg, writable(good));
    }
  }

  // Views.
  for (size_t k = 0; k < t.specs.size(); ++k) {
    const ArgSpec& spec = t.specs[k];
    if (!spec.present) continue;
    const int arg = static_cast<int>(k);
    const AnyTensorRef good = base->view(0, arg);
    const std::string field = "args." + std::string(spec.name);
    auto expect_rejected = [&](AnyTensorRef bad, StatusCode code, const std::string& bad_field, const char* what) {
      base->bind(0, arg, writable(bad));
      const Status s = t.run(*base, stream());
      expect_error(s, code, bad_field, field + ": " + what);
      if (code == StatusCode::buffer_too_small) {
        EXPECT_EQ(s.needed(), good.extent());
        EXPECT_EQ(s.got(), good.extent() - 1);
      }
      base->bind(0, arg, writable(good));
    };
    AnyTensorRef bad = good;
    bad.shape.rank = std::max(bad.shape.rank, 1);
    bad.shape.dims[0] += 1;
    expect_rejected(bad, StatusCode::invalid_problem, field + ".shape", "wrong shape");
    bad = good;
    bad.dtype = good.dtype == DType::f64 ? DType::f32 : DType::f64;
    expect_rejected(bad, StatusCode::invalid_problem, field + ".dtype", "wrong dtype");
    bad = good;
    bad.capacity = good.extent() - 1;
    expect_rejected(bad, StatusCode::buffer_too_small, field + ".capacity", "buffer too small");
    bad = good;
    bad.data = static_cast<const char*>(good.data) + 1;
    if (dtype_size(good.dtype) > 1)  // (a byte is never misaligned: where's bool condition)
      expect_rejected(bad, StatusCode::misaligned_operand, field + ".data", "misaligned pointer");
    bad = good;
    bad.data = nullptr;
    if (!spec.optional) expect_rejected(bad, StatusCode::invalid_problem, field + ".data", "null pointer");
    if (good.rank() > 0) {
      bad = good;
      bad.strides[0] = -1;
      expect_rejected(bad, StatusCode::invalid_problem, field + ".strides[0]", "negative stride");
    }
    for (int d = 0; spec.output && d < good.rank(); ++d) {
      if (good.shape.dims[d] < 2) continue;
      bad = good;
      bad.strides[d] = 0;
      expect_rejected(bad, StatusCode::invalid_problem, field + ".strides[" + std::to_string(d) + "]",
                      "an output overlapping itself");
      break;
    }
  }

  // The run's other inputs: the workspace, the counter, the stream.
  const Workspace none{};
  if (const size_t need = base->workspace_size(); need > 0) {
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), need + 16));
    const Status s = base->run(stream(), {ws.data(), need - 1});
    expect_error(s, StatusCode::workspace_too_small, "workspace.size", "workspace too small");
    EXPECT_EQ(s.needed(), static_cast<int64_t>(need));
    expect_error(base->run(stream(), {static_cast<char*>(ws.data()) + 4, need}), StatusCode::misaligned_operand,
                 "workspace.data", "misaligned workspace");
    expect_error(base->run(stream(), none), StatusCode::workspace_too_small, "workspace.size", "no workspace");
  }
  if (base->counts_bad_indices()) {
    base->bind_bad_index_count(0, reinterpret_cast<int64_t*>(static_cast<char*>(t.counter.data()) + 4));
    expect_error(t.run(*base, stream()), StatusCode::misaligned_operand, "args.bad_index_count", "misaligned counter");
    base->bind_bad_index_count(0, static_cast<int64_t*>(t.counter.data()));
  }
  const Stream other = backend() == Backend::cpu ? Stream::cuda() : Stream::host();
  expect_error(base->run(other, none), StatusCode::invalid_problem, "stream", "another backend's stream");

  ASSERT_OK(t.download_outputs());
  for (size_t k = 0; k < t.specs.size(); ++k) {
    if (!t.specs[k].present || !t.specs[k].output) continue;
    for (size_t j = 0; j < t.initial[k].size(); ++j) {
      const double before = t.initial[k][j], now = t.tensors[k].host[j];
      ASSERT_TRUE(now == before || (std::isnan(now) && std::isnan(before)))
          << "a rejected run wrote " << t.specs[k].name << " element " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(OpTable, OpTableErrorTest, ::testing::ValuesIn(row_cases(DTypes::first)), case_name);

// ---------------------------------------------------------------------------------------------
// The profiler's cases, from the same table: each verifies at a small shape on the CPU.

class OpTableProfilerTest : public ::testing::TestWithParam<size_t> {
 protected:
  static const std::vector<profiler::OpEntry>& entries() {
    static const std::vector<profiler::OpEntry> all = profiler::op_table_entries();
    return all;
  }
};

TEST_P(OpTableProfilerTest, CaseVerifiesAtASmallShapeOnTheCpu) {
  const profiler::OpEntry& op = entries()[GetParam()];
  Shape shape = op.standard_shapes(Backend::cpu).front();
  for (int d = 0; d < shape.rank; ++d) shape.dims[d] = shape.dims[d] / 64 + 1;
  profiler::RunSettings settings;
  settings.iterations = 1;
  settings.warmup = 1;
  settings.cache_bytes = 1;  // two sets
  EXPECT_FALSE(op.torch.empty());
  for (DType dtype : op.dtypes) {
    SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape.to_string());
    profiler::CaseConfig config;
    config.dtype = dtype;
    config.shape = shape;
    std::unique_ptr<profiler::ProfilerCase> c = op.make();
    const profiler::CaseResult r = profiler::run_case(op, *c, config, settings, 1.0);
    ASSERT_OK(r.status);
    EXPECT_TRUE(r.verification.passed) << r.verification.note;
    EXPECT_EQ(r.verification.checked, r.verification.total);
    EXPECT_GT(r.bytes, 0);
    EXPECT_EQ(r.torch, op.torch);
    EXPECT_FALSE(op.skus(Stream::host(), dtype).empty());
  }
}

std::vector<size_t> profiler_cases() {
  std::vector<size_t> indices(profiler::op_table_entries().size());
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  return indices;
}

INSTANTIATE_TEST_SUITE_P(OpTable, OpTableProfilerTest, ::testing::ValuesIn(profiler_cases()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return profiler::op_table_entries()[info.param].name;
                         });

// The profiler samples large outputs: the reference computes exactly the elements it checks.
TEST(OpTableReference, SampledOutputsAreTheElementsVerifySampledChecks) {
  for (auto [total, max_checks] : {std::pair<int64_t, int64_t>{1000, 7}, {1000, 1000}, {1001, 10}, {1, 5}, {0, 3}}) {
    const harness::RefOutput out(total, max_checks);
    std::set<int64_t> checked;
    profiler::verify_sampled(
        total, max_checks, 0.0,
        [&](int64_t i) {
          checked.insert(i);
          return 0.0;
        },
        [](int64_t) { return 0.0; });
    std::set<int64_t> wanted;
    for (int64_t i = 0; i < total; ++i)
      if (out.wanted(i)) wanted.insert(i);
    EXPECT_EQ(wanted, checked) << total << " / " << max_checks;
  }
}

// ---------------------------------------------------------------------------------------------
// docs/OPS.md: every plan's lines name its dtypes and variants.

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::string word;
  for (char c : line + " ") {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word += c;
    } else if (!word.empty()) {
      out.push_back(word);
      word.clear();
    }
  }
  return out;
}

TEST(OpTableDocs, OpsMdNamesEveryPlanWithItsDtypesAndVariants) {
  std::ifstream in(BARACUDA_OPS_MD);
  ASSERT_TRUE(in) << "cannot read " << BARACUDA_OPS_MD;
  std::vector<std::vector<std::string>> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(words(line));
  std::string missing;
  for (const OpRow* row : harness::op_table()) {
    const OpSchema& s = row->schema();
    const std::string plan(s.plan);
    std::set<std::string> named;  // the words of every line that names the plan
    for (const std::vector<std::string>& line : lines)
      if (std::find(line.begin(), line.end(), plan) != line.end()) named.insert(line.begin(), line.end());
    if (named.empty()) {
      missing += "\n  " + plan + ": no line names it";
      continue;
    }
    std::string absent;
    for (DType d : s.dtypes)
      if (!named.count(std::string(dtype_name(d)))) absent += " dtype " + std::string(dtype_name(d)) + ";";
    for (const VariantInfo& v : s.variants)
      if (!named.count(std::string(v.name))) absent += " variant " + std::string(v.name) + ";";
    if (!absent.empty()) missing += "\n  " + plan + ":" + absent;
  }
  EXPECT_TRUE(missing.empty()) << "docs/OPS.md does not say, on the lines naming each plan:" << missing;
}

}  // namespace
}  // namespace baracuda

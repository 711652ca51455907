// Indexing family: gather, scatter-add, index_select and embedding, forward and backward, on every
// backend and float dtype with i32 and i64 indices, against a double-precision reference.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "harness/reference/indexing_reference.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using harness::TensorSpec;
using reference::IndexedCase;
using testing::unwrap;

using testing::contiguous;
using testing::with_strides;

class IndexingTest : public testing::BackendDTypeTest {
 protected:
  Tensor values(const TensorSpec& spec) { return unwrap(harness::random_tensor(backend(), dtype(), spec, rng_)); }
  Tensor output(const TensorSpec& spec) {
    Tensor t = values(spec);
    EXPECT_TRUE(harness::poison(t).is_ok());
    return t;
  }
  // Index values drawn from [lo, hi) (truncated toward zero).
  Tensor index(const TensorSpec& spec, DType index_dtype, int64_t lo, int64_t hi) {
    Tensor t = unwrap(harness::random_tensor(backend(), index_dtype, spec, rng_, 0.0, 1.0));
    std::uniform_int_distribution<int64_t> dist(lo, hi - 1);
    for (double& v : t.host) v = static_cast<double>(dist(rng_));
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  }
  int64_t* counter() {
    counter_ = unwrap(harness::Buffer::allocate(backend(), sizeof(int64_t)));
    const int64_t zero = 0;
    EXPECT_TRUE(counter_.upload(&zero, sizeof zero).is_ok());
    return static_cast<int64_t*>(counter_.data());
  }
  int64_t counted() {
    int64_t n = -1;
    EXPECT_TRUE(counter_.download(&n, sizeof n).is_ok());
    return n;
  }
  static int64_t expected_bad(const IndexedCase& c, const Tensor& index, int64_t dim_size) {
    int64_t bad = 0;
    for (int64_t i = 0, numel = index.shape.numel(); i < numel; ++i) {
      const int64_t k = static_cast<int64_t>(index.at(i));
      bad += (k < 0 || k >= dim_size) && k != c.padding;
    }
    return bad;
  }

  template <class Plan>
  std::string check_gather(const typename Plan::Descriptor& desc, const IndexedCase& c, Tensor& table, Tensor& idx,
                           Tensor& out, const std::function<typename Plan::Args(int64_t*)>& args) {
    Plan plan = unwrap(Plan::select(stream(), desc));
    int64_t* count = counter();
    const typename Plan::Args a = args(count);
    const Status s = plan.run(stream(), {}, a);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_TRUE(out.download().is_ok());
    const std::vector<double> want = reference::gather(c, idx, table);
    EXPECT_TRUE(testing::all_close(
        out, [&](int64_t i) { return want[i]; }, 0.0));
    EXPECT_EQ(counted(), expected_bad(c, idx, table.shape.dims[c.dim]));
    return plan.sku(a).variant;
  }

  template <class Plan>
  std::string check_scatter(const typename Plan::Descriptor& desc, const IndexedCase& c, Tensor& vals, Tensor& idx,
                            Tensor& table, const std::function<typename Plan::Args(int64_t*)>& args,
                            const PlanPreference& pref = {}) {
    Plan plan = unwrap(Plan::select(stream(), desc, pref));
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan.workspace_size()));
    std::vector<double> expected, magnitude;
    reference::scatter_add(c, vals, idx, table, expected, magnitude);
    int64_t* count = counter();
    const typename Plan::Args a = args(count);
    const Status s = plan.run(stream(), {ws.data(), ws.size()}, a);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_TRUE(table.download().is_ok());
    const double tol = harness::tolerance(dtype());
    int64_t bad = 0;
    for (int64_t t = 0, numel = table.shape.numel(); t < numel; ++t) {
      const double got = table.at(t);
      if (std::isnan(got) || std::fabs(got - expected[t]) > tol * (1.0 + magnitude[t])) {
        if (bad++ < 3) ADD_FAILURE() << "table[" << t << "] = " << got << ", want " << expected[t];
      }
    }
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(counted(), expected_bad(c, idx, table.shape.dims[c.dim]));
    return plan.sku(a).variant;
  }

  // Every scatter variant this backend and dtype offer: the default, sorted, and atomic on CUDA.
  std::vector<PlanPreference> scatter_variants() const {
    std::vector<PlanPreference> prefs(2);
    prefs[1].variant = "sorted";
    if (backend() == Backend::cuda) {
      PlanPreference atomic;
      atomic.variant = "atomic";
      prefs.push_back(atomic);
    }
    return prefs;
  }

  // A table layout and its entries, named.
  struct Layout {
    const char* name;
    TensorSpec table, entries;
  };
  // overwrite_and_add over every layout and scatter variant, index values two past each end of the
  // line (i64); `check` gets the variant and the SKUs of the overwrite and of the add.
  void over_layouts(const std::vector<Layout>& layouts,
                    const std::function<void(const PlanPreference&, const std::string&, const std::string&)>& check) {
    for (const Layout& l : layouts) {
      SCOPED_TRACE(l.name);
      for (const PlanPreference& pref : scatter_variants()) {
        SCOPED_TRACE(pref.variant);
        const int64_t line = l.table.shape.dims[1];
        const auto [overwriting, adding] = overwrite_and_add(l.table, l.entries, DType::i64, -2, line + 2, pref);
        check(pref, overwriting, adding);
      }
    }
  }

  // Whether CUDA's f32 / f64 atomics (the general kernel, "atomic.elements") take an adding scatter
  // that the short or warp lines would sum: the default and the atomic variant, not 16-bit types.
  bool atomics_add(const PlanPreference& pref) const {
    return backend() == Backend::cuda && !sixteen_bit() && pref.variant != "sorted";
  }
  bool sixteen_bit() const { return dtype() == DType::f16 || dtype() == DType::bf16; }
  // Runs the plan of `desc` again over the table a check_scatter just wrote (a plan that adds: over
  // the table's contents before that run, `before`): the same bits again (a deterministic variant).
  template <class Plan>
  void expect_same_bits_again(const typename Plan::Descriptor& desc, const PlanPreference& pref,
                              const typename Plan::Args& args, Tensor& table, const std::vector<double>& before = {}) {
    const std::vector<double> first = table.host;
    if (!before.empty()) {
      table.host = before;
      EXPECT_TRUE(table.upload().is_ok());
    }
    Plan plan = unwrap(Plan::select(stream(), desc, pref));
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan.workspace_size()));
    EXPECT_TRUE(plan.run(stream(), {ws.data(), ws.size()}, args).is_ok());
    EXPECT_TRUE(table.download().is_ok());
    // (NaN == NaN where a strided table's gaps keep the poison.)
    EXPECT_TRUE(std::equal(first.begin(), first.end(), table.host.begin(), table.host.end(),
                           [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }));
  }

  // Adds into a table of ones `lines` destination lines of `line` slots along `dim` (1: [lines, line];
  // 0: [line, lines], a line a column), `entries` a line: entry 0 (2^-8) and entry `meet` (2^-16) on
  // slot 7, every other entry j (0.5) alone on slot (7 + 11 j) % line. Slot 7 must hold
  // 1 + 2^-8 + 2^-16 rounded once to T (bf16: 1 + 2^-7, where rounding the sum first gives 1), the
  // other reached slots 1.5, the rest 1. Returns the plan's SKU variant.
  std::string check_rounds_once(int dim, int64_t lines, int64_t line, int64_t entries, int64_t meet,
                                const PlanPreference& pref) {
    const double exact = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -16);
    const double want = dtype() == DType::bf16 ? 1.0078125 : dtype() == DType::f16 ? 1.00390625 : exact;
    const Shape table_shape = dim == 1 ? Shape{lines, line} : Shape{line, lines};
    const Shape idx_shape = dim == 1 ? Shape{lines, entries} : Shape{entries, lines};
    // Element (line r, entry or slot j) of the index / table.
    const auto entry_at = [&](int64_t r, int64_t j) { return dim == 1 ? r * entries + j : j * lines + r; };
    const auto slot_at = [&](int64_t r, int64_t k) { return dim == 1 ? r * line + k : k * lines + r; };
    Tensor vals = values(contiguous(idx_shape)), dst = values(contiguous(table_shape));
    Tensor idx = index(contiguous(idx_shape), DType::i64, 0, 1);
    std::fill(dst.host.begin(), dst.host.end(), 1.0);
    std::vector<char> reached(static_cast<size_t>(line));
    for (int64_t j = 0; j < entries; ++j) {
      const int64_t slot = j == meet ? 7 : (7 + 11 * j) % line;
      reached[static_cast<size_t>(slot)] = 1;
      for (int64_t r = 0; r < lines; ++r) {
        idx.host[entry_at(r, j)] = static_cast<double>(slot);
        vals.host[entry_at(r, j)] = j == 0 ? std::ldexp(1.0, -8) : j == meet ? std::ldexp(1.0, -16) : 0.5;
      }
    }
    EXPECT_TRUE(vals.upload().is_ok());
    EXPECT_TRUE(idx.upload().is_ok());
    EXPECT_TRUE(dst.upload().is_ok());
    ScatterAddPlan plan =
        unwrap(ScatterAddPlan::select(stream(), {dtype(), DType::i64, table_shape, idx_shape, dim}, pref));
    const ScatterAddArgs args{vals.ref(), idx.ref(), dst.mut(), nullptr};
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan.workspace_size()));
    EXPECT_TRUE(plan.run(stream(), {ws.data(), ws.size()}, args).is_ok());
    EXPECT_TRUE(dst.download().is_ok());
    for (int64_t r = 0; r < lines; ++r) {
      for (int64_t k = 0; k < line; ++k) {
        const double expected = k == 7 ? want : reached[static_cast<size_t>(k)] ? 1.5 : 1.0;
        EXPECT_EQ(dst.at(slot_at(r, k)), expected) << "line " << r << ", slot " << k;
        if (dst.at(slot_at(r, k)) != expected) return plan.sku(args).variant;  // (one report a case)
      }
    }
    return plan.sku(args).variant;
  }

  // CUDA's default variant of a 16-bit column line (K entries on a column of `rows`): entry order
  // (sorted) on the warp lines (at most 128 entries, or at most 512 on a column longer than the
  // shared line's 12288 sums), else shared-memory atomics on the shared line.
  static std::string column_lines_default(int64_t rows, int64_t entries) {
    return entries <= 128 || (entries <= 512 && rows > 12288) ? "sorted" : "atomic";
  }

  // Gather's gradient along dim 1 (overwriting a poisoned table; the reference starts from zeros) and
  // scatter_add (adding into a table) of the same entries, index values in [lo, hi): their SKUs.
  std::pair<std::string, std::string> overwrite_and_add(const TensorSpec& table, const TensorSpec& entries, DType idx_t,
                                                        int64_t lo, int64_t hi, const PlanPreference& pref) {
    const Shape &table_shape = table.shape, &idx_shape = entries.shape;
    Tensor idx = index(entries, idx_t, lo, hi);
    Tensor dout = values(entries), dsrc = output(table);
    std::fill(dsrc.host.begin(), dsrc.host.end(), 0.0);
    GatherDescriptor desc{dtype(), idx_t, table_shape, idx_shape, 1};
    desc.accumulate = false;
    const std::string overwriting = check_scatter<GatherBackwardPlan>(
        desc, {idx_shape, 1, false}, dout, idx, dsrc,
        [&](int64_t* count) {
          return GatherBackwardArgs{dout.ref(), idx.ref(), dsrc.mut(), count};
        },
        pref);
    Tensor dst = values(table);
    const std::string adding = check_scatter<ScatterAddPlan>(
        {dtype(), idx_t, table_shape, idx_shape, 1}, {idx_shape, 1, false}, dout, idx, dst,
        [&](int64_t* count) {
          return ScatterAddArgs{dout.ref(), idx.ref(), dst.mut(), count};
        },
        pref);
    return {overwriting, adding};
  }

  harness::Buffer counter_;
};

TEST_P(IndexingTest, EmbeddingForwardWithPaddingAndBadIndices) {
  for (DType idx_t : {DType::i32, DType::i64}) {
    for (int64_t d : {64, 33, 1}) {  // whole 16-byte rows, odd rows, single elements
      for (std::optional<int64_t> padding :
           {std::optional<int64_t>{}, std::optional<int64_t>{0}, std::optional<int64_t>{-1}}) {
        const int64_t v = 37, n = 101;
        SCOPED_TRACE(std::to_string(d) + " " + std::string(dtype_name(idx_t)));
        Tensor weight = values(contiguous({v, d})), out = output(contiguous({n, d}));
        Tensor indices = index(contiguous({n}), idx_t, -3, v + 3);
        IndexedCase c{{n, d}, 0, true, padding ? (*padding + v) % v : reference::kNoPadding};
        EmbeddingDescriptor desc{dtype(), idx_t, v, d, n, padding};
        const std::string variant = check_gather<EmbeddingPlan>(desc, c, weight, indices, out, [&](int64_t* count) {
          return EmbeddingArgs{weight.ref(), indices.ref(), out.mut(), count};
        });
        if (backend() == Backend::cuda && d == 64) {
          EXPECT_EQ(variant, "copy.rows_vectorized");
        }
      }
    }
  }
}

TEST_P(IndexingTest, EmbeddingBackwardDuplicatesPaddingAndBadIndices) {
  struct Case {
    int64_t lo, hi;
    std::optional<int64_t> padding;
  };
  const int64_t v = 23, n = 300;
  // Many duplicates, all equal, padding at 0 and V-1, negative and too-large values.
  for (const Case& k : {Case{0, 5, {}}, Case{7, 8, {}}, Case{-4, v + 4, 0}, Case{-4, v + 4, v - 1}, Case{0, v, -1}}) {
    for (int64_t d : {64, 7}) {
      for (const PlanPreference& pref : scatter_variants()) {
        SCOPED_TRACE("[" + std::to_string(k.lo) + ", " + std::to_string(k.hi) + ") d " + std::to_string(d) +
                     " variant " + pref.variant);
        Tensor dout = values(contiguous({n, d})), dweight = values(contiguous({v, d}));
        Tensor indices = index(contiguous({n}), DType::i64, k.lo, k.hi);
        IndexedCase c{{n, d}, 0, true, k.padding ? (*k.padding + v) % v : reference::kNoPadding};
        EmbeddingDescriptor desc{dtype(), DType::i64, v, d, n, k.padding};
        check_scatter<EmbeddingBackwardPlan>(
            desc, c, dout, indices, dweight,
            [&](int64_t* count) {
              return EmbeddingBackwardArgs{dout.ref(), indices.ref(), dweight.mut(), count};
            },
            pref);
      }
    }
  }
}

TEST_P(IndexingTest, EmbeddingBackwardStridedViewsAndLongRuns) {
  // A strided dout (rows with gaps), a dweight with padded rows, i32 indices, and a run of one
  // index much longer than a window (so sums cross windows).
  const int64_t v = 11, n = 700, d = 48;
  for (const PlanPreference& pref : scatter_variants()) {
    SCOPED_TRACE(pref.variant);
    Tensor dout = values(with_strides({n, d}, {d + 5, 1}));
    Tensor dweight = values(with_strides({v, d}, {d + 16, 1}));
    Tensor indices = index(with_strides({n}, {2}), DType::i32, 0, 3);
    IndexedCase c{{n, d}, 0, true};
    check_scatter<EmbeddingBackwardPlan>(
        EmbeddingDescriptor{dtype(), DType::i32, v, d, n, {}}, c, dout, indices, dweight,
        [&](int64_t* count) {
          return EmbeddingBackwardArgs{dout.ref(), indices.ref(), dweight.mut(), count};
        },
        pref);
  }
}

// Tokens as real text draws them (log-uniform: a few take hundreds of rows, most one): runs of every
// length, from one row to many windows, and windows of many one-row runs; contiguous and padded
// dweight rows (the sorted keys are row offsets over their greatest common divisor: 24, 40, 64 or
// 264 elements); rows of whole 16-byte vectors (CUDA's vectorized windows and fix-up, up to 66
// vectors a row) and not (d 7); added into dweight and overwriting it (poisoned first). Every case
// but the last has a padding token and bad tokens (sorted last, after every window's valid rows);
// the last has neither, and its last token a run of hundreds of rows, crossing into the final
// window. The sorted variant runs twice, to the same bits.
TEST_P(IndexingTest, EmbeddingBackwardOnSkewedTokens) {
  const int64_t v = 3001, n = 2500;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  struct Case {
    int64_t d, row_stride;
    bool skipped_tokens;
  };
  for (const Case& k : {Case{24, 24, true}, {24, 40, true}, {64, 64, true}, {7, 7, true}, {264, 264, false}}) {
    for (const bool accumulate : {true, false}) {
      for (const PlanPreference& pref : scatter_variants()) {
        SCOPED_TRACE("d " + std::to_string(k.d) + " row stride " + std::to_string(k.row_stride) + " variant " +
                     pref.variant + (accumulate ? " adding" : " overwriting"));
        const TensorSpec table = with_strides({v, k.d}, {k.row_stride, 1});
        Tensor dout = values(contiguous({n, k.d})), dweight = accumulate ? values(table) : output(table);
        if (!accumulate) std::fill(dweight.host.begin(), dweight.host.end(), 0.0);
        Tensor indices = index(contiguous({n}), DType::i64, 0, 1);
        for (int64_t i = 0; i < n; ++i) {
          const double token = std::floor(std::exp(unit(rng) * std::log(v))) - 1;
          indices.host[i] = !k.skipped_tokens ? (i % 7 == 3 ? double(v - 1) : token)
                            : i % 397 == 5    ? (i % 2 ? -1.0 : double(v))
                                              : token;
        }
        ASSERT_OK(indices.upload());
        EmbeddingDescriptor desc{dtype(), DType::i64, v, k.d, n, {}};
        if (k.skipped_tokens) desc.padding_idx = 2;
        desc.accumulate = accumulate;
        const auto args = [&](int64_t* count) {
          return EmbeddingBackwardArgs{dout.ref(), indices.ref(), dweight.mut(), count};
        };
        const std::vector<double> before = dweight.host;
        const IndexedCase c{{n, k.d}, 0, true, k.skipped_tokens ? 2 : reference::kNoPadding};
        const std::string variant = check_scatter<EmbeddingBackwardPlan>(desc, c, dout, indices, dweight, args, pref);
        if (pref.variant != "sorted") continue;
        EXPECT_EQ(variant, backend() == Backend::cuda && k.d != 7 ? "sorted.rows_vectorized" : "sorted.rows");
        expect_same_bits_again<EmbeddingBackwardPlan>(desc, pref, args(nullptr), dweight,
                                                      accumulate ? before : std::vector<double>{});
      }
    }
  }
}

// The CPU's 16-bit scatter sums each destination in f32 either in a scratch as large as the table
// (where it fits in the workspace: many entries for the table's size) or after sorting the entries:
// the same additions in the same order, so the same bits. Both sides of that threshold: a problem
// whose own workspace is too small for the scratch runs once with it (sort) and once with a
// workspace large enough (scratch); one whose workspace fits it runs the scratch path.
TEST_P(IndexingTest, CpuSixteenBitScatterScratchAndSortAgreeToTheBit) {
  if (backend() != Backend::cpu || (dtype() != DType::bf16 && dtype() != DType::f16))
    GTEST_SKIP() << "the CPU's 16-bit scatter";
  for (const auto& [table_shape, index_shape] :
       {std::pair<Shape, Shape>{{40, 3000}, {40, 20}}, std::pair<Shape, Shape>{{40, 30}, {40, 200}}}) {
    SCOPED_TRACE(table_shape.to_string() + " " + index_shape.to_string());
    const GatherDescriptor desc{dtype(), DType::i64, table_shape, index_shape, 1};
    GatherBackwardPlan plan = unwrap(GatherBackwardPlan::select(stream(), desc));
    Tensor dout = values(contiguous(index_shape));
    Tensor idx = index(contiguous(index_shape), DType::i64, -2, table_shape.dims[1] + 2);
    Tensor first = values(contiguous(table_shape)), second = values(contiguous(table_shape));
    second.host = first.host;
    ASSERT_OK(second.upload());
    const size_t scratch = static_cast<size_t>(table_shape.numel()) * sizeof(float);
    EXPECT_EQ(plan.workspace_size() >= scratch, table_shape.dims[1] == 30);
    harness::Buffer own = unwrap(harness::Buffer::allocate(backend(), plan.workspace_size()));
    harness::Buffer large = unwrap(harness::Buffer::allocate(backend(), std::max(scratch, plan.workspace_size())));
    ASSERT_OK(plan.run(stream(), {own.data(), own.size()}, {dout.ref(), idx.ref(), first.mut(), nullptr}));
    ASSERT_OK(plan.run(stream(), {large.data(), large.size()}, {dout.ref(), idx.ref(), second.mut(), nullptr}));
    ASSERT_OK(first.download());
    ASSERT_OK(second.download());
    EXPECT_EQ(first.host, second.host);
  }
}

// The CPU's 16-bit row scatters (index_select / embedding backward) bucket their rows by destination
// from rows of 64 elements (below, they sort or sum in a scratch): both sides, overwriting and
// adding, over a prefix dim (dim 1 of a 3-D table) with a strided table, with duplicates and bad
// index values. Every dtype and backend checks the sums.
TEST_P(IndexingTest, RowScattersOnBothSidesOfTheBucketThreshold) {
  for (const int64_t length : {63, 64}) {
    for (const bool accumulate : {false, true}) {
      const Shape src{3, 40, length};
      const int64_t k = 90;
      Shape out_shape = src;
      out_shape.dims[1] = k;
      SCOPED_TRACE(std::to_string(length) + (accumulate ? " adding" : " overwriting"));
      Tensor idx = index(contiguous({k}), DType::i64, -2, 42);  // some of the 40 rows twice or more, some bad
      IndexSelectDescriptor desc{dtype(), DType::i64, src, 1, k};
      desc.accumulate = accumulate;
      const Strides table_strides{40 * (length + 3), length + 3, 1};  // rows with gaps
      if (backend() == Backend::cpu) {  // the workspace tells the paths apart: buckets or (key, position) pairs
        const int64_t rows = 3 * k, destinations = 3 * 40;
        const int64_t want = !sixteen_bit() ? 0 : length >= 64 ? (destinations + 1 + rows) * 8 : rows * 16;
        EXPECT_EQ(unwrap(IndexSelectBackwardPlan::select(stream(), desc)).workspace_size(), static_cast<size_t>(want));
      }
      for (const PlanPreference& pref : scatter_variants()) {
        Tensor dout = values(contiguous(out_shape));
        Tensor dsrc = accumulate ? values(with_strides(src, table_strides)) : output(with_strides(src, table_strides));
        if (!accumulate) std::fill(dsrc.host.begin(), dsrc.host.end(), 0.0);
        check_scatter<IndexSelectBackwardPlan>(
            desc, {out_shape, 1, true}, dout, idx, dsrc,
            [&](int64_t* count) {
              return IndexSelectBackwardArgs{dout.ref(), idx.ref(), dsrc.mut(), count};
            },
            pref);
      }
    }
  }
}

// The CPU's overwriting element scatters (gather backward over a table the index covers) sum in a
// buffer of 512 KB a thread when dim's rows fit in it (128K f32 sums, 64K f64): both sides of that,
// and along every dim of a 3-D table with strided views (16-bit types along the innermost dim too;
// f32 and f64 keep their entry-order adds there). Every dtype and backend checks the sums.
TEST_P(IndexingTest, ElementScattersOnBothSidesOfTheBufferThreshold) {
  const int64_t fit = 512 * 1024 / (dtype() == DType::f64 ? 8 : 4);
  for (const int64_t rows : {fit, fit + 1}) {
    const Shape table_shape{rows, 3}, idx_shape{5, 3};
    SCOPED_TRACE(rows);
    Tensor idx = index(contiguous(idx_shape), DType::i64, rows - 4, rows + 2);  // bad ones past the end
    Tensor dout = values(contiguous(idx_shape)), dsrc = output(contiguous(table_shape));
    std::fill(dsrc.host.begin(), dsrc.host.end(), 0.0);
    GatherDescriptor desc{dtype(), DType::i64, table_shape, idx_shape, 0};
    desc.accumulate = false;
    check_scatter<GatherBackwardPlan>(desc, {idx_shape, 0, false}, dout, idx, dsrc, [&](int64_t* count) {
      return GatherBackwardArgs{dout.ref(), idx.ref(), dsrc.mut(), count};
    });
    if (backend() == Backend::cpu) {  // the buffers' workspace tells the paths apart
      const size_t workspace = unwrap(GatherBackwardPlan::select(stream(), desc)).workspace_size();
      EXPECT_EQ(workspace >= size_t{512} * 1024, rows == fit) << workspace;
      // At most 4 MB: the fuzzer tells this fixed scratch from a workspace sized by the work by that
      // bound (tests/fuzz/fuzz_plans.cpp, make_case_args).
      EXPECT_LE(workspace, size_t{4} << 20);
    }
  }
  const Shape table_shape{6, 7, 9};
  for (int dim : {0, 1, 2}) {
    SCOPED_TRACE(dim);
    Shape idx_shape = table_shape;
    idx_shape.dims[dim] = 11;
    Tensor idx = index(with_strides(idx_shape, {1, idx_shape.dims[0], idx_shape.dims[0] * idx_shape.dims[1]}),
                       DType::i32, -1, table_shape.dims[dim] + 1);
    Tensor dout = values(contiguous(idx_shape)), dsrc = output(with_strides(table_shape, {7 * 10, 10, 1}));
    std::fill(dsrc.host.begin(), dsrc.host.end(), 0.0);
    GatherDescriptor desc{dtype(), DType::i32, table_shape, idx_shape, dim};
    desc.accumulate = false;
    check_scatter<GatherBackwardPlan>(desc, {idx_shape, dim, false}, dout, idx, dsrc, [&](int64_t* count) {
      return GatherBackwardArgs{dout.ref(), idx.ref(), dsrc.mut(), count};
    });
    if (backend() == Backend::cpu) {
      const size_t workspace = unwrap(GatherBackwardPlan::select(stream(), desc)).workspace_size();
      EXPECT_EQ(workspace >= size_t{512} * 1024, sixteen_bit() || dim != 2) << workspace;
    }
  }
}

// Along the innermost dim CUDA sums each destination line in shared memory in a fixed order, 1024
// entries at a time, with no workspace: lines of 3000 entries over 37 slots.
TEST_P(IndexingTest, SortedLineScatterTakesTheOrderedLineKernel) {
  const Shape src{5, 37}, idx_shape{5, 3000};
  Tensor dout = values(contiguous(idx_shape)), dsrc = values(contiguous(src));
  Tensor idx = index(contiguous(idx_shape), DType::i32, -3, 40);
  PlanPreference pref;
  pref.determinism = Determinism::required;
  GatherBackwardPlan plan =
      unwrap(GatherBackwardPlan::select(stream(), {dtype(), DType::i32, src, idx_shape, 1}, pref));
  const GatherBackwardArgs args{dout.ref(), idx.ref(), dsrc.mut(), nullptr};
  EXPECT_EQ(plan.sku(args).variant, backend() == Backend::cuda ? "sorted.elements_shared" : "sorted.elements");
  // The CPU adds f32 and f64 in entry order (no workspace) and sorts 16-bit types' entries.
  const bool in_order = dtype() == DType::f32 || dtype() == DType::f64;
  EXPECT_EQ(plan.workspace_size() == 0, backend() == Backend::cuda || in_order);
  // The sums are right (the op table's driver checks the bits across runs on this shape).
  check_scatter<GatherBackwardPlan>(
      {dtype(), DType::i32, src, idx_shape, 1}, {idx_shape, 1, false}, dout, idx, dsrc,
      [&](int64_t* count) {
        return GatherBackwardArgs{dout.ref(), idx.ref(), dsrc.mut(), count};
      },
      pref);
}

// A table with no slot along dim under lines of many entries: every entry is out of range (counted)
// and nothing is written (CUDA's line kernels size their items by the line's length: the general
// kernel takes these).
TEST_P(IndexingTest, EmptyLinesUnderManyEntries) {
  for (const PlanPreference& pref : scatter_variants()) {
    SCOPED_TRACE(pref.variant);
    overwrite_and_add(contiguous({3, 0}), contiguous({3, 40}), DType::i64, -1, 1, pref);
  }
}

// More lines than a GPU grid's blocks (the line kernel's grid is one wave of resident blocks), so
// that blocks take several: lines of two tiles (a block carries its next tile's entries across
// lines, and writes a line back slot by slot) and (CUDA) lines of one tile, whose added sums are
// written back entry by entry: into a contiguous table, entries meeting on a few slots, and into a
// transposed one, spread over the line. Index values in [-1, slots]: -1 is out of range, and so is
// `slots` where it is the line's length.
TEST_P(IndexingTest, LineScatterWithMoreLinesThanBlocks) {
  struct Case {
    Shape table, idx;
    int64_t slots;  // index values in [-1, slots]
    bool transposed, cuda_only;
  };
  for (const Case& c :
       {Case{{2500, 50}, {2500, 1100}, 50, false, false}, Case{{1400, 4000}, {1400, 600}, 20, false, true},
        Case{{1400, 4000}, {1400, 600}, 4000, true, true}}) {
    if (c.cuda_only && backend() != Backend::cuda) continue;
    SCOPED_TRACE(c.table.to_string() + (c.transposed ? " transposed" : ""));
    for (const PlanPreference& pref : scatter_variants()) {
      SCOPED_TRACE(pref.variant);
      Tensor vals = values(contiguous(c.idx));
      Tensor table = values(c.transposed ? with_strides(c.table, {1, c.table.dims[0]}) : contiguous(c.table));
      Tensor idx = index(contiguous(c.idx), DType::i64, -1, c.slots + 1);
      const std::string variant = check_scatter<ScatterAddPlan>(
          {dtype(), DType::i64, c.table, c.idx, 1}, {c.idx, 1, false}, vals, idx, table,
          [&](int64_t* count) {
            return ScatterAddArgs{vals.ref(), idx.ref(), table.mut(), count};
          },
          pref);
      if (backend() == Backend::cuda && pref.variant == "sorted") {
        EXPECT_EQ(variant, "sorted.elements_shared");
      }
    }
  }
}

TEST_P(IndexingTest, IndexSelectForwardAndBackwardAlongEveryDim) {
  const Shape src{6, 9, 10};
  for (int dim : {0, 1, 2, -1}) {
    const int d = dim < 0 ? dim + 3 : dim;
    const int64_t k = 13;
    Shape out_shape = src;
    out_shape.dims[d] = k;
    SCOPED_TRACE(dim);
    // src column-major, out with gaps.
    Tensor table = values(with_strides(src, {1, 6, 54}));
    Strides gaps = contiguous_strides(out_shape);
    for (int64_t& s : gaps) s *= 2;
    Tensor out = output(with_strides(out_shape, gaps));
    Tensor idx = index(contiguous({k}), DType::i64, -1, src.dims[d] + 1);
    IndexedCase c{out_shape, d, true};
    check_gather<IndexSelectPlan>({dtype(), DType::i64, src, dim, k}, c, table, idx, out, [&](int64_t* count) {
      return IndexSelectArgs{table.ref(), idx.ref(), out.mut(), count};
    });
    for (const PlanPreference& pref : scatter_variants()) {
      Tensor dout = values(contiguous(out_shape)), dsrc = values(with_strides(src, {1, 6, 54}));
      check_scatter<IndexSelectBackwardPlan>(
          {dtype(), DType::i64, src, dim, k}, c, dout, idx, dsrc,
          [&](int64_t* count) {
            return IndexSelectBackwardArgs{dout.ref(), idx.ref(), dsrc.mut(), count};
          },
          pref);
    }
  }
}

TEST_P(IndexingTest, GatherAndScatterAddAlongEveryDim) {
  const Shape src{7, 8, 9};
  for (int dim : {0, 1, 2}) {
    const Shape idx_shape{5, 6, 4};  // smaller than src off dim, as torch.gather allows
    SCOPED_TRACE(dim);
    for (DType idx_t : {DType::i32, DType::i64}) {
      Tensor table = values(contiguous(src));
      Tensor out = output(with_strides(idx_shape, {1, 5, 30}));
      Tensor idx = index(with_strides(idx_shape, {24 * 2, 4 * 2, 2}), idx_t, -2, src.dims[dim] + 2);
      IndexedCase c{idx_shape, dim, false};
      check_gather<GatherPlan>({dtype(), idx_t, src, idx_shape, dim}, c, table, idx, out, [&](int64_t* count) {
        return GatherArgs{table.ref(), idx.ref(), out.mut(), count};
      });
      for (const PlanPreference& pref : scatter_variants()) {
        Tensor dout = values(contiguous(idx_shape)), dsrc = values(with_strides(src, {1, 7, 56}));
        check_scatter<GatherBackwardPlan>(
            {dtype(), idx_t, src, idx_shape, dim}, c, dout, idx, dsrc,
            [&](int64_t* count) {
              return GatherBackwardArgs{dout.ref(), idx.ref(), dsrc.mut(), count};
            },
            pref);
        Tensor addend = values(contiguous(idx_shape)), dst = values(contiguous(src));
        check_scatter<ScatterAddPlan>(
            {dtype(), idx_t, src, idx_shape, dim}, c, addend, idx, dst,
            [&](int64_t* count) {
              return ScatterAddArgs{addend.ref(), idx.ref(), dst.mut(), count};
            },
            pref);
      }
    }
  }
}

// Every element of a long index line hits one destination element: along the last dim (CUDA's line
// kernel) and along dim 0 (the sorted windows: runs of 3000 cross ~94 windows, and the two columns'
// runs meet inside a window), plus a few bad values.
TEST_P(IndexingTest, ScatterAddWithEveryIndexEqualCrossesManyWindows) {
  for (const PlanPreference& pref : scatter_variants()) {
    for (const auto& [idx_shape, table_shape, dim] :
         {std::tuple{Shape{2, 3000}, Shape{2, 7}, 1}, std::tuple{Shape{3000, 2}, Shape{7, 2}, 0}}) {
      SCOPED_TRACE(dim);
      Tensor vals = values(contiguous(idx_shape)), table = values(contiguous(table_shape));
      Tensor idx = index(contiguous(idx_shape), DType::i64, 4, 5);
      for (int64_t i : {5, 17, 2999}) idx.host[i] = static_cast<double>(i == 17 ? -1 : 7);
      ASSERT_OK(idx.upload());
      check_scatter<ScatterAddPlan>(
          {dtype(), DType::i64, table_shape, idx_shape, dim}, {idx_shape, dim, false}, vals, idx, table,
          [&](int64_t* count) {
            return ScatterAddArgs{vals.ref(), idx.ref(), table.mut(), count};
          },
          pref);
    }
  }
}

// One token on 95% of the rows (a batch padded with one token): a run over hundreds to thousands of
// windows, which CUDA's sorted fix-up adds in chunks of 64 windows from 512 windows on (16384 rows,
// or elements): both sides of that (500 and 513 windows), rows of 16-byte vectors and not, and element
// mode along dim 0 of a tall table (two such runs, a column each). Every variant; the sorted one
// twice, to the same bits.
TEST_P(IndexingTest, ScatterOfOneDominantIndexOnBothSidesOfTheChunkedFixUp) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> percent(0, 99), other(0, 3);
  const auto dominant = [&](Tensor& idx, int64_t token) {
    for (double& x : idx.host) x = percent(rng) < 95 ? double(token) : double(other(rng));
    ASSERT_OK(idx.upload());
  };
  // (4223 rows: below spans_pay's 4224 on 132 SMs, the atomic variant takes a row a group; 70001 rows:
  // its spans of 8 rows end short. d = 3, and d = 8 at 70001 rows (the f32 vector kernel): token 0 is
  // padding, so runs of the dominant token are broken by skipped rows.)
  for (const int64_t n : {int64_t{4223}, int64_t{16000}, int64_t{16416}, int64_t{70001}}) {
    for (const int64_t d : {8, 3}) {
      for (const PlanPreference& pref : scatter_variants()) {
        SCOPED_TRACE("rows " + std::to_string(n) + " d " + std::to_string(d) + " variant " + pref.variant);
        const int64_t v = 5;
        const std::optional<int64_t> padding = d == 3 || n == 70001 ? std::optional<int64_t>(0) : std::nullopt;
        Tensor dout = values(contiguous({n, d})), dweight = values(contiguous({v, d}));
        Tensor indices = index(contiguous({n}), DType::i64, 0, 1);
        dominant(indices, 1);
        const EmbeddingDescriptor desc{dtype(), DType::i64, v, d, n, padding};
        const auto args = [&](int64_t* count) {
          return EmbeddingBackwardArgs{dout.ref(), indices.ref(), dweight.mut(), count};
        };
        const std::vector<double> before = dweight.host;
        check_scatter<EmbeddingBackwardPlan>(desc, IndexedCase{{n, d}, 0, true, padding ? 0 : reference::kNoPadding},
                                             dout, indices, dweight, args, pref);
        if (pref.variant == "sorted")
          expect_same_bits_again<EmbeddingBackwardPlan>(desc, pref, args(nullptr), dweight, before);
      }
    }
  }
  for (const PlanPreference& pref : scatter_variants()) {
    SCOPED_TRACE("elements, variant " + pref.variant);
    const Shape idx_shape{70000, 2}, table_shape{200000, 2};  // (tall: the sorted variant is the global sort)
    Tensor vals = values(contiguous(idx_shape)), table = values(contiguous(table_shape));
    Tensor idx = index(contiguous(idx_shape), DType::i64, 0, 1);
    dominant(idx, 3);
    const ScatterAddDescriptor desc{dtype(), DType::i64, table_shape, idx_shape, 0};
    const auto args = [&](int64_t* count) { return ScatterAddArgs{vals.ref(), idx.ref(), table.mut(), count}; };
    const std::vector<double> before = table.host;
    check_scatter<ScatterAddPlan>(desc, {idx_shape, 0, false}, vals, idx, table, args, pref);
    if (pref.variant == "sorted") expect_same_bits_again<ScatterAddPlan>(desc, pref, args(nullptr), table, before);
  }
}

// A few long rows: the atomic variant cuts each row into pieces of at least a block's units, up to 4
// groups an SM (scatter_atomic.cu's pieces_of); a repeated token, so pieces of one row meet in the table.
TEST_P(IndexingTest, FewLongRowsCutIntoPieces) {
  for (const int64_t d : {40000, 40001}) {  // f32: the vector kernel, then the element-wise rows kernel
    for (const PlanPreference& pref : scatter_variants()) {
      SCOPED_TRACE("d " + std::to_string(d) + " variant " + pref.variant);
      const int64_t v = 5, n = 3;
      Tensor dout = values(contiguous({n, d})), dweight = values(contiguous({v, d}));
      Tensor indices = index(contiguous({n}), DType::i64, 0, 1);
      indices.host = {2.0, 4.0, 2.0};
      ASSERT_OK(indices.upload());
      const EmbeddingDescriptor desc{dtype(), DType::i64, v, d, n, {}};
      const auto args = [&](int64_t* count) {
        return EmbeddingBackwardArgs{dout.ref(), indices.ref(), dweight.mut(), count};
      };
      check_scatter<EmbeddingBackwardPlan>(desc, IndexedCase{{n, d}, 0, true}, dout, indices, dweight, args, pref);
    }
  }
}

// 16-bit defaults accumulate in f32: on CUDA the warp lines along the last dim (short lines) and the
// column tiles along an outer one; the CPU is always sorted.
TEST_P(IndexingTest, SixteenBitDefaultsAccumulateInF32) {
  if (!sixteen_bit()) GTEST_SKIP() << "16-bit defaults only";
  const Shape src{4, 64}, idx_shape{4, 40};
  for (int dim : {1, 0}) {
    GatherBackwardPlan plan = unwrap(GatherBackwardPlan::select(stream(), {dtype(), DType::i64, src, idx_shape, dim}));
    EXPECT_EQ(plan.precision_guarantee().accumulator, DType::f32);
    Tensor dout = values(contiguous(idx_shape)), dsrc = values(contiguous(src));
    Tensor idx = index(contiguous(idx_shape), DType::i64, 0, 4);
    const std::string variant = plan.sku({dout.ref(), idx.ref(), dsrc.mut(), nullptr}).variant;
    if (backend() == Backend::cuda) {
      EXPECT_EQ(variant, dim == 1 ? "sorted.elements_warp" : "atomic.elements_columns");
    } else {
      EXPECT_EQ(variant, "sorted.elements");
    }
  }
  // index_select's backward along the last dim is the same line sum.
  IndexSelectBackwardPlan plan = unwrap(IndexSelectBackwardPlan::select(stream(), {dtype(), DType::i64, src, 1, 40}));
  EXPECT_EQ(plan.precision_guarantee().accumulator, DType::f32);
  EXPECT_EQ(plan.sku().variant, backend() == Backend::cuda ? "sorted.rows_warp" : "sorted.rows");
}

// CUDA's scatter kernels along the innermost dim, on both sides of each threshold: destination lines
// with at most 128 entries take the warp lines where they have more than 32 entries and are added to
// (any line length: the warp hashes the slots it reaches; in f32 / f64 also sparse lines of up to 512
// entries, their sorted variant checked), or where the table is overwritten (the gradient: every
// line written once, zeros included) and a line holds at most 2048 sums (1024 f64);
// other lines of at most 32 entries take the short-line kernel whatever the line's length. Both are
// deterministic, with f32 sums and no workspace, by default too, except that f32 and f64 atomics take
// every line they add to but dense shared ones. More entries take the shared line where the line fits
// in shared memory (12288 f32 sums, 6144 f64), in slabs of that size while the entries are at most
// half a slab, and the general kernels past that; f32 and f64 atomics (the general kernel) also take
// slabs and lines they add sparse entries to. Also an index of size 1 along dim (every entry alone on
// its line), MoE routing's shape ([tokens, experts] <- top-k), and (CUDA only) more warp items than
// the grid has warps. Index values span a few slots past each end: duplicates in a line and bad
// values.
TEST_P(IndexingTest, ScatterKernelsOnBothSidesOfEachThreshold) {
  const bool cuda = backend() == Backend::cuda;
  const int64_t slots = dtype() == DType::f64 ? 6144 : 12288, warp = dtype() == DType::f64 ? 1024 : 2048;
  struct Case {
    int64_t lines, line_length, entries, distinct;
    std::string overwriting, adding;  // the CUDA default of the gradient (overwrites) and of scatter_add
    bool cuda_only = false;
  };
  const std::string general = sixteen_bit() ? "sorted.elements" : "atomic.elements";
  const std::string shared = "atomic.elements_shared", short_lines = "sorted.elements_short";
  const std::string warp_lines = "sorted.elements_warp";
  const std::string slabs = sixteen_bit() ? shared : general;            // f32 and f64 atomics beat slabs
  const std::string sparse = slabs;                                      // and the shared line adding sparse lines
  const std::string long_line = dtype() == DType::f64 ? slabs : shared;  // 6150 sums: f64 slabs
  const std::string sparse_adds = sixteen_bit() ? sparse : warp_lines;   // up to 512 entries, f32 / f64
  const std::vector<Case> cases = {
      {70, 64, 8, 64, warp_lines, short_lines},
      {70, 64, 32, 5, warp_lines, short_lines},
      {70, 64, 33, 5, warp_lines, warp_lines},
      {40, 64, 128, 64, warp_lines, warp_lines},
      {40, 64, 129, 64, shared, shared},
      // Adding up to an entry a 6 slots (sparse): in f32 / f64 a warp, up to 512 entries (tiles of
      // 128); the shared line adds entry by entry while the entries fit one tile (1024), and f32 /
      // f64 atomics take the line by default.
      {40, 774, 129, 774, shared, sparse_adds},
      {40, 773, 129, 773, shared, shared},
      {3, 6144, 1024, 6144, shared, sparse},
      {3, 6144, 1025, 6144, shared, shared},
      // Sparse either side of one tile (f64: two slabs).
      {3, 6150, 1024, 6150, long_line, sparse},
      {3, 6150, 1025, 6150, long_line, sparse},
      {40, warp, 33, warp, warp_lines, warp_lines},
      // Adding, the warp lines hash the reached slots: any line length.
      {40, warp + 1, 33, warp + 1, shared, warp_lines},
      {40, 20000, 128, 20000, slabs, warp_lines},
      {40, 20000, 129, 20000, slabs, sparse_adds},
      {40, 20000, 512, 20000, slabs, sparse_adds},
      {40, 20000, 513, 20000, slabs, sparse},
      {40, warp, 8, warp, warp_lines, short_lines},
      {40, warp + 1, 8, warp + 1, short_lines, short_lines},
      {300, 50, 1, 50, warp_lines, short_lines},
      {1100000, 8, 2, 8, warp_lines, short_lines, true},
      {6, 20000, 32, 7, short_lines, short_lines},
      {6, 20000, 33, 7, slabs, warp_lines},
      {3, slots, 40, slots, shared, warp_lines},
      {3, slots + 1, 40, slots + 1, slabs, warp_lines},  // two slabs, the second of one slot
      {2, 4 * slots, slots / 2, 4 * slots, slabs, slabs},
      {2, 4 * slots, slots / 2 + 1, 4 * slots, general, general},
      {300, 20000, 1, 20000, short_lines, short_lines},
      {9, 37, 3, 37, warp_lines, short_lines}};
  for (const Case& c : cases) {
    if (c.cuda_only && !cuda) continue;
    const Shape table_shape{c.lines, c.line_length}, idx_shape{c.lines, c.entries};
    SCOPED_TRACE(table_shape.to_string() + " <- " + idx_shape.to_string());
    for (const PlanPreference& pref : c.cuda_only ? std::vector<PlanPreference>(1) : scatter_variants()) {
      SCOPED_TRACE(pref.variant);
      const int64_t lo = c.distinct < c.line_length ? 0 : -2, hi = lo + c.distinct + 2;
      const auto [overwriting, adding] =
          overwrite_and_add(contiguous(table_shape), contiguous(idx_shape), DType::i32, lo - 2, hi, pref);
      if (cuda && pref.variant == "sorted" && !sixteen_bit()) {
        EXPECT_EQ(adding == warp_lines, c.adding == warp_lines) << adding;  // f32 / f64 atomics aside
      }
      if (cuda && pref.variant.empty()) {
        EXPECT_EQ(overwriting, c.overwriting);
        // f32 / f64 atomics take every adding line but those dense in the shared line.
        EXPECT_EQ(adding, sixteen_bit() || c.adding == shared ? c.adding : general);
        GatherDescriptor desc{dtype(), DType::i32, table_shape, idx_shape, 1};
        desc.accumulate = false;
        GatherBackwardPlan plan = unwrap(GatherBackwardPlan::select(stream(), desc));
        EXPECT_EQ(plan.workspace_size() == 0, c.overwriting != "sorted.elements");
        if (c.overwriting == short_lines || c.overwriting == warp_lines) {
          EXPECT_TRUE(plan.precision_guarantee().deterministic);
          EXPECT_EQ(plan.precision_guarantee().accumulator, dtype() == DType::f64 ? DType::f64 : DType::f32);
        }
      }
    }
  }
}

// Element-mode scatters along an outer dim ([R, C] <- [K, C] along dim 0): CUDA's column lines (each
// column a line of the line kernels) where K <= 1024 and the column tiles would need more than 8
// slabs, but for f32 / f64 atomics (the default, or forced); else the column-tile kernel (a tile of
// `width` columns by a slab of `rows` rows in shared memory) where the items (column tiles x slabs)
// are at least 256 or each has at most 16384 entries (K x width), and where the slabs pay: at most 8
// beside the atomics; beside the global sort (16-bit defaults, the sorted variant) while slabs x K x
// (element + index bytes) <= R x element bytes + 128 K and the slabs are at most 32 (K > 1024 there:
// 14 slabs).
// Both sides of each threshold, every variant, and strided 3-D walks with the column count off the
// tile width.
TEST_P(IndexingTest, ColumnScatterOnBothSidesOfEachThreshold) {
  const bool cuda = backend() == Backend::cuda;
  const auto size = static_cast<int64_t>(dtype_size(dtype()));
  const int64_t width = 32 / size;                                      // the narrowest tile
  const int64_t rows = (dtype() == DType::f64 ? 6144 : 12288) / width;  // its rows
  // The most entries a column of 14 slabs takes beside the sort (i64 index values): more than the
  // column lines' 1024 in every dtype (and 20 tiles of columns: 280 items).
  const int64_t sort_entries = 14 * rows * size / (14 * (size + 8) - 128);
  struct Case {
    int64_t table_rows, columns, entries;
    bool beside_atomics, beside_sort, cuda_only;
    int64_t lines = 1;  // more than one: a 3-D walk [lines, entries, columns] along dim 1
  };
  const std::vector<Case> cases = {{8 * rows, 2 * width, 3, true, true, false},                // 8 slabs
                                   {8 * rows + 1, 2 * width, 3, false, true, false},           // 9 slabs
                                   {14 * rows, 20 * width, sort_entries, false, true, false},  // 14 slabs
                                   {14 * rows, 20 * width, sort_entries + 1, false, false, false},
                                   {32 * rows, 2 * width, 3, false, true, false},         // 32 slabs
                                   {32 * rows + 1, 2 * width, 3, false, false, false},    // 33 slabs  //
                                   {rows, 255 * width, 16384 / width, true, true, true},  // 255 items of 16384 entries
                                   {rows, 255 * width, 16384 / width + 1, false, false, true},  // 255 items of more
                                   {rows, 256 * width, 16384 / width + 1, true, true, true},    // 256 items of more
                                   {40, 2000, 7, true, true, false},  // a tile of 256 columns by 48 rows
                                   {300, 70, 1, true, true, false},   // one entry a column: dim leaves the walk
                                   // More items than CUDA's grid (16 blocks an SM): blocks take several,
                                   // of one slab, and of two slabs the second one row high.
                                   {2, 256, 3, true, true, true, 2200},
                                   {rows + 1, width, 3, true, true, true, 1100}};
  // The SKU each preference gets on CUDA.
  const auto expected = [&](const Case& c, const std::string& pref) {
    const bool atomics = pref == "atomic" || (pref.empty() && !sixteen_bit());
    const bool lines = (sixteen_bit() || !atomics) && c.entries <= 1024 && c.table_rows > 8 * rows;
    if (lines) return (!pref.empty() ? pref : column_lines_default(c.table_rows, c.entries)) + ".elements_column_lines";
    const bool columns = atomics ? c.beside_atomics : c.beside_sort;
    const std::string variant = !pref.empty() ? pref : atomics || columns ? "atomic" : "sorted";
    return variant + (columns ? ".elements_columns" : ".elements");
  };
  for (const Case& c : cases) {
    if (c.cuda_only && !cuda) continue;
    const int dim = c.lines > 1 ? 1 : 0;
    const Shape table_shape = dim ? Shape{c.lines, c.table_rows, c.columns} : Shape{c.table_rows, c.columns};
    const Shape idx_shape = dim ? Shape{c.lines, c.entries, c.columns} : Shape{c.entries, c.columns};
    SCOPED_TRACE(table_shape.to_string() + " <- " + idx_shape.to_string());
    for (const PlanPreference& pref : c.cuda_only ? std::vector<PlanPreference>(1) : scatter_variants()) {
      SCOPED_TRACE(pref.variant);
      // Destinations across every slab, and some out of range (entries meet where a column has
      // more of them than a few hundred rows).
      Tensor idx = index(contiguous(idx_shape), DType::i64, -1, c.table_rows + 1);
      Tensor dout = values(contiguous(idx_shape)), dsrc = output(contiguous(table_shape));
      std::fill(dsrc.host.begin(), dsrc.host.end(), 0.0);
      GatherDescriptor desc{dtype(), DType::i64, table_shape, idx_shape, dim};
      desc.accumulate = false;
      const auto args = [&](int64_t* count) { return GatherBackwardArgs{dout.ref(), idx.ref(), dsrc.mut(), count}; };
      const std::string variant =
          check_scatter<GatherBackwardPlan>(desc, {idx_shape, dim, false}, dout, idx, dsrc, args, pref);
      if (cuda) {
        EXPECT_EQ(variant, expected(c, pref.variant));
      }
      if (cuda && variant.rfind("sorted.elements_column", 0) == 0) {
        expect_same_bits_again<GatherBackwardPlan>(desc, pref, args(nullptr), dsrc);
      }
      if (c.cuda_only) continue;
      Tensor addend = values(contiguous(idx_shape)), dst = values(contiguous(table_shape));
      check_scatter<ScatterAddPlan>(
          {dtype(), DType::i64, table_shape, idx_shape, dim}, {idx_shape, dim, false}, addend, idx, dst,
          [&](int64_t* count) {
            return ScatterAddArgs{addend.ref(), idx.ref(), dst.mut(), count};
          },
          pref);
    }
  }
  // Strided 3-D walks: dim between two others (the lines are the outer dim), a transposed table,
  // 33 columns (off any tile width), i32 indices; and dim 0 of a 3-D walk whose inner dims merge.
  for (const PlanPreference& pref : scatter_variants()) {
    SCOPED_TRACE(pref.variant);
    {
      const Shape table_shape{5, 700, 33}, idx_shape{5, 90, 33};
      Tensor idx = index(with_strides(idx_shape, {33, 5 * 33, 1}), DType::i32, -1, 701);
      Tensor vals = values(contiguous(idx_shape)), dst = values(with_strides(table_shape, {700 * 33, 1, 700}));
      const std::string variant = check_scatter<ScatterAddPlan>(
          {dtype(), DType::i32, table_shape, idx_shape, 1}, {idx_shape, 1, false}, vals, idx, dst,
          [&](int64_t* count) {
            return ScatterAddArgs{vals.ref(), idx.ref(), dst.mut(), count};
          },
          pref);
      if (cuda) {
        EXPECT_NE(variant.find("_columns"), std::string::npos) << variant;
      }
    }
    const Shape table_shape{50, 6, 40}, idx_shape{31, 6, 40};
    Tensor idx = index(contiguous(idx_shape), DType::i64, 0, 50);
    Tensor dout = values(contiguous(idx_shape)), dsrc = output(contiguous(table_shape));
    std::fill(dsrc.host.begin(), dsrc.host.end(), 0.0);
    GatherDescriptor desc{dtype(), DType::i64, table_shape, idx_shape, 0};
    desc.accumulate = false;
    check_scatter<GatherBackwardPlan>(
        desc, {idx_shape, 0, false}, dout, idx, dsrc,
        [&](int64_t* count) {
          return GatherBackwardArgs{dout.ref(), idx.ref(), dsrc.mut(), count};
        },
        pref);
  }
}

// CUDA's column lines (element mode along an outer dim of a tall table, at most 1024 entries a column,
// the walk taken with dim innermost; the table zeroed first when overwritten) over layouts and both
// sides of each choice of kernel: the warp lines' adds for at most 128 entries (a warp a column, its
// reached slots hashed) and for at most 512 on columns longer than the shared line's 12288 sums (the
// hash in tiles: 300 and 512 entries); else the shared line (a block a column, added entry by entry:
// 129 and 1024 entries on 16-bit columns of 6145 rows, 1024 on f32 / f64 columns in slabs; 513 on a
// long column); 1024 entries packed on 30 rows (duplicates everywhere), one entry a column (dim leaves
// the walk), a 3-D walk along dim 1 over a transposed table and a strided i32 index, an index
// narrower than the table (the overwrite zeroes columns the walk never reaches), a table with unit
// stride along dim, both sides of 12288 rows at 300 entries; 1025 entries take another kernel.
// Overwritten and added, every variant (the sorted one twice, to the same bits); the CPU runs the
// same problems.
TEST_P(IndexingTest, ColumnLinesOverEveryLayout) {
  const bool cuda = backend() == Backend::cuda;
  const int64_t rows = (dtype() == DType::f64 ? 6144 : 12288) / (32 / static_cast<int64_t>(dtype_size(dtype())));
  const int64_t tall = 8 * rows + 1;  // 9 slabs of the narrowest column tile
  struct Case {
    const char* name;
    TensorSpec table, entries;
    int dim = 0;
    int64_t hi = 0;  // index values in [-2, hi)
    DType idx_t = DType::i64;
    bool lines = true;
  };
  const std::vector<Case> cases = {
      {"40 entries", contiguous({tall, 37}), contiguous({40, 37}), 0, tall + 2},
      {"128 entries", contiguous({tall, 37}), contiguous({128, 37}), 0, tall + 2},
      {"129 entries", contiguous({tall, 37}), contiguous({129, 37}), 0, tall + 2},
      {"1024 entries", contiguous({tall, 5}), contiguous({1024, 5}), 0, tall + 2},
      {"1024 entries on 30 rows", contiguous({tall, 5}), contiguous({1024, 5}), 0, 30},
      {"1025 entries", contiguous({tall, 5}), contiguous({1025, 5}), 0, tall + 2, DType::i64, false},
      {"one entry a column", contiguous({tall, 300}), contiguous({1, 300}), 0, tall + 2},
      {"a column longer than the shared line's sums (hashed in tiles)", contiguous({3 * 12288 - 5, 4}),
       contiguous({300, 4}), 0, 3 * 12288 - 3},
      {"512 entries on a long column", contiguous({3 * 12288 - 5, 4}), contiguous({512, 4}), 0, 3 * 12288 - 3},
      {"513 entries on a long column (shared line slabs)", contiguous({3 * 12288 - 5, 4}), contiguous({513, 4}), 0,
       3 * 12288 - 3},
      // 16-bit types on both sides of the shared line's 12288 sums (f32 / f64 at 12288 rows: column tiles).
      {"12288 rows", contiguous({12288, 4}), contiguous({300, 4}), 0, 12290, DType::i64, sixteen_bit()},
      {"12289 rows", contiguous({12289, 4}), contiguous({300, 4}), 0, 12291},
      {"3-D along dim 1, transposed table, strided index", with_strides({3, tall, 7}, {1, 21, 3}),
       with_strides({3, 90, 7}, {7, 21, 1}), 1, tall + 2, DType::i32},
      {"index narrower than the table", contiguous({tall, 40}), contiguous({200, 33}), 0, tall + 2},
      {"unit stride along dim", with_strides({tall, 9}, {1, tall}), contiguous({300, 9}), 0, tall + 2}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Shape &table_shape = c.table.shape, &idx_shape = c.entries.shape;
    for (const PlanPreference& pref : scatter_variants()) {
      SCOPED_TRACE(pref.variant);
      Tensor idx = index(c.entries, c.idx_t, -2, c.hi);
      Tensor dout = values(c.entries), dsrc = output(c.table);
      std::fill(dsrc.host.begin(), dsrc.host.end(), 0.0);
      GatherDescriptor desc{dtype(), c.idx_t, table_shape, idx_shape, c.dim};
      desc.accumulate = false;
      const auto args = [&](int64_t* count) { return GatherBackwardArgs{dout.ref(), idx.ref(), dsrc.mut(), count}; };
      const std::string overwriting =
          check_scatter<GatherBackwardPlan>(desc, {idx_shape, c.dim, false}, dout, idx, dsrc, args, pref);
      Tensor vals = values(c.entries), dst = values(c.table);
      const std::string adding = check_scatter<ScatterAddPlan>(
          {dtype(), c.idx_t, table_shape, idx_shape, c.dim}, {idx_shape, c.dim, false}, vals, idx, dst,
          [&](int64_t* count) {
            return ScatterAddArgs{vals.ref(), idx.ref(), dst.mut(), count};
          },
          pref);
      if (!cuda) continue;
      // (f32 / f64 atomics, the default or asked, keep the global atomics.)
      const bool atomics = !sixteen_bit() && pref.variant != "sorted";
      const bool lines = c.lines && !atomics;
      const std::string variant =
          !pref.variant.empty() ? pref.variant : column_lines_default(table_shape.dims[c.dim], idx_shape.dims[c.dim]);
      EXPECT_EQ(overwriting == variant + ".elements_column_lines", lines) << overwriting;
      EXPECT_EQ(adding == variant + ".elements_column_lines", lines) << adding;
      if (lines && variant == "sorted") {
        EXPECT_TRUE(unwrap(GatherBackwardPlan::select(stream(), desc, pref)).precision_guarantee().deterministic);
        expect_same_bits_again<GatherBackwardPlan>(desc, pref, args(nullptr), dsrc);
      }
    }
  }
  // Sums in f32 for 16-bit types, rounded once (as AddingRoundsOnce, along dim 0): entries 0 and 200
  // of a column (different tiles of the warp lines) meet on row 7; on the shared line (16-bit, `tall`
  // rows) and on the warp's hash in tiles (a column past the shared line's sums). bf16 tells one
  // rounding from two.
  for (const int64_t height : {tall, int64_t{3 * 12288 - 5}}) {
    for (const PlanPreference& pref : scatter_variants()) {
      if (pref.variant == "atomic") continue;  // (adds in T)
      SCOPED_TRACE(std::to_string(height) + " rows " + pref.variant);
      const std::string variant = check_rounds_once(0, 3, height, 300, 200, pref);
      if (cuda && (sixteen_bit() || pref.variant == "sorted")) {
        EXPECT_EQ(variant,
                  (pref.variant.empty() ? column_lines_default(height, 300) : pref.variant) + ".elements_column_lines");
      }
    }
  }
}

// Many short lines of more than 128 entries (fewer take the warp lines): CUDA's shared-line kernel
// packs several lines a block (as many as fit while a full grid keeps two items a block: here 3 on
// 132 SMs, the last item of one line), over a contiguous walk and a 3-D strided one, overwriting and
// adding.
TEST_P(IndexingTest, LineScatterPacksSeveralShortLinesABlock) {
  for (const PlanPreference& pref : scatter_variants()) {
    SCOPED_TRACE(pref.variant);
    {
      const Shape table_shape{4001, 64}, idx_shape{4001, 200};
      Tensor idx = index(contiguous(idx_shape), DType::i64, -1, 66);
      Tensor dout = values(contiguous(idx_shape)), dsrc = output(contiguous(table_shape));
      std::fill(dsrc.host.begin(), dsrc.host.end(), 0.0);
      GatherDescriptor desc{dtype(), DType::i64, table_shape, idx_shape, 1};
      desc.accumulate = false;
      check_scatter<GatherBackwardPlan>(
          desc, {idx_shape, 1, false}, dout, idx, dsrc,
          [&](int64_t* count) {
            return GatherBackwardArgs{dout.ref(), idx.ref(), dsrc.mut(), count};
          },
          pref);
    }
    const Shape table_shape{21, 200, 50}, idx_shape{21, 200, 150};
    Tensor idx = index(with_strides(idx_shape, {150, 21 * 150, 1}), DType::i32, 0, 50);
    Tensor vals = values(contiguous(idx_shape)), dst = values(with_strides(table_shape, {200 * 50, 1, 200}));
    check_scatter<ScatterAddPlan>(
        {dtype(), DType::i32, table_shape, idx_shape, 2}, {idx_shape, 2, false}, vals, idx, dst,
        [&](int64_t* count) {
          return ScatterAddArgs{vals.ref(), idx.ref(), dst.mut(), count};
        },
        pref);
  }
}

// The short-line kernel over views: a transposed table (dim's stride not 1), an index broadcast
// along the lines, and index_select's backward (one index vector for every line).
TEST_P(IndexingTest, ShortLinesOverStridedAndBroadcastViews) {
  const Shape table_shape{50, 300}, idx_shape{50, 12};
  Tensor idx = index(with_strides(idx_shape, {0, 1}), DType::i64, -1, 6);
  Tensor dout = values(with_strides(idx_shape, {1, 50})), dsrc = values(with_strides(table_shape, {1, 50}));
  check_scatter<ScatterAddPlan>({dtype(), DType::i64, table_shape, idx_shape, 1}, {idx_shape, 1, false}, dout, idx,
                                dsrc, [&](int64_t* count) {
                                  return ScatterAddArgs{dout.ref(), idx.ref(), dsrc.mut(), count};
                                });
  Tensor idx1 = index(contiguous({12}), DType::i64, -1, 6);
  Tensor g = values(contiguous(idx_shape)), gsrc = values(contiguous(table_shape));
  const std::string variant = check_scatter<IndexSelectBackwardPlan>(
      {dtype(), DType::i64, table_shape, 1, 12}, {idx_shape, 1, true}, g, idx1, gsrc, [&](int64_t* count) {
        return IndexSelectBackwardArgs{g.ref(), idx1.ref(), gsrc.mut(), count};
      });
  if (backend() == Backend::cuda) {
    EXPECT_EQ(variant, atomics_add({}) ? "atomic.rows" : "sorted.rows_short");  // index_select_backward adds
  }
}

// CUDA's warp lines write an item whose lines are one run of the table (a dense walk: [lines,
// entries] back to back) in 16-byte chunks from its first aligned element; other walks line by line,
// in chunks where the lines start aligned with unit stride, else element by element. Every mix of
// those, overwriting a poisoned table and adding into one, through the same plan: lines of 200 and
// 201 elements, 48 entries a line (rounds that cross lines) with duplicates and bad values, and on
// CUDA enough lines (9000) for items of two lines on a GPU of up to 140 SMs. Then the walks the warp
// lines take apart from these: a 3-D strided one, an overwrite that does not reach every line (the
// table zeroed first, then added into), lines of one element, and one entry a line through a
// strided index.
TEST_P(IndexingTest, WarpLinesOverEveryLayout) {
  const int64_t lines = backend() == Backend::cuda ? 9000 : 300;  // the CPU's walk is the same at any count
  const Shape table_shape{lines, 200}, odd_shape{lines, 201}, idx_shape{lines, 48};
  const std::vector<Layout> layouts = {
      {"dense", contiguous(table_shape), contiguous(idx_shape)},
      {"dense, misaligned table (head and tail elements)", TensorSpec{table_shape, {}, false, 1},
       contiguous(idx_shape)},
      {"dense, odd lines", contiguous(odd_shape), contiguous(idx_shape)},
      {"padded table lines (chunks a line)", with_strides(table_shape, {208, 1}), contiguous(idx_shape)},
      {"padded table lines off 16 bytes (elements)", with_strides(table_shape, {202, 1}), contiguous(idx_shape)},
      {"strided entries (chunks a line)", contiguous(table_shape), with_strides(idx_shape, {1, lines})},
      {"odd lines, strided entries (elements)", contiguous(odd_shape), with_strides(idx_shape, {1, lines})},
      {"table along dim with stride 2 (elements)", with_strides(table_shape, {400, 2}), contiguous(idx_shape)},
      {"transposed table (elements)", with_strides(table_shape, {1, lines}), contiguous(idx_shape)}};
  over_layouts(layouts, [&](const PlanPreference& pref, const std::string& overwriting, const std::string& adding) {
    if (backend() == Backend::cuda) {
      const std::string expected = (pref.variant.empty() ? "sorted" : pref.variant) + ".elements_warp";
      EXPECT_EQ(overwriting, expected);
      EXPECT_EQ(adding, atomics_add(pref) ? "atomic.elements" : expected);
    }
  });
}

// CUDA's shared line (more than 128 entries a line, or lines past 2048 sums overwritten; adding,
// sparse lines of more than 512 entries or dense ones of more than 128) writes an item that is
// one run of the table in 16-byte chunks from its first aligned element, and adds entry by entry
// where the entries are sparse (at most one a 6 slots): every mix, overwriting a poisoned table and
// adding into one. Several lines an item (dense entries: enough lines on CUDA, 4001) and slabs
// of a line past shared memory (the second slab starting past a 16-byte boundary when the table is);
// dense and sparse entries; runs misaligned, of odd lines, and not runs (padded or transposed lines).
TEST_P(IndexingTest, SharedLinesOverEveryLayout) {
  const bool cuda = backend() == Backend::cuda;
  const int64_t lines = cuda ? 4001 : 60;  // several lines an item up to 200 SMs; the CPU's walk is alike
  const Shape dense{lines, 201}, sparse{cuda ? 1000 : 60, 4000}, dense_idx{lines, 150}, sparse_idx{sparse.dims[0], 600};
  const Shape slab{3, 30001}, slab_idx{3, 600};
  const std::vector<Layout> layouts = {
      {"dense entries, odd lines", contiguous(dense), contiguous(dense_idx)},
      {"dense entries, misaligned table", TensorSpec{dense, {}, false, 1}, contiguous(dense_idx)},
      {"dense entries, padded table lines (not one run)", with_strides(dense, {208, 1}), contiguous(dense_idx)},
      {"dense entries, transposed table", with_strides(dense, {1, lines}), contiguous(dense_idx)},
      {"sparse entries", contiguous(sparse), contiguous(sparse_idx)},
      {"sparse entries, misaligned table", TensorSpec{sparse, {}, false, 3}, contiguous(sparse_idx)},
      {"sparse entries, strided entries", contiguous(sparse), with_strides(sparse_idx, {1, sparse.dims[0]})},
      {"sparse entries, padded table lines", with_strides(sparse, {4016, 1}), contiguous(sparse_idx)},
      {"sparse entries, transposed table", with_strides(sparse, {1, sparse.dims[0]}), contiguous(sparse_idx)},
      {"slabs, misaligned table", TensorSpec{slab, {}, false, 1}, contiguous(slab_idx)}};
  over_layouts(layouts, [&](const PlanPreference& pref, const std::string& overwriting, const std::string& adding) {
    if (cuda && pref.variant == "sorted") {
      EXPECT_EQ(overwriting, "sorted.elements_shared");
      EXPECT_EQ(adding, "sorted.elements_shared");
    }
  });
  // Sparse lines of 300 entries, several an item: adding, 16-bit types keep the shared line (entry by
  // entry), f32 / f64 take the warp lines in three tiles, more lines (4001) than resident warps (at
  // most 3168 on 132 SMs), so a warp scans and empties its hash between two lines.
  const Shape several{lines, 2100}, several_idx{lines, 300};
  over_layouts({{"sparse entries, several lines an item", contiguous(several), contiguous(several_idx)}},
               [&](const PlanPreference& pref, const std::string& overwriting, const std::string& adding) {
                 if (cuda && pref.variant == "sorted") {
                   EXPECT_EQ(overwriting, "sorted.elements_shared");
                   EXPECT_EQ(adding, sixteen_bit() ? "sorted.elements_shared" : "sorted.elements_warp");
                 }
               });
}

// CUDA's warp lines adding into lines longer than a warp's sums (2100 slots; f32 holds 2048, f64 1024)
// keep the reached slots' sums in a small hash a warp: the same layouts as above, adding, with
// entries spread over the line (few meet) and packed on 30 slots (many meet across a warp's rounds,
// and their keys collide in the hash); on CUDA a dense walk of 9000 lines (items of two lines on a
// GPU of up to 140 SMs); lines of 300 entries (f32 / f64: three tiles a warp, the hash scanned).
TEST_P(IndexingTest, HashedWarpLinesOverEveryLayout) {
  const bool cuda = backend() == Backend::cuda;
  const Shape many{cuda ? 9000 : 60, 2100}, table_shape{300, 2100}, idx_shape{300, 48};
  const std::vector<Layout> layouts = {
      {"dense, two lines an item", contiguous(many), contiguous({many.dims[0], 48})},
      {"dense, misaligned table", TensorSpec{table_shape, {}, false, 1}, contiguous(idx_shape)},
      {"padded table lines", with_strides(table_shape, {2112, 1}), contiguous(idx_shape)},
      {"strided entries", contiguous(table_shape), with_strides(idx_shape, {1, 300})},
      {"transposed table", with_strides(table_shape, {1, 300}), contiguous(idx_shape)},
      {"300 entries a line (three tiles)", contiguous(table_shape), contiguous({300, 300})},
      {"300 entries a line, transposed table", with_strides(table_shape, {1, 300}), contiguous({300, 300})}};
  for (const Layout& l : layouts) {
    SCOPED_TRACE(l.name);
    for (const PlanPreference& pref : scatter_variants()) {
      SCOPED_TRACE(pref.variant);
      for (const int64_t hi : {2102, 30}) {
        Tensor idx = index(l.entries, DType::i64, -2, hi);
        Tensor vals = values(l.entries), dst = values(l.table);
        const std::string adding = check_scatter<ScatterAddPlan>(
            {dtype(), DType::i64, l.table.shape, l.entries.shape, 1}, {l.entries.shape, 1, false}, vals, idx, dst,
            [&](int64_t* count) {
              return ScatterAddArgs{vals.ref(), idx.ref(), dst.mut(), count};
            },
            pref);
        if (cuda) {
          // 16-bit lines of more than 128 entries keep the shared line (atomic by default).
          const bool shared = sixteen_bit() && l.entries.shape.dims[1] > 128;
          const std::string variant = pref.variant.empty() ? (shared ? "atomic" : "sorted") : pref.variant;
          EXPECT_EQ(adding,
                    atomics_add(pref) ? "atomic.elements" : variant + (shared ? ".elements_shared" : ".elements_warp"));
        }
      }
    }
  }
}

// Adding into a table sums a destination's entries in f32 (16-bit types) and rounds once: table ones,
// two entries 2^-8 and 2^-16 meeting on a slot from different rounds of a warp (the sum is not exact
// in bf16: bf16(1 + 2^-8 + 2^-16) = 1 + 2^-7 where rounding the sum first would give 1), the other
// entries 0.5 alone on their slots. Lines a warp's sums hold (64 slots), longer ones (2100: hashed),
// and a line of 300 entries (three tiles of a warp, the second entry in the second tile).
// (The atomic variant adds in T.)
TEST_P(IndexingTest, AddingRoundsOnce) {
  for (const auto& [line, entries] : {std::pair<int64_t, int64_t>{64, 48}, {2100, 48}, {2100, 300}}) {
    const int64_t meet = entries > 128 ? 200 : 40;  // the entry that meets entry 0 on slot 7
    for (const PlanPreference& pref : scatter_variants()) {
      if (sixteen_bit() && pref.variant == "atomic") continue;
      SCOPED_TRACE(std::to_string(line) + " x " + std::to_string(entries) + " " + pref.variant);
      check_rounds_once(1, 3, line, entries, meet, pref);
    }
  }
}

TEST_P(IndexingTest, WarpLinesOverOtherWalks) {
  for (const PlanPreference& pref : scatter_variants()) {
    SCOPED_TRACE(pref.variant);
    // A 3-D walk [21, 200, 36] along dim 2 over a strided index and table.
    {
      const Shape table_shape{21, 200, 50}, idx_shape{21, 200, 36};
      Tensor idx = index(with_strides(idx_shape, {36, 21 * 36, 1}), DType::i32, 0, 50);
      Tensor vals = values(contiguous(idx_shape)), dst = values(with_strides(table_shape, {200 * 50, 1, 200}));
      const std::string sku = check_scatter<ScatterAddPlan>(
          {dtype(), DType::i32, table_shape, idx_shape, 2}, {idx_shape, 2, false}, vals, idx, dst,
          [&](int64_t* count) {
            return ScatterAddArgs{vals.ref(), idx.ref(), dst.mut(), count};
          },
          pref);
      if (backend() == Backend::cuda) {
        EXPECT_EQ(sku.find("_warp") != std::string::npos, !atomics_add(pref)) << sku;
      }
    }
    // Overwriting with an index of fewer lines than the table (70 <- 60): zeroed first, then added.
    // Lines of one element. One entry a line through a strided index (dim leaves the walk).
    struct Walk {
      TensorSpec table, entries;
    };
    for (const Walk& w :
         {Walk{contiguous({70, 64}), contiguous({60, 40})}, Walk{contiguous({300, 1}), contiguous({300, 40})},
          Walk{contiguous({300, 50}), with_strides({300, 1}, {2, 1})}}) {
      SCOPED_TRACE(w.table.shape.to_string() + " <- " + w.entries.shape.to_string());
      const auto [overwriting, adding] =
          overwrite_and_add(w.table, w.entries, DType::i64, -2, w.table.shape.dims[1] + 2, pref);
      if (backend() == Backend::cuda) {
        // (An overwrite that does not reach every line adds into the zeroed table.)
        const bool covers = w.table.shape.dims[0] == w.entries.shape.dims[0];
        EXPECT_EQ(overwriting.find("_warp") != std::string::npos, covers || !atomics_add(pref)) << overwriting;
        if (w.entries.shape.dims[1] > 32) {
          EXPECT_EQ(adding.find("_warp") != std::string::npos, !atomics_add(pref)) << adding;
        }
      }
    }
  }
}

// accumulate = false overwrites the output: it starts as NaN on the device and the reference
// assumes zeros, so an element the op leaves unwritten fails.
TEST_P(IndexingTest, OverwriteModeWritesEveryElement) {
  auto poisoned_table = [&](const TensorSpec& spec) {
    Tensor t = values(spec);
    EXPECT_TRUE(harness::poison(t).is_ok());
    std::fill(t.host.begin(), t.host.end(), 0.0);  // what the reference starts from
    return t;
  };
  const Shape src{7, 8, 9};
  for (const PlanPreference& pref : scatter_variants()) {
    SCOPED_TRACE(pref.variant);
    // Along the innermost dim, the index covering every line (the fused overwrite on CUDA), and an
    // index smaller off dim (zeroed first), and along dim 0.
    for (const auto& [idx_shape, dim] :
         {std::pair{Shape{7, 8, 5}, 2}, std::pair{Shape{5, 6, 4}, 2}, std::pair{Shape{4, 8, 9}, 0}}) {
      Tensor dout = values(contiguous(idx_shape)), dsrc = poisoned_table(contiguous(src));
      Tensor idx = index(contiguous(idx_shape), DType::i64, -1, src.dims[dim] + 1);
      GatherDescriptor desc{dtype(), DType::i64, src, idx_shape, dim};
      desc.accumulate = false;
      check_scatter<GatherBackwardPlan>(
          desc, {idx_shape, dim, false}, dout, idx, dsrc,
          [&](int64_t* count) {
            return GatherBackwardArgs{dout.ref(), idx.ref(), dsrc.mut(), count};
          },
          pref);
    }
    const int64_t v = 19, n = 50, d = 16;
    Tensor dout = values(contiguous({n, d})), dweight = poisoned_table(contiguous({v, d}));
    Tensor indices = index(contiguous({n}), DType::i32, 0, v);
    EmbeddingDescriptor desc{dtype(), DType::i32, v, d, n, {}};
    desc.accumulate = false;
    check_scatter<EmbeddingBackwardPlan>(
        desc, {{n, d}, 0, true}, dout, indices, dweight,
        [&](int64_t* count) {
          return EmbeddingBackwardArgs{dout.ref(), indices.ref(), dweight.mut(), count};
        },
        pref);
    // Nothing to add still overwrites.
    Tensor none = values(contiguous({0, d})), empty_idx = index(contiguous({0}), DType::i32, 0, 1);
    Tensor dweight2 = poisoned_table(contiguous({v, d}));
    desc.num_indices = 0;
    check_scatter<EmbeddingBackwardPlan>(
        desc, {{0, d}, 0, true}, none, empty_idx, dweight2,
        [&](int64_t* count) {
          return EmbeddingBackwardArgs{none.ref(), empty_idx.ref(), dweight2.mut(), count};
        },
        pref);
  }
}

INSTANTIATE_TEST_SUITE_P(Indexing, IndexingTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

// The forward copies also integers.
class IndexingIntegerTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override { BARACUDA_SKIP_UNLESS_AVAILABLE(GetParam()); }
};

TEST_P(IndexingIntegerTest, GatherCopiesIntegersExactly) {
  std::mt19937_64 rng(5);
  for (DType dt : {DType::i32, DType::i64}) {
    Tensor src = unwrap(harness::random_tensor(GetParam(), dt, contiguous({4, 9}), rng, -1e6, 1e6));
    Tensor idx = unwrap(harness::random_tensor(GetParam(), DType::i64, contiguous({4, 5}), rng, 0, 9));
    Tensor out = unwrap(harness::random_tensor(GetParam(), dt, contiguous({4, 5}), rng, 0, 1));
    const Stream s = testing::stream_for(GetParam());
    GatherPlan plan = unwrap(GatherPlan::select(s, {dt, DType::i64, {4, 9}, {4, 5}, 1}));
    ASSERT_OK(plan.run(s, {}, {src.ref(), idx.ref(), out.mut(), nullptr}));
    ASSERT_OK(out.download());
    const std::vector<double> want = reference::gather({{4, 5}, 1, false}, idx, src);
    for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(out.at(i), want[i]);
  }
}

constexpr const char* kGather = "GatherPlan";
constexpr const char* kEmbBwd = "EmbeddingBackwardPlan";

TEST_P(IndexingIntegerTest, ErrorsNameThePlanAndTheField) {
  const Stream s = testing::stream_for(GetParam());
  using testing::is_error;
  EXPECT_TRUE(is_error(GatherPlan::select(s, {DType::f32, DType::f32, {4, 5}, {4, 5}, 1}).status(),
                       StatusCode::unsupported, kGather, "descriptor.index_dtype"));
  EXPECT_TRUE(is_error(GatherBackwardPlan::select(s, {DType::i32, DType::i64, {4, 5}, {4, 5}, 1}).status(),
                       StatusCode::unsupported, "GatherBackwardPlan", "descriptor.dtype"));
  EXPECT_TRUE(is_error(GatherPlan::select(s, {DType::f32, DType::i64, {4, 5}, {4, 5}, 2}).status(),
                       StatusCode::invalid_problem, kGather, "descriptor.dim"));
  EXPECT_TRUE(is_error(GatherPlan::select(s, {DType::f32, DType::i64, {4, 5}, {6, 5}, 1}).status(),
                       StatusCode::invalid_problem, kGather, "descriptor.index_shape[0]"));
  EXPECT_TRUE(is_error(GatherPlan::select(s, {DType::f32, DType::i64, {4, 5}, {4}, 0}).status(),
                       StatusCode::invalid_problem, kGather, "descriptor.index_shape"));
  EXPECT_TRUE(is_error(EmbeddingBackwardPlan::select(s, {DType::f32, DType::i64, 10, 4, 3, 10}).status(),
                       StatusCode::invalid_problem, kEmbBwd, "descriptor.padding_idx"));
  EXPECT_TRUE(is_error(EmbeddingBackwardPlan::select(s, {DType::f32, DType::i64, -1, 4, 3, {}}).status(),
                       StatusCode::invalid_problem, kEmbBwd, "descriptor.num_embeddings"));
  EXPECT_TRUE(is_error(IndexSelectPlan::select(s, {DType::f32, DType::i64, {4, 5}, 0, -2}).status(),
                       StatusCode::invalid_problem, "IndexSelectPlan", "descriptor.num_indices"));
  PlanPreference pref;
  pref.variant = "atomic";
  pref.determinism = Determinism::required;
  EXPECT_TRUE(is_error(EmbeddingBackwardPlan::select(s, {DType::f32, DType::i64, 10, 4, 3, {}}, pref).status(),
                       StatusCode::unsupported, kEmbBwd, "preference.variant"));
  pref.variant = "sorted";
  EXPECT_TRUE(is_error(GatherPlan::select(s, {DType::f32, DType::i64, {4, 5}, {4, 5}, 1}, pref).status(),
                       StatusCode::unsupported, kGather, "preference.variant"));
  if (GetParam() == Backend::cpu) {
    pref = {};
    pref.variant = "atomic";
    EXPECT_TRUE(is_error(EmbeddingBackwardPlan::select(s, {DType::f32, DType::i64, 10, 4, 3, {}}, pref).status(),
                         StatusCode::unsupported, kEmbBwd, "preference.variant"));
  }
}

TEST_P(IndexingIntegerTest, RunRejectsBadViewsAndWorkspaces) {
  std::mt19937_64 rng(9);
  const Stream s = testing::stream_for(GetParam());
  auto make = [&](Shape shape, DType dt) {
    return unwrap(harness::random_tensor(GetParam(), dt, contiguous(shape), rng, 0, 3));
  };
  // bf16: a sorted scatter with a workspace on both backends (the CPU adds f32 in entry order, with none).
  Tensor dout = make({6, 4}, DType::bf16), idx = make({6}, DType::i64), dweight = make({10, 4}, DType::bf16);
  Tensor idx32 = make({6}, DType::i32), wrong = make({9, 4}, DType::bf16);
  PlanPreference sorted;
  sorted.variant = "sorted";
  EmbeddingBackwardPlan plan =
      unwrap(EmbeddingBackwardPlan::select(s, {DType::bf16, DType::i64, 10, 4, 6, {}}, sorted));
  ASSERT_GT(plan.workspace_size(), 0u);
  harness::Buffer ws = unwrap(harness::Buffer::allocate(GetParam(), plan.workspace_size()));
  using testing::is_error;
  const Workspace w{ws.data(), ws.size()};
  EXPECT_TRUE(is_error(plan.run(s, w, {dout.ref(), idx32.ref(), dweight.mut(), nullptr}), StatusCode::invalid_problem,
                       kEmbBwd, "args.indices.dtype"));
  EXPECT_TRUE(is_error(plan.run(s, w, {dout.ref(), idx.ref(), wrong.mut(), nullptr}), StatusCode::invalid_problem,
                       kEmbBwd, "args.dweight.shape"));
  AnyTensorRef short_dout = dout.ref();
  short_dout.capacity = 20;
  EXPECT_TRUE(is_error(plan.run(s, w, {short_dout, idx.ref(), dweight.mut(), nullptr}), StatusCode::buffer_too_small,
                       kEmbBwd, "args.dout.capacity"));
  EXPECT_TRUE(is_error(plan.run(s, {ws.data(), 8}, {dout.ref(), idx.ref(), dweight.mut(), nullptr}),
                       StatusCode::workspace_too_small, kEmbBwd, "workspace.size"));
  EXPECT_TRUE(is_error(
      plan.run(s, w,
               {dout.ref(), idx.ref(), dweight.mut(), reinterpret_cast<int64_t*>(static_cast<char*>(ws.data()) + 4)}),
      StatusCode::misaligned_operand, kEmbBwd, "args.bad_index_count"));
}

INSTANTIATE_TEST_SUITE_P(Indexing, IndexingIntegerTest, ::testing::Values(Backend::cpu, Backend::cuda),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

// i64 index values past 2^31 address rows past 2^31 (GPU: a 4 GiB table).
TEST(IndexingLarge, IndicesPastTwoToThe31) {
  BARACUDA_SKIP_UNLESS_AVAILABLE(Backend::cuda);
  const int64_t v = (int64_t{1} << 31) + 64, d = 1;
  harness::Buffer weight = unwrap(harness::Buffer::allocate(Backend::cuda, static_cast<size_t>(v) * 2));
  const std::vector<int64_t> rows = {0, (int64_t{1} << 31) - 1, int64_t{1} << 31, v - 1, v, -1};
  std::vector<uint16_t> values(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    values[i] = bfloat16(static_cast<float>(i + 1)).bits;
    if (rows[i] >= 0 && rows[i] < v) ASSERT_OK(weight.upload(&values[i], 2, static_cast<size_t>(rows[i]) * 2));
  }
  harness::Buffer indices = unwrap(harness::Buffer::allocate(Backend::cuda, rows.size() * 8));
  ASSERT_OK(indices.upload(rows.data(), rows.size() * 8));
  harness::Buffer out = unwrap(harness::Buffer::allocate(Backend::cuda, rows.size() * 2));
  harness::Buffer count = unwrap(harness::Buffer::allocate(Backend::cuda, 8));
  const int64_t zero = 0;
  ASSERT_OK(count.upload(&zero, 8));
  const int64_t n = static_cast<int64_t>(rows.size());
  const EmbeddingDescriptor desc{DType::bf16, DType::i64, v, d, n, {}};
  EmbeddingPlan plan = unwrap(EmbeddingPlan::select(Stream::cuda(), desc));
  ASSERT_OK(plan.run(Stream::cuda(), {},
                     {AnyTensorRef::contiguous(weight.data(), DType::bf16, {v, d}),
                      AnyTensorRef::contiguous(indices.data(), DType::i64, {n}),
                      AnyTensorMut::contiguous(out.data(), DType::bf16, {n, d}), static_cast<int64_t*>(count.data())}));
  std::vector<uint16_t> got(rows.size());
  ASSERT_OK(out.download(got.data(), got.size() * 2));
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(got[i], rows[i] >= 0 && rows[i] < v ? values[i] : 0) << i;
  int64_t bad = 0;
  ASSERT_OK(count.download(&bad, 8));
  EXPECT_EQ(bad, 2);
  // Backward into the same rows (sorted: keys past 2^31).
  PlanPreference pref;
  pref.determinism = Determinism::required;
  EmbeddingBackwardPlan backward = unwrap(EmbeddingBackwardPlan::select(Stream::cuda(), desc, pref));
  harness::Buffer ws = unwrap(harness::Buffer::allocate(Backend::cuda, backward.workspace_size()));
  ASSERT_OK(backward.run(Stream::cuda(), {ws.data(), ws.size()},
                         {AnyTensorRef::contiguous(out.data(), DType::bf16, {n, d}),
                          AnyTensorRef::contiguous(indices.data(), DType::i64, {n}),
                          AnyTensorMut::contiguous(weight.data(), DType::bf16, {v, d}), nullptr}));
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= v) continue;
    uint16_t w = 0;
    ASSERT_OK(weight.download(&w, 2, static_cast<size_t>(rows[i]) * 2));
    EXPECT_EQ(static_cast<float>(bfloat16::from_bits(w)), 2.0f * static_cast<float>(i + 1)) << i;
  }
}

}  // namespace
}  // namespace baracuda

// The matmul plans beyond the op table (tools/harness/rows/matmul.cpp): addmm in place (c is out),
// layouts BLAS cannot take and outputs over inputs refused with the field named, and runs that are
// bit-identical, on every backend and dtype.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#if BARACUDA_HAS_CUDA
#include <cuda_runtime.h>
#endif

#include "baracuda/baracuda.hpp"
#include "harness/data.hpp"
#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::unwrap;

class MatmulTest : public testing::BackendDTypeTest {
 protected:
  Tensor random(const harness::TensorSpec& spec) {
    return unwrap(harness::random_tensor(backend(), dtype(), spec, rng_));
  }
  MatmulDescriptor desc(int64_t m, int64_t n, int64_t k) {
    MatmulDescriptor d;
    d.dtype = dtype();
    d.a = {m, k};
    d.b = {k, n};
    return d;
  }
};

TEST_P(MatmulTest, AddmmInPlaceReadsCBeforeWritingOut) {
  const int64_t m = 19, n = 23, k = 37;
  MatmulDescriptor d = desc(m, n, k);
  d.has_c = true;
  d.alpha = 0.5;
  d.beta = -2.0;
  Tensor a = random(testing::contiguous({m, k})), b = random(testing::contiguous({k, n}));
  Tensor out = random(testing::contiguous({m, n}));
  const std::vector<double> c = out.host;  // c's values, before the run
  MatmulPlan plan = unwrap(MatmulPlan::select(stream(), d));
  MatmulArgs args{a.ref(), b.ref(), out.ref(), out.mut()};
  harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(16, plan.workspace_size())));
  ASSERT_OK(plan.run(stream(), {ws.data(), ws.size()}, args));
  ASSERT_OK(out.download());
  const double tol = harness::tolerance(dtype());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = d.beta * c[static_cast<size_t>(out.offset + i * n + j)], magnitude = std::fabs(want);
      for (int64_t q = 0; q < k; ++q) {
        const double t = d.alpha * a.at(i * k + q) * b.at(q * n + j);
        want += t;
        magnitude += std::fabs(t);
      }
      EXPECT_NEAR(out.at(i * n + j), want, tol * (1 + magnitude) * 2) << i << ", " << j;
    }
}

TEST_P(MatmulTest, LayoutsBlasCannotTakeAreRefusedByName) {
  MatmulDescriptor d = desc(4, 6, 5);
  MatmulPlan plan = unwrap(MatmulPlan::select(stream(), d));
  // a [4, 5] with strides (10, 2): no unit stride along either matrix dim.
  Tensor a = random(testing::with_strides({4, 5}, {10, 2})), b = random(testing::contiguous({5, 6}));
  Tensor out = random(testing::contiguous({4, 6}));
  const Status s = plan.can_implement({a.ref(), b.ref(), {}, out.mut()});
  EXPECT_TRUE(testing::is_error(s, StatusCode::unsupported, "MatmulPlan", "args.a")) << s.to_string();
  // Rows broadcast (stride 0) along a matrix dim of b.
  Tensor a2 = random(testing::contiguous({4, 5})), b2 = random(testing::with_strides({5, 6}, {0, 1}));
  const Status s2 = plan.can_implement({a2.ref(), b2.ref(), {}, out.mut()});
  EXPECT_TRUE(testing::is_error(s2, StatusCode::unsupported, "MatmulPlan", "args.b")) << s2.to_string();
}

TEST_P(MatmulTest, OutOverAnInputIsRefused) {
  MatmulDescriptor d = desc(6, 6, 6);
  MatmulPlan plan = unwrap(MatmulPlan::select(stream(), d));
  Tensor a = random(testing::contiguous({6, 6})), b = random(testing::contiguous({6, 6}));
  const Status s = plan.can_implement({a.ref(), b.ref(), {}, a.mut()});
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("args.out"), std::string::npos) << s.to_string();
}

TEST_P(MatmulTest, LinearTrainingStepIsBitIdenticalAcrossRuns) {
  LinearDescriptor d;
  d.dtype = dtype();
  d.x = {4, 33, 40};
  d.out_features = 24;
  d.activation = Activation::gelu;
  Tensor x = random(testing::contiguous(d.x)), w = random(testing::contiguous({24, 40}));
  Tensor bias = random(testing::contiguous({24})), dy = random(testing::contiguous({4, 33, 24}));
  Tensor y = random(testing::contiguous({4, 33, 24})), pre = random(testing::contiguous({4, 33, 24}));
  Tensor dx = random(testing::contiguous(d.x)), dw = random(testing::contiguous({24, 40}));
  Tensor db = random(testing::contiguous({24}));
  LinearPlan forward = unwrap(LinearPlan::select(stream(), d));
  LinearBackwardPlan backward = unwrap(LinearBackwardPlan::select(stream(), d));
  harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(16, backward.workspace_size())));
  harness::Buffer ws_f = unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(16, forward.workspace_size())));
  std::vector<std::vector<double>> first;
  for (int run = 0; run < 3; ++run) {
    ASSERT_OK(forward.run(stream(), {ws_f.data(), ws_f.size()}, {x.ref(), w.ref(), bias.ref(), y.mut(), pre.mut()}));
    ASSERT_OK(backward.run(stream(), {ws.data(), ws.size()},
                           {dy.ref(), x.ref(), w.ref(), pre.ref(), dx.mut(), dw.mut(), db.mut()}));
    std::vector<std::vector<double>> got;
    for (Tensor* t : {&y, &pre, &dx, &dw, &db}) {
      ASSERT_OK(t->download());
      got.push_back(t->host);
    }
    if (run == 0)
      first = got;
    else
      ASSERT_EQ(got, first) << "run " << run;
  }
}

// A tensor of `rows` rows of `from` (row-major [*, cols]) starting at row `first`, in a buffer of its
// own.
harness::Tensor rows_of(const harness::Tensor& from, int64_t first, int64_t rows, int64_t cols, harness::Tensor fresh) {
  for (int64_t e = 0; e < rows * cols; ++e)
    fresh.host[static_cast<size_t>(fresh.offset + fresh.element_offset(e))] = from.at(first * cols + e);
  EXPECT_OK(fresh.upload());
  return fresh;
}

// The batch-invariant preference: each row of out has the bits it has in a product of many rows,
// whatever the row count (both sides of the CPU's blocks of 6 and 60 rows, and of cuBLASLt's tiles),
// its place, and a batch dim; linear with a bias and an activation alike. K past one panel (256).
TEST_P(MatmulTest, BatchInvariantRowsHaveTheSameBitsWhateverTheRowCount) {
  PlanPreference pref;
  pref.batch_invariant = true;
  const int64_t all = backend() == Backend::cuda ? 2049 : 301;
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{24, 40}, {70, 300}, {256, 1100}}) {
    SCOPED_TRACE("n " + std::to_string(n) + ", k " + std::to_string(k));
    Tensor a = random(testing::contiguous({all, k})), b = random(testing::contiguous({k, n}));
    Tensor bias = random(testing::contiguous({n}));
    auto product = [&](const Tensor& x, const Shape& shape, bool linear) {
      Shape out_shape = shape;
      out_shape.dims[shape.rank - 1] = n;
      Tensor out = random(testing::contiguous(out_shape));
      harness::Buffer ws;
      if (linear) {
        LinearDescriptor d;
        d.dtype = dtype();
        d.x = shape;
        d.out_features = n;
        d.activation = Activation::gelu;
        LinearPlan plan = unwrap(LinearPlan::select(stream(), d, pref));
        EXPECT_TRUE(plan.precision_guarantee().batch_invariant);
        ws = unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(16, plan.workspace_size())));
        // (b read as the weight [n, k]: its first n * k values)
        const AnyTensorRef w = AnyTensorRef::contiguous(b.ref().data, dtype(), {n, k}, n * k);
        EXPECT_OK(plan.run(stream(), {ws.data(), ws.size()}, {x.ref(), w, bias.ref(), out.mut(), {}}));
      } else {
        MatmulDescriptor d = desc(0, n, k);
        d.a = shape;
        MatmulPlan plan = unwrap(MatmulPlan::select(stream(), d, pref));
        EXPECT_TRUE(plan.precision_guarantee().batch_invariant);
        EXPECT_EQ(plan.sku().variant, "batch_invariant");
        ws = unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(16, plan.workspace_size())));
        EXPECT_OK(plan.run(stream(), {ws.data(), ws.size()}, {x.ref(), b.ref(), {}, out.mut()}));
      }
      EXPECT_OK(out.download());
      return out;
    };
    for (bool linear : {false, true}) {
      const Tensor whole = product(a, {all, k}, linear);
      for (int64_t m : {1, 5, 6, 7, 59, 61, 64, 255}) {
        for (int64_t first : {int64_t{0}, all - m, (all - m) / 3}) {
          const Tensor part = product(rows_of(a, first, m, k, random(testing::contiguous({m, k}))), {m, k}, linear);
          for (int64_t e = 0; e < m * n; ++e)
            ASSERT_EQ(part.at(e), whole.at(first * n + e))
                << (linear ? "linear" : "matmul") << ", " << m << " rows from row " << first << ", element " << e;
        }
      }
      // Rows 0..2m as a batch of two.
      const int64_t m = 17;
      const Tensor batch = product(rows_of(a, 0, 2 * m, k, random(testing::contiguous({2, m, k}))), {2, m, k}, linear);
      for (int64_t e = 0; e < 2 * m * n; ++e) ASSERT_EQ(batch.at(e), whole.at(e)) << "batched, element " << e;
    }
  }
}

// The grouped forward on CUDA is batch-invariant: a row routed to the same expert has the same bits
// whatever the other groups' sizes and its place in its own group (tiles of 128 rows fall elsewhere).
TEST_P(MatmulTest, GroupedBatchInvariantRowsKeepTheirBitsUnderAnotherRouting) {
  if (backend() != Backend::cuda) GTEST_SKIP() << "the CPU's grouped products are BLAS's (refused above)";
  PlanPreference pref;
  pref.batch_invariant = true;
  GroupedMatmulDescriptor d;
  d.dtype = dtype();
  d.rows = 400;
  d.k = 300;
  d.n = 136;
  d.groups = 3;
  d.index_dtype = DType::i64;
  GroupedMatmulPlan plan = unwrap(GroupedMatmulPlan::select(stream(), d, pref));
  EXPECT_TRUE(plan.precision_guarantee().batch_invariant);
  Tensor b = random(testing::contiguous({d.groups, d.k, d.n}));
  harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(16, plan.workspace_size())));
  // Routing one: groups of 10, 200 and 190 rows. Routing two: group 0 of 147 rows, a's rows 0..9 at
  // its rows 137..146 (rows of a from 200 on before them): another tile split, another place.
  Tensor a = random(testing::contiguous({d.rows, d.k}));
  auto run = [&](const Tensor& x, std::vector<int64_t> ends) {
    Tensor offsets = unwrap(harness::random_tensor(backend(), DType::i64, testing::contiguous({d.groups}), rng_));
    for (size_t g = 0; g < ends.size(); ++g) offsets.host[g] = static_cast<double>(ends[g]);
    EXPECT_OK(offsets.upload());
    Tensor out = random(testing::contiguous({d.rows, d.n}));
    EXPECT_OK(plan.run(stream(), {ws.data(), ws.size()}, {x.ref(), b.ref(), offsets.ref(), out.mut(), nullptr}));
    EXPECT_OK(out.download());
    return out;
  };
  const Tensor one = run(a, {10, 210, 400});
  Tensor moved = random(testing::contiguous({d.rows, d.k}));
  for (int64_t e = 0; e < d.rows * d.k; ++e) {
    const int64_t p = e / d.k, from = p < 137 ? 200 + p : p < 147 ? p - 137 : p;
    moved.host[static_cast<size_t>(moved.offset + moved.element_offset(e))] = a.at(from * d.k + e % d.k);
  }
  EXPECT_OK(moved.upload());
  const Tensor two = run(moved, {147, 210, 400});
  for (int64_t r = 0; r < 10; ++r)
    for (int64_t j = 0; j < d.n; ++j)
      ASSERT_EQ(two.at((137 + r) * d.n + j), one.at(r * d.n + j)) << "row " << r << ", col " << j;
}

// Plans with no batch-invariant kernel refuse the preference at select, naming it; the backward
// plans refuse the variant forced.
TEST_P(MatmulTest, BatchInvariantPreferenceIsRefusedWhereNoKernelHasIt) {
  PlanPreference pref;
  pref.batch_invariant = true;
  MatmulDescriptor d = desc(8, 8, 8);
  const Status s = MatmulBackwardPlan::select(stream(), d, pref).status();
  EXPECT_TRUE(testing::is_error(s, StatusCode::unsupported, "MatmulBackwardPlan", "preference.batch_invariant"))
      << s.to_string();
  PlanPreference forced;
  forced.variant = "batch_invariant";
  const Status f = MatmulBackwardPlan::select(stream(), d, forced).status();
  EXPECT_TRUE(testing::is_error(f, StatusCode::unsupported, "MatmulBackwardPlan", "preference.variant"))
      << f.to_string();
  GroupedMatmulDescriptor g;
  g.dtype = dtype();
  g.rows = 8;
  g.k = g.n = 4;
  g.groups = 2;
  const Status gs = GroupedMatmulBackwardPlan::select(stream(), g, pref).status();
  EXPECT_TRUE(testing::is_error(gs, StatusCode::unsupported, "GroupedMatmulBackwardPlan", "preference.batch_invariant"))
      << gs.to_string();
  if (backend() == Backend::cpu) {  // (each group's product is BLAS's)
    const Status cs = GroupedMatmulPlan::select(stream(), g, pref).status();
    EXPECT_TRUE(testing::is_error(cs, StatusCode::unsupported, "GroupedMatmulPlan", "preference.batch_invariant"))
        << cs.to_string();
  }
  EXPECT_FALSE(unwrap(MatmulPlan::select(stream(), d)).precision_guarantee().batch_invariant);
}

// A device int64 for bad_index_count, zeroed, and its value.
class Counter {
 public:
  explicit Counter(Backend backend) : buffer_(unwrap(harness::Buffer::allocate(backend, sizeof(int64_t)))) {
    const int64_t zero = 0;
    EXPECT_TRUE(buffer_.upload(&zero, sizeof zero).ok());
  }
  int64_t* get() { return static_cast<int64_t*>(buffer_.data()); }
  int64_t value() {
    int64_t n = -1;
    EXPECT_TRUE(buffer_.download(&n, sizeof n).ok());
    return n;
  }

 private:
  harness::Buffer buffer_;
};

// Each group of a grouped matmul is the product MatmulPlan makes of the same rows and weights: bit
// for bit on the CPU (the same GEMM); on CUDA (its own kernel against cuBLASLt) within the
// accumulation's rounding. The rows after the last group are zeros. Group sizes on both sides of
// the CUDA kernels' tiles (64 and 128 rows), several tiles along K and N.
TEST_P(MatmulTest, GroupedMatmulIsMatmulPerGroup) {
  GroupedMatmulDescriptor d;
  d.dtype = dtype();
  d.rows = 300;
  d.k = 72;
  d.n = 140;
  d.groups = 5;
  d.index_dtype = DType::i64;
  GroupedMatmulPlan plan = unwrap(GroupedMatmulPlan::select(stream(), d));
  // Groups of 0, 129 (oneDNN's side, a CUDA tile and a row), 3, 0 and 161 rows, then 7 rows in none.
  const std::vector<int64_t> ends = {0, 129, 132, 132, 293};
  Tensor offsets = unwrap(harness::random_tensor(backend(), DType::i64, testing::contiguous({5}), rng_));
  for (size_t g = 0; g < ends.size(); ++g) offsets.host[g] = static_cast<double>(ends[g]);
  ASSERT_OK(offsets.upload());
  Tensor a = random(testing::contiguous({d.rows, d.k})), b = random(testing::contiguous({d.groups, d.k, d.n}));
  Tensor out = random(testing::contiguous({d.rows, d.n}));
  Counter bad(backend());
  harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(16, plan.workspace_size())));
  ASSERT_OK(plan.run(stream(), {ws.data(), ws.size()}, {a.ref(), b.ref(), offsets.ref(), out.mut(), bad.get()}));
  ASSERT_OK(out.download());
  EXPECT_EQ(bad.value(), 0);
  const double tol = harness::tolerance(dtype());
  int64_t start = 0;
  for (int64_t g = 0; g < d.groups; ++g) {
    const int64_t count = ends[static_cast<size_t>(g)] - start;
    if (count > 0) {
      MatmulPlan mm = unwrap(MatmulPlan::select(stream(), desc(count, d.n, d.k)));
      Tensor want = random(testing::contiguous({count, d.n}));
      const AnyTensorRef all_rows = a.ref(), all_weights = b.ref();
      const int64_t size = static_cast<int64_t>(dtype_size(dtype()));
      const AnyTensorRef rows = AnyTensorRef::contiguous(static_cast<const char*>(all_rows.data) + start * d.k * size,
                                                         dtype(), {count, d.k}, count * d.k);
      const AnyTensorRef weights = AnyTensorRef::contiguous(
          static_cast<const char*>(all_weights.data) + g * d.k * d.n * size, dtype(), {d.k, d.n}, d.k * d.n);
      harness::Buffer mm_ws = unwrap(harness::Buffer::allocate(backend(), std::max<size_t>(16, mm.workspace_size())));
      ASSERT_OK(mm.run(stream(), {mm_ws.data(), mm_ws.size()}, {rows, weights, {}, want.mut()}));
      ASSERT_OK(want.download());
      for (int64_t e = 0; e < count * d.n; ++e) {
        if (backend() == Backend::cpu) {
          ASSERT_EQ(out.at(start * d.n + e), want.at(e)) << "group " << g << ", element " << e;
        } else {
          double magnitude = 0;
          for (int64_t q = 0; q < d.k; ++q)
            magnitude += std::fabs(a.at((start + e / d.n) * d.k + q) * b.at((g * d.k + q) * d.n + e % d.n));
          ASSERT_NEAR(out.at(start * d.n + e), want.at(e), tol * (1 + magnitude) * 2) << "group " << g << ", " << e;
        }
      }
    }
    start += count;
  }
  for (int64_t e = start * d.n; e < d.rows * d.n; ++e) ASSERT_EQ(out.at(e), 0.0) << e;
}

// Offsets out of order or out of bounds: counted, clamped, and nothing read or written outside the
// views (the sanitizers watch); out, da and db against sums of their own; the rows in no group give
// zero rows of out and da, the empty groups zero db.
TEST_P(MatmulTest, GroupedMatmulCountsAndClampsBadOffsets) {
  const int64_t T = 10, K = 6, N = 5, G = 5;
  GroupedMatmulDescriptor d;
  d.dtype = dtype();
  d.rows = T;
  d.k = K;
  d.n = N;
  d.groups = G;
  // -3 (out of bounds: group 0 empty), 7 (rows 0..6), 4 (below its predecessor: group 2 empty), 8
  // (row 7), 99 (past T: rows 8, 9); then without the last group, rows 8 and 9 in none.
  const std::vector<std::vector<double>> cases = {{-3, 7, 4, 8, 99}, {-3, 7, 4, 8, 8}};
  const std::vector<int64_t> bad_counts = {3, 2};
  for (size_t c = 0; c < cases.size(); ++c) {
    Tensor offsets = unwrap(harness::random_tensor(backend(), DType::i32, testing::contiguous({G}), rng_));
    std::copy(cases[c].begin(), cases[c].end(), offsets.host.begin() + offsets.offset);
    ASSERT_OK(offsets.upload());
    const int64_t group_of[T] = {1, 1, 1, 1, 1, 1, 1, 3, c == 0 ? 4 : -1, c == 0 ? 4 : -1};
    Tensor a = random(testing::contiguous({T, K})), b = random(testing::contiguous({G, K, N}));
    Tensor dout = random(testing::contiguous({T, N}));
    Tensor out = random(testing::contiguous({T, N})), da = random(testing::contiguous({T, K}));
    Tensor db = random(testing::contiguous({G, K, N}));
    GroupedMatmulPlan forward = unwrap(GroupedMatmulPlan::select(stream(), d));
    GroupedMatmulBackwardPlan backward = unwrap(GroupedMatmulBackwardPlan::select(stream(), d));
    Counter bad(backend());
    harness::Buffer ws = unwrap(harness::Buffer::allocate(
        backend(), std::max<size_t>({16, forward.workspace_size(), backward.workspace_size()})));
    const Workspace w{ws.data(), ws.size()};
    ASSERT_OK(forward.run(stream(), w, {a.ref(), b.ref(), offsets.ref(), out.mut(), bad.get()}));
    EXPECT_EQ(bad.value(), bad_counts[c]);
    ASSERT_OK(backward.run(stream(), w, {dout.ref(), a.ref(), b.ref(), offsets.ref(), da.mut(), db.mut(), bad.get()}));
    EXPECT_EQ(bad.value(), 2 * bad_counts[c]);
    for (Tensor* t : {&out, &da, &db}) ASSERT_OK(t->download());
    const double tol = harness::tolerance(dtype());
    // A sum of terms, checked within the tolerance its magnitude allows.
    auto check = [&](double got, auto&& terms, int64_t count, const char* what, int64_t at) {
      double want = 0, magnitude = 0;
      for (int64_t q = 0; q < count; ++q) {
        const double t = terms(q);
        want += t;
        magnitude += std::fabs(t);
      }
      EXPECT_NEAR(got, want, tol * (1 + magnitude) * 2) << what << " " << at << ", case " << c;
    };
    for (int64_t i = 0; i < T; ++i) {
      const int64_t g = group_of[i];
      for (int64_t j = 0; j < N; ++j)
        check(
            out.at(i * N + j), [&](int64_t q) { return g < 0 ? 0.0 : a.at(i * K + q) * b.at((g * K + q) * N + j); }, K,
            "out", i * N + j);
      for (int64_t q = 0; q < K; ++q)
        check(
            da.at(i * K + q), [&](int64_t j) { return g < 0 ? 0.0 : dout.at(i * N + j) * b.at((g * K + q) * N + j); },
            N, "da", i * K + q);
    }
    for (int64_t g = 0; g < G; ++g)
      for (int64_t q = 0; q < K; ++q)
        for (int64_t j = 0; j < N; ++j)
          check(
              db.at((g * K + q) * N + j),
              [&](int64_t i) { return group_of[i] == g ? a.at(i * K + q) * dout.at(i * N + j) : 0.0; }, T, "db",
              (g * K + q) * N + j);
  }
}

INSTANTIATE_TEST_SUITE_P(Matmul, MatmulTest, ::testing::ValuesIn(testing::all_float_cases()), testing::case_name);

#if BARACUDA_HAS_CUDA
// The offsets are read on the device only: a run captured in a CUDA graph, replayed after the
// offsets change, follows the new routing, bit for bit as a plain run does.
TEST(GroupedMatmulCuda, RunCapturedInAGraphFollowsNewOffsets) {
  BARACUDA_SKIP_UNLESS_AVAILABLE(Backend::cuda);
  std::mt19937_64 rng(7);
  cudaStream_t native = nullptr;
  ASSERT_EQ(cudaStreamCreate(&native), cudaSuccess);
  const Stream s = Stream::cuda(native);
  GroupedMatmulDescriptor d;
  d.dtype = DType::bf16;
  d.rows = 500;
  d.k = 96;
  d.n = 136;
  d.groups = 4;
  d.transpose_b = true;
  GroupedMatmulPlan plan = unwrap(GroupedMatmulPlan::select(s, d));
  auto tensor = [&](DType t, Shape shape) {
    return unwrap(harness::random_tensor(Backend::cuda, t, testing::contiguous(shape), rng));
  };
  Tensor a = tensor(d.dtype, {d.rows, d.k}), b = tensor(d.dtype, {d.groups, d.n, d.k});
  Tensor offsets = tensor(DType::i32, {d.groups}), out = tensor(d.dtype, {d.rows, d.n});
  Tensor plain = tensor(d.dtype, {d.rows, d.n});
  harness::Buffer ws = unwrap(harness::Buffer::allocate(Backend::cuda, std::max<size_t>(16, plan.workspace_size())));
  const Workspace w{ws.data(), ws.size()};
  auto set_offsets = [&](std::vector<double> ends) {
    std::copy(ends.begin(), ends.end(), offsets.host.begin() + offsets.offset);
    ASSERT_OK(offsets.upload());
  };
  set_offsets({100, 100, 300, 480});
  ASSERT_OK(plan.run(s, w, {a.ref(), b.ref(), offsets.ref(), out.mut()}));  // (kernel attributes set outside)
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(native, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const Status captured = plan.run(s, w, {a.ref(), b.ref(), offsets.ref(), out.mut()});
  ASSERT_EQ(cudaStreamEndCapture(native, &graph), cudaSuccess);
  ASSERT_OK(captured);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (const std::vector<double>& ends : {std::vector<double>{7, 200, 201, 500}, std::vector<double>{0, 0, 0, 333}}) {
    set_offsets(ends);
    ASSERT_EQ(cudaGraphLaunch(exec, native), cudaSuccess);
    ASSERT_OK(plan.run(s, w, {a.ref(), b.ref(), offsets.ref(), plain.mut()}));
    ASSERT_EQ(cudaStreamSynchronize(native), cudaSuccess);
    ASSERT_OK(out.download());
    ASSERT_OK(plain.download());
    for (int64_t e = 0; e < d.rows * d.n; ++e) ASSERT_EQ(out.at(e), plain.at(e)) << e << ", last end " << ends.back();
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(native);
}
#endif

}  // namespace
}  // namespace baracuda

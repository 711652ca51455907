// The CPU side of the matmul plans: each GEMM by OpenBLAS on the views as they lie (f32, f64), or,
// for 16-bit data, on f32 copies of each batch entry's matrices (the library's conversion, then
// sgemm, then one rounding of the f32 result); summed batch dims accumulate in order into one
// result (deterministic); the bias and activation applied to the result before it is stored.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "common/convert.hpp"
#include "common/dispatch.hpp"
#include "common/elementwise.hpp"
#include "cpu/onednn.hpp"
#include "cpu/parallel.hpp"
#include "cpu/vector_math.hpp"
#include "ops/elementwise_layout.hpp"
#include "ops/matmul_problem.hpp"
#include "ops/unary_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cpu {
namespace {

template <class T>
using acc_t = typename acc_type<T>::type;

// The activation (forward: act(pre); backward: dy act'(pre)) by the unary family's CPU kernels and
// Maths (vectorized, per ISA), as UnaryPlan / UnaryBackwardPlan of the same kind would run it, not a
// scalar f64 loop of its own (bench/NOTES.md, seventh session).
Status run_pass(const LaunchContext& ctx, const ActivationPass& pass) {
  if (pass.shape.numel() == 0) return Status::ok();  // (the unary kernels take no empty problem: its plan skips it)
  UnaryDescriptor d;
  d.dtype = pass.dtype;
  d.shape = pass.shape;
  switch (pass.activation) {
    case Activation::relu:
      d.kind = UnaryKind::relu;
      break;
    case Activation::gelu:
      d.kind = UnaryKind::gelu;
      break;
    case Activation::gelu_tanh:
      d.kind = UnaryKind::gelu_tanh;
      break;
    case Activation::silu:
      d.kind = UnaryKind::silu;
      break;
    case Activation::none:
      return Status::ok();
  }
  if (pass.backward)
    return launch(ctx, UnaryBackwardProblem{d, layout_path(Backend::cpu, d.shape, {pass.src, pass.pre, pass.dst}, 2),
                                            pass.src, pass.pre, pass.dst});
  return launch(
      ctx, UnaryForwardProblem{d, layout_path(Backend::cpu, d.shape, {pass.src, pass.dst}, 1), pass.src, pass.dst});
}

// A matrix as BLAS takes it in `row_major` order: transposed or not, and its leading dimension.
struct BlasOperand {
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 1;
};
BlasOperand operand(int64_t rows, int64_t cols, GemmMatrix m, bool row_major) {
  gemm_layout_ok(rows, cols, m.rs, m.cs);
  const bool natural = row_major ? m.cs == 1 : m.rs == 1;
  const int64_t ld = natural ? (row_major ? m.rs : m.cs) : (row_major ? m.cs : m.rs);
  return {natural ? CblasNoTrans : CblasTrans, std::max<int64_t>(ld, 1)};
}

// Offsets of the kept (outer) batch entry `kept` and of the summed entry `r` along each tensor.
struct BatchWalk {
  Walker<4> kept, summed;
  int64_t kept_count = 1, summed_count = 1;
};
BatchWalk batch_walk(const Gemm& g) {
  BatchWalk b;
  const int reduced = g.reduced_dims(), outer = g.batch_rank - reduced;
  b.kept.rank = outer;
  b.summed.rank = reduced;
  for (int i = 0; i < g.batch_rank; ++i) {
    Walker<4>& w = i < outer ? b.kept : b.summed;
    const int j = i < outer ? i : i - outer;
    w.sizes[j] = g.batch[i];
    for (int t = 0; t < 4; ++t) w.strides[t][j] = g.stride[t][i];
  }
  b.kept_count = b.kept.numel();
  b.summed_count = b.summed.numel();
  return b;
}

// The a and b of the kept entry at `base` and its summed entry `r`.
template <class T>
std::pair<const T*, const T*> summed_operands(const Gemm& g, const BatchWalk& bw, const int64_t (&base)[4], int64_t r) {
  int64_t off[4];
  bw.summed.offsets(r, off);
  return {static_cast<const T*>(g.a.data) + base[kGemmA] + off[kGemmA],
          static_cast<const T*>(g.b.data) + base[kGemmB] + off[kGemmB]};
}

// d (m x n, its own strides) from the f32 / f64 result `acc` (row-major m x n) or in place: the bias,
// the activation, the store.
// Rows in parallel where there are enough elements and no parallel region around (the batch
// entries' own threads).
bool rows_in_parallel(int64_t rows, int64_t cols) {
  return rows > 1 && rows * cols >= kParallelThreshold && !omp_in_parallel();
}

// The unary Math of an activation, f(type_identity<Math>) (type_identity<void> for none).
template <class F>
decltype(auto) with_activation_math(Activation a, F&& f) {
  switch (a) {
    case Activation::relu:
      return f(std::type_identity<ReluMath>{});
    case Activation::gelu:
      return f(std::type_identity<GeluMath>{});
    case Activation::gelu_tanh:
      return f(std::type_identity<GeluTanhMath>{});
    case Activation::silu:
      return f(std::type_identity<SiluMath>{});
    case Activation::none:
      break;
  }
  return f(std::type_identity<void>{});
}

// A block of a row: the value (the f32 / f64 result, or d in place) plus the bias, then the
// activation by the unary family's Math in the compute type (a loop that vectorizes), then the store.
template <class O, class Acc, class Math>
BARACUDA_CPU_CLONES void finish_block(const Gemm& g, const Acc* acc, O* out, int n, int64_t col0) {
  using A = acc_t<O>;
  const O* bias = static_cast<const O*>(g.bias);
  A v[256];
  for (int j = 0; j < n; ++j) {
    v[j] = acc ? static_cast<A>(acc[j]) : convert<A>(out[j * g.d.cs]);
    if (bias) v[j] += convert<A>(bias[(col0 + j) * g.bias_stride]);
  }
  if constexpr (!std::is_void_v<Math>) {
    const UnaryParams<A> params = unary_params<A>(UnaryParameters{});
#pragma omp simd
    for (int j = 0; j < n; ++j) v[j] = Math::forward(v[j], params);
  }
  for (int j = 0; j < n; ++j) out[j * g.d.cs] = convert<O>(v[j]);
}

template <class O, class Acc>
void finish(const Gemm& g, const Acc* acc, int64_t acc_ld, O* d, int64_t rows, int64_t cols, int64_t col0) {
  with_activation_math(g.activation, [&](auto math) {
    using Math = typename decltype(math)::type;
#pragma omp parallel for schedule(static) if (rows_in_parallel(rows, cols))
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; j += 256)
        finish_block<O, Acc, Math>(g, acc ? acc + i * acc_ld + j : nullptr, d + i * g.d.rs + j * g.d.cs,
                                   static_cast<int>(std::min<int64_t>(256, cols - j)), col0 + j);
  });
}

template <class T>
void blas_gemm(bool row_major, int64_t m, int64_t n, int64_t k, double alpha, const T* a, BlasOperand oa, const T* b,
               BlasOperand ob, double beta, T* d, int64_t ldd) {
  const CBLAS_ORDER order = row_major ? CblasRowMajor : CblasColMajor;
  if constexpr (std::is_same_v<T, double>)
    cblas_dgemm(order, oa.trans, ob.trans, static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k),
                alpha, a, static_cast<blasint>(oa.ld), b, static_cast<blasint>(ob.ld), beta, d,
                static_cast<blasint>(ldd));
  else
    cblas_sgemm(order, oa.trans, ob.trans, static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k),
                static_cast<float>(alpha), a, static_cast<blasint>(oa.ld), b, static_cast<blasint>(ob.ld),
                static_cast<float>(beta), d, static_cast<blasint>(ldd));
}

// One kept batch entry of an f32 / f64 GEMM on the views themselves.
template <class T>
void gemm_entry(const Gemm& g, const BatchWalk& bw, int64_t kept) {
  int64_t base[4];
  bw.kept.offsets(kept, base);
  T* d = static_cast<T*>(const_cast<void*>(g.d.data)) + base[kGemmD];
  GemmMatrix dm = g.d;
  gemm_layout_ok(g.m, g.n, dm.rs, dm.cs);
  const bool row_major = dm.cs == 1;
  const int64_t ldd = std::max<int64_t>(1, row_major ? dm.rs : dm.cs);
  double beta = 0.0;
  if (g.c.data && g.beta != 0.0) {
    const T* c = static_cast<const T*>(g.c.data) + base[kGemmC];
    if (c != d || g.c.rs != g.d.rs || g.c.cs != g.d.cs)
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) d[i * g.d.rs + j * g.d.cs] = c[i * g.c.rs + j * g.c.cs];
    beta = g.beta;
  }
  if (g.k == 0 || bw.summed_count == 0) {
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        T& v = d[i * g.d.rs + j * g.d.cs];
        v = beta == 0.0 ? T(0) : static_cast<T>(beta * v);
      }
  }
  for (int64_t r = 0; r < bw.summed_count && g.k > 0; ++r) {
    const auto [a, b] = summed_operands<T>(g, bw, base, r);
    // Column-major d: d^T = b^T a^T keeps d's own order.
    blas_gemm<T>(row_major, g.m, g.n, g.k, g.alpha, a, operand(g.m, g.k, g.a, row_major), b,
                 operand(g.k, g.n, g.b, row_major), r == 0 ? beta : 1.0, d, ldd);
  }
  if (g.bias || g.activation != Activation::none) finish<T, T>(g, nullptr, 0, d, g.m, g.n, 0);
}

// A strided 16-bit matrix into an f32 panel read in its own order (a transposed view, unit stride
// down its columns, stays column-major: converting it into rows would read it a stride apart), and
// the operand BLAS takes the panel as, in row-major calls.
template <class T>
BlasOperand to_panel(const T* src, int64_t rows, int64_t cols, int64_t rs, int64_t cs, float* dst) {
  if (rs == 1 && cs != 1 && cols > 1) {
#pragma omp parallel for schedule(static) if (rows_in_parallel(cols, rows))
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = 0; i < rows; ++i) dst[j * rows + i] = convert<float>(src[i + j * cs]);
    return {CblasTrans, std::max<int64_t>(rows, 1)};
  }
#pragma omp parallel for schedule(static) if (rows_in_parallel(rows, cols))
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[i * cols + j] = convert<float>(src[i * rs + j * cs]);
  return {CblasNoTrans, std::max<int64_t>(cols, 1)};
}

// One kept batch entry of a 16-bit GEMM through f32 copies, in blocks of at most kBlock rows,
// columns and terms (the scratch stays 12 MiB whatever the shapes; a view broadcast by zero strides
// can be far larger than its memory): each block of d summed in f32 over every term in order, then
// rounded once.
constexpr int64_t kBlock = 1024;

template <class T, class O>
void gemm_entry_16(const Gemm& g, const BatchWalk& bw, int64_t kept, std::vector<float>& scratch) {
  int64_t base[4];
  bw.kept.offsets(kept, base);
  const int64_t mb = std::min(g.m, kBlock), nb = std::min(g.n, kBlock), kb = std::min(g.k, kBlock);
  scratch.resize(static_cast<size_t>(mb * kb + kb * nb + mb * nb));
  float* a32 = scratch.data();
  float* b32 = a32 + mb * kb;
  float* acc = b32 + kb * nb;
  O* d = static_cast<O*>(const_cast<void*>(g.d.data)) + base[kGemmD];
  for (int64_t i0 = 0; i0 < g.m; i0 += mb)
    for (int64_t j0 = 0; j0 < g.n; j0 += nb) {
      const int64_t rows = std::min(mb, g.m - i0), cols = std::min(nb, g.n - j0);
      if (g.c.data && g.beta != 0.0) {
        const O* c = static_cast<const O*>(g.c.data) + base[kGemmC];
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j)
            acc[i * cols + j] = static_cast<float>(g.beta * convert<float>(c[(i0 + i) * g.c.rs + (j0 + j) * g.c.cs]));
      } else {
        std::fill(acc, acc + rows * cols, 0.0f);
      }
      for (int64_t r = 0; r < bw.summed_count; ++r) {
        const auto [a, b] = summed_operands<T>(g, bw, base, r);
        for (int64_t p0 = 0; p0 < g.k; p0 += kb) {
          const int64_t terms = std::min(kb, g.k - p0);
          const BlasOperand oa = to_panel(a + i0 * g.a.rs + p0 * g.a.cs, rows, terms, g.a.rs, g.a.cs, a32);
          const BlasOperand ob = to_panel(b + p0 * g.b.rs + j0 * g.b.cs, terms, cols, g.b.rs, g.b.cs, b32);
          blas_gemm<float>(true, rows, cols, terms, g.alpha, a32, oa, b32, ob, 1.0, acc, cols);
        }
      }
      finish<O, float>(g, acc, cols, d + i0 * g.d.rs + j0 * g.d.cs, rows, cols, j0);
    }
}

// Batch-invariant products (PlanPreference::batch_invariant). BLAS computes a row differently with
// its place and with M (its kernels pack, split and take tails by shape), so these products are the
// library's own: each element summed along K in order by fused multiply-adds in the accumulation
// type from zero, then alpha, beta c, the bias and the activation. A block of kInvariantRows rows
// shares each load of b, and the rows left over take the same sums one at a time, so a row's bits
// depend on its own values alone; the work is split by rows and columns, never along K.
constexpr int kInvariantRows = 6;
constexpr int64_t kInvariantChunk = 60;   // rows a work item (a multiple of kInvariantRows)
constexpr int64_t kInvariantDepth = 256;  // terms a panel
constexpr int kInvariantBlocks = 16;      // column blocks a work item

template <class P, int R>
BARACUDA_CPU_CLONES void fma_rows(const P* a, int64_t lda, const P* b, int64_t ldb, P* acc, int64_t depth) {
  constexpr int C = 64 / sizeof(P);  // columns a block: one 64-byte row of b
  P c[R][C];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < C; ++j) c[r][j] = acc[r * C + j];
  for (int64_t t = 0; t < depth; ++t) {
    for (int r = 0; r < R; ++r) {
      const P av = a[r * lda + t];
#pragma omp simd
      for (int j = 0; j < C; ++j) c[r][j] = std::fma(av, b[t * ldb + j], c[r][j]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < C; ++j) acc[r * C + j] = c[r][j];
}

template <class T, class O>
void invariant_entry(const Gemm& g, const BatchWalk& bw, int64_t kept) {
  using P = acc_t<T>;
  constexpr int C = 64 / sizeof(P);
  constexpr int64_t kGroup = int64_t{C} * kInvariantBlocks;
  int64_t base[4];
  bw.kept.offsets(kept, base);
  O* d = static_cast<O*>(const_cast<void*>(g.d.data)) + base[kGemmD];
  const O* c = g.c.data && g.beta != 0.0 ? static_cast<const O*>(g.c.data) + base[kGemmC] : nullptr;
  const int64_t chunks = (g.m + kInvariantChunk - 1) / kInvariantChunk, groups = (g.n + kGroup - 1) / kGroup;
  const double work = static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
#pragma omp parallel if (chunks * groups > 1 && work >= double(1 << 18) && !omp_in_parallel())
  {
    std::vector<P> a_panel(static_cast<size_t>(kInvariantChunk * kInvariantDepth));
    std::vector<P> b_panel(static_cast<size_t>(kInvariantDepth * C));
    std::vector<P> acc(static_cast<size_t>(kInvariantBlocks * kInvariantChunk * C));
#pragma omp for schedule(dynamic)
    for (int64_t item = 0; item < chunks * groups; ++item) {
      const int64_t i0 = item / groups * kInvariantChunk, g0 = item % groups * kGroup;
      const int64_t rows = std::min(kInvariantChunk, g.m - i0), blocks = (std::min(kGroup, g.n - g0) + C - 1) / C;
      std::fill(acc.begin(), acc.end(), P(0));
      for (int64_t r = 0; r < bw.summed_count; ++r) {
        const auto [a, b] = summed_operands<T>(g, bw, base, r);
        for (int64_t p0 = 0; p0 < g.k; p0 += kInvariantDepth) {
          const int64_t depth = std::min(kInvariantDepth, g.k - p0);
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t t = 0; t < depth; ++t)
              a_panel[i * depth + t] = convert<P>(a[(i0 + i) * g.a.rs + (p0 + t) * g.a.cs]);
          for (int64_t blk = 0; blk < blocks; ++blk) {
            const int64_t j0 = g0 + blk * C, cols = std::min<int64_t>(C, g.n - j0);
            // b's rows read where they lie when they are whole blocks of P, else copied (and padded).
            const bool in_place = std::is_same_v<T, P> && g.b.cs == 1 && cols == C;
            const P* panel = in_place ? reinterpret_cast<const P*>(b + p0 * g.b.rs + j0) : b_panel.data();
            const int64_t ldb = in_place ? g.b.rs : C;
            if (!in_place)
              for (int64_t t = 0; t < depth; ++t)
                for (int j = 0; j < C; ++j)
                  b_panel[t * C + j] = j < cols ? convert<P>(b[(p0 + t) * g.b.rs + (j0 + j) * g.b.cs]) : P(0);
            P* out = acc.data() + blk * kInvariantChunk * C;
            int64_t i = 0;
            for (; i + kInvariantRows <= rows; i += kInvariantRows)
              fma_rows<P, kInvariantRows>(a_panel.data() + i * depth, depth, panel, ldb, out + i * C, depth);
            for (; i < rows; ++i) fma_rows<P, 1>(a_panel.data() + i * depth, depth, panel, ldb, out + i * C, depth);
          }
        }
      }
      for (int64_t blk = 0; blk < blocks; ++blk) {
        const int64_t j0 = g0 + blk * C, cols = std::min<int64_t>(C, g.n - j0);
        P* out = acc.data() + blk * kInvariantChunk * C;
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) {
            P v = static_cast<P>(g.alpha) * out[i * C + j];
            if (c) v = v + static_cast<P>(g.beta) * convert<P>(c[(i0 + i) * g.c.rs + (j0 + j) * g.c.cs]);
            out[i * C + j] = v;
          }
        finish<O, P>(g, out, C, d + i0 * g.d.rs + j0 * g.d.cs, rows, cols, j0);
      }
    }
  }
}

// Each kept entry by oneDNN (no summed dims: a 16-bit d would round at every step): c first copied
// into d where it is another buffer, then d = alpha a b + beta d, then the bias and activation in
// place. False, having written nothing, where oneDNN takes no such product.
template <class T, class O>
bool onednn_entries(const Gemm& g, const BatchWalk& bw) {
  const bool c_apart = g.c.data && g.beta != 0.0 && (g.c.data != g.d.data || g.c.rs != g.d.rs || g.c.cs != g.d.cs);
  for (int64_t e = 0; e < bw.kept_count; ++e) {
    int64_t base[4];
    bw.kept.offsets(e, base);
    O* d = static_cast<O*>(const_cast<void*>(g.d.data)) + base[kGemmD];
    if (c_apart) {
      const O* c = static_cast<const O*>(g.c.data) + base[kGemmC];
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) d[i * g.d.rs + j * g.d.cs] = c[i * g.c.rs + j * g.c.cs];
    }
    const T* a = static_cast<const T*>(g.a.data) + base[kGemmA];
    const T* b = static_cast<const T*>(g.b.data) + base[kGemmB];
    // (The first entry decides: every entry is the same configuration. c copied into d is harmless to
    // the fallback, which reads c again.)
    if (!onednn_gemm(g.in, g.out, g.m, g.n, g.k, a, g.a, b, g.b, d, g.d, g.alpha, g.c.data ? g.beta : 0.0))
      return false;
    if (g.bias || g.activation != Activation::none) finish<O, O>(g, nullptr, 0, d, g.m, g.n, 0);
  }
  return true;
}

template <class T, class O>
Status run_gemm(const Gemm& g) {
  if (g.m == 0 || g.n == 0) return Status::ok();
  const BatchWalk bw = batch_walk(g);
  if (bw.kept_count == 0) return Status::ok();
  if (g.batch_invariant) {
    for (int64_t e = 0; e < bw.kept_count; ++e) invariant_entry<T, O>(g, bw, e);
    return Status::ok();
  }
  const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  if constexpr (!std::is_same_v<T, double>) {
    // oneDNN for products large enough to pay its call (a few microseconds) and few enough to run one
    // after another.
    if (bw.summed_count == 1 && g.k > 0 && flops >= double(1 << 20) && bw.kept_count <= 64 &&
        onednn_entries<T, O>(g, bw))
      return Status::ok();
  }
  // Many small products: one per thread (BLAS runs single-threaded inside a parallel region);
  // otherwise one at a time, BLAS's threads inside each.
  const double work = static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  const bool across = bw.kept_count > 1 && work * static_cast<double>(bw.summed_count) < double(1 << 22);
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
#pragma omp parallel for schedule(dynamic) if (across)
    for (int64_t e = 0; e < bw.kept_count; ++e) gemm_entry<T>(g, bw, e);
  } else {
#pragma omp parallel if (across)
    {
      std::vector<float> scratch;
#pragma omp for schedule(dynamic)
      for (int64_t e = 0; e < bw.kept_count; ++e) gemm_entry_16<T, O>(g, bw, e, scratch);
    }
  }
  return Status::ok();
}

template <class T>
void fill_ones(void* at, int64_t count) {
  T* p = static_cast<T*>(at);
  std::fill(p, p + count, convert<T>(1.0f));
}

}  // namespace

Status launch(const LaunchContext& ctx, const MatmulProblem& p) {
  // Views broadcast by zero strides can ask for millions of small products (a batch that neither
  // folds nor exists in memory); each BLAS call costs microseconds, so such a plan is refused before
  // anything is written: at most 2^16 products summed one after another, 2^22 in all, a GEMM.
  for (const Gemm& g : p.gemms) {
    const BatchWalk bw = batch_walk(g);
    if (bw.summed_count > (int64_t{1} << 16) ||
        bw.kept_count > (int64_t{1} << 22) / std::max<int64_t>(1, bw.summed_count))
      return plan_error(StatusCode::unsupported, p.plan, "args",
                        "the views make " + std::to_string(bw.kept_count) + " x " + std::to_string(bw.summed_count) +
                            " separate products (batch dims that do not fold into M or K); the CPU takes at most 2^16 "
                            "summed and 2^22 in all: make the operands contiguous");
  }
  // f32 and f64 products go to BLAS on the views as they lie, and Debian's OpenBLAS counts sizes and
  // leading dimensions in 32 bits (16-bit data goes through blocks of at most 1024).
  for (const Gemm& g : p.gemms) {
    if (g.in == DType::f16 || g.in == DType::bf16) continue;
    const std::pair<const GemmMatrix*, std::pair<int64_t, int64_t>> mats[] = {
        {&g.a, {g.m, g.k}}, {&g.b, {g.k, g.n}}, {&g.c, {g.m, g.n}}, {&g.d, {g.m, g.n}}};
    bool fits = g.m <= INT32_MAX && g.n <= INT32_MAX && g.k <= INT32_MAX;
    for (const auto& [mat, dims] : mats) {
      int64_t rs = mat->rs, cs = mat->cs;
      if (!mat->data || !gemm_layout_ok(dims.first, dims.second, rs, cs)) continue;
      fits = fits && rs <= INT32_MAX && cs <= INT32_MAX;
    }
    if (!fits)
      return plan_error(StatusCode::unsupported, p.plan, "args",
                        "f32 and f64 products on the CPU take sizes and row strides below 2^31 (its BLAS counts "
                        "them in 32 bits)");
  }
  if (p.ones_count)
    if (Status s = dispatch_float<half, bfloat16>(p.ones_dtype,
                                                  [&](auto t) {
                                                    fill_ones<typename decltype(t)::type>(
                                                        static_cast<char*>(ctx.workspace.data) + p.ones_offset,
                                                        p.ones_count);
                                                    return Status::ok();
                                                  });
        !s)
      return s;
  auto passes = [&](const std::vector<ActivationPass>& list) {
    for (const ActivationPass& pass : list)
      if (Status s = run_pass(ctx, pass); !s) return s;
    return Status::ok();
  };
  if (Status s = passes(p.passes_before); !s) return s;
  for (const Gemm& g : p.gemms) {
    Status s = dispatch_float<half, bfloat16>(g.in, [&](auto t) {
      using T = typename decltype(t)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
        return run_gemm<T, T>(g);
      else
        return g.out == DType::f32 ? run_gemm<T, float>(g) : run_gemm<T, T>(g);
    });
    if (!s) return s;
  }
  return passes(p.passes_after);
}

// Zeros into rows [from, rows) of a [rows, cols] view (the rows no group holds): one memset where
// the rows are packed, one a row where each row is, else one an element (a memset call an element
// made a large output's zeroing a hang for the fuzzer under ASan).
void zero_rows(const AnyTensorMut& v, int64_t from) {
  const int64_t rows = v.shape.dims[0], cols = v.shape.dims[1];
  if (!v.data || from >= rows || cols == 0) return;
  const auto size = static_cast<int64_t>(dtype_size(v.dtype));
  char* base = static_cast<char*>(v.data);
  if (v.strides[1] == 1 && (v.strides[0] == cols || rows - from == 1)) {
    std::memset(base + from * v.strides[0] * size, 0, static_cast<size_t>((rows - from) * cols * size));
  } else if (v.strides[1] == 1) {
    for (int64_t i = from; i < rows; ++i)
      std::memset(base + i * v.strides[0] * size, 0, static_cast<size_t>(cols * size));
  } else {
    for (int64_t i = from; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        std::memset(base + (i * v.strides[0] + j * v.strides[1]) * size, 0, static_cast<size_t>(size));
  }
}

Status launch(const LaunchContext& ctx, const GroupedMatmulProblem& p) {
  // A few hundred groups at a time: their offsets read, their ends found, their GEMMs run.
  constexpr int64_t kChunk = 256;
  const int64_t groups = p.desc.groups;
  int64_t offsets[kChunk], ends[kChunk], bad = 0;
  GroupedEnds state;
  for (int64_t first = 0; first < groups; first += kChunk) {
    const auto n = static_cast<size_t>(std::min(kChunk, groups - first));
    for (size_t i = 0; i < n; ++i) {
      const char* at = static_cast<const char*>(p.offsets.data) + (first + static_cast<int64_t>(i)) *
                                                                      p.offsets.strides[0] *
                                                                      static_cast<int64_t>(dtype_size(p.offsets.dtype));
      offsets[i] =
          p.offsets.dtype == DType::i32 ? *reinterpret_cast<const int32_t*>(at) : *reinterpret_cast<const int64_t*>(at);
    }
    const int64_t next_row = state.end;
    grouped_ends(p, {offsets, n}, state, {ends, n}, bad);
    if (Status s = launch(ctx, grouped_gemms(p, first, next_row, {ends, n})); !s) return s;
  }
  if (p.bad_index_count) *p.bad_index_count += bad;
  zero_rows(p.out, state.end);
  zero_rows(p.da, state.end);
  return Status::ok();
}

}  // namespace baracuda::detail::cpu

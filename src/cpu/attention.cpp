// The CPU kernels of the attention plans: FlashAttention's tiled online softmax. The forward takes
// (b, query head, query tile) in parallel; each tile walks the key tiles its rows see, with the
// products q kᵀ and P v by OpenBLAS on f32 panels (f64 for f64; a view that is already such a panel,
// unit stride along d, is passed as it is, 16-bit data converted once a tile) and the softmax's
// running max, sum and rescaling in between (vectorized exp). The backward is FlashAttention-2's, in
// two passes that recompute the probabilities from the saved logsumexp: dk and dv per (b, kv head,
// kv tile) over the group's query heads and tiles in order, then dq per (b, query head, query tile)
// over the key tiles in order; every sum in a fixed order, no atomics, so the bits never change.
// Scratch is a few tiles a thread (at most about 5 MB at head dim 512 in f64), never proportional to
// the sequences.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "common/convert.hpp"
#include "common/dispatch.hpp"
#include "cpu/parallel.hpp"
#include "cpu/vector_math.hpp"
#include "ops/attention_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

// Queries and keys a tile: a score tile of 64 x 256 (64 KB in f32) stays in L2 beside its panels,
// and OpenBLAS's kernels run at full speed from these sizes on.
constexpr int kQueryTile = 64;
constexpr int kKeyTile = 256;

template <class A>
constexpr A kNegInf = -std::numeric_limits<A>::infinity();

// Row-major C = alpha op(A) op(B) + beta C, by OpenBLAS.
template <class A>
void gemm(bool trans_a, bool trans_b, int m, int n, int k, A alpha, const A* a, int64_t lda, const A* b, int64_t ldb,
          A beta, A* c, int64_t ldc) {
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<A, double>)
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta,
                c, static_cast<blasint>(ldc));
  else
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta,
                c, static_cast<blasint>(ldc));
}

// Rows [r0, r0 + rows) of head h of batch entry b of a [B, S, H, D] view, `cols` wide, as a
// row-major panel of A: the view itself where it is one (A data, unit stride along d, a row stride
// BLAS takes), else converted into `scratch`. Sets ld to the panel's row stride.
template <class A, class T>
const A* panel(const AnyTensorRef& v, int64_t b, int64_t h, int64_t r0, int rows, int cols, A* scratch, int64_t& ld) {
  const T* base = static_cast<const T*>(v.data) + b * v.strides[0] + r0 * v.strides[1] + h * v.strides[2];
  if constexpr (std::is_same_v<T, A>) {
    if ((v.strides[3] == 1 || cols == 1) && v.strides[1] >= cols && v.strides[1] <= std::numeric_limits<int>::max()) {
      ld = v.strides[1];
      return base;
    }
  }
  convert_rows<A>(base, v.strides[1], v.strides[3], rows, cols, scratch);
  ld = cols;
  return scratch;
}

// Writes a row-major tile (rows x cols, row stride cols) times each row's factor into rows
// [r0, r0 + rows) of head h of batch entry b of a [B, S, H, D] view.
template <class T, class A>
void store(const AnyTensorMut& v, int64_t b, int64_t h, int64_t r0, int rows, int cols, const A* tile,
           const A* factor) {
  T* base = static_cast<T*>(v.data) + b * v.strides[0] + r0 * v.strides[1] + h * v.strides[2];
  for (int r = 0; r < rows; ++r) {
    T* row = base + r * v.strides[1];
    const A f = factor ? factor[r] : A(1);
    for (int c = 0; c < cols; ++c) row[c * v.strides[3]] = convert<T>(tile[r * cols + c] * f);
  }
}

// What the score transform of a tile needs: the soft-cap, the bias rows, the keys each row sees.
template <class A, class B>
struct ScoreRow {
  A cap = 0;                // > 0: s = cap tanh(s / cap)
  const B* bias = nullptr;  // the row's bias at the tile's first key
  int64_t bias_step = 0;    // along the keys
  int lo = 0, hi = 0;       // the keys [lo, hi) of the tile the row sees
};

// A row of raw scores (scale q . k) to the masked logits: soft-capped (tanh kept in t, for the
// backward's derivative, where t is given), the bias added, keys outside [lo, hi) at -inf.
template <class A, class B>
BARACUDA_CPU_CLONES void logits_row(A* __restrict s, int n, const ScoreRow<A, B>& r, A* __restrict t) {
  if (r.cap > 0) {
    const A inv = A(1) / r.cap;
#pragma omp simd
    for (int j = 0; j < n; ++j) {
      const A th = simd_math::tanh(s[j] * inv);
      if (t) t[j] = th;
      s[j] = r.cap * th;
    }
  }
  if (r.bias) {
    if (r.bias_step == 1)
      for (int j = 0; j < n; ++j) s[j] += to_acc<A>(r.bias[j]);
    else
      for (int j = 0; j < n; ++j) s[j] += to_acc<A>(r.bias[j * r.bias_step]);
  }
  for (int j = 0; j < std::min(r.lo, n); ++j) s[j] = kNegInf<A>;
  for (int j = std::max(r.hi, 0); j < n; ++j) s[j] = kNegInf<A>;
}

// The online softmax's step on a row of logits: the running max m moves to max(m, the row's), the
// row becomes exp(s - m) in place; returns the row's sum and sets corr = exp(m_old - m_new), the
// factor the row's earlier sum and output take. A row that has seen only -inf keeps max -inf and
// exps of 0 (exp(-inf - 0)), never NaN.
template <class A>
BARACUDA_CPU_CLONES A online_softmax_row(A* __restrict s, int n, A& m, A& corr) {
  A mx = m;
#pragma omp simd reduction(max : mx)
  for (int j = 0; j < n; ++j) mx = s[j] > mx ? s[j] : mx;
  const A base = mx == kNegInf<A> ? A(0) : mx;
  corr = simd_math::exp_nonpositive(m - base);
  m = mx;
  A sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < n; ++j) {
    s[j] = simd_math::exp_nonpositive(s[j] - base);
    sum += s[j];
  }
  return sum;
}

// A row of logits to probabilities from the row's logsumexp: exp(s - lse), 0 in a fully masked row
// (lse -inf).
template <class A>
BARACUDA_CPU_CLONES void probabilities_row(A* __restrict s, int n, A lse) {
  if (lse == kNegInf<A>) {
    for (int j = 0; j < n; ++j) s[j] = 0;
    return;
  }
#pragma omp simd
  for (int j = 0; j < n; ++j) s[j] = simd_math::exp_nonpositive(s[j] - lse);
}

// dS = P (dP - D) cap', in place of dP; cap' = 1 - tanh^2 where there is a soft-cap (t given).
template <class A>
BARACUDA_CPU_CLONES void dscores_row(const A* __restrict p, A* __restrict dp, int n, A delta, const A* __restrict t) {
  if (t) {
#pragma omp simd
    for (int j = 0; j < n; ++j) dp[j] = p[j] * (dp[j] - delta) * (A(1) - t[j] * t[j]);
  } else {
#pragma omp simd
    for (int j = 0; j < n; ++j) dp[j] = p[j] * (dp[j] - delta);
  }
}

// What the tiles of one problem share: its sizes, views and the mask.
template <class T, class B, class Args>
struct Tiles {
  using A = acc_t<T>;
  const AttentionDescriptor& d;
  const Args& a;
  const AttentionMask& mask;
  A scale;
  int D, Dv;
  int64_t group;  // query heads a kv head serves

  // The logits of query rows [i0, i0 + rows) of head h against keys [j0, j0 + n): s = scale q kᵀ, then
  // each row's soft-cap, bias and mask (tanh kept in t where t is given).
  void logits(int64_t b, int64_t h, int64_t i0, int rows, int64_t j0, int n, const A* q, int64_t ldq, const A* k,
              int64_t ldk, A* s, A* t) const {
    gemm<A>(false, true, rows, n, D, scale, q, ldq, k, ldk, A(0), s, kKeyTile);
    for (int r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      ScoreRow<A, B> row;
      row.cap = static_cast<A>(d.softcap);
      if (d.has_bias) {
        const AnyTensorRef& bias = a.bias;
        row.bias = static_cast<const B*>(bias.data) + b * bias.strides[0] + h * bias.strides[1] + i * bias.strides[2] +
                   j0 * bias.strides[3];
        row.bias_step = bias.strides[3];
      }
      row.lo = static_cast<int>(std::clamp<int64_t>(mask.lo(i) - j0, 0, n));
      row.hi = static_cast<int>(std::clamp<int64_t>(mask.hi(i) - j0, 0, n));
      logits_row<A, B>(s + r * kKeyTile, n, row, t ? t + r * kKeyTile : nullptr);
    }
  }
  // Whether query rows [i0, i1) see any key of [j0, j1).
  bool sees(int64_t i0, int64_t i1, int64_t j0, int64_t j1) const { return mask.lo(i0) < j1 && mask.hi(i1 - 1) > j0; }
};

// Per-thread scratch, allocated before the parallel region (an allocation failure is bad_alloc out
// of launch, which run turns into a Status).
template <class A>
struct Scratch {
  int64_t per_thread = 0;
  std::vector<A> data;
  Scratch(int threads, int64_t per) : per_thread(per), data(static_cast<size_t>(threads * per)) {}
  A* of(int thread) { return data.data() + thread * per_thread; }
};

// `work`: a product of sizes, multiplied in double (it may pass 2^63; only its size matters).
int threads_for(int64_t tasks, double work) {
  if (tasks < 2 || work < static_cast<double>(kParallelThreshold) || omp_in_parallel()) return 1;
  return static_cast<int>(std::min<int64_t>(tasks, omp_get_max_threads()));
}

template <class T, class B>
Status forward(const AttentionProblem& p) {
  using A = acc_t<T>;
  const AttentionDescriptor& d = p.desc;
  const AttentionArgs& a = p.args;
  const Tiles<T, B, AttentionArgs> tiles{d,
                                         a,
                                         p.mask,
                                         static_cast<A>(p.scale),
                                         static_cast<int>(d.head_dim),
                                         static_cast<int>(d.head_dim_v),
                                         d.heads_q / d.heads_kv};
  const int D = tiles.D, Dv = tiles.Dv;
  const int64_t q_tiles = (d.seq_q + kQueryTile - 1) / kQueryTile;
  const int64_t tasks = d.batch * d.heads_q * q_tiles;
  const int threads =
      threads_for(tasks, static_cast<double>(d.batch) * static_cast<double>(d.heads_q) * static_cast<double>(d.seq_q) *
                             static_cast<double>(std::max<int64_t>(d.seq_kv, 1)) * D);
  // q, k, v panels, the scores, the output accumulator, the running max and sum.
  const int64_t sq = int64_t{kQueryTile} * D, sk = int64_t{kKeyTile} * D, sv = int64_t{kKeyTile} * Dv;
  const int64_t ss = int64_t{kQueryTile} * kKeyTile, so = int64_t{kQueryTile} * Dv;
  Scratch<A> scratch(threads, sq + sk + sv + ss + so + 2 * kQueryTile);
#pragma omp parallel for schedule(dynamic) num_threads(threads) if (threads > 1)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t b = task / (d.heads_q * q_tiles), h = task / q_tiles % d.heads_q, i0 = task % q_tiles * kQueryTile;
    const int64_t hk = h / tiles.group;
    const int rows = static_cast<int>(std::min<int64_t>(kQueryTile, d.seq_q - i0));
    A* qs = scratch.of(omp_get_thread_num());
    A *ks = qs + sq, *vs = ks + sk, *s = vs + sv, *o = s + ss, *m = o + so, *l = m + kQueryTile;
    int64_t ldq, ldk, ldv;
    const A* q = panel<A, T>(a.q, b, h, i0, rows, D, qs, ldq);
    std::fill(o, o + int64_t{rows} * Dv, A(0));
    std::fill(m, m + rows, kNegInf<A>);
    std::fill(l, l + rows, A(0));
    const int64_t lo = p.mask.lo(i0), hi = p.mask.hi(i0 + rows - 1);
    for (int64_t j0 = lo; j0 < hi; j0 += kKeyTile) {
      const int n = static_cast<int>(std::min<int64_t>(kKeyTile, hi - j0));
      const A* k = panel<A, T>(a.k, b, hk, j0, n, D, ks, ldk);
      const A* v = panel<A, T>(a.v, b, hk, j0, n, Dv, vs, ldv);
      tiles.logits(b, h, i0, rows, j0, n, q, ldq, k, ldk, s, nullptr);
      for (int r = 0; r < rows; ++r) {
        A corr;
        const A sum = online_softmax_row(s + r * kKeyTile, n, m[r], corr);
        l[r] = l[r] * corr + sum;
        if (corr != A(1))
          for (int c = 0; c < Dv; ++c) o[r * Dv + c] *= corr;
      }
      gemm<A>(false, false, rows, Dv, n, A(1), s, kKeyTile, v, ldv, A(1), o, Dv);
    }
    // out = o / l and lse = m + log l; a row that saw no key (l = 0) has out 0 and lse -inf.
    for (int r = 0; r < rows; ++r) {
      const bool seen = l[r] > 0;
      if (a.lse.data) {
        A* lse =
            static_cast<A*>(a.lse.data) + b * a.lse.strides[0] + h * a.lse.strides[1] + (i0 + r) * a.lse.strides[2];
        *lse = seen ? m[r] + std::log(l[r]) : kNegInf<A>;
      }
      l[r] = seen ? A(1) / l[r] : A(0);
    }
    store<T>(a.out, b, h, i0, rows, Dv, o, l);
  }
  return Status::ok();
}

template <class T, class B>
Status backward(const AttentionBackwardProblem& p) {
  using A = acc_t<T>;
  const AttentionDescriptor& d = p.desc;
  const AttentionBackwardArgs& a = p.args;
  const Tiles<T, B, AttentionBackwardArgs> tiles{d,
                                                 a,
                                                 p.mask,
                                                 static_cast<A>(p.scale),
                                                 static_cast<int>(d.head_dim),
                                                 static_cast<int>(d.head_dim_v),
                                                 d.heads_kv ? d.heads_q / d.heads_kv : 0};
  const int D = tiles.D, Dv = tiles.Dv;
  const bool cap = d.softcap > 0;
  // Pass 1's key tiles: 256 keys, or 64 where that leaves fewer than 16 tasks (short sequences, few kv
  // heads), so that every thread has work (a thread alone would also run BLAS's own threads on each
  // small product: BLAS runs single-threaded only inside a parallel region). Chosen from the shape
  // alone, so the bits do not depend on the thread count.
  const int64_t q_tiles = (d.seq_q + kQueryTile - 1) / kQueryTile;
  const double kv_pairs = static_cast<double>(d.batch) * static_cast<double>(d.heads_kv);
  const int kv_step = kv_pairs * static_cast<double>((d.seq_kv + kKeyTile - 1) / kKeyTile) < 16 ? kQueryTile : kKeyTile;
  const int64_t kv_tiles = (d.seq_kv + kv_step - 1) / kv_step;
  const double work = static_cast<double>(d.batch) * static_cast<double>(d.heads_q) *
                      static_cast<double>(std::max<int64_t>(d.seq_q, 1)) *
                      static_cast<double>(std::max<int64_t>(d.seq_kv, 1)) * D;
  // q, dout, k, v panels; P, dP (dS), tanh; two accumulators (dk, dv; dq); lse and D of the rows.
  const int64_t sq = int64_t{kQueryTile} * D, sdo = int64_t{kQueryTile} * Dv, sk = int64_t{kKeyTile} * D,
                sv = int64_t{kKeyTile} * Dv, ss = int64_t{kQueryTile} * kKeyTile;
  const int64_t per = sq + sdo + sk + sv + 3 * ss + sk + sv + 2 * kQueryTile;
  const int threads =
      std::max(threads_for(d.batch * d.heads_kv * kv_tiles, work), threads_for(d.batch * d.heads_q * q_tiles, work));
  Scratch<A> scratch(threads, per);
  struct Slots {
    A *q, *dout, *k, *v, *p, *dp, *t, *acc1, *acc2, *lse, *delta;
  };
  auto slots = [&](int thread) {
    Slots s;
    s.q = scratch.of(thread);
    s.dout = s.q + sq;
    s.k = s.dout + sdo;
    s.v = s.k + sk;
    s.p = s.v + sv;
    s.dp = s.p + ss;
    s.t = s.dp + ss;
    s.acc1 = s.t + ss;
    s.acc2 = s.acc1 + sk;
    s.lse = s.acc2 + sv;
    s.delta = s.lse + kQueryTile;
    return s;
  };
  // A query tile's rows: q and dout panels, the saved lse and D_i = dout_i . out_i.
  auto load_queries = [&](const Slots& s, int64_t b, int64_t h, int64_t i0, int rows, int64_t& ldq, int64_t& ldo,
                          const A*& q, const A*& dout) {
    q = panel<A, T>(a.q, b, h, i0, rows, D, s.q, ldq);
    dout = panel<A, T>(a.dout, b, h, i0, rows, Dv, s.dout, ldo);
    for (int r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      s.lse[r] = static_cast<const A*>(a.lse.data)[b * a.lse.strides[0] + h * a.lse.strides[1] + i * a.lse.strides[2]];
      const T* out =
          static_cast<const T*>(a.out.data) + b * a.out.strides[0] + i * a.out.strides[1] + h * a.out.strides[2];
      A delta = 0;
      for (int c = 0; c < Dv; ++c) delta += dout[r * ldo + c] * to_acc<A>(out[c * a.out.strides[3]]);
      s.delta[r] = delta;
    }
  };
  // P and dS of a (query tile, key tile) pair: P into s.p; dS into s.dp where `want_ds`.
  auto probabilities = [&](const Slots& s, int64_t b, int64_t h, int64_t i0, int rows, int64_t j0, int n, const A* q,
                           int64_t ldq, const A* dout, int64_t ldo, const A* k, int64_t ldk, const A* v, int64_t ldv,
                           bool want_ds) {
    tiles.logits(b, h, i0, rows, j0, n, q, ldq, k, ldk, s.p, cap ? s.t : nullptr);
    for (int r = 0; r < rows; ++r) probabilities_row(s.p + r * kKeyTile, n, s.lse[r]);
    if (!want_ds) return;
    gemm<A>(false, true, rows, n, Dv, A(1), dout, ldo, v, ldv, A(0), s.dp, kKeyTile);
    for (int r = 0; r < rows; ++r)
      dscores_row(s.p + r * kKeyTile, s.dp + r * kKeyTile, n, s.delta[r], cap ? s.t + r * kKeyTile : nullptr);
  };

  // Pass 1: dk and dv, a task per (b, kv head, kv tile), over the group's query heads and tiles in order.
  if (a.dk.data || a.dv.data) {
    const int64_t tasks = d.batch * d.heads_kv * kv_tiles;
    const int t1 = static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(tasks, 1)));
#pragma omp parallel for schedule(dynamic) num_threads(t1) if (t1 > 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t b = task / (d.heads_kv * kv_tiles), hk = task / kv_tiles % d.heads_kv,
                    j0 = task % kv_tiles * kv_step;
      const int n = static_cast<int>(std::min<int64_t>(kv_step, d.seq_kv - j0));
      const Slots s = slots(omp_get_thread_num());
      int64_t ldk, ldv, ldq, ldo;
      const A* k = panel<A, T>(a.k, b, hk, j0, n, D, s.k, ldk);
      const A* v = panel<A, T>(a.v, b, hk, j0, n, Dv, s.v, ldv);
      A *dk = s.acc1, *dv = s.acc2;
      std::fill(dk, dk + int64_t{n} * D, A(0));
      std::fill(dv, dv + int64_t{n} * Dv, A(0));
      // (No query: dk and dv are zeros, without a walk over the group's heads, billions of them in a
      // valid view of no element.)
      for (int64_t h = hk * tiles.group; d.seq_q > 0 && h < (hk + 1) * tiles.group; ++h)
        for (int64_t i0 = 0; i0 < d.seq_q; i0 += kQueryTile) {
          const int rows = static_cast<int>(std::min<int64_t>(kQueryTile, d.seq_q - i0));
          if (!tiles.sees(i0, i0 + rows, j0, j0 + n)) continue;
          const A *q, *dout;
          load_queries(s, b, h, i0, rows, ldq, ldo, q, dout);
          probabilities(s, b, h, i0, rows, j0, n, q, ldq, dout, ldo, k, ldk, v, ldv, a.dk.data != nullptr);
          if (a.dv.data) gemm<A>(true, false, n, Dv, rows, A(1), s.p, kKeyTile, dout, ldo, A(1), dv, Dv);
          if (a.dk.data) gemm<A>(true, false, n, D, rows, tiles.scale, s.dp, kKeyTile, q, ldq, A(1), dk, D);
        }
      if (a.dk.data) store<T>(a.dk, b, hk, j0, n, D, dk, static_cast<const A*>(nullptr));
      if (a.dv.data) store<T>(a.dv, b, hk, j0, n, Dv, dv, static_cast<const A*>(nullptr));
    }
  }

  // Pass 2: dq, a task per (b, query head, query tile), over the key tiles its rows see in order.
  if (a.dq.data) {
    const int64_t tasks = d.batch * d.heads_q * q_tiles;
    const int t2 = static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(tasks, 1)));
#pragma omp parallel for schedule(dynamic) num_threads(t2) if (t2 > 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t b = task / (d.heads_q * q_tiles), h = task / q_tiles % d.heads_q, i0 = task % q_tiles * kQueryTile;
      const int64_t hk = h / tiles.group;
      const int rows = static_cast<int>(std::min<int64_t>(kQueryTile, d.seq_q - i0));
      const Slots s = slots(omp_get_thread_num());
      int64_t ldk, ldv, ldq, ldo;
      const A *q, *dout;
      load_queries(s, b, h, i0, rows, ldq, ldo, q, dout);
      A* dq = s.acc1;
      std::fill(dq, dq + int64_t{rows} * D, A(0));
      const int64_t lo = p.mask.lo(i0), hi = p.mask.hi(i0 + rows - 1);
      for (int64_t j0 = lo; j0 < hi; j0 += kKeyTile) {
        const int n = static_cast<int>(std::min<int64_t>(kKeyTile, hi - j0));
        const A* k = panel<A, T>(a.k, b, hk, j0, n, D, s.k, ldk);
        const A* v = panel<A, T>(a.v, b, hk, j0, n, Dv, s.v, ldv);
        probabilities(s, b, h, i0, rows, j0, n, q, ldq, dout, ldo, k, ldk, v, ldv, true);
        gemm<A>(false, false, rows, D, n, tiles.scale, s.dp, kKeyTile, k, ldk, A(1), dq, D);
      }
      store<T>(a.dq, b, h, i0, rows, D, dq, static_cast<const A*>(nullptr));
    }
  }
  return Status::ok();
}

// Calls f(type_identity<T>, type_identity<B>) for the problem's dtypes (B, the bias's, is T or f32).
template <class Problem, class F>
Status dispatch(const Problem& p, F&& f) {
  return dispatch_float<half, bfloat16>(p.desc.dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    if (p.desc.has_bias && p.bias_dtype == DType::f32 && !std::is_same_v<T, float>)
      return f(t, std::type_identity<float>{});
    return f(t, t);
  });
}

// Packed sequences (varlen): the offsets, read and checked whole before anything is written: from 0
// to `total`, nondecreasing, no sequence longer than `longest`.
Expected<std::vector<int64_t>> sequence_offsets(const AnyTensorRef& cu, int64_t batch, int64_t total, int64_t longest,
                                                std::string_view plan, std::string_view field) {
  std::vector<int64_t> out(static_cast<size_t>(batch + 1));
  const int32_t* data = static_cast<const int32_t*>(cu.data);
  for (int64_t b = 0; b <= batch; ++b) out[b] = data[b * cu.strides[0]];
  auto bad = [&](const std::string& what) {
    return Status::error(StatusCode::invalid_problem, std::string(plan) + ": " + std::string(field) + ": " + what);
  };
  if (out[0] != 0) return bad("starts at " + std::to_string(out[0]) + ", not 0");
  if (out[batch] != total)
    return bad("ends at " + std::to_string(out[batch]) + ", not at the packed rows (" + std::to_string(total) + ")");
  for (int64_t b = 0; b < batch; ++b) {
    if (out[b + 1] < out[b])
      return bad("decreases at entry " + std::to_string(b + 1) + " (" + std::to_string(out[b]) + " then " +
                 std::to_string(out[b + 1]) + ")");
    if (out[b + 1] - out[b] > longest)
      return bad("sequence " + std::to_string(b) + " has " + std::to_string(out[b + 1] - out[b]) +
                 " rows, more than the descriptor's longest (" + std::to_string(longest) + ")");
  }
  return out;
}

const void* moved(const void* data, int64_t bytes) { return static_cast<const char*>(data) + bytes; }
void* moved(void* data, int64_t bytes) { return static_cast<char*>(data) + bytes; }

// A packed view [total, H, D] as the [1, rows, H, D] view of one sequence's rows from `first`.
template <class View>
View sequence_rows(View v, int64_t first, int64_t rows) {
  if (!v.data) return v;
  v.data = moved(v.data, first * v.strides[0] * static_cast<int64_t>(dtype_size(v.dtype)));
  v.capacity -= first * v.strides[0];
  v.shape = Shape{1, rows, v.shape[1], v.shape[2]};
  v.strides = Strides{0, v.strides[0], v.strides[1], v.strides[2]};
  return v;
}
// The packed lse [H, total] as the [1, H, rows] view of one sequence's rows from `first`.
template <class View>
View sequence_lse(View v, int64_t first, int64_t rows) {
  if (!v.data) return v;
  v.data = moved(v.data, first * v.strides[1] * static_cast<int64_t>(dtype_size(v.dtype)));
  v.capacity -= first * v.strides[1];
  v.shape = Shape{1, v.shape[0], rows};
  v.strides = Strides{0, v.strides[0], v.strides[1]};
  return v;
}

// Runs a packed problem as one problem of batch 1 a sequence, in order, each on views moved to its
// rows (so every sequence computes exactly as the same sequence alone would).
template <class Problem, class Run>
Status each_sequence(const Problem& p, std::string_view plan, Run&& run) {
  const AttentionDescriptor& d = p.desc;
  Expected<std::vector<int64_t>> q =
      sequence_offsets(p.args.cu_seqlens_q, d.batch, d.total_q, d.seq_q, plan, "args.cu_seqlens_q");
  if (!q) return q.status();
  Expected<std::vector<int64_t>> kv =
      sequence_offsets(p.args.cu_seqlens_kv, d.batch, d.total_kv, d.seq_kv, plan, "args.cu_seqlens_kv");
  if (!kv) return kv.status();
  for (int64_t b = 0; b < d.batch; ++b) {
    Problem one = p;
    const int64_t q0 = (*q)[b], rows_q = (*q)[b + 1] - q0, kv0 = (*kv)[b], rows_kv = (*kv)[b + 1] - kv0;
    one.desc.varlen = false;
    one.desc.batch = 1;
    one.desc.seq_q = rows_q;
    one.desc.seq_kv = rows_kv;
    one.desc.total_q = one.desc.total_kv = 0;
    one.mask = attention_mask(one.desc);
    auto& a = one.args;
    a.q = sequence_rows(a.q, q0, rows_q);
    a.k = sequence_rows(a.k, kv0, rows_kv);
    a.v = sequence_rows(a.v, kv0, rows_kv);
    a.out = sequence_rows(a.out, q0, rows_q);
    a.lse = sequence_lse(a.lse, q0, rows_q);
    if constexpr (std::is_same_v<Problem, AttentionBackwardProblem>) {
      a.dout = sequence_rows(a.dout, q0, rows_q);
      a.dq = sequence_rows(a.dq, q0, rows_q);
      a.dk = sequence_rows(a.dk, kv0, rows_kv);
      a.dv = sequence_rows(a.dv, kv0, rows_kv);
    }
    if (Status s = run(one); !s) return s;
  }
  return Status::ok();
}

// A view of batch entry b of a dense [B, ...] view, as [1, ...].
template <class View>
View batch_entry(View v, int64_t b) {
  if (!v.data) return v;
  v.data = moved(v.data, b * v.strides[0] * static_cast<int64_t>(dtype_size(v.dtype)));
  v.capacity -= b * v.strides[0];
  v.shape.dims[0] = 1;
  return v;
}

// A paged KV cache: every sequence's length and the block entries its keys reach, read and checked
// whole before anything is written; then each sequence's keys and values gathered from their blocks
// into dense [1, length, H_kv, D] buffers and run as a problem of batch 1 (so a sequence computes as
// the same keys held densely would).
template <class T, class B>
Status each_paged_sequence(const AttentionProblem& p) {
  const AttentionDescriptor& d = p.desc;
  const AttentionArgs& a = p.args;
  const auto* lens = static_cast<const int32_t*>(a.seq_lens_kv.data);
  const auto* table = static_cast<const int32_t*>(a.block_table.data);
  auto bad = [](std::string_view field, const std::string& what) {
    return Status::error(StatusCode::invalid_problem, "AttentionPlan: " + std::string(field) + ": " + what);
  };
  auto entry = [&](int64_t b, int64_t j) {
    return static_cast<int64_t>(table[b * a.block_table.strides[0] + j * a.block_table.strides[1]]);
  };
  auto length = [&](int64_t b) { return static_cast<int64_t>(lens[b * a.seq_lens_kv.strides[0]]); };
  int64_t longest = 0;
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t n = length(b);
    if (n < 0 || n > d.seq_kv)
      return bad("args.seq_lens_kv", "sequence " + std::to_string(b) + " holds " + std::to_string(n) +
                                         " keys, outside 0..seq_kv (" + std::to_string(d.seq_kv) + ")");
    // (a sequence's keys each have a row of their own: more than the cache holds would repeat blocks, and
    // the gather below would be larger than the cache)
    if (n / d.block_size + (n % d.block_size != 0 ? 1 : 0) > d.num_blocks)
      return bad("args.seq_lens_kv", "sequence " + std::to_string(b) + " holds " + std::to_string(n) +
                                         " keys, more than the cache's " + std::to_string(d.num_blocks) +
                                         " blocks of " + std::to_string(d.block_size) + " rows");
    longest = std::max(longest, n);
    for (int64_t j = 0; j * d.block_size < n; ++j)
      if (const int64_t e = entry(b, j); e < 0 || e >= d.num_blocks)
        return bad("args.block_table", "entry [" + std::to_string(b) + ", " + std::to_string(j) + "] is " +
                                           std::to_string(e) +
                                           ", outside [0, num_blocks = " + std::to_string(d.num_blocks) + ")");
  }
  // The gather buffers, sized once for the longest sequence before anything is written (a cache
  // broadcast by zero strides can describe far more than memory holds: at most 8 GiB here).
  const double bytes = static_cast<double>(longest) * static_cast<double>(d.heads_kv) *
                       static_cast<double>(d.head_dim + d.head_dim_v) * sizeof(T);
  if (bytes > static_cast<double>(int64_t{1} << 33))
    return Status::error(StatusCode::unsupported,
                         "AttentionPlan: args.seq_lens_kv: the CPU gathers each sequence's keys and values, and the "
                         "longest's would take " +
                             std::to_string(static_cast<int64_t>(bytes)) + " bytes (at most 2^33)");
  std::vector<T> keys(static_cast<size_t>(longest * d.heads_kv * d.head_dim)),
      values(static_cast<size_t>(longest * d.heads_kv * d.head_dim_v));
  // Rows j < n of a cache [blocks, block_size, H, dim] into a dense [n, H, dim] buffer.
  auto gather = [&](const AnyTensorRef& cache, int64_t b, int64_t n, std::vector<T>& to) {
    const int64_t heads = cache.shape[2], dim = cache.shape[3];
    const auto* from = static_cast<const T*>(cache.data);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t row = entry(b, j / d.block_size) * cache.strides[0] + (j % d.block_size) * cache.strides[1];
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t x = 0; x < dim; ++x)
          to[static_cast<size_t>((j * heads + h) * dim + x)] = from[row + h * cache.strides[2] + x * cache.strides[3]];
    }
    return AnyTensorRef::contiguous(to.data(), cache.dtype, Shape{1, n, heads, dim});
  };
  for (int64_t b = 0; b < d.batch; ++b) {
    AttentionProblem one = p;
    one.desc.paged = false;
    one.desc.batch = 1;
    one.desc.seq_kv = length(b);
    one.desc.block_size = one.desc.num_blocks = one.desc.max_blocks = 0;
    one.mask = attention_mask(one.desc);
    AttentionArgs& o = one.args;
    o.k = gather(a.k, b, one.desc.seq_kv, keys);
    o.v = gather(a.v, b, one.desc.seq_kv, values);
    o.q = batch_entry(a.q, b);
    o.out = batch_entry(a.out, b);
    o.lse = batch_entry(a.lse, b);
    o.block_table = o.seq_lens_kv = {};
    if (Status s = forward<T, B>(one); !s) return s;
  }
  return Status::ok();
}

}  // namespace

Status launch(const LaunchContext&, const AttentionProblem& p) {
  return dispatch(p, [&](auto t, auto b) {
    using T = typename decltype(t)::type;
    using B = typename decltype(b)::type;
    if (p.desc.varlen)
      return each_sequence(p, "AttentionPlan", [](const AttentionProblem& one) { return forward<T, B>(one); });
    if (p.desc.paged) return each_paged_sequence<T, B>(p);
    return forward<T, B>(p);
  });
}
Status launch(const LaunchContext&, const AttentionBackwardProblem& p) {
  return dispatch(p, [&](auto t, auto b) {
    using T = typename decltype(t)::type;
    using B = typename decltype(b)::type;
    if (p.desc.varlen)
      return each_sequence(p, "AttentionBackwardPlan",
                           [](const AttentionBackwardProblem& one) { return backward<T, B>(one); });
    return backward<T, B>(p);
  });
}

}  // namespace baracuda::detail::cpu

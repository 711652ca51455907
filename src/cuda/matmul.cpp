// The CUDA side of the matmul plans: each GEMM by cuBLASLt on the views as they lie, its algorithm
// from cuBLASLt's heuristic, chosen once per configuration (layouts, alignments, epilogue, workspace)
// and kept for the process: select asks for contiguous, aligned views, run finds that answer (or asks
// once for another layout). cuBLASLt is column-major: a row-major out is computed as its transpose,
// out^T = b^T a^T, which is also the orientation in which cuBLASLt's bias epilogue adds a bias per
// column of out. Around the GEMMs, the kernels of cuda/device/matmul.cuh (compiled at select): the
// activations cuBLASLt has no epilogue for, c copied into out, f32 accumulators rounded.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/elementwise.hpp"
#include "cuda/common/check.cuh"
#include "cuda/device/params.h"
#include "cuda/jit/jit.hpp"
#include "cuda/runtime.hpp"
#include "ops/matmul_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {
namespace {

Status blas_status(cublasStatus_t s, std::string_view plan, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return plan_error(StatusCode::backend_error, plan, "run",
                    std::string(what) + " failed: cuBLASLt status " + std::to_string(static_cast<int>(s)));
}

// One cuBLASLt handle per device, for the process.
Expected<cublasLtHandle_t> handle_for(int device, std::string_view plan) {
  static std::mutex mutex;
  static std::map<int, cublasLtHandle_t> handles;
  std::lock_guard lock(mutex);
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  const DeviceScope scope(device);
  cublasLtHandle_t h = nullptr;
  if (Status s = blas_status(cublasLtCreate(&h), plan, "cublasLtCreate"); !s) return s;
  handles.emplace(device, h);
  return h;
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f64:
      return CUDA_R_64F;
    default:
      return CUDA_R_32F;
  }
}

// One cuBLASLt call, column-major: D (rows x cols, ld) = alpha op(A) op(B) + beta D, batched.
struct LtMatrix {
  const void* data = nullptr;
  int64_t rows = 0, cols = 0, ld = 1, batch_stride = 0;
  bool transposed = false;  // op(A) = A^T: A stored cols x rows
};
struct LtCall {
  DType in = DType::f32, out = DType::f32;
  bool tf32 = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  LtMatrix a, b, d;
  double alpha = 1.0, beta = 0.0;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int rows_dim = 0;  // batch-invariant (Gemm::batch_invariant): 1 when m counts out's rows, 2 when n does
};

// Batch-invariant calls take the algorithm cuBLASLt's heuristic gives this many rows (and a batch of
// one), whatever their own count: one algorithm a layout, so one order of sums for every row.
constexpr int64_t kInvariantRows = 1024;

int alignment(const void* p, std::initializer_list<int64_t> strides, DType t) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(p) | 16;
  for (int64_t s : strides) bits |= static_cast<uintptr_t>(s) * dtype_size(t);
  return static_cast<int>(bits & (~bits + 1));  // the lowest set bit, at most 16
}

// Everything the heuristic's answer depends on; for a batch-invariant call, not the row count, the
// batch or the strides (only their alignment).
std::vector<int64_t> key_of(int device, const LtCall& c, size_t workspace_limit) {
  const bool invariant = c.rows_dim != 0;
  std::vector<int64_t> key = {device,
                              static_cast<int64_t>(c.in),
                              static_cast<int64_t>(c.out),
                              c.tf32,
                              c.rows_dim == 1 ? 0 : c.m,
                              c.rows_dim == 2 ? 0 : c.n,
                              c.k,
                              invariant ? 0 : c.batch,
                              c.epilogue,
                              static_cast<int64_t>(workspace_limit),
                              c.rows_dim};
  for (const LtMatrix* x : {&c.a, &c.b, &c.d}) {
    key.insert(key.end(), {invariant ? 0 : x->ld, invariant ? 0 : x->batch_stride, x->transposed});
    key.push_back(alignment(x->data, {x->ld, x->batch_stride}, x == &c.d ? c.out : c.in));
  }
  key.push_back(c.bias ? alignment(c.bias, {}, c.out) : 0);
  return key;
}

// The call the heuristic is asked about for a batch-invariant one: kInvariantRows rows, a batch of one.
LtCall canonical(LtCall c) {
  c.batch = 1;
  (c.rows_dim == 1 ? c.m : c.n) = kInvariantRows;
  for (LtMatrix* x : {&c.a, &c.b, &c.d}) {
    x->batch_stride = 0;
    const bool holds_rows = c.rows_dim == 1 ? x != &c.b : x != &c.a;  // a and d have m; b and d have n
    if (!holds_rows) continue;
    (c.rows_dim == 1 ? x->rows : x->cols) = kInvariantRows;
    x->ld = std::max(x->ld, x->transposed ? x->cols : x->rows);
  }
  return c;
}

// The descriptors of a call, released with it.
struct LtDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  LtDescriptors() = default;
  LtDescriptors(const LtDescriptors&) = delete;
  LtDescriptors& operator=(const LtDescriptors&) = delete;
  ~LtDescriptors() {
    if (op) cublasLtMatmulDescDestroy(op);
    for (cublasLtMatrixLayout_t l : {a, b, d})
      if (l) cublasLtMatrixLayoutDestroy(l);
  }
};

Status describe(const LtCall& c, LtDescriptors& out, std::string_view plan) {
  const bool f64 = c.in == DType::f64;
  const cublasComputeType_t compute =
      f64 ? CUBLAS_COMPUTE_64F : (c.in == DType::f32 && c.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  if (Status s = blas_status(cublasLtMatmulDescCreate(&out.op, compute, f64 ? CUDA_R_64F : CUDA_R_32F), plan,
                             "cublasLtMatmulDescCreate");
      !s)
    return s;
  const cublasOperation_t ta = c.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
                          tb = c.b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(out.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  cublasLtMatmulDescSetAttribute(out.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  cublasLtMatmulDescSetAttribute(out.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &c.epilogue, sizeof c.epilogue);
  if (c.bias) {
    const cudaDataType_t bias_type = cuda_type(c.out);
    cublasLtMatmulDescSetAttribute(out.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c.bias, sizeof c.bias);
    cublasLtMatmulDescSetAttribute(out.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type);
  }
  auto layout = [&](cublasLtMatrixLayout_t& l, const LtMatrix& x, DType t) {
    const uint64_t rows = static_cast<uint64_t>(x.transposed ? x.cols : x.rows);
    const uint64_t cols = static_cast<uint64_t>(x.transposed ? x.rows : x.cols);
    if (Status s = blas_status(cublasLtMatrixLayoutCreate(&l, cuda_type(t), rows, cols, x.ld), plan,
                               "cublasLtMatrixLayoutCreate");
        !s)
      return s;
    const int32_t batch = static_cast<int32_t>(c.batch);
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch);
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &x.batch_stride,
                                     sizeof x.batch_stride);
    return Status::ok();
  };
  if (Status s = layout(out.a, c.a, c.in); !s) return s;
  if (Status s = layout(out.b, c.b, c.in); !s) return s;
  return layout(out.d, c.d, c.out);
}

struct Algo {
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

// The heuristic's first answer for this configuration, cached for the process.
Expected<Algo> algo_for(int device, const LtCall& c, size_t workspace_limit, std::string_view plan) {
  static std::mutex mutex;
  static std::map<std::vector<int64_t>, Algo> cache;
  const std::vector<int64_t> key = key_of(device, c, workspace_limit);
  {
    std::lock_guard lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  Expected<cublasLtHandle_t> h = handle_for(device, plan);
  if (!h) return h.status();
  LtDescriptors desc;
  if (Status s = describe(c.rows_dim ? canonical(c) : c, desc, plan); !s) return s;
  cublasLtMatmulPreference_t pref = nullptr;
  if (Status s = blas_status(cublasLtMatmulPreferenceCreate(&pref), plan, "cublasLtMatmulPreferenceCreate"); !s)
    return s;
  const uint64_t limit = workspace_limit;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit, sizeof limit);
  const uint32_t align[4] = {static_cast<uint32_t>(alignment(c.a.data, {c.a.ld, c.a.batch_stride}, c.in)),
                             static_cast<uint32_t>(alignment(c.b.data, {c.b.ld, c.b.batch_stride}, c.in)),
                             static_cast<uint32_t>(alignment(c.d.data, {c.d.ld, c.d.batch_stride}, c.out)),
                             static_cast<uint32_t>(alignment(c.d.data, {c.d.ld, c.d.batch_stride}, c.out))};
  const cublasLtMatmulPreferenceAttributes_t which[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) cublasLtMatmulPreferenceSetAttribute(pref, which[i], &align[i], sizeof align[i]);
  if (c.rows_dim) {  // no split-K: an empty mask leaves only the algorithms without a reduction scheme
    const uint32_t no_reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &no_reduction,
                                         sizeof no_reduction);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const DeviceScope scope(device);
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(*h, desc.op, desc.a, desc.b, desc.d, desc.d, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0 || result.state != CUBLAS_STATUS_SUCCESS)
    return plan_error(StatusCode::unsupported, plan, "descriptor",
                      "cuBLASLt has no algorithm for this GEMM (" + std::string(dtype_name(c.in)) + ", m " +
                          std::to_string(c.m) + ", n " + std::to_string(c.n) + ", k " + std::to_string(c.k) +
                          ", batch " + std::to_string(c.batch) + ", status " + std::to_string(static_cast<int>(st)) +
                          ")");
  Algo algo{result.algo, result.workspaceSize};
  if (c.rows_dim) {  // (and the split count pinned to one, should the mask not have said it)
    const int32_t one = 1;
    cublasLtMatmulAlgoConfigSetAttribute(&algo.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one, sizeof one);
  }
  std::lock_guard lock(mutex);
  cache.emplace(key, algo);
  return algo;
}

// ---------------------------------------------------------------------------------------------
// From a Gemm to its calls.

// A matrix of the Gemm as cuBLASLt's column-major operand of op = N or T.
LtMatrix lt_matrix(const void* data, int64_t rows, int64_t cols, GemmMatrix m, int64_t batch_stride) {
  gemm_layout_ok(rows, cols, m.rs, m.cs);
  LtMatrix x;
  x.data = data;
  x.rows = rows;
  x.cols = cols;
  x.batch_stride = batch_stride;
  x.transposed = m.rs != 1;
  x.ld = std::max<int64_t>(1, x.transposed ? m.rs : m.cs);
  return x;
}
GemmMatrix transposed(GemmMatrix m) { return {m.data, m.cs, m.rs}; }

// How a Gemm runs: the dims of one batched call and the host loops around it.
struct GemmRun {
  int kept = 0, reduced = 0;  // the kept (outer) and summed batch dims
  bool batched = false;       // the innermost kept dim is one call's batch (else a host loop too)
  int64_t inner = 1;          // the batch of one call
  int64_t outer = 1;          // calls per summed entry: the other kept dims
  int64_t summed = 1;
  bool row_major = true;    // d: computed as d^T = b^T a^T
  bool accumulate = false;  // 16-bit d summed over batch dims: through the f32 accumulator
  bool fused_bias = false;  // the bias (and activation) by cuBLASLt's epilogue
};

bool epilogue_fuses(Activation a) {
  return a == Activation::none || a == Activation::relu || a == Activation::gelu_tanh;
}

GemmRun plan_run(const Gemm& g) {
  GemmRun r;
  r.reduced = g.reduced_dims();
  r.kept = g.batch_rank - r.reduced;
  for (int i = 0; i < r.kept; ++i) (i == r.kept - 1 ? r.inner : r.outer) *= g.batch[i];
  r.batched = r.kept > 0 && r.inner <= INT32_MAX;  // cuBLASLt's batch count is an int32
  if (!r.batched) {
    r.outer *= r.inner;
    r.inner = 1;
  }
  for (int i = r.kept; i < g.batch_rank; ++i) r.summed *= g.batch[i];
  r.accumulate = r.reduced > 0 && gemm_accumulator_elements(g) > 0;
  GemmMatrix d = g.d;
  gemm_layout_ok(g.m, g.n, d.rs, d.cs);
  r.row_major = r.accumulate || d.cs == 1;
  r.fused_bias = r.row_major && !r.accumulate && epilogue_fuses(g.activation) && (!g.bias || g.bias_stride == 1);
  return r;
}

// Offsets along dims [from, to) of the batch for entry `index` (row-major over them).
void batch_offsets(const Gemm& g, int from, int to, int64_t index, int64_t (&off)[4]) {
  for (int t = 0; t < 4; ++t) off[t] = 0;
  for (int i = to - 1; i >= from; --i) {
    const int64_t q = index / g.batch[i], at = index - q * g.batch[i];
    index = q;
    for (int t = 0; t < 4; ++t) off[t] += at * g.stride[t][i];
  }
}

const char* offset_by(const void* p, int64_t elements, DType t) {
  return static_cast<const char*>(p) + elements * static_cast<int64_t>(dtype_size(t));
}

// The call for kept-outer entry `o` and summed entry `s`; d is the accumulator (f32, row-major
// contiguous [kept..., m, n]) where r.accumulate.
LtCall lt_call(const Gemm& g, const GemmRun& r, int64_t o, int64_t s, void* accumulator) {
  int64_t outer_off[4], summed_off[4];
  const int inner_dim = r.batched ? r.kept - 1 : -1;
  batch_offsets(g, 0, r.batched ? r.kept - 1 : r.kept, o, outer_off);
  batch_offsets(g, r.kept, g.batch_rank, s, summed_off);
  auto inner_stride = [&](int t) { return inner_dim >= 0 ? g.stride[t][inner_dim] : 0; };
  const void* a = offset_by(g.a.data, outer_off[kGemmA] + summed_off[kGemmA], g.in);
  const void* b = offset_by(g.b.data, outer_off[kGemmB] + summed_off[kGemmB], g.in);
  LtCall c;
  if (g.batch_invariant) c.rows_dim = r.row_major ? 2 : 1;
  c.in = g.in;
  c.out = r.accumulate ? DType::f32 : g.out;
  c.tf32 = g.tf32;
  c.batch = r.inner;
  c.alpha = g.alpha;
  GemmMatrix dm = g.d;
  const void* d = offset_by(g.d.data, outer_off[kGemmD], g.out);
  int64_t d_stride = inner_stride(kGemmD);
  if (r.accumulate) {
    dm = {accumulator, g.n, 1};
    d = static_cast<char*>(accumulator) + o * r.inner * g.m * g.n * 4;
    d_stride = g.m * g.n;
  }
  // Beta: c was copied into d first (or d is c); the summed entries after the first add.
  c.beta = s > 0 ? 1.0 : (g.c.data ? g.beta : 0.0);
  if (r.row_major) {  // d^T (n x m) = b^T a^T
    c.m = g.n;
    c.n = g.m;
    c.k = g.k;
    c.a = lt_matrix(b, g.n, g.k, transposed(g.b), inner_stride(kGemmB));
    c.b = lt_matrix(a, g.k, g.m, transposed(g.a), inner_stride(kGemmA));
    c.d = lt_matrix(d, g.n, g.m, transposed(dm), d_stride);
  } else {
    c.m = g.m;
    c.n = g.n;
    c.k = g.k;
    c.a = lt_matrix(a, g.m, g.k, g.a, inner_stride(kGemmA));
    c.b = lt_matrix(b, g.k, g.n, g.b, inner_stride(kGemmB));
    c.d = lt_matrix(d, g.m, g.n, dm, d_stride);
  }
  if (r.fused_bias) {
    const bool bias = g.bias != nullptr;
    c.bias = g.bias;
    switch (g.activation) {
      case Activation::relu:
        c.epilogue = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
        break;
      case Activation::gelu_tanh:
        c.epilogue = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
        break;
      default:
        c.epilogue = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    }
  }
  return c;
}

// Every call of a Gemm that has work, in order: f(call).
template <class F>
Status for_each_call(const Gemm& g, void* accumulator, F&& f, bool first_only = false) {
  if (g.m == 0 || g.n == 0 || g.k == 0) return Status::ok();
  const GemmRun r = plan_run(g);
  if (r.inner == 0 || r.outer == 0 || r.summed == 0) return Status::ok();
  for (int64_t o = 0; o < r.outer; ++o)
    for (int64_t s = 0; s < r.summed; ++s) {
      if (Status st = f(lt_call(g, r, o, s, accumulator)); !st) return st;
      if (first_only) return Status::ok();
    }
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// The passes.

// The program's kernels, in this order, first by element (kVec false), then by 16-byte vector:
// matmul_result<T, act> for act 0..4, then <float, 0>; activation_forward<T, 1..4>;
// activation_backward<T, 1..4>; and after both, round_accumulator<T>, fill_ones<T>.
constexpr int kResultF32 = 5, kForward = 6, kBackward = 10, kVectorKernels = 14, kRound = 28, kOnes = 29;

// Whether a pass can step by 16-byte vectors of `element_bytes` elements: every tensor present
// contiguous over the walk (row-major) and 16-byte aligned, and the count whole vectors.
bool vectorizable(const device::MatmulPassParams& p, size_t element_bytes) {
  const int64_t vw = 16 / static_cast<int64_t>(element_bytes);
  if (p.total % vw != 0) return false;
  const void* data[3] = {p.src, p.pre, p.dst};
  for (int t = 0; t < 3; ++t) {
    if (!data[t]) continue;
    if (!aligned16(data[t])) return false;
    int64_t step = 1;
    for (int d = p.walk.rank - 1; d >= 0; --d) {
      if (p.walk.sizes[d] != 1 && p.walk.strides[t][d] != step) return false;
      step *= p.walk.sizes[d];
    }
  }
  return true;
}

Status launch_pass(const void* kernel, device::MatmulPassParams& params, const Stream& stream, const char* what) {
  if (params.total == 0) return Status::ok();
  // Enough blocks to fill the GPU several times over; each thread strides through the rest.
  const int64_t blocks = std::clamp<int64_t>((params.total + 255) / 256, 1, 132 * 32);
  void* args[] = {&params};
  return cuda_status(cudaLaunchKernel(kernel, dim3(static_cast<unsigned>(blocks)), dim3(256), args, 0, native(stream)),
                     what);
}

// A walk over [kept batch dims..., m, n] of a Gemm's result: src (c or the accumulator), -, dst (d).
device::Walk<3> result_walk(const Gemm& g, int kept, const GemmMatrix& src, const int64_t* src_batch) {
  device::Walk<3> w{};
  w.rank = kept + 2;
  for (int i = 0; i < kept; ++i) {
    w.sizes[i] = g.batch[i];
    w.strides[0][i] = src_batch ? src_batch[i] : 0;
    w.strides[2][i] = g.stride[kGemmD][i];
  }
  w.sizes[kept] = g.m;
  w.sizes[kept + 1] = g.n;
  w.strides[0][kept] = src.rs;
  w.strides[0][kept + 1] = src.cs;
  w.strides[2][kept] = g.d.rs;
  w.strides[2][kept + 1] = g.d.cs;
  return w;
}

int64_t kept_count(const Gemm& g, int kept) {
  int64_t n = 1;
  for (int i = 0; i < kept; ++i) n *= g.batch[i];
  return n;
}

// d = act(scale * src + bias) over the Gemm's result, src = c, d itself, or nothing.
Status result_pass(const jit::Module& m, const Gemm& g, int kept, const GemmMatrix* src, const int64_t* src_batch,
                   double scale, const void* bias, Activation act, const Stream& stream) {
  device::MatmulPassParams p{};
  p.src = src ? src->data : nullptr;
  p.bias = bias;
  p.bias_stride = g.bias_stride;
  p.dst = const_cast<void*>(g.d.data);
  p.total = kept_count(g, kept) * g.m * g.n;
  p.n = g.n;
  p.scale = scale;
  p.walk = result_walk(g, kept, src ? *src : GemmMatrix{}, src_batch);
  const int kernel = g.out == DType::f32 && g.in != DType::f32 ? kResultF32 : static_cast<int>(act);
  const int vec = vectorizable(p, dtype_size(g.out)) ? kVectorKernels : 0;
  return launch_pass(m.kernels[vec + kernel], p, stream, "matmul_result");
}

Status activation_pass(const jit::Module& m, const ActivationPass& pass, const Stream& stream) {
  device::MatmulPassParams p{};
  p.src = pass.src.data;
  p.pre = pass.pre.data;
  p.dst = pass.dst.data;
  p.total = pass.shape.numel();
  p.n = 1;
  const Strides* strides[3] = {&pass.src.strides, &pass.pre.strides, &pass.dst.strides};
  Strides none{};
  if (!pass.pre.data) strides[1] = &none;
  const Walker<3> w = make_walker<3>(pass.shape, strides);
  p.walk.rank = w.rank;
  for (int d = 0; d < kMaxRank; ++d) {
    p.walk.sizes[d] = w.sizes[d];
    for (int t = 0; t < 3; ++t) p.walk.strides[t][d] = w.strides[t][d];
  }
  const int act = static_cast<int>(pass.activation) - 1;
  const int vec = vectorizable(p, dtype_size(pass.dtype)) ? kVectorKernels : 0;
  return launch_pass(m.kernels[vec + (pass.backward ? kBackward : kForward) + act], p, stream, "matmul activation");
}

Status run_gemm(const LaunchContext& ctx, const MatmulProblem& p, const Gemm& g, const jit::Module& m,
                cublasLtHandle_t h) {
  if (g.m == 0 || g.n == 0) return Status::ok();
  const GemmRun r = plan_run(g);
  const int kept = r.kept;
  char* ws = static_cast<char*>(ctx.workspace.data);
  void* accumulator = ws + p.accumulator_offset;
  const size_t blas_limit = ctx.choice.workspace - p.blas_offset;
  // No products (k == 0, or an empty sum): d = beta * c, the bias and the activation.
  if (g.k == 0 || r.summed == 0) {
    int64_t c_batch[kMaxRank];
    for (int i = 0; i < kept; ++i) c_batch[i] = g.stride[kGemmC][i];
    const bool c = g.c.data && g.beta != 0.0;
    return result_pass(m, g, kept, c ? &g.c : nullptr, c ? c_batch : nullptr, g.beta, g.bias, g.activation, ctx.stream);
  }
  // c into d first, where it is another buffer (cuBLASLt then adds beta * d).
  if (g.c.data && g.beta != 0.0 && (g.c.data != g.d.data || g.c.rs != g.d.rs || g.c.cs != g.d.cs)) {
    int64_t c_batch[kMaxRank];
    for (int i = 0; i < kept; ++i) c_batch[i] = g.stride[kGemmC][i];
    if (Status s = result_pass(m, g, kept, &g.c, c_batch, 1.0, nullptr, Activation::none, ctx.stream); !s) return s;
  }
  Status s = for_each_call(g, accumulator, [&](const LtCall& c) -> Status {
    Expected<Algo> algo = algo_for(ctx.target.device, c, blas_limit, p.plan);
    if (!algo) return algo.status();
    LtDescriptors desc;
    if (Status st = describe(c, desc, p.plan); !st) return st;
    const float alpha32 = static_cast<float>(c.alpha), beta32 = static_cast<float>(c.beta);
    const bool f64 = c.in == DType::f64;
    const void* alpha = f64 ? static_cast<const void*>(&c.alpha) : &alpha32;
    const void* beta = f64 ? static_cast<const void*>(&c.beta) : &beta32;
    return blas_status(
        cublasLtMatmul(h, desc.op, alpha, c.a.data, desc.a, c.b.data, desc.b, beta, c.d.data, desc.d,
                       const_cast<void*>(c.d.data), desc.d, &algo->algo, algo->workspace ? ws + p.blas_offset : nullptr,
                       algo->workspace, native(ctx.stream)),
        p.plan, "cublasLtMatmul");
  });
  if (!s) return s;
  if (r.accumulate) {  // the f32 sums rounded into d
    device::MatmulPassParams q{};
    q.src = accumulator;
    q.dst = const_cast<void*>(g.d.data);
    q.total = kept_count(g, kept) * g.m * g.n;
    int64_t acc_batch[kMaxRank];
    int64_t step = g.m * g.n;
    for (int i = kept - 1; i >= 0; --i) {
      acc_batch[i] = step;
      step *= g.batch[i];
    }
    q.walk = result_walk(g, kept, GemmMatrix{accumulator, g.n, 1}, acc_batch);
    if (Status st = launch_pass(m.kernels[kRound], q, ctx.stream, "matmul round_accumulator"); !st) return st;
  }
  // The epilogue cuBLASLt did not apply, on d in place.
  if (!r.fused_bias && (g.bias || g.activation != Activation::none))
    return result_pass(m, g, kept, &g.d, g.stride[kGemmD], 1.0, g.bias, g.activation, ctx.stream);
  return Status::ok();
}

}  // namespace

// The passes' kernels for dtype t (kernel order above).
jit::Program matmul_program(DType t) {
  jit::Program p;
  const std::string T = jit::device_type(t);
  p.name = "matmul_passes<" + std::string(dtype_name(t)) + ">";
  p.source = "#include \"cuda/device/matmul.cuh\"\n";
  for (const char* vec : {"false", "true"}) {
    for (int a = 0; a <= 4; ++a)
      p.kernels.push_back("baracuda::device::matmul_result<" + T + ", " + std::to_string(a) + ", " + vec + ">");
    p.kernels.push_back(std::string("baracuda::device::matmul_result<float, 0, ") + vec + ">");
    for (const char* pass : {"activation_forward", "activation_backward"})
      for (int a = 1; a <= 4; ++a)
        p.kernels.push_back(std::string("baracuda::device::") + pass + "<" + T + ", " + std::to_string(a) + ", " + vec +
                            ">");
  }
  p.kernels.push_back("baracuda::device::round_accumulator<" + T + ">");
  p.kernels.push_back("baracuda::device::fill_ones<" + T + ">");
  return p;
}

Expected<const void*> matmul_kernels(const PlanTarget& target, DType dtype, std::string_view plan) {
  Expected<const jit::Module*> m = jit::load(matmul_program(dtype), target.arch, plan);
  if (!m) return m.status();
  return static_cast<const void*>(*m);
}

Expected<size_t> prepare_gemms(const PlanTarget& target, const MatmulProblem& p, size_t workspace_limit) {
  // cuBLASLt's workspace: what its heuristic's choice needs, at most 32 MiB (as PyTorch gives it on Hopper).
  // Asked again with the workspace the plan then has, as run asks (the answers are cached).
  size_t need = 0;
  for (size_t limit : {std::min<size_t>(workspace_limit, size_t{32} << 20), size_t{0}}) {
    if (limit == 0) limit = need;
    for (const Gemm& g : p.gemms) {
      // The first call alone: the others differ at most in their pointers' alignment, and run asks
      // for theirs within the workspace the plan then has (a batch may be billions of calls long).
      Status s = for_each_call(
          g, reinterpret_cast<void*>(uintptr_t{1} << 40),
          [&](const LtCall& c) -> Status {
            Expected<Algo> algo = algo_for(target.device, c, limit, p.plan);
            if (!algo) return algo.status();
            need = std::max(need, algo->workspace);
            return Status::ok();
          },
          true);
      if (!s) return s;
    }
  }
  return need;
}

Status launch(const LaunchContext& ctx, const MatmulProblem& p) {
  const jit::Module& m = *static_cast<const jit::Module*>(ctx.choice.kernels);
  Expected<cublasLtHandle_t> h = handle_for(ctx.target.device, p.plan);
  if (!h) return h.status();
  if (p.ones_count) {
    device::MatmulPassParams q{};
    q.dst = static_cast<char*>(ctx.workspace.data) + p.ones_offset;
    q.total = p.ones_count;
    if (Status s = launch_pass(m.kernels[kOnes], q, ctx.stream, "matmul fill_ones"); !s) return s;
  }
  for (const ActivationPass& pass : p.passes_before)
    if (Status s = activation_pass(m, pass, ctx.stream); !s) return s;
  for (const Gemm& g : p.gemms)
    if (Status s = run_gemm(ctx, p, g, m, *h); !s) return s;
  for (const ActivationPass& pass : p.passes_after)
    if (Status s = activation_pass(m, pass, ctx.stream); !s) return s;
  return Status::ok();
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {
std::vector<Program> matmul_programs() {
  std::vector<Program> out;
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16}) out.push_back(cuda::matmul_program(t));
  return out;
}
}  // namespace baracuda::detail::jit

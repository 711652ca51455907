// The matmul plans (Matmul, Linear, forward and backward): shapes as torch.matmul and F.linear take
// them, validation, and each plan's GEMMs and elementwise passes, built once here for both backends
// (ops/matmul_problem.hpp). On CUDA, select also chooses cuBLASLt's algorithms and compiles the
// passes' kernels, so run only launches.
#include "baracuda/ops/matmul.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/elementwise.hpp"
#include "ops/arg_views.hpp"
#include "ops/matmul_problem.hpp"
// (after the problem header, whose backend entry points it calls)
#include "ops/plan_impl.hpp"

namespace baracuda {

std::string_view activation_name(Activation activation) {
  switch (activation) {
    case Activation::none:
      return "none";
    case Activation::relu:
      return "relu";
    case Activation::gelu:
      return "gelu";
    case Activation::gelu_tanh:
      return "gelu_tanh";
    case Activation::silu:
      return "silu";
  }
  return "?";
}

}  // namespace baracuda

namespace baracuda::detail {

int64_t Gemm::batch_count() const {
  int64_t count = 1;
  for (int i = 0; i < batch_rank; ++i) count *= batch[i];
  return count;
}

int Gemm::reduced_dims() const {
  int r = 0;
  while (r < batch_rank && stride[kGemmD][batch_rank - 1 - r] == 0 && batch[batch_rank - 1 - r] != 1) ++r;
  return r;
}

bool gemm_layout_ok(int64_t rows, int64_t cols, int64_t& rs, int64_t& cs) {
  if (rows <= 1 && cols <= 1) {
    rs = cs = 1;
    return true;
  }
  if (rows <= 1) {  // only cs matters
    if (cs == 1) {
      rs = cols;
      return true;
    }
    rs = 1;
    return cs >= 1;
  }
  if (cols <= 1) {  // only rs matters
    if (rs == 1) {
      cs = rows;
      return true;
    }
    cs = 1;
    return rs >= 1;
  }
  return (cs == 1 && rs >= cols) || (rs == 1 && cs >= rows);
}

Status gemm_layout_refusal(std::string_view plan, const std::string& field, int64_t rs, int64_t cs) {
  return plan_error(StatusCode::unsupported, plan, field,
                    "its matrix dims (strides " + std::to_string(rs) + ", " + std::to_string(cs) +
                        ") need a unit stride along one and, along the other, a stride of at least the first's "
                        "extent (BLAS and cuBLASLt take no other layout): copy it to a contiguous view");
}

int64_t gemm_accumulator_elements(const Gemm& g) {
  if (g.out == DType::f32 || g.out == DType::f64 || g.reduced_dims() == 0) return 0;
  int64_t kept = 1;
  for (int i = 0; i < g.batch_rank - g.reduced_dims(); ++i) kept *= g.batch[i];
  return kept * g.m * g.n;
}

void simplify(Gemm& g) {
  // Size-1 dims dropped; then summed dims (d's stride 0) moved innermost, keeping each group's order.
  int rank = 0;
  int64_t sizes[kMaxRank], strides[4][kMaxRank];
  for (bool summed : {false, true})
    for (int i = 0; i < g.batch_rank; ++i) {
      if (g.batch[i] == 1 || (g.stride[kGemmD][i] == 0) != summed) continue;
      sizes[rank] = g.batch[i];
      for (int t = 0; t < 4; ++t) strides[t][rank] = g.stride[t][i];
      ++rank;
    }
  // Adjacent dims every tensor steps through as one merge (a summed dim never with a kept one).
  int merged = 0;
  for (int i = 0; i < rank; ++i) {
    bool merge = merged > 0 && (strides[kGemmD][i] == 0) == (strides[kGemmD][merged - 1] == 0);
    for (int t = 0; t < 4 && merge; ++t) merge = strides[t][merged - 1] == strides[t][i] * sizes[i];
    if (merge) {
      sizes[merged - 1] *= sizes[i];
      for (int t = 0; t < 4; ++t) strides[t][merged - 1] = strides[t][i];
      continue;
    }
    sizes[merged] = sizes[i];
    for (int t = 0; t < 4; ++t) strides[t][merged] = strides[t][i];
    ++merged;
  }
  g.batch_rank = merged;
  for (int i = 0; i < merged; ++i) {
    g.batch[i] = sizes[i];
    for (int t = 0; t < 4; ++t) g.stride[t][i] = strides[t][i];
  }
  // Fold the innermost dim into m (b constant along it; a, c, d continuing their rows there) or, if
  // summed, into k (a continuing along k, b along its rows), while one folds. The bias, one per
  // column, folds with the rows. (A vector's missing dim has stride 0: it never folds.)
  while (g.batch_rank > 0) {
    const int i = g.batch_rank - 1;
    const int64_t size = g.batch[i];
    const bool summed = g.stride[kGemmD][i] == 0;
    auto continues = [&](int t, const GemmMatrix& mat, int64_t along, bool rows) {
      if (t == kGemmC && !g.c.data) return true;
      return g.stride[t][i] == along * (rows ? mat.rs : mat.cs);
    };
    // A fold keeps every matrix in a layout BLAS takes: a 1-row matrix's other stride is free, and
    // stacking its rows along a batch stride can make one it does not take.
    auto takes = [](int64_t rows, int64_t cols, GemmMatrix mat) { return gemm_layout_ok(rows, cols, mat.rs, mat.cs); };
    bool fold = false;
    if (!summed && g.stride[kGemmB][i] == 0 && g.m > 0) {
      const int64_t m = g.m * size;
      fold = continues(kGemmA, g.a, g.m, true) && continues(kGemmC, g.c, g.m, true) &&
             continues(kGemmD, g.d, g.m, true) && takes(m, g.k, g.a) && (!g.c.data || takes(m, g.n, g.c)) &&
             takes(m, g.n, g.d);
      if (fold) g.m = m;
    } else if (summed && g.k > 0) {
      const int64_t k = g.k * size;
      fold = continues(kGemmA, g.a, g.k, false) && continues(kGemmB, g.b, g.k, true) && takes(g.m, k, g.a) &&
             takes(k, g.n, g.b);
      if (fold) g.k = k;
    }
    if (!fold) break;
    --g.batch_rank;
  }
}

namespace {

// ---------------------------------------------------------------------------------------------
// Shapes.

// op(a) [batch..., m, k] @ op(b) [batch..., k, n]: the broadcast batch and the sizes.
struct MatmulShapes {
  Shape batch;  // broadcast batch dims
  int64_t m = 1, k = 1, n = 1;
  bool a_vector = false, b_vector = false;
  Shape out;
};

Expected<MatmulShapes> matmul_shapes(std::string_view plan, const MatmulDescriptor& d) {
  for (auto [field, shape] : {std::pair{"descriptor.a", &d.a}, std::pair{"descriptor.b", &d.b}}) {
    if (Status s = check_shape(plan, field, *shape); !s) return s;
    if (shape->rank < 1)
      return plan_error(StatusCode::invalid_problem, plan, std::string(field) + ".rank",
                        "a matmul operand has rank 1 or more, not 0");
  }
  MatmulShapes s;
  s.a_vector = d.a.rank == 1;
  s.b_vector = d.b.rank == 1;
  if (s.a_vector && d.transpose_a)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.transpose_a", "a is 1-D: nothing to transpose");
  if (s.b_vector && d.transpose_b)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.transpose_b", "b is 1-D: nothing to transpose");
  const int ra = d.a.rank, rb = d.b.rank;
  if (s.a_vector) {
    s.k = d.a.dims[0];
  } else {
    s.m = d.a.dims[ra - (d.transpose_a ? 1 : 2)];
    s.k = d.a.dims[ra - (d.transpose_a ? 2 : 1)];
  }
  int64_t kb = 0;
  if (s.b_vector) {
    kb = d.b.dims[0];
  } else {
    kb = d.b.dims[rb - (d.transpose_b ? 1 : 2)];
    s.n = d.b.dims[rb - (d.transpose_b ? 2 : 1)];
  }
  if (kb != s.k)
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.b",
                      "op(b) has " + std::to_string(kb) + " rows, op(a) " + std::to_string(s.k) + " columns (K)");
  const int ba = s.a_vector ? 0 : ra - 2, bb = s.b_vector ? 0 : rb - 2;
  s.batch.rank = std::max(ba, bb);
  for (int i = 0; i < s.batch.rank; ++i) {
    const int ia = i - (s.batch.rank - ba), ib = i - (s.batch.rank - bb);
    const int64_t da = ia >= 0 ? d.a.dims[ia] : 1, db = ib >= 0 ? d.b.dims[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.b",
                        "batch dim " + std::to_string(i) + " (" + std::to_string(db) +
                            ") does not broadcast against a's (" + std::to_string(da) + ")");
    s.batch.dims[i] = da == 1 ? db : da;
  }
  s.out = s.batch;
  if (!s.a_vector) s.out.dims[s.out.rank++] = s.m;
  if (!s.b_vector) {
    if (s.out.rank >= kMaxRank)
      return plan_error(StatusCode::invalid_problem, plan, "descriptor.b",
                        "out would have rank " + std::to_string(s.out.rank + 1) + ", past " + std::to_string(kMaxRank));
    s.out.dims[s.out.rank++] = s.n;
  }
  if (Status st = check_shape(plan, "out", s.out); !st) return st;
  return s;
}

Status check_scalars(std::string_view plan, const MatmulDescriptor& d) {
  if (!std::isfinite(d.alpha))
    return plan_error(StatusCode::invalid_problem, plan, "descriptor.alpha", "is not finite");
  if (!std::isfinite(d.beta)) return plan_error(StatusCode::invalid_problem, plan, "descriptor.beta", "is not finite");
  const DType out = d.out_dtype.value_or(d.dtype);
  const bool sixteen = d.dtype == DType::f16 || d.dtype == DType::bf16;
  if (out != d.dtype && !(sixteen && out == DType::f32))
    return plan_error(StatusCode::unsupported, plan, "descriptor.out_dtype",
                      std::string(valid_dtype(out) ? dtype_name(out) : "?") + " is neither dtype (" +
                          std::string(dtype_name(d.dtype)) + ") nor f32 with 16-bit inputs");
  return Status::ok();
}

// A view's matrix (its last two dims, or its one dim as a row / column) and its batch strides laid
// along `batch` (right-aligned; 0 where it broadcasts).
struct Placed {
  GemmMatrix matrix;
  int64_t batch_strides[kMaxRank] = {};
};
// `rows_dim` / `cols_dim`: which stored dims (counted from the end, 1 = last) are the matrix's rows
// and columns; 0 for a dim the view lacks (a vector's).
Placed place(const AnyTensorRef& v, const Shape& batch, int rows_dim, int cols_dim) {
  Placed p;
  p.matrix.data = v.data;
  const int r = v.shape.rank;
  if (rows_dim) p.matrix.rs = v.strides[r - rows_dim];
  if (cols_dim) p.matrix.cs = v.strides[r - cols_dim];
  const int own = r - std::max(rows_dim, cols_dim);
  for (int i = 0; i < batch.rank; ++i) {
    const int j = i - (batch.rank - own);
    p.batch_strides[i] = j >= 0 && v.shape.dims[j] != 1 ? v.strides[j] : 0;
  }
  return p;
}

void set_slot(Gemm& g, GemmSlot slot, const Placed& p) {
  GemmMatrix* m[] = {&g.a, &g.b, &g.c, &g.d};
  *m[slot] = p.matrix;
  for (int i = 0; i < g.batch_rank; ++i) g.stride[slot][i] = p.batch_strides[i];
}

Gemm gemm_over(const Shape& batch, DType in, DType out, int64_t m, int64_t n, int64_t k) {
  Gemm g;
  g.in = in;
  g.out = out;
  g.m = m;
  g.n = n;
  g.k = k;
  g.batch_rank = batch.rank;
  for (int i = 0; i < batch.rank; ++i) g.batch[i] = batch.dims[i];
  return g;
}

// The matrix dims (from the end) of op(x): rows, cols; a vector's missing dim is 0.
std::pair<int, int> op_dims(bool vector, bool transpose, bool is_a) {
  if (vector) return is_a ? std::pair{0, 1} : std::pair{1, 0};
  return transpose ? std::pair{1, 2} : std::pair{2, 1};
}

// ---------------------------------------------------------------------------------------------
// The plans' work.

constexpr size_t kWorkspaceAlign = 256;
size_t aligned(size_t bytes) { return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign; }

// Where a plan's workspace regions lie: [dpre][ones][f32 accumulator][cuBLASLt's].
struct WorkspaceLayout {
  size_t dpre = 0, ones = 0, accumulator = 0, blas = 0;
};

MatmulProblem matmul_forward(const MatmulDescriptor& d, const MatmulShapes& s, const MatmulArgs& a) {
  MatmulProblem p;
  p.plan = "MatmulPlan";
  const DType out = d.out_dtype.value_or(d.dtype);
  Gemm g = gemm_over(s.batch, d.dtype, out, s.m, s.n, s.k);
  g.alpha = d.alpha;
  g.beta = d.has_c ? d.beta : 0.0;
  g.tf32 = d.allow_tf32;
  const auto [ar, ac] = op_dims(s.a_vector, d.transpose_a, true);
  const auto [br, bc] = op_dims(s.b_vector, d.transpose_b, false);
  set_slot(g, kGemmA, place(a.a, s.batch, ar, ac));
  set_slot(g, kGemmB, place(a.b, s.batch, br, bc));
  const int orows = s.a_vector ? 0 : (s.b_vector ? 1 : 2), ocols = s.b_vector ? 0 : 1;
  if (d.has_c) set_slot(g, kGemmC, place(a.c, s.batch, orows, ocols));
  set_slot(g, kGemmD, place(a.out, s.batch, orows, ocols));
  p.gemms.push_back(g);
  return p;
}

// da = alpha * dout @ op(b)^T, written through op: da's view as op(a) [m, k]; db likewise as op(b).
// (An empty gradient has no GEMM: its strides were cleared, so its batch dims would look summed.)
MatmulProblem matmul_backward(const MatmulDescriptor& d, const MatmulShapes& s, const MatmulBackwardArgs& a,
                              const WorkspaceLayout& w) {
  MatmulProblem p;
  p.plan = "MatmulBackwardPlan";
  p.accumulator_offset = w.accumulator;
  p.blas_offset = w.blas;
  const auto [ar, ac] = op_dims(s.a_vector, d.transpose_a, true);
  const auto [br, bc] = op_dims(s.b_vector, d.transpose_b, false);
  const int orows = s.a_vector ? 0 : (s.b_vector ? 1 : 2), ocols = s.b_vector ? 0 : 1;
  if (a.da.data && a.da.numel() > 0) {  // [m, k] = dout [m, n] @ op(b)^T [n, k]
    Gemm g = gemm_over(s.batch, d.dtype, d.dtype, s.m, s.k, s.n);
    g.alpha = d.alpha;
    g.tf32 = d.allow_tf32;
    set_slot(g, kGemmA, place(a.dout, s.batch, orows, ocols));
    set_slot(g, kGemmB, place(a.b, s.batch, bc, br));
    set_slot(g, kGemmD, place(a.da, s.batch, ar, ac));
    p.gemms.push_back(g);
  }
  if (a.db.data && a.db.numel() > 0) {  // [k, n] = op(a)^T [k, m] @ dout [m, n]
    Gemm g = gemm_over(s.batch, d.dtype, d.dtype, s.k, s.n, s.m);
    g.alpha = d.alpha;
    g.tf32 = d.allow_tf32;
    set_slot(g, kGemmA, place(a.a, s.batch, ac, ar));
    set_slot(g, kGemmB, place(a.dout, s.batch, orows, ocols));
    set_slot(g, kGemmD, place(a.db, s.batch, br, bc));
    p.gemms.push_back(g);
  }
  return p;
}

// x [lead..., in] as rows: batch = lead[:-1], m = lead[-1] (1 for a 1-D x).
Shape linear_batch(const LinearDescriptor& d) {
  Shape b;
  b.rank = std::max(0, d.x.rank - 2);
  for (int i = 0; i < b.rank; ++i) b.dims[i] = d.x.dims[i];
  return b;
}
int64_t linear_rows(const LinearDescriptor& d) { return d.x.rank >= 2 ? d.x.dims[d.x.rank - 2] : 1; }
int64_t in_features(const LinearDescriptor& d) { return d.x.dims[d.x.rank - 1]; }
Shape linear_out_shape(const LinearDescriptor& d) {
  Shape y = d.x;
  y.dims[y.rank - 1] = d.out_features;
  return y;
}
// The rows dim (from the end) of an [lead..., features] view: 2, or 0 for a 1-D one.
int rows_dim(const LinearDescriptor& d) { return d.x.rank >= 2 ? 2 : 0; }

MatmulProblem linear_forward(const LinearDescriptor& d, const LinearArgs& a) {
  MatmulProblem p;
  p.plan = "LinearPlan";
  const Shape batch = linear_batch(d);
  Gemm g = gemm_over(batch, d.dtype, d.dtype, linear_rows(d), d.out_features, in_features(d));
  g.tf32 = d.allow_tf32;
  set_slot(g, kGemmA, place(a.x, batch, rows_dim(d), 1));
  set_slot(g, kGemmB, place(a.weight, batch, 1, 2));  // weight^T [in, out]
  g.bias = d.has_bias ? a.bias.data : nullptr;
  g.bias_stride = d.has_bias && d.out_features > 1 ? a.bias.strides[0] : 1;
  const bool separate = d.activation != Activation::none && a.pre.data;
  set_slot(g, kGemmD, place(separate ? AnyTensorRef(a.pre) : AnyTensorRef(a.y), batch, rows_dim(d), 1));
  g.activation = separate ? Activation::none : d.activation;
  p.gemms.push_back(g);
  if (separate) p.passes_after.push_back({d.activation, false, d.dtype, linear_out_shape(d), a.pre, {}, a.y});
  return p;
}

MatmulProblem linear_backward(const LinearDescriptor& d, const LinearBackwardArgs& a, const Workspace& ws,
                              const WorkspaceLayout& w) {
  MatmulProblem p;
  p.plan = "LinearBackwardPlan";
  p.accumulator_offset = w.accumulator;
  p.blas_offset = w.blas;
  const Shape batch = linear_batch(d), y_shape = linear_out_shape(d);
  const int64_t rows = linear_rows(d), in = in_features(d), out = d.out_features;
  AnyTensorRef dpre = a.dy;
  if (d.activation != Activation::none) {
    AnyTensorMut scratch{static_cast<char*>(ws.data) + w.dpre, d.dtype, y_shape, contiguous_strides(y_shape),
                         y_shape.numel()};
    p.passes_before.push_back({d.activation, true, d.dtype, y_shape, a.dy, a.pre, scratch});
    dpre = scratch;
  }
  const int rd = rows_dim(d);
  if (a.dx.data && a.dx.numel() > 0) {  // dx [rows, in] = dpre [rows, out] @ weight [out, in]
    Gemm g = gemm_over(batch, d.dtype, d.dtype, rows, in, out);
    g.tf32 = d.allow_tf32;
    set_slot(g, kGemmA, place(dpre, batch, rd, 1));
    set_slot(g, kGemmB, place(a.weight, batch, 2, 1));
    set_slot(g, kGemmD, place(a.dx, batch, rd, 1));
    p.gemms.push_back(g);
  }
  if (a.dweight.data &&
      a.dweight.numel() > 0) {  // dweight [out, in] = dpre^T [out, rows] @ x [rows, in], summed over batch
    Gemm g = gemm_over(batch, d.dtype, d.dtype, out, in, rows);
    g.tf32 = d.allow_tf32;
    set_slot(g, kGemmA, place(dpre, batch, 1, rd));
    set_slot(g, kGemmB, place(a.x, batch, rd, 1));
    set_slot(g, kGemmD, place(a.dweight, batch, 2, 1));
    p.gemms.push_back(g);
  }
  if (a.dbias.data && a.dbias.numel() > 0) {  // dbias [out, 1] = dpre^T [out, rows] @ ones [rows, 1], summed over batch
    Gemm g = gemm_over(batch, d.dtype, d.dtype, out, 1, rows);
    set_slot(g, kGemmA, place(dpre, batch, 1, rd));
    p.ones_count = std::max<int64_t>(1, batch.numel() * rows);
    p.ones_dtype = d.dtype;
    p.ones_offset = w.ones;
    Shape ones_shape = batch;
    ones_shape.dims[ones_shape.rank++] = rows;
    ones_shape.dims[ones_shape.rank++] = 1;
    const AnyTensorRef ones{static_cast<char*>(ws.data) + w.ones, d.dtype, ones_shape, contiguous_strides(ones_shape),
                            ones_shape.numel()};
    set_slot(g, kGemmB, place(ones, batch, 2, 1));
    set_slot(g, kGemmD, place(a.dbias, batch, 1, 0));
    p.gemms.push_back(g);
  }
  return p;
}

// ---------------------------------------------------------------------------------------------
// Hooks.

constexpr VariantInfo kVariants[] = {
    {"blas", true, true, true,
     "CPU: oneDNN (2^20 flops and more) or OpenBLAS; CUDA: cuBLASLt, algorithm chosen at select"},
    {"batch_invariant", true, true, true,
     "the forward plans' rows bit-identical whatever the other rows and their count (PlanPreference::"
     "batch_invariant): CPU: the library's fixed-order sums; CUDA: cuBLASLt, one algorithm a layout whatever M, "
     "no split-K"},
};
constexpr int kBatchInvariant = 1;  // kVariants' index

// Every matrix of the plan's GEMMs in a layout BLAS takes, named by its argument.
template <class Args>
Status check_layouts(std::string_view plan, std::span<const ArgField<Args>> fields, const Args& args,
                     const MatmulProblem& p) {
  for (const Gemm& g : p.gemms) {
    if (g.batch_count() == 0) continue;  // empty views: their strides are unchecked
    const std::pair<const GemmMatrix*, std::pair<int64_t, int64_t>> mats[] = {
        {&g.a, {g.m, g.k}}, {&g.b, {g.k, g.n}}, {&g.c, {g.m, g.n}}, {&g.d, {g.m, g.n}}};
    for (const auto& [mat, dims] : mats) {
      if (!mat->data || dims.first == 0 || dims.second == 0) continue;
      int64_t rs = mat->rs, cs = mat->cs;
      if (gemm_layout_ok(dims.first, dims.second, rs, cs)) continue;
      std::string name = "a matrix operand";
      for (const ArgField<Args>& f : fields)
        if (f.get(args).data == mat->data) name = "args." + std::string(f.name);
      return gemm_layout_refusal(plan, name, mat->rs, mat->cs);
    }
  }
  return Status::ok();
}

// A fake, contiguous and 256-byte aligned view of each argument, for choosing the GEMMs at select.
template <class Args>
Args contiguous_args(std::span<const ArgField<Args>> fields, std::span<const ArgSpec> specs) {
  Args a{};
  uintptr_t next = 4096;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!specs[i].present) continue;
    const Shape& s = specs[i].shape;
    AnyTensorMut v{reinterpret_cast<void*>(next), specs[i].dtype, s, contiguous_strides(s), s.numel()};
    fields[i].set(a, v);
    next += aligned(static_cast<size_t>(std::max<int64_t>(1, s.numel())) * dtype_size(specs[i].dtype));
  }
  return a;
}

// The most multiply-adds one CPU product may ask for, and a product's count (saturating).
constexpr int64_t kCpuMultiplyAdds = int64_t{1} << 40;
int64_t product_of(std::initializer_list<int64_t> sizes) {
  int64_t p = 1;
  for (int64_t s : sizes)
    if (__builtin_mul_overflow(p, std::max<int64_t>(s, 0), &p)) return INT64_MAX;
  return p;
}

// What the four plans' hooks share, over each one's own (Hooks): arg_specs, layout, build,
// nothing_to_do. The choice: on CUDA, the GEMMs' algorithms for contiguous, aligned views (so the
// workspace cuBLASLt needs) and the passes' kernels.
template <class Hooks, class Descriptor, class Args>
struct MatmulFamilyHooks {
  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference& pref,
                                     std::optional<int> forced) {
    const WorkspaceLayout layout = Hooks::layout(t, d);
    PlanChoice c;
    c.variant = forced.value_or(pref.batch_invariant && Hooks::kRowWise ? kBatchInvariant : 0);
    if (c.variant == kBatchInvariant && !Hooks::kRowWise)
      return plan_error(StatusCode::unsupported, Hooks::kPlan, "preference.variant",
                        "batch_invariant is the forward plans' (a weight's gradient sums over every row)");
    c.workspace = layout.blas;
    // (Views broadcast by zero strides can describe products far larger than their memory.)
    if (t.backend == Backend::cpu && Hooks::multiply_adds(d) > kCpuMultiplyAdds)
      return plan_error(StatusCode::unsupported, Hooks::kPlan, "descriptor",
                        "the CPU takes at most 2^40 multiply-adds a product (hours of work past that)");
    if (t.backend == Backend::cpu || Hooks::nothing_to_do(d)) return c;
#if BARACUDA_HAS_CUDA
    std::array<ArgSpec, std::size(Hooks::kFields)> specs{};
    Hooks::arg_specs(d, specs);
    const Args args = contiguous_args<Args>(Hooks::kFields, specs);
    const MatmulProblem p =
        built(d, args, Workspace{reinterpret_cast<void*>(uintptr_t{1} << 40), layout.blas}, layout, c.variant);
    const size_t limit = pref.workspace_limit > layout.blas ? pref.workspace_limit - layout.blas : 0;
    Expected<size_t> blas = cuda::prepare_gemms(t, p, limit);
    if (!blas) return blas.status();
    c.workspace = layout.blas + *blas;
    Expected<const void*> kernels = cuda::matmul_kernels(t, d.dtype, Hooks::kSchema.plan);
    if (!kernels) return kernels.status();
    c.kernels = *kernels;
#else
    static_cast<void>(pref);
#endif
    return c;
  }

  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice& c) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = acc_dtype(d.dtype);
    g.tf32 = d.allow_tf32 && d.dtype == DType::f32;
    g.batch_invariant = c.variant == kBatchInvariant;
    return g;
  }

  static KernelShape kernel(const PlanTarget&, const Descriptor&, const PlanChoice& c, const Args* a) {
    KernelShape k{std::string(kVariants[c.variant].name), Layout::contiguous};
    if (a) k.layout = layout_of(given_views<Args>(Hooks::kFields, *a));
    return k;
  }

  static MatmulProblem problem(const LaunchContext& ctx, const Descriptor& d, const Args& a) {
    return built(d, a, ctx.workspace, Hooks::layout(ctx.target, d), ctx.choice.variant);
  }

  // The plan's GEMMs as the backends run them: simplified, and batch-invariant with that variant.
  static MatmulProblem built(const Descriptor& d, const Args& a, const Workspace& ws, const WorkspaceLayout& layout,
                             int variant) {
    MatmulProblem p = Hooks::build(d, a, ws, layout);
    for (Gemm& g : p.gemms) {
      simplify(g);
      g.batch_invariant = variant == kBatchInvariant;
    }
    return p;
  }
};

constexpr InPlace kAddmmInPlace[] = {{"out", "c"}};

template <bool kBackward>
struct MatmulHooks : MatmulFamilyHooks<MatmulHooks<kBackward>, MatmulDescriptor,
                                       std::conditional_t<kBackward, MatmulBackwardArgs, MatmulArgs>> {
  using Descriptor = MatmulDescriptor;
  using Args = std::conditional_t<kBackward, MatmulBackwardArgs, MatmulArgs>;
  static constexpr std::string_view kPlan = kBackward ? "MatmulBackwardPlan" : "MatmulPlan";
  static constexpr bool kRowWise = !kBackward;  // a row of out from a row of a alone
  static constexpr OpSchema kSchema{kPlan, kBackward ? "matmul_backward" : "matmul", "matmul", kFloats, {}, kVariants};
  static constexpr auto fields() {
    if constexpr (kBackward)
      return std::array<ArgField<Args>, 5>{{{"dout", &Args::dout},
                                            {"a", &Args::a},
                                            {"b", &Args::b},
                                            {"da", nullptr, &Args::da},
                                            {"db", nullptr, &Args::db}}};
    else
      return std::array<ArgField<Args>, 4>{
          {{"a", &Args::a}, {"b", &Args::b}, {"c", &Args::c}, {"out", nullptr, &Args::out}}};
  }
  static constexpr auto kFields = fields();
  // out may be c exactly (addmm in place); no output may be a or b (read throughout).
  static constexpr std::span<const InPlace> kInPlace =
      kBackward ? std::span<const InPlace>() : std::span<const InPlace>(kAddmmInPlace);

  static Status check(const Descriptor& d) {
    if (Status s = check_scalars(kPlan, d); !s) return s;
    if (kBackward && d.out_dtype.value_or(d.dtype) != d.dtype)
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.out_dtype",
                        "the backward takes dout in dtype (" + std::string(dtype_name(d.dtype)) + ")");
    return matmul_shapes(kPlan, d).status();
  }
  static MatmulShapes shapes(const Descriptor& d) { return *matmul_shapes(kPlan, d); }
  static int64_t multiply_adds(const Descriptor& d) {
    const MatmulShapes s = shapes(d);
    return product_of({s.batch.numel(), s.m, s.n, s.k});
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    const MatmulShapes s = shapes(d);
    const DType out = d.out_dtype.value_or(d.dtype);
    auto set = [&](int i, DType dtype, const Shape& shape, bool present, bool optional = false) {
      specs[i].dtype = dtype;
      specs[i].shape = shape;
      specs[i].present = present;
      specs[i].optional = optional;
    };
    if constexpr (kBackward) {
      set(0, out, s.out, true);
      set(1, d.dtype, d.a, true);
      set(2, d.dtype, d.b, true);
      set(3, d.dtype, d.a, true, true);
      set(4, d.dtype, d.b, true, true);
    } else {
      set(0, d.dtype, d.a, true);
      set(1, d.dtype, d.b, true);
      set(2, out, s.out, d.has_c);
      set(3, out, s.out, true);
    }
  }

  static WorkspaceLayout layout(const PlanTarget& t, const Descriptor& d) {
    WorkspaceLayout w;
    // The backward's f32 accumulator (CUDA, 16-bit gradients summed over broadcast batch dims): as
    // large as the larger operand at most.
    if (kBackward && t.backend == Backend::cuda && dtype_size(d.dtype) == 2 && std::max(d.a.rank, d.b.rank) > 2)
      w.blas = aligned(static_cast<size_t>(std::max(d.a.numel(), d.b.numel())) * 4);  // [accumulator][cuBLASLt's]
    return w;
  }

  static bool nothing_to_do(const Descriptor& d) {
    const MatmulShapes s = shapes(d);
    return kBackward ? d.a.numel() == 0 && d.b.numel() == 0 : s.out.numel() == 0;
  }

  static MatmulProblem build(const Descriptor& d, const Args& a, const Workspace&, const WorkspaceLayout& w) {
    if constexpr (kBackward)
      return matmul_backward(d, shapes(d), a, w);
    else
      return matmul_forward(d, shapes(d), a);
  }

  static Status check_args(const PlanTarget&, const Descriptor& d, const PlanChoice&, const Args& a) {
    return check_layouts<Args>(kPlan, kFields, a, build(d, a, {}, {}));
  }
};

template <bool kBackward>
struct LinearHooks : MatmulFamilyHooks<LinearHooks<kBackward>, LinearDescriptor,
                                       std::conditional_t<kBackward, LinearBackwardArgs, LinearArgs>> {
  using Descriptor = LinearDescriptor;
  using Args = std::conditional_t<kBackward, LinearBackwardArgs, LinearArgs>;
  static constexpr std::string_view kPlan = kBackward ? "LinearBackwardPlan" : "LinearPlan";
  static constexpr bool kRowWise = !kBackward;
  static constexpr OpSchema kSchema{kPlan, kBackward ? "linear_backward" : "linear", "matmul", kFloats, {}, kVariants};
  static constexpr auto fields() {
    if constexpr (kBackward)
      return std::array<ArgField<Args>, 7>{{{"dy", &Args::dy},
                                            {"x", &Args::x},
                                            {"weight", &Args::weight},
                                            {"pre", &Args::pre},
                                            {"dx", nullptr, &Args::dx},
                                            {"dweight", nullptr, &Args::dweight},
                                            {"dbias", nullptr, &Args::dbias}}};
    else
      return std::array<ArgField<Args>, 5>{{{"x", &Args::x},
                                            {"weight", &Args::weight},
                                            {"bias", &Args::bias},
                                            {"y", nullptr, &Args::y},
                                            {"pre", nullptr, &Args::pre}}};
  }
  static constexpr auto kFields = fields();

  static Status check(const Descriptor& d) {
    if (Status s = check_shape(kPlan, "descriptor.x", d.x); !s) return s;
    if (d.x.rank < 1)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.x.rank", "x needs its features dim: rank 0");
    if (d.out_features < 0)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.out_features",
                        std::to_string(d.out_features) + " is negative");
    if (activation_name(d.activation) == "?")
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.activation",
                        std::to_string(static_cast<int>(d.activation)) + " is no Activation");
    return check_shape(kPlan, "descriptor.out_features", linear_out_shape(d));
  }

  static int64_t multiply_adds(const Descriptor& d) {
    return product_of({linear_batch(d).numel(), linear_rows(d), in_features(d), d.out_features});
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    const Shape y = linear_out_shape(d), w{d.out_features, in_features(d)}, bias{d.out_features};
    const bool act = d.activation != Activation::none;
    auto set = [&](int i, const Shape& shape, bool present, bool optional = false) {
      specs[i].dtype = d.dtype;
      specs[i].shape = shape;
      specs[i].present = present;
      specs[i].optional = optional;
    };
    if constexpr (kBackward) {
      set(0, y, true);
      set(1, d.x, true);
      set(2, w, true);
      set(3, y, act);
      set(4, d.x, true, true);
      set(5, w, true, true);
      set(6, bias, d.has_bias, true);
    } else {
      set(0, d.x, true);
      set(1, w, true);
      set(2, bias, d.has_bias);
      set(3, y, true);
      set(4, y, act, true);
    }
  }

  static WorkspaceLayout layout(const PlanTarget& t, const Descriptor& d) {
    WorkspaceLayout w;
    if constexpr (!kBackward) return w;
    size_t at = 0;
    const Shape y = linear_out_shape(d);
    w.dpre = at;
    if (d.activation != Activation::none) at += aligned(static_cast<size_t>(y.numel()) * dtype_size(d.dtype));
    w.ones = at;
    if (d.has_bias)
      at += aligned(static_cast<size_t>(std::max<int64_t>(1, linear_batch(d).numel() * linear_rows(d))) *
                    dtype_size(d.dtype));
    w.accumulator = at;
    if (t.backend == Backend::cuda && dtype_size(d.dtype) == 2 && d.x.rank >= 3)
      at += aligned(static_cast<size_t>(d.out_features * (in_features(d) + 1)) * 4);
    w.blas = at;
    return w;
  }

  static bool nothing_to_do(const Descriptor& d) {
    const int64_t y = linear_out_shape(d).numel();
    return kBackward ? d.x.numel() == 0 && d.out_features == 0 : y == 0;
  }

  static MatmulProblem build(const Descriptor& d, const Args& a, const Workspace& ws, const WorkspaceLayout& w) {
    if constexpr (kBackward)
      return linear_backward(d, a, ws, w);
    else
      return linear_forward(d, a);
  }

  // (No output may be an input: the GEMMs read theirs throughout; pre is read after y's GEMM.)
  static Status check_args(const PlanTarget&, const Descriptor& d, const PlanChoice&, const Args& a) {
    Workspace fake{reinterpret_cast<void*>(uintptr_t{1} << 40), 0};
    return check_layouts<Args>(kPlan, kFields, a, build(d, a, fake, {}));
  }
};

}  // namespace

template <>
struct OpHooks<MatmulOp> : MatmulHooks<false> {};
template <>
struct OpHooks<MatmulBackwardOp> : MatmulHooks<true> {};
template <>
struct OpHooks<LinearOp> : LinearHooks<false> {};
template <>
struct OpHooks<LinearBackwardOp> : LinearHooks<true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<MatmulOp>;
template class Plan<MatmulBackwardOp>;
template class Plan<LinearOp>;
template class Plan<LinearBackwardOp>;
}  // namespace baracuda

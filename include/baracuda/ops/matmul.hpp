#pragma once
// Matrix products: the GPU's through cuBLASLt, the CPU's through oneDNN (f32 and 16-bit products of
// 2^20 flops and more: its AMX / AVX-512 kernels) and OpenBLAS (smaller ones, f64; 16-bit data
// through f32 copies). Every plan here is one or more GEMMs on the views as given: no copies.
//
//   MatmulPlan          out = alpha * op(a) @ op(b) + beta * c           (torch.matmul, torch.addmm, baddbmm)
//   MatmulBackwardPlan  da = alpha * dout @ op(b)^T, db = alpha * op(a)^T @ dout  (as op demands, transposed back)
//   LinearPlan          y = act(x @ weight^T + bias)                      (F.linear, then an activation)
//   LinearBackwardPlan  dpre = dy * act'(pre); dx = dpre @ weight, dweight = dpre^T @ x, dbias = sum of dpre rows
//   GroupedMatmulPlan   out[rows of g] = a[rows of g] @ op(b[g])  for each group g  (MoE experts;
//                       torch._grouped_mm(a, b, offs))
//   GroupedMatmulBackwardPlan  da[rows of g] = dout[rows of g] @ op(b[g])^T;
//                       db[g] = a[rows of g]^T @ dout[rows of g], stored as b is (transposed back)
//
// Shapes, as torch.matmul: op(a) is [..., M, K] and op(b) [..., K, N] (op transposes the last two
// dims when asked); their leading (batch) dims broadcast against each other, and out is
// [batch..., M, N]. A 1-D a is the row [1, K], a 1-D b the column [K, 1], and that dim is dropped
// from out. The backward sums da and db over the batch dims they were broadcast along, in a fixed
// order (no atomics); it takes dout in `dtype` (out_dtype must be dtype there) and gives no dc
// (beta * dout). K = 0 gives out = beta * c.
//
// Views: any batch strides (zero ones broadcast); each matrix (the last two dims) must have a unit
// stride along one of its dims and a stride no smaller than that dim's extent along the other (rows
// padded or a transposed view are fine; a matrix broadcast along a matrix dim is not): BLAS and
// cuBLASLt take no other layout, and can_implement says which view when one does not fit. c may be
// out itself (addmm in place); no output may otherwise overlap an input. The CPU refuses more than
// 2^40 multiply-adds, and views whose batch dims neither fold into M or K nor stay few (more than
// 2^16 products summed one after another, 2^22 in all): zero strides can describe such work.
//
// dtypes: a, b (x, weight, bias) share `dtype` (f32, f64, f16, bf16); 16-bit inputs multiply and
// accumulate in f32 and out may be f32 (`out_dtype`); f64 in f64. f32 products in TF32 (10
// mantissa bits, Hopper's tensor cores) only with `allow_tf32`, and precision_guarantee().tf32 says
// so. Deterministic: the same GEMM configuration gives the same bits run after run (cuBLASLt's
// split-K schemes sum in a fixed order). By default not batch-invariant: the algorithm, chosen for
// the shape, may change with M. With PlanPreference::batch_invariant, MatmulPlan and LinearPlan
// select the `batch_invariant` variant: each row of out has the same bits whatever the other rows
// and their count (M, the batch dims), for views of the same layout and 16-byte alignment class. On
// the CPU the library's own sums (each element along K in order by fused multiply-adds, no BLAS,
// which computes a row differently with M and with its place); on CUDA cuBLASLt with one algorithm
// a layout, chosen for 1024 rows whatever M, and no split-K. Its cost against the default is in
// docs/OPS.md. The backward plans refuse it (a weight's gradient sums over every row).
#include <optional>

#include "baracuda/core/plan.hpp"

namespace baracuda {

struct MatmulDescriptor {
  DType dtype = DType::f32;
  std::optional<DType> out_dtype;  // of out and c: nullopt is dtype; f32 with 16-bit inputs
  Shape a, b;                      // the operands as stored (before op), rank 1..8
  bool transpose_a = false;        // op(a) = a with its last two dims swapped (a of rank >= 2)
  bool transpose_b = false;
  double alpha = 1.0;  // finite
  double beta = 0.0;   // finite; applies to c
  bool has_c = false;  // add beta * c, c of out's shape
  bool allow_tf32 = false;
};

struct MatmulArgs {
  AnyTensorRef a;
  AnyTensorRef b;
  AnyTensorRef c;  // with has_c: out's shape and dtype; may be out itself
  AnyTensorMut out;
};

struct MatmulBackwardArgs {
  AnyTensorRef dout;  // out's shape and dtype
  AnyTensorRef a;     // read for db
  AnyTensorRef b;     // read for da
  AnyTensorMut da;    // optional: a's shape and dtype
  AnyTensorMut db;    // optional
};

// The activation a LinearPlan applies after the bias.
enum class Activation : unsigned char {
  none,
  relu,
  gelu,       // x * Phi(x), the erf form (F.gelu's default)
  gelu_tanh,  // the tanh approximation (F.gelu(approximate="tanh"))
  silu,       // x * sigmoid(x)
};
std::string_view activation_name(Activation activation);

struct LinearDescriptor {
  DType dtype = DType::f32;  // of x, weight, bias, y (and pre)
  Shape x;                   // [..., in_features], rank 1..8
  int64_t out_features = 0;  // weight is [out_features, in_features]
  bool has_bias = true;
  Activation activation = Activation::none;
  bool allow_tf32 = false;
};

struct LinearArgs {
  AnyTensorRef x;
  AnyTensorRef weight;  // [out_features, in_features]
  AnyTensorRef bias;    // [out_features], with has_bias
  AnyTensorMut y;       // [..., out_features]
  AnyTensorMut pre;     // optional, with an activation: x @ weight^T + bias, which the backward reads
};

struct LinearBackwardArgs {
  AnyTensorRef dy;       // y's shape
  AnyTensorRef x;        // read for dweight
  AnyTensorRef weight;   // read for dx
  AnyTensorRef pre;      // with an activation: the forward's pre
  AnyTensorMut dx;       // optional
  AnyTensorMut dweight;  // optional
  AnyTensorMut dbias;    // optional, with has_bias
};

// A grouped matmul (a mixture of experts' layer): G products over one packed buffer of rows, the
// group sizes read from an array in the stream's memory (`offsets`, as torch._grouped_mm's `offs`:
// each group's end; never read by select, so a plan is as valid for every routing and safe to
// capture in a CUDA graph). Group g is rows [offsets[g - 1], offsets[g]) of a (offsets[-1] = 0),
// multiplied by its own b[g]. Rows from offsets[G - 1] on belong to no group: their out (and da) rows
// are written 0; an empty group's db[g] is 0.
// Bad offsets never read or write out of bounds: each is clamped into [0, T] and to at least the
// previous group's end (a value below it makes its group empty), and, with `bad_index_count` (an
// int64 in the stream's memory, added to), every offset outside [0, T] is counted, and every offset
// below its predecessor.
// Backends: the CPU (each group a product as MatmulPlan runs it: oneDNN or OpenBLAS) and CUDA (the
// library's kernels, reading the offsets on the device: no host sync, so a run may be captured in a
// CUDA graph; f16 / bf16 on the tensor cores, f32 and f64 by FMA on the CUDA cores, f32 never in
// TF32). Deterministic (the same offsets, the same bits). On the CPU not batch-invariant (as
// MatmulPlan's, a group's product is chosen by its size); on CUDA a row's result depends only on its
// row and its group's weights (fixed tiles, no split sums): the CUDA forward is batch-invariant and
// accepts PlanPreference::batch_invariant.
// Workspace on CUDA: (2 G + 3) int64s (the group ends and tile starts).
struct GroupedMatmulDescriptor {
  DType dtype = DType::f32;        // a, b, out (the backward's dout, da, db)
  DType index_dtype = DType::i32;  // offsets: i32 or i64
  std::optional<DType> out_dtype;  // of out: nullopt is dtype; f32 with 16-bit inputs (forward)
  int64_t rows = 0;                // T: a's rows, group after group
  int64_t k = 0;                   // a's columns
  int64_t n = 0;                   // out's columns
  int64_t groups = 0;              // G, 1 to 2^24
  bool transpose_b = false;        // b stored [G, N, K] (each expert's weight as nn.Linear keeps it), not [G, K, N]
  bool allow_tf32 = false;
};

struct GroupedMatmulArgs {
  AnyTensorRef a;        // [T, K]
  AnyTensorRef b;        // [G, K, N], or [G, N, K] with transpose_b
  AnyTensorRef offsets;  // [G] of index_dtype, nondecreasing, the last at most T
  AnyTensorMut out;      // [T, N]
  int64_t* bad_index_count = nullptr;
};

struct GroupedMatmulBackwardArgs {
  AnyTensorRef dout;     // [T, N] in dtype
  AnyTensorRef a;        // read for db
  AnyTensorRef b;        // read for da
  AnyTensorRef offsets;  // as the forward's
  AnyTensorMut da;       // optional: [T, K]
  AnyTensorMut db;       // optional: b's shape
  int64_t* bad_index_count = nullptr;
};

struct MatmulOp : OpTag<MatmulDescriptor, MatmulArgs> {};
struct MatmulBackwardOp : OpTag<MatmulDescriptor, MatmulBackwardArgs> {};
struct LinearOp : OpTag<LinearDescriptor, LinearArgs> {};
struct LinearBackwardOp : OpTag<LinearDescriptor, LinearBackwardArgs> {};
struct GroupedMatmulOp : OpTag<GroupedMatmulDescriptor, GroupedMatmulArgs> {};
struct GroupedMatmulBackwardOp : OpTag<GroupedMatmulDescriptor, GroupedMatmulBackwardArgs> {};

using MatmulPlan = Plan<MatmulOp>;
using MatmulBackwardPlan = Plan<MatmulBackwardOp>;
using LinearPlan = Plan<LinearOp>;
using LinearBackwardPlan = Plan<LinearBackwardOp>;
using GroupedMatmulPlan = Plan<GroupedMatmulOp>;
using GroupedMatmulBackwardPlan = Plan<GroupedMatmulBackwardOp>;

}  // namespace baracuda

// The fused linear + cross-entropy plans (forward and backward): a composite of the library's own
// plans. select chooses the chunk of tokens from the workspace budget and selects every sub-plan
// (matmuls, cross-entropy, casts, fills, the reductions of the chunks' sums) for that chunk and for the
// last, shorter one; the plan keeps them (PlanChoice::parts) and run only runs them, in order, on the
// plan's stream. Both backends are the sub-plans' own: nothing here is backend-specific.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>

#include "baracuda/ops/binary.hpp"
#include "baracuda/ops/copy.hpp"
#include "baracuda/ops/loss.hpp"
#include "baracuda/ops/matmul.hpp"
#include "baracuda/ops/reduce.hpp"
#include "common/checked.hpp"
#include "common/elementwise.hpp"
#include "ops/arg_views.hpp"
#include "ops/loss_problem.hpp"
#include "ops/matmul_problem.hpp"

namespace baracuda::detail {

struct LinearCrossEntropyProblem;
namespace cpu {
Status launch(const LaunchContext& ctx, const LinearCrossEntropyProblem& problem);
}  // namespace cpu
namespace cuda {
Status launch(const LaunchContext& ctx, const LinearCrossEntropyProblem& problem);
}  // namespace cuda

}  // namespace baracuda::detail

// (after the problem's backend entry points, which it calls)
#include "ops/plan_impl.hpp"

namespace baracuda {
// The sub-plans are instantiated in their own families' files: plan_impl.hpp's definitions, seen
// here, must not be instantiated again.
extern template class Plan<MatmulOp>;
extern template class Plan<BinaryOp>;
extern template class Plan<CrossEntropyOp>;
extern template class Plan<CrossEntropyBackwardOp>;
extern template class Plan<CastOp>;
extern template class Plan<FillOp>;
extern template class Plan<ReduceOp>;
}  // namespace baracuda

namespace baracuda::detail {

// The views one run reads and writes, forward or backward (null data: absent).
struct LinearCrossEntropyProblem {
  LinearCrossEntropyDescriptor desc;
  bool forward = true;
  AnyTensorRef hidden, weight, bias, targets, class_weight;
  AnyTensorRef dloss, lse_in;  // backward
  AnyTensorMut loss, lse_out;  // forward
  AnyTensorMut dhidden, dweight, dbias;
  int64_t* bad_index_count = nullptr;
};

namespace {

using Desc = LinearCrossEntropyDescriptor;

constexpr VariantInfo kVariants[] = {
    {"chunked", true, true, true,
     "chunks of tokens: the logits by MatmulPlan, CrossEntropyPlan and its backward over them in place, the "
     "gradients by MatmulPlans accumulated in chunk order"},
};
constexpr DType kIndexTypes[] = {DType::i32, DType::i64};

// The most workspace select plans for, whatever N and V (preference.workspace_limit may lower it).
constexpr size_t kWorkspaceBudget = size_t{256} << 20;
// Room kept for the sub-plans' own workspace (cuBLASLt takes up to 32 MiB) when the chunk is first sized.
constexpr size_t kSubPlanReserve = size_t{48} << 20;

DType grad_dtype_of(const Desc& d) { return d.weight_grad_dtype.value_or(d.dtype); }
bool is_16bit(DType t) { return t == DType::f16 || t == DType::bf16; }

// Whether a run of this direction computes the gradients chunk by chunk (the forward with
// grad_in_forward, the backward without), and whether it needs the counted targets' weight.
bool sweeps_gradients(const Desc& d, bool forward) { return forward == d.grad_in_forward; }
bool needs_weight_sum(const Desc& d, bool forward) {
  return d.reduction == LossReduction::mean && (forward || !d.grad_in_forward);
}

// The sub-plans of a chunk of `rows` tokens.
struct ChunkPlans {
  int64_t rows = 0;
  MatmulPlan logits;                 // hidden_chunk @ weight^T, into the compute dtype
  BinaryPlan add_bias;               // logits += bias
  CrossEntropyPlan loss;             // forward: none, the chunk's rows; sum and mean, the chunk's sum
  CrossEntropyPlan weight_sum;       // mean: F.nll_loss of a broadcast -1, the counted targets' weight
  CrossEntropyBackwardPlan dlogits;  // over the logits
  CastPlan narrow;                   // 16-bit dtypes: dlogits to dtype, the gradient matmuls' input
  MatmulPlan dhidden;                // dlogits @ weight
  MatmulPlan dweight;                // dlogits^T @ hidden_chunk + dweight
  MatmulPlan dbias;                  // ones @ dlogits + dbias
};

// One value each, in the workspace's scalar region (8 bytes a slot: f64 fits).
enum Scalar : int { kMinusOne, kWeightSum, kScale, kLossSum, kScaleAsDtype, kScaleAsGrad, kScalarCount };

// Byte offsets of the workspace's regions.
struct WorkspaceLayout {
  size_t logits = 0, narrow = 0, lse = 0, ones = 0, loss_parts = 0, weight_parts = 0, scalars = 0, sub = 0, total = 0;
};

struct Parts {
  int64_t chunk_rows = 0, chunks = 0;
  ChunkPlans full, tail;  // tail.rows 0: N is a multiple of the chunk
  ReducePlan sum_chunks;  // [chunks] -> [], in chunk order
  BinaryPlan divide;      // [] / []: the mean, and the backward's dloss / weight sum
  BinaryPlan reciprocal;  // 1 / []: the forward's gradient scale under the mean
  FillPlan minus_one, one, ones, zero_dweight, zero_dbias;
  // The backward of grad_in_forward: dloss in each gradient's dtype, and the products.
  CastPlan scale_to_dtype, scale_to_grad;
  BinaryPlan scale_dhidden, scale_dweight, scale_dbias;
  WorkspaceLayout layout;
};

std::string_view plan_name(bool forward) {
  return forward ? "LinearCrossEntropyPlan" : "LinearCrossEntropyBackwardPlan";
}

// A sub-plan's error as this plan's (every error names the plan the caller called), its code kept.
Status as_ours(const Status& sub, bool forward, std::string_view field) {
  if (sub) return sub;
  return plan_error(sub.code(), plan_name(forward), field, "a sub-plan refused: " + sub.message());
}

template <class P>
Status select_into(P& plan, const Stream& stream, const typename P::Descriptor& d, const PlanPreference& pref) {
  Expected<P> p = P::select(stream, d, pref);
  if (!p) return p.status();
  plan = *p;
  return Status::ok();
}

CrossEntropyDescriptor chunk_loss_desc(const Desc& d, int64_t rows) {
  CrossEntropyDescriptor c;
  c.dtype = acc_dtype(d.dtype);
  c.index_dtype = d.index_dtype;
  c.shape = Shape{rows, d.vocab_size};
  // A chunk's mean would divide by its own rows' weight: the chunks give sums, divided once at the end.
  c.reduction = d.reduction == LossReduction::none ? LossReduction::none : LossReduction::sum;
  c.ignore_index = d.ignore_index;
  c.label_smoothing = d.label_smoothing;
  c.z_loss = d.z_loss;
  c.has_weight = d.has_class_weight;
  return c;
}

MatmulDescriptor matmul_desc(DType dtype, std::optional<DType> out, Shape a, Shape b, bool ta, bool tb, bool accumulate,
                             bool tf32) {
  MatmulDescriptor m;
  m.dtype = dtype;
  m.out_dtype = out == dtype ? std::nullopt : out;
  m.a = a;
  m.b = b;
  m.transpose_a = ta;
  m.transpose_b = tb;
  m.has_c = accumulate;
  m.beta = accumulate ? 1.0 : 0.0;
  m.allow_tf32 = tf32;
  return m;
}

Status select_chunk(ChunkPlans& c, const Stream& s, const Desc& d, bool forward, int64_t rows,
                    const PlanPreference& pref) {
  c.rows = rows;
  const DType acc = acc_dtype(d.dtype), grad = grad_dtype_of(d);
  const int64_t D = d.hidden_size, V = d.vocab_size;
  const bool tf32 = d.allow_tf32 && d.dtype == DType::f32;
  Status st = select_into(c.logits, s, matmul_desc(d.dtype, acc, {rows, D}, {V, D}, false, true, false, tf32), pref);
  if (st && d.has_bias) {
    BinaryDescriptor b;
    b.kind = BinaryKind::add;
    b.dtype = acc;
    b.a_shape = Shape{rows, V};
    b.b_shape = Shape{V};
    if (d.dtype != acc) b.b_dtype = d.dtype;
    st = select_into(c.add_bias, s, b, pref);
  }
  const CrossEntropyDescriptor ce = chunk_loss_desc(d, rows);
  if (st && forward) st = select_into(c.loss, s, ce, pref);
  if (st && needs_weight_sum(d, forward)) {
    CrossEntropyDescriptor nll = ce;
    nll.log_probs = true;
    nll.label_smoothing = nll.z_loss = 0;
    nll.reduction = LossReduction::sum;
    st = select_into(c.weight_sum, s, nll, pref);
  }
  if (!st || !sweeps_gradients(d, forward)) return st;
  st = select_into(c.dlogits, s, ce, pref);
  if (st && d.dtype != acc) st = select_into(c.narrow, s, CastDescriptor{acc, d.dtype, Shape{rows, V}}, pref);
  if (st)
    st = select_into(c.dhidden, s, matmul_desc(d.dtype, d.dtype, {rows, V}, {V, D}, false, false, false, tf32), pref);
  if (st)
    st = select_into(c.dweight, s, matmul_desc(d.dtype, grad, {rows, V}, {rows, D}, true, false, true, tf32), pref);
  if (st && d.has_bias)
    st = select_into(c.dbias, s, matmul_desc(d.dtype, grad, Shape{rows}, {rows, V}, false, false, true, tf32), pref);
  return st;
}

size_t chunk_workspace(const ChunkPlans& c) {
  size_t w = 0;
  for (size_t x : {c.logits.workspace_size(), c.add_bias.workspace_size(), c.loss.workspace_size(),
                   c.weight_sum.workspace_size(), c.dlogits.workspace_size(), c.narrow.workspace_size(),
                   c.dhidden.workspace_size(), c.dweight.workspace_size(), c.dbias.workspace_size()})
    w = std::max(w, x);
  return w;
}

// The regions in order, each 256-byte aligned; sizes checked (select refuses a layout past kMaxBytes).
CheckedSize lay_out(WorkspaceLayout& l, const Desc& d, bool forward, int64_t rows, int64_t chunks, size_t sub) {
  const int64_t acc = static_cast<int64_t>(dtype_size(acc_dtype(d.dtype)));
  const int64_t elem = static_cast<int64_t>(dtype_size(d.dtype));
  const bool grads = sweeps_gradients(d, forward), logits = forward || grads;
  CheckedSize at = 0;
  auto region = [&](size_t& offset, CheckedSize bytes) {
    offset = static_cast<size_t>(at.saturated());
    at = round_up_to(at + bytes, 256);
  };
  const CheckedSize matrix = CheckedSize(rows) * d.vocab_size;
  region(l.logits, logits ? matrix * acc : CheckedSize(0));
  region(l.narrow, grads && d.dtype != acc_dtype(d.dtype) ? matrix * elem : CheckedSize(0));
  region(l.lse, forward && grads ? CheckedSize(rows) * acc : CheckedSize(0));
  region(l.ones, grads && d.has_bias ? CheckedSize(rows) * elem : CheckedSize(0));
  region(l.loss_parts, forward && d.reduction != LossReduction::none ? CheckedSize(chunks) * acc : CheckedSize(0));
  region(l.weight_parts, needs_weight_sum(d, forward) ? CheckedSize(chunks) * acc : CheckedSize(0));
  region(l.scalars, CheckedSize(kScalarCount) * 8);
  region(l.sub, CheckedSize(static_cast<int64_t>(std::min<size_t>(sub, size_t{1} << 62))));
  l.total = static_cast<size_t>(at.saturated());
  return at;
}

Expected<Parts> select_parts(const Stream& s, const Desc& d, bool forward, int64_t rows, const PlanPreference& pref) {
  Parts p;
  const int64_t N = d.tokens, D = d.hidden_size, V = d.vocab_size;
  const DType acc = acc_dtype(d.dtype), grad = grad_dtype_of(d);
  p.chunk_rows = rows;
  p.chunks = N == 0 ? 0 : (N + rows - 1) / rows;
  Status st = Status::ok();
  if (!forward && d.grad_in_forward) {  // the gradients exist: dloss times each
    auto scale = [&](BinaryPlan& plan, DType dtype, Shape shape) {
      BinaryDescriptor b;
      b.kind = BinaryKind::mul;
      b.dtype = dtype;
      b.a_shape = shape;
      b.b_shape = Shape{};
      if (st) st = select_into(plan, s, b, pref);
    };
    scale(p.scale_dhidden, d.dtype, {N, D});
    scale(p.scale_dweight, grad, {V, D});
    if (d.has_bias) scale(p.scale_dbias, grad, Shape{V});
    if (st && d.dtype != acc) st = select_into(p.scale_to_dtype, s, CastDescriptor{acc, d.dtype, Shape{}}, pref);
    if (st && grad != acc) st = select_into(p.scale_to_grad, s, CastDescriptor{acc, grad, Shape{}}, pref);
  } else {
    st = select_chunk(p.full, s, d, forward, rows, pref);
    if (st && N % rows != 0) st = select_chunk(p.tail, s, d, forward, N % rows, pref);
    ReduceDescriptor r;
    r.dtype = acc;
    r.shape = Shape{p.chunks};
    if (st) st = select_into(p.sum_chunks, s, r, pref);
    BinaryDescriptor div;
    div.kind = BinaryKind::div;
    div.dtype = acc;
    div.a_shape = div.b_shape = Shape{};
    if (st) st = select_into(p.divide, s, div, pref);
    div.a_scalar = 1.0;
    if (st) st = select_into(p.reciprocal, s, div, pref);
    if (st) st = select_into(p.minus_one, s, FillDescriptor{acc, Shape{}, -1.0}, pref);
    if (st) st = select_into(p.one, s, FillDescriptor{acc, Shape{}, 1.0}, pref);
    if (st && sweeps_gradients(d, forward)) {
      st = select_into(p.zero_dweight, s, FillDescriptor{grad, Shape{V, D}, 0.0}, pref);
      if (st && d.has_bias) st = select_into(p.zero_dbias, s, FillDescriptor{grad, Shape{V}, 0.0}, pref);
      if (st && d.has_bias) st = select_into(p.ones, s, FillDescriptor{d.dtype, Shape{rows}, 1.0}, pref);
    }
  }
  if (!st) return as_ours(st, forward, "descriptor");
  size_t sub = std::max(chunk_workspace(p.full), chunk_workspace(p.tail));
  for (size_t x : {p.sum_chunks.workspace_size(), p.divide.workspace_size(), p.reciprocal.workspace_size(),
                   p.scale_dhidden.workspace_size(), p.scale_dweight.workspace_size(), p.scale_dbias.workspace_size(),
                   p.scale_to_dtype.workspace_size(), p.scale_to_grad.workspace_size()})
    sub = std::max(sub, x);
  if (!lay_out(p.layout, d, forward, rows, p.chunks, sub).below(kMaxBytes))
    return plan_error(StatusCode::invalid_problem,
                      forward ? "LinearCrossEntropyPlan" : "LinearCrossEntropyBackwardPlan", "descriptor.vocab_size",
                      "needs a workspace past the limit of every buffer");
  return p;
}

// Rows [begin, begin + count) of a view whose dim 0 is the tokens' (absent views stay absent).
const void* byte_offset(const void* p, int64_t bytes) { return static_cast<const char*>(p) + bytes; }
void* byte_offset(void* p, int64_t bytes) { return static_cast<char*>(p) + bytes; }
template <class View>
View rows_of(View v, int64_t begin, int64_t count) {
  if (v.shape.rank == 0) return v;  // absent
  v.shape.dims[0] = count;
  if (!v.data) return v;  // empty: no element to reach
  const int64_t offset = begin * v.strides[0];
  v.data = byte_offset(v.data, offset * static_cast<int64_t>(dtype_size(v.dtype)));
  v.capacity -= offset;
  return v;
}

class Runner {
 public:
  Runner(const Parts& parts, const LinearCrossEntropyProblem& problem, const Stream& stream, Workspace workspace)
      : p_(parts),
        q_(problem),
        d_(problem.desc),
        s_(stream),
        base_(static_cast<char*>(workspace.data)),
        sub_{base_ + parts.layout.sub, workspace.size - parts.layout.sub} {}

  Status run() const {
    if (!q_.forward && d_.grad_in_forward) return scale_gradients();
    return sweep();
  }

 private:
  template <class P>
  Status go(const P& plan, const typename P::Args& args) const {
    return as_ours(plan.run(s_, sub_, args), q_.forward, "run");
  }
  AnyTensorMut region(size_t offset, DType dtype, Shape shape) const {
    return AnyTensorMut::contiguous(base_ + offset, dtype, shape);
  }
  AnyTensorMut scalar(Scalar k, DType dtype) const { return region(p_.layout.scalars + 8 * k, dtype, Shape{}); }
  AnyTensorMut acc_scalar(Scalar k) const { return scalar(k, acc_dtype(d_.dtype)); }
  AnyTensorMut part(size_t region_offset, int64_t chunk) const {
    return region(region_offset + static_cast<size_t>(chunk) * dtype_size(acc_dtype(d_.dtype)), acc_dtype(d_.dtype),
                  Shape{});
  }

  // grad_in_forward's backward: each gradient given times dloss, in place (dloss cast to its dtype).
  Status scale_gradients() const {
    const DType acc = acc_dtype(d_.dtype), grad = grad_dtype_of(d_);
    auto factor = [&](DType dtype, const CastPlan& cast, Scalar slot, AnyTensorRef& out) -> Status {
      if (dtype == acc) {
        out = q_.dloss;
        return Status::ok();
      }
      out = scalar(slot, dtype);
      return go(cast, CastArgs{q_.dloss, scalar(slot, dtype)});
    };
    AnyTensorRef to_dtype, to_grad;
    if (Status st = factor(d_.dtype, p_.scale_to_dtype, kScaleAsDtype, to_dtype); !st) return st;
    if (Status st = factor(grad, p_.scale_to_grad, kScaleAsGrad, to_grad); !st) return st;
    if (q_.dhidden.data)
      if (Status st = go(p_.scale_dhidden, BinaryArgs{q_.dhidden, to_dtype, q_.dhidden}); !st) return st;
    if (q_.dweight.data)
      if (Status st = go(p_.scale_dweight, BinaryArgs{q_.dweight, to_grad, q_.dweight}); !st) return st;
    if (q_.dbias.data)
      if (Status st = go(p_.scale_dbias, BinaryArgs{q_.dbias, to_grad, q_.dbias}); !st) return st;
    return Status::ok();
  }

  Status sweep() const {
    const WorkspaceLayout& l = p_.layout;
    const bool grads = sweeps_gradients(d_, q_.forward), none = d_.reduction == LossReduction::none;
    const bool mean = d_.reduction == LossReduction::mean;
    if (grads && q_.dweight.data)
      if (Status st = go(p_.zero_dweight, FillArgs{q_.dweight}); !st) return st;
    if (grads && q_.dbias.data) {
      if (Status st = go(p_.zero_dbias, FillArgs{q_.dbias}); !st) return st;
      if (Status st = go(p_.ones, FillArgs{region(l.ones, d_.dtype, Shape{p_.chunk_rows})}); !st) return st;
    }
    // The mean's divisor first (the gradients' scale needs it before the sweep): F.nll_loss of -1 at
    // every class, a chunk at a time, is the counted targets' weight (bad targets are counted once, by
    // the sweep's cross-entropy).
    if (needs_weight_sum(d_, q_.forward)) {
      if (Status st = go(p_.minus_one, FillArgs{acc_scalar(kMinusOne)}); !st) return st;
      for (int64_t c = 0; c < p_.chunks; ++c) {
        const ChunkPlans& plans = chunk_plans(c);
        const AnyTensorMut one = acc_scalar(kMinusOne);
        const AnyTensorRef minus_ones{one.data, one.dtype, Shape{plans.rows, d_.vocab_size}, Strides{}, 1};
        const CrossEntropyArgs nll{minus_ones,
                                   rows_of(q_.targets, c * p_.chunk_rows, plans.rows),
                                   q_.class_weight,
                                   part(l.weight_parts, c),
                                   {},
                                   nullptr};
        if (Status st = go(plans.weight_sum, nll); !st) return st;
      }
      const AnyTensorMut parts = region(l.weight_parts, acc_dtype(d_.dtype), Shape{p_.chunks});
      if (Status st = go(p_.sum_chunks, ReduceArgs{parts, acc_scalar(kWeightSum), {}, {}}); !st) return st;
    }
    // The gradients' dloss for every chunk under sum and mean: forward 1 (sum) or 1 / weight (mean);
    // backward dloss or dloss / weight.
    AnyTensorRef scale = q_.dloss;
    if (grads && !none && (q_.forward || mean)) {
      Status st = Status::ok();
      if (q_.forward && !mean) st = go(p_.one, FillArgs{acc_scalar(kScale)});
      if (q_.forward && mean) st = go(p_.reciprocal, BinaryArgs{{}, acc_scalar(kWeightSum), acc_scalar(kScale)});
      if (!q_.forward) st = go(p_.divide, BinaryArgs{q_.dloss, acc_scalar(kWeightSum), acc_scalar(kScale)});
      if (!st) return st;
      scale = acc_scalar(kScale);
    }
    for (int64_t c = 0; c < p_.chunks; ++c)
      if (Status st = chunk(c, scale); !st) return st;
    if (!q_.forward || none) return Status::ok();
    const AnyTensorMut parts = region(l.loss_parts, acc_dtype(d_.dtype), Shape{p_.chunks});
    if (!mean) return go(p_.sum_chunks, ReduceArgs{parts, q_.loss, {}, {}});
    if (Status st = go(p_.sum_chunks, ReduceArgs{parts, acc_scalar(kLossSum), {}, {}}); !st) return st;
    return go(p_.divide, BinaryArgs{acc_scalar(kLossSum), acc_scalar(kWeightSum), q_.loss});
  }

  const ChunkPlans& chunk_plans(int64_t c) const { return (c + 1) * p_.chunk_rows <= d_.tokens ? p_.full : p_.tail; }

  Status chunk(int64_t c, const AnyTensorRef& scale) const {
    const WorkspaceLayout& l = p_.layout;
    const ChunkPlans& plans = chunk_plans(c);
    const int64_t begin = c * p_.chunk_rows, n = plans.rows, V = d_.vocab_size;
    const DType acc = acc_dtype(d_.dtype);
    const bool none = d_.reduction == LossReduction::none;
    const AnyTensorRef hidden = rows_of(q_.hidden, begin, n), targets = rows_of(q_.targets, begin, n);
    const AnyTensorMut logits = region(l.logits, acc, Shape{n, V});
    if (Status st = go(plans.logits, MatmulArgs{hidden, q_.weight, {}, logits}); !st) return st;
    if (d_.has_bias)
      if (Status st = go(plans.add_bias, BinaryArgs{logits, q_.bias, logits}); !st) return st;
    AnyTensorRef lse = rows_of(q_.lse_in, begin, n);
    if (q_.forward) {
      AnyTensorMut lse_out = rows_of(q_.lse_out, begin, n);
      if (!lse_out.data && sweeps_gradients(d_, true)) lse_out = region(l.lse, acc, Shape{n});
      lse = lse_out;
      const AnyTensorMut loss = none ? rows_of(q_.loss, begin, n) : part(l.loss_parts, c);
      const CrossEntropyArgs args{logits, targets, q_.class_weight, loss, lse_out, q_.bad_index_count};
      if (Status st = go(plans.loss, args); !st) return st;
    }
    if (!sweeps_gradients(d_, q_.forward)) return Status::ok();
    // dlogits over the logits (the backward's in-place pair); the backward counts the bad targets
    // (the forward's cross-entropy has).
    const CrossEntropyBackwardArgs back{
        none ? rows_of(q_.dloss, begin, n) : scale, logits, targets, q_.class_weight, lse, logits,
        q_.forward ? nullptr : q_.bad_index_count};
    if (Status st = go(plans.dlogits, back); !st) return st;
    AnyTensorRef dlogits = logits;
    if (d_.dtype != acc) {
      const AnyTensorMut narrow = region(l.narrow, d_.dtype, Shape{n, V});
      if (Status st = go(plans.narrow, CastArgs{logits, narrow}); !st) return st;
      dlogits = narrow;
    }
    if (q_.dhidden.data)
      if (Status st = go(plans.dhidden, MatmulArgs{dlogits, q_.weight, {}, rows_of(q_.dhidden, begin, n)}); !st)
        return st;
    if (q_.dweight.data)
      if (Status st = go(plans.dweight, MatmulArgs{dlogits, hidden, q_.dweight, q_.dweight}); !st) return st;
    if (q_.dbias.data) {
      const AnyTensorMut ones = region(l.ones, d_.dtype, Shape{n});
      if (Status st = go(plans.dbias, MatmulArgs{ones, dlogits, q_.dbias, q_.dbias}); !st) return st;
    }
    return Status::ok();
  }

  const Parts& p_;
  const LinearCrossEntropyProblem& q_;
  const Desc& d_;
  Stream s_;
  char* base_;
  Workspace sub_;
};

Status run_problem(const LaunchContext& ctx, const LinearCrossEntropyProblem& problem) {
  return Runner(*static_cast<const Parts*>(ctx.choice.parts.get()), problem, ctx.stream, ctx.workspace).run();
}

template <bool kBackward>
struct LinearCrossEntropyHooks {
  using Descriptor = Desc;
  using Args = std::conditional_t<kBackward, LinearCrossEntropyBackwardArgs, LinearCrossEntropyArgs>;
  static constexpr std::string_view kPlan = kBackward ? "LinearCrossEntropyBackwardPlan" : "LinearCrossEntropyPlan";
  static constexpr std::string_view kOp = kBackward ? "linear_cross_entropy_backward" : "linear_cross_entropy";
  static constexpr OpSchema kSchema{kPlan, kOp, "loss", kFloats, kIndexTypes, kVariants};

  static constexpr auto fields() {
    if constexpr (kBackward)
      return std::array<ArgField<Args>, 10>{{{"dloss", &Args::dloss},
                                             {"hidden", &Args::hidden},
                                             {"weight", &Args::weight},
                                             {"bias", &Args::bias},
                                             {"targets", &Args::targets},
                                             {"class_weight", &Args::class_weight},
                                             {"lse", &Args::lse},
                                             {"dhidden", nullptr, &Args::dhidden},
                                             {"dweight", nullptr, &Args::dweight},
                                             {"dbias", nullptr, &Args::dbias}}};
    else
      return std::array<ArgField<Args>, 10>{{{"hidden", &Args::hidden},
                                             {"weight", &Args::weight},
                                             {"bias", &Args::bias},
                                             {"targets", &Args::targets},
                                             {"class_weight", &Args::class_weight},
                                             {"loss", nullptr, &Args::loss},
                                             {"lse", nullptr, &Args::lse},
                                             {"dhidden", nullptr, &Args::dhidden},
                                             {"dweight", nullptr, &Args::dweight},
                                             {"dbias", nullptr, &Args::dbias}}};
  }
  static constexpr auto kFields = fields();

  static Status check(const Descriptor& d) {
    for (auto [field, size] :
         {std::pair{"descriptor.tokens", d.tokens}, std::pair{"descriptor.hidden_size", d.hidden_size},
          std::pair{"descriptor.chunk_rows", d.chunk_rows}})
      if (size < 0) return plan_error(StatusCode::invalid_problem, kPlan, field, std::to_string(size) + " is negative");
    if (d.vocab_size < 1)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.vocab_size",
                        std::to_string(d.vocab_size) + " classes: at least 1");
    for (auto [field, shape] : {std::pair{"descriptor.tokens", Shape{d.tokens, d.hidden_size}},
                                std::pair{"descriptor.vocab_size", Shape{d.vocab_size, d.hidden_size}}})
      if (Status s = check_shape(kPlan, field, shape); !s) return s;
    if (Status s = check_cross_entropy_options(kPlan, d.reduction, d.label_smoothing, d.z_loss); !s) return s;
    if (d.grad_in_forward && d.reduction == LossReduction::none)
      return plan_error(StatusCode::invalid_problem, kPlan, "descriptor.grad_in_forward",
                        "needs reduction sum or mean (reduction none has a dloss per row, known only in the backward)");
    if (d.has_class_weight && d.z_loss != 0 && d.reduction == LossReduction::mean)
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.z_loss",
                        "with class weights under the mean (its two divisors, the targets' weight and their count, "
                        "do not combine across chunks): use reduction sum and divide");
    const DType grad = grad_dtype_of(d);
    if (grad != d.dtype && !(grad == DType::f32 && is_16bit(d.dtype)))
      return plan_error(StatusCode::unsupported, kPlan, "descriptor.weight_grad_dtype",
                        std::string(valid_dtype(grad) ? dtype_name(grad) : "?") + " is neither dtype (" +
                            std::string(dtype_name(d.dtype)) + ") nor f32 with a 16-bit dtype");
    return Status::ok();
  }

  static void arg_specs(const Descriptor& d, std::span<ArgSpec> specs) {
    const DType acc = acc_dtype(d.dtype), grad = grad_dtype_of(d);
    const Shape tokens{d.tokens}, vocab{d.vocab_size}, hidden{d.tokens, d.hidden_size},
        weight{d.vocab_size, d.hidden_size};
    const Shape loss = d.reduction == LossReduction::none ? tokens : Shape{};
    auto set = [&](int i, DType dtype, const Shape& shape, bool present, bool optional = false) {
      specs[i].dtype = dtype;
      specs[i].shape = shape;
      specs[i].present = present;
      specs[i].optional = optional;
    };
    // The backward of grad_in_forward reads dloss and the gradients alone.
    const bool reads = !kBackward || !d.grad_in_forward;
    const int o = kBackward ? 1 : 0;  // the backward's inputs after dloss
    if constexpr (kBackward) set(0, acc, loss, true);
    set(o + 0, d.dtype, hidden, reads);
    set(o + 1, d.dtype, weight, reads);
    set(o + 2, d.dtype, vocab, reads && d.has_bias);
    set(o + 3, d.index_dtype, tokens, reads);
    specs[o + 3].index_bound = d.vocab_size;
    set(o + 4, acc, vocab, reads && d.has_class_weight);
    if constexpr (kBackward) {
      set(6, acc, tokens, reads);  // lse
    } else {
      set(5, acc, loss, true);
      set(6, acc, tokens, true, true);
    }
    const bool grads = kBackward || d.grad_in_forward;
    set(7, d.dtype, hidden, grads, true);
    set(8, grad, weight, grads, true);
    set(9, grad, vocab, grads && d.has_bias, true);
    for (int i = 7; i < 10; ++i) specs[i].accumulates = kBackward && d.grad_in_forward;
  }

  static Expected<PlanChoice> choose(const PlanTarget& t, const Descriptor& d, const PlanPreference& pref,
                                     std::optional<int>) {
    const Stream stream = t.backend == Backend::cpu ? Stream::host() : Stream::cuda(nullptr, t.device);
    const size_t budget = std::min(kWorkspaceBudget, pref.workspace_limit);
    PlanPreference sub;  // (a sub-plan's workspace past the budget would be refused below anyway)
    sub.determinism = pref.determinism;
    sub.workspace_limit = budget;
    // The first guess: the chunk's rows that fit beside a reserve for the sub-plans' workspace.
    const int64_t acc = static_cast<int64_t>(dtype_size(acc_dtype(d.dtype)));
    const int64_t per_row = (CheckedSize(d.vocab_size) * (acc + static_cast<int64_t>(dtype_size(d.dtype))) +
                             CheckedSize(16) * (2 + loss_chunks(d.vocab_size)) + 2 * acc)
                                .saturated();
    const int64_t room = static_cast<int64_t>(budget > kSubPlanReserve ? budget - kSubPlanReserve : 0);
    const int64_t most = std::max<int64_t>(1, d.tokens);
    int64_t rows = d.chunk_rows > 0 ? std::min(d.chunk_rows, most) : std::clamp<int64_t>(room / per_row, 1, most);
    for (;;) {
      Expected<Parts> parts = select_parts(stream, d, !kBackward, rows, sub);
      if (!parts) return parts.status();
      const size_t total = parts->layout.total;
      if (total <= budget) {
        PlanChoice c;
        c.variant = 0;
        c.workspace = total;
        c.knob = rows;
        c.parts = std::make_shared<const Parts>(std::move(*parts));
        return c;
      }
      const std::string needs = "a chunk of " + std::to_string(rows) + " tokens needs " + std::to_string(total) +
                                " bytes of workspace, past the budget of " + std::to_string(budget);
      if (d.chunk_rows > 0) return plan_error(StatusCode::unsupported, kPlan, "descriptor.chunk_rows", needs);
      if (rows == 1) return plan_error(StatusCode::unsupported, kPlan, "descriptor.vocab_size", needs);
      rows = std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(rows) * 0.9 * static_cast<double>(budget) /
                                                      static_cast<double>(total)),
                                 1, rows - 1);
    }
  }

  static bool nothing_to_do(const Descriptor& d) {
    // No tokens still give a sum (0), a mean (NaN) and zero gradients of the weight and bias.
    return !kBackward && d.tokens == 0 && d.reduction == LossReduction::none;
  }

  static PrecisionGuarantee precision(const Descriptor& d, const PlanChoice&) {
    PrecisionGuarantee g;
    g.compute = g.accumulator = acc_dtype(d.dtype);
    g.tf32 = d.allow_tf32 && d.dtype == DType::f32;
    return g;
  }

  static KernelShape kernel(const PlanTarget&, const Descriptor&, const PlanChoice& c, const Args* a) {
    KernelShape k{std::string(kVariants[0].name) + ".rows" + std::to_string(c.knob), Layout::contiguous};
    if (a) k.layout = layout_of(given_views<Args>(kFields, *a));
    return k;
  }

  // The matrices the matmuls read or write take BLAS's layouts (MatmulPlan's rule, named here).
  static Status check_args(const PlanTarget&, const Descriptor& d, const PlanChoice&, const Args& a) {
    if (kBackward && d.grad_in_forward) return Status::ok();  // (scaled elementwise)
    for (auto [name, view] :
         {std::pair{"args.hidden", AnyTensorRef(a.hidden)}, std::pair{"args.weight", a.weight},
          std::pair{"args.dhidden", AnyTensorRef(a.dhidden)}, std::pair{"args.dweight", AnyTensorRef(a.dweight)}}) {
      if (!view.data || view.numel() == 0) continue;
      int64_t rs = view.strides[0], cs = view.strides[1];
      if (!gemm_layout_ok(view.shape.dims[0], view.shape.dims[1], rs, cs))
        return plan_error(StatusCode::unsupported, kPlan, name,
                          "its strides (" + std::to_string(view.strides[0]) + ", " + std::to_string(view.strides[1]) +
                              ") need a unit stride along one dim and, along the other, a stride of at least the "
                              "first's extent (the matmuls' layouts): copy it to a contiguous view");
    }
    return Status::ok();
  }

  static Args used(const Descriptor& d, const Args& a) { return without_unused_views<LinearCrossEntropyHooks>(d, a); }

  static LinearCrossEntropyProblem problem(const LaunchContext&, const Descriptor& d, const Args& args) {
    const Args a = used(d, args);
    LinearCrossEntropyProblem p;
    p.desc = d;
    p.forward = !kBackward;
    p.hidden = a.hidden;
    p.weight = a.weight;
    p.bias = a.bias;
    p.targets = a.targets;
    p.class_weight = a.class_weight;
    if constexpr (kBackward) {
      p.dloss = a.dloss;
      p.lse_in = a.lse;
    } else {
      p.loss = a.loss;
      p.lse_out = a.lse;
    }
    p.dhidden = a.dhidden;
    p.dweight = a.dweight;
    p.dbias = a.dbias;
    p.bad_index_count = a.bad_index_count;
    return p;
  }
};

}  // namespace

// Both backends run the same sub-plans (each launching on its own backend).
Status cpu::launch(const LaunchContext& ctx, const LinearCrossEntropyProblem& problem) {
  return run_problem(ctx, problem);
}
Status cuda::launch(const LaunchContext& ctx, const LinearCrossEntropyProblem& problem) {
  return run_problem(ctx, problem);
}

template <>
struct OpHooks<LinearCrossEntropyOp> : LinearCrossEntropyHooks<false> {};
template <>
struct OpHooks<LinearCrossEntropyBackwardOp> : LinearCrossEntropyHooks<true> {};

}  // namespace baracuda::detail

namespace baracuda {
template class Plan<LinearCrossEntropyOp>;
template class Plan<LinearCrossEntropyBackwardOp>;
}  // namespace baracuda

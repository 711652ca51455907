#pragma once
// Losses (cross-entropy, then the pointwise losses below). Cross-entropy of logits against class indices
// (F.cross_entropy with integer targets):
//   CrossEntropyPlan          loss from logits [C], [N, C] or [N, C, d1, ...] (classes along dim 1,
//                             dim 0 at rank 1) and targets of the logits' shape without the class dim
//   CrossEntropyBackwardPlan  dlogits from dloss, the logits, the targets and the saved logsumexp
//
// For a row (one position of every dim but the class dim) with logits x, target t, lse = log sum_c
// exp(x_c), class weights w (1 without a weight), W = sum_c w_c, smoothing e and z-loss coefficient z:
//   ce  = (1 - e) w_t (lse - x_t) + (e / C) sum_c w_c (lse - x_c)      (PyTorch's label smoothing,
//                                                                       weighted as PyTorch weighs it)
//   row loss = ce + z lse^2                                             (PaLM's z-loss; z = 0: none)
// A row whose target is ignore_index, or is outside [0, C) (a bad target: counted into
// `bad_index_count` when given, as the indexing plans count theirs; PyTorch raises a device assert
// instead), contributes nothing: loss 0, no weight, no gradient. Reductions:
//   none   loss[row] = the row loss (0 for an ignored row), of the targets' shape
//   sum    loss[] = the sum of the row losses
//   mean   loss[] = sum(ce) / sum(w_t) + sum(z lse^2) / count, over the rows not ignored: PyTorch's
//          mean (divided by the targets' weights, not the row count, when there is a weight); the
//          z-loss averaged over the rows not ignored (as Liger-Kernel). Every row ignored: 0 / 0 = NaN,
//          as PyTorch.
// The loss has the logits' dtype (as PyTorch returns it); `lse`, an optional output of the rows'
// shape, is in f32 (f64 for f64 logits).
//
// The backward reads dloss (the loss's shape), the logits, the targets, the weight and `lse`
// (required: the saved logsumexp of the forward, so the backward reads the logits once) and writes
//   dlogits_c = g (1 - e) w_t (p_c - [c == t]) + g (e / C) (W p_c - w_c) + g_z 2 z lse p_c,
//   p_c = exp(x_c - lse),
// with g = g_z = dloss[row] (none), dloss (sum), or g = dloss / sum(w_t), g_z = dloss / count (mean);
// ignored rows get 0. dlogits may be the logits' buffer itself (the same view: each element is read
// once, before it is written), as Liger-Kernel does to save the memory of a second [N, C] tensor.
//
// dtypes: logits, loss, dloss and dlogits share `dtype` (f32, f64, f16, bf16); targets are
// `index_dtype` (i32, i64; soft targets: `dtype`, index_dtype unused); the weight is `weight_dtype`
// (dtype or f32). 16-bit and f32 compute and accumulate in f32, f64 in f64.
//
// soft_targets (F.cross_entropy with class probabilities as the target): the targets have the logits'
// shape and dtype, y_c of a row, and every row counts (ignore_index and bad_index_count are unused).
// With q_c = w_c ((1 - e) y_c + e / C) (PyTorch's smoothing of probabilities) and Q = sum_c q_c:
//   ce = sum_c q_c (lse - x_c) = Q lse - sum_c q_c x_c     (a class with q_c = 0 adds nothing, even at
//                                                          x_c = -inf, where PyTorch's 0 * -inf is NaN)
//   dlogits_c = g (Q p_c - q_c) + g_z 2 z lse p_c
// and the mean divides the rows' sum by the row count (PyTorch's mean for probabilities: the weights
// are not its divisor), the z-loss too. y need not sum to 1. The backward reads the targets twice (Q,
// then each q_c).
//
// log_probs (F.nll_loss): the input already holds log-probabilities, so lse is taken as 0 and nothing
// is normalized: row loss = -w_t x_t, dlogits_c = -g w_t [c == t]; label_smoothing and z_loss must be
// 0, the forward writes no lse (leave it empty) and the backward reads neither lse nor the logits
// (both ignored). The forward reads one element a row (the target's).
//
// Any C from 1 up, with no scratch proportional to C. On CUDA a row's logsumexp is one pass over its
// logits (a running max and sum of exps, the smoothing's sums gathered on the way; the target's logit
// read once more); a block takes a row, or each 32768 classes of a longer row, whose pieces a second
// pass merges in order. The CPU reads a row twice (its max, then its exps), one thread a row. Deterministic and
// batch-invariant: a row's loss, lse and gradient depend on that row alone (the kernel for a row is chosen from C, the
// dtypes and the layout, never from the row count). sum and mean are reduced in a fixed order, never by atomics: each
// row's terms (ce, z-loss, w_t, counted) go into the workspace (a host buffer on the CPU), then are added up in a fixed
// order (CUDA: one block, thread i taking rows i, i + 1024, ..., then a fixed tree; CPU: in row order). Views may have
// any strides (the fast path: classes contiguous, 16-byte aligned rows).
#include <optional>

#include "baracuda/core/plan.hpp"

namespace baracuda {

enum class LossReduction : unsigned char { none, sum, mean };
std::string_view loss_reduction_name(LossReduction reduction);

struct CrossEntropyDescriptor {
  DType dtype = DType::f32;           // logits, loss, dloss, dlogits
  DType index_dtype = DType::i64;     // targets
  std::optional<DType> weight_dtype;  // of the weight; nullopt: dtype
  Shape shape;                        // the logits': [C], [N, C] or [N, C, d1, ...] (rank 1..8)
  LossReduction reduction = LossReduction::mean;
  int64_t ignore_index = -100;   // targets equal to it contribute nothing (any value)
  double label_smoothing = 0.0;  // in [0, 1]
  double z_loss = 0.0;           // >= 0 and finite: z lse^2 added per row
  bool has_weight = false;       // class weights [C]
  bool log_probs = false;        // the input holds log-probabilities: F.nll_loss (see above)
  bool soft_targets = false;     // targets are probabilities of the logits' shape and dtype (see above)
};

struct CrossEntropyArgs {
  AnyTensorRef logits;
  AnyTensorRef targets;  // the logits' shape without the class dim (soft_targets: the logits' shape)
  AnyTensorRef weight;   // [C], with has_weight
  AnyTensorMut loss;     // the targets' shape (none) or [] (sum, mean)
  AnyTensorMut lse;      // optional: the targets' shape, f32 (f64 for f64)
  int64_t* bad_index_count = nullptr;
};

struct CrossEntropyBackwardArgs {
  AnyTensorRef dloss;  // the loss's shape
  AnyTensorRef logits;
  AnyTensorRef targets;
  AnyTensorRef weight;  // with has_weight
  AnyTensorRef lse;     // the forward's
  AnyTensorMut dlogits;
  int64_t* bad_index_count = nullptr;
};

struct CrossEntropyOp : OpTag<CrossEntropyDescriptor, CrossEntropyArgs> {};
struct CrossEntropyBackwardOp : OpTag<CrossEntropyDescriptor, CrossEntropyBackwardArgs> {};

using CrossEntropyPlan = Plan<CrossEntropyOp>;
using CrossEntropyBackwardPlan = Plan<CrossEntropyBackwardOp>;

// Fused linear + cross-entropy (Liger-Kernel's fused linear cross-entropy): the cross-entropy of the
// logits hidden @ weight^T + bias against class indices, without ever holding the [N, V] logits:
//   LinearCrossEntropyPlan          loss (and lse) from hidden [N, D], weight [V, D], bias [V] and
//                                   targets [N]; with grad_in_forward also dhidden, dweight, dbias for
//                                   dloss = 1, in the same sweep
//   LinearCrossEntropyBackwardPlan  dhidden, dweight, dbias from dloss: scales the forward's
//                                   gradients (grad_in_forward) or recomputes the logits from the
//                                   saved lse
// The loss is CrossEntropyPlan's (see above) of those logits, with the same options: ignore_index, bad
// targets counted and contributing nothing, label_smoothing, z_loss, class weights (`class_weight`,
// the classifier being `weight`), reductions none, sum and mean (mean over the counted targets'
// weight across every chunk: each chunk gives its sum, the sums are added in chunk order and divided
// once; every target ignored: NaN, as PyTorch). Class weights with a z-loss under the mean (two
// denominators) are refused.
//
// The work is chunked over the tokens: for each chunk of rows (in order),
//   logits  = hidden_chunk @ weight^T (+ bias)        MatmulPlan into f32 (f64 for f64): never rounded
//                                                    to 16 bits, as Liger-Kernel upcasts them
//   loss    the chunk's CrossEntropyPlan (none: its rows of loss; sum, mean: its sum) and lse
//   dlogits CrossEntropyBackwardPlan, over the logits' buffer (in place), with dloss = g (none: the
//           chunk's rows of dloss; sum: dloss; mean: dloss / sum of the counted targets' weights,
//           which a pass over the targets takes first), cast to dtype for 16-bit dtypes
//   dhidden_chunk = dlogits @ weight; dweight += dlogits^T @ hidden_chunk; dbias += the sum of
//           dlogits' rows (MatmulPlans with beta = 1: accumulated in chunk order, no atomics)
// grad_in_forward (reduction sum or mean; Liger-Kernel's choice) runs that gradient half in the forward
// for dloss = 1, so a training step costs about three matmuls of the logits' size; the backward then
// multiplies dhidden, dweight and dbias in place by dloss (cast to each one's dtype first). Without it,
// the backward recomputes each chunk's logits (one more matmul) and takes lse from the forward. Every
// sub-plan is selected with the plan and kept in it; run only runs them, so both backends are those of
// the matmul and cross-entropy plans.
//
// Workspace (workspace_size()): the chunk's f32 logits (and their 16-bit copy), a few vectors of the
// chunk's rows, one value a chunk, and the largest sub-plan's workspace; at most 256 MiB (or
// preference.workspace_limit, if lower) at any N and V: the chunk's rows are the most that fit
// (chunk_rows forces them; select refuses a chunk that does not fit, and a vocabulary so large that one
// row does not).
//
// dtypes: hidden, weight, bias, dhidden share `dtype` (f32, f64, f16, bf16); dweight and dbias are
// `weight_grad_dtype` (dtype, or f32 with a 16-bit dtype: accumulated across chunks in f32);
// loss, dloss, lse and class_weight are f32 (f64 for f64); targets `index_dtype` (i32, i64).
// Deterministic and bit-stable (fixed chunks, reductions in a fixed order); not batch-invariant (the
// matmuls' algorithms are chosen for the chunk's shape). Hidden, weight, dhidden and dweight take the
// matmul plans' layouts (a unit stride along one dim); the rest any strides.
struct LinearCrossEntropyDescriptor {
  DType dtype = DType::f32;        // hidden, weight, bias, dhidden
  DType index_dtype = DType::i64;  // targets
  int64_t tokens = 0;              // N
  int64_t hidden_size = 0;         // D
  int64_t vocab_size = 1;          // V >= 1
  bool has_bias = false;           // bias [V]
  bool has_class_weight = false;   // class_weight [V]
  LossReduction reduction = LossReduction::mean;
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;            // in [0, 1]
  double z_loss = 0.0;                     // >= 0 and finite
  bool grad_in_forward = false;            // sum or mean: the forward also writes the gradients for dloss = 1
  std::optional<DType> weight_grad_dtype;  // of dweight and dbias: nullopt is dtype; f32 with 16-bit dtypes
  int64_t chunk_rows = 0;                  // tokens a chunk; 0: the most the workspace budget holds
  bool allow_tf32 = false;                 // f32 matmuls in TF32 (MatmulDescriptor::allow_tf32)
};

struct LinearCrossEntropyArgs {
  AnyTensorRef hidden;        // [N, D]
  AnyTensorRef weight;        // [V, D]
  AnyTensorRef bias;          // [V], with has_bias
  AnyTensorRef targets;       // [N]
  AnyTensorRef class_weight;  // [V], with has_class_weight
  AnyTensorMut loss;          // [N] (none) or [] (sum, mean)
  AnyTensorMut lse;           // optional: [N], which the recomputing backward reads
  AnyTensorMut dhidden;       // grad_in_forward: optional, [N, D]
  AnyTensorMut dweight;       // grad_in_forward: optional, [V, D]
  AnyTensorMut dbias;         // grad_in_forward with has_bias: optional, [V]
  int64_t* bad_index_count = nullptr;
};

struct LinearCrossEntropyBackwardArgs {
  AnyTensorRef dloss;  // the loss's shape
  // Read to recompute the logits (not with grad_in_forward, where they are ignored):
  AnyTensorRef hidden;
  AnyTensorRef weight;
  AnyTensorRef bias;  // with has_bias
  AnyTensorRef targets;
  AnyTensorRef class_weight;  // with has_class_weight
  AnyTensorRef lse;           // the forward's
  // Each optional. With grad_in_forward: the forward's gradients, multiplied by dloss in place.
  AnyTensorMut dhidden;
  AnyTensorMut dweight;
  AnyTensorMut dbias;  // with has_bias
  int64_t* bad_index_count = nullptr;
};

struct LinearCrossEntropyOp : OpTag<LinearCrossEntropyDescriptor, LinearCrossEntropyArgs> {};
struct LinearCrossEntropyBackwardOp : OpTag<LinearCrossEntropyDescriptor, LinearCrossEntropyBackwardArgs> {};

using LinearCrossEntropyPlan = Plan<LinearCrossEntropyOp>;
using LinearCrossEntropyBackwardPlan = Plan<LinearCrossEntropyBackwardOp>;

// Pointwise losses of an input x against a target y of the same shape (any strides), per element,
// as PyTorch's functions (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss,
// F.binary_cross_entropy, F.binary_cross_entropy_with_logits, F.kl_div), with d = x - y:
//   mse              d^2
//   l1               |d|
//   smooth_l1        |d| < beta ? d^2 / (2 beta) : |d| - beta / 2      (beta 0: l1)
//   huber            |d| < beta ? d^2 / 2 : beta (|d| - beta / 2)       (beta: PyTorch's delta, > 0)
//   bce              -(y log x + (1 - y) log(1 - x)), each log at least -100 (x a probability)
//   bce_with_logits  (1 - y) x + log(1 + exp(-x)), computed as max(x, 0) - x y + log1p(exp(-|x|))
//   kl_div           y (log y - x), 0 where y = 0 (x a log-probability); with log_target, e^y (y - x)
// bce and bce_with_logits take an optional weight w (has_weight; F.binary_cross_entropy's `weight`),
// and bce_with_logits a pos_weight p (has_pos_weight; PyTorch's, which weighs the positive term):
//   bce_with_logits  (1 - y) x + (1 + (p - 1) y) (log1p(exp(-|x|)) + max(-x, 0))   (with pos_weight)
//   loss             w times the kind's loss (with weight)
// Both are views of the input's shape in the input's dtype: PyTorch's broadcasting (a weight [C], a
// pos_weight [C] over [N, C]) is a view with stride 0 along the broadcast dims. The mean still divides
// by the element count (as PyTorch).
// Reductions: none (loss of the input's shape), sum, mean (over every element; an empty input's mean
// is NaN, as PyTorch). The backward writes dinput = g dloss/dx with g = dloss (none: per element; sum:
// the scalar) or dloss / numel (mean):
//   mse 2d; l1 sign(d) (0 at 0); smooth_l1 |d| < beta ? d / beta : sign(d); huber |d| < beta ? d :
//   beta sign(d); bce (x - y) / max(x (1 - x), 1e-12); bce_with_logits sigmoid(x) - y (with
//   pos_weight: (1 - y) - (1 + (p - 1) y) sigmoid(-x)); kl_div -y (log_target: -e^y); times w with a
//   weight.
// dtypes: x, y, loss, dloss and dinput share `dtype` (f32, f64, f16, bf16); 16-bit and f32 compute
// and accumulate in f32, f64 in f64. sum and mean add fixed chunks of elements in order, then the
// chunks in order: deterministic, no atomics. dinput may be the input or dloss (none) exactly.
enum class PointwiseLossKind : unsigned char { mse, l1, smooth_l1, huber, bce, bce_with_logits, kl_div };
std::string_view pointwise_loss_name(PointwiseLossKind kind);

struct PointwiseLossDescriptor {
  DType dtype = DType::f32;
  PointwiseLossKind kind = PointwiseLossKind::mse;
  Shape shape;  // of the input and the target (rank 0..8)
  LossReduction reduction = LossReduction::mean;
  double beta = 1.0;            // smooth_l1's beta (>= 0), huber's delta (> 0); finite
  bool log_target = false;      // kl_div: the target is a log-probability
  bool has_weight = false;      // bce, bce_with_logits: a weight of the shape (broadcast: stride 0)
  bool has_pos_weight = false;  // bce_with_logits: a pos_weight of the shape (broadcast: stride 0)
};

struct PointwiseLossArgs {
  AnyTensorRef input;
  AnyTensorRef target;
  AnyTensorRef weight;      // with has_weight
  AnyTensorRef pos_weight;  // with has_pos_weight
  AnyTensorMut loss;        // the shape (none) or [] (sum, mean)
};

struct PointwiseLossBackwardArgs {
  AnyTensorRef dloss;  // the loss's shape
  AnyTensorRef input;
  AnyTensorRef target;
  AnyTensorRef weight;      // with has_weight
  AnyTensorRef pos_weight;  // with has_pos_weight
  AnyTensorMut dinput;
};

struct PointwiseLossOp : OpTag<PointwiseLossDescriptor, PointwiseLossArgs> {};
struct PointwiseLossBackwardOp : OpTag<PointwiseLossDescriptor, PointwiseLossBackwardArgs> {};

using PointwiseLossPlan = Plan<PointwiseLossOp>;
using PointwiseLossBackwardPlan = Plan<PointwiseLossBackwardOp>;

}  // namespace baracuda

#pragma once
// Normalization over the last `normalized_dims` dims of x (F.layer_norm / F.rms_norm): each row of
// n = the product of those dims is normalized on its own.
//   LayerNormPlan          y = (h - mean) * rstd * w + b,   rstd = 1 / sqrt(var + eps) (var biased)
//   RmsNormPlan            y = h * rstd * w,                rstd = 1 / sqrt(mean(h^2) + eps)
// with h = x, or with a residual (pre-norm blocks, the fused add + norm of inference engines)
// h = x + residual, rounded to x's dtype and written to `h` in the same pass, as an unfused add
// then norm would. The weight w is optional (1 where absent) and read as w or, with
// `weight_offset = 1`, as 1 + w (Gemma's RMSNorm); the bias b (LayerNorm alone) is optional.
// `mean` (LayerNorm) and `rstd` are the saved statistics, optional outputs in `stats` precision
// (f32, f64 for f64 inputs) of shape x.shape[:-normalized_dims].
//   LayerNormBackwardPlan / RmsNormBackwardPlan read dy, x (the forward's normalized input: its x,
//   or with a residual its h = x + residual), the weight and the saved mean / rstd, and write each
//   of, all optional:
//     dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) [+ dh],   g = dy * w, xhat = (h - mean) * rstd
//     (RmsNorm: no mean(g) term, xhat = h * rstd); with a residual, dh (the gradient reaching h by the
//     skip path) is added, and dx is the gradient of both x and residual;
//     dweight = sum over rows of dy * xhat;  dbias = sum over rows of dy.
//
// dtypes: x, residual, h, y, dy, dh, dx share `dtype` (f32, f64, f16, bf16); the weight, bias and
// their gradients have `weight_dtype` (dtype or f32). 16-bit and f32 data compute and accumulate in
// f32, f64 in f64. Numerics: two passes over the row (the mean, then the squared deviations), so
// constant rows give var 0 and huge magnitudes (1e30 in f32) do not cancel; NaN or inf in a row
// gives NaN over that row, as PyTorch; an empty row (normalized size 0) has mean 0 and variance 0.
//
// Deterministic always, and batch-invariant: a row's y, mean and rstd depend only on that row (the
// kernel for a row is chosen from n and the dtypes alone, never from the row count), so they are
// the same bits whatever the other rows. dweight and dbias are summed in a fixed order: rows in
// fixed chunks (their count chosen at select from the shape and the device), then the chunks in
// order; the partial sums live in the workspace.
//
// Views may have any strides (zero strides broadcast an input); outputs must not overlap an input or
// each other, except y over x or residual (in place) and dx over dy, x or dh.
#include <optional>

#include "baracuda/core/plan.hpp"

namespace baracuda {

struct NormDescriptor {
  DType dtype = DType::f32;
  std::optional<DType> weight_dtype;  // of weight, bias, dweight, dbias; nullopt: dtype
  Shape shape;                        // x's: rank 1..8
  int normalized_dims = 1;            // 1..rank: the trailing dims normalized together
  double eps = 1e-5;                  // > 0 and finite
  bool has_weight = true;
  bool has_bias = true;        // LayerNorm alone (RmsNorm must leave it false)
  double weight_offset = 0.0;  // 0 (w) or 1 (1 + w: Gemma)
  bool residual = false;       // h = x + residual, written to args.h (forward); dh read (backward)
};

struct NormArgs {
  AnyTensorRef x;
  AnyTensorRef residual;  // with descriptor.residual
  AnyTensorRef weight;    // the normalized shape, with has_weight
  AnyTensorRef bias;      // with has_bias (LayerNorm)
  AnyTensorMut y;
  AnyTensorMut h;     // x + residual, with descriptor.residual
  AnyTensorMut mean;  // optional (LayerNorm): x.shape[:-normalized_dims]
  AnyTensorMut rstd;  // optional
};

struct NormBackwardArgs {
  AnyTensorRef dy;
  AnyTensorRef x;  // the forward's normalized input: its x, or with a residual its h
  AnyTensorRef weight;
  AnyTensorRef mean;  // LayerNorm
  AnyTensorRef rstd;
  AnyTensorRef dh;       // optional, with descriptor.residual: the gradient reaching h by the skip path
  AnyTensorMut dx;       // optional
  AnyTensorMut dweight;  // optional, with has_weight
  AnyTensorMut dbias;    // optional, with has_bias
};

struct LayerNormOp : OpTag<NormDescriptor, NormArgs> {};
struct RmsNormOp : OpTag<NormDescriptor, NormArgs> {};
struct LayerNormBackwardOp : OpTag<NormDescriptor, NormBackwardArgs> {};
struct RmsNormBackwardOp : OpTag<NormDescriptor, NormBackwardArgs> {};

// GroupNorm (F.group_norm) over x of shape [N, C, *]: the C channels in `groups` groups of C / groups
// consecutive channels; each (sample, group) is normalized over its channels and all of * together:
//   GroupNormPlan          y = act((x - mean) * rstd * w[c] + b[c]),  act: identity, or with `silu`
//                          z * sigmoid(z) (the GroupNorm + SiLU of diffusion U-Nets, in one pass)
// mean and rstd are optional outputs [N, groups] in `stats` precision. Instance norm (F.instance_norm
// without running statistics) is groups = C; channels-last (NHWC) data is a view of x [N, C, H, W]
// with strides (H W C, 1, W C, C).
//   GroupNormBackwardPlan reads dy, x, the weight, the bias (with silu alone: the activation's input
//   is recomputed), mean and rstd, and writes each of, all optional:
//     dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) over the group,  g = dz * w[c],
//     dz = dy, or with silu dy * sigmoid(z) * (1 + z * (1 - sigmoid(z)));
//     dweight[c] = sum over samples and * of dz * xhat;  dbias[c] = sum of dz.
// dtypes, NaN / inf and empty groups as LayerNorm's above; the statistics as robust as two passes
// (CUDA: each 16-byte vector's mean and squared deviations, merged by Chan's formula in a fixed
// order; the CPU: two passes), so constant groups give variance 0.
// Deterministic always and batch-invariant: a group's statistics and outputs depend on that group
// alone (a block a group on CUDA, in an order fixed by the group's shape and x's layout); dweight
// and dbias add each sample's per-channel sums in sample order (workspace).
// Views: any strides; y may be x exactly (in place), dx may be dy or x exactly.
struct GroupNormDescriptor {
  DType dtype = DType::f32;
  std::optional<DType> weight_dtype;  // of weight, bias, dweight, dbias; nullopt: dtype
  Shape shape;                        // x's: [N, C, *], rank 2..8
  int64_t groups = 1;                 // >= 1, dividing C
  double eps = 1e-5;                  // > 0 and finite
  bool has_weight = true;
  bool has_bias = true;
  bool silu = false;  // y = silu(group_norm(x))
};

struct GroupNormArgs {
  AnyTensorRef x;
  AnyTensorRef weight;  // [C], with has_weight
  AnyTensorRef bias;    // [C], with has_bias
  AnyTensorMut y;
  AnyTensorMut mean;  // optional: [N, groups]
  AnyTensorMut rstd;  // optional: [N, groups]
};

struct GroupNormBackwardArgs {
  AnyTensorRef dy;
  AnyTensorRef x;
  AnyTensorRef weight;  // with has_weight
  AnyTensorRef bias;    // with has_bias and silu
  AnyTensorRef mean;
  AnyTensorRef rstd;
  AnyTensorMut dx;       // optional
  AnyTensorMut dweight;  // optional, with has_weight
  AnyTensorMut dbias;    // optional, with has_bias
};

struct GroupNormOp : OpTag<GroupNormDescriptor, GroupNormArgs> {};
struct GroupNormBackwardOp : OpTag<GroupNormDescriptor, GroupNormBackwardArgs> {};

// BatchNorm (F.batch_norm) over x with its channels along `channel_dim` (1 for [N, C, *]; any dim):
// each channel normalized over every other dim together (M = numel / C elements).
//   BatchNormPlan, training:  y = (x - mean) * rstd * w[c] + b[c] with the batch's mean and biased
//     variance; `save_mean` and `save_rstd` (optional, [C], stats precision) keep them for the
//     backward; with `running_stats` the running estimates are updated in place, as PyTorch:
//     running_mean = (1 - momentum) running_mean + momentum mean, running_var likewise with the
//     unbiased variance (var M / (M - 1)). Training needs M > 1, as PyTorch.
//   BatchNormPlan, inference (training = false): y = (x - running_mean) / sqrt(running_var + eps) *
//     w + b; running_stats must be set; nothing is written but y.
//   BatchNormBackwardPlan reads dy, x, the weight and, training, save_mean / save_rstd (dx has the
//     batch statistics' terms: dx = w rstd (dy - mean(dy) - xhat mean(dy xhat))), or, inference,
//     running_mean / running_var (dx = w rstd dy); writes each of, optional: dx, dweight [C] =
//     sum of dy xhat, dbias [C] = sum of dy.
// dtypes: x, y, dy, dx share `dtype` (f32, f64, f16, bf16); weight, bias, their gradients and the
// running statistics have `weight_dtype` (dtype or f32); saved statistics are f32 (f64 for f64).
// Deterministic always: each channel's elements in fixed chunks (their count from the shape and
// the device), each chunk's moments or sums merged in chunk order (Chan's formula for the moments,
// as robust as two passes). Views: any strides (channels-last included); y may be x exactly, dx
// may be dy or x exactly.
struct BatchNormDescriptor {
  DType dtype = DType::f32;
  std::optional<DType> weight_dtype;  // of weight, bias, running stats, dweight, dbias; nullopt: dtype
  Shape shape;                        // x's, rank 1..8 (rank 1: x is [C], M = 1)
  int channel_dim = 1;                // 0..rank-1 (rank 1: 0)
  double eps = 1e-5;                  // > 0 and finite
  double momentum = 0.1;              // in [0, 1]: the running statistics' update (training)
  bool training = true;
  bool running_stats = true;  // running_mean / running_var given (updated in training, read in inference)
  bool has_weight = true;
  bool has_bias = true;
};

struct BatchNormArgs {
  AnyTensorRef x;
  AnyTensorRef weight;  // [C], with has_weight
  AnyTensorRef bias;    // [C], with has_bias
  AnyTensorMut y;
  AnyTensorMut running_mean;  // [C], with running_stats: read, and in training updated in place
  AnyTensorMut running_var;   // [C], likewise
  AnyTensorMut save_mean;     // optional, training: [C]
  AnyTensorMut save_rstd;     // optional, training: [C]
};

struct BatchNormBackwardArgs {
  AnyTensorRef dy;
  AnyTensorRef x;
  AnyTensorRef weight;        // with has_weight
  AnyTensorRef save_mean;     // training
  AnyTensorRef save_rstd;     // training
  AnyTensorRef running_mean;  // inference
  AnyTensorRef running_var;   // inference
  AnyTensorMut dx;            // optional
  AnyTensorMut dweight;       // optional, with has_weight
  AnyTensorMut dbias;         // optional, with has_bias
};

struct BatchNormOp : OpTag<BatchNormDescriptor, BatchNormArgs> {};
struct BatchNormBackwardOp : OpTag<BatchNormDescriptor, BatchNormBackwardArgs> {};

using LayerNormPlan = Plan<LayerNormOp>;
using RmsNormPlan = Plan<RmsNormOp>;
using LayerNormBackwardPlan = Plan<LayerNormBackwardOp>;
using RmsNormBackwardPlan = Plan<RmsNormBackwardOp>;
using GroupNormPlan = Plan<GroupNormOp>;
using GroupNormBackwardPlan = Plan<GroupNormBackwardOp>;
using BatchNormPlan = Plan<BatchNormOp>;
using BatchNormBackwardPlan = Plan<BatchNormBackwardOp>;

}  // namespace baracuda

#pragma once
// Rotary position embedding (RoPE) of q and, optionally, k in one pass. q is [B, S, H_q, D] and k
// [B, S, H_k, D], views with any strides (so [B, H, S, D] tensors work as permuted views); the token
// (b, s) sits at position p = positions[b, s]. The first `rotary_dim` dims of each head form
// rotary_dim / 2 pairs (a, b), pair i rotated by the angle p * inv_freq[i]:
//   out_a = a cos - b sin,   out_b = b cos + a sin
// half_split (NeoX, Llama; HF's rotate_half): pair i is dims (i, i + rotary_dim / 2);
// interleaved (GPT-J): pair i is dims (2i, 2i + 1). Dims past rotary_dim are copied unchanged.
// inv_freq[i] = base^(-2i / rotary_dim), or read from an f32 table (scaled variants such as Llama
// 3's or YaRN's, computed by the caller).
//   RotaryBackwardPlan: dq, dk from dq_out, dk_out by the transposed rotation (the angle negated),
//   the same options; it is also the exact inverse of the forward (within rounding).
//
// Numerics: the angle is position * inv_freq in f64 (a position converted to double, inv_freq from
// base in f64, a table's f32 value exact in f64), and its cos / sin are computed in f64 (the library's
// own, cuda/device/rotary_math.h: within a few f64 ulps plus 2^-52 of the angle, so position 10^6 loses
// nothing an f32 output could show, where an f32 angle is off by up to 0.03 rad), then rounded to f32;
// the rotation is done in f32 (f64 for f64 data). Both backends compute the same operations without
// FMA contraction: the same bits on the CPU and the GPU.
//
// dtypes: q, k, their outputs and gradients share `dtype` (f32, f64, f16, bf16); positions are
// `index_dtype` (i32, i64; any value, negative ones rotate backwards), shape [B, S] with zero strides
// to broadcast (one [S] row for every batch: stride 0 along B). Deterministic always.
//
// Views may have any strides; q_out may be q exactly and k_out k exactly (in place), and outputs
// share no memory with anything else.
#include <cstdint>

#include "baracuda/core/plan.hpp"

namespace baracuda {

enum class RotaryLayout : unsigned char { half_split, interleaved };
std::string_view rotary_layout_name(RotaryLayout layout);

struct RotaryDescriptor {
  DType dtype = DType::f32;        // of q, k, q_out, k_out (and the backward's): f32 f64 f16 bf16
  DType index_dtype = DType::i64;  // of positions: i32, i64
  int64_t batch = 0;               // B
  int64_t seq_len = 0;             // S
  int64_t q_heads = 0;             // H_q
  int64_t k_heads = 0;             // H_k; 0: q alone (k and k_out are not used)
  int64_t head_dim = 0;            // D >= 1
  int64_t rotary_dim = 0;          // the dims rotated: even, <= head_dim; 0: head_dim
  RotaryLayout layout = RotaryLayout::half_split;
  double base = 10000.0;      // > 0 and finite (checked even when a table is given)
  bool has_inv_freq = false;  // read inv_freq [rotary_dim / 2] (f32) instead of base's
};

struct RotaryArgs {
  AnyTensorRef q;          // [B, S, H_q, D]
  AnyTensorRef k;          // [B, S, H_k, D], with k_heads > 0
  AnyTensorRef positions;  // [B, S], index_dtype
  AnyTensorRef inv_freq;   // [rotary_dim / 2] f32, with has_inv_freq
  AnyTensorMut q_out;      // [B, S, H_q, D]; may be q (in place)
  AnyTensorMut k_out;      // [B, S, H_k, D], with k_heads > 0; may be k (in place)
};

struct RotaryBackwardArgs {
  AnyTensorRef dq_out;     // the gradient of q_out
  AnyTensorRef dk_out;     // of k_out, with k_heads > 0
  AnyTensorRef positions;  // the forward's
  AnyTensorRef inv_freq;   // the forward's, with has_inv_freq
  AnyTensorMut dq;         // may be dq_out (in place)
  AnyTensorMut dk;         // with k_heads > 0; may be dk_out (in place)
};

struct RotaryOp : OpTag<RotaryDescriptor, RotaryArgs> {};
struct RotaryBackwardOp : OpTag<RotaryDescriptor, RotaryBackwardArgs> {};

using RotaryPlan = Plan<RotaryOp>;
using RotaryBackwardPlan = Plan<RotaryBackwardOp>;

}  // namespace baracuda

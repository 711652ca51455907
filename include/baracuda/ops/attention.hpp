#pragma once
// Scaled-dot-product attention (F.scaled_dot_product_attention, jax.nn.dot_product_attention), per
// batch entry b and query head h, whose kv head is h / (heads_q / heads_kv) (grouped-query and
// multi-query attention):
//   AttentionPlan          out = softmax(s) v,   s_ij = cap(scale * q_i . k_j) + bias_ij, masked
// with cap(x) = softcap * tanh(x / softcap) where softcap > 0 (Gemma 2), x otherwise. Views:
//   q    [B, S_q,  H_q,  D]      k  [B, S_kv, H_kv, D]      v  [B, S_kv, H_kv, D_v]
//   out  [B, S_q,  H_q,  D_v]    lse [B, H_q, S_q]          bias [B, H_q, S_q, S_kv]
// any strides (so [B, H, S, D] buffers work through strides; a bias broadcasts along dims with zero
// strides). lse, the row's logsumexp (log of the sum of exp(s_ij) over its unmasked keys), is an
// optional output in `acc` precision (f32; f64 for f64 data), the backward's input.
//
// Masks: key j is visible to query i where diag(i) - window_left <= j <= diag(i) + window_right,
// each bound dropped where its window is -1, with diag(i) = i (top_left: PyTorch's is_causal) or
// i + S_kv - S_q (bottom_right: FlashAttention's, the last query sees the last key). `causal` is
// window_right 0 (a window_right of -1 reads as 0 then). The bias (dtype or f32) is added after the
// soft-cap and may hold -inf. A row with no visible key (a fully masked row, also one whose bias is
// -inf throughout) has out 0 and lse -inf, and the backward gives it zero gradients (on CUDA through
// cuDNN, a row whose bias is -inf throughout is there as cuDNN computes it).
// CUDA runs cuDNN's fused attention (`cudnn`) where it serves: f16 / bf16, head dims multiples of 8 up
// to 256, the masks and the bias, no soft-cap, no mask leaving a row with no key; the rest of the
// dense cases (f32, f64, the soft-cap, head dims up to 512, such masks; not packed sequences) runs
// `split_kv`, kernels of ours on CUDA cores (far slower than cuDNN at prefill sizes; deterministic in
// both directions), as does every dense case in a build without the cuDNN frontend.
// docs/OPS.md lists what is left refused.
//
//   AttentionBackwardPlan reads q, k, v, out, dout, lse (and the bias) and writes each of dq, dk, dv
// (all optional): with P_ij = exp(s_ij - lse_i) recomputed from lse and D_i = dout_i . out_i,
//   dv_j = sum_i P_ij dout_i,   dS_ij = P_ij (dout_i . v_j - D_i) cap'(.),
//   dq_i = scale sum_j dS_ij k_j,   dk_j = scale sum_i dS_ij q_i,
// dk and dv summed over the query heads sharing the kv head. The bias has no gradient.
//
// dtypes: q, k, v, out, dout, dq, dk, dv share `dtype` (f32, f64, f16, bf16); 16-bit and f32 data
// compute and accumulate in f32, f64 in f64. The forward is deterministic (its rows independent).
// The backward on the CPU sums in a fixed order (FlashAttention-2's two passes: dk and dv per (b, kv
// head, kv tile) over the query heads and tiles in order, then dq per (b, q head, q tile)), without
// atomics. On CUDA the default (`cudnn`) is cuDNN's backward, whose dq is summed by atomics (not
// bit-identical across runs, as PyTorch's); with PlanPreference::determinism required the plan takes
// `cudnn_deterministic`, cuDNN's deterministic algorithm, at some cost in speed. `split_kv`'s backward
// has no atomics.
//
// Variable-length sequences (`varlen`, FlashAttention's varlen API): `batch` sequences packed along
// one token dim, q [total_q, H_q, D], k [total_kv, H_kv, D], v [total_kv, H_kv, D_v],
// out [total_q, H_q, D_v], lse [H_q, total_q]; sequence b's queries are rows
// [cu_seqlens_q[b], cu_seqlens_q[b + 1]) and its keys rows [cu_seqlens_kv[b], cu_seqlens_kv[b + 1])
// (i32, `batch + 1` entries each, from 0 to total, nondecreasing), each of at most seq_q / seq_kv
// rows (the longest sequences). Masks and their alignment apply within each sequence; an empty
// sequence is allowed (no keys: its queries' out 0 and lse -inf). No bias. Offsets breaking these
// rules: on the CPU a Status naming args.cu_seqlens_q / args.cu_seqlens_kv, and nothing is written; on
// CUDA (checked on the device) every element of out and lse (the backward: dq, dk, dv) NaN. CUDA runs
// packed sequences through cuDNN's ragged graphs (f16 / bf16, cuDNN's head dims; a bottom-right mask
// only where seq_q <= seq_kv), the lengths as cuDNN's padding mask, a kernel of ours writing the rows
// with no key and the lse; its workspace adds cuDNN's padded statistics [B, H_q, seq_q] (f32).
//
// A paged KV cache (`paged`, the serving case: vLLM's and FlashInfer's layout): k and v are caches of
// `num_blocks` blocks of `block_size` rows, k [num_blocks, block_size, H_kv, D] and
// v [num_blocks, block_size, H_kv, D_v]; sequence b holds seq_lens_kv[b] keys (i32 [batch], each at
// most seq_kv, the longest, and at most the cache's num_blocks * block_size), its key j in row j % block_size of
// block block_table[b, j / block_size] (i32 [batch, max_blocks], entries in [0, num_blocks); only
// the entries a sequence's keys reach are read). q, out and lse are dense as above; the masks and
// their alignment apply with each sequence's own length (decode: causal, bottom_right). No bias, no
// varlen, no backward. Lengths or block entries breaking these rules: on the CPU a Status naming
// args.seq_lens_kv / args.block_table, and nothing is written; on CUDA, which checks them on the
// device (no round trip to the host, so decode steps can be captured in a graph), NaN in out and lse
// for every row of that sequence (for a bad block entry, at least the rows whose keys reach it: those
// computed together, up to 8 (query head, query) rows of one kv head), the other sequences' rows as
// without it; never a read outside the cache. CUDA runs paged caches through a
// split-key decode kernel of ours (`paged_decode`: every dtype, mask, head dim and the soft-cap; the
// query heads of a kv head read its keys once; S_q up to a few queries is what it is made for, more
// re-reads the keys once per 8 (query head, query) rows), deterministic; its workspace holds the
// splits' partial rows.
//
// Outputs must not overlap an input or each other.
#include <optional>

#include "baracuda/core/plan.hpp"

namespace baracuda {

// Where the causal / window diagonal lies when S_q != S_kv.
enum class CausalAlignment : unsigned char {
  top_left,      // query i's diagonal is key i (PyTorch's is_causal)
  bottom_right,  // query i's diagonal is key i + S_kv - S_q (FlashAttention)
};

struct AttentionDescriptor {
  DType dtype = DType::f32;
  int64_t batch = 1;
  int64_t seq_q = 0;
  int64_t seq_kv = 0;
  int64_t heads_q = 1;
  int64_t heads_kv = 1;     // divides heads_q
  int64_t head_dim = 64;    // D of q and k: 1..512
  int64_t head_dim_v = 64;  // D_v of v and out: 1..512
  double scale = 0.0;       // > 0 and finite, or 0: 1 / sqrt(head_dim)
  bool causal = false;      // window_right 0
  CausalAlignment alignment = CausalAlignment::top_left;
  int64_t window_left = -1;         // keys before the diagonal a query sees; -1: all
  int64_t window_right = -1;        // keys after it; -1: all (0 with causal)
  double softcap = 0.0;             // >= 0 and finite; 0: none
  bool has_bias = false;            // args.bias added to the scores
  std::optional<DType> bias_dtype;  // dtype or f32; nullopt: dtype
  bool varlen = false;              // packed sequences (above): seq_q / seq_kv their longest
  int64_t total_q = 0;              // with varlen: the packed query rows
  int64_t total_kv = 0;             // with varlen: the packed key rows
  bool paged = false;               // k and v are block-paged caches (above)
  int64_t block_size = 0;           // with paged: rows a block
  int64_t num_blocks = 0;           // with paged: blocks in each cache
  int64_t max_blocks = 0;           // with paged: the block table's columns
};

struct AttentionArgs {
  AnyTensorRef q;
  AnyTensorRef k;
  AnyTensorRef v;
  AnyTensorRef bias;  // with has_bias
  AnyTensorMut out;
  AnyTensorMut lse;              // optional
  AnyTensorRef cu_seqlens_q{};   // with varlen: [batch + 1] i32
  AnyTensorRef cu_seqlens_kv{};  // with varlen: [batch + 1] i32
  AnyTensorRef block_table{};    // with paged: [batch, max_blocks] i32
  AnyTensorRef seq_lens_kv{};    // with paged: [batch] i32
};

struct AttentionBackwardArgs {
  AnyTensorRef q;
  AnyTensorRef k;
  AnyTensorRef v;
  AnyTensorRef bias;  // with has_bias
  AnyTensorRef out;
  AnyTensorRef dout;
  AnyTensorRef lse;
  AnyTensorMut dq;               // optional
  AnyTensorMut dk;               // optional
  AnyTensorMut dv;               // optional
  AnyTensorRef cu_seqlens_q{};   // with varlen
  AnyTensorRef cu_seqlens_kv{};  // with varlen
};

struct AttentionOp : OpTag<AttentionDescriptor, AttentionArgs> {};
struct AttentionBackwardOp : OpTag<AttentionDescriptor, AttentionBackwardArgs> {};

using AttentionPlan = Plan<AttentionOp>;
using AttentionBackwardPlan = Plan<AttentionBackwardOp>;

}  // namespace baracuda

#pragma once
// Kernel parameter structs of the kernels compiled at select: plain C++ that the host compiler and
// NVRTC both read (no headers, no std), so a launch passes the struct the host filled, by value.
#include "cuda/device/walk.h"

namespace baracuda::device {

// The norm kernels (cuda/device/norm.cuh). Row tensors are walked by `row` over the leading dims
// and by `inner` along the normalized ones.
struct NormForwardParams {
  const void* x;
  const void* residual;  // null: h = x
  const void* weight;    // null: 1
  const void* bias;      // null: 0
  void* y;
  void* h;     // null unless residual
  void* mean;  // stats precision; null: not written
  void* rstd;
  long long rows, n;
  double eps, weight_offset;
  Walk<6> row;    // x, residual, y, h, mean, rstd
  Walk<6> inner;  // x, residual, y, h, weight, bias
};

struct NormBackwardParams {
  const void* dy;
  const void* h;
  const void* weight;  // null: 1
  const void* mean;    // null: 0 (RmsNorm)
  const void* rstd;
  const void* dh;  // null: no skip-path gradient
  void* dx;        // null: not written
  void* partial;   // stats precision [chunks, n] of dweight, then [chunks, n] of dbias (workspace)
  int want_dweight, want_dbias;
  long long rows, n, rows_per_chunk;
  double weight_offset;
  Walk<6> row;    // dy, h, dh, dx, mean, rstd
  Walk<5> inner;  // dy, h, dh, dx, weight
};

// The chunks' partial sums, added in chunk order, into dweight and dbias.
struct NormFinalizeParams {
  const void* partial;
  void* dweight;  // null: not written
  void* dbias;
  long long n, chunks;
  Walk<2> inner;  // dweight, dbias
};

// The group norm kernels (cuda/device/group_norm.cuh): a block a (sample, group); x-shaped views
// (the forward's x, y; the backward's dy, x, dx) are addressed by their N and C strides and the
// `space` walk over the spatial dims.
struct GroupNormParams {
  const void* x;
  const void* dy;      // backward
  const void* weight;  // null: 1
  const void* bias;    // null: 0
  void* y;             // forward
  void* dx;            // backward; null: not written
  void* mean;          // stats precision [N, groups]; the forward's may be null (not written)
  void* rstd;
  void* partial;  // backward: [N, C] sums of dz * xhat, then [N, C] of dz (null: not kept)
  long long samples, channels, groups, group_channels, spatial;
  long long n_stride[3], c_stride[3];
  long long weight_stride, bias_stride, mean_stride[2], rstd_stride[2];
  double eps;
  int channel_minor;  // walk a group channels fastest (channels-last views)
  Walk<3> space;      // rank 0 or 1 unless the kernel is the general one
};

// The batch norm kernels (cuda/device/batch_norm.cuh): a block a (channel, chunk of its elements);
// x-shaped views (the forward's x, y; the backward's dy, x, dx) are addressed by their channel
// stride and the `walk` over every other dim.
struct BatchNormParams {
  const void* x;
  const void* dy;      // backward
  const void* weight;  // null: 1
  const void* bias;    // null: 0
  void* y;             // forward
  void* dx;            // backward; null: not written
  void* running_mean;  // weight dtype; null: none (training: updated; inference and its backward: read)
  void* running_var;
  void* save_mean;  // stats precision (forward: written if not null; training backward: read)
  void* save_rstd;
  void* dweight;  // backward; null: not written
  void* dbias;
  void* partial;  // workspace: each (channel, chunk)'s moments (3) or sums (2)
  long long channels, elements, chunks, chunk_len;
  long long c_stride[3];
  long long weight_stride, bias_stride, running_mean_stride, running_var_stride, save_mean_stride, save_rstd_stride,
      dweight_stride, dbias_stride;
  double eps, momentum;
  int training;
  Walk<3> walk;  // rank 0 to 2 unless the kernel is the general one
};

// The cross-entropy kernels (cuda/device/loss.cuh). Rows are walked by `row` over every dim of the
// logits but the class dim; a row's classes are `class_stride` apart (dlogits: `dclass_stride`).
struct CrossEntropyParams {
  const void* logits;
  void* dlogits;                        // backward
  const void* targets;                  // int or long long
  const void* weight;                   // null: 1
  const void* dloss;                    // backward
  void* loss;                           // forward
  void* lse;                            // compute precision: the forward's optional output (null: not written), the
                                        // backward's input
  void* terms;                          // workspace: [rows][4] row terms (forward, sum and mean)
  void* pieces;                         // workspace: [rows][chunks][4] pieces of rows (forward, chunks > 1)
  void* totals;                         // workspace: W, sum(w_t), count (backward)
  void* masses;                         // workspace: each row's Q = sum_c q_c (backward, soft targets)
  unsigned long long* bad_index_count;  // null: not counted
  long long rows, classes, chunks, chunk_len, class_stride, dclass_stride, target_class_stride, weight_stride,
      ignore_index;
  double smoothing, z;
  int reduction;  // cross_entropy.h's kReduceNone, kReduceSum, kReduceMean
  int log_probs;  // the input holds log-probabilities (F.nll_loss): lse is 0, nothing normalized
  int soft;       // the targets are probabilities of the logits' shape (targets: T)
  Walk<5> row;    // logits, dlogits, targets, loss / dloss (reduction none), lse
};

// The matmul family's elementwise passes (cuda/device/matmul.cuh), element i of a walk over the
// output's dims: dst = act(scale * src + bias[(i % n) * bias_stride]) (a GEMM's result without its
// GEMM, its unfused epilogue, c copied into out), dst = act(src) / src * act'(pre) (the linear plans), dst = src (an
// f32 accumulator rounded), or ones.
struct MatmulPassParams {
  const void* src;  // null: 0
  const void* pre;
  const void* bias;  // null: none
  void* dst;
  long long total, n, bias_stride;
  double scale;
  Walk<3> walk;  // src, pre, dst
};

// The random plans (cuda/device/random.cuh): element i of the walk over the logical shape draws
// stream position offset + i (cuda/device/philox.h).
struct RandomParams {
  void* out;
  long long total;
  unsigned long long seed, offset;
  unsigned long long threshold;    // bernoulli: bits below it give 1
  unsigned long long range;        // randint: high - low
  unsigned long long range_magic;  // randint: 2^64 / range rounded up, mod 2^64 (random_below)
  double low, high;                // uniform, randint; normal: mean, std; exponential: -, lambda
  float scale, shift;              // f32 and 16-bit normal: std, mean; exponential: 1 / lambda, 0 (in f32)
  Walk<1> walk;
};

// randperm (cuda/device/randperm.cuh): keys and values 0..n-1 into the workspace, sorted there by
// CUB, then the sorted values written to out.
struct RandpermParams {
  unsigned long long* keys;  // [n]
  long long* values;         // [n]: 0..n-1 before the sort
  const long long* sorted;   // [n]: the values by key
  void* out;                 // [n], i32 or i64, out_stride apart
  long long n, out_stride;
  unsigned long long seed, offset;
};

// MultinomialPlan (cuda/device/multinomial.cuh): rows of weights, `samples` indices a row.
struct MultinomialParams {
  const void* probs;  // [rows, categories], probs_row_stride / probs_stride apart
  void* out;          // [rows, samples], i32 or i64, out_row_stride / out_stride apart
  long long rows, categories, samples;
  long long probs_row_stride, probs_stride, out_row_stride, out_stride;
  unsigned long long seed, offset;
  // Without replacement, CUB's radix sort's pairs (rows x categories each): (row << 32 | the key's
  // bits, category) in, sorted out.
  unsigned long long* keys;
  long long* values;
  const unsigned long long* sorted_keys;
  const long long* sorted_values;
};

struct DropoutParams {
  const void* src;  // x (forward) or dy (backward)
  void* dst;        // y or dx
  void* mask;       // optional bool
  long long total;
  unsigned long long seed, offset;
  unsigned long long threshold;  // bits below it drop the element
  double scale;                  // 1 / (1 - p), already rounded to the compute type
  Walk<3> walk;                  // src, dst, mask
};

// The rotary plans (cuda/device/rotary.cuh, cpu/rotary.cpp): token t = b S + s has `items` work
// items: pairs 0 .. pairs - 1 (the pair's cos / sin, cuda/device/rotary_math.h, applied to every
// head of both tensors), then, where an output is not its input, dims 2 pairs .. D - 1 copied.
struct RotaryParams {
  const void* src[2];  // q, k (forward) or dq_out, dk_out (backward); heads[1] = 0: q alone
  void* dst[2];        // q_out, k_out or dq, dk
  const void* positions;
  const float* inv_freq;  // null: base^(-2i / rotary_dim), from log2_base
  long long seq, tokens, head_dim, pairs, items;
  long long heads[2];
  long long src_strides[2][4], dst_strides[2][4];  // along B, S, H, D
  long long position_strides[2];                   // along B, S (zero: broadcast)
  long long inv_freq_stride;
  int copy[2];  // tensor t copies its dims past rotary_dim (its output is not its input)
  double rotary_dim;
  double log2_base;
  double sign;  // 1: the forward's rotation; -1: the backward's (the transposed one)
};

// The pointwise loss plans (cuda/device/pointwise_loss.cuh, cpu/pointwise_loss.cpp): element i of
// the walk (input, target, out, dloss; out is the loss (none) or dinput; a scalar's strides are 0).
// sum and mean: chunk c = elements [c chunk, (c + 1) chunk) summed in order into partial[c].
struct PointwiseLossParams {
  const void* input;
  const void* target;
  const void* dloss;       // the backward's
  const void* weight;      // null: 1
  const void* pos_weight;  // null: none (bce_with_logits)
  void* out;
  void* partial;  // compute type [chunks] (sum, mean)
  long long n, chunk, chunks;
  int kind, reduction, log_target, contiguous;
  double beta;
  Walk<6> walk;  // input, target, out, dloss, weight, pos_weight
};

// The paged decode attention (cuda/device/paged_attention.cuh, cuda/paged_attention.cpp): rows of a
// block are (query head of the kv head's group, query) pairs, R (a template argument) at a time; keys split
// in `splits` ranges of `split_keys`, each range's partial (out normalized, its lse) in the workspace,
// merged by the combine kernel (splits > 1) or written straight to out and lse (splits == 1).
struct PagedAttentionParams {
  const void* q;
  const void* k;  // k_cache [num_blocks, block_size, H_kv, D]; dense: k [B, S_kv, H_kv, D]
  const void* v;  // v_cache [num_blocks, block_size, H_kv, D_v]; dense: v [B, S_kv, H_kv, D_v]
  void* out;
  void* lse;            // acc precision; null: not written
  const int* table;     // [batch, max_blocks] (paged)
  const int* seq_lens;  // [batch] (paged)
  const void* bias;     // [B, H_q, S_q, S_kv], T or f32 (bias_f32); null: none (dense only)
  long long bias_strides[4];
  int bias_f32;
  int paged;          // 0: dense k and v, every sequence seq_kv keys
  void* partial_out;  // acc [batch, H_q, S_q, splits, D_v]
  void* partial_lse;  // acc [batch, H_q, S_q, splits]
  long long batch, seq_q, seq_kv, heads_q, heads_kv, group, head_dim, head_dim_v;
  long long block_size, num_blocks, max_blocks;
  long long q_strides[4], k_strides[4], v_strides[4], out_strides[4], lse_strides[3];
  long long table_strides[2], seq_lens_stride;
  long long splits, split_keys, tile_keys, pv_groups, stages;  // stages: 1 or 2 tiles in flight
  long long region_bytes;               // shared memory before the key offsets: the k and v tiles, or the groups' sums
  long long window_left, window_right;  // -1: unbounded (causal: window_right 0)
  int bottom_right;
  int vector_kv;  // k and v rows are whole, aligned 16-byte vectors (cp.async)
  double scale, softcap;
};

// The attention backward of ours over dense k and v (cuda/device/attention_backward.cuh): views as
// the forward's ([B, S, H, D] strides; lse [B, H_q, S_q]), the gradients null where not asked for.
struct AttentionBackwardParams {
  const void* q;
  const void* k;
  const void* v;
  const void* out;
  const void* dout;
  const void* lse;   // acc precision
  const void* bias;  // T or f32 (bias_f32); null: none
  void* dq;
  void* dk;
  void* dv;
  void* delta;  // acc [B, H_q, S_q]: dout . out, from split_kv_dq to split_kv_dkdv
  long long q_strides[4], k_strides[4], v_strides[4], out_strides[4], dout_strides[4];
  long long dq_strides[4], dk_strides[4], dv_strides[4], bias_strides[4], lse_strides[3];
  long long batch, seq_q, seq_kv, heads_q, heads_kv, group, head_dim, head_dim_v;
  long long tile_keys, tile_bytes;      // keys a tile; the k and v tiles' bytes (16-byte rounded)
  long long window_left, window_right;  // -1: unbounded (causal: window_right 0)
  int bottom_right;
  int bias_f32;
  double scale, softcap;
};

// The KV cache append (cuda/device/kv_cache.cuh, cuda/kv_cache.cpp): token t = b * new_tokens + i;
// owner[row] (u32, zeroed) takes the largest t + 1 that maps to the cache row, so the later token
// wins as on the CPU.
struct KvCacheAppendParams {
  const void* src[2];  // k_new, v_new
  void* cache[2];      // k_cache, v_cache
  const int* table;
  const int* seq_lens;
  const int* new_lens;  // null: every sequence appends new_tokens
  unsigned* owner;      // [num_blocks * block_size]
  unsigned long long* bad_index_count;
  long long batch, new_tokens, heads, dims[2], block_size, num_blocks, max_blocks;
  long long src_strides[2][4], cache_strides[2][4];
  long long table_strides[2], seq_lens_stride, new_lens_stride;
};

// Packed sequences through cuDNN (cuda/device/attention_varlen.cuh, cuda/attention.cpp). Tensors in
// ragged order: q, k, v, out, dout, dq, dk, dv; row_strides their token strides (elements).
struct VarlenParams {
  const int* cu_q;
  const int* cu_kv;
  long long cu_q_stride, cu_kv_stride;
  int* lens_q;  // [batch]: cuDNN's seq_len_q
  int* lens_kv;
  int* ragged;  // [8][batch + 1]: each tensor's first element of each sequence
  int* flag;    // 1: the offsets break the rules
  long long row_strides[8];
  long long batch, seq_q, seq_kv, total_q, total_kv, heads_q, heads_kv, head_dim, head_dim_v;
  long long window_left, window_right;  // the mask (causal: window_right 0); -1 unbounded
  int bottom_right;
  float* stats;         // cuDNN's padded statistics [batch, H_q, seq_q]
  float* lse;           // the forward's lse [H_q, total_q] (null: not asked for)
  const float* lse_in;  // the backward's
  long long lse_strides[2];
  void* out;
  long long out_strides[3];
  void* grads[3];  // dq, dk, dv (null: not given)
  long long grad_strides[3][3];
};

// The grouped matmul (cuda/device/grouped_matmul.cuh, cuda/grouped_matmul.cpp): one product
// C[m, n] = sum over r of A[m, r] B[r, n] a group, the groups splitting m (forward, da: rows of a
// packed [T, .] view, B a group's own) or r (db: the sum over a group's rows, C a group's own).
// Strides in elements; each operand has a unit stride along r or along its other dim.
struct GroupedMatmulParams {
  const void* a;
  const void* b;
  void* c;
  long long a_m, a_r;           // A's strides along m and r
  long long b_r, b_n, b_group;  // B's, and from one group's B to the next (splitting m)
  long long c_m, c_n, c_group;  // C's, and from one group's C to the next (splitting r)
  long long m, n, r;            // the extents; the split one is T
  long long groups;
  const void* offsets;  // [groups] of i32 or i64: each group's end as given
  long long offsets_stride;
  long long* ends;         // [groups + 1] (workspace): the ends clamped and sorted, then T
  long long* tile_starts;  // [groups + 2]: each group's first m tile (the last: the tail's, then all)
  unsigned long long* bad_index_count;
};
// Their launch geometry, which the host's grids and shared memory follow: the prepare kernel's one
// block; the products' blocks, 16-bit ones on tiles of kGroupedMmaTile rows and columns summing
// kGroupedMmaStep at a time, kGroupedMmaStages stages of an A and a B tile in shared memory; f32 /
// f64 ones on tiles of kGroupedFmaTile.
inline constexpr int kGroupedPrepareThreads = 1024, kGroupedProductThreads = 256;
inline constexpr int kGroupedMmaTile = 128, kGroupedMmaStep = 64, kGroupedMmaStages = 3, kGroupedFmaTile = 64;
inline constexpr int kGroupedMmaSharedBytes = kGroupedMmaStages * 2 * kGroupedMmaTile * kGroupedMmaStep * 2;
// wgmma's (sm_90a): tiles of kGroupedMmaTile rows of m by kGroupedWgmmaTileN of n, kGroupedWgmmaStages
// stages 1,024-byte aligned (1 KiB more to align them in).
inline constexpr int kGroupedWgmmaTileN = 256, kGroupedWgmmaStages = 4;
inline constexpr int kGroupedWgmmaSharedBytes =
    kGroupedWgmmaStages * (kGroupedMmaTile + kGroupedWgmmaTileN) * kGroupedMmaStep * 2 + 1024;

}  // namespace baracuda::device

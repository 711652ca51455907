#pragma once
// The serving side of attention: new keys and values written into the block-paged KV cache that
// AttentionPlan reads with descriptor.paged (vLLM's reshape_and_cache, FlashInfer's
// append_paged_kv_cache).
//
//   KvCacheAppendPlan  token i of sequence b (k_new[b, i], v_new[b, i]) goes to the sequence's
//                      position p = seq_lens[b] + i: row p % block_size of block
//                      block_table[b, p / block_size] of k_cache and of v_cache.
//
// The caches are AttentionPlan's: k_cache [num_blocks, block_size, H_kv, D], v_cache [num_blocks,
// block_size, H_kv, D_v], updated in place (every other row keeps its bits); k_new [B, S_new, H_kv,
// D] and v_new [B, S_new, H_kv, D_v] (views with any strides); block_table [B, max_blocks] and
// seq_lens [B] (the keys each sequence holds before the append) i32, as AttentionPlan takes them;
// new_lens [B] i32, optional: sequence b appends its first new_lens[b] tokens alone (the rest are
// padding; without it every sequence appends S_new). The caller adds the appended counts to its
// lengths afterwards (the plan does not write seq_lens).
//
// Bad entries never read or write out of bounds, and with `bad_index_count` (an int64 in the stream's
// memory, added to) each is counted: a negative seq_lens[b] (the sequence appends nothing), a
// new_lens[b] outside [0, S_new] (clamped), a token whose position falls past the block table or
// whose block entry is outside [0, num_blocks) (that token is not written). Two tokens mapped to the
// same cache row: the later in (b, i) order wins, on both backends. Backends: the CPU (which refuses,
// at select, appends of more than 2^40 elements: broadcast inputs can describe more tokens than any
// cache holds); CUDA (each cache row claimed by its last token, then copied; a workspace of 4 bytes a
// cache row, num_blocks * block_size; at most 2^40 rows and 2^32 - 2 tokens a run).
#include "baracuda/core/plan.hpp"

namespace baracuda {

struct KvCacheAppendDescriptor {
  DType dtype = DType::f32;  // k_new, v_new and both caches
  int64_t batch = 1;         // B
  int64_t new_tokens = 1;    // S_new: tokens each sequence appends at most
  int64_t heads_kv = 1;      // H_kv
  int64_t head_dim = 64;     // D of k
  int64_t head_dim_v = 64;   // D_v of v
  int64_t block_size = 16;   // rows a block
  int64_t num_blocks = 0;    // blocks in each cache
  int64_t max_blocks = 0;    // the block table's columns
};

struct KvCacheAppendArgs {
  AnyTensorRef k_new;
  AnyTensorRef v_new;
  AnyTensorRef block_table;
  AnyTensorRef seq_lens;
  AnyTensorRef new_lens{};  // optional
  AnyTensorMut k_cache;
  AnyTensorMut v_cache;
  int64_t* bad_index_count = nullptr;
};

struct KvCacheAppendOp : OpTag<KvCacheAppendDescriptor, KvCacheAppendArgs> {};
using KvCacheAppendPlan = Plan<KvCacheAppendOp>;

}  // namespace baracuda

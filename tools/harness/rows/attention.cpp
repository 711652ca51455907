// Op-table rows of the attention family, forward and backward. Every mask (none, causal aligned
// top-left and bottom-right, sliding windows on either side with both alignments, with causal and
// with the bias), grouped-query ratios 1, 4 and 8,
// S_q != S_kv both ways, lengths 1, 17, 1000 and one 4097 (f32), fully masked rows (bottom-right with
// S_q > S_kv, no keys at all), head dims 64, 96, 128, 256 and 192 / 128, the soft-cap, the bias (its
// own dtype or f32, broadcast), and padded, transposed, broadcast and misaligned views. [B, H, S, D]
// buffers and edge values are tests/test_attention.cpp's.
#include <string>
#include <vector>

#include "harness/op_row.hpp"
#include "harness/reference/attention_reference.hpp"

namespace baracuda::harness {
namespace {

using Desc = AttentionDescriptor;

Desc attention(int64_t batch, int64_t seq_q, int64_t seq_kv, int64_t heads_q, int64_t heads_kv, int64_t head_dim = 64,
               int64_t head_dim_v = 64) {
  Desc d;
  d.batch = batch;
  d.seq_q = seq_q;
  d.seq_kv = seq_kv;
  d.heads_q = heads_q;
  d.heads_kv = heads_kv;
  d.head_dim = head_dim;
  d.head_dim_v = head_dim_v;
  return d;
}
Desc causal(Desc d, CausalAlignment alignment) {
  d.causal = true;
  d.alignment = alignment;
  return d;
}

std::vector<Sample<Desc>> samples(bool backward) {
  std::vector<Sample<Desc>> out;
  auto add = [&](Desc d, std::string note = {}, Views views = Views::contiguous, std::vector<DType> dtypes = {},
                 std::string_view only = {}) {
    out.push_back({d, views, only, std::nullopt, std::move(note), std::move(dtypes)});
  };
  auto windowed = [](Desc d, int64_t left, int64_t right, CausalAlignment alignment) {
    d.window_left = left;
    d.window_right = right;
    d.alignment = alignment;
    return d;
  };
  auto biased = [](Desc d) {
    d.has_bias = true;
    return d;
  };
  constexpr auto top = CausalAlignment::top_left, bottom = CausalAlignment::bottom_right;
  add(attention(1, 1, 1, 1, 1), "length 1");
  add(attention(2, 17, 17, 2, 2), "length 17");
  add(attention(2, 17, 17, 4, 1), "GQA 4");
  add(attention(1, 17, 33, 8, 1), "MQA 8, S_q < S_kv");
  add(attention(1, 40, 23, 8, 2), "GQA 4, S_q > S_kv");
  add(causal(attention(2, 17, 17, 2, 2), top), "causal");
  add(causal(attention(1, 17, 33, 4, 1), top), "causal top-left, S_q < S_kv");
  add(causal(attention(1, 17, 33, 4, 1), bottom), "causal bottom-right, S_q < S_kv");
  add(causal(attention(1, 33, 17, 2, 1), top), "causal top-left, S_q > S_kv");
  add(causal(attention(1, 33, 17, 2, 1), bottom), "causal bottom-right, S_q > S_kv: 16 fully masked rows");
  Desc window = attention(1, 40, 40, 2, 1);
  window.window_left = 5;
  window.window_right = 3;
  add(window, "window (5, 3)");
  Desc sliding = causal(attention(1, 30, 300, 2, 2), bottom);
  sliding.window_left = 7;
  add(sliding, "causal bottom-right, window_left 7");
  Desc right_only = attention(1, 20, 20, 1, 1);
  right_only.window_right = 2;
  right_only.window_left = 0;
  add(right_only, "window (0, 2)");
  Desc shifted = attention(1, 300, 20, 1, 1);
  shifted.window_left = 3;
  shifted.window_right = 3;
  add(shifted, "window (3, 3) top-left, S_q > S_kv: rows past key 23 fully masked");
  for (int64_t dim : {96, 128, 256}) add(attention(1, 20, 21, 2, 1, dim, dim), "head dim " + std::to_string(dim));
  add(attention(1, 20, 21, 2, 1, 192, 128), "head dims 192 / 128");
  add(attention(1, 9, 7, 2, 1, 3, 5), "head dims 3 / 5");
  // Cases CUDA takes through cuDNN's diagonal band (ops/attention_problem.hpp's cudnn_band): windows on
  // either side with both alignments (S_q < S_kv, so that they differ), with causal, with a bias.
  add(windowed(attention(1, 24, 40, 4, 1), 4, 2, top), "window (4, 2) top-left, S_q < S_kv, GQA 4");
  add(windowed(attention(1, 24, 40, 4, 1), 6, 1, bottom), "window (6, 1) bottom-right, S_q < S_kv, GQA 4");
  add(windowed(attention(2, 24, 40, 2, 2), 5, -1, bottom), "window_left 5 alone, bottom-right");
  add(windowed(attention(2, 24, 40, 2, 2), -1, 3, top), "window_right 3 alone, top-left");
  add(windowed(causal(attention(1, 40, 40, 4, 2), top), 6, -1, top), "causal, window_left 6");
  add(windowed(causal(attention(1, 24, 64, 4, 2), top), 9, -1, top), "causal top-left, window_left 9, S_q < S_kv");
  add(windowed(biased(attention(1, 24, 40, 2, 1)), 20, -1, bottom),
      "bias, window_left 20 bottom-right (cuDNN: a bottom-right left bound with a bias)");
  add(windowed(biased(causal(attention(1, 24, 40, 2, 1), bottom)), 20, -1, bottom),
      "bias, causal bottom-right, window_left 20 (cuDNN: a shifted top-left band)");
  add(windowed(biased(attention(1, 24, 40, 2, 1)), -1, 2, bottom),
      "bias, window_right 2 bottom-right (cuDNN: a shifted top-left band)");
  add(windowed(biased(causal(attention(1, 24, 40, 2, 1), bottom)), 4, -1, bottom),
      "bias, causal bottom-right, window_left 4 < S_kv - S_q (CUDA refuses: descriptor.window_left)");
  add(windowed(biased(causal(attention(2, 40, 40, 4, 1), top)), 7, -1, top), "bias, causal, window_left 7, GQA 4");
  add(causal(attention(1, 40, 64, 4, 1, 192, 128), bottom), "head dims 192 / 128, causal bottom-right, GQA 4");
  add(causal(attention(2, 33, 48, 2, 1, 256, 256), top), "head dim 256, causal, GQA 2");
  // The bias broadcast along each dim in turn (a zero stride; cuDNN: extent 1 for batch and heads),
  // key lengths whose rows are whole 16-byte vectors and one whose are not.
  add(biased(attention(2, 24, 40, 4, 2)), "bias broadcast over the batch", Views::broadcast, {}, "bias");
  add(biased(causal(attention(1, 24, 40, 4, 1), top)), "bias broadcast over the heads, causal, GQA 4", Views::broadcast,
      {}, "bias");
  add(biased(attention(1, 24, 40, 1, 1)), "bias broadcast over the queries (a key-padding bias)", Views::broadcast, {},
      "bias");
  add(biased(attention(2, 17, 29, 2, 1)), "bias rows of 29 keys");
  Desc capped = causal(attention(1, 30, 30, 2, 1), top);
  capped.softcap = 1.5;  // the scores reach past it: tanh's curve matters
  capped.scale = 0.5;
  add(capped, "soft-cap 1.5, scale 0.5");
  add(biased(causal(attention(2, 17, 23, 4, 2), bottom)), "bias, causal bottom-right");
  Desc f32_bias = biased(attention(1, 19, 19, 2, 2));
  f32_bias.bias_dtype = DType::f32;
  add(f32_bias, "f32 bias");
  add(attention(1, 5, 0, 2, 1), "no keys: every row fully masked");
  add(attention(1, 0, 5, 2, 1), "no queries");
  add(attention(0, 5, 5, 2, 1), "batch 0");
  add(causal(attention(1, 1000, 1000, 2, 1), top), "length 1000, causal");
  add(attention(1, 1000, 1000, 1, 1), "length 1000");
  if (!backward)
    add(causal(attention(1, 4097, 4097, 1, 1), bottom), "length 4097, causal", Views::contiguous, {DType::f32});
  for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
    add(biased(causal(attention(2, 17, 24, 4, 2), bottom)), "bias, causal bottom-right", v);
    add(attention(1, 9, 300, 2, 1, 32, 48), "head dims 32 / 48", v);
  }
  return out;
}

std::vector<DescriptorError<Desc>> errors() {
  return {
      {"heads_kv not dividing heads_q",
       [](Desc& d) {
         d.heads_q = 4;
         d.heads_kv = 3;
       },
       StatusCode::invalid_problem, "descriptor.heads_kv"},
      {"heads_kv 0", [](Desc& d) { d.heads_kv = 0; }, StatusCode::invalid_problem, "descriptor.heads_kv"},
      {"head_dim 0", [](Desc& d) { d.head_dim = 0; }, StatusCode::invalid_problem, "descriptor.head_dim"},
      {"head_dim 513", [](Desc& d) { d.head_dim = 513; }, StatusCode::invalid_problem, "descriptor.head_dim"},
      {"head_dim_v 0", [](Desc& d) { d.head_dim_v = 0; }, StatusCode::invalid_problem, "descriptor.head_dim_v"},
      {"head_dim_v 600", [](Desc& d) { d.head_dim_v = 600; }, StatusCode::invalid_problem, "descriptor.head_dim_v"},
      {"negative batch", [](Desc& d) { d.batch = -1; }, StatusCode::invalid_problem, "descriptor.batch"},
      {"negative seq_q", [](Desc& d) { d.seq_q = -3; }, StatusCode::invalid_problem, "descriptor.seq_q"},
      {"negative seq_kv", [](Desc& d) { d.seq_kv = -3; }, StatusCode::invalid_problem, "descriptor.seq_kv"},
      {"negative heads_q", [](Desc& d) { d.heads_q = -2; }, StatusCode::invalid_problem, "descriptor.heads_q"},
      {"scale negative", [](Desc& d) { d.scale = -0.1; }, StatusCode::invalid_problem, "descriptor.scale"},
      {"scale NaN", [](Desc& d) { d.scale = std::nan(""); }, StatusCode::invalid_problem, "descriptor.scale"},
      {"scale inf", [](Desc& d) { d.scale = INFINITY; }, StatusCode::invalid_problem, "descriptor.scale"},
      {"softcap negative", [](Desc& d) { d.softcap = -1; }, StatusCode::invalid_problem, "descriptor.softcap"},
      {"softcap NaN", [](Desc& d) { d.softcap = std::nan(""); }, StatusCode::invalid_problem, "descriptor.softcap"},
      {"window_left -2", [](Desc& d) { d.window_left = -2; }, StatusCode::invalid_problem, "descriptor.window_left"},
      {"window_right -2", [](Desc& d) { d.window_right = -2; }, StatusCode::invalid_problem, "descriptor.window_right"},
      {"causal with window_right 1",
       [](Desc& d) {
         d.causal = true;
         d.window_right = 1;
       },
       StatusCode::invalid_problem, "descriptor.window_right"},
      {"integer bias_dtype",
       [](Desc& d) {
         d.has_bias = true;
         d.bias_dtype = DType::i32;
       },
       StatusCode::unsupported, "descriptor.bias_dtype"},
      {"sizes past 2^62 elements",
       [](Desc& d) {
         d.seq_q = int64_t{1} << 40;
         d.seq_kv = int64_t{1} << 40;
       },
       StatusCode::invalid_problem, "descriptor"},
  };
}

// The backward's saved lse is random: above the scores' range (|s| stays within about 3 here), so
// that exp(s - lse) stays a probability's size.
std::vector<ValueRange> backward_ranges() { return {{"lse", 1.5, 3.0}}; }

void forward_reference(const Desc& d, RefIO& io) { reference::attention_forward(d, io); }
void backward_reference(const Desc& d, RefIO& io) { reference::attention_backward(d, io); }
template <bool kBackward>
std::vector<Sample<Desc>> samples_of() {
  return samples(kBackward);
}

// Bench shapes [B, S, H, D]: causal self-attention with as many kv heads as query heads, as the
// training step of a Llama-like model runs it (the profiler's inputs are [B, S, H, D] contiguous).
std::vector<Shape> bench_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{4, 4096, 32, 128}, {16, 1024, 16, 64}, {1, 16384, 16, 128}};
  return {{1, 1024, 8, 64}};
}
Desc bench_desc(DType dtype, const Shape& s) {
  Desc d = causal(attention(s.dims[0], s.dims[1], s.dims[1], s.dims[2], s.dims[2], s.dims[3], s.dims[3]),
                  CausalAlignment::top_left);
  d.dtype = dtype;
  return d;
}
// Each output element sums S keys of D products (the profiler checks that many times fewer).
int64_t bench_terms(const Shape& s) { return s.dims[1] * s.dims[3]; }

// The KV cache append: caches of 6 blocks of 4 rows (shuffled tables), sequences holding 0..20 keys
// before the append; the default index ranges add bad table entries, lengths and new_lens (counted).
KvCacheAppendDescriptor append(int64_t batch, int64_t tokens, int64_t heads, int64_t dim, int64_t dim_v,
                               int64_t block_size = 4, int64_t num_blocks = 6, int64_t max_blocks = 5) {
  KvCacheAppendDescriptor d;
  d.batch = batch;
  d.new_tokens = tokens;
  d.heads_kv = heads;
  d.head_dim = dim;
  d.head_dim_v = dim_v;
  d.block_size = block_size;
  d.num_blocks = num_blocks;
  d.max_blocks = max_blocks;
  return d;
}
std::vector<Sample<KvCacheAppendDescriptor>> append_samples() {
  std::vector<Sample<KvCacheAppendDescriptor>> out;
  auto add = [&](KvCacheAppendDescriptor d, Views views = Views::contiguous, std::string note = {},
                 std::string_view only = {}) {
    out.push_back({d, views, only, std::nullopt, std::move(note)});
  };
  add(append(1, 1, 1, 8, 8), Views::contiguous, "decode, one sequence");
  add(append(3, 1, 2, 16, 8), Views::contiguous, "decode, D_v != D");
  add(append(2, 7, 2, 5, 5), Views::contiguous, "prefill across blocks");
  add(append(4, 3, 3, 4, 6, 1, 30, 20), Views::contiguous, "blocks of one row");
  add(append(2, 9, 1, 8, 8, 16, 2, 1), Views::contiguous, "one block a sequence: positions past it");
  add(append(0, 3, 2, 8, 8), Views::contiguous, "no sequence");
  add(append(2, 0, 2, 8, 8), Views::contiguous, "no token");
  for (Views v : {Views::padded, Views::misaligned, Views::transposed}) add(append(3, 2, 2, 8, 4), v);
  add(append(3, 2, 2, 8, 4), Views::broadcast, "one new token for every sequence (a zero stride)", "k_new");
  return out;
}
std::vector<DescriptorError<KvCacheAppendDescriptor>> append_errors() {
  using D = KvCacheAppendDescriptor;
  return {
      {"block_size 0", [](D& d) { d.block_size = 0; }, StatusCode::invalid_problem, "descriptor.block_size"},
      {"negative batch", [](D& d) { d.batch = -1; }, StatusCode::invalid_problem, "descriptor.batch"},
      {"negative head_dim_v", [](D& d) { d.head_dim_v = -4; }, StatusCode::invalid_problem, "descriptor.head_dim_v"},
      {"a table past 2^62 rows",
       [](D& d) {
         d.max_blocks = int64_t{1} << 40;
         d.block_size = int64_t{1} << 30;
         d.batch = 1;
       },
       StatusCode::invalid_problem, "descriptor.max_blocks"},
  };
}
void append_reference(const KvCacheAppendDescriptor& d, RefIO& io) { reference::kv_cache_append(d, io); }

}  // namespace

std::vector<std::unique_ptr<OpRow>> attention_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  const Gradient gradient{"dout", "out", {{"dq", "q"}, {"dk", "k"}, {"dv", "v"}}};
  // CUDA (cuDNN's fused attention) takes f16 / bf16 with head dims multiples of 8 up to 256, masks and
  // the bias but no soft-cap nor fully masked rows (ops/attention.cpp's cudnn_refusal), and views
  // cuDNN's kernels read (cuda/attention.cpp's view_refusal). Both directions take the other dense
  // descriptors through split_kv (kernels of ours); what is left (packed sequences in f32 / f64 or
  // with the soft-cap, views cuDNN refuses) is refused, naming the descriptor's field at select or
  // the view's at run.
  RowSpec<AttentionPlan> forward{samples_of<false>, forward_reference, harness::tolerance, {}, errors()};
  forward.cuda_partial = true;
  // The forward as PyTorch's without autograd runs it: no lse written.
  forward.bench = {{"attention",
                    "F.scaled_dot_product_attention(q, k, v, is_causal=True)",
                    {DType::bf16, DType::f16},
                    bench_shapes,
                    bench_desc,
                    true,
                    false,
                    {},
                    "lse",
                    {},
                    {},
                    bench_terms}};
  rows.push_back(make_row<AttentionPlan>(std::move(forward)));
  RowSpec<AttentionBackwardPlan> backward{samples_of<true>,
                                          backward_reference,
                                          harness::tolerance,
                                          backward_ranges(),
                                          errors(),
                                          {},
                                          forward_of<AttentionPlan>,
                                          gradient};
  backward.cuda_partial = true;
  // The default backward (on CUDA dq by atomics, as PyTorch's) and the deterministic one.
  for (bool deterministic : {false, true})
    backward.bench.push_back({deterministic ? "attention_backward_deterministic" : "attention_backward",
                              "autograd of F.scaled_dot_product_attention(q, k, v, is_causal=True)",
                              {DType::bf16, DType::f16},
                              bench_shapes,
                              bench_desc,
                              deterministic,
                              false,
                              {},
                              {},
                              {},
                              {},
                              bench_terms});
  rows.push_back(make_row<AttentionBackwardPlan>(std::move(backward)));
  // Both backends take every sample (CUDA: the claim pass, so duplicate rows resolve as on the CPU).
  RowSpec<KvCacheAppendPlan> kv_append{append_samples, append_reference, harness::tolerance, {}, append_errors()};
  rows.push_back(make_row<KvCacheAppendPlan>(std::move(kv_append)));
  return rows;
}

}  // namespace baracuda::harness

#pragma once
// What the attention plans hand to a backend: the descriptor with its defaults resolved (the scale,
// the window that causal implies, the bias dtype), the views, and the keys each query sees, computed
// here once for both backends.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "baracuda/ops/attention.hpp"
#include "common/elementwise.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail {

// The keys [lo, hi) query i sees: the window around its diagonal (the sizes' bounds where a window is
// -1), clipped to [0, seq_kv). lo and hi never decrease with i, so a tile of queries sees the keys
// between its first row's lo and its last row's hi.
struct AttentionMask {
  int64_t seq_kv = 0;
  int64_t shift = 0;  // diag(i) - i: 0 top-left, seq_kv - seq_q bottom-right
  int64_t left = -1, right = -1;
  int64_t lo(int64_t i) const { return left < 0 ? 0 : std::clamp<int64_t>(i + shift - left, 0, seq_kv); }
  int64_t hi(int64_t i) const { return right < 0 ? seq_kv : std::clamp<int64_t>(i + shift + right + 1, 0, seq_kv); }
};

inline AttentionMask attention_mask(const AttentionDescriptor& d) {
  AttentionMask m;
  m.seq_kv = d.seq_kv;
  m.shift = d.alignment == CausalAlignment::bottom_right ? d.seq_kv - d.seq_q : 0;
  m.left = d.window_left;
  m.right = d.causal ? 0 : d.window_right;
  return m;
}

// The mask as cuDNN's diagonal band (SDPA_attributes' diagonal alignment and band bounds): key j is
// kept where j <= diag(i) + right and, with a left bound, j > diag(i) - left, i.e. right is
// window_right and left is window_left + 1 (cuDNN's left bound counts the diagonal itself: a sliding
// window of `left` keys). cuDNN takes no bottom-right alignment together with a right bound and a
// bias, nor with seq_q > seq_kv; the same band is then top-left with both bounds moved by the
// shift seq_kv - seq_q (j <= i + shift + right, j > i + shift - left).
struct CudnnBand {
  bool bottom_right = false;
  std::optional<int64_t> left;   // cuDNN takes it >= 1
  std::optional<int64_t> right;  // cuDNN takes it >= 0
};
inline CudnnBand cudnn_band(const AttentionDescriptor& d) {
  const AttentionMask m = attention_mask(d);
  CudnnBand b;
  if (m.left >= 0) b.left = m.left + 1;
  if (m.right >= 0) b.right = m.right;
  // Packed sequences: each sequence's own lengths align the band (cuDNN's padding mask), whatever the
  // longest ones' shift (ops/attention.cpp refuses bottom-right where seq_q > seq_kv).
  if (d.varlen) {
    b.bottom_right = d.alignment == CausalAlignment::bottom_right;
    return b;
  }
  if (m.shift == 0) return b;  // both alignments are the same diagonal
  if (d.seq_q <= d.seq_kv && !(d.has_bias && b.right)) {
    b.bottom_right = true;
    return b;
  }
  if (b.left) *b.left -= m.shift;
  if (b.right) *b.right += m.shift;
  return b;
}

// The CUDA backward's workspace: cuDNN's own (PlanChoice::knob bytes), then room for dq, dk and dv in
// that order (cuDNN writes all three; one the caller does not give lands there), each 256-byte aligned.
inline size_t attention_scratch_offset(int64_t cudnn_workspace) {
  return static_cast<size_t>((cudnn_workspace + 255) / 256 * 256);
}
inline size_t attention_scratch_bytes(const Shape& shape, DType dtype) {
  return static_cast<size_t>((shape.numel() * static_cast<int64_t>(dtype_size(dtype)) + 255) / 256 * 256);
}

// The CUDA varlen path's own scratch, past cuDNN's workspace (and before the backward's gradient
// scratch): the ragged offsets, lengths and flag (i32: 8 x (B + 1) + 2 B + 1), then cuDNN's padded
// statistics (f32 [B, H_q, S_q]). (B H_q S_q is bounded at select.)
inline size_t attention_varlen_bytes(const AttentionDescriptor& d) {
  if (!d.varlen) return 0;
  const int64_t ints = 8 * (d.batch + 1) + 2 * d.batch + 1;
  return static_cast<size_t>((ints * 4 + 255) / 256 * 256 + (d.batch * d.heads_q * d.seq_q * 4 + 255) / 256 * 256);
}

struct AttentionProblem {
  AttentionDescriptor desc;
  double scale = 1.0;  // resolved: 1 / sqrt(head_dim) where the descriptor's is 0
  DType bias_dtype = DType::f32;
  AttentionMask mask;
  AttentionArgs args;
  bool split_kv = false;  // CUDA: the split-key kernel of ours (always for a paged cache), not cuDNN
};

struct AttentionBackwardProblem {
  AttentionDescriptor desc;
  double scale = 1.0;
  DType bias_dtype = DType::f32;
  AttentionMask mask;
  AttentionBackwardArgs args;
  bool deterministic = true;  // CUDA: cuDNN's deterministic backward (else dq by atomics)
  bool split_kv = false;      // CUDA: the backward of ours over dense k and v, not cuDNN
};

namespace cpu {
Status launch(const LaunchContext& ctx, const AttentionProblem& problem);
Status launch(const LaunchContext& ctx, const AttentionBackwardProblem& problem);
}  // namespace cpu
namespace cuda {
// Whether the build has cuDNN's fused attention (configured with the cuDNN frontend's headers); without
// it the dense cases run split_kv.
bool cudnn_built();
// cuDNN's fused attention (cuda/attention.cpp). select builds the graph for contiguous views: its
// workspace, or why cuDNN refuses the case.
Expected<size_t> attention_workspace(const PlanTarget& target, const AttentionDescriptor& d, double scale,
                                     bool backward, bool deterministic, std::string_view plan);
// Why cuDNN does not take these views (unsupported, naming the field), for can_implement.
Status attention_views(std::string_view plan, const AttentionDescriptor& d, const AttentionArgs& args);
Status attention_views(std::string_view plan, const AttentionDescriptor& d, const AttentionBackwardArgs& args);
Status launch(const LaunchContext& ctx, const AttentionProblem& problem);
Status launch(const LaunchContext& ctx, const AttentionBackwardProblem& problem);
// The split-key attention kernel of ours (cuda/paged_attention.cpp): the paged cache's decode, and
// over dense k and v the cases cuDNN refuses. Its kernels compiled and its workspace (the splits'
// partial rows), or why it refuses; launch takes problems with split_kv to it.
struct SplitKvChoice {
  const void* kernels = nullptr;
  size_t workspace = 0;
};
Expected<SplitKvChoice> split_kv_select(const PlanTarget& target, const AttentionDescriptor& d, std::string_view plan);
Status launch_split_kv(const LaunchContext& ctx, const AttentionProblem& problem);
// Its backward over dense k and v (cuda/device/attention_backward.cuh): workspace, delta's rows.
Expected<SplitKvChoice> split_kv_backward_select(const PlanTarget& target, const AttentionDescriptor& d,
                                                 std::string_view plan);
Status launch_split_kv_backward(const LaunchContext& ctx, const AttentionBackwardProblem& problem);
// The kernels around cuDNN's ragged graphs for packed sequences (cuda/device/attention_varlen.cuh).
Expected<const void*> attention_varlen_kernels(const PlanTarget& target, DType dtype, std::string_view plan);
}  // namespace cuda

namespace jit {
struct Program;
// The attention kernels of ours: the paged decode kernel's, the KV cache append's, the varlen glue's.
std::vector<Program> attention_programs();
}  // namespace jit

}  // namespace baracuda::detail

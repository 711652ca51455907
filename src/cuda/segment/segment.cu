// CUDA entry of the segment family: the workspace, and the dispatch to each reduction's
// translation unit (the variants are described in launch.cuh, the kernels in kernels.cuh).
#include "cuda/segment/launch.cuh"

namespace baracuda::detail::cuda {

CheckedSize segment_workspace(const SegmentProblem& p) {
  using namespace segment;
  // (No rows still runs the forward: every segment is empty, and the atomic kernel's scratch is zeroed.)
  if (p.segments == 0 || p.length == 0 || (p.backward && p.rows == 0)) return 0;
  if (p.backward)
    return p.reduction == SegmentReduction::mean && p.form != SegmentForm::offsets ? CheckedSize(p.segments) * 8
                                                                                   : CheckedSize(0);
  if (p.form != SegmentForm::unsorted_ids) return starts_bytes(p) + tile_slots_bytes(p);
  if (p.variant == SegmentVariant::atomic)
    return round_up_to(CheckedSize(p.segments) * p.length * acc_bytes(p.dtype), kAlign) + CheckedSize(p.segments) * 8;
  return sort_bytes(p.rows) + starts_bytes(p) + tile_slots_bytes(p);
}

Status launch(const LaunchContext& ctx, const SegmentProblem& p) {
  const cudaStream_t stream = native(ctx.stream);
  const int sm_count = ctx.target.sm_count;
  switch (p.reduction) {
    case SegmentReduction::sum:
      return segment::launch_sum(stream, p, sm_count);
    case SegmentReduction::mean:
      return segment::launch_mean(stream, p, sm_count);
    case SegmentReduction::max:
      return segment::launch_max(stream, p, sm_count);
    default:
      return segment::launch_min(stream, p, sm_count);
  }
}

}  // namespace baracuda::detail::cuda

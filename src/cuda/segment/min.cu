// The segment min's CUDA forward and backward (launch.cuh).
#include "cuda/segment/launch.cuh"

namespace baracuda::detail::cuda::segment {

Status launch_min(cudaStream_t stream, const SegmentProblem& p, int sm_count) {
  return run<SegmentReduction::min>(stream, p, sm_count);
}

}  // namespace baracuda::detail::cuda::segment

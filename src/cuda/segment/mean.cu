// The segment mean's CUDA forward and backward (launch.cuh).
#include "cuda/segment/launch.cuh"

namespace baracuda::detail::cuda::segment {

Status launch_mean(cudaStream_t stream, const SegmentProblem& p, int sm_count) {
  return run<SegmentReduction::mean>(stream, p, sm_count);
}

}  // namespace baracuda::detail::cuda::segment

// The README's worked example: select a lerp plan, check it, size its workspace, run it, on the
// CPU or on a GPU, whichever the default stream is.
#include <baracuda/baracuda.hpp>
#include <cstdio>
#include <vector>

#if BARACUDA_EXAMPLE_CUDA
#include <cuda_runtime.h>
#endif

int main() {
  using namespace baracuda;
  const int64_t rows = 4, cols = 1000;
  std::vector<float> a(rows * cols, 1.0f), b(rows * cols, 3.0f), out(rows * cols);

  const Stream stream = Stream::default_stream();  // CUDA device 0 if there is one, else the host
  float *da = a.data(), *db = b.data(), *dout = out.data();
#if BARACUDA_EXAMPLE_CUDA
  if (stream.backend() == Backend::cuda) {  // the plan reads device memory on a CUDA stream
    cudaMalloc(&da, a.size() * sizeof(float));
    cudaMalloc(&db, b.size() * sizeof(float));
    cudaMalloc(&dout, out.size() * sizeof(float));
    cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice);
  }
#endif

  BinaryParamDescriptor desc;  // out = a + 0.25 * (b - a)
  desc.dtype = DType::f32;
  desc.shape = {rows, cols};
  desc.weight_mode = WeightMode::scalar;
  desc.weight = 0.25;

  Expected<LerpPlan> plan = LerpPlan::select(stream, desc);
  if (!plan) {
    std::printf("select failed: %s\n", plan.status().to_string().c_str());
    return 1;
  }
  BinaryParamArgs args{TensorRef<float, 2>(da, {rows, cols}),
                       TensorRef<float, 2>(db, {rows, cols}),
                       {},
                       TensorMut<float, 2>(dout, {rows, cols})};
  if (Status s = plan->can_implement(args); !s) {
    std::printf("can_implement: %s\n", s.to_string().c_str());
    return 1;
  }
  // This plan needs no workspace (workspace_size() == 0); others get theirs from the caller.
  if (Status s = plan->run(stream, Workspace{nullptr, plan->workspace_size()}, args); !s) {
    std::printf("run failed: %s\n", s.to_string().c_str());
    return 1;
  }
  stream.synchronize();
#if BARACUDA_EXAMPLE_CUDA
  if (stream.backend() == Backend::cuda) {
    cudaMemcpy(out.data(), dout, out.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dout);
  }
#endif
  std::printf("ran %s [%s]\nout[0] = %g (expected 1.5)\n", plan->sku(args).to_string().c_str(),
              plan->precision_guarantee().to_string().c_str(), out[0]);
  return out[0] == 1.5f ? 0 : 1;
}

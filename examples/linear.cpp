// A training step of one layer on the host stream: y = gelu(x W^T + b), then the backward from dy,
// with the workspace each plan asks for. (The same plans run on a CUDA stream with device memory.)
#include <algorithm>
#include <baracuda/baracuda.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
  using namespace baracuda;
  const int64_t tokens = 3, in = 4, out = 2;
  std::vector<float> x(tokens * in, 0.5f), w(out * in, 0.25f), b(out, -0.5f), y(tokens * out), pre(tokens * out);
  std::vector<float> dy(tokens * out, 1.0f), dx(tokens * in), dw(out * in), db(out);
  const Stream stream = Stream::host();

  LinearDescriptor desc;  // sizes and options, no pointers
  desc.dtype = DType::f32;
  desc.x = {tokens, in};
  desc.out_features = out;
  desc.activation = Activation::gelu;
  Expected<LinearPlan> forward = LinearPlan::select(stream, desc);
  Expected<LinearBackwardPlan> backward = LinearBackwardPlan::select(stream, desc);
  if (!forward || !backward) {
    std::printf("select failed: %s\n", (!forward ? forward.status() : backward.status()).to_string().c_str());
    return 1;
  }
  std::vector<char> workspace(std::max(forward->workspace_size(), backward->workspace_size()) + 256);
  void* ws =
      workspace.data() + (256 - reinterpret_cast<uintptr_t>(workspace.data()) % 256) % 256;  // aligned for any plan

  LinearArgs args{TensorRef<float, 2>(x.data(), {tokens, in}), TensorRef<float, 2>(w.data(), {out, in}),
                  TensorRef<float, 1>(b.data(), {out}), TensorMut<float, 2>(y.data(), {tokens, out}),
                  TensorMut<float, 2>(pre.data(), {tokens, out})};  // pre: what the backward reads
  if (Status s = forward->run(stream, Workspace{ws, forward->workspace_size()}, args); !s) {
    std::printf("forward: %s\n", s.to_string().c_str());
    return 1;
  }
  LinearBackwardArgs grads{TensorRef<float, 2>(dy.data(), {tokens, out}),
                           args.x,
                           args.weight,
                           TensorRef<float, 2>(pre.data(), {tokens, out}),
                           TensorMut<float, 2>(dx.data(), {tokens, in}),
                           TensorMut<float, 2>(dw.data(), {out, in}),
                           TensorMut<float, 1>(db.data(), {out})};
  if (Status s = backward->run(stream, Workspace{ws, backward->workspace_size()}, grads); !s) {
    std::printf("backward: %s\n", s.to_string().c_str());
    return 1;
  }
  // pre = 4 * 0.5 * 0.25 - 0.5 = 0; gelu(0) = 0, gelu'(0) = 0.5: dbias = 3 * 0.5, dx = 2 * 0.5 * 0.25.
  std::printf("ran %s\ny[0] = %g, dbias[0] = %g, dx[0] = %g (expected 0, 1.5, 0.25)\n",
              forward->sku(args).to_string().c_str(), y[0], db[0], dx[0]);
  return std::fabs(y[0]) < 1e-6f && std::fabs(db[0] - 1.5f) < 1e-6f && std::fabs(dx[0] - 0.25f) < 1e-6f ? 0 : 1;
}

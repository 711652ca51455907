// The CUDA side of the random plans: the kernels of cuda/device/random.cuh, compiled at select per
// dtype without FMA contraction (uniform's f32 arithmetic then rounds as the host's does), and their
// launches.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/jit/jit.hpp"
#include "cuda/jit/launch.hpp"
#include "ops/random_problem.hpp"

namespace baracuda::detail::cuda {

// The program's kernels: floats random_fill<T, uniform>, random_fill<T, bernoulli>, dropout<T>,
// random_fill<T, normal>, random_fill<T, exponential>; integers random_fill<T, randint>.
jit::Program random_program(DType t) {
  jit::Program p;
  const bool integer = t == DType::i32 || t == DType::i64;
  const std::string T = integer ? (t == DType::i32 ? "int" : "long long") : jit::device_type(t);
  p.name = "random<" + std::string(dtype_name(t)) + ">";
  p.source = "#include \"cuda/device/random.cuh\"\n";
  p.options = {"--fmad=false"};
  if (integer) {
    p.kernels.push_back("baracuda::device::random_fill<" + T + ", 2>");
  } else {
    p.kernels.push_back("baracuda::device::random_fill<" + T + ", 0>");
    p.kernels.push_back("baracuda::device::random_fill<" + T + ", 1>");
    p.kernels.push_back("baracuda::device::dropout<" + T + ">");
    p.kernels.push_back("baracuda::device::random_fill<" + T + ", 3>");
    p.kernels.push_back("baracuda::device::random_fill<" + T + ", 4>");
  }
  return p;
}

namespace {

template <class Params>
Status launch_kernel(const void* kernel, Params params, long long total, const Stream& stream, const char* what) {
  if (total == 0) return Status::ok();
  // A thread draws two groups of 2 or 4 elements at a time (cuda/device/random.cuh), grid-stride
  // beyond.
  const int64_t blocks = std::clamp<int64_t>((total / 4 + 256) / 256, 1, 132 * 32);
  return launch_jit(kernel, blocks, 256, params, stream, what);
}

}  // namespace

Expected<const void*> random_kernels(const PlanTarget& target, DType dtype, std::string_view plan) {
  Expected<const jit::Module*> m = jit::load(random_program(dtype), target.arch, plan);
  if (!m) return m.status();
  return static_cast<const void*>(*m);
}

Status launch(const LaunchContext& ctx, const RandomProblem& p) {
  constexpr int kByKind[] = {0, 1, 0, 3, 4};  // uniform, bernoulli, randint (the integers' only), normal, exponential
  const int kernel = kByKind[static_cast<int>(p.kind)];
  return launch_kernel(jit_module(ctx).kernels[kernel], p.params, p.params.total, ctx.stream, "random_fill");
}

Status launch(const LaunchContext& ctx, const DropoutProblem& p) {
  return launch_kernel(jit_module(ctx).kernels[2], p.params, p.params.total, ctx.stream, "dropout");
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {
std::vector<Program> random_programs() {
  std::vector<Program> out;
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64})
    out.push_back(cuda::random_program(t));
  return out;
}
}  // namespace baracuda::detail::jit

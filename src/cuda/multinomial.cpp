// multinomial on CUDA: the kernels of cuda/device/multinomial.cuh, compiled at select per weight and
// index dtype without FMA contraction (the keys' and sums' arithmetic rounds as the host's does);
// without replacement CUB's radix sort (randperm's, cuda/randperm_sort.cu) orders the keys.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/device/params.h"
#include "cuda/jit/jit.hpp"
#include "cuda/jit/launch.hpp"
#include "ops/multinomial_problem.hpp"
#include "ops/randperm_problem.hpp"

namespace baracuda::detail::cuda {

// The program's kernels: multinomial_keys<T>, multinomial_take<I>, multinomial_replace<T, I>,
// multinomial_few<T, I>.
jit::Program multinomial_program(DType t, DType index) {
  jit::Program p;
  const std::string T = jit::device_type(t), I = index == DType::i32 ? "int" : "long long";
  p.name = "multinomial<" + std::string(dtype_name(t)) + ", " + std::string(dtype_name(index)) + ">";
  p.source = "#include \"cuda/device/multinomial.cuh\"\n";
  p.options = {"--fmad=false"};
  p.kernels = {"baracuda::device::multinomial_keys<" + T + ">", "baracuda::device::multinomial_take<" + I + ">",
               "baracuda::device::multinomial_replace<" + T + ", " + I + ">",
               "baracuda::device::multinomial_few<" + T + ", " + I + ">"};
  return p;
}

Expected<const void*> multinomial_kernels(const PlanTarget& target, const MultinomialDescriptor& d,
                                          std::string_view plan) {
  Expected<const jit::Module*> m = jit::load(multinomial_program(d.dtype, d.index_dtype), target.arch, plan);
  if (!m) return m.status();
  return static_cast<const void*>(*m);
}

namespace {
// Without replacement, few samples a row are picked by multinomial_few, with no sort (bench/NOTES.md).
bool few_samples(const MultinomialDescriptor& d) { return !d.replacement && d.samples <= kMultinomialFewSamples; }
}  // namespace

size_t multinomial_workspace(const MultinomialDescriptor& d, int64_t rows, int64_t categories) {
  return d.replacement || few_samples(d) ? 0 : randperm_workspace(rows * categories);
}

Status launch(const LaunchContext& ctx, const MultinomialProblem& p) {
  const jit::Module& m = jit_module(ctx);
  device::MultinomialParams params{};
  params.probs = p.probs;
  params.out = p.out;
  params.rows = p.rows;
  params.categories = p.categories;
  params.samples = p.desc.samples;
  params.probs_row_stride = p.probs_row_stride;
  params.probs_stride = p.probs_stride;
  params.out_row_stride = p.out_row_stride;
  params.out_stride = p.out_stride;
  params.seed = p.desc.seed;
  params.offset = p.desc.offset;
  const int64_t sms = std::max(ctx.target.sm_count, 1);
  const int64_t row_blocks = std::clamp<int64_t>(p.rows, 1, 8 * sms);
  if (p.desc.replacement) return launch_jit(m.kernels[2], row_blocks, 256, params, ctx.stream, "multinomial_replace");
  if (few_samples(p.desc))
    return launch_jit(m.kernels[3], std::clamp<int64_t>(p.rows, 1, 2 * sms), 1024, params, ctx.stream,
                      "multinomial_few");
  const int64_t n = p.rows * p.categories;
  auto* base = static_cast<unsigned char*>(ctx.workspace.data);
  const size_t array = randperm_array_bytes(n);
  params.keys = reinterpret_cast<unsigned long long*>(base);
  params.sorted_keys = reinterpret_cast<const unsigned long long*>(base + array);
  params.values = reinterpret_cast<long long*>(base + 2 * array);
  params.sorted_values = reinterpret_cast<const long long*>(base + 3 * array);
  if (Status s = launch_jit(m.kernels[0], row_blocks, 256, params, ctx.stream, "multinomial_keys"); !s) return s;
  if (Status s = randperm_sort(ctx.stream, ctx.workspace, n); !s) return s;
  const int64_t take_blocks = std::clamp<int64_t>((p.rows * p.desc.samples + 255) / 256, 1, 32 * sms);
  return launch_jit(m.kernels[1], take_blocks, 256, params, ctx.stream, "multinomial_take");
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {
std::vector<Program> multinomial_programs() {
  std::vector<Program> out;
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (DType index : {DType::i32, DType::i64}) out.push_back(cuda::multinomial_program(t, index));
  return out;
}
}  // namespace baracuda::detail::jit

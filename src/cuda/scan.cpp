// The scan family on CUDA: its kernels (cuda/common/scan_kernels.cuh) compiled at select by NVRTC,
// one program a pass's Step (the forward's dtype and math, or the backward's dtype) and variant.
#include <algorithm>
#include <climits>
#include <string>

#include "cuda/elementwise_launch.hpp"
#include "ops/scan_problem.hpp"

namespace baracuda::detail::cuda {
namespace {

constexpr std::string_view kKernels = "cuda/common/scan_kernels.cuh";
constexpr std::string_view kMaths = "common/scan_math.hpp";

// A program's kernels, in its order.
enum class ScanKernel : int { scan, partials };

unsigned capped(int64_t blocks) { return static_cast<unsigned>(std::min<int64_t>(blocks, INT_MAX)); }

template <class Step, bool kColumns>
Status scan(const ElementwiseRun& r, const ScanProblem& p) {
  Expected<const jit::Module*> module = module_for<ProgramTag<Step, std::bool_constant<kColumns>>>(r, [&] {
    const std::string step = jit::type_name<Step>();
    const std::string columns = kColumns ? "true" : "false";
    jit::Program prog = device_program("scan<" + step + ", " + columns + ">", kKernels, kMaths);
    prog.kernels = {"baracuda::detail::cuda::scan::scan_kernel<" + step + ", " + columns + ">",
                    "baracuda::detail::cuda::scan::partials_kernel<" + step + ">"};
    return prog;
  });
  if (!module || !*module) return module.status();
  const jit::Module& m = **module;
  const ScanGeometry& g = p.geometry;
  const dim3 grid(capped(g.line_blocks), static_cast<unsigned>(g.piece_blocks));
  if (g.pieces > 1) {
    const bool totals = false;
    if (Status s = launch_kernel(m, int(ScanKernel::scan), grid, kScanBlock, r.stream, "scan totals", {&p, &totals});
        !s)
      return s;
    const int slices = static_cast<int>(std::min<int64_t>(kScanBlock, pow2_at_least(ceil_div(g.pieces, 4))));
    const int64_t per = ceil_div(g.pieces, slices);
    if (Status s = launch_kernel(m, int(ScanKernel::partials), dim3(capped(ceil_div(p.lines, kScanBlock / slices))),
                                 kScanBlock, r.stream, "scan partials", {&p, &slices, &per});
        !s)
      return s;
  }
  const bool emit = true;
  return launch_kernel(m, int(ScanKernel::scan), grid, kScanBlock, r.stream, "scan", {&p, &emit});
}

Status run(const ElementwiseRun& r, const ScanProblem& p) {
  return dispatch_scan<half, bfloat16>(p, [&](auto step) {
    using Step = typename decltype(step)::type;
    return p.variant == ScanVariant::columns ? scan<Step, true>(r, p) : scan<Step, false>(r, p);
  });
}

constexpr std::string_view plan_of(bool backward) { return backward ? "ScanBackwardPlan" : "ScanPlan"; }

}  // namespace

Status launch(const LaunchContext& ctx, const ScanProblem& p) {
  if (p.lines == 0 || p.n == 0) return Status::ok();
  return run({ctx.target, ctx.stream, plan_of(p.backward), kMaths}, p);
}

Status prepare_scan(const PlanTarget& target, const ScanProblem& p) {
  const Stream stream = Stream::cuda();
  return run({target, stream, plan_of(p.backward), kMaths, ElementwiseMode::load}, p);
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

std::vector<Program> scan_programs() {
  std::vector<Program> out;
  const PlanTarget target{Backend::cuda};
  const Stream stream = Stream::cuda();
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64})
    for (int k = 0; k <= static_cast<int>(ScanKind::logcumsumexp); ++k)
      for (bool backward : {false, true})
        for (ScanVariant variant : {ScanVariant::rows, ScanVariant::columns}) {
          if (backward && !is_floating(t)) continue;
          ScanProblem p;
          p.backward = backward;
          p.kind = static_cast<ScanKind>(k);
          p.dtype = p.out_dtype = t;
          p.variant = variant;
          (void)cuda::run({target, stream, cuda::plan_of(backward), cuda::kMaths, cuda::ElementwiseMode::list, &out},
                          p);
        }
  return cuda::unique_programs(std::move(out));
}

}  // namespace baracuda::detail::jit

// The reduction family on CUDA: its kernels (cuda/common/reduce_kernels.cuh) compiled at select by
// NVRTC, one program a (element type, math, sink) for the folds and one a (x, out, gradient form) for
// the backward's map; the variant and geometry the plan chose at select decide the launches.
#include <algorithm>
#include <string>

#include "cuda/elementwise_launch.hpp"
#include "ops/reduce_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {
namespace {

constexpr std::string_view kKernels = "cuda/common/reduce_kernels.cuh";
constexpr std::string_view kMaths = "common/reduce_math.hpp";
constexpr std::string_view kNamespace = "baracuda::detail::cuda::reduce::";

// A fold program's kernels, in its order (the columns kernel of `unit` outputs a thread, vectorized
// or not, and of one output).
enum class FoldKernel : int { rows_vec, rows, split_vec, split, finish, columns_vec, columns_unit, columns_one };

// Whether the columns kernels are the ones bound to four blocks an SM (columns_four_blocks_kernel):
// the extremes' value-only folds of 4-byte elements. Left to choose, ptxas spills in those under
// NVRTC and the bound takes the spill away; the same bound adds spills to larger states (ExtremeMath,
// VarMath, CountMath) and changes nothing for f32 sums (ptxas -v, bench/NOTES.md).
template <class Math>
inline constexpr bool kExtremeValueFold = false;
template <class A, bool kMax, bool kAbs>
inline constexpr bool kExtremeValueFold<ExtremeValueMath<A, kMax, kAbs>> = true;
template <class X, class Math>
constexpr bool columns_at_four_blocks() {
  return sizeof(X) == 4 && kExtremeValueFold<Math>;
}

jit::Program fold_program(const std::string& x, const std::string& math, bool stats, int unit, bool four_blocks) {
  const std::string sink = std::string(kNamespace) + (stats ? "StatsSink" : "OutputSink");
  const std::string xm = x + ", " + math;
  jit::Program p = device_program("reduce<" + xm + ", " + sink + ">", kKernels, kMaths);
  const std::string ns(kNamespace);
  const std::string columns = ns + (four_blocks ? "columns_four_blocks_kernel<" : "columns_kernel<");
  p.kernels = {ns + "rows_kernel<" + xm + ", " + sink + ", true>",
               ns + "rows_kernel<" + xm + ", " + sink + ", false>",
               ns + "split_kernel<" + xm + ", true>",
               ns + "split_kernel<" + xm + ", false>",
               ns + "finish_kernel<" + math + ", " + sink + ">",
               columns + xm + ", " + sink + ", " + std::to_string(unit) + ", true>",
               columns + xm + ", " + sink + ", " + std::to_string(unit) + ", false>",
               columns + xm + ", " + sink + ", 1, false>"};
  return p;
}

unsigned capped_blocks(int64_t wanted, int sm_count, int per_sm) {
  return static_cast<unsigned>(std::clamp<int64_t>(wanted, 1, int64_t(sm_count) * per_sm));
}

// Folds every output of the problem with Math over elements of X: the forward's outputs, or with
// kStats the backward's statistics (into the workspace).
template <class X, class Math, bool kStats>
Status fold(const ElementwiseRun& r, const ReduceProblem& p) {
  using State = typename Math::State;
  constexpr int V = column_unit(sizeof(X), sizeof(State));
  Expected<const jit::Module*> module = module_for<ProgramTag<X, Math, std::bool_constant<kStats>>>(r, [&] {
    return fold_program(jit::type_name<X>(), jit::type_name<Math>(), kStats, V, columns_at_four_blocks<X, Math>());
  });
  if (!module || !*module) return module.status();
  const jit::Module& m = **module;
  const Math math(p.params);
  const char sink = 0;  // (the kernels' sink is an empty struct: one byte)
  const ReduceGeometry& g = p.geometry;
  const int sms = r.target.sm_count;
  auto launch = [&](FoldKernel kernel, dim3 grid, int threads, const char* what, auto... extra) {
    return launch_kernel(m, static_cast<int>(kernel), grid, threads, r.stream, what, {&p, &math, &extra...});
  };
  auto finish = [&]() {
    const int group = static_cast<int>(std::min<int64_t>(kReduceBlock, pow2_at_least(g.splits)));
    const int threads = group <= 32 ? kReduceBlock : group;
    return launch(FoldKernel::finish,
                  dim3(capped_blocks(ceil_div(p.outputs, threads / group), sms, 2048 / threads * 4)), threads,
                  "reduce finish_kernel", sink, group);
  };
  switch (p.variant) {
    case ReduceVariant::rows: {
      const int threads = g.group <= 32 ? kReduceBlock : g.group;
      const unsigned blocks = capped_blocks(ceil_div(p.outputs, threads / g.group), sms, 2048 / threads * 4);
      return launch(p.vectorized ? FoldKernel::rows_vec : FoldKernel::rows, dim3(blocks), threads, "reduce rows_kernel",
                    sink);
    }
    case ReduceVariant::split_rows: {
      const dim3 grid(capped_blocks(p.outputs, sms, 64), static_cast<unsigned>(g.splits));
      if (Status s = launch(p.vectorized ? FoldKernel::split_vec : FoldKernel::split, grid, kReduceBlock,
                            "reduce split_kernel");
          !s)
        return s;
      return finish();
    }
    case ReduceVariant::columns: {
      const int64_t unit = p.vectorized || (p.kept.rank > 0 && p.kept.inner_size() % V == 0) ? V : 1;
      const dim3 grid(capped_blocks(ceil_div(ceil_div(p.outputs, unit), g.lanes), sms, 64),
                      static_cast<unsigned>(g.splits));
      const FoldKernel kernel = p.vectorized ? FoldKernel::columns_vec
                                : unit == V  ? FoldKernel::columns_unit
                                             : FoldKernel::columns_one;
      if (Status s = launch(kernel, grid, kReduceBlock, "reduce columns_kernel", sink); !s) return s;
      return g.splits > 1 ? finish() : Status::ok();
    }
  }
  return Status::ok();
}

// 16-byte accesses of x and dx in the map: unit-stride along the line, whole vectors, aligned lines.
template <class X>
bool map_vectorizable(const ReduceProblem& p) {
  constexpr int V = 16 / sizeof(X);
  const Walker<kMapTensors>& w = p.map;
  if (w.rank == 0 || w.inner_size() % V != 0 || !aligned16(p.dx) || (p.x && !aligned16(p.x))) return false;
  for (int t : {int(kMapX), int(kMapDx)}) {
    if ((t == kMapX && !p.x)) continue;
    if (w.inner_stride(t) != 1) return false;
    for (int k = 0; k + 1 < w.rank; ++k)
      if (w.strides[t][k] % V != 0) return false;
  }
  return true;
}

// The backward's map (every element of dx), its gradient's form a kernel of its own.
template <class X, class Out>
Status map(const ElementwiseRun& r, const ReduceProblem& p) {
  using Grad = ReduceGrad<acc_t<X>>;
  const Grad grad(p.params);
  return Grad::with_form(p.params.kind, [&](auto form) -> Status {
    using Form = decltype(form);
    Expected<const jit::Module*> module = module_for<ProgramTag<X, Out, Form>>(r, [&] {
      const std::string args = jit::type_name<X>() + ", " + jit::type_name<Out>();
      const std::string form_name = jit::type_name<Form>();
      jit::Program prog = device_program("reduce_map<" + args + ", " + form_name + ">", kKernels, kMaths);
      for (const char* vec : {"true", "false"})
        prog.kernels.push_back(std::string(kNamespace) + "map_kernel<" + args + ", " + vec + ", " + form_name + ">");
      return prog;
    });
    if (!module || !*module) return module.status();
    const bool vec = map_vectorizable<X>(p);
    const int64_t v = vec ? 16 / sizeof(X) : 1;
    const Walker<kMapTensors>& w = p.map;
    const int64_t inner = w.inner_size();
    const int64_t chunks = ceil_div(inner, int64_t(kReduceBlock) * kMapVectors * v);
    const int64_t items = w.numel() / inner * chunks;
    const unsigned blocks = capped_blocks(items, r.target.sm_count, 2048 / kReduceBlock * 8);
    bool line_reduced = w.rank > 0;
    for (int t : {int(kMapOut), int(kMapDout), int(kMapIndices), int(kMapStats)})
      line_reduced = line_reduced && w.inner_stride(t) == 0;
    return launch_kernel(**module, vec ? 0 : 1, dim3(blocks), kReduceBlock, r.stream, "reduce map_kernel",
                         {&p, &grad, &chunks, &line_reduced});
  });
}

Status run(const ElementwiseRun& r, const ReduceProblem& p) {
  if (!p.backward)
    return dispatch_reduce<false, half, bfloat16>(p, [&](auto x, auto math) {
      return fold<typename decltype(x)::type, typename decltype(math)::type, false>(r, p);
    });
  if (p.has_stats) {
    Status s = dispatch_reduce<true, half, bfloat16>(p, [&](auto x, auto math) {
      return fold<typename decltype(x)::type, typename decltype(math)::type, true>(r, p);
    });
    if (!s) return s;
  }
  return dispatch_float<half, bfloat16>(p.dtype, [&](auto x) {
    using X = typename decltype(x)::type;
    return p.out_dtype == p.dtype ? map<X, X>(r, p) : map<X, float>(r, p);
  });
}

constexpr std::string_view plan_of(bool backward) { return backward ? "ReduceBackwardPlan" : "ReducePlan"; }

}  // namespace

Status launch(const LaunchContext& ctx, const ReduceProblem& p) {
  return run({ctx.target, ctx.stream, plan_of(p.backward), kMaths}, p);
}

Status prepare_reduce(const PlanTarget& target, const ReduceProblem& p) {
  const Stream stream = Stream::cuda();
  return run({target, stream, plan_of(p.backward), kMaths, ElementwiseMode::load}, p);
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

std::vector<Program> reduce_programs() {
  std::vector<Program> out;
  const PlanTarget target{Backend::cuda};
  const Stream stream = Stream::cuda();
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64, DType::boolean})
    for (int k = 0; k <= static_cast<int>(ReduceKind::var_mean); ++k) {
      const auto kind = static_cast<ReduceKind>(k);
      if (!is_floating(t) && !(t == DType::boolean ? reduce_takes_bools(kind) : reduce_takes_integers(kind))) continue;
      for (double norm_p : {2.0, 1.0, 3.0, 0.0, double(INFINITY), -double(INFINITY)}) {
        if (kind != ReduceKind::norm && norm_p != 2.0) continue;
        for (bool backward : {false, true}) {
          if (backward && (!is_floating(t) || !differentiable(kind))) continue;
          for (DType out_dtype : {t, DType::f32}) {
            ReduceProblem p;
            p.backward = backward;
            p.params.kind = kind;
            p.params.p = norm_p;
            p.dtype = t;
            p.out_dtype = out_dtype;
            p.has_stats = reduce_stats(kind, norm_p) != ReduceStats::none;
            (void)cuda::run({target, stream, cuda::plan_of(backward), cuda::kMaths, cuda::ElementwiseMode::list, &out},
                            p);
          }
        }
      }
    }
  return cuda::unique_programs(std::move(out));
}

}  // namespace baracuda::detail::jit

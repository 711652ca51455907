// The softmax family on CUDA: its kernels (cuda/common/softmax_kernels.cuh) compiled at select by
// NVRTC. A program holds one variant's kernels of one (math, load type, store type) and the
// variant's template constants (the held rows' vectors a thread and scope; the outer kernel's
// columns a thread): select compiles only what the plan runs, both access forms of it, since the
// views (and so whether 16-byte accesses apply) come with the run. The launches are those of the
// ahead-of-time launcher: the variant and geometry the plan chose at select decide them.
#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>

#include "cuda/elementwise_launch.hpp"
#include "cuda/jit/launch.hpp"
#include "ops/softmax_problem.hpp"

namespace baracuda::detail::cuda {
namespace {

constexpr std::string_view kKernels = "cuda/common/softmax_kernels.cuh";
constexpr std::string_view kMaths = "common/softmax_math.hpp";
constexpr std::string_view kNamespace = "baracuda::detail::cuda::softmax::";

// The kernels of each program, in its order: the 16-byte form first, then the strided one.
enum class HeldKernel : int { vectorized, strided };
enum class SplitKernel : int { partials_vectorized, write_vectorized, partials_strided, write_strided };
enum class OuterKernel : int { vector_columns, one_column };

// The scope a held variant's group reduces over, as the kernels spell it.
std::string scope_name(SoftmaxVariant held) {
  const char* scope = held == SoftmaxVariant::warp_row    ? "warp"
                      : held == SoftmaxVariant::block_row ? "block"
                                                          : "cluster";
  return std::string("baracuda::detail::cuda::ReduceScope::") + scope;
}

// Calls f(std::integral_constant<int, C>{}) for chunks == C, C a power of two up to kMax.
template <int kMax, int C = 1, class F>
Status with_chunks(int chunks, F&& f) {
  if constexpr (C <= kMax) {
    if (chunks == C) return f(std::integral_constant<int, C>{});
    return with_chunks<kMax, C * 2>(chunks, std::forward<F>(f));
  } else {
    return Status::error(StatusCode::invalid_problem,
                         "softmax: no kernel holds " + std::to_string(chunks) + " vectors per thread");
  }
}

unsigned blocks_for(int64_t work, int64_t cap) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(work, cap)));
}

// A launch of kernel `index` of the module over `units` clusters of `cluster` blocks (sm_90; a plain
// launch for one), no more than the device holds at once: each cluster walks units in turn (no
// slower than waves of clusters; bench/NOTES.md).
Status launch_clusters(const ElementwiseRun& r, const jit::Module& m, int index, const SoftmaxKernelArgs& a,
                       int64_t units, int threads, int cluster, const char* what) {
  const void* kernel = m.kernels[index];
  const Expected<int> resident = resident_clusters(kernel, threads, cluster, r.target.sm_count, what);
  if (!resident) return resident.status();
  return launch_jit_clusters(kernel, blocks_for(units, std::max(*resident, 1)), threads, cluster, a, r.stream, what);
}

template <class Math, class Load, class Store>
struct Launcher {
  using T = SoftmaxTypes<Math, Load, Store>;
  const ElementwiseRun& r;
  const SoftmaxProblem& p;
  SoftmaxKernelArgs a;

  Launcher(const ElementwiseRun& run, const SoftmaxProblem& problem) : r(run), p(problem), a{} {
    a.in[0] = p.in[0];
    a.in[1] = p.in[1];
    a.out = p.out;
    a.walk = p.walk;
    for (int t = 0; t < kSoftmaxTensors; ++t) a.stride[t] = p.dim_stride[t];
    a.length = p.length;
    a.rows = p.rows;
    a.kind = p.kind;
    a.vectorized = p.vectorized;
    a.lanes = p.geometry.lanes;
    a.splits = p.geometry.splits;
    a.split_length = p.geometry.split_length;
    a.partials = p.workspace;
  }

  int64_t sms() const { return r.target.sm_count; }

  // "<Math, Load, Store": the kernels' first template arguments.
  static std::string types() {
    return "<" + jit::type_name<Math>() + ", " + jit::type_name<Load>() + ", " + jit::type_name<Store>();
  }
  static jit::Program program(const std::string& variant, const std::string& constants,
                              std::initializer_list<std::string> kernels) {
    jit::Program prog = device_program("softmax." + variant + types() + constants + ">", kKernels, kMaths);
    for (const std::string& k : kernels) prog.kernels.push_back(std::string(kNamespace) + k);
    return prog;
  }

  template <SoftmaxVariant kHeld>
  Status held() {
    const SoftmaxGeometry& g = p.geometry;
    return with_chunks<T::kMaxChunks>(g.chunks, [&](auto chunks) -> Status {
      constexpr int C = decltype(chunks)::value;
      using Tag = ProgramTag<Math, Load, Store, std::integral_constant<SoftmaxVariant, kHeld>, decltype(chunks)>;
      Expected<const jit::Module*> module = module_for<Tag>(r, [&] {
        const std::string constants = ", " + std::to_string(C) + ", " + scope_name(kHeld);
        return program("held_rows", constants,
                       {"held_rows" + types() + constants + ", true>", "held_rows" + types() + constants + ", false>"});
      });
      if (!module || !*module) return module.status();
      const int kernel = static_cast<int>(a.vectorized ? HeldKernel::vectorized : HeldKernel::strided);
      if constexpr (kHeld == SoftmaxVariant::cluster_row) {
        return launch_clusters(r, **module, kernel, a, p.rows, g.threads, g.cluster, "softmax cluster_row");
      } else {
        const int64_t rows_per_block = kHeld == SoftmaxVariant::warp_row ? g.threads / g.lanes : 1;
        const unsigned blocks = blocks_for(ceil_div(p.rows, rows_per_block), sms() * (2048 / g.threads) * 4);
        return launch_kernel(**module, kernel, dim3(blocks), g.threads, r.stream, "softmax held_rows", {&a});
      }
    });
  }

  Status split() {
    using Tag = ProgramTag<Math, Load, Store, std::integral_constant<SoftmaxVariant, SoftmaxVariant::split_row>>;
    Expected<const jit::Module*> module = module_for<Tag>(r, [&] {
      const std::string t = types();
      return program("split_row", "",
                     {"split_partials" + t + ", true>", "split_write" + t + ", true>",
                      "split_partials" + t + ", false>", "split_write" + t + ", false>"});
    });
    if (!module || !*module) return module.status();
    const int64_t pieces = p.rows * p.geometry.splits;
    const SplitKernel partials = a.vectorized ? SplitKernel::partials_vectorized : SplitKernel::partials_strided;
    const SplitKernel write = a.vectorized ? SplitKernel::write_vectorized : SplitKernel::write_strided;
    if (Status s = launch_clusters(r, **module, static_cast<int>(partials), a, pieces, kSplitThreads, 1,
                                   "softmax split_row partials");
        !s)
      return s;
    return launch_clusters(r, **module, static_cast<int>(write), a, pieces, kSplitThreads, 1,
                           "softmax split_row write");
  }

  // Columns a thread: a 16-byte vector of them where the views allow, else one.
  Status outer() {
    using Tag = ProgramTag<Math, Load, Store, std::integral_constant<SoftmaxVariant, SoftmaxVariant::outer>>;
    Expected<const jit::Module*> module = module_for<Tag>(r, [&] {
      const std::string t = types();
      return program("outer", "",
                     {"outer_columns" + t + ", " + std::to_string(T::kVector) + ">", "outer_columns" + t + ", 1>"});
    });
    if (!module || !*module) return module.status();
    const SoftmaxGeometry& g = p.geometry;
    const int columns = a.vectorized ? T::kVector : 1;
    const int64_t tiles = ceil_div(ceil_div(p.rows, columns), g.lanes);
    const OuterKernel kernel = a.vectorized ? OuterKernel::vector_columns : OuterKernel::one_column;
    return launch_clusters(r, **module, static_cast<int>(kernel), a, tiles, g.threads, g.cluster, "softmax outer");
  }

  Status pass() {
    using Tag = ProgramTag<Math, Load, Store, std::integral_constant<SoftmaxVariant, SoftmaxVariant::pass_row>>;
    Expected<const jit::Module*> module =
        module_for<Tag>(r, [&] { return program("pass_row", "", {"pass_rows" + types() + ">"}); });
    if (!module || !*module) return module.status();
    const unsigned blocks = blocks_for(p.rows, sms() * (2048 / kPassThreads) * 4);
    return launch_kernel(**module, 0, dim3(blocks), kPassThreads, r.stream, "softmax pass_row", {&a});
  }

  Status run() {
    switch (p.variant) {
      case SoftmaxVariant::warp_row:
        return held<SoftmaxVariant::warp_row>();
      case SoftmaxVariant::block_row:
        return held<SoftmaxVariant::block_row>();
      case SoftmaxVariant::cluster_row:
        return held<SoftmaxVariant::cluster_row>();
      case SoftmaxVariant::split_row:
      case SoftmaxVariant::outer:
        if constexpr (!Math::kIterative) return p.variant == SoftmaxVariant::outer ? outer() : split();
        break;
      case SoftmaxVariant::pass_row:
        if constexpr (Math::kIterative) return pass();
        break;
      case SoftmaxVariant::rows:
        break;
    }
    return Status::error(StatusCode::unsupported, "softmax: no CUDA kernel of this variant runs this kind");
  }
};

Status run(const ElementwiseRun& r, const SoftmaxProblem& p) {
  return dispatch_softmax<half, bfloat16>(p, [&](auto math, auto load, auto store) {
    return Launcher<typename decltype(math)::type, typename decltype(load)::type, typename decltype(store)::type>(r, p)
        .run();
  });
}

constexpr std::string_view plan_of(bool backward) { return backward ? "SoftmaxBackwardPlan" : "SoftmaxPlan"; }

}  // namespace

Status launch(const LaunchContext& ctx, const SoftmaxProblem& p) {
  return run({ctx.target, ctx.stream, plan_of(p.backward), kMaths}, p);
}

Status prepare_softmax(const PlanTarget& target, const SoftmaxProblem& p) {
  const Stream stream = Stream::cuda();
  return run({target, stream, plan_of(p.backward), kMaths, ElementwiseMode::load}, p);
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

// Every program select can ask for: the held variants with each count of vectors a thread up to
// what a thread holds (held / vector, the kernels' kMaxChunks; select's geometry gives each for some
// row length), the other variants once a math and element types.
std::vector<Program> softmax_programs() {
  std::vector<Program> out;
  const PlanTarget target{Backend::cuda};
  const Stream stream = Stream::cuda();
  for (bool backward : {false, true})
    for (SoftmaxKind kind :
         {SoftmaxKind::softmax, SoftmaxKind::log_softmax, SoftmaxKind::sparsemax, SoftmaxKind::entmax15})
      for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16})
        for (int widened = 0; widened < (dtype == DType::f32 ? 1 : 2); ++widened) {  // y in x's dtype, or f32
          const DType out_dtype = widened ? DType::f32 : dtype;
          SoftmaxDescriptor d;
          d.dtype = dtype;
          d.out_dtype = out_dtype;
          d.kind = kind;
          d.shape = Shape{1};
          const SoftmaxShape s = softmax_shape(d, 0, backward);
          for (SoftmaxVariant variant :
               {SoftmaxVariant::warp_row, SoftmaxVariant::block_row, SoftmaxVariant::cluster_row,
                SoftmaxVariant::split_row, SoftmaxVariant::outer, SoftmaxVariant::pass_row}) {
            if (!variant_runs(variant, s)) continue;
            const bool held = variant == SoftmaxVariant::warp_row || variant == SoftmaxVariant::block_row ||
                              variant == SoftmaxVariant::cluster_row;
            for (int chunks = 1; chunks <= (held ? s.held / s.vector : 1); chunks *= 2) {
              SoftmaxProblem p;
              p.backward = backward;
              p.kind = kind;
              p.in_dtype = dtype;
              p.out_dtype = out_dtype;
              p.variant = variant;
              p.geometry.chunks = chunks;
              (void)cuda::run(
                  {target, stream, cuda::plan_of(backward), cuda::kMaths, cuda::ElementwiseMode::list, &out}, p);
            }
          }
        }
  return cuda::unique_programs(std::move(out));
}

}  // namespace baracuda::detail::jit

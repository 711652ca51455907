// CUDA entry of the indexing family: the dtype / index dispatch, the zeroing of an overwritten
// table, the strategy (see src/cuda/indexing/strategies.hpp) and the bad-index count. The kernels are
// compiled at select by NVRTC (src/cuda/common/*_kernels.cuh), one program a strategy's element
// type, index type and the constants select decides; a plan's run then launches what select loaded.
//  - gather: gather_kernels.cuh (here);
//  - scatter-add along the innermost dim (either variant): the warp lines for lines of a few entries
//    (at most 128, or sparse f32 / f64 adds of up to 512: added to at any length, overwritten while
//    short), the short lines for lines of at most 32 entries, else the shared line where the
//    destination line fits in shared memory (cuda/indexing/scatter_lines.cpp); f32 / f64 atomics
//    where they add to lines other than dense shared ones (strategy.cpp);
//  - element-mode scatter-add along an outer dim: the column tiles while their slabs are few, the
//    warp or shared lines over columns (column lines) for a few entries a column of a tall table;
//  - scatter-add elsewhere: atomics, or the sorted scatter (deterministic; cuda/indexing/
//    scatter_general.cpp).
#include <string>
#include <vector>

#include "cuda/common/launch.cuh"
#include "cuda/common/row_walk.cuh"
#include "cuda/elementwise_launch.hpp"
#include "cuda/indexing/strategies.hpp"
#include "ops/indexing_problem.hpp"

namespace baracuda::detail::cuda {

// The problem header NVRTC reads beside each strategy's kernels.
constexpr std::string_view kProblemHeader = "ops/indexing_problem.hpp";

jit::Program indexing_program(std::string name, std::string_view header) {
  return device_program(std::move(name), header, kProblemHeader);
}

namespace {

// The programs' kernels, in their order.
enum class GatherKernel : int { vectorized, elements, rows };
struct CountBadProgram;
struct ZeroViewProgram;

// Calls f(std::type_identity<Bits>{}) with the unsigned type of `bytes` (2, 4 or 8): a gather and a
// zeroing move bits.
template <class F>
Status with_bits(size_t bytes, F&& f) {
  if (bytes == 2) return f(std::type_identity<uint16_t>{});
  if (bytes == 4) return f(std::type_identity<uint32_t>{});
  return f(std::type_identity<uint64_t>{});
}

// Counts the index values out of range into the caller's counter (a run without one counts none).
Status count_bad(const ElementwiseRun& r, const IndexedProblem& p) {
  if (r.mode == ElementwiseMode::launch && !p.bad_index_count) return Status::ok();
  return dispatch_index(p.desc.index_dtype, [&](auto index) -> Status {
    using Idx = typename decltype(index)::type;
    Expected<const jit::Module*> module = module_for<ProgramTag<CountBadProgram, Idx>>(r, [] {
      const std::string idx = jit::type_name<Idx>();
      jit::Program prog = indexing_program("count_bad<" + idx + ">", "cuda/common/bad_index.cuh");
      prog.kernels = {std::string(kKernelNamespace) + "count_bad_kernel<" + idx + ">"};
      return prog;
    });
    if (!module || !*module) return module.status();
    int64_t repeats = 1;
    const Walker<1> walker = distinct_elements(p.index_view, repeats);
    const int64_t n = p.index_view.numel() == 0 ? 0 : walker.numel();
    const auto repeats_bits = static_cast<unsigned long long>(repeats);
    return launch_kernel(**module, 0, dim3(grid_stride_blocks(n, r.target.sm_count)), kThreads, r.stream,
                         "count_bad_kernel",
                         {&p.index_view.data, &walker, &n, &p.layout.dim_size, &repeats_bits, &p.bad_index_count});
  });
}

// Zeroes every element of a (strided) view of `element_bytes` elements: an overwriting scatter's
// table before its sums. A memset where the view is contiguous.
Status zero_view(const ElementwiseRun& r, const AnyTensorRef& view, size_t element_bytes) {
  void* data = const_cast<void*>(view.data);
  if (r.mode == ElementwiseMode::launch && view.is_contiguous())
    return cuda_status(cudaMemsetAsync(data, 0, static_cast<size_t>(view.numel()) * element_bytes, native(r.stream)),
                       "cudaMemsetAsync");
  return with_bits(element_bytes, [&](auto bits) -> Status {
    using Bits = typename decltype(bits)::type;
    Expected<const jit::Module*> module = module_for<ProgramTag<ZeroViewProgram, Bits>>(r, [] {
      const std::string t = jit::type_name<Bits>();
      jit::Program prog = indexing_program("zero_view<" + t + ">", "cuda/common/zero_view.cuh");
      prog.kernels = {std::string(kKernelNamespace) + "zero_view_kernel<" + t + ">"};
      return prog;
    });
    if (!module || !*module) return module.status();
    const Strides* strides[1] = {&view.strides};
    const Walker<1> walker = make_walker<1>(view.shape, strides);
    const int64_t n = view.numel();
    return launch_kernel(**module, 0, dim3(grid_stride_blocks(n, r.target.sm_count)), kThreads, r.stream,
                         "zero_view_kernel", {&data, &walker, &n});
  });
}

// The gather's kernel for the views: 16-byte vectors of whole rows, elements in batches, or rows.
Status launch_gather(const ElementwiseRun& r, const IndexedProblem& p, const jit::Module& m, int64_t vector) {
  const IndexedLayout& layout = p.layout;
  const int sm_count = r.target.sm_count;
  auto launch = [&](GatherKernel kernel, unsigned blocks, int lanes, const char* what) {
    return launch_kernel(m, static_cast<int>(kernel), dim3(blocks), kThreads, r.stream, what,
                         {&layout, &p.values, &p.table, &p.index, &lanes});
  };
  if (p.vectorized_rows) {
    const int64_t vectors = layout.row_length / vector;
    const int lanes = lanes_for((vectors + kRowVectors - 1) / kRowVectors);
    return launch(GatherKernel::vectorized, row_blocks(layout.row_count, lanes, sm_count), lanes,
                  "gather_vectorized_kernel");
  }
  if (layout.columns.rank == 0 && layout.rows.rank > 0) {
    const int64_t inner = layout.rows.inner_size();
    const int lanes = lanes_for((inner + kElementBatch - 1) / kElementBatch);
    return launch(GatherKernel::elements, row_blocks(layout.row_count / inner, lanes, sm_count), lanes,
                  "gather_elements_kernel");
  }
  const int lanes = lanes_for(layout.row_length);
  return launch(GatherKernel::rows, row_blocks(layout.row_count, lanes, sm_count), lanes, "gather_kernel");
}

}  // namespace

Status gather(const ElementwiseRun& r, const IndexedProblem& p) {
  return dispatch_index(p.desc.index_dtype, [&](auto index) {
    return with_bits(dtype_size(p.desc.dtype), [&](auto bits) -> Status {
      using Bits = typename decltype(bits)::type;
      using Idx = typename decltype(index)::type;
      Expected<const jit::Module*> module = module_for<ProgramTag<GatherKernel, Bits, Idx>>(r, [] {
        const std::string args = "<" + jit::type_name<Bits>() + ", " + jit::type_name<Idx>() + ">";
        jit::Program prog = indexing_program("gather" + args, "cuda/common/gather_kernels.cuh");
        for (const char* kernel : {"gather_vectorized_kernel", "gather_elements_kernel", "gather_kernel"})
          prog.kernels.push_back(std::string(kKernelNamespace) + kernel + args);
        return prog;
      });
      if (!module || !*module) return module.status();
      return launch_gather(r, p, **module, 16 / static_cast<int64_t>(sizeof(Bits)));
    });
  });
}

namespace {

Status run_scatter(const ElementwiseRun& r, const IndexedProblem& p, bool fused_overwrite) {
  switch (p.kernel) {
    case ScatterKernel::shared_line:
      return scatter_line(r, p, p.layout, fused_overwrite, false);
    case ScatterKernel::column_tiles:
      return scatter_columns(r, p, fused_overwrite);
    case ScatterKernel::warp_lines:
      return scatter_warp_lines(r, p, p.layout, fused_overwrite, false);
    case ScatterKernel::short_lines:
      return scatter_short_lines(r, p);
    case ScatterKernel::column_lines: {
      // The walk with dim innermost, added into the table (zeroed first when overwritten).
      const IndexedLayout columns = dim_innermost(p.layout);
      const bool zeroed = !p.desc.accumulate;
      return column_lines_by_warp(p.desc) ? scatter_warp_lines(r, p, columns, false, zeroed)
                                          : scatter_line(r, p, columns, false, zeroed);
    }
    case ScatterKernel::general:
      break;
  }
  return p.variant == IndexVariant::atomic ? scatter_atomic(r, p) : scatter_sorted(r, p);
}

Status scatter_add(const ElementwiseRun& r, const IndexedProblem& p) {
  // Overwriting: the shared-memory kernels write every table element themselves when the walk covers
  // every line of the table; otherwise (and always for column lines) the table is zeroed first and
  // the sums are added.
  const bool shared_sums = p.kernel == ScatterKernel::shared_line || p.kernel == ScatterKernel::column_tiles ||
                           p.kernel == ScatterKernel::warp_lines;
  const bool fused_overwrite = !p.desc.accumulate && shared_sums && covers_every_table_line(p.desc);
  if (!p.desc.accumulate && !fused_overwrite)
    if (Status st = zero_view(r, p.table_view, dtype_size(p.desc.dtype)); !st) return st;
  // Nothing to add (a 1-D index along an empty table): its values are still counted. (Select, which
  // has no views, loads the strategy's kernels all the same.)
  const bool nothing = p.layout.row_count == 0 || p.desc.shape.numel() == 0;
  if (r.mode == ElementwiseMode::launch && nothing) return count_bad(r, p);
  if (Status st = run_scatter(r, p, fused_overwrite); !st) return st;
  return count_bad(r, p);
}

Status run(const ElementwiseRun& r, const IndexedProblem& p) {
  if (p.desc.scatter) return scatter_add(r, p);
  if (r.mode == ElementwiseMode::launch && p.desc.shape.numel() == 0) return count_bad(r, p);
  if (Status st = gather(r, p); !st) return st;
  return count_bad(r, p);
}

}  // namespace

Status launch(const LaunchContext& ctx, const IndexedProblem& p) {
  return run({ctx.target, ctx.stream, p.desc.plan, kProblemHeader}, p);
}

Status prepare_indexing(const PlanTarget& target, const IndexedProblem& p) {
  const Stream stream = Stream::cuda();
  return run({target, stream, p.desc.plan, kProblemHeader, ElementwiseMode::load}, p);
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

// Every program through the launchers in list mode, with problems that reach each one: gathers of each
// element size; scatters of each kernel, variant and way to write the table, with lines of a few
// entries and of more than a warp's item (the warp lines' sums kept in place or hashed).
std::vector<Program> indexing_programs() {
  std::vector<Program> out;
  const PlanTarget target{Backend::cuda};
  const Stream stream = Stream::cuda();
  auto list = [&](const IndexedProblem& p) {
    (void)cuda::run({target, stream, p.desc.plan, cuda::kProblemHeader, cuda::ElementwiseMode::list, &out}, p);
  };
  for (DType index : {DType::i32, DType::i64}) {
    for (DType t : {DType::f16, DType::f32, DType::f64}) {
      IndexedProblem p;
      p.desc.plan = "GatherPlan";
      p.desc.dtype = t;
      p.desc.index_dtype = index;
      list(p);
    }
    for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
      for (int k = 0; k <= static_cast<int>(ScatterKernel::column_lines); ++k)
        for (IndexVariant variant : {IndexVariant::atomic, IndexVariant::sorted})
          for (bool accumulate : {true, false})
            for (int64_t entries : {int64_t{2}, cuda::kWarpItemEntries + 1}) {
              IndexedProblem p;
              p.desc.plan = "ScatterAddPlan";
              p.desc.scatter = true;
              p.desc.dtype = t;
              p.desc.index_dtype = index;
              p.desc.shape = Shape{entries};
              p.desc.table_shape = Shape{2};
              p.desc.accumulate = accumulate;
              p.variant = variant;
              p.kernel = static_cast<ScatterKernel>(k);
              list(p);
            }
  }
  return cuda::unique_programs(std::move(out));
}

}  // namespace baracuda::detail::jit

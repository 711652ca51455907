#pragma once
// The elementwise launcher of the families whose kernels are compiled at select time (NVRTC): the
// kernel shapes of cuda/common/elementwise_kernels.cuh for one functor and element types, as one
// program, loaded on first use and held in the functor's own slot (one atomic load a run after
// that); the shape the views take is chosen here, as the ahead-of-time launcher did. Host code: the
// host compiler builds it, nvcc never sees it.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/broadcast_reduction.hpp"
#include "cuda/common/check.cuh"
#include "cuda/common/elementwise_shape.hpp"
#include "cuda/common/launch.cuh"
#include "cuda/jit/jit.hpp"
#include "ops/elementwise_layout.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail::cuda {

// The kernels of an elementwise program, in the program's order.
enum class ElementwiseKernel : int { vectorized, contiguous, strided, rows, rows_vectorized, flat_rows, row_lanes };
// The broadcast reduction's, in its program's order (the last three only where every input is T).
enum class ReductionKernel : int { items, finalize, vectors_one_dim, vectors, rows };

// A program of the kernels in `header` (a path among the embedded sources) whose templates take the
// functors of `maths`; its kernels' names are the caller's to add.
jit::Program device_program(std::string name, std::string_view header, std::string_view maths);
// The programs, each with `maths`, the header that defines the functor ("common/unary_math.hpp"):
// every elementwise kernel shape of one functor (Op) over element types; the transposed path's
// kernels (one for each input staged); the broadcast reduction's of one Reduction.
jit::Program elementwise_program(std::string_view maths, const std::string& in, const std::string& out,
                                 const std::string& op, const std::string& first);
jit::Program transposed_program(std::string_view maths, const std::string& in, const std::string& out,
                                const std::string& op, const std::string& first, int inputs);
jit::Program reduction_program(std::string_view maths, const std::string& t, const std::string& body,
                               const std::string& first);

// What a run does with the program its types need: loads it and launches (a plan's run), loads it
// alone (a plan's select: compile errors are select's), or only lists it (the catalog of every
// program: the warm-up command, CI's compile test).
enum class ElementwiseMode { launch, load, list };
struct ElementwiseRun {
  const PlanTarget& target;
  const Stream& stream;
  std::string_view plan;   // for errors: "UnaryPlan"
  std::string_view maths;  // the functors' header
  ElementwiseMode mode = ElementwiseMode::launch;
  std::vector<jit::Program>* programs = nullptr;  // where `list` puts them
};

// The module of the program make() gives, for the run's mode: null where listed or loaded alone.
// Tag names the program's types: its slot holds the module after the first load (one atomic load a
// run from then on).
template <class Tag, class Make>
Expected<const jit::Module*> module_for(const ElementwiseRun& r, Make&& make) {
  if (r.mode == ElementwiseMode::list) {
    r.programs->push_back(make());
    return nullptr;
  }
  static jit::ModuleSlot slot;
  const jit::Module* m = slot.get(r.target.arch);
  if (!m) {
    Expected<const jit::Module*> loaded = jit::load(make(), r.target.arch, r.plan);
    if (!loaded) return loaded.status();
    m = *loaded;
    slot.set(r.target.arch, m);
  }
  return r.mode == ElementwiseMode::load ? nullptr : m;
}
template <class... T>
struct ProgramTag {};

// A catalog's programs without repeats (a family's branches meet the same functors many times).
std::vector<jit::Program> unique_programs(std::vector<jit::Program> programs);

// One launch of a kernel of the module (`index` in its program), its arguments' bytes in the
// kernel's order (each pointed to: the launch copies as many bytes as the kernel's parameter takes),
// with `shared_bytes` of dynamic shared memory.
Status launch_kernel(const jit::Module& m, int index, dim3 grid, int threads, const Stream& stream, const char* what,
                     std::initializer_list<const void*> args, size_t shared_bytes = 0);

// A functor's kernels as the launcher sees them, apart from its types: the module, the functor (the
// kernels' first argument, by value), the element sizes, and the vectors a thread takes that its
// kernels were compiled with. The launch code itself is then one per arity, not one per functor.
struct ElementwiseKernels {
  const jit::Module* module = nullptr;
  const void* op = nullptr;
  int in_bytes = 0, out_bytes = 0, first_bytes = 0;
  int pack = 1, pack_unroll = 1, row_unroll = 1, transpose_side = 1;
};
template <class In, class Out, class First, class Op>
ElementwiseKernels elementwise_kernels(const jit::Module* module, const Op& op) {
  return {module,
          &op,
          static_cast<int>(sizeof(In)),
          static_cast<int>(sizeof(Out)),
          static_cast<int>(sizeof(First)),
          kPackSize<In, Out>,
          kPackUnroll<In, Out, Op>,
          kRowUnroll<In, Out, Op>,
          kTransposeSide<In, Out>};
}

// The kernels' Operands<In, Out, kIn, kOut, First>, pointer for pointer.
template <int kIn, int kOut>
struct RawOperands {
  const void* in[kIn > 0 ? kIn : 1];
  void* out[kOut];
};
template <int kIn, int kOut>
RawOperands<kIn, kOut> raw_operands(const ElementwiseTensors<kIn, kOut>& t) {
  RawOperands<kIn, kOut> p{};
  for (int k = 0; k < kIn; ++k) p.in[k] = t.in[k];
  for (int k = 0; k < kOut; ++k) p.out[k] = t.out[k];
  return p;
}

// Runs the functor's kernels over the tensors, the kernel shape chosen from the views.
template <int kIn, int kOut>
Status launch_elementwise(const ElementwiseRun& r, const ElementwiseKernels& k,
                          const ElementwiseTensors<kIn, kOut>& t) {
  const jit::Module& m = *k.module;
  RawOperands<kIn, kOut> p = raw_operands(t);
  const int64_t n = t.shape.numel();
  const int sm_count = r.target.sm_count;
  auto launch = [&](ElementwiseKernel kernel, dim3 grid, const char* what, auto... args) {
    return launch_kernel(m, static_cast<int>(kernel), grid, kThreads, r.stream, what, {k.op, &p, &args...});
  };
  switch (t.path) {
    case ElementwisePath::vectorized: {
      const int64_t per_block = int64_t(kThreads) * k.pack_unroll * k.pack;
      const dim3 grid(static_cast<unsigned>(std::max<int64_t>(1, (n + per_block - 1) / per_block)));
      return launch(ElementwiseKernel::vectorized, grid, "elementwise_vectorized_kernel", n);
    }
    case ElementwisePath::contiguous:
      return launch(ElementwiseKernel::contiguous, dim3(grid_stride_blocks(n, sm_count)),
                    "elementwise_contiguous_kernel", n);
    default:
      break;
  }
  constexpr int NT = kIn + kOut;
  const Strides* strides[NT];
  for (int i = 0; i < kIn; ++i) strides[i] = &t.in_strides[i];
  for (int o = 0; o < kOut; ++o) strides[kIn + o] = &t.out_strides[o];
  const Walker<NT> walker = make_walker<NT>(t.shape, strides);
  const int64_t inner = walker.inner_size();
  const int64_t rows = n / inner;
  const unsigned grid_y = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
  if (t.path == ElementwisePath::strided_vectorized) {
    const int64_t vectors = inner / k.pack;
    if (walker.rank <= 2 && vectors <= kFlatLaunchVectors) {
      // One flat run of vectors over whole rows, a launch per kFlatLaunchVectors vectors (counted in
      // 32 bits), its pointers moved to its first row.
      if (rows == 0 || vectors == 0) return Status::ok();
      const int64_t rows_a_launch = kFlatLaunchVectors / vectors;
      FlatRows<NT> w;
      for (int i = 0; i < NT; ++i) {
        w.row_step[i] = walker.rank == 2 ? walker.strides[i][0] : 0;
        w.one_value[i] = walker.inner_stride(i) == 0;
      }
      w.vectors_a_row = U32Divisor(static_cast<uint32_t>(vectors));
      const int64_t per_block = int64_t{kThreads} * k.pack_unroll;
      for (int64_t first_row = 0; first_row < rows; first_row += rows_a_launch) {
        w.vectors = static_cast<uint32_t>(std::min(rows_a_launch, rows - first_row) * vectors);
        const dim3 grid(static_cast<unsigned>((w.vectors - 1) / per_block + 1));
        if (Status s = launch(ElementwiseKernel::flat_rows, grid, "elementwise_flat_rows_kernel", w); !s) return s;
        // (each pointer moved in its own elements: the first input may hold another type than In)
        for (int i = 0; i < kIn; ++i)
          p.in[i] =
              static_cast<const char*>(p.in[i]) + rows_a_launch * w.row_step[i] * (i ? k.in_bytes : k.first_bytes);
        for (int o = 0; o < kOut; ++o)
          p.out[o] = static_cast<char*>(p.out[o]) + rows_a_launch * w.row_step[kIn + o] * k.out_bytes;
      }
      return Status::ok();
    }
    const int64_t per_block = int64_t{kThreads} * k.row_unroll;
    if (vectors >= per_block) {
      const dim3 grid(static_cast<unsigned>((vectors + per_block - 1) / per_block), grid_y);
      return launch(ElementwiseKernel::rows_vectorized, grid, "elementwise_rows_vectorized_kernel", walker, rows);
    }
    // Rows of fewer vectors than a block's worth in lanes (rows counted in 32 bits; more than 2^30
    // rows take the row kernels below).
    if (rows <= int64_t{1} << 30) {
      const int lane_bits = row_lane_bits(vectors);
      const int64_t grid_x = ((vectors - 1) >> lane_bits) + 1, row_blocks = (rows - 1) / (kThreads >> lane_bits) + 1;
      const void* kernel = m.kernels[static_cast<int>(ElementwiseKernel::row_lanes)];
      unsigned wave = 0;
      if (Status s = one_wave_blocks(kernel, 0, grid_x * row_blocks, sm_count, wave); !s) return s;
      const dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(std::clamp<int64_t>(
                                                         std::min<int64_t>(wave / grid_x, row_blocks), 1, 65535)));
      return launch(ElementwiseKernel::row_lanes, grid, "elementwise_row_lanes_kernel", walker, static_cast<int>(rows),
                    lane_bits);
    }
  }
  if (inner >= kMinRowLength) {
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>((inner + kThreads - 1) / kThreads, 1024)), grid_y);
    return launch(ElementwiseKernel::rows, grid, "elementwise_rows_kernel", walker, rows);
  }
  return launch(ElementwiseKernel::strided, dim3(grid_stride_blocks(n, sm_count)), "elementwise_strided_kernel", walker,
                n);
}

// Runs op over the tensors, inputs of element type In (the first of First) and outputs of Out.
template <class In, class Out = In, class First = In, class Op, int kIn, int kOut>
Status run_elementwise(const ElementwiseRun& r, const Op& op, const ElementwiseTensors<kIn, kOut>& t) {
  static_assert(Op::kIn == kIn && Op::kOut == kOut, "functor arity must match the tensors");
  Expected<const jit::Module*> module = module_for<ProgramTag<In, Out, Op, First>>(r, [&] {
    return elementwise_program(r.maths, jit::type_name<In>(), jit::type_name<Out>(), jit::type_name<Op>(),
                               jit::type_name<First>());
  });
  if (!module || !*module) return module.status();
  return launch_elementwise(r, elementwise_kernels<In, Out, First>(*module, op), t);
}

// The transposed path (t.path == transposed): the staged input's kernel of the transposed program.
template <int kIn, int kOut>
Status launch_elementwise_transposed(const ElementwiseRun& r, const ElementwiseKernels& k,
                                     const ElementwiseTensors<kIn, kOut>& t) {
  static_assert(kIn >= 1 && kIn <= 3, "one of at most three inputs is staged");
  constexpr int NT = kIn + kOut;
  const int V = k.transpose_side;
  const std::optional<TransposedWalk<NT>> walk = transposed_walk(t);
  if (!walk) return Status::error(StatusCode::invalid_problem, "elementwise: the views do not make a transposed walk");
  const RawOperands<kIn, kOut> p = raw_operands(t);
  TransposedArgs<NT> a;
  static_cast<TransposedWalk<NT>&>(a) = *walk;
  a.all_pieces = true;
  for (int i = 0; i < NT; ++i) {
    const void* data = i < kIn ? t.in[i] : t.out[i - kIn];
    const int64_t element = i >= kIn ? k.out_bytes : i == 0 ? k.first_bytes : k.in_bytes;
    // The staged input's pieces run along Q (its rows V apart along P); the others' along P.
    const int64_t unit = i == a.staged ? a.q_strides[i] : a.p_strides[i];
    const int64_t other = i == a.staged ? a.p_strides[i] : a.q_strides[i];
    bool pieces = unit == 0 || (reinterpret_cast<uintptr_t>(data) % (element * V) == 0 && other % V == 0);
    for (int d = 0; d < a.batch.rank && unit != 0; ++d) pieces = pieces && a.batch.strides[i][d] % V == 0;
    a.pieces[i] = pieces;
    if (i != a.staged) a.all_pieces = a.all_pieces && pieces;
  }
  if (a.staged < 0 || a.staged >= kIn)
    return Status::error(StatusCode::invalid_problem, "elementwise: the transposed walk stages no input");
  const int64_t tile = int64_t{kTransposeLanes} * V;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((a.p_size + tile - 1) / tile, INT32_MAX)),
                  static_cast<unsigned>(std::min<int64_t>((a.q_size + tile - 1) / tile, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(a.batches, 65535)));
  return launch_kernel(*k.module, a.staged, grid, kTransposeThreads, r.stream, "elementwise_transposed_kernel",
                       {k.op, &p, &a});
}
template <class In, class Out = In, class First = In, class Op, int kIn, int kOut>
Status run_elementwise_transposed(const ElementwiseRun& r, const Op& op, const ElementwiseTensors<kIn, kOut>& t) {
  static_assert(Op::kIn == kIn && Op::kOut == kOut, "functor arity must match the tensors");
  Expected<const jit::Module*> module = module_for<ProgramTag<In, Out, Op, First, TransposedArgs<1>>>(r, [&] {
    return transposed_program(r.maths, jit::type_name<In>(), jit::type_name<Out>(), jit::type_name<Op>(),
                              jit::type_name<First>(), kIn);
  });
  if (!module || !*module) return module.status();
  return launch_elementwise_transposed(r, elementwise_kernels<In, Out, First>(*module, op), t);
}

// The vector kernel's conditions: kept dims innermost, whole vectors of them, every view with data
// 16-byte aligned and stepping through them with stride 1 (an input may repeat one value: stride 0),
// every other stride a multiple of the vector.
template <class T, class Body, class First>
bool reduction_vectorizable(const BroadcastReduction<T, Body, First>& k) {
  constexpr int kV = 16 / sizeof(T), kIn = Body::kIn, NT = kIn + Body::kOut + 1;
  if (k.lanes_on_split || k.kept.rank == 0 || k.kept.inner_size() % kV != 0) return false;
  for (int i = 0; i < NT; ++i) {
    const void* data = i < kIn ? static_cast<const void*>(k.p.in[i]) : k.p.out[i - kIn];
    if (!data) continue;
    const int64_t inner = k.kept.inner_stride(i);
    if (i < kIn && inner == 0) continue;  // one value per vector: a scalar load, anywhere
    if (inner != 1 || reinterpret_cast<uintptr_t>(data) % 16 != 0) return false;
    for (int d = 0; d + 1 < k.kept.rank; ++d)
      if (k.kept.strides[i][d] % kV != 0) return false;
    for (int d = 0; d < k.reduced.rank; ++d)
      if (k.reduced.strides[i][d] % kV != 0) return false;
  }
  return true;
}

// The rows kernel's conditions: reduced dims innermost and collapsed to one, whole vectors of them,
// every view with data 16-byte aligned and stepping through them with stride 1 (an input may repeat
// one value: stride 0; the reduced output steps with 0), every kept stride a multiple of the vector.
template <class T, class Body, class First>
bool reduction_rows_vectorizable(const BroadcastReduction<T, Body, First>& k) {
  constexpr int kV = 16 / sizeof(T), kIn = Body::kIn, NT = kIn + Body::kOut + 1;
  if (!k.lanes_on_split || k.reduced.rank != 1 || k.r % kV != 0) return false;
  for (int i = 0; i < NT; ++i) {
    const void* data = i < kIn ? static_cast<const void*>(k.p.in[i]) : k.p.out[i - kIn];
    if (!data) continue;
    const int64_t inner = k.reduced.inner_stride(i);
    if ((i < kIn || i == NT - 1) && inner == 0) continue;  // one value per row: a scalar access, anywhere
    if (inner != 1 || reinterpret_cast<uintptr_t>(data) % 16 != 0) return false;
    for (int d = 0; d < k.kept.rank; ++d)
      if (k.kept.strides[i][d] % kV != 0) return false;
  }
  return true;
}

// Runs the reduction (common/broadcast_reduction.hpp) with the kernels of its program; the kernel
// (and so the order of the sums) depends on the views alone. The vectors kernel takes one wave of
// items, a resident thread each: its registers decide how many blocks an SM holds, so the occupancy
// query sizes the wave (items planned for more blocks than fit ran a second, thin wave).
template <class T, class Body, class First>
Status run_split_reduction(const ElementwiseRun& r, const BroadcastReduction<T, Body, First>& planned) {
  using Reduction = BroadcastReduction<T, Body, First>;
  // The vector kernels load one element type: a first input of its own (where's bool condition)
  // takes the items kernel, and they are not compiled for it.
  constexpr bool kOneType = std::is_same_v<First, T>;
  Expected<const jit::Module*> module = module_for<ProgramTag<Reduction>>(r, [&] {
    return reduction_program(r.maths, jit::type_name<T>(), jit::type_name<Body>(), jit::type_name<First>());
  });
  if (!module || !*module) return module.status();
  const jit::Module& m = **module;
  const int sm_count = r.target.sm_count;
  constexpr int kV = 16 / sizeof(T);
  const int64_t threads = int64_t(sm_count) * 2048;  // resident at once
  Reduction k = planned;
  auto launch = [&](ReductionKernel kernel, int64_t blocks, int threads_a_block, const char* what) {
    return launch_kernel(m, static_cast<int>(kernel), dim3(static_cast<unsigned>(std::max<int64_t>(blocks, 1))),
                         threads_a_block, r.stream, what, {&k});
  };
  Status st;
  if (kOneType && reduction_rows_vectorizable(k)) {
    // A warp an item, kReductionUnroll vectors a lane a step: pieces of rows only where rows are few.
    k.s = kernel_splits(planned.s, k.m, 1, threads / 32, k.r / kV / (32 * kReductionUnroll<T, Body::kIn>));
    const int64_t warps_per_block = kThreads / 32;
    const int64_t blocks =
        std::min<int64_t>((k.m * k.s + warps_per_block - 1) / warps_per_block, int64_t(sm_count) * kBlocksPerSm);
    st = launch(ReductionKernel::rows, blocks, kThreads, "broadcast_reduction_rows_kernel");
  } else if (kOneType && reduction_vectorizable(k)) {
    const ReductionKernel kernel = k.reduced.rank <= 1 ? ReductionKernel::vectors_one_dim : ReductionKernel::vectors;
    int per_sm = 0;
    if (Status s = cuda_status(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, m.kernels[static_cast<int>(kernel)], kThreads, 0),
            "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
        !s)
      return s;
    const int64_t resident = int64_t(sm_count) * std::clamp(per_sm, 1, 2048 / kThreads) * kThreads;
    k.s = kernel_splits(planned.s, k.m, kV, resident, k.r / kReductionUnroll<T, Body::kIn>);
    st = launch(kernel, grid_stride_blocks(k.m / kV * k.s, sm_count), kThreads, "broadcast_reduction_vectors_kernel");
  } else {
    k.s = kernel_splits(planned.s, k.m, 1, threads, k.r);
    st = launch(ReductionKernel::items, grid_stride_blocks(k.items(), sm_count), kThreads,
                "broadcast_reduction_items_kernel");
  }
  if (!st || k.s == 1) return st;
  return launch(ReductionKernel::finalize, std::min<int64_t>((k.m + 31) / 32, int64_t(sm_count) * 64),
                kFinalizeWarps * 32, "broadcast_reduction_finalize_kernel");
}

}  // namespace baracuda::detail::cuda

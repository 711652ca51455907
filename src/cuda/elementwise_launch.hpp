#pragma once
// The elementwise launcher of the families whose kernels are compiled at select time (NVRTC): the
// kernel shapes of cuda/common/elementwise_kernels.cuh for one functor and element types, as one
// program, loaded on first use and held in the functor's own slot (one atomic load a run after
// that); the shape the views take is chosen here, as the ahead-of-time launcher did. Host code: the
// host compiler builds it, nvcc never sees it.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/common/check.cuh"
#include "cuda/common/elementwise_shape.hpp"
#include "cuda/common/launch.cuh"
#include "cuda/jit/jit.hpp"
#include "ops/elementwise_layout.hpp"
#include "ops/launch.hpp"

namespace baracuda::detail::cuda {

// The kernels of an elementwise program, in the program's order.
enum class ElementwiseKernel : int { vectorized, contiguous, strided, rows, rows_vectorized, flat_rows, row_lanes };

// The program of one functor (Op) over element types: every kernel shape, with `maths`, the header
// that defines the functor ("common/unary_math.hpp").
jit::Program elementwise_program(std::string_view maths, const std::string& in, const std::string& out,
                                 const std::string& op, const std::string& first);

// What run_elementwise does with the program of its (In, Out, Op, First): loads it and launches
// (a plan's run), loads it alone (a plan's select: compile errors are select's), or only lists it
// (the catalog of every program: the warm-up command, CI's compile test).
enum class ElementwiseMode { launch, load, list };
struct ElementwiseRun {
  const PlanTarget& target;
  const Stream& stream;
  std::string_view plan;   // for errors: "UnaryPlan"
  std::string_view maths;  // the functor's header
  ElementwiseMode mode = ElementwiseMode::launch;
  std::vector<jit::Program>* programs = nullptr;  // where `list` puts them
};

template <class In, class Out, class Op, class First>
Expected<const jit::Module*> elementwise_module(const ElementwiseRun& r) {
  static jit::ModuleSlot slot;
  if (const jit::Module* m = slot.get(r.target.arch)) return m;
  Expected<const jit::Module*> m =
      jit::load(elementwise_program(r.maths, jit::type_name<In>(), jit::type_name<Out>(), jit::type_name<Op>(),
                                    jit::type_name<First>()),
                r.target.arch, r.plan);
  if (m) slot.set(r.target.arch, *m);
  return m;
}

// One launch of kKernel's kernel of the module, its arguments by value in the kernel's order.
template <class... Args>
Status launch_elementwise_kernel(const jit::Module& m, ElementwiseKernel k, dim3 grid, const Stream& stream,
                                 const char* what, const Args&... args) {
  void* params[] = {const_cast<void*>(static_cast<const void*>(&args))...};
  return cuda_status(
      cudaLaunchKernel(m.kernels[static_cast<int>(k)], grid, dim3(kThreads), params, 0, native(stream)), what);
}

// Runs op over the tensors, inputs of element type In (the first of First) and outputs of Out.
template <class In, class Out = In, class First = In, class Op, int kIn, int kOut>
Status run_elementwise(const ElementwiseRun& r, const Op& op, const ElementwiseTensors<kIn, kOut>& t) {
  static_assert(Op::kIn == kIn && Op::kOut == kOut, "functor arity must match the tensors");
  if (r.mode == ElementwiseMode::list) {
    r.programs->push_back(elementwise_program(r.maths, jit::type_name<In>(), jit::type_name<Out>(),
                                              jit::type_name<Op>(), jit::type_name<First>()));
    return Status::ok();
  }
  Expected<const jit::Module*> module = elementwise_module<In, Out, Op, First>(r);
  if (!module) return module.status();
  if (r.mode == ElementwiseMode::load) return Status::ok();
  const jit::Module& m = **module;
  Operands<In, Out, kIn, kOut, First> p{};
  for (int k = 0; k < kIn; ++k) p.in[k] = static_cast<const In*>(t.in[k]);
  for (int k = 0; k < kOut; ++k) p.out[k] = static_cast<Out*>(t.out[k]);
  const int64_t n = t.shape.numel();
  const int sm_count = r.target.sm_count;
  constexpr int kV = kPackSize<In, Out>;
  switch (t.path) {
    case ElementwisePath::vectorized: {
      const int64_t per_block = int64_t(kThreads) * kPackUnroll<In, Out, Op> * kV;
      const dim3 grid(static_cast<unsigned>(std::max<int64_t>(1, (n + per_block - 1) / per_block)));
      return launch_elementwise_kernel(m, ElementwiseKernel::vectorized, grid, r.stream, "elementwise_vectorized_kernel",
                                       op, p, n);
    }
    case ElementwisePath::contiguous:
      return launch_elementwise_kernel(m, ElementwiseKernel::contiguous, dim3(grid_stride_blocks(n, sm_count)), r.stream,
                                       "elementwise_contiguous_kernel", op, p, n);
    default:
      break;
  }
  constexpr int NT = kIn + kOut;
  const Strides* strides[NT];
  for (int k = 0; k < kIn; ++k) strides[k] = &t.in_strides[k];
  for (int k = 0; k < kOut; ++k) strides[kIn + k] = &t.out_strides[k];
  const Walker<NT> walker = make_walker<NT>(t.shape, strides);
  const int64_t inner = walker.inner_size();
  const int64_t rows = n / inner;
  const unsigned grid_y = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
  if (t.path == ElementwisePath::strided_vectorized) {
    const int64_t vectors = inner / kV;
    if (walker.rank <= 2 && vectors <= kFlatLaunchVectors) {
      // One flat run of vectors over whole rows, a launch per kFlatLaunchVectors vectors (counted in
      // 32 bits), its pointers moved to its first row.
      if (rows == 0 || vectors == 0) return Status::ok();
      const int64_t rows_a_launch = kFlatLaunchVectors / vectors;
      FlatRows<NT> w;
      for (int k = 0; k < NT; ++k) {
        w.row_step[k] = walker.rank == 2 ? walker.strides[k][0] : 0;
        w.one_value[k] = walker.inner_stride(k) == 0;
      }
      w.vectors_a_row = U32Divisor(static_cast<uint32_t>(vectors));
      const int64_t per_block = int64_t{kThreads} * kPackUnroll<In, Out, Op>;
      for (int64_t first_row = 0; first_row < rows; first_row += rows_a_launch) {
        w.vectors = static_cast<uint32_t>(std::min(rows_a_launch, rows - first_row) * vectors);
        const dim3 grid(static_cast<unsigned>((w.vectors - 1) / per_block + 1));
        if (Status s = launch_elementwise_kernel(m, ElementwiseKernel::flat_rows, grid, r.stream,
                                                 "elementwise_flat_rows_kernel", op, p, w);
            !s)
          return s;
        // (the first input may hold another type than In: moved in its own elements)
        for (int k = 0; k < kIn; ++k) {
          const int64_t step = rows_a_launch * w.row_step[k];
          p.in[k] =
              k == 0 ? reinterpret_cast<const In*>(reinterpret_cast<const First*>(p.in[k]) + step) : p.in[k] + step;
        }
        for (int k = 0; k < kOut; ++k) p.out[k] += rows_a_launch * w.row_step[kIn + k];
      }
      return Status::ok();
    }
    const int64_t per_block = int64_t{kThreads} * kRowUnroll<In, Out, Op>;
    if (vectors >= per_block) {
      const dim3 grid(static_cast<unsigned>((vectors + per_block - 1) / per_block), grid_y);
      return launch_elementwise_kernel(m, ElementwiseKernel::rows_vectorized, grid, r.stream,
                                       "elementwise_rows_vectorized_kernel", op, p, walker, rows);
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
      return launch_elementwise_kernel(m, ElementwiseKernel::row_lanes, grid, r.stream, "elementwise_row_lanes_kernel",
                                       op, p, walker, static_cast<int>(rows), lane_bits);
    }
  }
  if (inner >= kMinRowLength) {
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>((inner + kThreads - 1) / kThreads, 1024)), grid_y);
    return launch_elementwise_kernel(m, ElementwiseKernel::rows, grid, r.stream, "elementwise_rows_kernel", op, p,
                                     walker, rows);
  }
  return launch_elementwise_kernel(m, ElementwiseKernel::strided, dim3(grid_stride_blocks(n, sm_count)), r.stream,
                                   "elementwise_strided_kernel", op, p, walker, n);
}

}  // namespace baracuda::detail::cuda

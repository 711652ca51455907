#pragma once
// The CUDA casts from one set of x's dtypes (floats, or integers and bool) to every dtype: the cast
// functor through the shared elementwise launcher, or the transpose kernel below. cast_float.cu and
// cast_integer.cu instantiate one set each.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "cuda/common/elementwise.cuh"
#include "ops/copy_problem.hpp"

namespace baracuda::detail::cuda {

// A tile of kTile x kTile elements, moved by kTile x kTileRows threads (kTile / kTileRows elements
// each, all loaded before the barrier): read along x's unit-stride dim, written along y's.
inline constexpr int kTile = 32, kTileRows = 8;

// The two tiled dims and the batches of the others (the collapsed dims of ops/copy.cpp's
// transpose_shape): P is y's innermost (unit stride in y), Q the one where x has unit stride.
struct TransposeArgs {
  int64_t p_size = 0, q_size = 0;
  int64_t x_p = 0, y_q = 0;  // x's stride along P and y's along Q
  Walker<2> batch;           // x, y
  int64_t batches = 1;
};

template <class In, class Out>
__global__ void __launch_bounds__(kTile* kTileRows) cast_transpose_kernel(const In* x, Out* y, TransposeArgs a) {
  // The row pad keeps a column's reads on distinct banks.
  __shared__ Out tile[kTile][kTile + 1];
  const int64_t p_tiles = (a.p_size + kTile - 1) / kTile, q_tiles = (a.q_size + kTile - 1) / kTile;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  for (int64_t b = blockIdx.z; b < a.batches; b += gridDim.z) {
    int64_t base[2];
    a.batch.offsets(b, base);
    for (int64_t qt = blockIdx.y; qt < q_tiles; qt += gridDim.y) {
      for (int64_t pt = blockIdx.x; pt < p_tiles; pt += gridDim.x) {
        const int64_t p0 = pt * kTile, q0 = qt * kTile;
        In v[kTile / kTileRows];
#pragma unroll
        for (int k = 0; k < kTile / kTileRows; ++k) {
          const int64_t p = p0 + ty + k * kTileRows, q = q0 + tx;
          if (p < a.p_size && q < a.q_size) v[k] = x[base[0] + q + p * a.x_p];
        }
#pragma unroll
        for (int k = 0; k < kTile / kTileRows; ++k) tile[ty + k * kTileRows][tx] = convert<Out>(v[k]);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kTile / kTileRows; ++k) {
          const int64_t q = q0 + ty + k * kTileRows, p = p0 + tx;
          if (p < a.p_size && q < a.q_size) y[base[1] + p + q * a.y_q] = tile[tx][ty + k * kTileRows];
        }
        __syncthreads();
      }
    }
  }
}

template <class In, class Out>
Status run_cast_transpose(const LaunchContext& ctx, const CastProblem& problem) {
  const std::optional<TransposeShape> ts = transpose_shape(problem.desc.shape, problem.x, problem.y);
  if (!ts) return Status::error(StatusCode::invalid_problem, "cast: the views do not make a transpose");
  int64_t sizes[kMaxRank];
  int64_t strides[2][kMaxRank];
  const Strides* views[2] = {&problem.x.strides, &problem.y.strides};
  const int rank = collapse_dims(problem.desc.shape, views, 2, nullptr, sizes, strides);
  TransposeArgs a;
  const int p = rank - 1, q = ts->x_unit;
  a.p_size = sizes[p];
  a.q_size = sizes[q];
  a.x_p = strides[0][p];
  a.y_q = strides[1][q];
  // The batch walker: every collapsed dim but P and Q.
  for (int d = 0; d < rank; ++d) {
    if (d == p || d == q) continue;
    a.batch.sizes[a.batch.rank] = sizes[d];
    for (int t = 0; t < 2; ++t) a.batch.strides[t][a.batch.rank] = strides[t][d];
    ++a.batch.rank;
  }
  a.batches = a.batch.numel();
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((a.p_size + kTile - 1) / kTile, INT32_MAX)),
                  static_cast<unsigned>(std::min<int64_t>((a.q_size + kTile - 1) / kTile, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(a.batches, 65535)));
  cast_transpose_kernel<In, Out><<<grid, dim3(kTile, kTileRows), 0, native(ctx.stream)>>>(
      static_cast<const In*>(problem.x.data), static_cast<Out*>(problem.y.data), a);
  return last_launch_status("cast_transpose_kernel");
}

template <bool kFromFloat>
Status launch_cast(const LaunchContext& ctx, const CastProblem& problem) {
  if (is_float_dtype(problem.desc.dtype) != kFromFloat)
    return Status::error(StatusCode::invalid_problem, "cast: x's dtype is not in this translation unit's set");
  return dispatch_any<__half, __nv_bfloat16>(problem.desc.dtype, [&](auto in) {
    using In = typename decltype(in)::type;
    if constexpr (is_float_like_v<In> != kFromFloat) {
      return Status::ok();  // not reached: checked above
    } else {
      return dispatch_any<__half, __nv_bfloat16>(problem.desc.out_dtype, [&](auto out) {
        using Out = typename decltype(out)::type;
        if (problem.path == kCastTranspose) return run_cast_transpose<In, Out>(ctx, problem);
        return run_elementwise<In, Out>(ctx.stream, ctx.target.sm_count, CastFunctor<cast_acc_t<In>>{},
                                        cast_tensors(problem));
      });
    }
  });
}

}  // namespace baracuda::detail::cuda

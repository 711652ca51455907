#pragma once
// The CUDA casts from one set of x's dtypes (floats, or integers and bool) to every dtype: the cast
// functor through the shared elementwise launcher, or the transpose kernel below. cast_float.cu and
// cast_integer.cu instantiate one set each.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "cuda/common/elementwise.cuh"
#include "ops/copy_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {

// The two tiled dims and the batches of the others (the collapsed dims of ops/copy.cpp's
// transpose_shape): P is y's innermost (unit stride in y), Q the one where x has unit stride.
struct TransposeArgs {
  int64_t p_size = 0, q_size = 0;
  int64_t x_p = 0, y_q = 0;  // x's stride along P and y's along Q
  Walker<2> batch;           // x, y
  int64_t batches = 1;
  bool x_vectors = false, y_vectors = false;  // whole aligned vectors along Q in x, along P in y
};

// A tile is kTileP positions of P by kTileLanes vectors of Q (V elements: 16 bytes of the wider
// type): 256 (or, narrow tiles, 128) bytes of it a row in x where x's type is the wider. Each of kTransposeThreads
// threads loads kLoads vectors along Q (x's unit stride), all before the barrier; after it, kStores vectors along P
// (y's unit stride), each gathered from a column of the tile, so both sides' accesses are whole 16-byte vectors of
// contiguous rows. H200, [16384, 4096] f32 / bf16 (% of copy): 32 x 32 elements, 4 a thread: 66.8 / 36.7; 64 x 8
// vectors (128-byte rows), 2 a thread: 75.2 / 66.3; 128 x 16 vectors, 8 a thread: 87.1 / 46.5 (bf16:
// 124 registers); 64 x 16 for 16-bit: bf16 59.0. So 128 x 16 for 4- and 8-byte types, 64 x 8 where
// a type is narrower (its 16-bit lanes take a register each: 8 vectors of them spilled).
inline constexpr int kTransposeThreads = 256;
template <class In, class Out>
inline constexpr bool kNarrowTile = sizeof(In) < 4 || sizeof(Out) < 4;
template <class In, class Out>
inline constexpr int kTileLanes = kNarrowTile<In, Out> ? 8 : 16;
template <class In, class Out>
inline constexpr int kTileP = kNarrowTile<In, Out> ? 64 : 128;
// Rows of the tile 4 bytes longer than their data: a column's reads spread over the banks, and rows
// start on 4-byte words.
template <class In, class Out>
inline constexpr int kTilePitch = kTileLanes<In, Out>* kPackSize<In, Out> +
                                  (sizeof(Out) >= 4 ? 1 : static_cast<int>(4 / sizeof(Out)));

template <class In, class Out>
__global__ void __launch_bounds__(kTransposeThreads) cast_transpose_kernel(const In* x, Out* y, TransposeArgs a) {
  constexpr int V = kPackSize<In, Out>;
  constexpr int kTileLanes = cuda::kTileLanes<In, Out>;
  constexpr int kTileQ = kTileLanes * V;
  constexpr int kTileP = cuda::kTileP<In, Out>;
  constexpr int kRowsPerPass = kTransposeThreads / kTileLanes;
  constexpr int kLoads = kTileP / kRowsPerPass;
  constexpr int kStoreVectors = kTileP / V;  // per row of Q
  constexpr int kStores = kTileQ * kStoreVectors / kTransposeThreads;
  constexpr int kQFast = sizeof(Out) < 4 && kStoreVectors < 32 ? 32 / kStoreVectors : 1;
  constexpr int kPitch = kTilePitch<In, Out>;  // a pad of 4 bytes a row spreads a column's reads over the banks
  __shared__ alignas(16) Out tile[kTileP * kPitch];
  const int t = static_cast<int>(threadIdx.x);
  const int64_t p_tiles = (a.p_size + kTileP - 1) / kTileP, q_tiles = (a.q_size + kTileQ - 1) / kTileQ;
  for (int64_t b = blockIdx.z; b < a.batches; b += gridDim.z) {
    int64_t base[2];
    a.batch.offsets(b, base);
    for (int64_t qt = blockIdx.y; qt < q_tiles; qt += gridDim.y) {
      for (int64_t pt = blockIdx.x; pt < p_tiles; pt += gridDim.x) {
        const int64_t p0 = pt * kTileP, q0 = qt * kTileQ;
        Pack<In, V> in[kLoads];
#pragma unroll
        for (int k = 0; k < kLoads; ++k) {
          const int64_t p = p0 + k * kRowsPerPass + t / kTileLanes, q = q0 + (t % kTileLanes) * V;
          const In* row = x + base[0] + p * a.x_p;
          if (a.x_vectors && p < a.p_size && q + V <= a.q_size) {
            in[k] = load_pack<V>(row + q);
          } else {
#pragma unroll
            for (int j = 0; j < V; ++j) in[k].v[j] = p < a.p_size && q + j < a.q_size ? row[q + j] : In{};
          }
        }
#pragma unroll
        for (int k = 0; k < kLoads; ++k) {
          // Converted, then written to the tile a 4-byte word at a time where a vector is whole words
          // (rows start on words); else (2 bytes: f64 to u8) element by element.
          Pack<Out, V> row;
#pragma unroll
          for (int j = 0; j < V; ++j) row.v[j] = convert<Out>(in[k].v[j]);
          Out* to = tile + (k * kRowsPerPass + t / kTileLanes) * kPitch + (t % kTileLanes) * V;
          if constexpr (Pack<Out, V>::kBytes % 4 == 0) {
#pragma unroll
            for (int w = 0; w < Pack<Out, V>::kBytes / 4; ++w)
              reinterpret_cast<uint32_t*>(to)[w] = reinterpret_cast<const uint32_t*>(row.v)[w];
          } else {
#pragma unroll
            for (int j = 0; j < V; ++j) to[j] = row.v[j];
          }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kStores; ++k) {
          // Lanes step along P, a warp's stores whole rows of the tile in y; for 1- and 2-byte
          // types its kQFast rows are interleaved, lanes stepping along Q first, so that a column's
          // reads fall on more banks.
          const int s = k * kTransposeThreads + t;
          const int q_fast = s % kQFast, rest = s / kQFast;
          const int q_local = rest / kStoreVectors * kQFast + q_fast, p_local = rest % kStoreVectors * V;
          const int64_t p = p0 + p_local, q = q0 + q_local;
          Pack<Out, V> out;
#pragma unroll
          for (int j = 0; j < V; ++j) out.v[j] = tile[(p_local + j) * kPitch + q_local];
          Out* row = y + base[1] + q * a.y_q;
          if (a.y_vectors && q < a.q_size && p + V <= a.p_size) {
            store_pack(row + p, out);
          } else if (q < a.q_size) {
#pragma unroll
            for (int j = 0; j < V; ++j)
              if (p + j < a.p_size) row[p + j] = out.v[j];
          }
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
  constexpr int V = kPackSize<In, Out>;
  TransposeArgs a;
  const int p = ts->rank - 1, q = ts->x_unit;
  a.p_size = ts->sizes[p];
  a.q_size = ts->sizes[q];
  a.x_p = ts->strides[0][p];
  a.y_q = ts->strides[1][q];
  a.x_vectors = aligned16(problem.x.data) && a.x_p % V == 0;
  a.y_vectors = aligned16(problem.y.data) && a.y_q % V == 0;
  // The batch walker: every collapsed dim but P and Q (its steps keep the vectors aligned or not).
  for (int d = 0; d < ts->rank; ++d) {
    if (d == p || d == q) continue;
    a.batch.sizes[a.batch.rank] = ts->sizes[d];
    for (int k = 0; k < 2; ++k) a.batch.strides[k][a.batch.rank] = ts->strides[k][d];
    a.x_vectors = a.x_vectors && ts->strides[0][d] % V == 0;
    a.y_vectors = a.y_vectors && ts->strides[1][d] % V == 0;
    ++a.batch.rank;
  }
  a.batches = a.batch.numel();
  constexpr int64_t kTileP = cuda::kTileP<In, Out>, kTileQ = cuda::kTileLanes<In, Out> * V;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((a.p_size + kTileP - 1) / kTileP, INT32_MAX)),
                  static_cast<unsigned>(std::min<int64_t>((a.q_size + kTileQ - 1) / kTileQ, 65535)),
                  static_cast<unsigned>(std::min<int64_t>(a.batches, 65535)));
  cast_transpose_kernel<In, Out><<<grid, kTransposeThreads, 0, native(ctx.stream)>>>(
      static_cast<const In*>(problem.x.data), static_cast<Out*>(problem.y.data), a);
  return last_launch_status("cast_transpose_kernel");
}

template <bool kFromFloat>
Status launch_cast(const LaunchContext& ctx, const CastProblem& problem) {
  if (is_floating(problem.desc.dtype) != kFromFloat)
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

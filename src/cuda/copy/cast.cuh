#pragma once
// The CUDA casts from one set of x's dtypes (floats, or integers and bool) to every dtype: the cast
// functor through the shared elementwise launcher, or the transpose kernel below (blocks transposed
// in registers, exchanged through shared memory). cast_float.cu and cast_integer.cu instantiate one
// set each.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "cuda/common/elementwise.cuh"
#include "ops/copy_problem.hpp"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda {

// The walk (ops/copy_problem.hpp) and whether each side's accesses are whole aligned pieces.
struct TransposeArgs : TransposeWalk {
  bool x_vectors = false, y_vectors = false;  // along Q in x, along P in y
};

// A tile is 16 x V positions of P by 16 x V of Q, V elements the side of a thread's block: 16 bytes
// of the wider type, at most 8 (8-bit pairs take 8-byte accesses: blocks of 16 x 16 bytes held 164
// registers). Thread (tq, tp) loads V rows of x, V elements each (one access along x's unit
// stride), transposes that block in registers (converting on the way) and puts its V pieces of V
// elements into the tile in shared memory; after the barrier each thread takes V pieces back a row
// at a time and stores them along y's unit stride. Every global and shared access is a whole piece
// of 2 to 16 bytes, and a warp's global accesses are two rows of 16 pieces (256 bytes of a 16-bit or
// wider type). The tile's pieces are swizzled (piece ^ (row / V) % 16) so that the row reads are free
// of bank conflicts, and so are the column writes of pieces of 2, 8 and 16 bytes (4-byte pieces, f32
// to 8-bit or f64 to 16-bit, write two lanes a bank). H200, [16384, 4096] f32 / bf16 (% of copy):
// 2-D tiles of elements, 16-bit column reads: 87.1 / 67.7; blocks transposed in registers, no shared
// memory (a warp's stores 64 bytes of 8 rows): 50.4 / 38.0; this kernel: bench/NOTES.md, "Transposes".
inline constexpr int kTransposeThreads = 256;
inline constexpr int kTransposeLanes = 16;  // threads of a tile along each of P and Q
template <class In, class Out>
inline constexpr int kTransposeSide = kPackSize<In, Out> < 8 ? kPackSize<In, Out> : 8;

template <class In, class Out>
__global__ void __launch_bounds__(kTransposeThreads) cast_transpose_kernel(const In* x, Out* y, TransposeArgs a) {
  constexpr int V = kTransposeSide<In, Out>, L = kTransposeLanes;
  constexpr int64_t kTile = L * V;
  using Piece = Pack<Out, V>;
  __shared__ Piece tile[kTile][L];
  const int t = static_cast<int>(threadIdx.x), tq = t % L, tp = t / L;
  auto slot = [](int row, int piece) { return piece ^ (row / V) % L; };
  const int64_t p_tiles = (a.p_size + kTile - 1) / kTile, q_tiles = (a.q_size + kTile - 1) / kTile;
  for (int64_t b = blockIdx.z; b < a.batches; b += gridDim.z) {
    int64_t base[2];
    a.batch.offsets(b, base);
    for (int64_t qt = blockIdx.y; qt < q_tiles; qt += gridDim.y) {
      for (int64_t pt = blockIdx.x; pt < p_tiles; pt += gridDim.x) {
        const int64_t p0 = pt * kTile, q0 = qt * kTile;
        {
          const int64_t p = p0 + int64_t{tp} * V, q = q0 + int64_t{tq} * V;
          if (a.x_vectors && p + V <= a.p_size && q + V <= a.q_size) {
            Pack<In, V> in[V];
#pragma unroll
            for (int k = 0; k < V; ++k) in[k] = load_pack<V>(x + base[0] + (p + k) * a.x_p + q);
#pragma unroll
            for (int j = 0; j < V; ++j) {
              Piece out;
#pragma unroll
              for (int k = 0; k < V; ++k) out.v[k] = convert<Out>(in[k].v[j]);
              const int row = tq * V + j;
              tile[row][slot(row, tp)] = out;
            }
          } else {
            // The block crosses an edge of x, or x's rows are not whole vectors: element by
            // element, straight into the tile (a separate path, so that the vector path keeps its
            // elements packed: merged, every element took a register), a row at a time.
#pragma unroll 1
            for (int k = 0; k < V; ++k) {
              const In* from = x + base[0] + (p + k) * a.x_p + q;
#pragma unroll
              for (int j = 0; j < V; ++j) {
                const int row = tq * V + j;
                tile[row][slot(row, tp)].v[k] = p + k < a.p_size && q + j < a.q_size ? convert<Out>(from[j]) : Out{};
              }
            }
          }
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const int row = i * (kTransposeThreads / L) + tp, piece = tq;
          const int64_t q = q0 + row, p = p0 + int64_t{piece} * V;
          if (q < a.q_size && p < a.p_size) {
            const Piece out = tile[row][slot(row, piece)];
            Out* to = y + base[1] + q * a.y_q + p;
            if (a.y_vectors && p + V <= a.p_size) {
              store_pack(to, out);
            } else {
#pragma unroll
              for (int k = 0; k < V; ++k)
                if (p + k < a.p_size) to[k] = out.v[k];
            }
          }
        }
        __syncthreads();
      }
    }
  }
}

template <class In, class Out>
Status run_cast_transpose(const LaunchContext& ctx, const CastProblem& problem) {
  const std::optional<TransposeWalk> walk = transpose_walk(problem);
  if (!walk) return Status::error(StatusCode::invalid_problem, "cast: the views do not make a transpose");
  constexpr int V = kTransposeSide<In, Out>;
  auto aligned = [](const void* ptr, size_t bytes) { return reinterpret_cast<uintptr_t>(ptr) % bytes == 0; };
  TransposeArgs a;
  static_cast<TransposeWalk&>(a) = *walk;
  a.x_vectors = aligned(problem.x.data, Pack<In, V>::kBytes) && a.x_p % V == 0;
  a.y_vectors = aligned(problem.y.data, Pack<Out, V>::kBytes) && a.y_q % V == 0;
  for (int d = 0; d < a.batch.rank; ++d) {  // the batches' steps keep the accesses aligned or not
    a.x_vectors = a.x_vectors && a.batch.strides[0][d] % V == 0;
    a.y_vectors = a.y_vectors && a.batch.strides[1][d] % V == 0;
  }
  constexpr int64_t kTile = int64_t{kTransposeLanes} * V;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((a.p_size + kTile - 1) / kTile, INT32_MAX)),
                  static_cast<unsigned>(std::min<int64_t>((a.q_size + kTile - 1) / kTile, 65535)),
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

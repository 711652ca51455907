#pragma once
// The CUDA transposed path's kernel (common/elementwise.hpp's TransposedWalk), which nvcc and NVRTC
// both read (the host's launcher: cuda/elementwise_launch.hpp): an elementwise op whose outputs step
// along P with unit stride and one input (the staged one) along Q, as x.t().contiguous() (a cast) or
// a + b.t(). A tile is 16 x V positions of P by 16 x V of Q, V elements the side of a thread's block:
// 16 bytes of the wider type, at most 8 (transposed_piece, which the host counts tiles with). Thread
// (tq, tp) loads V rows of the staged input, V elements each (one access along its unit stride),
// transposes that block in registers and puts its V pieces of V elements into the tile in shared
// memory; after the barrier each thread takes V pieces back, a row at a time, loads the other inputs'
// pieces along P, applies the op to whole pieces and stores the outputs' along P. Every global and
// shared access is a whole piece of 2 to 16 bytes, and a warp's global accesses are two rows of 16
// pieces (256 bytes of a 16-bit or wider type). The tile's pieces are swizzled (piece ^ (row / V) %
// 16) so that the row reads are free of bank conflicts, and so are the column writes of pieces of 2,
// 8 and 16 bytes (4-byte pieces, 8-bit x V = 4, write two lanes a bank). Faster than tiles of single
// elements and than blocks transposed in registers without shared memory (bench/NOTES.md,
// "Transposes" and "Transposed operands").
#include "cuda/common/elementwise_kernels.cuh"
#include "cuda/common/shared_memory.cuh"

namespace baracuda::detail::cuda {

// S: the staged input (a template argument: indexed at run time, the tensors' arrays left registers).
template <class In, class Out, class Op, class First, int S>
__global__ void __launch_bounds__(kTransposeThreads, kTransposeMinBlocks<In, Out, Op::kIn>)
    elementwise_transposed_kernel(Op op, Operands<In, Out, Op::kIn, Op::kOut, First> io,
                                  TransposedArgs<Op::kIn + Op::kOut> a) {
  constexpr int kIn = Op::kIn, kOut = Op::kOut, NT = kIn + kOut;
  constexpr int V = kTransposeSide<In, Out>, L = kTransposeLanes;
  constexpr int64_t kTile = L * V;
  using Piece = Pack<In, V>;
  using Acc = typename Op::Acc;
  __shared__ Piece tile[kTile][L];
  // (Addressed in 32 bits: cuda/common/shared_memory.cuh.)
  const uint32_t tile_at = shared_address(tile);
  const int t = static_cast<int>(threadIdx.x), tq = t % L, tp = t / L;
  constexpr int s = S;
  constexpr int R = kTransposeRows<In, Out>;
  auto slot = [](int row, int piece) { return piece ^ (row / V) % L; };
  auto slot_at = [&](int row, int piece) {
    return tile_at + static_cast<uint32_t>((row * L + slot(row, piece)) * int{sizeof(Piece)});
  };
  const int64_t p_tiles = (a.p_size + kTile - 1) / kTile, q_tiles = (a.q_size + kTile - 1) / kTile;
  for (int64_t b = blockIdx.z; b < a.batches; b += gridDim.z) {
    int64_t base[NT];
    a.batch.offsets(b, base);
    for (int64_t qt = blockIdx.y; qt < q_tiles; qt += gridDim.y) {
      for (int64_t pt = blockIdx.x; pt < p_tiles; pt += gridDim.x) {
        const int64_t p0 = pt * kTile, q0 = qt * kTile;
        {
          const int64_t p = p0 + int64_t{tp} * V, q = q0 + int64_t{tq} * V;
          const int64_t from = base[s] + p * a.p_strides[s] + q;
          if (a.pieces[s] && p + V <= a.p_size && q + V <= a.q_size) {
            Piece in[V];
#pragma unroll
            for (int k = 0; k < V; ++k) in[k] = load_input_pack<V>(io, s, from + k * a.p_strides[s]);
#pragma unroll
            for (int j = 0; j < V; ++j) {
              Piece out;
#pragma unroll
              for (int k = 0; k < V; ++k) out.v[k] = in[k].v[j];
              store_shared(slot_at(tq * V + j, tp), out);
            }
          } else {
            // The block crosses an edge, or the staged rows are not whole pieces: element by element
            // (a separate path, so that the piece path keeps its elements packed: merged, every
            // element took a register), a row at a time.
#pragma unroll 1
            for (int k = 0; k < V; ++k) {
#pragma unroll
              for (int j = 0; j < V; ++j) {
                const In value =
                    p + k < a.p_size && q + j < a.q_size ? load_input(io, s, from + k * a.p_strides[s] + j) : In{};
                store_shared(slot_at(tq * V + j, tp) + static_cast<uint32_t>(k * int{sizeof(In)}), value);
              }
            }
          }
        }
        __syncthreads();
        // The other inputs' pieces of R rows are loaded before any of their outputs is stored: an output
        // may be one of them exactly (in place), so the compiler could not move a load above a store.
        const int64_t pp = p0 + int64_t{tq} * V;
        const bool whole = a.all_pieces && pp + V <= a.p_size;
#pragma unroll 1  // (unrolled, 16-bit rows spilled)
        for (int h = 0; h < V; h += R) {
          Piece in[R][kSlots<kIn>];
#pragma unroll
          for (int i = 0; i < R; ++i) {
            const int64_t q = q0 + (h + i) * (kTransposeThreads / L) + tp;
            if (!whole || q >= a.q_size) continue;
#pragma unroll
            for (int k = 0; k < kIn; ++k) {
              const int64_t at = base[k] + q * a.q_strides[k] + pp * a.p_strides[k];
              if (k != s) {
                if (a.p_strides[k] == 0) {
                  const In value = load_input(io, k, at);
#pragma unroll
                  for (int e = 0; e < V; ++e) in[i][k].v[e] = value;
                } else {
                  in[i][k] = load_input_pack<V>(io, k, at);
                }
              }
            }
          }
#pragma unroll
          for (int i = 0; i < R; ++i) {
            const int row = (h + i) * (kTransposeThreads / L) + tp;
            const int64_t q = q0 + row;
            if (q >= a.q_size || pp >= a.p_size) continue;
            int64_t at[NT];
#pragma unroll
            for (int k = 0; k < NT; ++k) at[k] = base[k] + q * a.q_strides[k] + pp * a.p_strides[k];
            const Piece staged = load_shared<Piece>(slot_at(row, tq));
            if (whole) {
              in[i][s] = staged;
              Pack<Out, V> out[kOut];
              apply_pack(op, in[i], out);
#pragma unroll
              for (int k = 0; k < kOut; ++k) store_pack(io.out[k] + at[kIn + k], out[k]);
            } else {
              // An edge piece, or some tensor's accesses not whole pieces: element by element (the
              // loop unrolled: a lane of `staged` picked at run time would put it in local memory,
              // whose stores, made for every row, cost the transposed copy 20% of its rate).
#pragma unroll
              for (int e = 0; e < V; ++e) {
                if (pp + e >= a.p_size) break;
                Acc x[kSlots<kIn>];
                Acc y[kOut];
#pragma unroll
                for (int k = 0; k < kIn; ++k)
                  x[k] = convert<Acc>(k == s ? staged.v[e] : load_input(io, k, at[k] + e * a.p_strides[k]));
                op(x, y);
#pragma unroll
                for (int k = 0; k < kOut; ++k) io.out[k][at[kIn + k] + e] = convert<Out>(y[k]);
              }
            }
          }
        }
        __syncthreads();
      }
    }
  }
}

}  // namespace baracuda::detail::cuda

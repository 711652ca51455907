#pragma once
// Reductions over a warp, a block or a cluster of blocks, of any trivially copyable value with any
// combining functor (a sum, a max, softmax's (max, sum) pairs). Each is a fixed tree whose result is
// then broadcast, so every thread of the group ends with the same bits, run after run, whatever
// the functor (even one whose rounding depends on operand order, as FMA contraction makes it).
// (nvcc and NVRTC both read it: the cluster's intrinsics are the runtime's built-ins, not
// cooperative_groups, whose headers NVRTC would need from a toolkit.)
#include "common/portable.hpp"
#if !defined(__CUDACC_RTC__)
#include <cuda_runtime.h>

#include <cstring>
#endif

namespace baracuda::detail::cuda {

enum class ReduceScope : unsigned char { warp, block, cluster };

// Shared memory a block or cluster reduction needs: one value per warp, and one for the block.
template <class T>
struct ReduceScratch {
  T warps[32];
  T block;
};

// __shfl_*_sync of any trivially copyable T, as 32-bit words. Every lane of the warp takes part.
template <class T, class Shuffle>
__device__ __forceinline__ T shuffle_words(const T& v, Shuffle shuffle) {
  static_assert(sizeof(T) % 4 == 0, "shuffled values are whole 32-bit words");
  unsigned words[sizeof(T) / 4];
  memcpy(words, &v, sizeof(T));
#pragma unroll
  for (unsigned& w : words) w = shuffle(w);
  T out;
  memcpy(&out, words, sizeof(T));
  return out;
}

// Within each aligned group of `width` lanes (a power of two up to 32): every lane gets the group's
// op-reduction. Every lane of the warp must call it.
template <class T, class Op>
__device__ __forceinline__ T warp_allreduce(T v, Op op, int width = 32) {
  for (int offset = width / 2; offset > 0; offset /= 2)
    v = op(v, shuffle_words(v, [&](unsigned w) { return __shfl_down_sync(0xffffffffu, w, offset, width); }));
  return shuffle_words(v, [&](unsigned w) { return __shfl_sync(0xffffffffu, w, 0, width); });
}

// Every thread of the block (a multiple of 32 threads) gets the block's reduction. `identity`
// leaves a value unchanged under op.
template <class T, class Op>
__device__ __forceinline__ T block_allreduce(T v, Op op, T identity, ReduceScratch<T>& scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_allreduce(v, op);
  if (lane == 0) scratch.warps[warp] = v;
  __syncthreads();
  v = warp_allreduce(lane < static_cast<int>(blockDim.x / 32) ? scratch.warps[lane] : identity,
                     op);  // the same in every warp
  __syncthreads();         // scratch may be reused
  return v;
}

// The cluster's shape from inside a block (one block, rank 0, before sm_90 or without a cluster).
__device__ __forceinline__ unsigned cluster_blocks() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return __clusterSizeInBlocks();
#else
  return 1;
#endif
}
__device__ __forceinline__ unsigned cluster_block_rank() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return __clusterRelativeBlockRank();
#else
  return 0;
#endif
}

// A barrier for the whole cluster (the block, before sm_90).
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __cluster_barrier_arrive();
  __cluster_barrier_wait();
#else
  __syncthreads();
#endif
}

// The fold, in rank order, of the value at `value` (a shared-memory address) in every block of the
// cluster: the same in every block. Between two cluster_sync()s: the values written before, none
// overwritten until every block has read them.
template <class T, class Op>
__device__ __forceinline__ T cluster_fold(T* value, Op op) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  T total = *static_cast<T*>(__cluster_map_shared_rank(value, 0));
  for (unsigned rank = 1; rank < __clusterSizeInBlocks(); ++rank)
    total = op(total, *static_cast<T*>(__cluster_map_shared_rank(value, rank)));
  return total;
#else
  return *value;
#endif
}

// Every thread of the cluster gets the cluster's reduction: each block reduces its own, then every
// warp folds the blocks' results, read through distributed shared memory, in rank order.
template <class T, class Op>
__device__ __forceinline__ T cluster_allreduce(T v, Op op, T identity, ReduceScratch<T>& scratch) {
  v = block_allreduce(v, op, identity, scratch);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) scratch.block = v;
  cluster_sync();
  const unsigned lane = threadIdx.x % 32;
  v = warp_allreduce(
      lane < __clusterSizeInBlocks() ? *static_cast<T*>(__cluster_map_shared_rank(&scratch.block, lane)) : identity,
      op);
  cluster_sync();  // no block overwrites its value, or exits, while another still reads it
#endif
  return v;
}

template <ReduceScope kScope, class T, class Op>
__device__ __forceinline__ T group_allreduce(T v, Op op, T identity, ReduceScratch<T>& scratch, int warp_width) {
  if constexpr (kScope == ReduceScope::warp)
    return warp_allreduce(v, op, warp_width);
  else if constexpr (kScope == ReduceScope::block)
    return block_allreduce(v, op, identity, scratch);
  else
    return cluster_allreduce(v, op, identity, scratch);
}

}  // namespace baracuda::detail::cuda

#pragma once
// The write-back of sums held in shared memory to a run of consecutive table elements, in 16-byte
// chunks, by a group of threads (a warp of scatter_warp_kernels.cuh, a block of
// scatter_line_kernels.cuh): the run is written from its first 16-byte aligned element, single
// elements before it and after its last whole chunk, so any run length and any alignment of T keep
// 16-byte accesses. The sums are laid out so that the run's first whole chunk and its sums are both
// aligned (run_shift). (NVRTC reads it: the kernels compiled at select.)
#include "cuda/common/scatter_ops.cuh"

namespace baracuda::detail::cuda {

// kVec consecutive elements of a line: one 16-byte access where kVec > 1 (the sums' side of a
// 16-bit chunk is 32 bytes: two accesses).
template <class X, int kVec>
struct alignas(sizeof(X) * kVec <= 16 ? sizeof(X) * kVec : 16) Chunk {
  X v[kVec];
};

// Where a run's sums start past 16-byte aligned shared memory: as many sums as the run's first
// element is elements of T past a 16-byte boundary (at most 16 / sizeof(T) - 1).
template <class T>
__device__ __forceinline__ int run_shift(const T* run) {
  return static_cast<int>((reinterpret_cast<uintptr_t>(run) % 16) / sizeof(T));
}

// One element: overwriting, its sum; adding, its old value plus its sum where the sum is not the
// identity (a slot no entry reached keeps its bits).
template <class T, class Acc>
__device__ __forceinline__ T written(Acc sum, T old, bool overwrite) {
  if (overwrite) return static_cast<T>(sum);
  if (sum != ScatterSum::identity<Acc>()) ScatterSum::combine(&old, sum);
  return old;
}

// A slot's sum written to `at` (added to `old`, its value, unless overwriting). Adding, a slot no
// entry reached is neither read nor written: a sparse line costs its entries, not its length.
template <class T, class Acc>
__device__ __forceinline__ T old_value(Acc sum, const T* at, bool overwrite) {
  return overwrite || sum == ScatterSum::identity<Acc>() ? T{} : *at;
}
template <class T, class Acc>
__device__ __forceinline__ void write_slot(Acc sum, T* at, T old, bool overwrite) {
  if (overwrite || sum != ScatterSum::identity<Acc>()) *at = written(sum, old, overwrite);
}

// A chunk of sums to its table elements, the sums cleared for the next item. Adding, a chunk no
// entry reached is neither read nor written.
template <int kVec, class T, class Acc>
__device__ __forceinline__ void move_chunk(Chunk<Acc, kVec>& sums, Chunk<T, kVec>& to, bool overwrite) {
  const Chunk<Acc, kVec> sum = sums;
  bool reached = overwrite;
  Chunk<Acc, kVec> clear;
#pragma unroll
  for (int v = 0; v < kVec; ++v) {
    clear.v[v] = ScatterSum::identity<Acc>();
    reached = reached || sum.v[v] != ScatterSum::identity<Acc>();
  }
  sums = clear;
  if (!reached) return;
  Chunk<T, kVec> out;
  if (!overwrite) out = to;
#pragma unroll
  for (int v = 0; v < kVec; ++v) out.v[v] = written(sum.v[v], overwrite ? T{} : out.v[v], overwrite);
  to = out;
}

// The group's thread `rank` of `group` writes its share of the run of `n` elements at `run`, whose
// sums start at `sums` (run_shift(run) sums past a 16-byte boundary), and clears them.
template <int kVec, class T, class Acc>
__device__ __forceinline__ void write_run(T* run, int n, Acc* sums, int rank, int group, bool overwrite) {
  const int shift = run_shift(run);
  const int head = min(n, shift ? kVec - shift : 0), chunks = (n - head) / kVec;
  const auto one = [&](int s) {
    const Acc sum = sums[s];
    sums[s] = ScatterSum::identity<Acc>();
    write_slot(sum, run + s, old_value(sum, run + s, overwrite), overwrite);
  };
  for (int s = rank; s < head; s += group) one(s);
  auto* body = reinterpret_cast<Chunk<T, kVec>*>(run + head);
  auto* body_sums = reinterpret_cast<Chunk<Acc, kVec>*>(sums + head);
  for (int k = rank; k < chunks; k += group) move_chunk(body_sums[k], body[k], overwrite);
  for (int s = head + chunks * kVec + rank; s < n; s += group) one(s);
}

}  // namespace baracuda::detail::cuda

#pragma once
// The CPU elementwise launcher: OpenMP across elements; the contiguous loop is plain enough for the
// compiler to vectorize, the strided one walks offsets with the shared Walker.
#include <algorithm>

#include "common/elementwise.hpp"
#include "cpu/parallel.hpp"
#include "ops/elementwise_layout.hpp"

namespace baracuda::detail::cpu {

// Elements of a row handled by one strided work item.
inline constexpr int64_t kChunk = 4096;

template <class T, class Op, int kIn, int kOut>
Status run_elementwise(const Op& op, const ElementwiseTensors<kIn, kOut>& t) {
  static_assert(Op::kIn == kIn && Op::kOut == kOut, "functor arity must match the tensors");
  Operands<T, kIn, kOut> p;
  for (int k = 0; k < kIn; ++k) p.in[k] = static_cast<const T*>(t.in[k]);
  for (int k = 0; k < kOut; ++k) p.out[k] = static_cast<T*>(t.out[k]);
  const int64_t n = t.shape.numel();
  if (t.path != ElementwisePath::contiguous) {
    const Strides* strides[kIn + kOut];
    for (int k = 0; k < kIn; ++k) strides[k] = &t.in_strides[k];
    for (int k = 0; k < kOut; ++k) strides[kIn + k] = &t.out_strides[k];
    const Walker<kIn + kOut> walker = make_walker<kIn + kOut>(t.shape, strides);
    // Row by row (the innermost collapsed dim), in chunks so that one long row still spreads over
    // the cores: the offsets are computed once per chunk, then stepped by the inner strides.
    const int64_t inner = walker.inner_size();
    const int64_t chunks_per_row = (inner + kChunk - 1) / kChunk;
    const int64_t chunks = n / inner * chunks_per_row;
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
    for (int64_t c = 0; c < chunks; ++c) {
      int64_t base[kIn + kOut];
      walker.offsets(c / chunks_per_row, base, walker.rank - 1);
      const int64_t begin = (c % chunks_per_row) * kChunk, end = std::min(inner, begin + kChunk);
      for (int64_t i = begin; i < end; ++i) {
        int64_t off[kIn + kOut];
        for (int k = 0; k < kIn + kOut; ++k) off[k] = base[k] + i * walker.inner_stride(k);
        apply_at(op, p, off);
      }
    }
    return Status::ok();
  }
#pragma omp parallel for simd schedule(static) if (n > kParallelThreshold)
  for (int64_t i = 0; i < n; ++i) apply_contiguous(op, p, i);
  return Status::ok();
}

// A BroadcastReduction (common/broadcast_reduction.hpp): items in parallel, then each output
// sums its splits in order.
template <class Reduction>
Status run_split_reduction(const Reduction& k) {
  const int64_t items = k.items();
#pragma omp parallel for schedule(static) if (items * k.r / k.s > kParallelThreshold)
  for (int64_t t = 0; t < items; ++t) k.item(t);
  if (k.s > 1) {
#pragma omp parallel for schedule(static) if (k.m * k.s > kParallelThreshold)
    for (int64_t j = 0; j < k.m; ++j) k.finalize(j);
  }
  return Status::ok();
}

}  // namespace baracuda::detail::cpu

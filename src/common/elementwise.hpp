#pragma once
// Shared by the CPU and CUDA backends: the index arithmetic of elementwise kernels and the way an
// elementwise functor is applied to one element. A functor has
//   using Acc;                    the compute type (float for 16-bit and f32, double for f64)
//   static constexpr int kIn, kOut;
//   void operator()(const Acc (&in)[kIn], Acc (&out)[kOut]) const;
// and every kernel shape (contiguous, vectorized, strided) of every backend reuses it.
#include <cstdint>

#include "baracuda/core/tensor.hpp"
#include "common/hd.hpp"

namespace baracuda::detail {

// f32 accumulation for 16-bit floats and f32, f64 for f64.
template <class T> struct acc_type { using type = float; };
template <> struct acc_type<double> { using type = double; };
template <class T> using acc_t = typename acc_type<T>::type;

// Maps a linear index over `sizes` (row-major) to an element offset in each of NT tensors.
// Built on the host with size-1 dims dropped and mergeable dims merged, so the loop is short.
template <int NT>
struct Walker {
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t strides[NT][kMaxRank] = {};

  BARACUDA_HD int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= sizes[d];
    return n;
  }
  BARACUDA_HD void offsets(int64_t linear, int64_t (&off)[NT]) const {
    for (int t = 0; t < NT; ++t) off[t] = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t i = linear % sizes[d];
      linear /= sizes[d];
      for (int t = 0; t < NT; ++t) off[t] += i * strides[t][d];
    }
  }
};

// Builds a Walker over the dims of `shape` selected by `keep` (all dims when keep is null).
template <int NT>
Walker<NT> make_walker(const Shape& shape, const Strides* const (&strides)[NT],
                       const bool* keep = nullptr) {
  Walker<NT> w;
  for (int d = 0; d < shape.rank; ++d) {
    if (shape.dims[d] == 1 || (keep && !keep[d])) continue;
    // Merge into the previous walker dim when every tensor steps through both as one.
    bool merge = w.rank > 0;
    for (int t = 0; t < NT && merge; ++t)
      merge = w.strides[t][w.rank - 1] == (*strides[t])[d] * shape.dims[d];
    if (merge) {
      w.sizes[w.rank - 1] *= shape.dims[d];
      for (int t = 0; t < NT; ++t) w.strides[t][w.rank - 1] = (*strides[t])[d];
      continue;
    }
    w.sizes[w.rank] = shape.dims[d];
    for (int t = 0; t < NT; ++t) w.strides[t][w.rank] = (*strides[t])[d];
    ++w.rank;
  }
  return w;
}

template <class T, int kIn, int kOut>
struct Operands {
  const T* in[kIn];
  T* out[kOut];
};

// Applies `op` to the element at offsets off[0..kIn) (inputs) and off[kIn..kIn+kOut) (outputs).
template <class T, class Op>
BARACUDA_HD void apply_at(const Op& op, const Operands<T, Op::kIn, Op::kOut>& p,
                          const int64_t (&off)[Op::kIn + Op::kOut]) {
  using Acc = typename Op::Acc;
  Acc x[Op::kIn];
  Acc y[Op::kOut];
  for (int k = 0; k < Op::kIn; ++k) x[k] = static_cast<Acc>(p.in[k][off[k]]);
  op(x, y);
  for (int k = 0; k < Op::kOut; ++k) p.out[k][off[Op::kIn + k]] = static_cast<T>(y[k]);
}

// Same for contiguous operands at element i.
template <class T, class Op>
BARACUDA_HD void apply_contiguous(const Op& op, const Operands<T, Op::kIn, Op::kOut>& p, int64_t i) {
  using Acc = typename Op::Acc;
  Acc x[Op::kIn];
  Acc y[Op::kOut];
  for (int k = 0; k < Op::kIn; ++k) x[k] = static_cast<Acc>(p.in[k][i]);
  op(x, y);
  for (int k = 0; k < Op::kOut; ++k) p.out[k][i] = static_cast<T>(y[k]);
}

}  // namespace baracuda::detail

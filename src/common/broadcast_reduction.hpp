#pragma once
// The gradient of an operand that was broadcast, summed over the dims it was broadcast along (lerp's
// dweight, a binary op's db for b = bias[D]), deterministically: no atomics, one fixed order.
//
// A Body is an elementwise functor that also returns a term of the sum:
//   using Acc; static constexpr int kIn, kOut;
//   Acc operator()(const Acc (&in)[kIn], Acc (&out)[kOut]) const
// It reads kIn inputs and writes kOut outputs at every element of the (output) index space, and the
// terms it returns are summed into the reduced output, one element per element of the kept dims.
// An elementwise output with no data is not written.
//
// The index space is split into `kept` dims (the reduced output's, M elements) and `reduced` dims
// (R elements); the sum over R is cut into S splits. Work item t covers one (j, s): it visits the
// elements r = s, s + S, ... of kept element j and sums the terms in that fixed order. The sum goes to
// the reduced output directly when S == 1, else to partial[s * M + j] (split-major: neighbouring kept
// elements' partials are neighbours), summed by finalize in order of s (the CPU) or in another fixed
// order (CUDA's finalize kernel). So the result does not depend on scheduling (nor on the kernel that
// ran the items: every kernel keeps the order within an item).
// (NVRTC reads the struct: make_broadcast_reduction is the host's.)
#include "common/elementwise.hpp"
#include "common/portable.hpp"
#if !defined(__CUDACC_RTC__)
#include "ops/elementwise_layout.hpp"
#endif

namespace baracuda::detail {

// Inputs of T but the first of First where that differs (where's bool condition).
template <class T, class Body, class First = T>
struct BroadcastReduction {
  using Acc = typename Body::Acc;
  static constexpr int kIn = Body::kIn, kOut = Body::kOut;
  static constexpr int NT = kIn + kOut + 1;  // inputs, elementwise outputs, the reduced output
  Body body;
  Operands<T, T, kIn, kOut + 1, First> p;  // p.out[kOut]: the reduced output
  Acc* partial = nullptr;                  // S * M sums when S > 1, split-major
  Walker<NT> kept;
  Walker<NT> reduced;
  int64_t m = 1, r = 1, s = 1;
  bool lanes_on_split = false;  // consecutive items take consecutive splits (reduced dim innermost)

  BARACUDA_HD int64_t items() const { return m * s; }

  BARACUDA_HD Acc term_at(const int64_t (&off)[NT]) const {
    Acc x[kIn];
    Acc y[kOut > 0 ? kOut : 1];
    for (int k = 0; k < kIn; ++k) x[k] = input_value<Acc>(p, k, off[k]);
    const Acc term = body(x, y);
    for (int k = 0; k < kOut; ++k)
      if (p.out[k]) p.out[k][off[kIn + k]] = static_cast<T>(y[k]);
    return term;
  }

  BARACUDA_HD void store(const int64_t (&base)[NT], Acc sum) const { p.out[kOut][base[NT - 1]] = static_cast<T>(sum); }

  BARACUDA_HD void item(int64_t t) const {
    const int64_t j = lanes_on_split ? t / s : t % m;
    const int64_t split = lanes_on_split ? t % s : t / m;
    int64_t base[NT];
    kept.offsets(j, base);
    Acc sum = 0;
    for (int64_t ri = split; ri < r; ri += s) {
      int64_t off[NT];
      reduced.offsets(ri, off);
      for (int k = 0; k < NT; ++k) off[k] += base[k];
      sum += term_at(off);
    }
    if (s == 1) {
      store(base, sum);
    } else {
      partial[split * m + j] = sum;
    }
  }

  // Adds kept element j's partials in order of s. They are loaded kFinalizeBatch at a time before
  // being added (as CUDA's finalize kernel loads its lanes' partials), the adds in the plain loop's order.
  static constexpr int kFinalizeBatch = 16;
  BARACUDA_HD void finalize(int64_t j) const {
    Acc sum = 0;
    int64_t split = 0;
    for (; split + kFinalizeBatch <= s; split += kFinalizeBatch) {
      Acc batch[kFinalizeBatch];
      BARACUDA_UNROLL
      for (int b = 0; b < kFinalizeBatch; ++b) batch[b] = partial[(split + b) * m + j];
      BARACUDA_UNROLL
      for (int b = 0; b < kFinalizeBatch; ++b) sum += batch[b];
    }
    for (; split < s; ++split) sum += partial[split * m + j];
    int64_t base[NT];
    kept.offsets(j, base);
    store(base, sum);
  }
};

#if !defined(__CUDACC_RTC__)
// The reduction of `body` over the views of `t` (inputs, then the elementwise outputs, then the
// reduced output, every view of t.shape: zero strides where broadcast), summed over the dims marked in
// `broadcast`, in `splits` splits.
template <class T, class First = T, class Body, int kViews>
BroadcastReduction<T, Body, First> make_broadcast_reduction(const Body& body,
                                                            const ElementwiseTensors<Body::kIn, kViews>& t,
                                                            const bool (&broadcast)[kMaxRank], int64_t splits,
                                                            void* partial) {
  static_assert(kViews == Body::kOut + 1, "the views are the body's outputs and the reduced output");
  constexpr int NT = Body::kIn + kViews;
  BroadcastReduction<T, Body, First> k{};
  k.body = body;
  const Strides* strides[NT];
  for (int i = 0; i < Body::kIn; ++i) {
    k.p.in[i] = static_cast<const T*>(t.in[i]);
    strides[i] = &t.in_strides[i];
  }
  for (int i = 0; i < kViews; ++i) {
    k.p.out[i] = static_cast<T*>(t.out[i]);
    strides[Body::kIn + i] = &t.out_strides[i];
  }
  k.partial = static_cast<typename Body::Acc*>(partial);
  bool kept[kMaxRank];
  for (int d = 0; d < kMaxRank; ++d) kept[d] = !broadcast[d];
  k.kept.rank = collapse_dims(t.shape, strides, NT, kept, k.kept.sizes, k.kept.strides);
  k.reduced.rank = collapse_dims(t.shape, strides, NT, broadcast, k.reduced.sizes, k.reduced.strides);
  k.m = k.r = 1;
  for (int d = 0; d < t.shape.rank; ++d) (broadcast[d] ? k.r : k.m) *= t.shape.dims[d];
  k.s = splits;
  // Coalescing: neighbouring items should touch neighbouring elements along the innermost dim.
  int inner = t.shape.rank - 1;
  while (inner > 0 && t.shape.dims[inner] == 1) --inner;
  k.lanes_on_split = inner >= 0 && broadcast[inner];
  return k;
}
#endif

}  // namespace baracuda::detail

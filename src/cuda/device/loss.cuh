#pragma once
// Cross-entropy, forward and backward (include/baracuda/ops/loss.hpp), compiled at select.
// A block takes one item at a time (items strided over the grid): a row, or for a row of more than
// chunk_len classes one chunk of it. The forward reads its logits once: each thread keeps a running
// max and sum of exps (rescaled when its max grows), kUnroll vectors in flight; the block merges its
// threads' pieces in a fixed butterfly order (cross_entropy.h's merge_rows). A row of one chunk is
// finished by the block; the chunks of a longer row are written to the workspace and merged in
// chunk order by cross_entropy_combine. The sum and mean reductions add the rows' terms in a fixed
// order in one block (cross_entropy_reduce). The backward reads the logits once and writes dlogits
// once (each element by the thread that read it, so dlogits may be the logits). kVec: the classes
// are contiguous, rows start on 16-byte boundaries and C is whole vectors: 16-byte accesses.
// Soft targets (kSoft) are read beside the logits, forward and backward; the backward takes each
// row's target mass from cross_entropy_soft_mass first. Everything a row's results depend on (block size,
// chunks, order) is fixed by C and the dtypes, so a row's bits never depend on the other rows.
#include "cuda/device/common.cuh"
#include "cuda/device/cross_entropy.h"
#include "cuda/device/params.h"

namespace baracuda::device {

enum : int { kCeLogits = 0, kCeDlogits = 1, kCeTargets = 2, kCeLoss = 3, kCeLse = 4 };

__device__ __forceinline__ float loss_fmax(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double loss_fmax(double a, double b) { return fmax(a, b); }
__device__ __forceinline__ float loss_log(float v) { return logf(v); }
__device__ __forceinline__ double loss_log(double v) { return log(v); }
// exp in the compute type: f32 by the hardware approximation (as the softmax kernels), f64 exactly.
struct LossExp {
  __device__ __forceinline__ float operator()(float v) const { return __expf(v); }
  __device__ __forceinline__ double operator()(double v) const { return exp(v); }
};

inline constexpr int kCeUnroll = 4;

// The blocks an SM should hold at once (the launch bounds): 1024 threads of f32 math (64 registers
// each), 512 of f64; the block's size is at most 512.
template <class T, int kThreads>
inline constexpr int kCeMinBlocks = (sizeof(acc_t<T>) == 8 ? 512 : 1024) / kThreads > 0
                                        ? (sizeof(acc_t<T>) == 8 ? 512 : 1024) / kThreads
                                        : 1;

// Row `row`'s offset in tensor t: walk_offset inlined, reading the params where they are (a call of
// the non-inlined walk_offset takes their address, and so a copy of them on every thread's stack).
__device__ __forceinline__ int64 row_offset(const CrossEntropyParams& p, int t, int64 row) {
  int64 off = 0;
  for (int d = p.row.rank - 1; d > 0; --d) {
    const int64 q = row / p.row.sizes[d];
    off += (row - q * p.row.sizes[d]) * p.row.strides[t][d];
    row = q;
  }
  return p.row.rank > 0 ? off + row * p.row.strides[t][0] : 0;
}

// The logits (or dlogits) of a row: element c at c (kVec) or c * stride. Loads stay in their storage
// type (Raw: 16 bytes, or one element) until used, so kCeUnroll of them in flight cost few registers.
template <class T, bool kVec>
struct ClassAccess {
  static constexpr int VW = kVec ? kVectorWidth<T> : 1;
  struct Raw {
    Vector<T> v;
  };
  __device__ __forceinline__ static Raw load(const T* row, int64 stride, int64 c) {
    Raw r;
    if constexpr (kVec)
      r.v = load_vector(row + c);
    else
      r.v.e[0] = row[c * stride];
    return r;
  }
  template <class Acc>
  __device__ __forceinline__ static void values(const Raw& r, Acc (&out)[VW]) {
#pragma unroll
    for (int i = 0; i < VW; ++i) out[i] = to_acc<Acc>(r.v.e[i]);
  }
  template <class Acc>
  __device__ __forceinline__ static void store(T* row, int64 stride, int64 c, const Acc (&in)[VW]) {
    if constexpr (kVec) {
      Vector<T> v;
#pragma unroll
      for (int i = 0; i < VW; ++i) v.e[i] = round_to<T>(in[i]);
      store_vector(row + c, v);
    } else {
      row[c * stride] = round_to<T>(in[0]);
    }
  }
};

// The block's pieces merged, the same on every thread, in a fixed order: lanes by butterfly, then the
// warps' pieces the same way. `shared` holds kRowValues x 32 values; the block's size is a multiple
// of 32. The target sums travel only with soft targets (kSoft); else they stay 0.
template <bool kSoft, class Acc>
__device__ __forceinline__ CrossEntropyRow<Acc> block_merge(CrossEntropyRow<Acc> r, Acc* shared) {
  auto butterfly = [&] {
    for (int o = 16; o > 0; o >>= 1) {
      CrossEntropyRow<Acc> other = {__shfl_xor_sync(0xffffffffu, r.max, o),
                                    __shfl_xor_sync(0xffffffffu, r.sum, o),
                                    __shfl_xor_sync(0xffffffffu, r.weighted_logits, o),
                                    __shfl_xor_sync(0xffffffffu, r.weights, o),
                                    Acc(0),
                                    Acc(0)};
      if constexpr (kSoft) {
        other.target_mass = __shfl_xor_sync(0xffffffffu, r.target_mass, o);
        other.target_logits = __shfl_xor_sync(0xffffffffu, r.target_logits, o);
      }
      r = merge_rows(r, other, LossExp{});
    }
  };
  butterfly();
  if (blockDim.x <= 32) return r;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  constexpr int kValues = kSoft ? kRowValues : 4;
  __syncthreads();
  if (lane == 0) {
    const Acc v[kRowValues] = {r.max, r.sum, r.weighted_logits, r.weights, r.target_mass, r.target_logits};
    for (int k = 0; k < kValues; ++k) shared[32 * k + warp] = v[k];
  }
  __syncthreads();
  if (lane < warps) {
    Acc v[kRowValues] = {};
    for (int k = 0; k < kValues; ++k) v[k] = shared[32 * k + lane];
    r = {v[0], v[1], v[2], v[3], v[4], v[5]};
  } else {
    r = empty_row<Acc>();
  }
  butterfly();
  return r;
}

// Whether row `row`'s target counts (else ignored, or bad: counted once, by the caller's one thread
// when `count`), and the target.
template <class I>
__device__ __forceinline__ bool target_of(const CrossEntropyParams& p, int64 row, bool count, int64& t) {
  t = static_cast<int64>(static_cast<const I*>(p.targets)[row_offset(p, kCeTargets, row)]);
  if (t == p.ignore_index) return false;
  if (t < 0 || t >= p.classes) {
    if (count && p.bad_index_count) atomicAdd(p.bad_index_count, 1ull);
    return false;
  }
  return true;
}

template <class W, class Acc>
__device__ __forceinline__ Acc class_weight(const CrossEntropyParams& p, int64 c) {
  return p.weight ? to_acc<Acc>(static_cast<const W*>(p.weight)[c * p.weight_stride]) : Acc(1);
}

// A finished row (one thread): its lse, its loss (none) or its terms (sum, mean).
template <class T, class W, class I, class Acc>
__device__ void finish_row(const CrossEntropyParams& p, int64 row, const CrossEntropyRow<Acc>& r) {
  const Acc base = r.max == loss_minus_infinity<Acc>() ? Acc(0) : r.max;
  const Acc lse = base + loss_log(r.sum);
  if (p.lse) static_cast<Acc*>(p.lse)[row_offset(p, kCeLse, row)] = lse;
  int64 t = 0;
  CrossEntropyTerms<Acc> terms = {Acc(0), Acc(0), Acc(0), Acc(0)};
  const Acc weights = p.weight ? r.weights : static_cast<Acc>(p.classes);
  if (p.soft) {
    terms = soft_row_terms<Acc>(lse, r.target_mass, r.target_logits, r.weighted_logits, weights,
                                static_cast<Acc>(p.smoothing), static_cast<Acc>(p.classes), static_cast<Acc>(p.z));
  } else if (target_of<I>(p, row, true, t)) {
    const T* x = static_cast<const T*>(p.logits) + row_offset(p, kCeLogits, row);
    terms = row_terms<Acc>(lse, to_acc<Acc>(x[t * p.class_stride]), class_weight<W, Acc>(p, t), r.weighted_logits,
                           weights, static_cast<Acc>(p.smoothing), static_cast<Acc>(p.classes), static_cast<Acc>(p.z));
  }
  if (p.reduction == kReduceNone) {
    static_cast<T*>(p.loss)[row_offset(p, kCeLoss, row)] = round_to<T>(terms.ce + terms.z);
  } else {
    Acc* to = static_cast<Acc*>(p.terms) + row * kTermCount;
    to[kTermCe] = terms.ce;
    to[kTermZ] = terms.z;
    to[kTermWeight] = terms.weight;
    to[kTermCounted] = terms.counted;
  }
}

// A soft target's share q_c of class c, from its probability y.
template <class W, class Acc>
__device__ __forceinline__ Acc soft_share(const CrossEntropyParams& p, Acc y, int64 c) {
  return soft_target_share<Acc>(y, class_weight<W, Acc>(p, c), static_cast<Acc>(p.smoothing),
                                static_cast<Acc>(p.classes));
}

// kSoft: the targets are a row of probabilities read beside the logits (their own class stride),
// gathered into target_mass = sum_c w_c y_c and target_logits = sum_c w_c y_c x_c.
template <class T, class W, class I, bool kVec, int kThreads, bool kSoft>
__global__ void __launch_bounds__(kThreads, (kCeMinBlocks<T, kThreads>))
    cross_entropy_forward(const __grid_constant__ CrossEntropyParams p) {
  using Acc = acc_t<T>;
  using Access = ClassAccess<T, kVec>;
  constexpr int VW = Access::VW;
  __shared__ Acc shared[kRowValues * 32];
  const bool smoothing = p.smoothing != 0;
  const int64 items = p.rows * p.chunks;
  for (int64 item = blockIdx.x; item < items; item += gridDim.x) {
    const int64 row = item / p.chunks, chunk = item - row * p.chunks;
    const int64 begin = chunk * p.chunk_len;
    const int64 end = begin + p.chunk_len < p.classes ? begin + p.chunk_len : p.classes;
    const T* x = static_cast<const T*>(p.logits) + row_offset(p, kCeLogits, row);
    const T* y = kSoft ? static_cast<const T*>(p.targets) + row_offset(p, kCeTargets, row) : nullptr;
    CrossEntropyRow<Acc> r = empty_row<Acc>();
    // Vectors [first, last) of the chunk (kVec: begin, end and the row are whole vectors).
    const int64 first = begin / VW, last = end / VW;
    for (int64 v0 = first + threadIdx.x; v0 < last; v0 += static_cast<int64>(kCeUnroll) * kThreads) {
      typename Access::Raw raw[kCeUnroll], yraw[kSoft ? kCeUnroll : 1];
#pragma unroll
      for (int u = 0; u < kCeUnroll; ++u) {
        const int64 v = v0 + static_cast<int64>(u) * kThreads;
        if (v < last) raw[u] = Access::load(x, p.class_stride, v * VW);
        if constexpr (kSoft)
          if (v < last) yraw[u] = Access::load(y, p.target_class_stride, v * VW);
      }
#pragma unroll
      for (int u = 0; u < kCeUnroll; ++u) {
        const int64 v = v0 + static_cast<int64>(u) * kThreads;
        if (v >= last) continue;
        Acc e[VW];
        Access::values(raw[u], e);
        Acc vmax = e[0];
#pragma unroll
        for (int i = 1; i < VW; ++i) vmax = loss_fmax(vmax, e[i]);
        if (vmax > r.max) {  // the running max grows: rescale the sum
          r.sum = r.sum * rescale(r.max, vmax, LossExp{});
          r.max = vmax;
        }
        const Acc base = r.max == loss_minus_infinity<Acc>() ? Acc(0) : r.max;
#pragma unroll
        for (int i = 0; i < VW; ++i) r.sum += LossExp{}(e[i] - base);
        if constexpr (kSoft) {
          Acc yv[VW];
          Access::values(yraw[u], yv);
#pragma unroll
          for (int i = 0; i < VW; ++i) {
            const Acc wy = class_weight<W, Acc>(p, v * VW + i) * yv[i];
            r.target_mass += wy;
            if (wy != Acc(0)) r.target_logits += wy * e[i];
          }
        }
        if (smoothing)
          for (int i = 0; i < VW; ++i) {
            const Acc w = class_weight<W, Acc>(p, v * VW + i);
            r.weighted_logits += w * e[i];
            r.weights += w;
          }
      }
    }
    r = block_merge<kSoft>(r, shared);
    if (threadIdx.x == 0) {
      if (p.chunks == 1) {
        finish_row<T, W, I>(p, row, r);
      } else {
        Acc* to = static_cast<Acc*>(p.pieces) + item * kRowValues;
        to[0] = r.max;
        to[1] = r.sum;
        to[2] = r.weighted_logits;
        to[3] = r.weights;
        to[4] = r.target_mass;
        to[5] = r.target_logits;
      }
    }
  }
}

// log_probs (F.nll_loss): a thread a row reads its target's value alone; lse = 0 + log(1) exactly.
template <class T, class W, class I>
__global__ void __launch_bounds__(256) nll_forward(const __grid_constant__ CrossEntropyParams p) {
  using Acc = acc_t<T>;
  for (int64 row = blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x; row < p.rows;
       row += static_cast<int64>(gridDim.x) * blockDim.x)
    finish_row<T, W, I>(p, row, CrossEntropyRow<Acc>{Acc(0), Acc(1), Acc(0), Acc(0), Acc(0), Acc(0)});
}

// The chunks of each row merged in chunk order, then the row finished: a thread a row.
template <class T, class W, class I>
__global__ void __launch_bounds__(256) cross_entropy_combine(const __grid_constant__ CrossEntropyParams p) {
  using Acc = acc_t<T>;
  for (int64 row = blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x; row < p.rows;
       row += static_cast<int64>(gridDim.x) * blockDim.x) {
    const Acc* piece = static_cast<const Acc*>(p.pieces) + row * p.chunks * kRowValues;
    auto piece_of = [&](int64 c) {
      const Acc* v = piece + c * kRowValues;
      return CrossEntropyRow<Acc>{v[0], v[1], v[2], v[3], v[4], v[5]};
    };
    CrossEntropyRow<Acc> r = piece_of(0);
    for (int64 c = 1; c < p.chunks; ++c) r = merge_rows(r, piece_of(c), LossExp{});
    finish_row<T, W, I>(p, row, r);
  }
}

// sum and mean: the rows' terms added in a fixed order by one block of 1024 threads (thread i takes
// rows i, i + 1024, ... in order; then block_sum), and the loss written.
template <class T>
__global__ void __launch_bounds__(1024) cross_entropy_reduce(const __grid_constant__ CrossEntropyParams p) {
  using Acc = acc_t<T>;
  __shared__ Acc shared[kTermCount * 32];
  Acc sums[kTermCount] = {Acc(0), Acc(0), Acc(0), Acc(0)};
  const Acc* terms = static_cast<const Acc*>(p.terms);
  for (int64 row = threadIdx.x; row < p.rows; row += blockDim.x)
    for (int k = 0; k < kTermCount; ++k) sums[k] += terms[row * kTermCount + k];
  block_sum(sums, shared);
  if (threadIdx.x == 0)
    *static_cast<T*>(p.loss) = round_to<T>(
        reduced_loss<Acc>(p.reduction, sums[kTermCe], sums[kTermZ], sums[kTermWeight], sums[kTermCounted], p.z != 0));
}

// The backward's totals, by one block of 1024 threads in a fixed order: W = sum_c w_c (with a weight
// and smoothing), and for the mean the targets' weights and the rows counted.
template <class T, class W, class I>
__global__ void __launch_bounds__(1024) cross_entropy_totals(const __grid_constant__ CrossEntropyParams p) {
  using Acc = acc_t<T>;
  __shared__ Acc shared[3 * 32];
  Acc sums[3] = {Acc(0), Acc(0), Acc(0)};
  if (p.weight && p.smoothing != 0)
    for (int64 c = threadIdx.x; c < p.classes; c += blockDim.x) sums[0] += class_weight<W, Acc>(p, c);
  if (p.reduction == kReduceMean && !p.soft)
    for (int64 row = threadIdx.x; row < p.rows; row += blockDim.x) {
      int64 t = 0;
      if (!target_of<I>(p, row, false, t)) continue;
      sums[1] += class_weight<W, Acc>(p, t);
      sums[2] += Acc(1);
    }
  block_sum(sums, shared);
  if (threadIdx.x == 0)
    for (int k = 0; k < 3; ++k) static_cast<Acc*>(p.totals)[k] = sums[k];
}

// Soft targets: each row's target mass M = sum_c w_c y_c into `masses`, a block a row (classes strided
// over its threads, then block_sum): a fixed order, the same bits at any row count.
template <class T, class W>
__global__ void __launch_bounds__(512) cross_entropy_soft_mass(const __grid_constant__ CrossEntropyParams p) {
  using Acc = acc_t<T>;
  __shared__ Acc shared[32];
  for (int64 row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* y = static_cast<const T*>(p.targets) + row_offset(p, kCeTargets, row);
    Acc m[1] = {Acc(0)};
    for (int64 c = threadIdx.x; c < p.classes; c += blockDim.x)
      m[0] += class_weight<W, Acc>(p, c) * to_acc<Acc>(y[c * p.target_class_stride]);
    block_sum(m, shared);
    if (threadIdx.x == 0) static_cast<Acc*>(p.masses)[row] = m[0];
  }
}

template <class T, class W, class I, bool kVec, int kThreads, bool kSoft>
__global__ void __launch_bounds__(kThreads, (kCeMinBlocks<T, kThreads>))
    cross_entropy_backward(const __grid_constant__ CrossEntropyParams p) {
  using Acc = acc_t<T>;
  using Access = ClassAccess<T, kVec>;
  constexpr int VW = Access::VW;
  const Acc smoothing = static_cast<Acc>(p.smoothing), classes = static_cast<Acc>(p.classes);
  const Acc* totals = static_cast<const Acc*>(p.totals);
  const Acc weights = p.weight && p.smoothing != 0 ? totals[0] : classes;
  const int64 items = p.rows * p.chunks;
  for (int64 item = blockIdx.x; item < items; item += gridDim.x) {
    const int64 row = item / p.chunks, chunk = item - row * p.chunks;
    const int64 begin = chunk * p.chunk_len;
    const int64 end = begin + p.chunk_len < p.classes ? begin + p.chunk_len : p.classes;
    const T* x = static_cast<const T*>(p.logits) + row_offset(p, kCeLogits, row);
    T* dx = static_cast<T*>(p.dlogits) + row_offset(p, kCeDlogits, row);
    const int64 first = begin / VW, last = end / VW;
    int64 t = -1;  // soft: no target class
    if (!kSoft && !target_of<I>(p, row, threadIdx.x == 0 && chunk == 0, t)) {
      Acc zero[VW];
      for (int i = 0; i < VW; ++i) zero[i] = Acc(0);
      for (int64 v = first + threadIdx.x; v < last; v += kThreads) Access::store(dx, p.dclass_stride, v * VW, zero);
      continue;
    }
    Acc g = to_acc<Acc>(static_cast<const T*>(p.dloss)[p.reduction == kReduceNone ? row_offset(p, kCeLoss, row) : 0]);
    Acc g_z = g;
    if (p.reduction == kReduceMean && kSoft) {  // every row counts
      g = g / static_cast<Acc>(p.rows);
      g_z = g;
    } else if (p.reduction == kReduceMean) {
      g = g / totals[1];
      g_z = g_z / totals[2];
    }
    // log_probs: no p_c term, so the logits are not read.
    const bool probs = p.log_probs == 0;
    const Acc lse = probs ? static_cast<const Acc*>(p.lse)[row_offset(p, kCeLse, row)] : Acc(0);
    const CrossEntropyGradient<Acc> k =
        kSoft ? soft_row_gradient<Acc>(lse, static_cast<const Acc*>(p.masses)[row], weights, smoothing, classes,
                                       static_cast<Acc>(p.z), g, g_z)
              : row_gradient<Acc>(lse, class_weight<W, Acc>(p, t), weights, smoothing, classes, static_cast<Acc>(p.z),
                                  g, g_z);
    const bool class_terms = p.smoothing != 0;
    const T* y = kSoft ? static_cast<const T*>(p.targets) + row_offset(p, kCeTargets, row) : nullptr;
    for (int64 v0 = first + threadIdx.x; v0 < last; v0 += static_cast<int64>(kCeUnroll) * kThreads) {
      typename Access::Raw raw[kCeUnroll], yraw[kSoft ? kCeUnroll : 1];
#pragma unroll
      for (int u = 0; u < kCeUnroll; ++u) {
        const int64 v = v0 + static_cast<int64>(u) * kThreads;
        if (probs && v < last) raw[u] = Access::load(x, p.class_stride, v * VW);
        if constexpr (kSoft)
          if (v < last) yraw[u] = Access::load(y, p.target_class_stride, v * VW);
      }
#pragma unroll
      for (int u = 0; u < kCeUnroll; ++u) {
        const int64 v = v0 + static_cast<int64>(u) * kThreads;
        if (v >= last) continue;
        Acc e[VW];
        if (probs) Access::values(raw[u], e);
        if constexpr (kSoft) {  // dlogits_c = p_c scale - g q_c
          Acc yv[VW];
          Access::values(yraw[u], yv);
#pragma unroll
          for (int i = 0; i < VW; ++i)
            e[i] = LossExp{}(e[i] - lse) * k.scale - k.class_term * soft_share<W>(p, yv[i], v * VW + i);
        } else {
#pragma unroll
          for (int i = 0; i < VW; ++i) {
            const int64 c = v * VW + i;
            Acc d = probs ? LossExp{}(e[i] - lse) * k.scale : Acc(0);
            if (class_terms) d -= k.class_term * class_weight<W, Acc>(p, c);
            if (c == t) d -= k.target_term;
            e[i] = d;
          }
        }
        Access::store(dx, p.dclass_stride, v * VW, e);
      }
    }
  }
}

}  // namespace baracuda::device

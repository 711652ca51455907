#pragma once
// LayerNorm and RmsNorm, forward and backward (include/baracuda/ops/norm.hpp), compiled at select.
// A block normalizes one row at a time (rows strided over the grid). A row that fits is held in
// registers, kHeld vectors a thread, and read from memory once; a longer one (kHeld = 0) is read
// again for each pass, mostly from L2. kVec: the row tensors are contiguous along the normalized
// dims with 16-byte aligned rows, read as 16-byte vectors; otherwise each element's offset comes from
// the inner walk (the weight and bias too are contiguous with kVec). The statistics are two passes (the mean, then the
// squared deviations) over the held or re-read values; every sum is block_sum's fixed order, so a row's results depend
// on that row alone (batch-invariant) and never change between runs.
#include "cuda/device/common.cuh"

namespace baracuda::device {

// Tensor slots of the walks (params.h): the forward's x, residual, y, h; the backward's dy, x, dh,
// dx; then the statistics (rows) or the tensors of the normalized shape (inner).
enum : int { kX = 0, kResidual = 1, kY = 2, kH = 3 };
enum : int { kDy = 0, kXSaved = 1, kDh = 2, kDx = 3 };
enum : int { kMean = 4, kRstd = 5, kWeight = 4, kBias = 5 };

template <class T, bool kVec>
struct RowAccess {
  static constexpr int VW = kVec ? kVectorWidth<T> : 1;
  // Element e (the first of a vector) of a row tensor in slot t.
  template <int NT>
  __device__ __forceinline__ static int64 at(const Walk<NT>& inner, int t, int64 e) {
    return kVec ? e : walk_offset(inner, t, e);
  }
  template <class Acc, int NT>
  __device__ __forceinline__ static void load(const T* base, const Walk<NT>& inner, int t, int64 e, Acc (&out)[VW]) {
    if constexpr (kVec) {
      const Vector<T> v = load_vector(base + e);
      for (int i = 0; i < VW; ++i) out[i] = to_acc<Acc>(v.e[i]);
    } else {
      out[0] = to_acc<Acc>(base[at(inner, t, e)]);
    }
  }
  template <class Acc, int NT>
  __device__ __forceinline__ static void store(T* base, const Walk<NT>& inner, int t, int64 e, const Acc (&in)[VW]) {
    if constexpr (kVec) {
      Vector<T> v;
      for (int i = 0; i < VW; ++i) v.e[i] = round_to<T>(in[i]);
      store_vector(base + e, v);
    } else {
      base[at(inner, t, e)] = round_to<T>(in[0]);
    }
  }
};

// Element e of a tensor of the normalized shape (weight, bias) in slot t: contiguous with kVec.
template <bool kVec, int NT>
__device__ __forceinline__ int64 inner_at(const Walk<NT>& inner, int t, int64 e) {
  return kVec ? e : walk_offset(inner, t, e);
}

// The weight as the norm applies it: w, 1 + w (Gemma), or 1 when there is none.
template <bool kVec, class W, class Acc, int NT>
__device__ __forceinline__ Acc weight_at(const W* w, const Walk<NT>& inner, int t, int64 e, Acc offset) {
  return w ? to_acc<Acc>(w[inner_at<kVec>(inner, t, e)]) + offset : Acc(1);
}

// kThreads: the block's size, fixed by the row length at select. The launch bounds give the compiler
// 512 threads an SM to plan registers for (128 a thread for blocks of 128): a bound of 1024 capped
// them at 64 and spilled the held values to local memory (bench/NOTES.md, "Matmul family ...").
template <int kThreads>
inline constexpr int kNormMinBlocks = kThreads >= 512 ? 1 : 512 / kThreads;

template <class T, class W, bool kRms, bool kVec, int kHeld, int kThreads>
__global__ void __launch_bounds__(kThreads, kNormMinBlocks<kThreads>)
    norm_forward(const __grid_constant__ NormForwardParams p) {
  using Acc = acc_t<T>;
  using Row = RowAccess<T, kVec>;
  constexpr int VW = Row::VW;
  __shared__ Acc shared[32];
  const int64 vectors = p.n / VW;  // kVec: the host checked n % VW == 0
  // (An empty row's statistics: mean 0, variance 0.)
  const Acc n = static_cast<Acc>(p.n > 0 ? p.n : 1), eps = static_cast<Acc>(p.eps);
  const Acc offset = static_cast<Acc>(p.weight_offset);
  const W* weight = static_cast<const W*>(p.weight);
  const W* bias = static_cast<const W*>(p.bias);
  for (int64 row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* x = static_cast<const T*>(p.x) + walk_offset(p.row, kX, row);
    const T* residual = p.residual ? static_cast<const T*>(p.residual) + walk_offset(p.row, kResidual, row) : nullptr;
    T* y = static_cast<T*>(p.y) + walk_offset(p.row, kY, row);
    T* h = p.h ? static_cast<T*>(p.h) + walk_offset(p.row, kH, row) : nullptr;
    // h's values at vector v: x, or x + residual rounded to T (written to h on the first pass).
    auto load_h = [&](int64 v, Acc(&out)[VW], bool write_h) {
      Row::load(x, p.inner, kX, v * VW, out);
      if (!residual) return;
      Acc r[VW];
      Row::load(residual, p.inner, kResidual, v * VW, r);
      for (int i = 0; i < VW; ++i) out[i] = to_acc<Acc>(round_to<T>(out[i] + r[i]));
      if (write_h) Row::store(h, p.inner, kH, v * VW, out);
    };
    Acc held[kHeld > 0 ? kHeld : 1][VW];
    Acc sum[1] = {Acc(0)};
    // Pass 1: the sum (LayerNorm) or the sum of squares (RmsNorm).
    if constexpr (kHeld > 0) {
      for (int k = 0; k < kHeld; ++k) {
        const int64 v = threadIdx.x + static_cast<int64>(k) * blockDim.x;
        if (v < vectors) {
          load_h(v, held[k], true);
          for (int i = 0; i < VW; ++i) sum[0] += kRms ? held[k][i] * held[k][i] : held[k][i];
        }
      }
    } else {
      for (int64 v = threadIdx.x; v < vectors; v += blockDim.x) {
        Acc e[VW];
        load_h(v, e, true);
        for (int i = 0; i < VW; ++i) sum[0] += kRms ? e[i] * e[i] : e[i];
      }
    }
    block_sum(sum, shared);
    Acc mean = Acc(0), rstd;
    if constexpr (kRms) {
      rstd = reciprocal_sqrt(sum[0] / n + eps);
    } else {
      mean = sum[0] / n;
      Acc dev[1] = {Acc(0)};
      if constexpr (kHeld > 0) {
        for (int k = 0; k < kHeld; ++k)
          if (threadIdx.x + static_cast<int64>(k) * blockDim.x < vectors)
            for (int i = 0; i < VW; ++i) dev[0] += (held[k][i] - mean) * (held[k][i] - mean);
      } else {
        for (int64 v = threadIdx.x; v < vectors; v += blockDim.x) {
          Acc e[VW];
          load_h(v, e, false);
          for (int i = 0; i < VW; ++i) dev[0] += (e[i] - mean) * (e[i] - mean);
        }
      }
      block_sum(dev, shared);
      rstd = reciprocal_sqrt(dev[0] / n + eps);
    }
    if (threadIdx.x == 0) {
      if (p.mean) static_cast<Acc*>(p.mean)[walk_offset(p.row, kMean, row)] = mean;
      if (p.rstd) static_cast<Acc*>(p.rstd)[walk_offset(p.row, kRstd, row)] = rstd;
    }
    // Pass 3: y = (h - mean) * rstd * w + b.
    auto write = [&](int64 v, Acc(&e)[VW]) {
      for (int i = 0; i < VW; ++i) {
        const int64 j = v * VW + i;
        Acc out = (e[i] - mean) * rstd;
        out *= weight_at<kVec>(weight, p.inner, kWeight, j, offset);
        if (bias) out += to_acc<Acc>(bias[inner_at<kVec>(p.inner, kBias, j)]);
        e[i] = out;
      }
      Row::store(y, p.inner, kY, v * VW, e);
    };
    if constexpr (kHeld > 0) {
      for (int k = 0; k < kHeld; ++k) {
        const int64 v = threadIdx.x + static_cast<int64>(k) * blockDim.x;
        if (v < vectors) write(v, held[k]);
      }
    } else {
      for (int64 v = threadIdx.x; v < vectors; v += blockDim.x) {
        Acc e[VW];
        load_h(v, e, false);
        write(v, e);
      }
    }
  }
}

// Rows [chunk * rows_per_chunk, ...) of one block: dx per row, and the chunk's partial dweight
// (sum of dy * xhat) and dbias (sum of dy) over its rows, in row order, into the workspace.
template <class T, class W, bool kRms, bool kVec, int kHeld, int kThreads>
__global__ void __launch_bounds__(kThreads, kNormMinBlocks<kThreads>)
    norm_backward(const __grid_constant__ NormBackwardParams p) {
  using Acc = acc_t<T>;
  using Row = RowAccess<T, kVec>;
  constexpr int VW = Row::VW;
  __shared__ Acc shared[64];
  const int64 vectors = p.n / VW;
  const Acc n = static_cast<Acc>(p.n), offset = static_cast<Acc>(p.weight_offset);
  const W* weight = static_cast<const W*>(p.weight);
  const int64 first = static_cast<int64>(blockIdx.x) * p.rows_per_chunk;
  const int64 last = first + p.rows_per_chunk < p.rows ? first + p.rows_per_chunk : p.rows;
  Acc* pdw = static_cast<Acc*>(p.partial) + static_cast<int64>(blockIdx.x) * p.n;
  Acc* pdb = static_cast<Acc*>(p.partial) + (static_cast<int64>(gridDim.x) + blockIdx.x) * p.n;
  const bool partials = p.want_dweight || p.want_dbias;
  Acc dw[kHeld > 0 ? kHeld : 1][VW] = {}, db[kHeld > 0 ? kHeld : 1][VW] = {};
  for (int64 row = first; row < last; ++row) {
    const T* dy = static_cast<const T*>(p.dy) + walk_offset(p.row, kDy, row);
    const T* h = static_cast<const T*>(p.h) + walk_offset(p.row, kXSaved, row);
    const T* dh = p.dh ? static_cast<const T*>(p.dh) + walk_offset(p.row, kDh, row) : nullptr;
    T* dx = p.dx ? static_cast<T*>(p.dx) + walk_offset(p.row, kDx, row) : nullptr;
    const Acc mean = p.mean ? static_cast<const Acc*>(p.mean)[walk_offset(p.row, kMean, row)] : Acc(0);
    const Acc rstd = static_cast<const Acc*>(p.rstd)[walk_offset(p.row, kRstd, row)];
    // dy and xhat at vector v.
    auto load = [&](int64 v, Acc(&g)[VW], Acc(&xhat)[VW]) {
      Row::load(dy, p.inner, kDy, v * VW, g);
      Row::load(h, p.inner, kXSaved, v * VW, xhat);
      for (int i = 0; i < VW; ++i) xhat[i] = (xhat[i] - mean) * rstd;
    };
    Acc held_dy[kHeld > 0 ? kHeld : 1][VW], held_xhat[kHeld > 0 ? kHeld : 1][VW];
    Acc sums[2] = {Acc(0), Acc(0)};  // sum(g * xhat), sum(g), g = dy * w
    auto accumulate = [&](int64 v, const Acc(&d)[VW], const Acc(&xhat)[VW]) {
      for (int i = 0; i < VW; ++i) {
        const Acc g = d[i] * weight_at<kVec>(weight, p.inner, kWeight, v * VW + i, offset);
        sums[0] += g * xhat[i];
        sums[1] += g;
      }
    };
    if constexpr (kHeld > 0) {
      for (int k = 0; k < kHeld; ++k) {
        const int64 v = threadIdx.x + static_cast<int64>(k) * blockDim.x;
        if (v < vectors) {
          load(v, held_dy[k], held_xhat[k]);
          accumulate(v, held_dy[k], held_xhat[k]);
        }
      }
    } else {
      for (int64 v = threadIdx.x; v < vectors; v += blockDim.x) {
        Acc d[VW], xhat[VW];
        load(v, d, xhat);
        accumulate(v, d, xhat);
      }
    }
    block_sum(sums, shared);
    const Acc a = sums[0] / n, b = kRms ? Acc(0) : sums[1] / n;
    // dx = rstd (g - b - xhat a) [+ dh]; the partials gather dy xhat and dy.
    auto finish = [&](int64 v, const Acc(&d)[VW], const Acc(&xhat)[VW], Acc(&pw)[VW], Acc(&pb)[VW], bool first_row) {
      if (dx) {
        Acc out[VW], skip[VW];
        if (dh) Row::load(dh, p.inner, kDh, v * VW, skip);
        for (int i = 0; i < VW; ++i) {
          const Acc g = d[i] * weight_at<kVec>(weight, p.inner, kWeight, v * VW + i, offset);
          out[i] = rstd * (g - b - xhat[i] * a);
          if (dh) out[i] += skip[i];
        }
        Row::store(dx, p.inner, kDx, v * VW, out);
      }
      for (int i = 0; i < VW; ++i) {
        pw[i] = (first_row ? Acc(0) : pw[i]) + d[i] * xhat[i];
        pb[i] = (first_row ? Acc(0) : pb[i]) + d[i];
      }
    };
    if constexpr (kHeld > 0) {
      for (int k = 0; k < kHeld; ++k) {
        const int64 v = threadIdx.x + static_cast<int64>(k) * blockDim.x;
        if (v < vectors) finish(v, held_dy[k], held_xhat[k], dw[k], db[k], false);
      }
    } else {
      for (int64 v = threadIdx.x; v < vectors; v += blockDim.x) {
        Acc d[VW], xhat[VW], pw[VW], pb[VW];
        load(v, d, xhat);
        if (partials && row != first)
          for (int i = 0; i < VW; ++i) {
            pw[i] = pdw[v * VW + i];
            pb[i] = pdb[v * VW + i];
          }
        finish(v, d, xhat, pw, pb, row == first);
        if (partials)
          for (int i = 0; i < VW; ++i) {
            if (p.want_dweight) pdw[v * VW + i] = pw[i];
            if (p.want_dbias) pdb[v * VW + i] = pb[i];
          }
      }
    }
  }
  if (!partials) return;
  if constexpr (kHeld > 0) {
    for (int k = 0; k < kHeld; ++k) {
      const int64 v = threadIdx.x + static_cast<int64>(k) * blockDim.x;
      if (v < vectors)
        for (int i = 0; i < VW; ++i) {
          if (p.want_dweight) pdw[v * VW + i] = dw[k][i];
          if (p.want_dbias) pdb[v * VW + i] = db[k][i];
        }
    }
  } else if (first >= last) {  // a chunk with no row adds nothing
    for (int64 e = threadIdx.x; e < p.n; e += blockDim.x) {
      if (p.want_dweight) pdw[e] = Acc(0);
      if (p.want_dbias) pdb[e] = Acc(0);
    }
  }
}

// dweight and dbias: each column's chunk partials added in chunk order.
template <class T, class W>
__global__ void __launch_bounds__(256) norm_finalize(const __grid_constant__ NormFinalizeParams p) {
  using Acc = acc_t<T>;
  const Acc* partial = static_cast<const Acc*>(p.partial);
  for (int64 e = blockIdx.x * static_cast<int64>(blockDim.x) + threadIdx.x; e < p.n;
       e += static_cast<int64>(gridDim.x) * blockDim.x) {
    if (p.dweight) {
      Acc s = Acc(0);
      for (int64 c = 0; c < p.chunks; ++c) s += partial[c * p.n + e];
      static_cast<W*>(p.dweight)[walk_offset(p.inner, 0, e)] = round_to<W>(s);
    }
    if (p.dbias) {
      Acc s = Acc(0);
      for (int64 c = 0; c < p.chunks; ++c) s += partial[(p.chunks + c) * p.n + e];
      static_cast<W*>(p.dbias)[walk_offset(p.inner, 1, e)] = round_to<W>(s);
    }
  }
}

}  // namespace baracuda::device

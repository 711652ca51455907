#pragma once
// LayerNorm and RmsNorm, forward and backward (include/baracuda/ops/norm.hpp), compiled at select.
// kRowThreads threads normalize a row (kRows rows a block: rows of up to 32 threads share a warp,
// longer ones take the block), rows strided over the grid; the shape is norm_block_shape's
// (ops/norm_problem.hpp), fixed by the row length. A row that fits is held in registers, kHeld
// vectors a thread, and read from memory once; a longer one (kHeld = 0) is read again for each
// pass, mostly from L2. kVec: the row tensors are contiguous along the normalized dims with 16-byte
// aligned rows, read as 16-byte vectors, and so are the weight and bias; otherwise each element's
// offset comes from the inner walk. The statistics are two passes (the mean, then the squared
// deviations) over the held or re-read values; every sum is in a fixed order, so a row's results
// depend on that row alone (batch-invariant) and never change between runs.
#include "cuda/device/common.cuh"
#include "cuda/device/params.h"

namespace baracuda::device {

// Tensor slots of the walks (params.h): the forward's x, residual, y, h; the backward's dy, x, dh,
// dx; then the statistics (rows) or the tensors of the normalized shape (inner).
enum : int { kX = 0, kResidual = 1, kY = 2, kH = 3 };
enum : int { kDy = 0, kXSaved = 1, kDh = 2, kDx = 3 };
enum : int { kMean = 4, kRstd = 5, kWeight = 4, kBias = 5 };

// VW elements of T as stored: a row's held values stay in this form (exact: they are x, or h already
// rounded to T), so a 16-bit row takes half the registers its f32 values would.
template <class T, int VW>
struct alignas(sizeof(T) * VW) Pack {
  T e[VW];
};

// The moments of a vector's VW values (two passes over its registers), for Chan's merge.
template <class Acc, class T, int VW>
__device__ __forceinline__ Moments<Acc> moments_of(const Pack<T, VW>& v) {
  Acc sum = Acc(0), dev = Acc(0);
  for (int e = 0; e < VW; ++e) sum += to_acc<Acc>(v.e[e]);
  const Acc mean = sum / Acc(VW);
  for (int e = 0; e < VW; ++e) dev += (to_acc<Acc>(v.e[e]) - mean) * (to_acc<Acc>(v.e[e]) - mean);
  return {Acc(VW), mean, dev};
}

template <class T, bool kVec>
struct RowAccess {
  static constexpr int VW = kVec ? kVectorWidth<T> : 1;
  using Raw = Pack<T, VW>;
  // Element e (the first of a vector) of a row tensor in slot t.
  template <int NT>
  __device__ __forceinline__ static int64 at(const Walk<NT>& inner, int t, int64 e) {
    return kVec ? e : walk_offset(inner, t, e);
  }
  template <int NT>
  __device__ __forceinline__ static Raw load(const T* base, const Walk<NT>& inner, int t, int64 e) {
    return *reinterpret_cast<const Raw*>(base + at(inner, t, e));
  }
  template <int NT>
  __device__ __forceinline__ static void store(T* base, const Walk<NT>& inner, int t, int64 e, const Raw& v) {
    *reinterpret_cast<Raw*>(base + at(inner, t, e)) = v;
  }
  template <class Acc, int NT>
  __device__ __forceinline__ static void store(T* base, const Walk<NT>& inner, int t, int64 e, const Acc (&in)[VW]) {
    Raw v;
    for (int i = 0; i < VW; ++i) v.e[i] = round_to<T>(in[i]);
    store(base, inner, t, e, v);
  }
  template <class Acc>
  __device__ __forceinline__ static Acc value(const Raw& v, int i) {
    return to_acc<Acc>(v.e[i]);
  }
};

// Elements e.. e + VW - 1 of a tensor of the normalized shape (weight, bias) in slot t, as Acc plus
// `offset`: 16-byte loads with kVec (the host checked the tensor's alignment), else one at a time.
template <bool kVec, int VW, class W, class Acc, int NT>
__device__ __forceinline__ void load_inner(const W* w, const Walk<NT>& inner, int t, int64 e, Acc offset,
                                           Acc (&out)[VW]) {
  constexpr int WV = kVectorWidth<W>;
  if constexpr (kVec && VW % WV == 0) {
    for (int c = 0; c < VW / WV; ++c) {
      const Vector<W> v = load_vector(w + e + c * WV);
      for (int i = 0; i < WV; ++i) out[c * WV + i] = to_acc<Acc>(v.e[i]) + offset;
    }
  } else {
    for (int i = 0; i < VW; ++i) out[i] = to_acc<Acc>(w[kVec ? e + i : walk_offset(inner, t, e + i)]) + offset;
  }
}

// The weight as the norm applies it at e..: w, 1 + w (Gemma), or 1 when there is none.
template <bool kVec, int VW, class W, class Acc, int NT>
__device__ __forceinline__ void load_weight(const W* w, const Walk<NT>& inner, int t, int64 e, Acc offset,
                                            Acc (&out)[VW]) {
  if (w) {
    load_inner<kVec>(w, inner, t, e, offset, out);
  } else {
    for (int i = 0; i < VW; ++i) out[i] = Acc(1);
  }
}

// Row `row`'s offset in slot t, inline: a call to walk_offset, once a row, made the compiler save
// registers around it and spill the held rows to local memory.
template <int NT>
__device__ __forceinline__ int64 row_offset(const Walk<NT>& w, int t, int64 row) {
  return walk_offset_inline(w, t, row);
}

// A row's threads: their number, the rows of a block, and their sum (the same on each of the row's
// threads, in a fixed order: lanes by butterfly within the row, then block_sum's warps).
template <int kRowThreads, int kRows>
struct RowGroup {
  static constexpr int kThreads = kRowThreads * kRows;
  static_assert(kRows == 1 || kRowThreads <= 32, "rows longer than a warp take a block each");
  __device__ __forceinline__ static int group() { return kRows == 1 ? 0 : static_cast<int>(threadIdx.x) / kRowThreads; }
  __device__ __forceinline__ static int lane() {
    return kRows == 1 ? static_cast<int>(threadIdx.x) : static_cast<int>(threadIdx.x) % kRowThreads;
  }
  template <class Acc, int N>
  __device__ __forceinline__ static void sum(Acc (&v)[N], Acc* shared) {
    if constexpr (kRowThreads > 32) {
      block_sum(v, shared);
    } else {
      for (int o = kRowThreads / 2; o > 0; o >>= 1)
        for (int i = 0; i < N; ++i) v[i] += __shfl_xor_sync(0xffffffffu, v[i], o);
    }
  }
};

// Blocks an SM is planned for: 1024 threads at 64 registers (the held values fit; a bound that
// left fewer spilled them to local memory: bench/NOTES.md).
template <int kThreads>
inline constexpr int kNormMinBlocks = kThreads >= 1024 ? 1 : 1024 / kThreads;

// (copy_async_16 and its waits: cuda/device/common.cuh. The staged forward's thread reads back only
// the slots it copied itself, so no barrier is needed between the copy and the read.)

// Held, vectorized forwards run on a grid of the blocks the GPU holds at once, each taking rows
// gridDim.x * kRows apart; with kStages > 0 the block's next kStages rows' vectors (x, and the
// residual) are copied to shared memory while this row is reduced and written, so a block always
// has loads in flight (without it, the loads waited for each row's reductions: bench/NOTES.md).
// Shared memory: kThreads * kHeld 16-byte slots a staged tensor and stage (cuda/norm.cpp's
// copy_slot_bytes).
template <class T, class W, bool kRms, bool kAdd, int kStages, bool kVec, int kHeld, int kRowThreads, int kRows>
__global__ void __launch_bounds__(kRowThreads* kRows, kNormMinBlocks<kRowThreads * kRows>)
    norm_forward(const __grid_constant__ NormForwardParams p) {
  using Acc = acc_t<T>;
  using Row = RowAccess<T, kVec>;
  using Group = RowGroup<kRowThreads, kRows>;
  using Raw = typename Row::Raw;
  constexpr int VW = Row::VW;
  constexpr bool kStaged = kStages > 0;
  static_assert(!kStaged || (kVec && kHeld > 0), "staged rows are held 16-byte vectors");
  constexpr int kTensors = kAdd ? 2 : 1;
  __shared__ Acc shared[32];
  extern __shared__ __align__(16) unsigned char copy_slots[];
  // Slot k of this thread in tensor slot t (0: x, 1: residual) of a stage.
  auto copy_slot = [&](int stage, int t, int k) {
    return reinterpret_cast<Raw*>(copy_slots) + ((stage * kTensors + t) * kHeld + k) * Group::kThreads + threadIdx.x;
  };
  const int64 vectors = p.n / VW;  // kVec: the host checked n % VW == 0
  // (An empty row's statistics: mean 0, variance 0.)
  const Acc n = static_cast<Acc>(p.n > 0 ? p.n : 1), eps = static_cast<Acc>(p.eps);
  const Acc offset = static_cast<Acc>(p.weight_offset);
  const W* weight = static_cast<const W*>(p.weight);
  const W* bias = static_cast<const W*>(p.bias);
  const int lane = Group::lane();
  const int64 stride = static_cast<int64>(gridDim.x) * kRows;
  // The copies of the row group's row in the block's rows from `first` into a stage (none past the
  // last row; a group committed all the same, so that every row waits for the same count).
  auto prefetch = [&](int64 first, int stage) {
    const int64 row = first + Group::group();
    if (row < p.rows) {
      const T* x = static_cast<const T*>(p.x) + row_offset(p.row, kX, row);
      const T* residual = kAdd ? static_cast<const T*>(p.residual) + row_offset(p.row, kResidual, row) : nullptr;
      for (int k = 0; k < kHeld; ++k) {
        const int64 v = lane + static_cast<int64>(k) * kRowThreads;
        if (v < vectors) {
          copy_async_16(copy_slot(stage, 0, k), x + v * VW);
          if constexpr (kAdd) copy_async_16(copy_slot(stage, 1, k), residual + v * VW);
        }
      }
    }
    copy_async_commit();
  };
  if constexpr (kStaged)
    for (int s = 0; s < kStages; ++s) prefetch(static_cast<int64>(blockIdx.x) * kRows + s * stride, s);
  // Every thread of the block runs every iteration (the sums' shuffles and barriers); a row group
  // past the last row loads and stores nothing.
  int stage = 0;
  for (int64 first = static_cast<int64>(blockIdx.x) * kRows; first < p.rows; first += stride) {
    const int64 row = first + Group::group();
    const bool live = row < p.rows;
    const int64 r = live ? row : first;
    const T* x = static_cast<const T*>(p.x) + row_offset(p.row, kX, r);
    const T* residual = kAdd ? static_cast<const T*>(p.residual) + row_offset(p.row, kResidual, r) : nullptr;
    T* y = static_cast<T*>(p.y) + row_offset(p.row, kY, r);
    T* h = kAdd ? static_cast<T*>(p.h) + row_offset(p.row, kH, r) : nullptr;
    // h from x and the residual: x + residual rounded to T (written to h on the first pass).
    auto combine = [&](int64 v, Raw out, const Raw& res, bool write_h) {
      for (int i = 0; i < VW; ++i)
        out.e[i] = round_to<T>(Row::template value<Acc>(out, i) + Row::template value<Acc>(res, i));
      if (write_h) Row::store(h, p.inner, kH, v * VW, out);
      return out;
    };
    auto load_h = [&](int64 v, bool write_h) {
      const Raw out = Row::load(x, p.inner, kX, v * VW);
      if constexpr (kAdd) return combine(v, out, Row::load(residual, p.inner, kResidual, v * VW), write_h);
      return out;
    };
    auto mine = [&](int64 v) { return live && v < vectors; };
    // Pass 1: the sum (LayerNorm) or the sum of squares (RmsNorm).
    Acc sum[1] = {Acc(0)};
    auto add = [&](const Raw& e) {
      for (int i = 0; i < VW; ++i) {
        const Acc a = Row::template value<Acc>(e, i);
        sum[0] += kRms ? a * a : a;
      }
    };
    Raw held[kHeld > 0 ? kHeld : 1];
    if constexpr (kStaged) {
      copy_async_wait_pending<kStages - 1>();  // this row's stage, the oldest group
      for (int k = 0; k < kHeld; ++k) {
        const int64 v = lane + static_cast<int64>(k) * kRowThreads;
        if (mine(v))
          held[k] =
              kAdd ? combine(v, *copy_slot(stage, 0, k), *copy_slot(stage, 1, k), false) : *copy_slot(stage, 0, k);
      }
      // The row kStages ahead is copied into the stage just read before this row's reductions; h is
      // written after them.
      prefetch(first + kStages * stride, stage);
      stage = stage + 1 == kStages ? 0 : stage + 1;
      for (int k = 0; k < kHeld; ++k) {
        const int64 v = lane + static_cast<int64>(k) * kRowThreads;
        if (mine(v)) {
          if constexpr (kAdd) Row::store(h, p.inner, kH, v * VW, held[k]);
          add(held[k]);
        }
      }
    } else if constexpr (kHeld > 0) {
      for (int k = 0; k < kHeld; ++k) {
        const int64 v = lane + static_cast<int64>(k) * kRowThreads;
        if (mine(v)) {
          held[k] = load_h(v, true);
          add(held[k]);
        }
      }
    } else {
      for (int64 v = lane; mine(v); v += kRowThreads) add(load_h(v, true));
    }
    Group::sum(sum, shared);
    Acc mean = Acc(0), rstd;
    if constexpr (kRms) {
      rstd = reciprocal_sqrt(sum[0] / n + eps);
    } else {
      mean = sum[0] / n;
      Acc dev[1] = {Acc(0)};
      auto add_dev = [&](const Raw& e) {
        for (int i = 0; i < VW; ++i) {
          const Acc d = Row::template value<Acc>(e, i) - mean;
          dev[0] += d * d;
        }
      };
      if constexpr (kHeld > 0) {
        for (int k = 0; k < kHeld; ++k)
          if (mine(lane + static_cast<int64>(k) * kRowThreads)) add_dev(held[k]);
      } else {
        for (int64 v = lane; mine(v); v += kRowThreads) add_dev(load_h(v, false));
      }
      Group::sum(dev, shared);
      rstd = reciprocal_sqrt(dev[0] / n + eps);
    }
    if (live && lane == 0) {
      if (p.mean) static_cast<Acc*>(p.mean)[row_offset(p.row, kMean, row)] = mean;
      if (p.rstd) static_cast<Acc*>(p.rstd)[row_offset(p.row, kRstd, row)] = rstd;
    }
    // Pass 3: y = (h - mean) * rstd * w + b.
    auto write = [&](int64 v, const Raw& e) {
      Acc w[VW], out[VW];
      load_weight<kVec>(weight, p.inner, kWeight, v * VW, offset, w);
      for (int i = 0; i < VW; ++i) out[i] = (Row::template value<Acc>(e, i) - mean) * rstd * w[i];
      if (bias) {
        Acc b[VW];
        load_inner<kVec>(bias, p.inner, kBias, v * VW, Acc(0), b);
        for (int i = 0; i < VW; ++i) out[i] += b[i];
      }
      Row::store(y, p.inner, kY, v * VW, out);
    };
    if constexpr (kHeld > 0) {
      for (int k = 0; k < kHeld; ++k) {
        const int64 v = lane + static_cast<int64>(k) * kRowThreads;
        if (mine(v)) write(v, held[k]);
      }
    } else {
      for (int64 v = lane; mine(v); v += kRowThreads) write(v, load_h(v, false));
    }
  }
}

// A block's rows [chunk * rows_per_chunk, ...), kRows at a time: dx per row, and the chunk's
// partial dweight (sum of dy * xhat) and dbias (sum of dy) over its rows into the workspace: each
// row group's sums in row order, then the groups' in group order.
template <class T, class W, bool kRms, bool kVec, int kHeld, int kRowThreads, int kRows>
__global__ void __launch_bounds__(kRowThreads* kRows, kNormMinBlocks<kRowThreads * kRows>)
    norm_backward(const __grid_constant__ NormBackwardParams p) {
  using Acc = acc_t<T>;
  using Row = RowAccess<T, kVec>;
  using Group = RowGroup<kRowThreads, kRows>;
  constexpr int VW = Row::VW;
  static_assert(kRows == 1 || kHeld > 0, "rows sharing a block are held");
  __shared__ Acc shared[64];
  // The row groups' partials, gathered to be added in group order (kRows > 1: short rows).
  __shared__ Acc staged[kRows > 1 ? 2 * Group::kThreads * kHeld * VW : 1];
  const int64 vectors = p.n / VW;
  const Acc n = static_cast<Acc>(p.n), offset = static_cast<Acc>(p.weight_offset);
  const W* weight = static_cast<const W*>(p.weight);
  const int64 first = static_cast<int64>(blockIdx.x) * p.rows_per_chunk;
  const int64 last = first + p.rows_per_chunk < p.rows ? first + p.rows_per_chunk : p.rows;
  Acc* pdw = static_cast<Acc*>(p.partial) + static_cast<int64>(blockIdx.x) * p.n;
  Acc* pdb = static_cast<Acc*>(p.partial) + (static_cast<int64>(gridDim.x) + blockIdx.x) * p.n;
  const bool partials = p.want_dweight || p.want_dbias;
  const int lane = Group::lane();
  using Raw = typename Row::Raw;
  // (RmsNorm has no bias: no db registers.)
  Acc dw[kHeld > 0 ? kHeld : 1][VW] = {}, db[kHeld > 0 && !kRms ? kHeld : 1][VW] = {};
  for (int64 base = first; base < last; base += kRows) {
    const int64 row = base + Group::group();
    const bool live = row < last;
    const int64 r = live ? row : base;
    const T* dy = static_cast<const T*>(p.dy) + row_offset(p.row, kDy, r);
    const T* h = static_cast<const T*>(p.h) + row_offset(p.row, kXSaved, r);
    const T* dh = p.dh ? static_cast<const T*>(p.dh) + row_offset(p.row, kDh, r) : nullptr;
    T* dx = p.dx ? static_cast<T*>(p.dx) + row_offset(p.row, kDx, r) : nullptr;
    const Acc mean = p.mean ? static_cast<const Acc*>(p.mean)[row_offset(p.row, kMean, r)] : Acc(0);
    const Acc rstd = static_cast<const Acc*>(p.rstd)[row_offset(p.row, kRstd, r)];
    auto mine = [&](int64 v) { return live && v < vectors; };
    // xhat at element i of a vector of h.
    auto xhat_of = [&](const Raw& hv, int i) { return (Row::template value<Acc>(hv, i) - mean) * rstd; };
    Raw held_dy[kHeld > 0 ? kHeld : 1], held_h[kHeld > 0 ? kHeld : 1];
    Acc sums[2] = {Acc(0), Acc(0)};  // sum(g * xhat), sum(g), g = dy * w
    auto accumulate = [&](int64 v, const Raw& d, const Raw& hv) {
      Acc w[VW];
      load_weight<kVec>(weight, p.inner, kWeight, v * VW, offset, w);
      for (int i = 0; i < VW; ++i) {
        const Acc g = Row::template value<Acc>(d, i) * w[i];
        sums[0] += g * xhat_of(hv, i);
        sums[1] += g;
      }
    };
    if constexpr (kHeld > 0) {
      for (int k = 0; k < kHeld; ++k) {
        const int64 v = lane + static_cast<int64>(k) * kRowThreads;
        if (mine(v)) {
          held_dy[k] = Row::load(dy, p.inner, kDy, v * VW);
          held_h[k] = Row::load(h, p.inner, kXSaved, v * VW);
          accumulate(v, held_dy[k], held_h[k]);
        }
      }
    } else {
      for (int64 v = lane; mine(v); v += kRowThreads)
        accumulate(v, Row::load(dy, p.inner, kDy, v * VW), Row::load(h, p.inner, kXSaved, v * VW));
    }
    Group::sum(sums, shared);
    const Acc a = sums[0] / n, b = kRms ? Acc(0) : sums[1] / n;
    // dx = rstd (g - b - xhat a) [+ dh]; the partials gather dy xhat and dy.
    auto finish = [&](int64 v, const Raw& d, const Raw& hv, Acc(&pw)[VW], Acc(&pb)[VW], bool first_row) {
      if (dx) {
        Acc out[VW], w[VW];
        load_weight<kVec>(weight, p.inner, kWeight, v * VW, offset, w);
        for (int i = 0; i < VW; ++i) out[i] = rstd * (Row::template value<Acc>(d, i) * w[i] - b - xhat_of(hv, i) * a);
        if (dh) {
          const Raw skip = Row::load(dh, p.inner, kDh, v * VW);
          for (int i = 0; i < VW; ++i) out[i] += Row::template value<Acc>(skip, i);
        }
        Row::store(dx, p.inner, kDx, v * VW, out);
      }
      for (int i = 0; i < VW; ++i) {
        pw[i] = (first_row ? Acc(0) : pw[i]) + Row::template value<Acc>(d, i) * xhat_of(hv, i);
        pb[i] = (first_row ? Acc(0) : pb[i]) + Row::template value<Acc>(d, i);
      }
    };
    if constexpr (kHeld > 0) {
      for (int k = 0; k < kHeld; ++k) {
        const int64 v = lane + static_cast<int64>(k) * kRowThreads;
        if (mine(v)) finish(v, held_dy[k], held_h[k], dw[k], db[kRms ? 0 : k], false);
      }
    } else {
      for (int64 v = lane; mine(v); v += kRowThreads) {
        Acc pw[VW], pb[VW];
        if (partials && row != first)
          for (int i = 0; i < VW; ++i) {
            pw[i] = pdw[v * VW + i];
            pb[i] = pdb[v * VW + i];
          }
        finish(v, Row::load(dy, p.inner, kDy, v * VW), Row::load(h, p.inner, kXSaved, v * VW), pw, pb, row == first);
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
    // A group's partial of element j: (staged when rows share the block) then the block's.
    Acc* const to_w = kRows > 1 ? staged + Group::group() * p.n : pdw;
    Acc* const to_b = kRows > 1 ? staged + (kRows + Group::group()) * p.n : pdb;
    for (int k = 0; k < kHeld; ++k) {
      const int64 v = lane + static_cast<int64>(k) * kRowThreads;
      if (v < vectors)
        for (int i = 0; i < VW; ++i) {
          to_w[v * VW + i] = dw[k][i];
          to_b[v * VW + i] = kRms ? Acc(0) : db[k][i];
        }
    }
    if constexpr (kRows > 1) {
      __syncthreads();
      for (int64 e = threadIdx.x; e < p.n; e += Group::kThreads) {
        Acc sw = Acc(0), sb = Acc(0);
        for (int g = 0; g < kRows; ++g) {
          sw += staged[g * p.n + e];
          sb += staged[(kRows + g) * p.n + e];
        }
        if (p.want_dweight) pdw[e] = sw;
        if (p.want_dbias) pdb[e] = sb;
      }
    }
  } else if (first >= last) {  // a chunk with no row adds nothing
    for (int64 e = threadIdx.x; e < p.n; e += blockDim.x) {
      if (p.want_dweight) pdw[e] = Acc(0);
      if (p.want_dbias) pdb[e] = Acc(0);
    }
  }
}

// dweight and dbias: each column's chunk partials added in a fixed order. A block takes 32 columns
// at a time; its 32 warps add every 32nd chunk each (coalesced rows of 32 columns), then warp 0
// adds the warps' sums in order (dweight) and warp 1 the same for dbias.
template <class T, class W>
__global__ void __launch_bounds__(1024) norm_finalize(const __grid_constant__ NormFinalizeParams p) {
  using Acc = acc_t<T>;
  __shared__ Acc part[2][32][33];
  const Acc* partial = static_cast<const Acc*>(p.partial);
  const int column = threadIdx.x & 31, slice = threadIdx.x >> 5;
  for (int64 tile = blockIdx.x; tile * 32 < p.n; tile += gridDim.x) {
    const int64 e = tile * 32 + column;
    Acc sw = Acc(0), sb = Acc(0);
    if (e < p.n) {
      for (int64 c = slice; c < p.chunks; c += 32) {
        if (p.dweight) sw += partial[c * p.n + e];
        if (p.dbias) sb += partial[(p.chunks + c) * p.n + e];
      }
    }
    part[0][slice][column] = sw;
    part[1][slice][column] = sb;
    __syncthreads();
    if (slice < 2 && e < p.n) {
      Acc s = Acc(0);
      for (int k = 0; k < 32; ++k) s += part[slice][k][column];
      if (slice == 0 && p.dweight) static_cast<W*>(p.dweight)[walk_offset(p.inner, 0, e)] = round_to<W>(s);
      if (slice == 1 && p.dbias) static_cast<W*>(p.dbias)[walk_offset(p.inner, 1, e)] = round_to<W>(s);
    }
    __syncthreads();
  }
}

}  // namespace baracuda::device

#pragma once
// CUDA kernels of the softmax family, compiled at select (NVRTC; cuda/softmax.cpp launches them;
// which variant runs which shape: ops/softmax_problem.hpp). One row's partial is the fold of its
// elements' (common/softmax_math.hpp), reduced over the threads that hold the row by
// common/reduce.cuh: fixed trees, so every run gives the same bits.
//   warp_row, block_row, cluster_row: a row held in registers by a group (`lanes` threads of a warp,
//     a block, or a cluster of blocks): x read once, y written once. The group's threads take the
//     row's 16-byte vectors in turn (chunk c of thread k is vector c * group + k), so each load
//     instruction of a warp is contiguous.
//   split_row: pieces of split_length elements of a row, a block each, in two kernels: one folds
//     each piece's partial into the workspace, the next folds its row's partials in a fixed tree and
//     writes the piece, reading it again.
//   outer: dim is not innermost: each thread owns a vector of neighbouring columns (the problem's
//     rows, contiguous in memory) and `slices` threads per column walk dim in turn; their partials
//     fold in a fixed tree in shared memory (and, when a cluster shares a tile of columns, across
//     its blocks in rank order); then each walks its positions again to write them.
//   pass_row: the multi-pass forward (sparsemax, entmax15) of a row no group holds, or along a dim
//     that is not innermost: a block per row reads it from memory once per pass of its solve.
// The held variants run the multi-pass forward too: each pass of its solve folds the registers.
// Views whose accesses cannot be 16-byte vectors (ops/softmax.cpp, `vectorizable`) run the same
// kernels one element at a time, along any strides.
#include "cuda/common/reduce.cuh"
#include "cuda/common/vector.cuh"
#include "ops/softmax_problem.hpp"

namespace baracuda::detail::cuda::softmax {

// (the host launcher reads both: ops/softmax_problem.hpp)
template <class Math, class Load, class Store>
using Types = SoftmaxTypes<Math, Load, Store>;
using Args = SoftmaxKernelArgs;

template <class Math>
struct Combine {
  __device__ __forceinline__ typename Math::Partial operator()(const typename Math::Partial& a,
                                                               const typename Math::Partial& b) const {
    return Math::combine(a, b);
  }
};

// V elements from position p of a line with step `stride` (elements at or past `limit` read as
// `fill`): 16-byte loads where the vector is whole when kVectors (unit stride, aligned vectors:
// Args::vectorized, a template argument of held_rows and the split kernels so that the strided
// form's addressing costs the vector form no registers: the f32 warp rows spilled several times
// more with both forms in one kernel; bench/NOTES.md), else one element at a time.
template <int V, bool kVectors, class T, class A, class I>
__device__ __forceinline__ void load_vector(const T* line, int64_t stride, I p, I limit, A fill, A* out) {
  constexpr int kPer = Vec16<T>::kSize;
  if constexpr (kVectors) {
    if (p + V <= limit) {
#pragma unroll
      for (int k = 0; k < V / kPer; ++k) {
        const Vec16<T> raw = load16(line + p + k * kPer);
#pragma unroll
        for (int j = 0; j < kPer; ++j) out[k * kPer + j] = static_cast<A>(raw.v[j]);
      }
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) out[j] = p + j < limit ? static_cast<A>(line[p + j]) : fill;
    }
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] = p + j < limit ? static_cast<A>(line[(p + j) * stride]) : fill;
  }
}
template <int V, bool kVectors, class T, class A, class I>
__device__ __forceinline__ void store_vector(T* line, int64_t stride, I p, I limit, const A* v) {
  constexpr int kPer = Vec16<T>::kSize;
  if constexpr (kVectors) {
    if (p + V <= limit) {
#pragma unroll
      for (int k = 0; k < V / kPer; ++k) {
        Vec16<T> raw;
#pragma unroll
        for (int j = 0; j < kPer; ++j) raw.v[j] = static_cast<T>(v[k * kPer + j]);
        store16(line + p + k * kPer, raw);
      }
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (p + j < limit) line[p + j] = static_cast<T>(v[j]);
    }
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (p + j < limit) line[(p + j) * stride] = static_cast<T>(v[j]);
  }
}
// The same with the access chosen at run time.
template <int V, class T, class A>
__device__ __forceinline__ void load_vector(const T* line, int64_t stride, int64_t p, int64_t limit, bool vectorized,
                                            A fill, A* out) {
  if (vectorized)
    load_vector<V, true>(line, stride, p, limit, fill, out);
  else
    load_vector<V, false>(line, stride, p, limit, fill, out);
}
template <int V, class T, class A>
__device__ __forceinline__ void store_vector(T* line, int64_t stride, int64_t p, int64_t limit, bool vectorized,
                                             const A* v) {
  if (vectorized)
    store_vector<V, true>(line, stride, p, limit, v);
  else
    store_vector<V, false>(line, stride, p, limit, v);
}

// The kColumns neighbouring values at position l of a line of columns (fill at or past `length`):
// one or two 16-byte loads when kColumns makes a vector, else one element.
template <int kColumns, class Math, class T>
__device__ __forceinline__ void load_columns(const T* line, int64_t stride, int64_t l, int64_t length,
                                             typename Math::Value* out) {
  load_vector<kColumns>(line + (l < length ? l * stride : 0), 1, 0, l < length ? kColumns : 0, kColumns > 1,
                        Math::fill(), out);
}

// The outputs of V positions whose inputs are v[t][first .. first + V).
template <int V, class Math, int N>
__device__ __forceinline__ void outputs(const typename Math::Writer& w,
                                        const typename Math::Value (&v)[Math::kInputs][N], int first,
                                        typename Math::Value (&o)[V]) {
#pragma unroll
  for (int j = 0; j < V; ++j) {
    typename Math::Value e[Math::kInputs];
#pragma unroll
    for (int t = 0; t < Math::kInputs; ++t) e[t] = v[t][first + j];
    o[j] = w(e);
  }
}

// The multi-pass forward's Fold (common/softmax_math.hpp) over a group of threads: each folds the
// values `each` hands it, then the group reduces (the Scratch of the math's widest partial serves
// every partial type of its solve). Every thread of the group ends with the same bits, so they all
// take the same number of passes.
template <ReduceScope kScope, class Scratch, class Each>
struct GroupFold {
  Each each;  // each(f): f(value) for every value of the row this thread holds or reads
  Scratch& scratch;
  int width;
  template <class P, class Element, class Combine>
  __device__ __forceinline__ P operator()(P identity, Element element, Combine combine) const {
    static_assert(sizeof(ReduceScratch<P>) <= sizeof(Scratch) && alignof(ReduceScratch<P>) <= alignof(Scratch));
    P acc = identity;
    each([&](auto value) { element(acc, value); });
    return group_allreduce<kScope>(acc, combine, identity, reinterpret_cast<ReduceScratch<P>&>(scratch), width);
  }
  // The rows of a warp's groups share its shuffles: one goes on while any does.
  __device__ __forceinline__ bool any(bool p) const {
    if constexpr (kScope == ReduceScope::warp) return __any_sync(0xffffffffu, p);
    return p;
  }
};
template <ReduceScope kScope, class Scratch, class Each>
__device__ __forceinline__ GroupFold<kScope, Scratch, Each> group_fold(Each each, Scratch& scratch, int width) {
  return {each, scratch, width};
}

// A Writer applied to each held element in turn (the maths without a held form of their own).
template <class Math, class Writer>
struct EachElement {
  Writer w;
  template <int N>
  __device__ __forceinline__ void apply(typename Math::Value (&v)[Math::kInputs][N]) const {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      typename Math::Value e[Math::kInputs];
#pragma unroll
      for (int t = 0; t < Math::kInputs; ++t) e[t] = v[t][i];
      v[0][i] = w(e);
    }
  }
};
template <class Math, class Writer>
__device__ __forceinline__ EachElement<Math, Writer> each_element(Writer w) {
  return {w};
}

// Whether the math has a held form (hold() and held_writer(): common/softmax_math.hpp).
template <class Math>
concept HoldsRows = requires(const Math& m, typename Math::Value (&v)[Math::kInputs][1], typename Math::Partial p) {
  m.hold(v);
  m.held_writer(p, p);
};

// The partial of the values this thread holds (which a math with a held form may transform).
template <class Math, int N>
__device__ __forceinline__ typename Math::Partial held_partial(const Math& math,
                                                               typename Math::Value (&v)[Math::kInputs][N]) {
  if constexpr (HoldsRows<Math>)
    return math.hold(v);
  else
    return math.partial(v);
}
// What writes the outputs in place of the held values, from the row's total and this thread's partial.
template <class Math>
__device__ __forceinline__ auto held_output(const Math& math, const typename Math::Partial& total,
                                            const typename Math::Partial& local) {
  if constexpr (HoldsRows<Math>)
    return math.held_writer(total, local);
  else
    return each_element<Math>(math.writer(total));
}

// The outputs of the row this thread holds, in place of its values (v[0]): one reduction of
// partials, or the math's solve.
template <ReduceScope kScope, class Math, int N>
__device__ __forceinline__ void held_outputs(const Math& math, typename Math::Value (&v)[Math::kInputs][N],
                                             ReduceScratch<typename Math::Partial>& scratch, int group) {
  if constexpr (Math::kIterative) {
    auto each = [&](auto f) {
#pragma unroll
      for (int i = 0; i < N; ++i) f(v[0][i]);
    };
    // Counts as A: a held row is far below 2^24 elements.
    each_element<Math>(math.template solve<typename Math::Value>(group_fold<kScope>(each, scratch, group))).apply(v);
  } else {
    const typename Math::Partial local = held_partial(math, v);
    held_output(math, group_allreduce<kScope>(local, Combine<Math>{}, Math::identity(), scratch, group), local)
        .apply(v);
  }
}

// ---------------------------------------------------------------------------------------------
// warp_row, block_row, cluster_row

// Warp rows: without a floor on resident blocks the compiler spent registers enough to leave a
// handful of warps an SM, and the rows ran far below copy; the floor of 8 was the fastest of those
// measured (bench/NOTES.md).
inline constexpr int kWarpRowMinBlocks = 8;
// The multi-pass forward keeps its search's state beside the row: at a floor of 8 blocks its rows
// of 32 values a thread spilled.
template <class Math>
inline constexpr int kWarpMinBlocks = Math::kIterative ? 4 : kWarpRowMinBlocks;

template <class Math, class Load, class Store, int kChunks, ReduceScope kScope, bool kVectors>
__global__ void __launch_bounds__(kScope == ReduceScope::warp ? kWarpRowThreads : kMaxBlockThreads,
                                  kScope == ReduceScope::warp ? kWarpMinBlocks<Math> : 1) held_rows(Args a) {
  using T = Types<Math, Load, Store>;
  using A = typename T::A;
  constexpr int V = T::kVector, kIn = T::kIn;
  __shared__ ReduceScratch<typename T::Partial> scratch;
  const Math math{a.kind};
  // The group of threads that holds a row, this thread's rank in it, and the rows it takes.
  int group = blockDim.x, rank = threadIdx.x;
  int64_t first = blockIdx.x, step = gridDim.x;
  if constexpr (kScope == ReduceScope::warp) {
    group = a.lanes;
    rank = threadIdx.x % a.lanes;
    const int rows_per_block = blockDim.x / a.lanes;
    first = int64_t(blockIdx.x) * rows_per_block;
    step = int64_t(gridDim.x) * rows_per_block;
  } else if constexpr (kScope == ReduceScope::cluster) {
    const int blocks = static_cast<int>(cluster_blocks());
    group = blockDim.x * blocks;
    rank = static_cast<int>(cluster_block_rank()) * blockDim.x + threadIdx.x;
    first = blockIdx.x / blocks;
    step = gridDim.x / blocks;
  }
  const Load* in[2] = {static_cast<const Load*>(a.in[0]), static_cast<const Load*>(a.in[1])};
  Store* out = static_cast<Store*>(a.out);
  for (int64_t first_row = first; first_row < a.rows; first_row += step) {
    // A warp's last groups may have no row left: they load nothing but still take part in shuffles.
    const int64_t row = first_row + (kScope == ReduceScope::warp ? threadIdx.x / group : 0);
    // Positions in 32 bits: a held row is at most held_capacity() elements.
    const int length = row < a.rows ? static_cast<int>(a.length) : 0;
    int64_t base[kSoftmaxTensors] = {};
    if (length > 0) a.walk.offsets(row, base);
    A v[kIn][kChunks * V];
    if constexpr (kVectors && sizeof(Load) < sizeof(A)) {
      // 16-bit loads: every whole vector's load first, then the conversions. A conversion after each
      // load (and a branch around it) kept the next load from issuing: more instructions and slower
      // block and cluster rows. Not for f32: its held warp rows then spilled more and ran slower
      // (bench/NOTES.md).
      constexpr int kPer = Vec16<Load>::kSize, kRaw = V / kPer;
      Vec16<Load> raw[kIn][kChunks][kRaw];
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int p = (c * group + rank) * V;
#pragma unroll
        for (int t = 0; t < kIn; ++t)
#pragma unroll
          for (int k = 0; k < kRaw; ++k)
            raw[t][c][k] = p + V <= length ? load16(in[t] + base[t] + p + k * kPer) : Vec16<Load>{};
      }
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int p = (c * group + rank) * V;
#pragma unroll
        for (int t = 0; t < kIn; ++t) {
          if (p + V <= length) {
#pragma unroll
            for (int k = 0; k < kRaw; ++k)
#pragma unroll
              for (int j = 0; j < kPer; ++j) v[t][c * V + k * kPer + j] = static_cast<A>(raw[t][c][k].v[j]);
          } else {  // the row's last, partial vector, or past its end
            load_vector<V, true>(in[t] + base[t], 1, p, length, Math::fill(), &v[t][c * V]);
          }
        }
      }
    } else {
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int p = (c * group + rank) * V;
#pragma unroll
        for (int t = 0; t < kIn; ++t)
          load_vector<V, kVectors>(in[t] + base[t], a.stride[t], p, length, Math::fill(), &v[t][c * V]);
      }
    }
    held_outputs<kScope>(math, v, scratch, group);
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      store_vector<V, kVectors>(out + base[2], a.stride[2], (c * group + rank) * V, length, &v[0][c * V]);
  }
}

// ---------------------------------------------------------------------------------------------
// split_row: a row no group holds, in pieces of split_length elements, a block each, in two kernels:
// split_partials folds each piece into the workspace (one partial a piece); split_write folds its
// row's partials (a fixed tree: the same bits every run, and in every block of the row) and writes
// its piece, reading it again. 3n elements moved for the held rows' 2n; the one kernel it replaced
// held the pieces in registers and waited for each row's others, and ran far below copy (rows
// completed in a convoy, each waiting for blocks still on older rows; bench/NOTES.md). split_write
// takes the pieces in reverse order: the last ones split_partials read are still in L2.

// f(row, begin, end) for the pieces this block takes, in order or in reverse.
template <bool kReverse, class F>
__device__ __forceinline__ void for_each_piece(const Args& a, F&& f) {
  const int64_t pieces = a.rows * a.splits;
  for (int64_t t = blockIdx.x; t < pieces; t += gridDim.x) {
    const int64_t ticket = kReverse ? pieces - 1 - t : t;
    const int64_t row = ticket / a.splits, begin = ticket % a.splits * a.split_length;
    f(row, begin, begin + a.split_length < a.length ? begin + a.split_length : a.length);
  }
}

// Vectors of each input a thread of the split kernels loads at once: about 32 values in flight (8
// along a stride, whose 64-bit addresses spilled at 32).
template <class Math, int V, bool kVectors>
inline constexpr int kSplitUnroll =
    std::clamp((kVectors ? 32 : 8) / (V * Math::kInputs * static_cast<int>(sizeof(typename Math::Value) / 4)), 1, 8);

// f(v, p, step) for the vectors of [begin, end) this thread takes, kSplitUnroll at a time: thread k
// takes vectors k, k + blockDim.x, ..., so that each load instruction of a warp is contiguous;
// v[t][u * V + j] is input t's element p + u * step + j (fill past end).
template <class Math, class Load, class Store, bool kVectors, class F>
__device__ __forceinline__ void each_span(const Args& a, const Load* const (&in)[2],
                                          const int64_t (&base)[kSoftmaxTensors], int64_t begin, int64_t end, F&& f) {
  using A = typename Math::Value;
  constexpr int kIn = Math::kInputs, V = Types<Math, Load, Store>::kVector, U = kSplitUnroll<Math, V, kVectors>;
  constexpr int kPer = Vec16<Load>::kSize, kRaw = V / kPer;
  const int64_t step = int64_t(blockDim.x) * V;
  for (int64_t p = begin + int64_t(threadIdx.x) * V; p < end; p += U * step) {
    A v[kIn][U * V];
    if (kVectors && p + (U - 1) * step + V <= end) {
      // Every load first, then the conversions (a branch and a conversion after each load kept the
      // next from issuing: see held_rows).
      Vec16<Load> raw[kIn][U][kRaw];
#pragma unroll
      for (int t = 0; t < kIn; ++t)
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int k = 0; k < kRaw; ++k) raw[t][u][k] = load16(in[t] + base[t] + p + u * step + k * kPer);
#pragma unroll
      for (int t = 0; t < kIn; ++t)
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int k = 0; k < kRaw; ++k)
#pragma unroll
            for (int j = 0; j < kPer; ++j) v[t][u * V + k * kPer + j] = static_cast<A>(raw[t][u][k].v[j]);
    } else {
#pragma unroll
      for (int t = 0; t < kIn; ++t)
#pragma unroll
        for (int u = 0; u < U; ++u)
          load_vector<V, kVectors>(in[t] + base[t], a.stride[t], p + u * step, end, Math::fill(), &v[t][u * V]);
    }
    f(v, p, step);
  }
}

template <class Math, class Load, class Store, bool kVectors>
__global__ void __launch_bounds__(kSplitThreads, kSplitMinBlocks) split_partials(Args a) {
  using Partial = typename Math::Partial;
  __shared__ ReduceScratch<Partial> scratch;
  const Math math{a.kind};
  const Load* const in[2] = {static_cast<const Load*>(a.in[0]), static_cast<const Load*>(a.in[1])};
  for_each_piece<false>(a, [&](int64_t row, int64_t begin, int64_t end) {
    int64_t base[kSoftmaxTensors];
    a.walk.offsets(row, base);
    Partial local = Math::identity();
    each_span<Math, Load, Store, kVectors>(a, in, base, begin, end, [&](const auto& v, int64_t, int64_t) {
      local = Math::combine(local, math.partial(v));
    });
    const Partial part = block_allreduce(local, Combine<Math>{}, Math::identity(), scratch);
    if (threadIdx.x == 0) static_cast<Partial*>(a.partials)[row * a.splits + begin / a.split_length] = part;
  });
}

template <class Math, class Load, class Store, bool kVectors>
__global__ void __launch_bounds__(kSplitThreads, kSplitMinBlocks) split_write(Args a) {
  using Partial = typename Math::Partial;
  constexpr int V = Types<Math, Load, Store>::kVector;
  __shared__ ReduceScratch<Partial> scratch;
  const Math math{a.kind};
  const Load* const in[2] = {static_cast<const Load*>(a.in[0]), static_cast<const Load*>(a.in[1])};
  Store* out = static_cast<Store*>(a.out);
  for_each_piece<true>(a, [&](int64_t row, int64_t begin, int64_t end) {
    int64_t base[kSoftmaxTensors];
    a.walk.offsets(row, base);
    const Partial* partials = static_cast<const Partial*>(a.partials) + row * a.splits;
    Partial total = Math::identity();
    for (int64_t s = threadIdx.x; s < a.splits; s += blockDim.x) total = Math::combine(total, partials[s]);
    const typename Math::Writer w = math.writer(block_allreduce(total, Combine<Math>{}, Math::identity(), scratch));
    each_span<Math, Load, Store, kVectors>(a, in, base, begin, end, [&](const auto& v, int64_t p, int64_t step) {
#pragma unroll
      for (int u = 0; u < kSplitUnroll<Math, V, kVectors>; ++u) {
        typename Math::Value o[V];
        outputs<V, Math>(w, v, u * V, o);
        store_vector<V, kVectors>(out + base[2], a.stride[2], p + u * step, end, o);
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------
// outer: kColumns neighbouring columns per thread (a 16-byte vector of them, or one when the views
// do not allow vectors). A tile of `lanes` column vectors is one block's, or one cluster's (sm_90,
// few tiles and a long dim): its blocks walk interleaved slices of dim and fold their partials
// through distributed shared memory.

template <class Math, class Load, class Store, int kColumns>
__global__ void __launch_bounds__(kOuterThreads) outer_columns(Args a) {
  using T = Types<Math, Load, Store>;
  using A = typename T::A;
  using Partial = typename T::Partial;
  // Positions along dim loaded at once: about 32 values of each thread in flight.
  constexpr int kIn = T::kIn, U = std::clamp(32 / (kColumns * kIn), 2, 8);
  constexpr bool kVectors = kColumns > 1;
  __shared__ Partial scratch[kOuterThreads][kColumns];
  const Math math{a.kind};
  const Load* in[2] = {static_cast<const Load*>(a.in[0]), static_cast<const Load*>(a.in[1])};
  Store* out = static_cast<Store*>(a.out);
  const int lanes = a.lanes, slices = blockDim.x / a.lanes;
  const int lane = threadIdx.x % lanes, slice = threadIdx.x / lanes;
  const int blocks = static_cast<int>(cluster_blocks());
  // This thread's slice among the cluster's, and their count.
  const int64_t first = (int64_t(cluster_block_rank()) * slices + slice) * U, step = int64_t(blocks) * slices * U;
  const int64_t units = ceil_div(a.rows, kColumns), tiles = ceil_div(units, lanes);
  for (int64_t tile = blockIdx.x / blocks; tile < tiles; tile += gridDim.x / blocks) {
    const int64_t unit = tile * lanes + lane;
    const bool active = unit < units;
    int64_t base[kSoftmaxTensors] = {};
    if (active) a.walk.offsets(unit * kColumns, base);

    Partial part[kColumns];
#pragma unroll
    for (int j = 0; j < kColumns; ++j) part[j] = Math::identity();
    for (int64_t l0 = first; l0 < a.length; l0 += step) {
      A v[kIn][U][kColumns];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int t = 0; t < kIn; ++t)
          load_columns<kColumns, Math>(in[t] + base[t], a.stride[t], l0 + u, active ? a.length : 0, v[t][u]);
#pragma unroll
      for (int j = 0; j < kColumns; ++j) {
        A column[kIn][U];
#pragma unroll
        for (int t = 0; t < kIn; ++t)
#pragma unroll
          for (int u = 0; u < U; ++u) column[t][u] = v[t][u][j];
        part[j] = Math::combine(part[j], math.partial(column));
      }
    }
    // The block's slices of each column fold in a fixed tree, then the cluster's blocks in rank order.
#pragma unroll
    for (int j = 0; j < kColumns; ++j) scratch[threadIdx.x][j] = part[j];
    __syncthreads();
    for (int half = slices / 2; half > 0; half /= 2) {
      if (slice < half)
#pragma unroll
        for (int j = 0; j < kColumns; ++j)
          scratch[threadIdx.x][j] = Math::combine(scratch[threadIdx.x][j], scratch[threadIdx.x + half * lanes][j]);
      __syncthreads();
    }
    cluster_sync();
    typename Math::Writer w[kColumns];
#pragma unroll
    for (int j = 0; j < kColumns; ++j) w[j] = math.writer(cluster_fold(&scratch[lane][j], Combine<Math>{}));
    cluster_sync();  // before the next tile's partials

    for (int64_t l0 = first; l0 < a.length; l0 += step) {
      A v[U][kIn][kColumns];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int t = 0; t < kIn; ++t)
          load_columns<kColumns, Math>(in[t] + base[t], a.stride[t], l0 + u, active ? a.length : 0, v[u][t]);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t l = l0 + u;
        A o[kColumns];
#pragma unroll
        for (int j = 0; j < kColumns; ++j) {
          A e[kIn];
#pragma unroll
          for (int t = 0; t < kIn; ++t) e[t] = v[u][t][j];
          o[j] = w[j](e);
        }
        if (active && l < a.length)
          store_vector<kColumns>(out + base[2] + l * a.stride[2], 1, 0, kColumns, kVectors, o);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// pass_row: block b takes rows b, b + gridDim.x, ...; its threads take the row's vectors in turn.

template <class Math, class Load, class Store>
__global__ void __launch_bounds__(kPassThreads) pass_rows(Args a) {
  using T = Types<Math, Load, Store>;
  using A = typename T::A;
  constexpr int V = T::kVector;
  __shared__ ReduceScratch<typename T::Partial> scratch;
  const Math math{a.kind};
  const Load* in = static_cast<const Load*>(a.in[0]);
  Store* out = static_cast<Store*>(a.out);
  const int64_t step = int64_t(blockDim.x) * V;
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    int64_t base[kSoftmaxTensors];
    a.walk.offsets(row, base);
    auto each = [&](auto f) {
      for (int64_t p = int64_t(threadIdx.x) * V; p < a.length; p += step) {
        A v[V];
        load_vector<V>(in + base[0], a.stride[0], p, a.length, a.vectorized, Math::fill(), v);
#pragma unroll
        for (int j = 0; j < V; ++j) f(v[j]);
      }
    };
    const typename Math::Writer w = math.solve(group_fold<ReduceScope::block>(each, scratch, 32));
    for (int64_t p = int64_t(threadIdx.x) * V; p < a.length; p += step) {
      A v[1][V], o[V];
      load_vector<V>(in + base[0], a.stride[0], p, a.length, a.vectorized, Math::fill(), v[0]);
      outputs<V, Math>(w, v, 0, o);
      store_vector<V>(out + base[2], a.stride[2], p, a.length, a.vectorized, o);
    }
  }
}

}  // namespace baracuda::detail::cuda::softmax

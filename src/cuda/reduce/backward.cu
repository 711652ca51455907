// Kernels of the reduction family's backward: the statistic of the kind (through the forward's
// kernels, into the workspace), then the map that writes every element of dx.
#include "cuda/reduce/kernels.cuh"
#include "ops/validate.hpp"

namespace baracuda::detail::cuda::reduce {
namespace {

constexpr int kMapVectors = 4;  // vectors per thread per block of the map

template <class Out, class A>
__device__ __forceinline__ A load_out(const void* base, int64_t off) {
  return base ? to_acc<A>(static_cast<const Out*>(base)[off]) : A(0);
}

__device__ __forceinline__ int64_t load_index(const ReduceProblem& p, int64_t off) {
  return p.indices ? detail::load_index(p.indices, p.index_dtype, off) : -1;
}

// What the map reads beside x at one element (or, along a line of one output, once per line).
template <class A>
struct MapInputs {
  A dout = 0, out = 0;
  GradStat<A> stat;
  int64_t index = -1;  // the element `indices` names (max, min)
};

template <class Out, class A>
__device__ __forceinline__ MapInputs<A> map_inputs(const ReduceProblem& p, const int64_t (&at)[kMapTensors]) {
  MapInputs<A> in;
  in.dout = load_out<Out, A>(p.dout, at[kMapDout]);
  in.out = load_out<Out, A>(p.out, at[kMapOut]);
  if (p.stats) in.stat = static_cast<const GradStat<A>*>(p.stats)[at[kMapStats]];
  in.index = load_index(p, at[kMapIndices]);
  return in;
}

// Each block takes a chunk of kReduceBlock x kMapVectors vectors of one line (the map's innermost
// dim): the line's offsets once, then the elements. With kVec, x and dx move in 16-byte vectors.
// Where the line is along the reduced dims (every output-shaped view steps 0 along it), what those
// views hold is read once per line.
template <class X, class Out, bool kVec, typename ReduceGrad<acc_t<X>>::Form kForm>
__global__ void __launch_bounds__(kReduceBlock)
    map_kernel(const ReduceProblem p, const ReduceGrad<acc_t<X>> grad, int64_t chunks, bool line_reduced) {
  using A = acc_t<X>;
  constexpr int V = kVec ? Vec16<X>::kSize : 1;
  const Walker<kMapTensors>& w = p.map;
  const int64_t inner = w.inner_size(), lines = w.numel() / inner;
  const X* x = static_cast<const X*>(p.x);
  X* dx = static_cast<X*>(p.dx);
  for (int64_t item = blockIdx.x; item < lines * chunks; item += gridDim.x) {
    const int64_t line = item / chunks, chunk = item % chunks;
    int64_t off[kMapTensors];
    w.offsets(line * inner, off);
    MapInputs<A> shared_in;
    if (line_reduced) shared_in = map_inputs<Out, A>(p, off);
#pragma unroll
    for (int u = 0; u < kMapVectors; ++u) {
      const int64_t i0 = (chunk * kMapVectors + u) * int64_t(kReduceBlock) * V + int64_t(threadIdx.x) * V;
      if (i0 >= inner) break;
      A xv[V];
      if constexpr (kVec) {
        Vec16<X> in{};
        if (x) in = load16(x + off[kMapX] + i0);
#pragma unroll
        for (int j = 0; j < V; ++j) xv[j] = to_acc<A>(in.v[j]);
      } else {
        xv[0] = x ? to_acc<A>(x[off[kMapX] + i0 * w.inner_stride(kMapX)]) : A(0);
      }
      Vec16<X> result;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const int64_t i = i0 + j;
        MapInputs<A> in = shared_in;
        if (!line_reduced) {
          int64_t at[kMapTensors];
#pragma unroll
          for (int t = 0; t < kMapTensors; ++t) at[t] = off[t] + i * w.inner_stride(t);
          in = map_inputs<Out, A>(p, at);
        }
        const bool mine = in.index == off[kMapReducedIndex] + i * w.inner_stride(kMapReducedIndex);
        result.v[j] = static_cast<X>(grad.template apply<kForm>(xv[j], in.dout, in.out, in.stat, mine));
      }
      if constexpr (kVec)
        store16(dx + off[kMapDx] + i0, result);
      else
        dx[off[kMapDx] + i0 * w.inner_stride(kMapDx)] = result.v[0];
    }
  }
}

// 16-byte accesses of x and dx: unit-stride along the line, whole vectors, aligned lines.
template <class X>
bool map_vectorizable(const ReduceProblem& p) {
  constexpr int V = Vec16<X>::kSize;
  const Walker<kMapTensors>& w = p.map;
  if (w.rank == 0 || w.inner_size() % V != 0 || !aligned16(p.dx) || (p.x && !aligned16(p.x))) return false;
  for (int t : {int(kMapX), int(kMapDx)}) {
    if ((t == kMapX && !p.x)) continue;
    if (w.inner_stride(t) != 1) return false;
    for (int k = 0; k + 1 < w.rank; ++k)
      if (w.strides[t][k] % V != 0) return false;
  }
  return true;
}

template <class X, class Out>
Status launch_map(const LaunchContext& ctx, const ReduceProblem& p) {
  using Grad = ReduceGrad<acc_t<X>>;
  const Grad grad(p.params);
  const bool vec = map_vectorizable<X>(p);
  const int64_t v = vec ? Vec16<X>::kSize : 1;
  const Walker<kMapTensors>& w = p.map;
  const int64_t inner = w.inner_size();
  const int64_t chunks = ceil_div(inner, int64_t(kReduceBlock) * kMapVectors * v);
  const int64_t items = w.numel() / inner * chunks;
  const unsigned blocks = capped_blocks(items, ctx.target.sm_count, 2048 / kReduceBlock * 8);
  bool line_reduced = w.rank > 0;
  for (int t : {int(kMapOut), int(kMapDout), int(kMapIndices), int(kMapStats)})
    line_reduced = line_reduced && w.inner_stride(t) == 0;
  return Grad::with_form(p.params.kind, [&](auto form) {
    constexpr auto kForm = decltype(form)::value;
    if (vec)
      map_kernel<X, Out, true, kForm><<<blocks, kReduceBlock, 0, native(ctx.stream)>>>(p, grad, chunks, line_reduced);
    else
      map_kernel<X, Out, false, kForm><<<blocks, kReduceBlock, 0, native(ctx.stream)>>>(p, grad, chunks, line_reduced);
    return last_launch_status("reduce_backward map");
  });
}

}  // namespace

Status launch_backward(const LaunchContext& ctx, const ReduceProblem& p) {
  if (p.has_stats) {
    Status s = dispatch_reduce<true, Half, BFloat16>(p, [&](auto x, auto math) {
      using Math = typename decltype(math)::type;
      return reduce_with<typename decltype(x)::type>(ctx, p, Math(p.params), StatsSink{});
    });
    if (!s) return s;
  }
  return dispatch_float<Half, BFloat16>(p.dtype, [&](auto x) {
    using X = typename decltype(x)::type;
    return p.out_dtype == p.dtype ? launch_map<X, X>(ctx, p) : launch_map<X, float>(ctx, p);
  });
}

}  // namespace baracuda::detail::cuda::reduce

#pragma once
// The CPU casts from one set of x's dtypes (floats, or integers and bool) to every dtype: the cast
// functor through the shared CPU elementwise launcher, or the tiled transpose below. cast_float.cpp and
// cast_integer.cpp instantiate one set each.
#include <algorithm>
#include <bit>
#include <cstring>

#include "cpu/elementwise.hpp"
#include "cpu/parallel.hpp"
#include "ops/copy_problem.hpp"

namespace baracuda::detail::cpu {

// The transpose path (x's unit-stride dim Q is not y's innermost P): tiles of kTransposeTile x
// kTransposeTile elements, one tile a task, consecutive tasks along x's rows. A tile's pieces of x
// rows are first converted into a contiguous buffer (reads along x's unit stride), then y's rows are
// written along P from it, in 16-byte blocks transposed in registers. The strided path, walking x a
// whole row apart an element, ran at 0.10-0.43x JAX's transpose on a 2-core Xeon; read straight from
// x, a tile's rows a power of two apart fell on a few L1 sets (bf16 0.47x). 64-element tiles, or tiles
// walked along y's rows: bf16 slower, f32 even (bench/NOTES.md, "CPU transposes").
inline constexpr int64_t kTransposeTile = 32;

// Square blocks of 2- and 4-byte elements transposed in 16-byte SIMD registers (GCC / Clang vector
// types: the compiler picks each target's shuffles): rows interleaved by elements, then by pairs, then
// by quads. Element by element, a 16-bit tile took about 4 cycles an element.
using U16x8 = uint16_t __attribute__((vector_size(16)));
using U32x4 = uint32_t __attribute__((vector_size(16)));
using U64x2 = uint64_t __attribute__((vector_size(16)));
template <class V>
inline V load_vector(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
template <class V>
inline void store_vector(void* p, V v) {
  std::memcpy(p, &v, sizeof(V));
}
// Rows `from` (`from_step` bytes apart) of a block of 16 bytes each into columns at `to`.
template <int kBytes>
inline void transpose_block(const unsigned char* from, int64_t from_step, unsigned char* to, int64_t to_step) {
  if constexpr (kBytes == 2) {
    U16x8 r[8];
    for (int k = 0; k < 8; ++k) r[k] = load_vector<U16x8>(from + k * from_step);
    U32x4 t[8];
    for (int k = 0; k < 4; ++k) {
      t[2 * k] = std::bit_cast<U32x4>(__builtin_shufflevector(r[2 * k], r[2 * k + 1], 0, 8, 1, 9, 2, 10, 3, 11));
      t[2 * k + 1] = std::bit_cast<U32x4>(__builtin_shufflevector(r[2 * k], r[2 * k + 1], 4, 12, 5, 13, 6, 14, 7, 15));
    }
    U64x2 u[8];
    for (int k = 0; k < 2; ++k) {  // rows 4k..4k+3: pairs of rows' columns 0-3 in t[4k], 4-7 in t[4k+1]
      for (int h = 0; h < 2; ++h) {
        u[4 * k + 2 * h] = std::bit_cast<U64x2>(__builtin_shufflevector(t[4 * k + h], t[4 * k + 2 + h], 0, 4, 1, 5));
        u[4 * k + 2 * h + 1] =
            std::bit_cast<U64x2>(__builtin_shufflevector(t[4 * k + h], t[4 * k + 2 + h], 2, 6, 3, 7));
      }
    }
    for (int c = 0; c < 4; ++c) {  // u[c]: rows 0-3 of columns 2c, 2c + 1; u[4 + c]: rows 4-7
      store_vector(to + (2 * c) * to_step, __builtin_shufflevector(u[c], u[4 + c], 0, 2));
      store_vector(to + (2 * c + 1) * to_step, __builtin_shufflevector(u[c], u[4 + c], 1, 3));
    }
  } else {
    static_assert(kBytes == 4);
    U32x4 r[4];
    for (int k = 0; k < 4; ++k) r[k] = load_vector<U32x4>(from + k * from_step);
    const U64x2 t0 = std::bit_cast<U64x2>(__builtin_shufflevector(r[0], r[1], 0, 4, 1, 5));
    const U64x2 t1 = std::bit_cast<U64x2>(__builtin_shufflevector(r[0], r[1], 2, 6, 3, 7));
    const U64x2 t2 = std::bit_cast<U64x2>(__builtin_shufflevector(r[2], r[3], 0, 4, 1, 5));
    const U64x2 t3 = std::bit_cast<U64x2>(__builtin_shufflevector(r[2], r[3], 2, 6, 3, 7));
    store_vector(to, __builtin_shufflevector(t0, t2, 0, 2));
    store_vector(to + to_step, __builtin_shufflevector(t0, t2, 1, 3));
    store_vector(to + 2 * to_step, __builtin_shufflevector(t1, t3, 0, 2));
    store_vector(to + 3 * to_step, __builtin_shufflevector(t1, t3, 1, 3));
  }
}

template <class In, class Out>
Status run_cast_transpose(const CastProblem& problem) {
  constexpr int64_t T = kTransposeTile;
  const std::optional<TransposedWalk<2>> walk = transposed_walk(cast_tensors(problem));
  if (!walk) return Status::error(StatusCode::invalid_problem, "cast: the views do not make a transpose");
  const TransposedWalk<2>& w = *walk;
  const int64_t x_p = w.p_strides[0], y_q = w.q_strides[1];
  const In* x = static_cast<const In*>(problem.x.data);
  Out* y = static_cast<Out*>(problem.y.data);
  const int64_t tiles_p = (w.p_size + T - 1) / T, tiles_q = (w.q_size + T - 1) / T;
  const int64_t tiles = w.batches * tiles_p * tiles_q;
#pragma omp parallel for schedule(static) if (w.batches * w.p_size * w.q_size > kParallelThreshold)
  for (int64_t i = 0; i < tiles; ++i) {
    int64_t base[2];
    w.batch.offsets(i / (tiles_p * tiles_q), base);
    const int64_t in_batch = i % (tiles_p * tiles_q);
    const int64_t q0 = in_batch % tiles_q * T, p0 = in_batch / tiles_q * T;
    const int64_t qn = std::min(T, w.q_size - q0), pn = std::min(T, w.p_size - p0);
    alignas(64) Out tile[T][T];  // [p - p0][q - q0]
    const In* from = x + base[0] + p0 * x_p + q0;
    Out* to = y + base[1] + q0 * y_q + p0;
    if (pn == T && qn == T) {  // whole tiles: loops of a constant count
      // The next tile's y lines, written for: their ownership asked for a tile ahead (bf16 [1024,
      // 4096] 4.2 -> 3.4-3.75 ms; prefetching its x lines as well measured slower where y's rows are
      // not whole lines).
      if (q0 + 2 * T <= w.q_size)
        for (int64_t q = 0; q < T; ++q) __builtin_prefetch(to + (q + T) * y_q, 1);
      for (int64_t p = 0; p < T; ++p)
        for (int64_t q = 0; q < T; ++q) tile[p][q] = convert<Out>(from[p * x_p + q]);
      if constexpr (sizeof(Out) == 2 || sizeof(Out) == 4) {
        constexpr int64_t B = 16 / sizeof(Out);  // a block's side
        for (int64_t q = 0; q < T; q += B)
          for (int64_t p = 0; p < T; p += B)
            transpose_block<sizeof(Out)>(reinterpret_cast<const unsigned char*>(&tile[p][q]), T * sizeof(Out),
                                         reinterpret_cast<unsigned char*>(to + q * y_q + p),
                                         y_q * static_cast<int64_t>(sizeof(Out)));
      } else {
        for (int64_t q = 0; q < T; ++q)
          for (int64_t p = 0; p < T; ++p) to[q * y_q + p] = tile[p][q];
      }
    } else {
      for (int64_t p = 0; p < pn; ++p)
        for (int64_t q = 0; q < qn; ++q) tile[p][q] = convert<Out>(from[p * x_p + q]);
      for (int64_t q = 0; q < qn; ++q)
        for (int64_t p = 0; p < pn; ++p) to[q * y_q + p] = tile[p][q];
    }
  }
  return Status::ok();
}

template <bool kFromFloat>
Status launch_cast(const CastProblem& problem) {
  if (is_floating(problem.desc.dtype) != kFromFloat)
    return Status::error(StatusCode::invalid_problem, "cast: x's dtype is not in this translation unit's set");
  return dispatch_any<half, bfloat16>(problem.desc.dtype, [&](auto in) {
    using In = typename decltype(in)::type;
    if constexpr (is_float_like_v<In> != kFromFloat) {
      return Status::ok();  // not reached: checked above
    } else {
      return dispatch_any<half, bfloat16>(problem.desc.out_dtype, [&](auto out) {
        using Out = typename decltype(out)::type;
        if (problem.path == ElementwisePath::transposed) return run_cast_transpose<In, Out>(problem);
        return run_elementwise<In, Out>(CastFunctor<cast_acc_t<In>>{}, cast_tensors(problem));
      });
    }
  });
}

}  // namespace baracuda::detail::cpu

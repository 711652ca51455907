#pragma once
// The random plans' kernels (include/baracuda/ops/random.hpp): one thread a group of elements that
// share a Philox block (cuda/device/random_draw.h, the host's arithmetic bit for bit; this program
// is compiled without FMA contraction, as the host's code is). Contiguous outputs are written by
// whole groups (one 8- or 16-byte store where aligned), others element by element through the walk.
#include "cuda/device/common.cuh"
#include "cuda/device/params.h"
#include "cuda/device/random_draw.h"

namespace baracuda::device {

// The type a kind's values are computed in before rounding to T (random_group_values).
template <class T, int K>
struct RandomValue {
  using type = float;
};
template <int K>
struct RandomValue<double, K> {
  using type = double;
};
template <>
struct RandomValue<int, kRandomRandint> {
  using type = long long;
};
template <>
struct RandomValue<long long, kRandomRandint> {
  using type = long long;
};

template <class T, int G>
struct alignas(sizeof(T) * G) RandomGroupVector {
  T e[G];
};

// Whether element i0's group of G lies whole inside [0, total), in one contiguous view.
template <int G>
__device__ __forceinline__ bool whole_group(bool contiguous, unsigned long long i0, long long total) {
  return contiguous && total >= G && i0 <= static_cast<unsigned long long>(total) - G;
}

template <int NT>
__device__ __forceinline__ bool unit_stride(const Walk<NT>& w, int t) {
  return w.rank == 1 && w.strides[t][0] == 1;
}

template <class T, int G>
__device__ __forceinline__ void store_group(T* out, const T (&v)[G]) {
  if (reinterpret_cast<unsigned long long>(out) % sizeof(RandomGroupVector<T, G>) == 0) {
    RandomGroupVector<T, G> w;
    for (int j = 0; j < G; ++j) w.e[j] = v[j];
    *reinterpret_cast<RandomGroupVector<T, G>*>(out) = w;
  } else {
    for (int j = 0; j < G; ++j) out[j] = v[j];
  }
}

// A thread takes two neighbouring groups at a time: their two Philox blocks are independent chains
// the scheduler interleaves, and a contiguous pair is one access of 2 G elements (16 bytes for 16-bit
// types), its loads issued before the blocks are drawn (bench/NOTES.md). Pair s holds groups
// first + 2 s and first + 2 s + 1 (the second may be past the last).
#define BARACUDA_FOR_EACH_PAIR(s, count)                                                              \
  for (unsigned long long s = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; \
       s < ((count) + 1) / 2; s += static_cast<unsigned long long>(gridDim.x) * blockDim.x)

// Whether `p` is aligned for one access of a pair of groups.
template <class V>
__device__ __forceinline__ bool pair_aligned(const void* p) {
  return reinterpret_cast<unsigned long long>(p) % sizeof(V) == 0;
}

// A warp's 64 groups (32 pairs) are drawn so that each of its 16-byte stores writes 512 contiguous
// bytes: lane l draws groups lane_groups(l) of the 64, where a group of B bytes is 8 (two groups a
// store), 16 (one a store) or 32 (two halves, one exchanged with the neighbouring lane). A store of
// a lane's own pair of neighbouring groups (2 B bytes, lanes 2 B apart) writes partial sectors.
template <int B>
__device__ __forceinline__ void lane_groups(unsigned l, unsigned (&r)[2]) {
  static_assert(B == 8 || B == 16 || B == 32, "a group of 8, 16 or 32 bytes");
  if constexpr (B == 8) {
    r[0] = 2 * l, r[1] = 2 * l + 1;
  } else if constexpr (B == 16) {
    r[0] = l, r[1] = 32 + l;
  } else {  // lanes 2 p and 2 p + 1 draw groups p, 16 + p (and 32 more): store one half of each
    r[0] = 16 * (l & 1) + l / 2, r[1] = r[0] + 32;
  }
}

template <class V>
__device__ __forceinline__ V shfl_xor_16(const V& v, int mask) {
  static_assert(sizeof(V) == 16, "16 bytes");
  uint4 u = *reinterpret_cast<const uint4*>(&v);
  u.x = __shfl_xor_sync(0xffffffffu, u.x, mask);
  u.y = __shfl_xor_sync(0xffffffffu, u.y, mask);
  u.z = __shfl_xor_sync(0xffffffffu, u.z, mask);
  u.w = __shfl_xor_sync(0xffffffffu, u.w, mask);
  return *reinterpret_cast<const V*>(&u);
}

// `pick ? a : b` of 16-byte vectors, word by word through a mask. A plain ?: on the vectors, with
// the lane's parity as the condition, became a copy of both to local memory read back at an address
// of that parity, and stores split by the parity into partial sectors (randint i64: bench/NOTES.md).
template <class V>
__device__ __forceinline__ V select_16(bool pick, const V& a, const V& b) {
  static_assert(sizeof(V) == 16, "16 bytes");
  const unsigned m = 0u - static_cast<unsigned>(pick);
  const uint4 x = *reinterpret_cast<const uint4*>(&a), y = *reinterpret_cast<const uint4*>(&b);
  const uint4 u = {(x.x & m) | (y.x & ~m), (x.y & m) | (y.y & ~m), (x.z & m) | (y.z & ~m), (x.w & m) | (y.w & ~m)};
  return *reinterpret_cast<const V*>(&u);
}

// Stores lane l's two groups t (lane_groups's) of the warp's 64 at out (16-byte aligned).
template <class T, int G>
__device__ __forceinline__ void store_warp_groups(T* out, unsigned l, const unsigned (&r)[2], const T (&t)[2][G]) {
  constexpr int B = G * static_cast<int>(sizeof(T)), E = 16 / static_cast<int>(sizeof(T));  // E: elements a store
  using V = RandomGroupVector<T, E>;
  if constexpr (B == 8) {
    V w;
    for (int j = 0; j < E; ++j) w.e[j] = t[j / G][j % G];
    *reinterpret_cast<V*>(out + r[0] * G) = w;
  } else if constexpr (B == 16) {
    for (int h = 0; h < 2; ++h) {
      V w;
      for (int j = 0; j < G; ++j) w.e[j] = t[h][j];
      *reinterpret_cast<V*>(out + r[h] * G) = w;
    }
  } else {
    const bool odd = l & 1;
    for (int h = 0; h < 2; ++h) {
      V lo, hi;
      for (int j = 0; j < E; ++j) lo.e[j] = t[h][j], hi.e[j] = t[h][E + j];
      // The even lane keeps its group's first half and gets the odd lane's first; the odd lane its
      // second half and the even lane's second.
      const V got = shfl_xor_16(select_16(odd, lo, hi), 1), keep = select_16(odd, hi, lo);
      // The even lane's group, and this lane's half of it: both lanes store at once, whole sectors.
      T* const at = out + (r[h] - 16 * (l & 1)) * G + E * (l & 1);
      *reinterpret_cast<V*>(at) = select_16(odd, got, keep);
      *reinterpret_cast<V*>(at + 16 * G) = select_16(odd, keep, got);
    }
  }
}

// (Launched 256 threads a block: cuda/random.cpp; four blocks an SM at 64 registers.)
template <class T, int K>
__global__ void __launch_bounds__(256, 4) random_fill(const __grid_constant__ RandomParams p) {
  constexpr int G = kRandomGroup<K, (sizeof(T) == 8 && K != kRandomRandint)>;
  using V = typename RandomValue<T, K>::type;
  const unsigned long long first = p.offset / G, count = random_group_count<G>(p.offset, p.total);
  const bool contiguous = unit_stride(p.walk, 0);
  T* out = static_cast<T*>(p.out);
  // Group g's values into t (rounded to T).
  auto draw = [&](unsigned long long g, T(&t)[G]) {
    V v[G];
    random_group_values<K>(p, g, v);
    for (int j = 0; j < G; ++j) t[j] = round_to<T>(v[j]);
  };
  constexpr int kGroupBytes = G * static_cast<int>(sizeof(T));
  const unsigned lane = threadIdx.x % 32;
  BARACUDA_FOR_EACH_PAIR(s, count) {
    const unsigned long long g = first + 2 * s, i0 = g * G - p.offset;
    // The warp's 64 groups from its first lane's (the same test in every lane: the branch is the
    // warp's, which the exchange of 32-byte groups needs).
    const unsigned long long w0 = i0 - 2 * lane * G;
    if (whole_group<64 * G>(contiguous, w0, p.total) && pair_aligned<uint4>(out + w0)) {
      unsigned r[2];
      lane_groups<kGroupBytes>(lane, r);
      T t[2][G];
      draw(g - 2 * lane + r[0], t[0]);
      draw(g - 2 * lane + r[1], t[1]);
      store_warp_groups<T, G>(out + w0, lane, r, t);
      continue;
    }
    for (unsigned long long h = 0; h < 2 && 2 * s + h < count; ++h) {
      const unsigned long long i = i0 + h * G;
      T t[G];
      draw(g + h, t);
      if (whole_group<G>(contiguous, i, p.total)) {
        store_group(out + i, t);
      } else {
        for (int j = 0; j < G; ++j)
          if (i + j < static_cast<unsigned long long>(p.total))
            out[walk_offset(p.walk, 0, static_cast<int64>(i + j))] = t[j];
      }
    }
  }
}

// y = x * scale where kept (bits >= threshold), else 0; the mask (bool) where asked for.
template <class T>
__global__ void __launch_bounds__(256, 4) dropout(const __grid_constant__ DropoutParams p) {
  using Acc = acc_t<T>;
  constexpr int G = 4;
  using Pair = RandomGroupVector<T, 2 * G>;
  const Acc scale = static_cast<Acc>(p.scale);
  const unsigned long long first = p.offset / G, count = random_group_count<G>(p.offset, p.total);
  const bool contiguous = unit_stride(p.walk, 0) && unit_stride(p.walk, 1) && (!p.mask || unit_stride(p.walk, 2));
  const T* src = static_cast<const T*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  unsigned char* mask = static_cast<unsigned char*>(p.mask);
  BARACUDA_FOR_EACH_PAIR(s, count) {
    const unsigned long long g = first + 2 * s, i0 = g * G - p.offset;
    if (whole_group<2 * G>(contiguous, i0, p.total) && pair_aligned<Pair>(src + i0) && pair_aligned<Pair>(dst + i0)) {
      const Pair x = *reinterpret_cast<const Pair*>(src + i0);  // in flight while the blocks are drawn
      const Philox4 r[2] = {philox_bits_block(p.seed, g), philox_bits_block(p.seed, g + 1)};
      Pair y;
      unsigned char m[2 * G];
      for (int j = 0; j < 2 * G; ++j) {
        const bool kept = r[j / G].v[j % G] >= p.threshold;
        y.e[j] = round_to<T>(kept ? to_acc<Acc>(x.e[j]) * scale : Acc(0));
        m[j] = kept ? 1 : 0;
      }
      *reinterpret_cast<Pair*>(dst + i0) = y;
      if (mask) {
        unsigned char m0[G], m1[G];
        for (int j = 0; j < G; ++j) m0[j] = m[j], m1[j] = m[G + j];
        store_group(mask + i0, m0);
        store_group(mask + i0 + G, m1);
      }
      continue;
    }
    for (unsigned long long h = 0; h < 2 && 2 * s + h < count; ++h) {
      const unsigned long long i0h = i0 + h * G;
      const Philox4 r = philox_bits_block(p.seed, g + h);
      bool kept[G];
      for (int j = 0; j < G; ++j) kept[j] = r.v[j] >= p.threshold;
      if (whole_group<G>(contiguous, i0h, p.total)) {
        T x[G], y[G];
        if (reinterpret_cast<unsigned long long>(src + i0h) % sizeof(RandomGroupVector<T, G>) == 0) {
          const RandomGroupVector<T, G> w = *reinterpret_cast<const RandomGroupVector<T, G>*>(src + i0h);
          for (int j = 0; j < G; ++j) x[j] = w.e[j];
        } else {
          for (int j = 0; j < G; ++j) x[j] = src[i0h + j];
        }
        for (int j = 0; j < G; ++j) y[j] = round_to<T>(kept[j] ? to_acc<Acc>(x[j]) * scale : Acc(0));
        store_group(dst + i0h, y);
        if (mask) {
          unsigned char m[G];
          for (int j = 0; j < G; ++j) m[j] = kept[j] ? 1 : 0;
          store_group(mask + i0h, m);
        }
      } else {
        for (int j = 0; j < G; ++j) {
          const unsigned long long i = i0h + j;
          if (i >= static_cast<unsigned long long>(p.total)) continue;
          const T x = src[walk_offset(p.walk, 0, static_cast<int64>(i))];
          dst[walk_offset(p.walk, 1, static_cast<int64>(i))] = round_to<T>(kept[j] ? to_acc<Acc>(x) * scale : Acc(0));
          if (mask) mask[walk_offset(p.walk, 2, static_cast<int64>(i))] = kept[j] ? 1 : 0;
        }
      }
    }
  }
}

#undef BARACUDA_FOR_EACH_PAIR

}  // namespace baracuda::device

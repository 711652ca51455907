#pragma once
// Shared by the CPU and CUDA backends: where a segment's rows are (SegmentRows), the fold of each
// reduction, and the bad-input rules of include/baracuda/ops/segment.hpp, written once. NVRTC reads
// it too (the CUDA kernels compiled at select).
#include "common/hd.hpp"
#include "common/portable.hpp"

namespace baracuda::detail {

enum class SegmentReduction : unsigned char { sum, mean, max, min };

// A position p of the walk is row order[p] (the sort variant's rows in segment order) or row p.
// Segment s holds positions [b, e) from bounds(s): from the offsets (clamped into [0, N]; empty
// where they decrease), or by binary search of the nondecreasing ids (`keys`: the segment ids, or
// the sort variant's sorted ones). With ids out of order the search still ends inside [0, N], and
// holds() keeps a segment to the positions whose id is its own.
template <class K>
struct SegmentRows {
  const K* keys = nullptr;  // ids forms: the (sorted) segment id of each position
  int64_t key_stride = 1;
  const K* offsets = nullptr;  // offsets form (and the CPU's sort variant): S + 1 of them
  int64_t offset_stride = 1;
  const int64_t* order = nullptr;  // the row at each position, where not the position itself
  int64_t rows = 0;                // N
  int64_t segments = 0;            // S

  BARACUDA_HD int64_t key(int64_t p) const { return static_cast<int64_t>(keys[p * key_stride]); }
  BARACUDA_HD int64_t raw_offset(int64_t k) const { return static_cast<int64_t>(offsets[k * offset_stride]); }
  BARACUDA_HD int64_t offset(int64_t k) const {
    const int64_t o = raw_offset(k);
    return o < 0 ? 0 : o > rows ? rows : o;
  }
  BARACUDA_HD int64_t row(int64_t p) const { return order ? order[p] : p; }
  // The first position whose key is not below s.
  BARACUDA_HD int64_t lower_bound(int64_t s) const {
    int64_t lo = 0, hi = rows;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (key(mid) < s)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }
  BARACUDA_HD void bounds(int64_t s, int64_t& b, int64_t& e) const {
    if (offsets) {
      b = offset(s);
      e = raw_offset(s + 1) < raw_offset(s) ? b : offset(s + 1);
    } else {
      lower_bounds(s, b, e);
    }
    if (e < b) e = b;  // ids out of order
  }
  // lower_bound(s) and lower_bound(s + 1), the two searches interleaved: two independent chains of
  // loads in flight rather than one after the other (on the GPU each step is a memory round trip).
  BARACUDA_HD void lower_bounds(int64_t s, int64_t& b, int64_t& e) const {
    int64_t lo_b = 0, hi_b = rows, lo_e = 0, hi_e = rows;
    while (lo_b < hi_b || lo_e < hi_e) {
      const int64_t mid_b = lo_b + (hi_b - lo_b) / 2, mid_e = lo_e + (hi_e - lo_e) / 2;
      const bool step_b = lo_b < hi_b, step_e = lo_e < hi_e;
      const int64_t key_b = step_b ? key(mid_b) : 0, key_e = step_e ? key(mid_e) : 0;
      if (step_b) (key_b < s ? lo_b = mid_b + 1 : hi_b = mid_b);
      if (step_e) (key_e < s + 1 ? lo_e = mid_e + 1 : hi_e = mid_e);
    }
    b = lo_b;
    e = lo_e;
  }
  // Whether position p of segment s's bounds holds it: always, but for ids out of order.
  BARACUDA_HD bool holds(int64_t p, int64_t s) const { return offsets || key(p) == s; }
  // The segment of row i (the backward's map; the walk is unsorted there), or -1.
  BARACUDA_HD int64_t segment_of(int64_t i) const {
    if (!offsets) {
      const int64_t s = key(i);
      return s >= 0 && s < segments ? s : -1;
    }
    // The last k with offset(k) <= i, among the nondecreasing offsets; i must be below its end.
    int64_t lo = 0, hi = segments + 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (offset(mid) <= i)
        lo = mid + 1;
      else
        hi = mid;
    }
    const int64_t s = lo - 1;
    if (s < 0 || s >= segments) return -1;
    int64_t b, e;
    bounds(s, b, e);
    return i >= b && i < e ? s : -1;
  }
};

// What a bad-index counter adds for value v at position p of an index view (its predecessor `prev`
// where p > 0): v outside [0, bound), and, for a sorted view, v below its predecessor.
BARACUDA_HD int64_t bad_index_weight(int64_t v, int64_t prev, bool has_prev, int64_t bound, bool sorted) {
  return (v < 0 || v >= bound ? 1 : 0) + (sorted && has_prev && v < prev ? 1 : 0);
}

template <class A>
BARACUDA_HD bool is_nan_value(A v) {
  if constexpr (std::is_floating_point_v<A>)
    return v != v;
  else
    return false;
}

// The fold of one element into a segment's state. Max and min keep the first row attaining the
// extreme (a later equal value does not take over) and let the first NaN win.
template <SegmentReduction R, class A>
struct SegmentFold {
  static constexpr SegmentReduction kReduction = R;
  static constexpr bool kExtreme = R == SegmentReduction::max || R == SegmentReduction::min;
  // Every test evaluated and joined with & and |: no branch, so that a loop over columns vectorizes.
  BARACUDA_HD static bool takes_over(A v, A best, bool empty) {
    const bool ordered = R == SegmentReduction::max ? v > best : v < best;
    return empty | ((!is_nan_value(best)) & (is_nan_value(v) | ordered));
  }
  // acc (with its row `at`) folded with v of row i (I: a row, or a position; negative: none yet).
  template <class I>
  BARACUDA_HD static void fold(A& acc, I& at, A v, I i) {
    if constexpr (kExtreme) {
      const bool take = takes_over(v, acc, at < 0);
      acc = take ? v : acc;
      at = take ? i : at;
    } else {
      acc = add(acc, v);
      at = i;
    }
  }
  // A later piece's state folded into an earlier one's (the split of a long segment).
  BARACUDA_HD static void combine(A& acc, int64_t& at, A v, int64_t v_at) {
    if (v_at < 0) return;
    if constexpr (kExtreme) {
      if (takes_over(v, acc, at < 0)) {
        acc = v;
        at = v_at;
      }
    } else {
      acc = add(acc, v);
      at = v_at;
    }
  }
  // Integers wrap as two's complement (as PyTorch's and JAX's sums), without signed overflow.
  BARACUDA_HD static A add(A a, A b) {
    if constexpr (std::is_integral_v<A>)
      return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    else
      return a + b;
  }
};

// Stores a compute-type value as T (16-bit floats from float).
template <class T, class A>
BARACUDA_HD T from_acc(A v) {
  if constexpr (std::is_arithmetic_v<T>)
    return static_cast<T>(v);
  else
    return T(static_cast<float>(v));
}

}  // namespace baracuda::detail

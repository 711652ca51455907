// CPU kernels of the segment family. Forward: (segment, column chunk) work items in parallel, each
// folding its segment's rows in row order into a chunk of accumulators (contiguous chunks converted
// by the shared row converter, so the inner loops vectorize); deterministic by construction. The
// unsorted form first sorts the rows by segment with a stable counting sort in the workspace (the
// "sort" variant). Backward: rows in parallel, each reading its segment's dout.
#include <algorithm>
#include <bit>
#include <cmath>

#include "common/dispatch.hpp"
#include "cpu/parallel.hpp"
#include "cpu/scatter_order.hpp"
#include "cpu/vector_math.hpp"
#include "ops/segment_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

constexpr int64_t kColumnChunk = 256;
constexpr int64_t kPositionBlock = int64_t{1} << 30;  // max / min: positions a block (32-bit)

template <class Idx>
void count_bad(const SegmentProblem& p) {
  const int64_t n = p.counted_size(), stride = p.counted_stride(), bound = p.counted_bound();
  if (!p.bad_index_count || n == 0) return;
  const Idx* v = static_cast<const Idx*>(p.counted());
  const bool sorted = p.counted_sorted();
  int64_t bad = 0;
  if (stride == 0) {  // one value repeated: never below itself
    bad = bad_index_weight(v[0], 0, false, bound, false) * n;
  } else {
#pragma omp parallel for reduction(+ : bad) if (n > kParallelThreshold)
    for (int64_t i = 0; i < n; ++i)
      bad += bad_index_weight(v[i * stride], i > 0 ? int64_t(v[(i - 1) * stride]) : 0, i > 0, bound, sorted);
  }
  *p.bad_index_count += bad;
}

// Column c0..c1's offsets in each view (a walk of the trailing dims).
void column_offsets(const SegmentProblem& p, int64_t c0, int64_t c1, int64_t (*off)[kColumnChunk]) {
  for (int64_t c = c0; c < c1; ++c) {
    int64_t o[kSegmentColumns];
    p.columns.offsets(c, o);
    for (int t = 0; t < kSegmentColumns; ++t) off[t][c - c0] = o[t];
  }
}
// A thread's offsets of its current chunk of columns, walked again only when the chunk changes
// (never, where the rows are one chunk): a walk a column every segment or row was a large share of
// short rows' time (bench/NOTES.md).
struct ChunkOffsets {
  int64_t off[kSegmentColumns][kColumnChunk] = {};
  int64_t chunk = -1;
  const int64_t (&of(const SegmentProblem& p, int64_t c0, int64_t c1))[kSegmentColumns][kColumnChunk] {
    if (chunk != c0) {
      column_offsets(p, c0, c1, off);
      chunk = c0;
    }
    return off;
  }
};
// The row side's columns are one unit-stride run (the converter's fast path).
bool unit_columns(const SegmentProblem& p) {
  return p.columns.rank == 0 || (p.columns.rank == 1 && p.columns.strides[kRowSide][0] == 1);
}

// The row loops prefetch the row this many ahead where rows start a cache line or more apart:
// short rows read one after another (D = 32 f32: 128 bytes a row) left the hardware prefetcher
// behind; rows within a line (D = 1) gain nothing but the instructions (bench/NOTES.md, "CPU segment
// reductions beside JAX on one core"). The sorted walk's rows, read in place one segment after
// another, at least `min_bytes` ahead too, so that one core keeps more lines in flight
// (bench/NOTES.md, twenty-third session).
constexpr int64_t kPrefetchRows = 8, kSortedPrefetchBytes = 8192;
inline int64_t prefetch_ahead(int64_t row_stride, size_t element_size, int64_t min_bytes = 0) {
  // (unsigned, capped: a dim of one row may carry any stride, 2^62 or INT64_MIN included)
  const uint64_t stride = row_stride < 0 ? 0 - static_cast<uint64_t>(row_stride) : static_cast<uint64_t>(row_stride);
  const int64_t bytes = static_cast<int64_t>(std::min<uint64_t>(stride, uint64_t{1} << 32) * element_size);
  return bytes >= 64 ? std::max(kPrefetchRows, min_bytes / bytes) : 0;
}

// The line of bytes [from, from + bytes) into the cache.
inline void prefetch_bytes(const void* from, int64_t bytes) {
  for (int64_t byte = 0; byte < bytes; byte += 64) __builtin_prefetch(static_cast<const char*>(from) + byte);
}

// The rows [b, e) of segment s (unit-stride columns, n of them) handed to fold(row, position from b)
// in row order, the row `ahead` of each prefetched (rows in place: past the segment's end too, into
// the next segment's). Returns the rows folded.
template <class A, class K, class Fold>
[[gnu::always_inline]] inline int64_t fold_rows(const A* data, int64_t row_stride, const SegmentRows<K>& rows,
                                                int64_t s, int64_t b, int64_t e, int n, Fold&& fold) {
  const int64_t ahead = prefetch_ahead(row_stride, sizeof(A), rows.order ? 0 : kSortedPrefetchBytes);
  int64_t count = 0;
  for (int64_t q = b; q < e; ++q) {
    if (!rows.holds(q, s)) continue;
    if (ahead && q + ahead < (rows.order ? e : rows.rows))
      prefetch_bytes(data + rows.row(q + ahead) * row_stride, n * int64_t{sizeof(A)});
    fold(data + rows.row(q) * row_stride, q - b);
    ++count;
  }
  return count;
}

// c ? a : b by masks on the bits: GCC made the ternary on takes_over's NaN tests two branches,
// mispredicted on random rows.
template <class T>
[[gnu::always_inline]] inline T select_bits(bool c, T a, T b) {
  using U = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  const U mask = static_cast<U>(U{0} - static_cast<U>(c));
  return std::bit_cast<T>(static_cast<U>((std::bit_cast<U>(a) & mask) | (std::bit_cast<U>(b) & ~mask)));
}

// A later value v folded into a segment's max / min `best` (Fold::takes_over's rule) by one compare:
// a number takes over by `v > b ? v : b` (min: <), which keeps b where b is NaN (in f32 / f64 one
// maxss / minss; 16-bit values compared in f32 and picked by their bits); a NaN value, rare, takes
// over only a number, on a branch of its own. (takes_over's every test and a select made a
// one-column fold several times slower than a sum: bench/NOTES.md.)
template <class Fold, class T>
[[gnu::always_inline]] inline void fold_one_extreme(T& best, T v) {
  using A = acc_t<T>;
  static_assert(Fold::kExtreme && std::is_floating_point_v<A>);
  const A a = to_acc<A>(v), b = to_acc<A>(best);
  if (a != a) [[unlikely]] {
    if (b == b) best = v;
    return;
  }
  const bool take = Fold::kReduction == SegmentReduction::max ? a > b : a < b;
  if constexpr (std::is_same_v<T, A>)
    best = take ? a : b;
  else
    best = select_bits(take, v, best);
}

// The rows [b, e) of segment s, f32 / f64 with unit-stride columns, summed into acc[0, n) in row
// order: the loop of every work item that sums, in the widest vectors the machine has (the work
// items' own code is the baseline ISA's). Returns the rows summed.
template <class Fold, class A, class K>
BARACUDA_CPU_CLONES int64_t add_unit_rows(A* __restrict acc, const A* data, int64_t row_stride,
                                          const SegmentRows<K>& rows, int64_t s, int64_t b, int64_t e, int n) {
  return fold_rows(data, row_stride, rows, s, b, e, n, [&](const A* __restrict from, int64_t) {
    for (int j = 0; j < n; ++j) acc[j] = Fold::add(acc[j], from[j]);
  });
}

// The max / min of add_unit_rows: the rows [q0, q1) of segment s folded into best[0, n) with their
// positions from q0 (32-bit: a block of positions) in pos[0, n); pos null (no indices asked): the
// values alone, the first row taken whole, then selects.
template <class Fold, class A, class K>
BARACUDA_CPU_CLONES int64_t fold_unit_rows(A* __restrict best, int32_t* __restrict pos, const A* data,
                                           int64_t row_stride, const SegmentRows<K>& rows, int64_t s, int64_t q0,
                                           int64_t q1, int n) {
  if (!pos) {
    bool first = true;
    return fold_rows(data, row_stride, rows, s, q0, q1, n, [&](const A* __restrict from, int64_t) {
      if (first) {
        for (int j = 0; j < n; ++j) best[j] = from[j];
        first = false;
      } else {
        for (int j = 0; j < n; ++j) best[j] = Fold::takes_over(from[j], best[j], false) ? from[j] : best[j];
      }
    });
  }
  return fold_rows(data, row_stride, rows, s, q0, q1, n, [&](const A* __restrict from, int64_t position) {
    const auto r = static_cast<int32_t>(position);
    for (int j = 0; j < n; ++j) Fold::fold(best[j], pos[j], from[j], r);
  });
}

template <SegmentReduction R, class T, class Idx, class K>
void reduce_segments(const SegmentProblem& p, const SegmentRows<K>& rows) {
  using A = acc_t<T>;
  using Fold = SegmentFold<R, A>;
  const T* data = static_cast<const T*>(p.row_in);
  T* out = static_cast<T*>(p.segment_out);
  Idx* indices = static_cast<Idx*>(p.indices);
  const int64_t length = p.length, chunks = ceil_div(length, kColumnChunk);
  const bool unit = unit_columns(p);
  T empty;
  if constexpr (std::is_integral_v<T>)
    empty = static_cast<T>(p.empty_integer);
  else
    empty = from_acc<T>(p.empty_value);
  // Sorted ids without precomputed bounds: a segment that follows the one this thread just did
  // starts where that one ended, and ends where its ids do (a scan over ids its rows read anyway),
  // rather than two binary searches a segment (a miss a step: D = 1, 16384 segments of 2^20 rows
  // took 6.8 ms).
  const bool scanned = rows.keys && !rows.offsets;
#pragma omp parallel if (std::max(p.rows, p.segments) * length > kParallelThreshold)
  {
    int64_t last_segment = -1, last_end = 0;
    ChunkOffsets chunk_offsets;
    const auto item = [&](int64_t w) {
      const int64_t s = w / chunks, c0 = (w % chunks) * kColumnChunk, c1 = std::min(length, c0 + kColumnChunk);
      const int n = static_cast<int>(c1 - c0);
      const auto& off = chunk_offsets.of(p, c0, c1);
      A acc[kColumnChunk], x[kColumnChunk];
      int64_t at[kColumnChunk];
      std::fill_n(acc, n, A(0));
      std::fill_n(at, n, int64_t{-1});
      int64_t b, e, count = 0;
      if (scanned && last_segment >= 0 && (s == last_segment + 1 || s == last_segment)) {
        if (s == last_segment) {  // another chunk of the same segment
          rows.bounds(s, b, e);
        } else {
          b = e = last_end;
          while (e < rows.rows && rows.key(e) <= s) ++e;  // where the ids pass s (bad ones beyond S end it)
        }
      } else {
        rows.bounds(s, b, e);
      }
      last_segment = s;
      last_end = e;
      const T* column = data + off[kRowSide][0];
      if (n == 1) {  // one column: the rows' single values, no chunk of accumulators
        // (in locals: acc's address goes to add_unit_rows, so as far as the compiler knows a store
        // through `column` might change acc[0], and a sum kept there is stored and reloaded every row;
        // bench/NOTES.md, "CPU beside JAX on one core")
        A sum = acc[0];
        int64_t where = at[0];
        bool folded = false;
        if constexpr (Fold::kExtreme && std::is_floating_point_v<A>) {
          if (!indices) {  // values alone: the first row's taken, then fold_one_extreme (no positions)
            for (int64_t q = b; q < e; ++q) {
              if (!rows.holds(q, s)) continue;
              const A v = to_acc<A>(column[rows.row(q) * p.row_stride]);
              if (count++ == 0)
                sum = v;
              else
                fold_one_extreme<Fold>(sum, v);
            }
            folded = true;
          }
        }
        for (int64_t q = b; q < (folded ? b : e); ++q) {
          if (!rows.holds(q, s)) continue;
          const int64_t i = rows.row(q);
          if constexpr (Fold::kExtreme) {
            Fold::fold(sum, where, to_acc<A>(column[i * p.row_stride]), i);
          } else {
            sum = Fold::add(sum, to_acc<A>(column[i * p.row_stride]));
          }
          ++count;
        }
        acc[0] = sum;
        at[0] = where;
      } else if constexpr (Fold::kExtreme) {
        // Blocks of up to 2^30 positions, each folded with 32-bit positions in the block (the values'
        // width: the fold over columns vectorizes; with 64-bit rows it did not), then into the
        // segment's extremes in block order.
        A best[kColumnChunk];
        int32_t pos[kColumnChunk];
        bool whole = false;
        if constexpr (std::is_same_v<T, A>) {
          // Values alone, the segment one block: its extremes straight into acc (no positions, no
          // combine: a column's combine a segment cost more than its rows at D = 32; bench/NOTES.md).
          if (unit && !indices && e - b <= kPositionBlock) {
            count = fold_unit_rows<Fold>(acc, nullptr, data + off[kRowSide][0], p.row_stride, rows, s, b, e, n);
            whole = true;
          }
        }
        for (int64_t q0 = b; q0 < (whole ? b : e); q0 += kPositionBlock) {
          const int64_t q1 = std::min(e, q0 + kPositionBlock);
          std::fill_n(best, n, A(0));
          std::fill_n(pos, n, int32_t{-1});
          // (f32 / f64 rows of unit stride: straight from the rows, in the widest vectors)
          bool folded = false;
          if constexpr (std::is_same_v<T, A>) {
            if (unit && !indices) {  // values alone: a row of the block stands for every column's
              const int64_t held =
                  fold_unit_rows<Fold>(best, nullptr, data + off[kRowSide][0], p.row_stride, rows, s, q0, q1, n);
              count += held;
              std::fill_n(pos, n, held ? int32_t{0} : int32_t{-1});
              folded = true;
            } else if (unit) {
              count += fold_unit_rows<Fold>(best, pos, data + off[kRowSide][0], p.row_stride, rows, s, q0, q1, n);
              folded = true;
            }
          }
          for (int64_t q = q0; q < (folded ? q0 : q1); ++q) {
            if (!rows.holds(q, s)) continue;
            const T* src = data + rows.row(q) * p.row_stride;
            if (unit)
              convert_rows(src + off[kRowSide][0], 0, 1, 1, n, x);
            else
              for (int j = 0; j < n; ++j) x[j] = to_acc<A>(src[off[kRowSide][j]]);
            const auto r = static_cast<int32_t>(q - q0);
            for (int j = 0; j < n; ++j) Fold::fold(best[j], pos[j], x[j], r);
            ++count;
          }
          for (int j = 0; j < n; ++j)
            Fold::combine(acc[j], at[j], best[j], pos[j] < 0 ? int64_t{-1} : rows.row(q0 + pos[j]));
        }
      } else if (std::is_same_v<T, A> && unit) {  // no conversion: folded straight from the rows
        if constexpr (std::is_same_v<T, A>)
          count = add_unit_rows<Fold>(acc, data + off[kRowSide][0], p.row_stride, rows, s, b, e, n);
      } else {
        for (int64_t q = b; q < e; ++q) {
          if (!rows.holds(q, s)) continue;
          const int64_t i = rows.row(q);
          const T* src = data + i * p.row_stride;
          if (unit)
            convert_rows(src + off[kRowSide][0], 0, 1, 1, n, x);
          else
            for (int j = 0; j < n; ++j) x[j] = to_acc<A>(src[off[kRowSide][j]]);
          for (int j = 0; j < n; ++j) acc[j] = Fold::add(acc[j], x[j]);
          ++count;
        }
      }
      T* dst = out + s * p.segment_stride;
      for (int j = 0; j < n; ++j) {
        A v = acc[j];
        if constexpr (R == SegmentReduction::mean) v = count ? v / static_cast<A>(count) : v;
        dst[off[kSegmentSide][j]] = count ? from_acc<T>(v) : empty;
      }
      if (indices)
        for (int j = 0; j < n; ++j)
          indices[s * p.indices_stride + off[kIndices][j]] = static_cast<Idx>(count ? at[j] : -1);
    };
    // Scanned bounds: each thread a fixed run of segments, so that ids out of order (counted as
    // bad) still give the same sums every run; else work items as they come.
    if (scanned) {
#pragma omp for schedule(static)
      for (int64_t w = 0; w < p.segments * chunks; ++w) item(w);
    } else {
#pragma omp for schedule(dynamic, 4)
      for (int64_t w = 0; w < p.segments * chunks; ++w) item(w);
    }
  }
}

// The sort variant's stable counting sort: S + 1 segment starts, then the N rows in segment order
// (rows with a bad id in none).
template <class Idx>
SegmentRows<int64_t> sort_rows(const SegmentProblem& p) {
  int64_t* starts = static_cast<int64_t*>(p.workspace);
  int64_t* order = starts + p.segments + 1;
  const Idx* ids = static_cast<const Idx*>(p.ids);
  bucket_items(p.segments, starts, order, [&](auto place) {
    for (int64_t i = 0; i < p.rows; ++i) {
      const int64_t id = ids[i * p.ids_stride];
      place(i, id >= 0 && id < p.segments ? id : -1);
    }
  });
  SegmentRows<int64_t> r;
  r.offsets = starts;
  r.order = order;
  r.rows = p.rows;
  r.segments = p.segments;
  return r;
}

// The rows of unsorted ids whose segment s is in [lo, hi) (the calling owner's; a bad id is no
// one's), in row order: row(i, s, from), `from` the row's first element, the row `ahead` prefetched
// where rows are a line or more apart. p's fields in locals: the stores through the outputs could
// alias p, for all GCC knows.
template <class T, class Idx, class Row>
[[gnu::always_inline]] inline void for_owned_rows(const SegmentProblem& p, const Idx* ids, int64_t lo, int64_t hi,
                                                  Row&& row) {
  const T* data = static_cast<const T*>(p.row_in);
  const int64_t rows = p.rows, id_stride = p.ids_stride, row_stride = p.row_stride;
  const int64_t ahead = prefetch_ahead(row_stride, sizeof(T)), row_bytes = p.length * int64_t{sizeof(T)};
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t s = static_cast<int64_t>(ids[i * id_stride]);
    if (static_cast<uint64_t>(s - lo) >= static_cast<uint64_t>(hi - lo)) continue;  // not owned, or bad
    const T* from = data + i * row_stride;
    if (ahead && i + ahead < rows) prefetch_bytes(from + ahead * row_stride, row_bytes);
    row(i, s, from);
  }
}

// The sums of fold_in_row_order for f32 / f64 (their states the output rows themselves): rows of
// segments [lo, hi) added in row order, counted where the caller needs the counts (a mean; an empty
// segment's value other than +0; one column needs them for nothing else); in the widest vectors the
// machine has, as add_unit_rows.
template <class Fold, class T, class Idx>
BARACUDA_CPU_CLONES void add_owned_rows(const SegmentProblem& p, const Idx* ids, int64_t lo, int64_t hi, bool counted,
                                        int64_t* counts) {
  T* out = static_cast<T*>(p.segment_out);
  const int64_t length = p.length, out_stride = p.segment_stride;
  if (length == 1) {  // one column: every owned sum from +0 (as the first row's), then no branch a row
    for (int64_t s = lo; s < hi; ++s) out[s * out_stride] = T(0);
    const auto add = [&](auto count) {
      for_owned_rows<T>(p, ids, lo, hi, [&](int64_t, int64_t s, const T* from) {
        if constexpr (decltype(count)::value) ++counts[s];
        out[s * out_stride] = Fold::add(out[s * out_stride], *from);
      });
    };
    counted ? add(std::true_type{}) : add(std::false_type{});
    return;
  }
  for_owned_rows<T>(p, ids, lo, hi, [&](int64_t, int64_t s, const T* __restrict from) {
    T* __restrict to = out + s * out_stride;
    if (counts[s]++ == 0) {  // the segment's first row (+0 first, as the sort's sums)
      for (int64_t c = 0; c < length; ++c) to[c] = Fold::add(T(0), from[c]);
    } else {
      for (int64_t c = 0; c < length; ++c) to[c] = Fold::add(to[c], from[c]);
    }
  });
}

// A later row `from` (row i) folded into a segment's max / min `to` and their rows `at` (none: null),
// where it takes over: every test evaluated, no branch, so that the loop vectorizes.
template <class Fold, class T, class Idx>
[[gnu::always_inline]] inline void take_extremes(const T* __restrict from, T* __restrict to, Idx* __restrict at, Idx i,
                                                 int64_t length) {
  using A = acc_t<T>;  // (16-bit values compared in f32, exactly)
  // (16-bit types picked by their bits: selects of the structs kept the loops scalar)
  const auto pick = [](T& dst, const T& src, bool take) {
    if constexpr (std::is_arithmetic_v<T>)
      dst = take ? src : dst;
    else
      dst.bits = take ? src.bits : dst.bits;
  };
  if (at) {
    for (int64_t c = 0; c < length; ++c) {
      const bool take = Fold::takes_over(to_acc<A>(from[c]), to_acc<A>(to[c]), false);
      at[c] = take ? i : at[c];
      pick(to[c], from[c], take);
    }
  } else {
    for (int64_t c = 0; c < length; ++c)
      pick(to[c], from[c], Fold::takes_over(to_acc<A>(from[c]), to_acc<A>(to[c]), false));
  }
}

// The max / min of add_owned_rows (any floating type): rows of segments [lo, hi) folded in row
// order into their output rows, and their rows into `indices` (none: null), a segment's first row
// copied. Uncounted (no indices asked, and an empty segment's value the fold's identity, -inf for
// max and +inf for min): every owned output starts at the identity, which every value but itself
// takes over (the same bits as taking the first row), and no count is kept.
template <class Fold, class T, class Idx>
BARACUDA_CPU_CLONES void fold_owned_extremes(const SegmentProblem& p, const Idx* ids, int64_t lo, int64_t hi,
                                             int64_t* counts, Idx* indices, bool counted, T identity) {
  using A = acc_t<T>;  // (16-bit values compared in f32, exactly)
  T* out = static_cast<T*>(p.segment_out);
  const int64_t length = p.length, out_stride = p.segment_stride;
  if (!counted) {
    for (int64_t s = lo; s < hi; ++s) std::fill_n(out + s * out_stride, length, identity);
    if (length == 1) {  // its own loop, few registers, no branch on the data but a NaN's
      for_owned_rows<T>(p, ids, lo, hi,
                        [&](int64_t, int64_t s, const T* from) { fold_one_extreme<Fold>(out[s * out_stride], *from); });
    } else {
      for_owned_rows<T>(p, ids, lo, hi, [&](int64_t, int64_t s, const T* from) {
        take_extremes<Fold>(from, out + s * out_stride, static_cast<Idx*>(nullptr), Idx(0), length);
      });
    }
    return;
  }
  for_owned_rows<T>(p, ids, lo, hi, [&](int64_t i, int64_t s, const T* from) {
    T* to = out + s * out_stride;
    Idx* at = indices ? indices + s * p.indices_stride : nullptr;
    if (counts[s]++ == 0) {  // the segment's first row
      std::copy(from, from + length, to);
      if (at) std::fill(at, at + length, static_cast<Idx>(i));
    } else if (length == 1) {  // one column: a branch a row, rarely taken, beats the selects
      if (Fold::takes_over(to_acc<A>(*from), to_acc<A>(*to), false)) {
        *to = *from;
        if (at) *at = static_cast<Idx>(i);
      }
    } else {
      take_extremes<Fold>(from, to, at, static_cast<Idx>(i), length);
    }
  });
}

// Unsorted ids, rows whose columns are one unit-stride run on both sides (and on the indices' side
// for max / min): each row folded into its segment's state in row order, a segment's rows counted
// in the workspace; no sort and no gather of rows in segment order (several times faster than the
// sort: bench/NOTES.md). The same arithmetic in the same order as the sort's (a stable sort keeps
// row order within a segment), so the same bits; max / min keep the first row attaining (a later
// one takes over only if strictly past it, or NaN where the best is not). Each thread owns a range
// of segments and reads every id (a few owners only). A segment's state is its output row itself
// for f32 / f64; for 16-bit sum and mean, f32 sums in the workspace after the counts, rounded once
// at the end, where they fit the room select sized for the sort ((S + 1 + N) int64s; so a plan's
// workspace does not change).
template <SegmentReduction R, class T, class Idx>
bool fold_in_row_order(const SegmentProblem& p) {
  using A = acc_t<T>;
  using Fold = SegmentFold<R, A>;
  constexpr bool kInPlace = std::is_floating_point_v<T> && std::is_same_v<T, A>;
  constexpr bool kSixteen = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
  // Max / min select values, so their state is the output row itself in any floating type; 16-bit
  // sums and means are f32 sums in the workspace.
  constexpr bool kSums = !kInPlace && !Fold::kExtreme;
  if constexpr (!kInPlace && !kSixteen) {
    return false;
  } else {
    Idx* indices = static_cast<Idx*>(p.indices);
    const auto unit = [&](int t) { return p.columns.strides[t][0] == 1; };
    const bool unit_all = p.columns.rank == 0 ||
                          (p.columns.rank == 1 && unit(kRowSide) && unit(kSegmentSide) && (!indices || unit(kIndices)));
    if (!unit_all) return false;
    const int64_t length = p.length;
    int64_t* counts = static_cast<int64_t*>(p.workspace);
    A* sums = nullptr;
    if constexpr (kSums) {
      const CheckedSize sums_bytes = CheckedSize(p.segments) * length * int64_t{sizeof(A)};
      const CheckedSize room = (CheckedSize(p.rows) + 1) * int64_t{sizeof(int64_t)};
      if (!sums_bytes.below(room.saturated())) return false;
      sums = reinterpret_cast<A*>(counts + p.segments);
    }
    T* out = static_cast<T*>(p.segment_out);
    const Idx* ids = static_cast<const Idx*>(p.ids);
    const T empty = from_acc<T>(p.empty_value);
    // One-column sums need no counts where an empty segment's value is +0, the sums' start; nor max /
    // min with no indices asked where it is their identity (fold_owned_extremes).
    // (16-bit sums start at +0 in the workspace whatever the length: no first row to tell)
    const bool uncounted_sum = R == SegmentReduction::sum && (kSums || (kInPlace && length == 1)) &&
                               p.empty_value == 0 && !std::signbit(p.empty_value);
    const double inf = std::numeric_limits<double>::infinity();
    const T identity = from_acc<T>(R == SegmentReduction::max ? -inf : inf);
    const bool uncounted_extremes =
        Fold::kExtreme && !indices && p.empty_value == (R == SegmentReduction::max ? -inf : inf);
    const bool counted = !uncounted_sum && !uncounted_extremes;
#pragma omp parallel num_threads(scatter_owners()) if (p.rows * length > kParallelThreshold)
    {
      int64_t lo, hi;
      owned_range(p.segments, lo, hi);
      std::fill(counts + lo, counts + hi, int64_t{0});
      // (the sort's sums start at +0 too: the same bits, a first value of -0 or NaN included)
      if constexpr (kSums) std::fill(sums + lo * length, sums + hi * length, A(0));
      if constexpr (kInPlace && !Fold::kExtreme) add_owned_rows<Fold, T>(p, ids, lo, hi, counted, counts);
      if constexpr (Fold::kExtreme) fold_owned_extremes<Fold, T>(p, ids, lo, hi, counts, indices, counted, identity);
      if constexpr (kSums) {
        if (length == 1)  // one column: no loop over columns a row (its set-up cost more than the add)
          for_owned_rows<T>(p, ids, lo, hi, [&](int64_t, int64_t s, const T* from) {
            if (counted) ++counts[s];
            sums[s] = Fold::add(sums[s], to_acc<A>(*from));
          });
        else
          for_owned_rows<T>(p, ids, lo, hi, [&](int64_t, int64_t s, const T* from) {
            if (counted) ++counts[s];
            A* to = sums + s * length;
            for (int64_t c = 0; c < length; ++c) to[c] = Fold::add(to[c], to_acc<A>(from[c]));
          });
      }
      for (int64_t s = lo; s < (counted || kSums ? hi : lo); ++s) {
        T* to = out + s * p.segment_stride;
        if (counted && counts[s] == 0) {
          std::fill_n(to, length, empty);
          if (indices) std::fill_n(indices + s * p.indices_stride, length, static_cast<Idx>(-1));
          continue;
        }
        if constexpr (!kSums) {
          if constexpr (R == SegmentReduction::mean)
            for (int64_t c = 0; c < length; ++c) to[c] = to[c] / static_cast<T>(counts[s]);
        } else {
          for (int64_t c = 0; c < length; ++c) {
            A v = sums[s * length + c];
            if constexpr (R == SegmentReduction::mean) v = v / static_cast<A>(counts[s]);
            to[c] = from_acc<T>(v);
          }
        }
      }
    }
    return true;
  }
}

template <SegmentReduction R, class T, class Idx>
void forward(const SegmentProblem& p) {
  if (p.segments == 0 || p.length == 0) return;
  if (p.form == SegmentForm::unsorted_ids && p.rows > 0) {
    if (!fold_in_row_order<R, T, Idx>(p)) reduce_segments<R, T, Idx>(p, sort_rows<Idx>(p));
  } else {
    reduce_segments<R, T, Idx>(p, p.segment_rows<Idx>());
  }
}

template <SegmentReduction R, class T, class Idx>
void backward(const SegmentProblem& p) {
  using A = acc_t<T>;
  if (p.rows == 0 || p.length == 0) return;
  const SegmentRows<Idx> rows = p.segment_rows<Idx>();
  // The mean of the ids forms counts each segment's rows first, in the workspace.
  const bool counted = R == SegmentReduction::mean && p.form != SegmentForm::offsets;
  int64_t* counts = counted ? static_cast<int64_t*>(p.workspace) : nullptr;
  if (counts) {
    std::fill_n(counts, p.segments, int64_t{0});
    for (int64_t i = 0; i < p.rows; ++i)
      if (const int64_t s = rows.segment_of(i); s >= 0) ++counts[s];
  }
  const T* dout = static_cast<const T*>(p.segment_in);
  T* ddata = static_cast<T*>(p.row_out);
  const Idx* indices = static_cast<const Idx*>(p.indices);
  const int64_t length = p.length, chunks = ceil_div(length, kColumnChunk);
  ChunkOffsets chunk_offsets;
#pragma omp parallel for schedule(static) firstprivate(chunk_offsets) if (p.rows * length > kParallelThreshold)
  for (int64_t w = 0; w < p.rows * chunks; ++w) {
    const int64_t i = w / chunks, c0 = (w % chunks) * kColumnChunk, c1 = std::min(length, c0 + kColumnChunk);
    const int n = static_cast<int>(c1 - c0);
    const auto& off = chunk_offsets.of(p, c0, c1);
    T* dst = ddata + i * p.row_stride;
    const int64_t s = rows.segment_of(i);
    if (s < 0) {
      for (int j = 0; j < n; ++j) dst[off[kRowSide][j]] = from_acc<T>(A(0));
      continue;
    }
    const T* dy = dout + s * p.segment_stride;
    A scale = A(1);
    if constexpr (R == SegmentReduction::mean) {
      int64_t b = 0, e = 0;
      if (!counts) rows.bounds(s, b, e);
      scale = A(1) / static_cast<A>(counts ? counts[s] : e - b);
    }
    for (int j = 0; j < n; ++j) {
      A g = to_acc<A>(dy[off[kSegmentSide][j]]);
      if constexpr (R == SegmentReduction::mean) g *= scale;
      if constexpr (R == SegmentReduction::max || R == SegmentReduction::min)
        g = static_cast<int64_t>(indices[s * p.indices_stride + off[kIndices][j]]) == i ? g : A(0);
      dst[off[kRowSide][j]] = from_acc<T>(g);
    }
  }
}

template <SegmentReduction R>
Status run(const SegmentProblem& p) {
  return dispatch_index(p.index_dtype, [&](auto index_tag) {
    using Idx = typename decltype(index_tag)::type;
    Status st;
    if (p.backward) {
      st = dispatch_float<half, bfloat16>(p.dtype, [&](auto tag) {
        backward<R, typename decltype(tag)::type, Idx>(p);
        return Status::ok();
      });
    } else {
      st = dispatch_float<half, bfloat16, int32_t, int64_t>(p.dtype, [&](auto tag) {
        forward<R, typename decltype(tag)::type, Idx>(p);
        return Status::ok();
      });
    }
    if (st) count_bad<Idx>(p);
    return st;
  });
}

}  // namespace

CheckedSize segment_workspace(const SegmentProblem& p) {
  const bool work = p.rows > 0 && p.segments > 0 && p.length > 0;
  if (!work) return 0;
  if (!p.backward && p.form == SegmentForm::unsorted_ids)
    return (CheckedSize(p.segments) + 1 + p.rows) * int64_t{sizeof(int64_t)};
  if (p.backward && p.reduction == SegmentReduction::mean && p.form != SegmentForm::offsets)
    return CheckedSize(p.segments) * int64_t{sizeof(int64_t)};
  return 0;
}

Status launch(const LaunchContext&, const SegmentProblem& p) {
  switch (p.reduction) {
    case SegmentReduction::sum:
      return run<SegmentReduction::sum>(p);
    case SegmentReduction::mean:
      return run<SegmentReduction::mean>(p);
    case SegmentReduction::max:
      return run<SegmentReduction::max>(p);
    default:
      return run<SegmentReduction::min>(p);
  }
}

}  // namespace baracuda::detail::cpu

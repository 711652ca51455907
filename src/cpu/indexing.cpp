// CPU kernels of the indexing family. Gather: rows in parallel. Scatter-add: (key, position) pairs
// sorted in the workspace, then each destination summed in the original order by one thread, in
// the accumulator type: deterministic and free of races for any number of threads.
#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "common/convert.hpp"
#include "common/dispatch.hpp"
#include "cpu/parallel.hpp"
#include "cpu/scatter_order.hpp"
#include "cpu/vector_math.hpp"
#include "ops/indexing_problem.hpp"

namespace baracuda::detail::cpu {
namespace {

constexpr int64_t kColumnChunk = 256;
// Elements of a work item: the gather copies at least this many (rows of it, or a piece of one long
// row); zeroing and the bad-index count take blocks of it.
constexpr int64_t kItem = 16384;

// Calls f(i, off) for elements [begin, end) of a walk in order, off[t] each tensor's offset: the
// offsets divided out once a line of the innermost dim, then stepped by its strides, instead of once
// an element (an element-mode gather spent about 30 ns an element on the divisions).
template <int NT, class F>
void for_offsets(const Walker<NT>& w, int64_t begin, int64_t end, F&& f) {
  const int64_t inner = std::max<int64_t>(w.inner_size(), 1);
  int64_t step[NT];
  for (int t = 0; t < NT; ++t) step[t] = w.inner_stride(t);
  for (int64_t i = begin; i < end;) {
    const int64_t n = std::min(inner - i % inner, end - i);
    int64_t off[NT];
    w.offsets(i, off);
    for (int64_t j = 0; j < n; ++j, ++i) {
      f(i, off);
      for (int t = 0; t < NT; ++t) off[t] += step[t];
    }
  }
}

// Calls f(r, values_off, index_off, table_base) for rows [begin, end) in order (table_base: the
// row's table offset off dim).
template <class F>
void for_rows(const IndexedLayout& layout, int64_t begin, int64_t end, F&& f) {
  for_offsets(layout.rows, begin, end,
              [&](int64_t r, const int64_t(&off)[kRowTensors]) { f(r, off[0], off[1], off[2]); });
}

// Where the walk's line is dim itself, a line reads (or adds into) one table row at random. When that
// row is contiguous, at most kPrefetchRowBytes, and the line has an entry a 64-byte cache line of it
// or more (most of its lines are touched), the next line's row (walk position `next`) is prefetched
// whole while this one is done: gather f32 [1024, 1024, 256] 0.65 -> 0.37 ms on one core.
constexpr int64_t kPrefetchRowBytes = 16384;

// The table row that walk position `next` reads, when worth prefetching whole (above), else null; its
// bytes in `bytes`. (The callers issue the prefetches themselves: GCC drops a call to a function
// that only prefetches, which it finds free of side effects.)
template <class E>
const char* row_to_prefetch(const IndexedLayout& layout, const E* table, int64_t next, int64_t& bytes) {
  const Walker<kRowTensors>& w = layout.rows;
  bytes = layout.dim_size * static_cast<int64_t>(sizeof(E));
  if (w.inner_stride(2) != 0 || layout.table_dim_stride != 1 || bytes > kPrefetchRowBytes ||
      w.inner_size() * 64 < bytes)
    return nullptr;
  int64_t off[kRowTensors];
  w.offsets(next, off);
  return reinterpret_cast<const char*>(table + off[2]);
}

// Calls f(off, n) for each line of the walk's rows [r0, r1) (n consecutive rows from offsets off),
// first prefetching the next line's table row where that pays (row_to_prefetch; `table`: what the
// rows read or add into, indexed like the table).
template <class E, class F>
void for_element_lines(const IndexedLayout& layout, const E* table, int64_t r0, int64_t r1, F&& f) {
  const Walker<kRowTensors>& w = layout.rows;
  const int64_t inner = std::max<int64_t>(w.inner_size(), 1);
  for (int64_t i = r0; i < r1;) {
    const int64_t n = std::min(inner - i % inner, r1 - i);
    int64_t off[kRowTensors];
    w.offsets(i, off);
    int64_t bytes = 0;
    if (const char* row = i + n < r1 ? row_to_prefetch(layout, table, i + n, bytes) : nullptr)
      for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(row + b);  // (baseline x86-64: no write prefetch)
    f(off, n);
    i += n;
  }
}

// Calls f(values_off, table_off) for each row of one element in [r0, r1) whose index value is valid,
// in order, a line at a time with its offsets in registers (a scatter of elements through for_rows
// spent twice as long).
template <class Idx, class E, class F>
void for_valid_elements(const IndexedLayout& layout, const Idx* index, const E* sums, int64_t r0, int64_t r1, F&& f) {
  const Walker<kRowTensors>& w = layout.rows;
  const int64_t values_step = w.inner_stride(0), index_step = w.inner_stride(1), table_step = w.inner_stride(2);
  for_element_lines(layout, sums, r0, r1, [&](const int64_t(&off)[kRowTensors], int64_t n) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t table_off;
      if (layout.table_row(index[off[1] + j * index_step], off[2] + j * table_step, table_off))
        f(off[0] + j * values_step, table_off);
    }
  });
}

template <class Idx>
void count_bad_indices(const IndexedProblem& p) {
  if (!p.bad_index_count) return;
  const AnyTensorRef& v = p.index_view;
  const Idx* index = static_cast<const Idx*>(v.data);
  int64_t repeats = 1;
  const Walker<1> walker = distinct_elements(v, repeats);
  int64_t bad = 0;
  const int64_t n = v.numel() == 0 ? 0 : walker.numel(), blocks = (n + kItem - 1) / kItem;
#pragma omp parallel for reduction(+ : bad) if (n > kParallelThreshold)
  for (int64_t b = 0; b < blocks; ++b)
    for_offsets(walker, b * kItem, std::min(n, (b + 1) * kItem),
                [&](int64_t, const int64_t(&off)[1]) { bad += bad_index(index[off[0]], p.layout.dim_size) ? 1 : 0; });
  *p.bad_index_count += bad * repeats;
}

// One line of single elements: out[j] = table[j * table_step + index[j] * stride], zero where the
// index value is bad. A loop of one shape built for the host's widest vectors (AVX-512 gathers):
// element-mode gathers 2.3x (f32) to 2.6x (bf16) faster than through for_rows' per-element lambda
// (bench/NOTES.md, "CPU indexing, second tuning").
template <class Bits, class Idx, bool kTableSteps>
BARACUDA_CPU_CLONES void gather_line(Bits* out, int64_t out_step, const Idx* index, int64_t index_step,
                                     const Bits* table, int64_t table_step, int64_t stride, int64_t n, int64_t dim_size,
                                     int64_t padding) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    const int64_t i = static_cast<int64_t>(index[j * index_step]);
    const bool valid = i >= 0 && i < dim_size && i != padding;
    const int64_t along = kTableSteps ? j * table_step : 0;  // 0: the line is dim itself (one table row)
    out[j * out_step] = valid ? table[along + (valid ? i : 0) * stride] : Bits{0};
  }
}

// Rows [r0, r1) of an element-mode walk (or rows of one element), a line of the walk at a time.
// (Offsets are at most the views' extents, below 2^62 elements: the sums cannot overflow.)
template <class Bits, class Idx>
void gather_elements(const IndexedLayout& layout, Bits* values, const Bits* table, const Idx* index, int64_t r0,
                     int64_t r1) {
  const Walker<kRowTensors>& w = layout.rows;
  const auto line = w.inner_stride(2) == 0 ? gather_line<Bits, Idx, false> : gather_line<Bits, Idx, true>;
  for_element_lines(layout, table, r0, r1, [&](const int64_t(&off)[kRowTensors], int64_t n) {
    line(values + off[0], w.inner_stride(0), index + off[1], w.inner_stride(1), table + off[2], w.inner_stride(2),
         layout.table_dim_stride, n, layout.dim_size, layout.padding);
  });
}

// Copies are done on the element's bits: one kernel per element size. Work items of about kItem
// elements: blocks of whole rows, or pieces of one long row; a row whose elements are consecutive
// on both sides is one memcpy.
template <class Bits, class Idx>
Status gather(const IndexedProblem& p) {
  const IndexedLayout& layout = p.layout;
  Bits* values = static_cast<Bits*>(p.values);
  const Bits* table = static_cast<const Bits*>(p.table);
  const Idx* index = static_cast<const Idx*>(p.index);
  const int64_t length = layout.row_length, rows = layout.row_count;
  const bool unit = layout.unit_columns();
  const int64_t piece = std::min(std::max<int64_t>(length, 1), kItem);
  const int64_t pieces_per_row = (length + piece - 1) / piece;
  const int64_t rows_per_item = std::max<int64_t>(1, kItem / piece);
  const int64_t row_items = (rows + rows_per_item - 1) / rows_per_item;
#pragma omp parallel for schedule(static) if (rows * length > kParallelThreshold)
  for (int64_t item = 0; item < row_items * pieces_per_row; ++item) {
    const int64_t r0 = item / pieces_per_row * rows_per_item, r1 = std::min(rows, r0 + rows_per_item);
    const int64_t begin = item % pieces_per_row * piece, end = std::min(length, begin + piece);
    const auto row = [&](int64_t, int64_t values_off, int64_t index_off, int64_t table_base) {
      int64_t table_off;
      const bool valid = layout.table_row(index[index_off], table_base, table_off);
      if (unit) {  // (rows of one element are gather_elements')
        Bits* to = values + values_off + begin;
        if (valid)
          std::copy(table + table_off + begin, table + table_off + end, to);
        else
          std::fill(to, to + (end - begin), Bits{0});
        return;
      }
      for (int64_t i = begin; i < end; ++i) {
        int64_t dv, dt;
        layout.column(i, dv, dt);
        values[values_off + dv] = valid ? table[table_off + dt] : Bits{0};
      }
    };
    if (length == 1)
      gather_elements(layout, values, table, index, r0, r1);
    else
      for_rows(layout, r0, r1, row);
  }
  count_bad_indices<Idx>(p);
  return Status::ok();
}

// Zeroes every element of a (strided) view: an overwriting scatter's table before its sums (per
// element through offsets(), zeroing a 2M-element gradient took 6 ms); a contiguous view in runs.
template <class Bits>
void zero_view(const AnyTensorRef& view) {
  Bits* data = static_cast<Bits*>(const_cast<void*>(view.data));
  const Strides* strides[1] = {&view.strides};
  const Walker<1> walker = make_walker<1>(view.shape, strides);
  const bool contiguous = walker.rank == 0 || (walker.rank == 1 && walker.inner_stride(0) == 1);
  const int64_t n = view.numel() == 0 ? 0 : walker.numel(), blocks = (n + kItem - 1) / kItem;
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t begin = b * kItem, end = std::min(n, begin + kItem);
    if (contiguous)
      std::fill(data + begin, data + end, Bits{0});
    else
      for_offsets(walker, begin, end, [&](int64_t, const int64_t(&off)[1]) { data[off[0]] = Bits{0}; });
  }
}

struct KeyPosition {
  int64_t key;
  int64_t position;
};

// Each entry added in entry order, each thread owning a range of destinations (table offsets) and
// reading every entry: a destination takes its entries in one order whatever the thread count
// (deterministic), with no sort (XLA's scatter on the CPU is such a loop; sorting 2^18 entries took
// 26 ms where this takes 0.6). f32 and f64 add straight into the table. 16-bit types sum each
// destination in an f32 scratch indexed like the table (`scratch`, zeroed here), then add the sum to
// the table at its first entry and zero it, so that its later entries add +0: the same arithmetic,
// in the same order, as the sorted path, so the same bits. (Adding +0 leaves every value but -0 as
// it is, and no sum leaves a -0: the sums of 16-bit values in f32 are exact multiples of the type's
// smallest step, so a nonzero one never rounds to zero, and x + y is -0 only when both are. A byte
// a destination to mark the sums added instead made the scratch miss the sort's workspace at
// gather backward [1024, 1024, 256]: 1.57 -> 13.3 ms.)
template <class T, class Idx>
void scatter_add_in_order(const IndexedProblem& p, acc_t<T>* scratch) {
  using Acc = acc_t<T>;
  constexpr bool kScratch = !std::is_same_v<T, Acc>;
  const IndexedLayout& layout = p.layout;
  const T* values = static_cast<const T*>(p.values);
  T* table = static_cast<T*>(p.table);
  const Idx* index = static_cast<const Idx*>(p.index);
  const int64_t rows = layout.row_count, length = layout.row_length, extent = layout.sentinel_key;
  const bool unit = layout.unit_columns();
  const bool parallel = rows * length > kParallelThreshold;
  if constexpr (kScratch) {
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t i = 0; i < extent; ++i) scratch[i] = Acc(0);
  }
#pragma omp parallel num_threads(scatter_owners()) if (parallel)
  {
    int64_t lo, hi;
    owned_range(extent, lo, hi);
    // f(key, values_off) for each of this owner's entries, in entry order.
    auto each_owned = [&](auto f) {
      if (length == 1) {
        const Acc* sums = [&] {  // what the first pass adds into: the row to prefetch
          if constexpr (kScratch)
            return static_cast<const Acc*>(scratch);
          else
            return static_cast<const Acc*>(table);
        }();
        for_valid_elements(layout, index, sums, 0, rows, [&](int64_t values_off, int64_t key) {
          if (key >= lo && key < hi) f(key, values_off);
        });
        return;
      }
      for_rows(layout, 0, rows, [&](int64_t, int64_t values_off, int64_t index_off, int64_t base) {
        int64_t key;
        if (layout.table_row(index[index_off], base, key) && key >= lo && key < hi) f(key, values_off);
      });
    };
    each_owned([&](int64_t key, int64_t values_off) {
      auto* out = [&] {
        if constexpr (kScratch)
          return scratch + key;
        else
          return table + key;
      }();
      if (length == 1) {
        *out += convert<Acc>(values[values_off]);
        return;
      }
      if (unit) {  // consecutive elements: a loop the compiler vectorizes
        const T* from = values + values_off;
        for (int64_t c = 0; c < length; ++c) out[c] += convert<Acc>(from[c]);
        return;
      }
      for (int64_t c = 0; c < length; ++c) {
        int64_t dv, dt;
        layout.column(c, dv, dt);
        out[dt] += convert<Acc>(values[values_off + dv]);
      }
    });
    if constexpr (kScratch) {
      each_owned([&](int64_t key, int64_t) {
        for (int64_t c = 0; c < length; ++c) {
          int64_t dv = 0, dt = c;
          if (!unit) layout.column(c, dv, dt);
          T& out = table[key + dt];
          out = convert<T>(convert<Acc>(out) + scratch[key + dt]);
          scratch[key + dt] = Acc(0);
        }
      });
    }
  }
}

// Rows mode of 16-bit types (index_select's and embedding's backward): the entries (walk rows)
// bucketed by their destination row in the workspace (RowBuckets, bucket_items), then
// each destination row summed in f32 in entry order and written once, every row of an overwritten
// table included (zeros where no entry lands): one rounding a destination, the same arithmetic as
// the sort of (key, position) pairs it replaces, at a third of its time (embedding backward bf16
// [4000, 512] <- 2048 rows: 1.64 -> 0.59 ms on one core; bench/NOTES.md). (f32 and f64 add in entry
// order into the zeroed table instead: reading the values in destination order measured 0.75-0.78
// ms against 0.42.) Destination d is table row (prefix, i) = prefix * dim_size + i, prefix the walk
// row's position over the dims before dim.
// Rows of at least this many elements take it (a destination costs about 10 ns beside its row:
// index_select backward bf16 along the last dim, rows of one element, took 0.89 -> 10.6 ms).
constexpr int64_t kBucketedRowLength = 64;
struct RowBuckets {
  int64_t* starts;  // destinations + 1: where each destination's entries start in `order`
  int64_t* order;   // the walk rows, grouped by destination, in entry order within a group
};
CheckedSize row_buckets_bytes(int64_t destinations, int64_t rows) {
  return (CheckedSize(destinations) + 1 + rows) * static_cast<int64_t>(sizeof(int64_t));
}

template <class T, class Idx>
void scatter_rows_bucketed(const IndexedProblem& p, bool overwrite) {
  using Acc = acc_t<T>;
  const IndexedLayout& layout = p.layout;
  const T* values = static_cast<const T*>(p.values);
  T* table = static_cast<T*>(p.table);
  const Idx* index = static_cast<const Idx*>(p.index);
  const int64_t rows = layout.row_count, length = layout.row_length, dim_size = layout.dim_size;
  const int64_t along = p.desc.shape.dims[p.desc.dim], destinations = rows / along * dim_size;
  const RowBuckets b{static_cast<int64_t*>(p.workspace), static_cast<int64_t*>(p.workspace) + destinations + 1};
  // The destination of walk row r, or -1 (a bad or padding index value).
  const auto destination = [&](int64_t r, int64_t index_off) {
    const int64_t i = static_cast<int64_t>(index[index_off]);
    return i >= 0 && i < dim_size && i != layout.padding ? r / along * dim_size + i : -1;
  };
  bucket_items(destinations, b.starts, b.order, [&](auto place) {
    for_rows(layout, 0, rows,
             [&](int64_t r, int64_t, int64_t index_off, int64_t) { place(r, destination(r, index_off)); });
  });
  const int64_t placed = b.starts[destinations];  // the valid entries
  const bool unit = layout.unit_columns();
#pragma omp parallel for schedule(static) if (rows * length > kParallelThreshold || \
                                              destinations * length > kParallelThreshold)
  for (int64_t d = 0; d < destinations; ++d) {
    const int64_t first = b.starts[d], last = b.starts[d + 1];
    if (first == last && !overwrite) continue;
    int64_t off[kRowTensors];
    layout.rows.offsets(d / dim_size * along, off);
    T* out = table + off[2] + (d % dim_size) * layout.table_dim_stride;
    if (first == last && unit) {  // an overwritten row no entry reaches
      std::fill(out, out + length, T{});
      continue;
    }
    for (int64_t c0 = 0; c0 < length; c0 += kColumnChunk) {
      const int64_t c1 = std::min(length, c0 + kColumnChunk);
      Acc sum[kColumnChunk] = {};
      for (int64_t e = first; e < last; ++e) {
        layout.rows.offsets(b.order[e], off);
        if (unit) {  // consecutive elements: a loop the compiler vectorizes
          // The entries come in destination order, each from anywhere in the values: the next one's
          // piece (this destination's next entry, else its first entry's next piece, else the next
          // destination's first entry) is prefetched whole while this one is summed (embedding
          // backward [4000, 512] <- 2048 rows: f32 0.91 -> 0.78 ms on one core).
          const bool more = e + 1 < last;
          const int64_t next = more            ? b.order[e + 1]
                               : c1 < length   ? b.order[first]
                               : last < placed ? b.order[last]
                                               : -1;
          if (next >= 0) {
            int64_t next_off[kRowTensors];
            layout.rows.offsets(next, next_off);
            const int64_t n0 = more ? c0 : c1 < length ? c1 : 0, n1 = std::min(length, n0 + kColumnChunk);
            const char* piece = reinterpret_cast<const char*>(values + next_off[0] + n0);
            for (int64_t at = 0; at < (n1 - n0) * static_cast<int64_t>(sizeof(T)); at += 64)
              __builtin_prefetch(piece + at);
          }
          const T* from = values + off[0];
          for (int64_t c = c0; c < c1; ++c) sum[c - c0] += convert<Acc>(from[c]);
          continue;
        }
        for (int64_t c = c0; c < c1; ++c) {
          int64_t dv, dt;
          layout.column(c, dv, dt);
          sum[c - c0] += convert<Acc>(values[off[0] + dv]);
        }
      }
      if (unit) {  // loops the compiler vectorizes
        if (overwrite) {
          for (int64_t c = c0; c < c1; ++c) out[c] = convert<T>(sum[c - c0]);
        } else {
          for (int64_t c = c0; c < c1; ++c) out[c] = convert<T>(convert<Acc>(out[c]) + sum[c - c0]);
        }
        continue;
      }
      for (int64_t c = c0; c < c1; ++c) {
        int64_t dv, dt;
        layout.column(c, dv, dt);
        out[dt] = overwrite ? convert<T>(sum[c - c0]) : convert<T>(convert<Acc>(out[dt]) + sum[c - c0]);
      }
    }
  }
}

// Element mode, overwriting a table the walk covers (gather's backward): the walk seen as [lines,
// entries (along dim), columns (the walk's innermost dim, or 1 where that is dim)]. A work item is
// `width` adjacent columns of one line: their sums for every row of dim in a buffer of the
// workspace (kElementBufferBytes a thread, f32 for 16-bit types), the entries added in entry order,
// then each table element written once from it. So the table is not zeroed and then added into at
// random, and 16-bit types round once a destination without a sort (gather backward bf16 [1024,
// 1024] <- [1024, 256] along dim 1 and along dim 0: bench/NOTES.md). The buffer takes half this
// machine's 1 MB L2 a core: 32-128 KB (narrower tiles, table rows written in pieces) measured
// 1.2-3x slower along dim 0, 1 MB 12% slower.
constexpr int64_t kElementBufferBytes = 512 * 1024;
// At most this many threads, each with its buffer in the workspace: a fixed 4 MB at most, which the
// fuzzer (tests/fuzz/fuzz_plans.cpp, make_case_args) tells from a workspace sized by the work.
constexpr int kElementBufferThreads = 8;

// Taken by 16-bit types, and by f32 / f64 where dim is not the walk's innermost (along it, their
// entry-order adds into the zeroed table, with the next row prefetched, measured 0.44 ms against
// 0.46-0.48 at gather backward f32 [1024, 1024] <- [1024, 256]).
bool buffered_elements(const IndexedProblemDesc& d) {
  const bool sixteen_bit = d.dtype == DType::f16 || d.dtype == DType::bf16;
  bool dim_inner = true;
  for (int k = d.dim + 1; k < d.shape.rank; ++k) dim_inner = dim_inner && d.shape.dims[k] == 1;
  const int64_t acc_bytes = d.dtype == DType::f64 ? 8 : 4;
  return d.scatter && !d.broadcast_index && !d.accumulate && d.shape.numel() > 0 && (sixteen_bit || !dim_inner) &&
         covers_every_table_line(d) && d.table_shape.dims[d.dim] > 0 &&
         d.table_shape.dims[d.dim] <= kElementBufferBytes / acc_bytes;
}
int element_buffer_threads() { return std::min(omp_get_max_threads(), kElementBufferThreads); }
size_t element_buffer_bytes() { return static_cast<size_t>(element_buffer_threads()) * kElementBufferBytes; }

template <class T, class Idx>
void scatter_elements_buffered(const IndexedProblem& p) {
  using Acc = acc_t<T>;
  const IndexedLayout& layout = p.layout;
  const T* values = static_cast<const T*>(p.values);
  T* table = static_cast<T*>(p.table);
  const Idx* index = static_cast<const Idx*>(p.index);
  const EntryColumnWalk walk = entry_column_walk(layout.rows);
  const Walker<3>& lines = walk.lines;
  const int64_t entries = walk.entries, columns = walk.columns;
  const int64_t(&entry_step)[2] = walk.entry_stride;
  const int64_t(&column_step)[3] = walk.column_stride;
  const int64_t dim_size = layout.dim_size;
  const int64_t width = std::min(columns, std::max<int64_t>(1, kElementBufferBytes / int64_t(sizeof(Acc)) / dim_size));
  const int64_t tiles = (columns + width - 1) / width, items = lines.numel() * tiles;
  const int threads = static_cast<int>(
      std::min<size_t>(element_buffer_threads(), p.workspace_size / static_cast<size_t>(kElementBufferBytes)));
#pragma omp parallel num_threads(threads) if (items > 1 && entries * columns * lines.numel() > kParallelThreshold)
  {
    Acc* sums = reinterpret_cast<Acc*>(static_cast<char*>(p.workspace) + omp_get_thread_num() * kElementBufferBytes);
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t line = item / tiles, c0 = (item - line * tiles) * width, n = std::min(width, columns - c0);
      int64_t base[3];
      lines.offsets(line, base);
      std::fill(sums, sums + dim_size * n, Acc(0));
      const T* v = values + base[0] + c0 * column_step[0];
      const Idx* x = index + base[1] + c0 * column_step[1];
      T* out = table + base[2] + c0 * column_step[2];
      if (n == 1) {  // dim is the walk's innermost: one table line, its entries one after the other
        for (int64_t k = 0; k < entries; ++k) {
          const int64_t i = static_cast<int64_t>(x[k * entry_step[1]]);
          if (i >= 0 && i < dim_size) sums[i] += convert<Acc>(v[k * entry_step[0]]);
        }
        if (layout.table_dim_stride == 1) {  // a loop the compiler vectorizes
          for (int64_t i = 0; i < dim_size; ++i) out[i] = convert<T>(sums[i]);
        } else {
          for (int64_t i = 0; i < dim_size; ++i) out[i * layout.table_dim_stride] = convert<T>(sums[i]);
        }
        continue;
      }
      for (int64_t k = 0; k < entries; ++k, v += entry_step[0], x += entry_step[1]) {
        for (int64_t c = 0; c < n; ++c) {
          const int64_t i = static_cast<int64_t>(x[c * column_step[1]]);
          if (i >= 0 && i < dim_size) sums[i * n + c] += convert<Acc>(v[c * column_step[0]]);
        }
      }
      for (int64_t i = 0; i < dim_size; ++i) {
        T* row = out + i * layout.table_dim_stride;
        const Acc* from = sums + i * n;
        if (column_step[2] == 1) {  // a loop the compiler vectorizes
          for (int64_t c = 0; c < n; ++c) row[c] = convert<T>(from[c]);
        } else {
          for (int64_t c = 0; c < n; ++c) row[c * column_step[2]] = convert<T>(from[c]);
        }
      }
    }
  }
}

template <class T, class Idx>
Status scatter_add(const IndexedProblem& p) {
  using Acc = acc_t<T>;
  const IndexedLayout& layout = p.layout;
  const T* values = static_cast<const T*>(p.values);
  T* table = static_cast<T*>(p.table);
  const Idx* index = static_cast<const Idx*>(p.index);
  const int64_t rows = layout.row_count, length = layout.row_length;
  const bool unit = layout.unit_columns();
  // Rows mode of 16-bit types writes every row of a table it covers itself (scatter_rows_bucketed).
  const bool bucketed = !std::is_same_v<T, Acc> && p.desc.broadcast_index && length >= kBucketedRowLength && rows > 0 &&
                        p.desc.shape.numel() > 0;
  const bool fused_overwrite = bucketed && !p.desc.accumulate && covers_every_table_line(p.desc);
  // (The plan's workspace holds a buffer for each thread select saw, one at least.)
  const bool buffered = rows > 0 && buffered_elements(p.desc) && p.workspace_size >= kElementBufferBytes;
  if (!p.desc.accumulate && !fused_overwrite && !buffered) zero_view<T>(p.table_view);
  if (rows == 0 || p.desc.shape.numel() == 0) {  // nothing to add; the index values still count
    count_bad_indices<Idx>(p);
    return Status::ok();
  }
  if (buffered) {
    scatter_elements_buffered<T, Idx>(p);
    count_bad_indices<Idx>(p);
    return Status::ok();
  }
  if (bucketed) {
    scatter_rows_bucketed<T, Idx>(p, fused_overwrite);
    count_bad_indices<Idx>(p);
    return Status::ok();
  }
  // In entry order where no sort is needed (f32, f64), or where an f32 scratch as large as the table
  // fits in the sort's workspace (many entries for the table's size: where the sort costs most).
  const bool scratch_fits = static_cast<uint64_t>(layout.sentinel_key) <= p.workspace_size / sizeof(Acc);
  if (std::is_same_v<T, Acc> || scratch_fits) {
    scatter_add_in_order<T, Idx>(p, static_cast<Acc*>(p.workspace));
    count_bad_indices<Idx>(p);
    return Status::ok();
  }
  KeyPosition* pairs = static_cast<KeyPosition*>(p.workspace);
  const int64_t key_blocks = (rows + kItem - 1) / kItem;
#pragma omp parallel for schedule(static) if (rows > kParallelThreshold)
  for (int64_t b = 0; b < key_blocks; ++b)
    for_rows(layout, b * kItem, std::min(rows, (b + 1) * kItem),
             [&](int64_t r, int64_t, int64_t index_off, int64_t base) {
               int64_t table_off;
               pairs[r] = {layout.table_row(index[index_off], base, table_off) ? table_off : layout.sentinel_key, r};
             });
  // Ordering by (key, position) makes the sort stable without a stable sort's allocation.
  std::sort(pairs, pairs + rows, [](const KeyPosition& a, const KeyPosition& b) {
    return a.key < b.key || (a.key == b.key && a.position < b.position);
  });
  // Blocks of sorted positions in parallel; a destination belongs to the block where it starts.
  const int64_t block = std::max<int64_t>(16, rows / (8 * omp_get_max_threads()));
  const int64_t blocks = (rows + block - 1) / block;
#pragma omp parallel for schedule(dynamic) if (rows * length > kParallelThreshold)
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t s = b * block;
    const int64_t e = std::min(rows, s + block);
    if (s > 0)
      while (s < e && pairs[s].key == pairs[s - 1].key) ++s;
    while (s < e && pairs[s].key != layout.sentinel_key) {
      const int64_t key = pairs[s].key;
      int64_t t = s + 1;
      while (t < rows && pairs[t].key == key) ++t;
      for (int64_t c0 = 0; c0 < length; c0 += kColumnChunk) {
        const int64_t c1 = std::min(length, c0 + kColumnChunk);
        Acc sum[kColumnChunk] = {};
        for (int64_t i = s; i < t; ++i) {
          int64_t values_off, table_off;
          layout.locate(index, pairs[i].position, values_off, table_off);
          if (unit) {  // consecutive elements: a loop the compiler vectorizes
            const T* from = values + values_off;
            for (int64_t c = c0; c < c1; ++c) sum[c - c0] += convert<Acc>(from[c]);
            continue;
          }
          for (int64_t c = c0; c < c1; ++c) {
            int64_t dv, dt;
            layout.column(c, dv, dt);
            sum[c - c0] += convert<Acc>(values[values_off + dv]);
          }
        }
        for (int64_t c = c0; c < c1; ++c) {
          int64_t dv, dt;
          if (unit)
            dv = dt = c;
          else
            layout.column(c, dv, dt);
          T& out = table[key + dt];
          out = convert<T>(convert<Acc>(out) + sum[c - c0]);
        }
      }
      s = t;
    }
  }
  count_bad_indices<Idx>(p);
  return Status::ok();
}

}  // namespace

Status indexed_gather(const IndexedProblem& p) {
  return dispatch_index(p.desc.index_dtype, [&](auto index_tag) {
    using Idx = typename decltype(index_tag)::type;
    switch (dtype_size(p.desc.dtype)) {
      case 2:
        return gather<uint16_t, Idx>(p);
      case 4:
        return gather<uint32_t, Idx>(p);
      default:
        return gather<uint64_t, Idx>(p);
    }
  });
}

Status indexed_scatter_add(const IndexedProblem& p) {
  return dispatch_index(p.desc.index_dtype, [&](auto index_tag) {
    using Idx = typename decltype(index_tag)::type;
    return dispatch_float<half, bfloat16>(p.desc.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return scatter_add<T, Idx>(p);
    });
  });
}

}  // namespace baracuda::detail::cpu

namespace baracuda::detail::cpu {

// The CPU scatter is always deterministic ("sorted"): f32 and f64 add in entry order; 16-bit types
// bucket rows by destination (rows mode), or sort (key, position) pairs in place in the workspace
// (element mode; or sum in an f32 scratch where it fits).
ScatterStrategy scatter_strategy(const IndexedProblemDesc& problem, std::optional<IndexVariant>, bool) {
  int64_t rows = 0, length = 0;
  rows_and_length(problem, rows, length);
  const bool in_order = problem.dtype == DType::f32 || problem.dtype == DType::f64;
  const int64_t along = problem.shape.dims[problem.dim];
  const bool bucketed = problem.broadcast_index && length >= kBucketedRowLength;
  if (buffered_elements(problem))
    return {IndexVariant::sorted, ScatterKernel::general, CheckedSize(static_cast<int64_t>(element_buffer_bytes()))};
  const CheckedSize bytes = problem.shape.numel() == 0 || in_order ? CheckedSize(0)
                            : bucketed ? row_buckets_bytes(rows / along * problem.table_shape.dims[problem.dim], rows)
                                       : CheckedSize(rows) * static_cast<int64_t>(sizeof(KeyPosition));
  return {IndexVariant::sorted, ScatterKernel::general, bytes};
}

Status launch(const LaunchContext&, const IndexedProblem& problem) {
  return problem.desc.scatter ? indexed_scatter_add(problem) : indexed_gather(problem);
}

}  // namespace baracuda::detail::cpu

// The segment family on CUDA: its kernels (cuda/common/segment_kernels.cuh) compiled at select by
// NVRTC, one program a walk of one reduction, dtype and index dtype (what select knows; the views'
// vectors are the run's to pick, so each program holds both a vector and an element kernel); CUB's
// sort and scan compiled ahead of time (cuda/segment_sort.cu). The walks:
//  - segmented (sorted ids, offsets): the segments' starts, then the tiles kernel, and where there is
//    more than one tile the combine kernel for the segments that cross a tile's end;
//  - sort (unsorted ids, deterministic): (segment key, row) pairs radix-sorted (32-bit keys, stable:
//    a segment keeps its rows' order), then segmented over the sorted rows;
//  - atomic (unsorted sum / mean): atomic adds into a scratch, then the finish pass;
//  - backward: one gather pass (the mean of the ids forms first counts each segment's rows).
// Then the bad ids / offsets are counted.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "common/dispatch.hpp"
#include "cuda/common/row_lanes.hpp"
#include "cuda/elementwise_launch.hpp"
#include "cuda/segment_sort.hpp"
#include "ops/segment_problem.hpp"

namespace baracuda::detail::cuda {
namespace {

constexpr std::string_view kKernels = "cuda/common/segment_kernels.cuh";
constexpr std::string_view kMaths = "common/segment.hpp";
constexpr std::string_view kNamespace = "baracuda::detail::cuda::segment::";

constexpr size_t kAlign = 256;
size_t round_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

constexpr bool extreme(SegmentReduction r) { return r == SegmentReduction::max || r == SegmentReduction::min; }
int64_t acc_bytes(DType dtype) { return dtype == DType::f64 || !is_floating(dtype) ? 8 : 4; }
// Elements of a 16-byte vector (the kernels' Vec16).
int vector_elements(DType dtype) { return static_cast<int>(16 / dtype_size(dtype)); }

// The walk a plan runs (select knows it): a program each, with its reduction and dtypes.
enum class Walk { segmented, sort, atomic, backward };
constexpr std::string_view kWalkNames[] = {"segmented", "sort", "atomic", "backward"};
constexpr std::string_view kReductionNames[] = {"sum", "mean", "max", "min"};

Walk walk_of(const SegmentProblem& p) {
  if (p.backward) return Walk::backward;
  if (p.form != SegmentForm::unsorted_ids) return Walk::segmented;
  return p.variant == SegmentVariant::sort ? Walk::sort : Walk::atomic;
}

// A program's kernels, in its order (_vec: a lane a 16-byte vector of the row; else an element). The
// segmented and sort programs: the tiled walk's, then the walk's own (segmented: the packed rows'
// tiles; sort: the keys of 32-bit rows, then of 64-bit ones).
enum class TiledKernel : int { count_bad, starts, tiles_vec, tiles, combine_vec, combine, own };
enum class AtomicKernel : int { count_bad, add_vec, add, finish };
enum class BackwardKernel : int { count_bad, gather_vec, gather, gather_rows, counts };  // (counts: the mean's)

jit::Program walk_program(Walk walk, SegmentReduction reduction, const std::string& t, int vector,
                          const std::string& idx) {
  const std::string_view reduction_name = kReductionNames[static_cast<int>(reduction)];
  const std::string r = "baracuda::detail::SegmentReduction::" + std::string(reduction_name);
  const std::string r_t_idx = r + ", " + t + ", " + idx;
  const std::string vec = r + ", " + std::to_string(vector) + ", " + t + ", " + idx;
  const std::string one = r + ", 1, " + t + ", " + idx;
  jit::Program p = device_program("segment_" + std::string(kWalkNames[static_cast<int>(walk)]) + "<" +
                                      std::string(reduction_name) + ", " + t + ", " + idx + ">",
                                  kKernels, kMaths);
  auto add = [&](std::string_view kernel, const std::string& args) {
    p.kernels.push_back(std::string(kNamespace) + std::string(kernel) + "<" + args + ">");
  };
  add("segment_count_bad_kernel", idx);
  switch (walk) {
    case Walk::segmented:
    case Walk::sort:
      // (the sort walks its sorted keys)
      add("segment_starts_kernel", walk == Walk::sort ? jit::type_name<uint32_t>() : idx);
      add("segment_tiles_kernel", vec);
      add("segment_tiles_kernel", one);
      add("segment_combine_kernel", vec);
      add("segment_combine_kernel", one);
      if (walk == Walk::segmented) {
        add("segment_tiles_packed_kernel", r_t_idx);
      } else {
        add("segment_keys_kernel", idx + ", " + jit::type_name<uint32_t>());
        add("segment_keys_kernel", idx + ", " + jit::type_name<int64_t>());
      }
      break;
    case Walk::atomic:
      add("segment_atomic_kernel", std::to_string(vector) + ", " + t + ", " + idx);
      add("segment_atomic_kernel", "1, " + t + ", " + idx);
      add("segment_finish_kernel", r + ", " + t);
      break;
    case Walk::backward:
      add("segment_backward_kernel", vec);
      add("segment_backward_kernel", one);
      add("segment_backward_rows_kernel", r_t_idx);
      if (reduction == SegmentReduction::mean) add("segment_counts_kernel", idx);
      break;
  }
  return p;
}

template <SegmentReduction R, class T, class Idx, Walk W>
Expected<const jit::Module*> walk_module(const ElementwiseRun& r) {
  if constexpr (W == Walk::atomic && extreme(R)) {
    return Status::error(StatusCode::unsupported, "segment max / min have no atomic kernel");  // select never picks it
  } else {
    return module_for<ProgramTag<std::integral_constant<SegmentReduction, R>, T, Idx, std::integral_constant<Walk, W>>>(
        r, [] {
          return walk_program(W, R, jit::type_name<T>(), static_cast<int>(16 / sizeof(T)), jit::type_name<Idx>());
        });
  }
}

// The tiles' partials: two slots of D accumulators (and, for max / min, D 32-bit positions) per tile.
CheckedSize tile_slots_bytes(const SegmentProblem& p) {
  if (p.tile_rows <= 0 || p.rows <= p.tile_rows) return 0;
  const CheckedSize slots = CheckedSize(ceil_div(p.rows, p.tile_rows)) * 2 * p.length;
  return round_up_to(slots * acc_bytes(p.dtype), kAlign) + (extreme(p.reduction) ? slots * 4 : CheckedSize(0));
}

// The sort's row indices: 32-bit where N allows (a third less to sort than 64-bit ones).
bool narrow_rows(int64_t rows) { return rows <= int64_t{UINT32_MAX}; }
size_t row_index_bytes(int64_t rows) { return narrow_rows(rows) ? 4 : 8; }

size_t sort_temp_bytes(int64_t rows) { return segment::sort_pairs_bytes(rows, narrow_rows(rows)); }

// The sort variant's scratch: keys in and out (4 bytes a row), row indices in and out (4 or 8), the
// sort's own.
struct SortBuffers {
  uint32_t *keys_in, *keys;
  void *rows_in, *rows;
  void* temp;
  size_t temp_bytes;
  char* rest;  // the starts and the tiles' partials
};
CheckedSize sort_bytes(int64_t rows) {
  return round_up_to(CheckedSize(rows) * 4, kAlign) * 2 +
         round_up_to(CheckedSize(rows) * static_cast<int64_t>(row_index_bytes(rows)), kAlign) * 2 +
         CheckedSize(static_cast<int64_t>(round_up(sort_temp_bytes(rows))));
}
SortBuffers carve_sort(void* workspace, int64_t rows) {
  char* p = static_cast<char*>(workspace);
  const size_t keys = round_up(size_t(rows) * 4), ids = round_up(size_t(rows) * row_index_bytes(rows));
  SortBuffers b;
  b.keys_in = reinterpret_cast<uint32_t*>(p);
  b.keys = reinterpret_cast<uint32_t*>(p + keys);
  b.rows_in = p + 2 * keys;
  b.rows = p + 2 * keys + ids;
  b.temp = p + 2 * keys + 2 * ids;
  b.temp_bytes = round_up(sort_temp_bytes(rows));
  b.rest = static_cast<char*>(b.temp) + b.temp_bytes;
  return b;
}

int key_bits(int64_t sentinel) {
  int bits = 1;
  while (bits < 32 && (int64_t{1} << bits) <= sentinel) ++bits;
  return bits;
}

size_t offsets_scan_bytes(int64_t segments) { return segment::running_max_bytes(segments + 1); }
// S + 1 starts, then (offsets) the scan's own scratch.
CheckedSize starts_bytes(const SegmentProblem& p) {
  const CheckedSize starts = round_up_to((CheckedSize(p.segments) + 1) * 8, kAlign);
  if (p.form != SegmentForm::offsets) return starts;
  return starts + CheckedSize(static_cast<int64_t>(round_up(offsets_scan_bytes(p.segments))));
}

// One launch of kernel `index` of the module, kThreads threads a block.
Status launch_blocks(const ElementwiseRun& r, const jit::Module& m, int index, unsigned blocks, const char* what,
                     std::initializer_list<const void*> args) {
  return launch_kernel(m, index, dim3(blocks), kThreads, r.stream, what, args);
}

// Sorts (key, row) pairs of the unsorted ids by key, stably.
Status sort_rows(const ElementwiseRun& r, const jit::Module& m, const SegmentProblem& p, const SortBuffers& b) {
  const bool narrow = narrow_rows(p.rows);
  if (Status st = launch_blocks(r, m, static_cast<int>(TiledKernel::own) + (narrow ? 0 : 1),
                                grid_stride_blocks(p.rows, r.target.sm_count), "segment_keys_kernel",
                                {&p, &b.keys_in, &b.rows_in});
      !st)
    return st;
  const cudaStream_t stream = native(r.stream);
  const int bits = key_bits(p.segments);
  if (narrow)
    return segment::sort_pairs(b.temp, b.temp_bytes, b.keys_in, b.keys, static_cast<const uint32_t*>(b.rows_in),
                               static_cast<uint32_t*>(b.rows), p.rows, bits, stream);
  return segment::sort_pairs(b.temp, b.temp_bytes, b.keys_in, b.keys, static_cast<const int64_t*>(b.rows_in),
                             static_cast<int64_t*>(b.rows), p.rows, bits, stream);
}

// Fills starts (S + 1 of them at `scratch`): offsets that decrease are raised to their predecessor
// (the running maximum), so the regions are a partition whatever the offsets; valid offsets are
// unchanged. Moves scratch past what it used.
template <class K>
Status launch_starts(const ElementwiseRun& r, const jit::Module& m, const SegmentProblem& p, const SegmentRows<K>& rows,
                     char*& scratch) {
  auto* starts = reinterpret_cast<int64_t*>(scratch);
  const size_t starts_size = round_up(size_t(p.segments + 1) * 8);
  if (Status st = launch_blocks(r, m, static_cast<int>(TiledKernel::starts),
                                grid_stride_blocks(p.segments + 1, r.target.sm_count), "segment_starts_kernel",
                                {&rows, &starts});
      !st)
    return st;
  if (rows.offsets) {
    if (Status st = segment::running_max(scratch + starts_size, offsets_scan_bytes(p.segments), starts, p.segments + 1,
                                         native(r.stream));
        !st)
      return st;
  }
  scratch += starts_bytes(p).value();
  return Status::ok();
}

// The segmented walk over positions in row order, or (the sort variant) through order32 / order64.
template <class K>
Status tiled(const ElementwiseRun& r, const jit::Module& m, const SegmentProblem& p, const SegmentRows<K>& rows,
             char* scratch, const uint32_t* order32 = nullptr, const int64_t* order64 = nullptr) {
  const int sm_count = r.target.sm_count;
  const int64_t* starts = reinterpret_cast<const int64_t*>(scratch);
  if (Status st = launch_starts(r, m, p, rows, scratch); !st) return st;
  SegmentTiles tiles;
  tiles.starts = starts;
  tiles.order32 = order32;
  tiles.order64 = order64;
  tiles.rows = p.rows;
  tiles.segments = p.segments;
  tiles.tile_rows = p.tile_rows;
  tiles.count = std::max<int64_t>(1, ceil_div(p.rows, p.tile_rows));
  void* partials = nullptr;  // the kernels' acc_t<T>*
  int32_t* partial_at = nullptr;
  if (tile_slots_bytes(p).value() > 0) {
    partials = scratch;
    const size_t slots = size_t(tiles.count) * 2 * size_t(p.length);
    if (extreme(p.reduction))
      partial_at = reinterpret_cast<int32_t*>(scratch + round_up(slots * static_cast<size_t>(acc_bytes(p.dtype))));
  }
  const int vector = p.vectorized ? vector_elements(p.dtype) : 1;
  const int lanes = lanes_for(p.length / vector);
  const int64_t chunks = ceil_div(p.length / vector, int64_t{lanes});  // groups a tile: rows wider than a block
  if (p.packed_rows && !order32 && !order64) {
    if (Status st = launch_blocks(r, m, static_cast<int>(TiledKernel::own), grid_stride_blocks(tiles.count, sm_count),
                                  "segment_tiles_packed_kernel", {&p, &tiles, &partials, &partial_at});
        !st)
      return st;
  } else {
    if (Status st = launch_blocks(r, m, static_cast<int>(p.vectorized ? TiledKernel::tiles_vec : TiledKernel::tiles),
                                  row_blocks(tiles.count * chunks, lanes, sm_count), "segment_tiles_kernel",
                                  {&p, &tiles, &lanes, &partials, &partial_at});
        !st)
      return st;
  }
  if (tiles.count == 1) return Status::ok();
  return launch_blocks(r, m, static_cast<int>(p.vectorized ? TiledKernel::combine_vec : TiledKernel::combine),
                       row_blocks(tiles.count * chunks, lanes, sm_count), "segment_combine_kernel",
                       {&p, &tiles, &lanes, &partials, &partial_at});
}

Status sorted(const ElementwiseRun& r, const jit::Module& m, const SegmentProblem& p) {
  const SortBuffers b = carve_sort(p.workspace, p.rows);
  SegmentRows<uint32_t> rows;  // the sorted keys
  rows.keys = b.keys;
  rows.rows = p.rows;
  rows.segments = p.segments;
  const bool narrow = narrow_rows(p.rows);
  if (p.rows > 0) {
    if (Status st = sort_rows(r, m, p, b); !st) return st;
  }
  return tiled(r, m, p, rows, b.rest, narrow ? static_cast<uint32_t*>(b.rows) : nullptr,
               narrow ? nullptr : static_cast<int64_t*>(b.rows));
}

Status atomic(const ElementwiseRun& r, const jit::Module& m, const SegmentProblem& p) {
  const int sm_count = r.target.sm_count;
  char* ws = static_cast<char*>(p.workspace);
  const size_t scratch_bytes =
      round_up(size_t(p.segments) * size_t(p.length) * static_cast<size_t>(acc_bytes(p.dtype)));
  void* scratch = ws;  // the kernels' acc_t<T>*
  auto* counts = reinterpret_cast<unsigned long long*>(ws + scratch_bytes);
  if (Status st = cuda_status(cudaMemsetAsync(ws, 0, scratch_bytes + size_t(p.segments) * 8, native(r.stream)),
                              "cudaMemsetAsync");
      !st)
    return st;
  // A sum whose empty value is +0 (no initial, or +0) needs no counts: its scratch starts there.
  const bool counted =
      p.reduction == SegmentReduction::mean ||
      (is_floating(p.dtype) ? p.empty_value != 0 || std::signbit(p.empty_value) : p.empty_integer != 0);
  unsigned long long* kernel_counts = counted ? counts : nullptr;
  if (p.rows > 0) {
    const int vector = p.vectorized ? vector_elements(p.dtype) : 1;
    const int lanes = lanes_for(p.length / vector);
    if (Status st = launch_blocks(r, m, static_cast<int>(p.vectorized ? AtomicKernel::add_vec : AtomicKernel::add),
                                  row_blocks(p.rows, lanes, sm_count), "segment_atomic_kernel",
                                  {&p, &lanes, &scratch, &kernel_counts});
        !st)
      return st;
  }
  return launch_blocks(r, m, static_cast<int>(AtomicKernel::finish),
                       grid_stride_blocks(p.segments * p.length, sm_count), "segment_finish_kernel",
                       {&p, &scratch, &kernel_counts});
}

template <class Idx>
Status gather(const ElementwiseRun& r, const jit::Module& m, const SegmentProblem& p) {
  const int sm_count = r.target.sm_count;
  unsigned long long* counts = nullptr;
  if (p.reduction == SegmentReduction::mean && p.form != SegmentForm::offsets && p.segments > 0) {
    counts = static_cast<unsigned long long*>(p.workspace);
    if (Status st =
            cuda_status(cudaMemsetAsync(counts, 0, size_t(p.segments) * 8, native(r.stream)), "cudaMemsetAsync");
        !st)
      return st;
    if (Status st = launch_blocks(r, m, static_cast<int>(BackwardKernel::counts), grid_stride_blocks(p.rows, sm_count),
                                  "segment_counts_kernel", {&p, &counts});
        !st)
      return st;
  }
  const SegmentRows<Idx> rows = p.segment_rows<Idx>();
  if (p.packed_rows)
    return launch_blocks(r, m, static_cast<int>(BackwardKernel::gather_rows),
                         grid_stride_blocks(ceil_div(p.rows, int64_t{vector_elements(p.dtype)}), sm_count),
                         "segment_backward_rows_kernel", {&p, &rows, &counts});
  const int vector = p.vectorized ? vector_elements(p.dtype) : 1;
  const int lanes = lanes_for(p.length / vector);
  return launch_blocks(r, m, static_cast<int>(p.vectorized ? BackwardKernel::gather_vec : BackwardKernel::gather),
                       row_blocks(p.rows, lanes, sm_count), "segment_backward_kernel", {&p, &rows, &lanes, &counts});
}

// The bad ids / offsets, into the caller's counter (every program's first kernel).
Status count_bad(const ElementwiseRun& r, const jit::Module& m, const SegmentProblem& p) {
  if (!p.bad_index_count || p.counted_size() == 0) return Status::ok();
  const void* values = p.counted();
  const int64_t n = p.counted_size(), stride = p.counted_stride(), bound = p.counted_bound();
  const bool sorted = p.counted_sorted();
  auto* counter = reinterpret_cast<unsigned long long*>(p.bad_index_count);
  return launch_blocks(r, m, 0, grid_stride_blocks(n, r.target.sm_count), "segment_count_bad_kernel",
                       {&values, &n, &stride, &bound, &sorted, &counter});
}

template <SegmentReduction R, class T, class Idx>
Status forward(const ElementwiseRun& r, const SegmentProblem& p) {
  const Walk walk = walk_of(p);
  Expected<const jit::Module*> module = walk == Walk::segmented ? walk_module<R, T, Idx, Walk::segmented>(r)
                                        : walk == Walk::sort    ? walk_module<R, T, Idx, Walk::sort>(r)
                                                                : walk_module<R, T, Idx, Walk::atomic>(r);
  if (!module || !*module) return module.status();
  const jit::Module& m = **module;
  if (p.segments > 0 && p.length > 0) {
    // (No rows still runs: every segment is empty, and the atomic kernel's scratch is zeroed.)
    const Status st = walk == Walk::segmented ? tiled(r, m, p, p.segment_rows<Idx>(), static_cast<char*>(p.workspace))
                      : walk == Walk::sort    ? sorted(r, m, p)
                                              : atomic(r, m, p);
    if (!st) return st;
  }
  return count_bad(r, m, p);
}

template <SegmentReduction R, class T, class Idx>
Status backward(const ElementwiseRun& r, const SegmentProblem& p) {
  Expected<const jit::Module*> module = walk_module<R, T, Idx, Walk::backward>(r);
  if (!module || !*module) return module.status();
  const jit::Module& m = **module;
  if (p.rows > 0 && p.length > 0) {
    if (Status st = gather<Idx>(r, m, p); !st) return st;
  }
  return count_bad(r, m, p);
}

template <SegmentReduction R>
Status run(const ElementwiseRun& r, const SegmentProblem& p) {
  return dispatch_index(p.index_dtype, [&](auto index_tag) {
    using Idx = typename decltype(index_tag)::type;
    return p.backward ? dispatch_float<half, bfloat16>(
                            p.dtype, [&](auto tag) { return backward<R, typename decltype(tag)::type, Idx>(r, p); })
                      : dispatch_float<half, bfloat16, int32_t, int64_t>(
                            p.dtype, [&](auto tag) { return forward<R, typename decltype(tag)::type, Idx>(r, p); });
  });
}

Status run(const ElementwiseRun& r, const SegmentProblem& p) {
  switch (p.reduction) {
    case SegmentReduction::sum:
      return run<SegmentReduction::sum>(r, p);
    case SegmentReduction::mean:
      return run<SegmentReduction::mean>(r, p);
    case SegmentReduction::max:
      return run<SegmentReduction::max>(r, p);
    default:
      return run<SegmentReduction::min>(r, p);
  }
}

constexpr std::string_view kPlanNames[2][4] = {
    {"SegmentSumPlan", "SegmentMeanPlan", "SegmentMaxPlan", "SegmentMinPlan"},
    {"SegmentSumBackwardPlan", "SegmentMeanBackwardPlan", "SegmentMaxBackwardPlan", "SegmentMinBackwardPlan"}};
std::string_view plan_of(const SegmentProblem& p) { return kPlanNames[p.backward][static_cast<int>(p.reduction)]; }

}  // namespace

CheckedSize segment_workspace(const SegmentProblem& p) {
  // (No rows still runs the forward: every segment is empty, and the atomic kernel's scratch is zeroed.)
  if (p.segments == 0 || p.length == 0 || (p.backward && p.rows == 0)) return 0;
  if (p.backward)
    return p.reduction == SegmentReduction::mean && p.form != SegmentForm::offsets ? CheckedSize(p.segments) * 8
                                                                                   : CheckedSize(0);
  if (p.form != SegmentForm::unsorted_ids) return starts_bytes(p) + tile_slots_bytes(p);
  if (p.variant == SegmentVariant::atomic)
    return round_up_to(CheckedSize(p.segments) * p.length * acc_bytes(p.dtype), kAlign) + CheckedSize(p.segments) * 8;
  return sort_bytes(p.rows) + starts_bytes(p) + tile_slots_bytes(p);
}

Status launch(const LaunchContext& ctx, const SegmentProblem& p) {
  return run({ctx.target, ctx.stream, plan_of(p), kMaths}, p);
}

Status prepare_segment(const PlanTarget& target, const SegmentProblem& p) {
  const Stream stream = Stream::cuda();
  return run({target, stream, plan_of(p), kMaths, ElementwiseMode::load}, p);
}

}  // namespace baracuda::detail::cuda

namespace baracuda::detail::jit {

std::vector<Program> segment_programs() {
  std::vector<Program> out;
  const PlanTarget target{Backend::cuda};
  const Stream stream = Stream::cuda();
  for (int k = 0; k <= static_cast<int>(SegmentReduction::min); ++k)
    for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64})
      for (DType index : {DType::i32, DType::i64})
        for (bool backward : {false, true})
          for (SegmentForm form : {SegmentForm::sorted_ids, SegmentForm::unsorted_ids, SegmentForm::offsets})
            for (SegmentVariant variant :
                 {SegmentVariant::segmented, SegmentVariant::atomic, SegmentVariant::sort, SegmentVariant::gather}) {
              const auto reduction = static_cast<SegmentReduction>(k);
              // The schemas' (ops/segment.cpp): integers for the forward sum, max and min; atomic for
              // the unsorted sum and mean; the backward's gather alone.
              if (!is_floating(t) && (backward || reduction == SegmentReduction::mean)) continue;
              const bool unsorted = form == SegmentForm::unsorted_ids;
              const bool ran = backward    ? variant == SegmentVariant::gather
                               : !unsorted ? variant == SegmentVariant::segmented
                                           : variant == SegmentVariant::sort ||
                                                 (variant == SegmentVariant::atomic && !cuda::extreme(reduction));
              if (!ran) continue;
              SegmentProblem p;
              p.backward = backward;
              p.reduction = reduction;
              p.form = form;
              p.variant = variant;
              p.dtype = t;
              p.index_dtype = index;
              (void)cuda::run({target, stream, cuda::plan_of(p), cuda::kMaths, cuda::ElementwiseMode::list, &out}, p);
            }
  return cuda::unique_programs(std::move(out));
}

}  // namespace baracuda::detail::jit

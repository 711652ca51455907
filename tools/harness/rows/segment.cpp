// Op-table rows of the segment family: sum, mean, max and min, forward and backward, every sample in
// each form (sorted ids, unsorted ids, offsets) and with i64 and i32 indices.
#include "harness/op_row.hpp"
#include "harness/reference/segment_reference.hpp"

namespace baracuda::harness {
namespace {

using reference::SegmentKind;

struct SegmentSampleCase {
  Shape data;
  int64_t segments = 0;
  std::string note;
  Views views = Views::contiguous;
  bool valid_only = false;  // index values all in range (else a few bad ones at both ends)
  std::optional<double> initial{};
  bool skewed = false;  // ids log-uniform: segment 0 holds most rows, thousands of tiny ones beside it
};

std::vector<SegmentSampleCase> segment_cases() {
  std::vector<SegmentSampleCase> c;
  c.push_back({{37, 5}, 7, "bad ids at both ends"});
  c.push_back({{40, 3}, 100, "mostly empty segments"});
  c.push_back({{50, 4}, 1, "one segment holding every row", Views::contiguous, true});
  c.push_back({{64, 3}, 64, "many segments of one row", Views::contiguous, true});
  c.push_back({{101}, 13, "D = 1", Views::contiguous, true});
  c.push_back({{23, 3, 5}, 6, "odd D, trailing shape"});
  c.push_back({{9, 300}, 4, "D past a column chunk", Views::contiguous, true});
  c.push_back({{40, 8}, 9, "whole 16-byte rows", Views::contiguous, true});
  c.push_back({{0, 4}, 3, "no rows: every segment empty"});
  c.push_back({{5, 2}, 0, "no segments: every id bad"});
  c.push_back({{30, 4}, 40, "initial 3", Views::contiguous, false, 3.0});
  c.push_back({{1500, 2}, 3, "long segments (past a CUDA piece)", Views::contiguous, true});
  c.push_back({{57}, 5, "D = 1, misaligned (not vectors of rows)", Views::misaligned, true});
  c.push_back({{3000, 1}, 1, "one segment of 3000 rows, D = 1 (many pieces)", Views::contiguous, true});
  c.push_back({{4000, 4},
               2000,
               "skewed: one giant segment among thousands of tiny ones",
               Views::contiguous,
               true,
               std::nullopt,
               true});
  for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) {
    c.push_back({{37, 8}, 7, "strided", v});
    c.push_back({{29, 33}, 5, "strided", v, true});
  }
  return c;
}

std::string_view form_note(SegmentForm f) {
  return f == SegmentForm::sorted_ids ? "sorted ids" : f == SegmentForm::unsorted_ids ? "unsorted ids" : "offsets";
}

std::vector<Sample<SegmentDescriptor>> segment_samples() {
  std::vector<Sample<SegmentDescriptor>> out;
  for (const SegmentSampleCase& c : segment_cases()) {
    for (SegmentForm form : {SegmentForm::sorted_ids, SegmentForm::unsorted_ids, SegmentForm::offsets}) {
      for (DType index : {DType::i64, DType::i32}) {
        Sample<SegmentDescriptor> s;
        s.desc = {DType::f32, index, c.data, c.segments, form, c.initial};
        s.views = c.views;
        s.skewed_indices = c.skewed;
        const int64_t n = c.data.dims[0];
        if (c.valid_only)
          s.index_values = form == SegmentForm::offsets ? IndexRange{0, n + 1} : IndexRange{0, c.segments};
        s.note = c.note + ", " + std::string(form_note(form)) + ", " + std::string(dtype_name(index));
        // The backward's max / min indices: rows of data and a few that name none.
        s.value_ranges = {{"indices", -1.0, static_cast<double>(n)}};
        out.push_back(std::move(s));
      }
    }
  }
  return out;
}

// Max and min backward: an empty segment is 0 rather than -inf / +inf, so that the finite
// differences' loss <dout, out> stays finite.
std::vector<Sample<SegmentDescriptor>> finite_segment_samples() {
  std::vector<Sample<SegmentDescriptor>> out = segment_samples();
  for (Sample<SegmentDescriptor>& s : out)
    if (!s.desc.initial) s.desc.initial = 0.0;
  return out;
}

template <SegmentKind K>
void forward_reference(const SegmentDescriptor& d, RefIO& io) {
  reference::segment_forward(K, d, io);
}
template <SegmentKind K>
void backward_reference(const SegmentDescriptor& d, RefIO& io) {
  reference::segment_backward(K, d, io);
}

std::vector<DescriptorError<SegmentDescriptor>> segment_errors() {
  return {
      {"negative num_segments", [](SegmentDescriptor& d) { d.num_segments = -1; }, StatusCode::invalid_problem,
       "descriptor.num_segments"},
      {"data of rank 0", [](SegmentDescriptor& d) { d.data_shape = Shape{}; }, StatusCode::invalid_problem,
       "descriptor.data_shape"},
      {"negative size",
       [](SegmentDescriptor& d) {
         d.data_shape = {4, -1};
       },
       StatusCode::invalid_problem, "descriptor.data_shape[1]"},
      {"form past the enum", [](SegmentDescriptor& d) { d.form = static_cast<SegmentForm>(9); },
       StatusCode::invalid_problem, "descriptor.form"},
  };
}

// ---------------------------------------------------------------------------------------------
// The profiler's cases. A case's shape is [N, D, S]: data [N, D], S segments, i64 ids.

// The shapes on the GPU (N = 2^20, D = 128, 16384 segments; 2^22, 32, 100000; 2^26, 1, 2^20);
// smaller ones on the CPU.
std::vector<Shape> segment_shapes(Backend b) {
  if (b == Backend::cuda)
    return {{int64_t{1} << 20, 128, 16384}, {int64_t{1} << 22, 32, 100000}, {int64_t{1} << 26, 1, int64_t{1} << 20}};
  return {{int64_t{1} << 16, 128, 1024}, {int64_t{1} << 18, 32, 6250}, {int64_t{1} << 20, 1, 16384}};
}
std::vector<DType> bench_floats() { return {DType::f32, DType::bf16}; }

template <SegmentForm F>
SegmentDescriptor bench_segment(DType dt, const Shape& s) {
  return {dt, DType::i64, {s.dims[0], s.dims[1]}, s.rank > 2 ? s.dims[2] : 1, F, std::nullopt};
}

// Max and min's timed cases write the values alone (`indices`, the backward's rows, is optional), as
// their peers (torch.segment_reduce, jax.ops.segment_max) do; the samples check both.
template <class Plan, SegmentKind K>
std::unique_ptr<OpRow> forward_row(std::vector<BenchSample<SegmentDescriptor>> bench) {
  if constexpr (K == SegmentKind::max || K == SegmentKind::min)
    for (BenchSample<SegmentDescriptor>& b : bench) b.omitted = "indices";
  return make_row<Plan>(
      {segment_samples, forward_reference<K>, harness::tolerance, {}, segment_errors(), std::move(bench)});
}
template <class Plan, class ForwardPlan, SegmentKind K>
std::unique_ptr<OpRow> backward_row(std::vector<BenchSample<SegmentDescriptor>> bench) {
  constexpr bool kExtreme = K == SegmentKind::max || K == SegmentKind::min;
  // Max and min: the data distinct values over [-1000, 1000), so that the finite differences' steps
  // (1e-4) never cross a tie (random values did, in segments of 500 rows: numeric -0.3211 against
  // analytic -0.3179).
  std::vector<ValueRange> ranges;
  if (kExtreme) ranges.push_back({"data", -1000.0, 1000.0, true});
  return make_row<Plan>({kExtreme ? finite_segment_samples : segment_samples, backward_reference<K>, harness::tolerance,
                         std::move(ranges), segment_errors(), std::move(bench), forward_of<ForwardPlan>,
                         Gradient{"dout", "out", {{"ddata", "data"}}}});
}

}  // namespace

std::vector<std::unique_ptr<OpRow>> segment_rows() {
  using F = SegmentForm;
  const auto floats = bench_floats();
  std::vector<std::unique_ptr<OpRow>> rows;
  rows.push_back(forward_row<SegmentSumPlan, SegmentKind::sum>({
      {"segment_sum_sorted", "torch.segment_reduce(sum, lengths)", floats, segment_shapes,
       bench_segment<F::sorted_ids>},
      {"segment_sum_offsets", "torch.segment_reduce(sum, offsets)", floats, segment_shapes, bench_segment<F::offsets>},
      {"segment_sum_unsorted", "zeros().index_add_(0, ids, data)", floats, segment_shapes,
       bench_segment<F::unsorted_ids>},
      {"segment_sum_unsorted_deterministic", "zeros().index_add_(0, ids, data)", floats, segment_shapes,
       bench_segment<F::unsorted_ids>, true},
  }));
  rows.push_back(forward_row<SegmentMeanPlan, SegmentKind::mean>({
      {"segment_mean_sorted", "torch.segment_reduce(mean, lengths)", floats, segment_shapes,
       bench_segment<F::sorted_ids>},
      {"segment_mean_unsorted", "scatter_reduce(0, ids, data, mean)", floats, segment_shapes,
       bench_segment<F::unsorted_ids>},
  }));
  rows.push_back(forward_row<SegmentMaxPlan, SegmentKind::max>({
      {"segment_max_sorted", "torch.segment_reduce(max, lengths)", floats, segment_shapes,
       bench_segment<F::sorted_ids>},
      {"segment_max_unsorted", "scatter_reduce(0, ids, data, amax)", floats, segment_shapes,
       bench_segment<F::unsorted_ids>},
  }));
  rows.push_back(forward_row<SegmentMinPlan, SegmentKind::min>({
      {"segment_min_sorted", "torch.segment_reduce(min, lengths)", floats, segment_shapes,
       bench_segment<F::sorted_ids>},
      {"segment_min_unsorted", "scatter_reduce(0, ids, data, amin)", floats, segment_shapes,
       bench_segment<F::unsorted_ids>},
  }));
  rows.push_back(backward_row<SegmentSumBackwardPlan, SegmentSumPlan, SegmentKind::sum>({
      {"segment_sum_backward_sorted", "index_select(dout, 0, ids)", floats, segment_shapes,
       bench_segment<F::sorted_ids>},
      {"segment_sum_backward_unsorted", "index_select(dout, 0, ids)", floats, segment_shapes,
       bench_segment<F::unsorted_ids>},
  }));
  rows.push_back(backward_row<SegmentMeanBackwardPlan, SegmentMeanPlan, SegmentKind::mean>({
      {"segment_mean_backward_sorted", "index_select(dout, 0, ids) / counts", floats, segment_shapes,
       bench_segment<F::sorted_ids>},
  }));
  rows.push_back(backward_row<SegmentMaxBackwardPlan, SegmentMaxPlan, SegmentKind::max>({
      {"segment_max_backward_sorted", "segment_reduce(max) backward", floats, segment_shapes,
       bench_segment<F::sorted_ids>},
  }));
  rows.push_back(backward_row<SegmentMinBackwardPlan, SegmentMinPlan, SegmentKind::min>({
      {"segment_min_backward_sorted", "segment_reduce(min) backward", floats, segment_shapes,
       bench_segment<F::sorted_ids>},
  }));
  return rows;
}

}  // namespace baracuda::harness

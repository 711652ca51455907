// Op-table rows of the softmax family: softmax, log_softmax, sparsemax and entmax15 (one plan, the
// descriptor's kind), forward and backward. Edge values (-inf, NaN, 1e30, ties, rows adversarial to
// the threshold search) and the sparse kinds' gradients against their forward are
// tests/test_softmax.cpp's: the table's inputs are random.
#include <tuple>

#include "harness/op_row.hpp"
#include "harness/reference/softmax_reference.hpp"

namespace baracuda::harness {
namespace {

using Desc = SoftmaxDescriptor;

Desc along(Shape shape, int dim) { return {DType::f32, std::nullopt, shape, dim, SoftmaxKind::softmax}; }

// Row lengths on both sides of every CUDA threshold (the rows a warp, a block and a cluster of 8
// blocks hold: 32, 1024 and 8192 threads x the values one thread holds, which depend on the compute
// type and the direction; see SoftmaxShape::held; and 2048 x held, past which the 16-bit forward
// takes split_row rather than a cluster of 8), in the direction's own dtypes.
std::vector<int64_t> threshold_lengths(bool backward) {
  std::vector<int64_t> lengths;
  const int64_t f32_held = backward ? 16 : 32;  // f64 holds half as many
  for (int64_t held : {f32_held, f32_held / 2})
    for (int64_t threads : {32, 1024, 2048, 8192}) lengths.insert(lengths.end(), {threads * held, threads * held + 1});
  return lengths;
}

// Which kinds take a sample: softmax and log_softmax take every one; sparsemax and entmax15, whose
// forward makes several passes over a row, a subset that still reaches every length and threshold,
// every dim of a rank-4 tensor, outer dims, every kind of view, rank 8 and empty shapes.
enum class Kinds { dense, sparse, all };

// Every kind of sample: lengths along the last dim from 1 to 100003; every dim of a rank-4 tensor;
// outer dims with columns in whole vectors and not; strided, transposed, broadcast and misaligned
// views; rank 8; empty shapes. (f32 outputs of other inputs are tests/test_softmax.cpp's: the table
// judges an output by its input dtype's tolerance.)
//
// The sparse kinds' backward samples are padded where the others are contiguous: the table's finite
// differences (tests/test_op_table.cpp) take the contiguous samples, and a sparse map's support moves
// within their step on random inputs (of n values in [-1, 1), one lies within the step of the
// threshold with probability ~6e-5 n: a row of 4099 fails one run in five). Padded rows keep
// their 16-byte vectors, so the same kernels run; tests/test_softmax.cpp checks the sparse gradients
// by finite differences on rows kept clear of the threshold, and contiguous views at every extent.
std::vector<Sample<Desc>> samples(bool backward) {
  std::vector<Sample<Desc>> out;
  auto add = [&](Kinds kinds, Desc d, Views views = Views::contiguous, std::string_view only = {}) {
    for (SoftmaxKind kind :
         {SoftmaxKind::softmax, SoftmaxKind::log_softmax, SoftmaxKind::sparsemax, SoftmaxKind::entmax15}) {
      const bool sparse = reference::is_sparse_kind(kind);
      if (sparse ? kinds == Kinds::dense : kinds == Kinds::sparse) continue;
      d.kind = kind;
      const bool padded = backward && sparse && views == Views::contiguous;
      std::string note = std::string(reference::softmax_kind_name(kind)) + " dim " + std::to_string(d.dim);
      if (padded) note += ", padded: no finite differences";
      out.push_back({d, padded ? Views::padded : views, only, std::nullopt, std::move(note)});
    }
  };
  for (int64_t length : {1, 2, 3, 4, 5, 8, 255, 256, 1025, 4099, 32000}) add(Kinds::all, along({3, length}, 1));
  add(Kinds::all, along({100003}, 0));
  for (int64_t length : threshold_lengths(backward)) {
    add(Kinds::dense, along({2, length}, -1));
    add(Kinds::sparse, along({1, length}, -1));  // one row: the sparse forward makes several passes
  }
  for (int dim : {0, 1, 2, 3, -1}) {
    add(Kinds::all, along({3, 5, 7, 11}, dim));
    add(Kinds::all, along({4, 6, 8, 16}, dim));  // inner sizes in whole 16-byte vectors
  }
  add(Kinds::all, along({1000, 3}, 0));
  add(Kinds::all, along({257, 64}, 0));
  add(Kinds::dense, along({2000, 128}, 0));
  add(Kinds::all, along({3, 40000}, 0));  // enough columns for the widest outer column groups
  add(Kinds::all, along({20000, 8}, 0));  // few columns along a long dim: a cluster of blocks per tile (sm_90)
  add(Kinds::dense, along({9000, 3}, 0));
  add(Kinds::all, along({5, 300, 8}, 1));
  add(Kinds::all, along({2, 1, 3, 2, 2, 1, 3, 2}, 3));
  add(Kinds::all, along({7, 1, 5}, 1));  // a dim of size 1
  add(Kinds::all, along({0, 5}, 1));
  add(Kinds::all, along({4, 0}, 1));
  add(Kinds::all, along({4, 0}, 0));
  for (const auto& [kinds, shape, dim] : {std::tuple<Kinds, Shape, int>{Kinds::all, {37, 53}, 1},
                                          {Kinds::all, {37, 53}, 0},
                                          {Kinds::all, {5, 7, 11}, 1},
                                          {Kinds::all, {33, 128}, 1},
                                          {Kinds::dense, {33, 128}, 0},
                                          {Kinds::all, {3, 1031}, 1},
                                          {Kinds::dense, {2, 1030}, 1}}) {
    for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned})
      add(kinds, along(shape, dim), v);
  }
  add(Kinds::all, along({3, 1031}, 1), Views::misaligned, backward ? "dx" : "y");  // only the output misaligned
  add(Kinds::all, along({4, 6, 8, 16}, 1), Views::padded, backward ? "dy" : "x");
  return out;
}
std::vector<Sample<Desc>> forward_samples() { return samples(false); }
std::vector<Sample<Desc>> backward_samples() { return samples(true); }

// (Functions, not globals: the table is built during other files' static initialization.)
std::vector<DescriptorError<Desc>> errors() {
  return {
      {"dim past the rank",
       [](Desc& d) {
         d.shape = {4, 5};
         d.dim = 2;
       },
       StatusCode::invalid_problem, "descriptor.dim"},
      {"dim below -rank",
       [](Desc& d) {
         d.shape = {4, 5};
         d.dim = -3;
       },
       StatusCode::invalid_problem, "descriptor.dim"},
      {"rank 0", [](Desc& d) { d.shape = {}; }, StatusCode::invalid_problem, "descriptor.shape.rank"},
      {"rank 9", [](Desc& d) { d.shape = {1, 2, 3, 4, 5, 6, 7, 8, 9}; }, StatusCode::invalid_problem,
       "descriptor.shape.rank"},
      {"negative size",
       [](Desc& d) {
         d.shape = {4, -3};
       },
       StatusCode::invalid_problem, "descriptor.shape[1]"},
      {"out_dtype neither the input's nor f32",
       [](Desc& d) { d.out_dtype = d.dtype == DType::f16 ? DType::bf16 : DType::f16; }, StatusCode::unsupported,
       "descriptor.out_dtype"},
      {"integer out_dtype", [](Desc& d) { d.out_dtype = DType::i32; }, StatusCode::unsupported, "descriptor.out_dtype"},
      {"unknown kind", [](Desc& d) { d.kind = static_cast<SoftmaxKind>(7); }, StatusCode::invalid_problem,
       "descriptor.kind"},
  };
}

// The profiler's cases: [rows, length] along the last dim (on the GPU: the shapes, from
// short rows held by warps to rows split over blocks), and along dim 0.
std::vector<Shape> last_dim_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{8192, 1024}, {1024, 32000}, {4096, 131072}, {256, 1048576}, {65536, 128}};
  return {{1024, 1024}, {64, 32000}, {4096, 128}};
}
std::vector<Shape> dim0_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{32000, 1024}};
  return {{4000, 1024}};
}
// sparsemax and entmax15 at the sizes their users run them (attention rows, vocabulary rows).
std::vector<Shape> sparse_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{8192, 1024}, {32768, 256}, {1024, 32000}};
  return {{1024, 1024}, {4096, 256}, {64, 32000}};
}

template <SoftmaxKind kKind, int kDim, bool kF32Out = false>
Desc describe(DType dtype, const Shape& shape) {
  return {dtype, kF32Out ? std::optional<DType>(DType::f32) : std::nullopt, shape, kDim, kKind};
}

std::vector<BenchSample<Desc>> bench(bool backward) {
  constexpr auto kSoftmax = SoftmaxKind::softmax, kLog = SoftmaxKind::log_softmax;
  constexpr auto kSparsemax = SoftmaxKind::sparsemax, kEntmax15 = SoftmaxKind::entmax15;
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  if (backward)
    return {
        {"softmax_backward", "aten._softmax_backward_data(dy, y, -1)", dtypes, last_dim_shapes, describe<kSoftmax, -1>},
        {"log_softmax_backward", "aten._log_softmax_backward_data(dy, y, -1)", dtypes, last_dim_shapes,
         describe<kLog, -1>},
        {"softmax_backward_dim0", "aten._softmax_backward_data(dy, y, 0)", dtypes, dim0_shapes, describe<kSoftmax, 0>},
        {"sparsemax_backward", "sparsemax_backward(y, dy, -1)", dtypes, sparse_shapes, describe<kSparsemax, -1>},
        {"entmax15_backward", "entmax15_backward(y, dy, -1)", dtypes, sparse_shapes, describe<kEntmax15, -1>}};
  return {{"softmax", "torch.softmax(x, -1)", dtypes, last_dim_shapes, describe<kSoftmax, -1>},
          {"log_softmax", "torch.log_softmax(x, -1)", dtypes, last_dim_shapes, describe<kLog, -1>},
          {"softmax_dim0", "torch.softmax(x, 0)", dtypes, dim0_shapes, describe<kSoftmax, 0>},
          {"softmax_f32_out",
           "torch.softmax(x, -1, dtype=torch.float32)",
           {DType::bf16},
           last_dim_shapes,
           describe<kSoftmax, -1, true>},
          {"sparsemax", "sparsemax(x, -1)", dtypes, sparse_shapes, describe<kSparsemax, -1>},
          {"entmax15", "entmax15(x, -1)", dtypes, sparse_shapes, describe<kEntmax15, -1>}};
}

// x spans enough of exp's range that the shift by the row max matters.
std::vector<ValueRange> forward_ranges() { return {{"x", -8.0, 8.0}}; }

void forward_reference(const Desc& d, RefIO& io) { reference::softmax_forward(d, io); }
void backward_reference(const Desc& d, RefIO& io) { reference::softmax_backward(d, io); }

}  // namespace

std::vector<std::unique_ptr<OpRow>> softmax_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  rows.push_back(make_row<SoftmaxPlan>(
      {forward_samples, forward_reference, harness::tolerance, forward_ranges(), errors(), bench(false)}));
  rows.push_back(make_row<SoftmaxBackwardPlan>({backward_samples,
                                                backward_reference,
                                                harness::tolerance,
                                                {},
                                                errors(),
                                                bench(true),
                                                forward_of<SoftmaxPlan>,
                                                {"dy", "y", {{"dx", "x"}}}}));
  return rows;
}

}  // namespace baracuda::harness

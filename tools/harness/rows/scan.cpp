// Op-table rows of the scans: every ScanKind (one plan pair, the descriptor's kind), forward and
// backward, in both directions. The table's x is random in [0.5, 1.3): of mean below 1, so that
// products and cumprod's gradient (a sum of products) have tails f16 holds (x in [0.5, 1.5), of mean
// 1, reaches 65504 once in a few thousand lines); the backward's saved `out` in [0.5, 1.5). Integer
// x (cumsum's) is whole numbers in [-1000, 1000), and across i32's range or near 2^62 in a few
// samples of its own (sums past 2^31, exact in i64 and wrapped in an i32 out; i64 sums that wrap). Signed
// inputs, special values (NaN, +-inf, 1e30, rows of -inf), ties, cumprod's gradient through zeros,
// long signed cumsums, f32 outputs, the gradients of cummax / cummin against finite differences and
// which kernel select picks are tests/test_scan.cpp's.
#include <algorithm>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "harness/op_row.hpp"
#include "harness/reference/scan_reference.hpp"

namespace baracuda::harness {
namespace {

using Desc = ScanDescriptor;

// The dtypes of cumsum's samples, and of the others'.
const std::vector<DType> kFloats = {DType::f32, DType::f64, DType::f16, DType::bf16};
const std::vector<DType> kForwardDTypes = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64};

constexpr ScanKind kKinds[] = {ScanKind::cumsum, ScanKind::cumprod, ScanKind::cummax, ScanKind::cummin,
                               ScanKind::logcumsumexp};

// Which kinds take a sample: every kind, or, for the largest shapes, one kind per math (sums,
// products, extremes with their indices, logcumsumexp; the backward is one affine scan whose map
// differs per kind: cumsum's 1, cumprod's x, cummax's indices, logcumsumexp's exp), or those and no
// backward (the largest shapes, whose backward scans as every other shape's does).
enum class Kinds { main, few, forward };
constexpr ScanKind kFew[] = {ScanKind::cumsum, ScanKind::cumprod, ScanKind::cummax, ScanKind::logcumsumexp};

// Which directions a sample takes: both, or one, alternating from kind to kind and sample to
// sample.
enum class Directions { both, alternate };

// The longest line a cumsum takes: a sum of x in [0.5, 1.3) (mean 0.9) reaches f16's 65504 near
// 73000 elements; tests/test_scan.cpp scans long signed lines. The backward sums dout in [-1, 1):
// any length.
constexpr int64_t kLongestSum = 40000;

// The longest line a cumprod takes: its prefix products walk e^(-0.14 t +- 0.27 sqrt(t)), within
// f64's range (the reference divides them) up to about 4500 elements; past 600 they are 0 in f32.
constexpr int64_t kLongestProduct = 4200;

// Whether a broadcast view (layout() in harness/op_table.cpp: a zero stride along the first dim of
// size > 1) repeats one element along the lines: the scanned dim is that dim.
bool repeats(const Shape& shape, int dim) {
  const int k = dim < 0 ? dim + shape.rank : dim;
  for (int j = 0; j < shape.rank; ++j)
    if (shape.dims[j] > 1) return j == k;
  return false;
}

// Whether the kind's values over lines of n elements stay numbers the drivers can compare: no
// cumsum of more than kLongestSum, no cumprod of more than kLongestProduct, nor of x repeated
// (1.3^43 overflows f16).
bool takes(ScanKind kind, int64_t n, bool repeated, bool backward) {
  if (kind == ScanKind::cumsum && !backward && n > kLongestSum) return false;
  if (kind == ScanKind::cumprod && (n > kLongestProduct || (repeated && n > 40))) return false;
  return true;
}

// The backward of cummax / cummin reads the forward's indices, which the drivers fill with one
// index throughout (random ones are not what a forward writes: the header's gradient of a run of
// equal indices goes to the element that starts it): the line's first element in the scan's order,
// which every line whose first element is its extreme has. Those samples run on padded views where
// the others are contiguous: the table's finite differences (tests/test_op_table.cpp) take the
// contiguous samples and would need the forward's indices; tests/test_scan.cpp checks these
// gradients by finite differences on lines with their values well apart.
std::optional<IndexRange> saved_indices(const Desc& d, int64_t n, bool backward) {
  if (!backward || !reference::scan_has_indices(d.kind)) return std::nullopt;
  const int64_t first = d.reverse ? std::max<int64_t>(n - 1, 0) : 0;
  return IndexRange{first, first + 1};
}

// Every kind of sample (the shapes of 2^15 elements or more take few kinds): every dim of an odd,
// prime-sized rank-4 tensor (last, first, middle, negative), size-1 dims, rank 0 (a scalar, dim 0
// and -1) and rank 8, empty lines and no lines; many short lines and few long ones; CUDA's
// thresholds (scan_geometry in src/ops/scan_problem.hpp: rows' slices from 1 to 256 threads a line,
// lines cut into pieces; columns' lanes below and at 32, units of 1 to 8 lines); and
// every view (padded, transposed, broadcast, misaligned; one output or input alone) for every kind.
std::vector<Sample<Desc>> samples(bool backward) {
  std::vector<Sample<Desc>> out;
  int sample = 0;  // spreads i32 indices and the alternating directions over the samples
  auto add = [&](Kinds kinds, Directions directions, Shape shape, int dim, Views views = Views::contiguous,
                 std::string_view only = {}) {
    if (kinds == Kinds::forward && backward) return;
    Desc probe;
    probe.shape = shape;
    probe.dim = dim;
    const int64_t n = reference::ScanLayout(probe).n();
    const bool repeated = views == Views::broadcast && only.empty() && repeats(shape, dim);
    for (ScanKind kind : kKinds) {
      if (kinds != Kinds::main && std::find(std::begin(kFew), std::end(kFew), kind) == std::end(kFew)) continue;
      if (!takes(kind, n, repeated, backward)) continue;
      ++sample;
      for (bool reverse : {false, true}) {
        if (directions == Directions::alternate && reverse != (sample % 2 == 0)) continue;
        Desc d = probe;
        d.kind = kind;
        d.reverse = reverse;
        d.index_dtype = sample % 3 == 0 ? DType::i32 : DType::i64;
        const bool padded = backward && reference::scan_has_indices(kind) && views == Views::contiguous;
        std::string note = std::string(reference::scan_kind_name(kind)) + " dim " + std::to_string(dim);
        if (reverse) note += " reverse";
        if (reference::scan_has_indices(kind)) note += ", " + std::string(dtype_name(d.index_dtype)) + " indices";
        if (padded) note += ", padded: no finite differences";
        out.push_back({d, padded ? Views::padded : views, only, saved_indices(d, n, backward), std::move(note),
                       kind == ScanKind::cumsum ? kForwardDTypes : kFloats});
      }
    }
  };
  constexpr Kinds kMain = Kinds::main, kFewKinds = Kinds::few, kForward = Kinds::forward;
  constexpr Directions kBoth = Directions::both, kOne = Directions::alternate;

  // Every dim of an odd, prime-sized rank-4 tensor.
  const Shape odd{3, 5, 7, 11};
  add(kMain, kBoth, odd, -1);
  add(kMain, kBoth, odd, 0);
  add(kMain, kOne, odd, 1);
  add(kMain, kOne, odd, 2);
  add(kMain, kOne, odd, -2);
  add(kMain, kOne, odd, -4);
  // Size-1 dims: scanned (lines of one element), before and after the scanned dim (nothing after it
  // but size 1: its lines are contiguous).
  add(kMain, kOne, {7, 1, 5}, 1);
  add(kMain, kOne, {1, 9}, 1);
  add(kMain, kOne, {9, 1}, 0);
  add(kMain, kOne, {4, 6, 1}, -2);
  add(kMain, kOne, {1, 1, 1}, 2);
  add(kMain, kOne, {1000, 1}, 0);
  // Rank 0 (a scalar: dim 0 or -1) and rank 8.
  add(kMain, kBoth, Shape{}, 0);
  add(kMain, kOne, Shape{}, -1);
  const Shape rank8{2, 1, 3, 2, 2, 1, 3, 2};
  add(kMain, kOne, rank8, 0);
  add(kMain, kOne, rank8, 3);
  add(kMain, kBoth, rank8, 7);
  add(kMain, kOne, rank8, -2);
  // Empty: lines of no element, and no lines (a dim of size 0 before or after the scanned one).
  add(kMain, kOne, {4, 0}, -1);
  add(kMain, kOne, {0, 5}, 0);
  add(kMain, kOne, {0, 5}, -1);
  add(kMain, kOne, {3, 0, 4}, 0);
  add(kMain, kOne, {3, 0, 4}, 2);
  add(kMain, kOne, {0}, 0);
  // Lines along the last dim on both sides of rows' steps: 4 16-byte vectors a thread forward, 2
  // backward (16 / 8 f32 elements, 32 / 16 of 16-bit types, 8 / 4 f64), 1 to 256 threads a line
  // (the rest of the block on other lines), one tile of 256 threads or several: every power of 2 up
  // to 2^13 and one more, and a few odd ones. Few lines: cut into pieces past one tile (on the CPU
  // past 2^16).
  std::vector<int64_t> lengths = {3, 7, 63, 255, 16385};
  for (int k = 0; k <= 13; ++k) lengths.insert(lengths.end(), {int64_t{1} << k, (int64_t{1} << k) + 1});
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  for (int64_t length : lengths) add(length <= 257 ? kMain : kFewKinds, kOne, {3, length}, -1);
  add(kFewKinds, kOne, {2, 39001}, 1);  // pieces, with cumsum
  add(kFewKinds, kBoth, {1, 70000}, -1);
  add(kForward, kOne, {2, int64_t{1} << 20}, 1);
  // Many short lines: lanes of 256 to 8 lines a block.
  add(kMain, kOne, {10000, 3}, 1);
  add(kMain, kOne, {900, 33}, -1);
  add(kFewKinds, kOne, {2000, 100}, -1);
  // Columns (the scanned dim outer): lanes below 32 and at 32; units of as many neighbouring lines
  // as divide the innermost other size, up to a 16-byte vector (odd sizes: one); few units and a
  // long dim: pieces; enough units to fill the device: none.
  add(kMain, kBoth, {37, 53}, 0);
  add(kMain, kOne, {257, 64}, 0);
  add(kMain, kOne, {300, 7}, 0);
  add(kMain, kOne, {64, 128}, 0);
  add(kMain, kOne, {33, 65}, 0);  // the CPU's blocks of 64 lines, and one more
  add(kMain, kOne, {37, 6}, 0);   // units of 2 lines (the largest power of 2 dividing 6)
  add(kMain, kOne, {37, 12}, 0);  // units of 4 (2 of f64)
  add(kMain, kOne, {4000, 8}, 0);
  add(kFewKinds, kOne, {20000, 4}, 0);
  add(kFewKinds, kOne, {100000, 3}, 0);
  add(kFewKinds, kOne, {40, 5000}, 0);
  add(kFewKinds, kOne, {5, 17001}, 0);
  add(kMain, kOne, {5, 300, 8}, 1);
  add(kMain, kOne, {6, 50, 4, 9}, 1);
  add(kMain, kOne, {3, 2000, 5}, -2);
  // Every kind under every view.
  struct Laid {
    Shape shape;
    int dim;
  };
  for (const Laid& l : {Laid{{37, 53}, 1}, Laid{{37, 53}, 0}, Laid{{5, 7, 11}, 1}, Laid{{33, 128}, -1},
                        Laid{{3, 1031}, -1}, Laid{{64, 4, 20}, 0}}) {
    for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned})
      add(kMain, kOne, l.shape, l.dim, v);
  }
  add(kMain, kOne, {3, 1031}, 1, Views::misaligned, backward ? "dx" : "out");  // only the output misaligned
  add(kMain, kOne, {16, 8, 24}, 1, Views::padded, backward ? "dout" : "indices");
  add(kMain, kOne, {16, 8, 24}, 2, Views::transposed, backward ? "x" : "out");
  if (backward) {
    add(kMain, kOne, {40, 33}, 1, Views::broadcast, "out");
    add(kMain, kOne, {40, 33}, 0, Views::padded, "indices");
    return out;
  }
  // Integer cumsums across i32's range (an i64 out, exact; an i32 out, wrapped) and near 2^62 (i64
  // sums that wrap), along rows and columns.
  for (const auto& [shape, dim] : {std::pair<Shape, int>{{3, 3000}, 1}, {{3000, 3}, 0}}) {
    auto add_wide = [&](std::vector<DType> dtypes, double bound, std::optional<DType> out_dtype) {
      Desc d;
      d.shape = shape;
      d.dim = dim;
      d.out_dtype = out_dtype;
      d.reverse = dim == 0;
      std::string note = "cumsum dim " + std::to_string(dim) + ", x in +-" + std::to_string(bound);
      if (out_dtype) note += ", out " + std::string(dtype_name(*out_dtype));
      out.push_back(
          {d, Views::contiguous, {}, std::nullopt, std::move(note), std::move(dtypes), {{"x", -bound, bound}}});
    };
    add_wide({DType::i32, DType::i64}, 0x1p31, std::nullopt);
    add_wide({DType::i32}, 0x1p31, DType::i32);
    add_wide({DType::i64}, 0x1p62, std::nullopt);
  }
  return out;
}
std::vector<Sample<Desc>> forward_samples() { return samples(false); }
std::vector<Sample<Desc>> backward_samples() { return samples(true); }

// (Functions, not globals: the table is built during other files' static initialization.)
std::vector<DescriptorError<Desc>> errors(bool backward) {
  std::vector<DescriptorError<Desc>> e = {
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
      {"dim 1 of a scalar",
       [](Desc& d) {
         d.shape = {};
         d.dim = 1;
       },
       StatusCode::invalid_problem, "descriptor.dim"},
      {"dim -2 of a scalar",
       [](Desc& d) {
         d.shape = {};
         d.dim = -2;
       },
       StatusCode::invalid_problem, "descriptor.dim"},
      {"rank 9",
       [](Desc& d) {
         d.shape = {1, 2, 3, 4, 5, 6, 7, 8, 9};
         d.dim = 0;
       },
       StatusCode::invalid_problem, "descriptor.shape.rank"},
      {"negative size",
       [](Desc& d) {
         d.shape = {4, -3};
         d.dim = 0;
       },
       StatusCode::invalid_problem, "descriptor.shape[1]"},
      {"unknown kind", [](Desc& d) { d.kind = static_cast<ScanKind>(5); }, StatusCode::invalid_problem,
       "descriptor.kind"},
      {"unknown kind past the enum", [](Desc& d) { d.kind = static_cast<ScanKind>(200); }, StatusCode::invalid_problem,
       "descriptor.kind"},
      {"out_dtype neither the input's nor f32",
       [](Desc& d) { d.out_dtype = d.dtype == DType::f16 ? DType::bf16 : DType::f16; }, StatusCode::unsupported,
       "descriptor.out_dtype"},
      {"integer out_dtype", [](Desc& d) { d.out_dtype = DType::i64; }, StatusCode::unsupported, "descriptor.out_dtype"},
      {"cumprod of i32 (integers take cumsum)",
       [](Desc& d) {
         d.dtype = DType::i32;
         d.kind = ScanKind::cumprod;
       },
       StatusCode::unsupported, "descriptor.dtype"},
      {"f32 out_dtype of an i64 cumsum (i64 only; the backward: no gradient)",
       [](Desc& d) {
         d.dtype = DType::i64;
         d.kind = ScanKind::cumsum;
         d.out_dtype = DType::f32;
       },
       StatusCode::unsupported, backward ? "descriptor.dtype" : "descriptor.out_dtype"},
      {"i8 indices", [](Desc& d) { d.index_dtype = DType::i8; }, StatusCode::unsupported, "descriptor.index_dtype"},
  };
  if (backward)
    e.push_back({"cumsum of i32: no gradient",
                 [](Desc& d) {
                   d.dtype = DType::i32;
                   d.kind = ScanKind::cumsum;
                 },
                 StatusCode::unsupported, "descriptor.dtype"});
  return e;
}

// The profiler's cases: on the GPU [8192, 4096] along the last dim and along dim 0, one line of
// 2^26 (pieces over the whole device) and [2^20, 4] along dim 0 (few columns, pieces); on the CPU
// smaller.
std::vector<Shape> last_dim_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{8192, 4096}, {1, int64_t{1} << 26}};
  return {{1024, 1024}, {1, int64_t{1} << 22}};
}
std::vector<Shape> dim0_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{8192, 4096}, {int64_t{1} << 20, 4}};
  return {{1024, 1024}, {int64_t{1} << 18, 4}};
}
std::vector<Shape> square_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{8192, 4096}};
  return {{1024, 1024}};
}

template <ScanKind kKind, int kDim>
Desc describe(DType dtype, const Shape& shape) {
  Desc d;
  d.dtype = dtype;
  d.shape = shape;
  d.dim = kDim;
  d.kind = kKind;
  return d;
}

// (cummax's backward is timed by no case: the profiler's index values are random, not what a
// forward writes; its kernel is every kind's affine scan.)
std::vector<BenchSample<Desc>> bench(bool backward) {
  using K = ScanKind;
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  if (backward)
    return {
        {"cumsum_backward", "autograd of torch.cumsum(x, -1)", dtypes, square_shapes, describe<K::cumsum, -1>},
        {"cumprod_backward", "autograd of torch.cumprod(x, -1)", dtypes, square_shapes, describe<K::cumprod, -1>},
        {"logcumsumexp_backward", "autograd of torch.logcumsumexp(x, -1)", dtypes, square_shapes,
         describe<K::logcumsumexp, -1>},
    };
  return {
      {"cumsum", "torch.cumsum(x, -1)", dtypes, last_dim_shapes, describe<K::cumsum, -1>},
      {"cumsum_dim0", "torch.cumsum(x, 0)", dtypes, dim0_shapes, describe<K::cumsum, 0>},
      {"cumprod", "torch.cumprod(x, -1)", dtypes, square_shapes, describe<K::cumprod, -1>},
      {"cummax", "torch.cummax(x, -1)", dtypes, square_shapes, describe<K::cummax, -1>},
      {"cummax_dim0", "torch.cummax(x, 0)", dtypes, square_shapes, describe<K::cummax, 0>},
      {"logcumsumexp", "torch.logcumsumexp(x, -1)", dtypes, last_dim_shapes, describe<K::logcumsumexp, -1>},
      {"logcumsumexp_dim0", "torch.logcumsumexp(x, 0)", dtypes, dim0_shapes, describe<K::logcumsumexp, 0>},
  };
}

// x as the header above says; the backward's saved `out` about as large (a logcumsumexp of such x
// is larger, which the gradient's formula does not need).
std::vector<ValueRange> forward_ranges() { return {{"x", 0.5, 1.3}}; }
std::vector<ValueRange> backward_ranges() { return {{"x", 0.5, 1.3}, {"out", 0.5, 1.5}}; }

void forward_reference(const Desc& d, RefIO& io) { reference::scan_forward(d, io); }
void backward_reference(const Desc& d, RefIO& io) { reference::scan_backward(d, io); }

}  // namespace

std::vector<std::unique_ptr<OpRow>> scan_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  rows.push_back(make_row<ScanPlan>(
      {forward_samples, forward_reference, harness::tolerance, forward_ranges(), errors(false), bench(false)}));
  rows.push_back(make_row<ScanBackwardPlan>({backward_samples,
                                             backward_reference,
                                             harness::tolerance,
                                             backward_ranges(),
                                             errors(true),
                                             bench(true),
                                             forward_of<ScanPlan>,
                                             {"dout", "out", {{"dx", "x"}}}}));
  return rows;
}

}  // namespace baracuda::harness

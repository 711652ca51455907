// Op-table rows of the reduction family: every ReduceKind (one plan pair, the descriptor's kind),
// forward and backward. The table's floating inputs are random in [0.5, 1.5) (no zeros, no signs: a
// product of a few hundred of them neither overflows nor underflows, and norms and their gradients
// stay away from the kinks at 0); integer ones whole numbers in [-1000, 1000) (products wrap), bools
// 0 or 1, and a few samples of their own (sums past 2^31, wrapping, ties); signed inputs, special values (NaN, +-inf,
// 1e30, ties, zeros), the empty reduced set's values, var's corrections, f32 outputs, i32 indices and the gradients of
// the kinds whose maps have kinks (the extremes) against finite differences are tests/test_reduce.cpp's.
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <utility>

#include "harness/op_row.hpp"
#include "harness/reference/reduce_reference.hpp"

namespace baracuda::harness {
namespace {

using Desc = ReduceDescriptor;
constexpr double kInf = std::numeric_limits<double>::infinity();

// A kind with its parameters (norm's p, var's correction).
struct KindSpec {
  ReduceKind kind;
  double p = 2.0;
  double correction = 1.0;
};

// Every kind once (var, std and var_mean with Bessel's correction, the 2-norm), and the further
// parameters that take another path (norm's 1, 3, 0.5, +-inf and 0; var, std and var_mean with
// correction 0).
constexpr KindSpec kMainKinds[] = {
    {ReduceKind::sum},       {ReduceKind::mean}, {ReduceKind::prod}, {ReduceKind::amax},
    {ReduceKind::amin},      {ReduceKind::max},  {ReduceKind::min},  {ReduceKind::argmax},
    {ReduceKind::argmin},    {ReduceKind::var},  {ReduceKind::std},  {ReduceKind::norm},
    {ReduceKind::logsumexp}, {ReduceKind::any},  {ReduceKind::all},  {ReduceKind::count_nonzero},
    {ReduceKind::var_mean},
};
constexpr KindSpec kExtraKinds[] = {
    {ReduceKind::norm, 1.0},     {ReduceKind::norm, 3.0},     {ReduceKind::norm, 0.5},
    {ReduceKind::norm, kInf},    {ReduceKind::norm, -kInf},   {ReduceKind::norm, 0.0},
    {ReduceKind::var, 2.0, 0.0}, {ReduceKind::std, 2.0, 0.0}, {ReduceKind::var_mean, 2.0, 0.0},
};

// Which kinds take a sample: every kind, or also the extra parameters; or, for the largest shapes,
// one kind per math: forward, per fold (sums: mean and the 2-norm; extremes: amax, and argmin for
// the indices; var; logsumexp; counts); backward (whose map is the same kernel for every kind), per
// statistic it reduces first (none: mean; ties: amax; moments: var) and per saved view it reads
// (logsumexp: out; max: indices). var_mean runs var's kernels (its mean stored beside the var).
// (`forward`: the few forward kinds, and no backward: the largest shapes, whose backward reduces its
// statistics with the forward's kernels and maps elements as every other shape's.)
enum class Kinds { main, extra, few, forward };
constexpr ReduceKind kFewForward[] = {ReduceKind::mean,         ReduceKind::norm, ReduceKind::amax,
                                      ReduceKind::argmin,       ReduceKind::var,  ReduceKind::logsumexp,
                                      ReduceKind::count_nonzero};
constexpr ReduceKind kFewBackward[] = {ReduceKind::mean, ReduceKind::amax, ReduceKind::var, ReduceKind::logsumexp,
                                       ReduceKind::max};

bool moments(ReduceKind kind) {
  return kind == ReduceKind::var || kind == ReduceKind::std || kind == ReduceKind::var_mean;
}

std::string kind_label(const KindSpec& k) {
  std::string s(reference::reduce_kind_name(k.kind));
  if (k.kind == ReduceKind::norm) s += " p " + std::to_string(k.p);
  if (moments(k.kind)) s += " correction " + std::to_string(k.correction);
  return s;
}

std::string dims_label(const ReduceDims& dims, bool keepdim) {
  std::string s = "dims {";
  for (int i = 0; i < dims.count; ++i) s += (i ? ", " : "") + std::to_string(dims.dims[i]);
  return s + "}" + (keepdim ? " keepdim" : "");
}

int64_t reduced_count(const Shape& shape, const ReduceDims& dims) {
  Desc d;
  d.shape = shape;
  d.dims = dims;
  return reference::ReduceLayout(d).count();
}

// How many times a broadcast view (layout() in harness/op_table.cpp: a zero stride along the first
// dim of size > 1) repeats each element of a reduced set: that dim's size where it is reduced, else 1.
int64_t repeat_factor(const Shape& shape, const ReduceDims& dims) {
  Desc d;
  d.shape = shape;
  d.dims = dims;
  int first = -1;
  for (int k = 0; k < shape.rank && first < 0; ++k)
    if (shape.dims[k] > 1) first = k;
  if (first < 0) return 1;
  Desc only_first = d;
  for (int k = 0; k < shape.rank; ++k)
    if (k != first) only_first.shape.dims[k] = 1;
  return reference::ReduceLayout(only_first).count();
}
// Whether that view repeats one element over each reduced set: the repeated dim is the only reduced
// one of size > 1.
bool repeats(const Shape& shape, const ReduceDims& dims) {
  Desc d;
  d.shape = shape;
  d.dims = dims;
  const int64_t factor = repeat_factor(shape, dims);
  return factor > 1 && reference::ReduceLayout(d).count() == factor;
}

// The longest reduced set a product takes: x in [0.5, 1.5) has E[log x] = -0.045 and a standard
// deviation of 0.29, so a product of 1100 lies within about e^(-50 +- 10), far inside f32's range
// (and it holds f16's 6e-8 .. 65504 only as closely as the tolerance needs: underflow to 0 is within
// it, overflow past e^11 is 5 standard deviations away for 100 elements, more for fewer).
constexpr int64_t kLongestProduct = 1100;

// The longest reduced set a sum takes: a sum of x in [0.5, 1.5) past 43000 elements may not fit
// f16 (65504); mean runs the same kernels over longer ones (and test_reduce.cpp sums long signed rows).
constexpr int64_t kLongestSum = 40000;

// Whether the kind's result over `count` elements is a number the drivers can compare (they judge
// NaN and inf as wrong): the extremes refuse an empty set (tests/test_reduce.cpp and the error
// cases); mean, var, std, var_mean and logsumexp of nothing, and var / std / var_mean with
// n - correction <= 0, are NaN or +-inf (test_reduce.cpp); std's gradient is NaN where the elements
// are all equal (std 0), which a short row of 16-bit values often is. `repeated`: the view repeats one element over the
// reduced set (a broadcast along the only reduced dim of size > 1), whose product may overflow f16 and whose std is 0.
// `repeat`: how many times the view repeats each element of a reduced set; a product of r copies of
// m values has r times their log's spread, which past 16 elements reaches f16's overflow (e^11) too
// often (sample [5, 7, 11], dims {0, 2}: 11 values to the 5th power, 2.8 standard deviations).
bool takes(const KindSpec& k, int64_t count, bool repeated, int64_t repeat, bool backward) {
  if (backward && !reference::reduce_differentiable(k.kind)) return false;
  if (k.kind == ReduceKind::sum && !backward && count > kLongestSum) return false;
  if (k.kind == ReduceKind::prod && (repeated || (repeat > 1 && count > 16))) return false;
  if (k.kind == ReduceKind::std && backward && (count < 5 || repeated)) return false;
  if (count == 0 && (reference::reduce_picks_element(k.kind, k.p) || k.kind == ReduceKind::mean || moments(k.kind) ||
                     k.kind == ReduceKind::logsumexp))
    return false;
  if (moments(k.kind) && static_cast<double>(count) - k.correction <= 0) return false;
  if (k.kind == ReduceKind::prod && count > kLongestProduct) return false;
  // A norm of p in (0, 1] grows as count^(1/p) (f16 again).
  if (k.kind == ReduceKind::norm && k.p > 0 && k.p <= 1 && !backward &&
      std::pow(static_cast<double>(count), 1 / k.p) > static_cast<double>(kLongestSum))
    return false;
  return true;
}

// The backward of the kinds whose maps have kinks where elements tie (the extremes: amax, amin,
// max, min, norm's +-inf) run on padded views where the others are contiguous: the table's finite
// differences (tests/test_op_table.cpp) take the contiguous samples, and random rows of hundreds
// of elements have two within the step's reach of each other (max and min also read the forward's
// indices, which the driver does not pass on). tests/test_reduce.cpp checks them by finite
// differences on rows with their extremes well apart.
bool kinked(const KindSpec& k) {
  return k.kind == ReduceKind::amax || k.kind == ReduceKind::amin || k.kind == ReduceKind::max ||
         k.kind == ReduceKind::min || (k.kind == ReduceKind::norm && std::isinf(k.p));
}

// Integer and bool samples of their own (the samples above run them too, at the kinds they take):
// i32 values across their range, whose sums pass 2^31 (exact in i64; wrapped in an i32 out) and
// whose products wrap; i64 values near 2^62, whose sums wrap too; values in [0, 4), for ties of the
// extremes; bools mostly false or mostly true, for any and all.
void integer_samples(std::vector<Sample<Desc>>& out) {
  using K = ReduceKind;
  auto add = [&](std::initializer_list<ReduceKind> kinds, Shape shape, ReduceDims dims, std::vector<DType> dtypes,
                 double lo, double hi, std::optional<DType> out_dtype = std::nullopt) {
    for (ReduceKind kind : kinds) {
      Desc d;
      d.shape = shape;
      d.dims = dims;
      d.kind = kind;
      d.out_dtype = out_dtype;
      std::string note = std::string(reference::reduce_kind_name(kind)) + " " + dims_label(dims, false) + ", x in [" +
                         std::to_string(lo) + ", " + std::to_string(hi) + ")";
      if (out_dtype) note += ", out " + std::string(dtype_name(*out_dtype));
      out.push_back({d, Views::contiguous, {}, std::nullopt, std::move(note), dtypes, {{"x", lo, hi}}});
    }
  };
  const std::vector<DType> ints = {DType::i32, DType::i64};
  constexpr double k31 = 0x1p31, k62 = 0x1p62;
  for (const auto& [shape, dims] : {std::pair<Shape, ReduceDims>{{5, 1000}, {1}}, {{1000, 5}, {0}}}) {
    add({K::sum, K::prod, K::amax, K::argmin}, shape, dims, ints, -k31, k31);
    add({K::sum, K::prod}, shape, dims, {DType::i32}, -k31, k31, DType::i32);
    add({K::sum, K::prod, K::max}, shape, dims, {DType::i64}, -k62, k62);
    add({K::amax, K::amin, K::max, K::min, K::argmax, K::argmin}, shape, dims, ints, 0, 4);
    add({K::any, K::all, K::count_nonzero}, shape, dims, {DType::boolean}, 0, 1.002);
    add({K::any, K::all, K::count_nonzero}, shape, dims, {DType::boolean}, 0.998, 2);
  }
}

// Every kind of sample (the shapes of 2^15 elements or more, where the CPU kernels go parallel, take
// few kinds: their OpenMP regions are what the drivers' runs cost most, and more so where tests run
// side by side on 2 cores): dims sets (last, first, middle, all, several non-adjacent, negative; keepdim
// and not); size-1 dims; odd and prime sizes; rank 0 and rank 8; an empty reduced dim and an empty
// kept dim; long rows and many short ones; CUDA's thresholds (reduce_geometry in
// src/ops/reduce_problem.hpp: the rows group's sizes, split_rows, columns' lanes and splits); the
// CPU's pieces of 8192; and every view (padded, transposed, broadcast, misaligned; an output or
// dout alone) for every kind.
std::vector<Sample<Desc>> samples(bool backward) {
  std::vector<Sample<Desc>> out;
  int sample = 0;  // spreads i32 indices over the samples
  auto add = [&](Kinds kinds, Shape shape, ReduceDims dims, bool keepdim, Views views = Views::contiguous,
                 std::string_view only = {}) {
    const int64_t count = reduced_count(shape, dims);
    const bool broadcast = views == Views::broadcast && only.empty();
    const bool repeated = broadcast && repeats(shape, dims);
    const int64_t repeat = broadcast ? repeat_factor(shape, dims) : 1;
    auto one = [&](const KindSpec& k) {
      if (!takes(k, count, repeated, repeat, backward)) return;
      Desc d;
      d.shape = shape;
      d.dims = dims;
      d.keepdim = keepdim;
      d.kind = k.kind;
      d.p = k.p;
      d.correction = k.correction;
      d.index_dtype = ++sample % 3 == 0 ? DType::i32 : DType::i64;
      const bool padded = backward && kinked(k) && views == Views::contiguous;
      std::string note = kind_label(k) + " " + dims_label(dims, keepdim);
      if (reference::reduce_has_indices(k.kind)) note += ", " + std::string(dtype_name(d.index_dtype)) + " indices";
      if (padded) note += ", padded: no finite differences";
      // The backward's indices (max, min): the driver's [-2, count + 2), so that a bad one (its
      // output's gradient is 0 throughout) occurs.
      out.push_back(
          {d, padded ? Views::padded : views, only, std::nullopt, std::move(note), reference::reduce_dtypes(k.kind)});
    };
    const std::span<const ReduceKind> few = backward ? std::span<const ReduceKind>(kFewBackward) : kFewForward;
    if (kinds == Kinds::forward && backward) return;
    for (const KindSpec& k : kMainKinds)
      if (kinds == Kinds::main || kinds == Kinds::extra || std::find(few.begin(), few.end(), k.kind) != few.end())
        one(k);
    if (kinds == Kinds::extra)
      for (const KindSpec& k : kExtraKinds) one(k);
  };
  using D = ReduceDims;
  constexpr Kinds kMain = Kinds::main, kExtra = Kinds::extra, kFew = Kinds::few, kForward = Kinds::forward;

  // Dims sets of an odd, prime-sized rank-4 tensor.
  const Shape odd{3, 5, 7, 11};
  add(kExtra, odd, D{-1}, false);
  add(kExtra, odd, D{0}, true);
  add(kMain, odd, D{1}, false);
  add(kMain, odd, D{2}, true);
  add(kExtra, odd, D{0, 2}, false);   // non-adjacent
  add(kMain, odd, D{1, 3}, true);     // non-adjacent, the last among them
  add(kMain, odd, D{-1, -3}, false);  // negative, out of order
  add(kMain, odd, D{3, 0, 1}, false);
  add(kExtra, odd, D{}, false);  // every dim
  add(kMain, odd, D{}, true);
  add(kMain, odd, D{0, 1, 2, 3}, false);
  // Size-1 dims: reduced, kept, and a reduced set of one element.
  add(kMain, {7, 1, 5}, D{1}, false);
  add(kMain, {7, 1, 5}, D{0, 1}, true);
  add(kMain, {1, 9}, D{1}, false);
  add(kMain, {9, 1}, D{0}, true);
  add(kMain, {4, 1, 6, 1}, D{1, 3}, false);  // one element each
  add(kMain, {1, 1, 1}, D{}, false);
  // Rank 0 (one element, no dims) and rank 8.
  add(kMain, Shape{}, D{}, false);
  add(kMain, Shape{}, D{}, true);
  const Shape rank8{2, 1, 3, 2, 2, 1, 3, 2};
  add(kMain, rank8, D{0, 3, 6}, false);
  add(kMain, rank8, D{7}, true);
  add(kMain, rank8, D{}, false);
  add(kMain, rank8, D{1, 2, 4, 5}, true);
  // Empty: a reduced dim of size 0 (sum 0, prod 1, norm 0, any false, all true, count 0; the other
  // kinds are refused or give NaN), kept dims of size 0 (nothing to write).
  add(kExtra, {0, 5}, D{0}, false);
  add(kMain, {4, 0}, D{1}, true);
  add(kMain, {3, 0}, D{}, false);
  add(kMain, {0, 5}, D{1}, false);
  add(kMain, {3, 0, 4}, D{0, 2}, true);
  // Rows along the last dim from 2 to 2^20 elements: the CUDA rows group's steps (a sub-warp of 1 to
  // 32 lanes with about 4 16-byte vectors each; wider, up to 256 threads, from 32 vectors a thread:
  // 4096 f32 elements, 8192 bf16, 2048 f64), split_rows from 8192 vectors a row (32768 f32), the
  // CPU's pieces of 8192.
  for (int64_t length : {2, 3, 5, 8, 17, 31, 33, 64, 65, 129, 257, 511, 513, 1023, 2049, 4095, 4097, 8193, 16385})
    add(length <= 129 ? kExtra : kMain, {3, length}, D{-1}, false);
  add(kFew, {2, 32768}, D{1}, true);
  add(kFew, {3, 70000}, D{1}, false);
  add(kForward, {1, int64_t{1} << 20}, D{1}, false);
  // Many short rows.
  add(kMain, {10000, 3}, D{1}, false);
  add(kMain, {900, 33}, D{-1}, true);
  // Columns (the reduced dims outer): whole 16-byte vectors of outputs and not, few and many
  // outputs, short and long walks (splits along them), reduced dims on both sides of kept ones.
  add(kExtra, {37, 53}, D{0}, false);
  add(kMain, {257, 64}, D{0}, true);
  add(kFew, {100000, 3}, D{0}, false);  // few outputs, a long walk: the most splits
  add(kMain, {4000, 8}, D{0}, false);
  add(kFew, {40, 5000}, D{0}, false);  // many outputs: 32 lanes
  add(kForward, {2000, 7, 64}, D{0, 1}, false);
  add(kMain, {5, 300, 8}, D{1}, false);
  add(kMain, {6, 50, 4, 9}, D{0, 2}, true);
  add(kMain, {3, 5, 2000}, D{0, 1}, false);
  // Every kind under every view.
  struct Laid {
    Shape shape;
    ReduceDims dims;
    bool keepdim;
  };
  for (const Laid& l :
       {Laid{{37, 53}, D{1}, false}, Laid{{37, 53}, D{0}, true}, Laid{{5, 7, 11}, D{0, 2}, false},
        Laid{{33, 128}, D{1}, true}, Laid{{3, 1031}, D{-1}, false}, Laid{{64, 4, 20}, D{0, 2}, false}}) {
    for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned})
      add(kMain, l.shape, l.dims, l.keepdim, v);
  }
  add(kExtra, {6, 40}, D{1}, false, Views::transposed);
  add(kExtra, {40, 6}, D{0}, false, Views::misaligned);
  add(kMain, {3, 1031}, D{1}, false, Views::misaligned, backward ? "dx" : "out");  // only the output misaligned
  add(kMain, {16, 8, 24}, D{1}, true, Views::padded, backward ? "dout" : "out");
  if (!backward) integer_samples(out);
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
         d.dims = {2};
       },
       StatusCode::invalid_problem, "descriptor.dims"},
      {"dim below -rank",
       [](Desc& d) {
         d.shape = {4, 5};
         d.dims = {0, -3};
       },
       StatusCode::invalid_problem, "descriptor.dims"},
      {"a dim of a rank-0 tensor",
       [](Desc& d) {
         d.shape = {};
         d.dims = {0};
       },
       StatusCode::invalid_problem, "descriptor.dims"},
      {"repeated dim",
       [](Desc& d) {
         d.shape = {4, 5, 6};
         d.dims = {1, -2};
       },
       StatusCode::invalid_problem, "descriptor.dims"},
      {"more dims than the rank",
       [](Desc& d) {
         d.shape = {4, 5};
         d.dims = {0, 1, 0};
       },
       StatusCode::invalid_problem, "descriptor.dims"},
      {"more dims than kMaxRank",
       [](Desc& d) {
         d.shape = {1, 2, 1, 2, 1, 2, 1, 2};
         d.dims = {0, 1, 2, 3, 4, 5, 6, 7, 0};
       },
       StatusCode::invalid_problem, "descriptor.dims"},
      {"rank 9", [](Desc& d) { d.shape = {1, 2, 3, 4, 5, 6, 7, 8, 9}; }, StatusCode::invalid_problem,
       "descriptor.shape.rank"},
      {"negative size",
       [](Desc& d) {
         d.shape = {4, -3};
         d.dims = {1};
       },
       StatusCode::invalid_problem, "descriptor.shape[1]"},
      {"unknown kind", [](Desc& d) { d.kind = static_cast<ReduceKind>(static_cast<int>(ReduceKind::var_mean) + 1); },
       StatusCode::invalid_problem, "descriptor.kind"},
      {"unknown kind past the enum", [](Desc& d) { d.kind = static_cast<ReduceKind>(200); },
       StatusCode::invalid_problem, "descriptor.kind"},
      {"out_dtype neither the input's nor f32",
       [](Desc& d) {
         d.kind = ReduceKind::sum;
         d.out_dtype = d.dtype == DType::f16 ? DType::bf16 : DType::f16;
       },
       StatusCode::unsupported, "descriptor.out_dtype"},
      {"integer out_dtype of sum",
       [](Desc& d) {
         d.kind = ReduceKind::sum;
         d.out_dtype = DType::i64;
       },
       StatusCode::unsupported, "descriptor.out_dtype"},
      {"NaN p",
       [](Desc& d) {
         d.kind = ReduceKind::norm;
         d.p = std::nan("");
       },
       StatusCode::invalid_problem, "descriptor.p"},
      {"infinite correction",
       [](Desc& d) {
         d.kind = ReduceKind::var;
         d.correction = kInf;
       },
       StatusCode::invalid_problem, "descriptor.correction"},
      {"NaN correction",
       [](Desc& d) {
         d.kind = ReduceKind::std;
         d.correction = std::nan("");
       },
       StatusCode::invalid_problem, "descriptor.correction"},
  };
  // The extremes of an empty reduced set: there is no element to pick.
  using Mutate = void (*)(Desc&);
  const std::pair<ReduceKind, Mutate> empty[] = {
      {ReduceKind::amax,
       [](Desc& d) {
         d.kind = ReduceKind::amax;
         d.shape = {4, 0};
         d.dims = {1};
       }},
      {ReduceKind::amin,
       [](Desc& d) {
         d.kind = ReduceKind::amin;
         d.shape = {0, 3};
         d.dims = {0};
       }},
      {ReduceKind::max,
       [](Desc& d) {
         d.kind = ReduceKind::max;
         d.shape = {2, 0, 3};
         d.dims = {};
       }},
      {ReduceKind::min,
       [](Desc& d) {
         d.kind = ReduceKind::min;
         d.shape = {2, 0, 3};
         d.dims = {1};
       }},
      {ReduceKind::argmax,
       [](Desc& d) {
         d.kind = ReduceKind::argmax;
         d.shape = {0};
         d.dims = {};
       }},
      {ReduceKind::argmin,
       [](Desc& d) {
         d.kind = ReduceKind::argmin;
         d.shape = {5, 0};
         d.dims = {-1};
       }},
      {ReduceKind::norm,
       [](Desc& d) {
         d.kind = ReduceKind::norm;
         d.p = -kInf;
         d.shape = {4, 0};
         d.dims = {1};
       }},
  };
  for (const auto& [kind, mutate] : empty)
    if (!backward || reference::reduce_differentiable(kind))
      e.push_back({"an extreme of an empty reduced set", mutate, StatusCode::invalid_problem, "descriptor.shape"});
  if (!backward) {
    e.push_back({"f32 out_dtype of count_nonzero (i64 only)",
                 [](Desc& d) {
                   d.kind = ReduceKind::count_nonzero;
                   d.out_dtype = DType::f32;
                 },
                 StatusCode::unsupported, "descriptor.out_dtype"});
    e.push_back({"an out_dtype of argmax (it has only indices)",
                 [](Desc& d) {
                   d.kind = ReduceKind::argmax;
                   d.out_dtype = d.dtype;
                 },
                 StatusCode::unsupported, "descriptor.out_dtype"});
  }
  // Integers and bools: the kinds and out dtypes they take (PyTorch refuses the mean of integers);
  // the backward takes none (integers have no gradient).
  const std::pair<std::string_view, Mutate> integer[] = {
      {"mean of i32",
       [](Desc& d) {
         d.dtype = DType::i32;
         d.kind = ReduceKind::mean;
       }},
      {"logsumexp of i64",
       [](Desc& d) {
         d.dtype = DType::i64;
         d.kind = ReduceKind::logsumexp;
       }},
      {"var_mean of i32",
       [](Desc& d) {
         d.dtype = DType::i32;
         d.kind = ReduceKind::var_mean;
       }},
      {"sum of bool",
       [](Desc& d) {
         d.dtype = DType::boolean;
         d.kind = ReduceKind::sum;
       }},
      {"amax of i32",
       [](Desc& d) {
         d.dtype = DType::i32;
         d.kind = ReduceKind::amax;
       }},
  };
  for (const auto& [label, mutate] : integer) {
    Desc probe;
    mutate(probe);
    const std::vector<DType> takes = reference::reduce_dtypes(probe.kind);
    if (backward || std::find(takes.begin(), takes.end(), probe.dtype) == takes.end())
      e.push_back({label, mutate, StatusCode::unsupported, "descriptor.dtype"});
  }
  if (!backward) {
    e.push_back({"f32 out_dtype of an i32 sum (i64 or i32)",
                 [](Desc& d) {
                   d.dtype = DType::i32;
                   d.kind = ReduceKind::sum;
                   d.out_dtype = DType::f32;
                 },
                 StatusCode::unsupported, "descriptor.out_dtype"});
    e.push_back({"i64 out_dtype of an i32 amax (i32 only)",
                 [](Desc& d) {
                   d.dtype = DType::i32;
                   d.kind = ReduceKind::amax;
                   d.out_dtype = DType::i64;
                 },
                 StatusCode::unsupported, "descriptor.out_dtype"});
  }
  if (backward) {
    for (auto mutate : {+[](Desc& d) { d.kind = ReduceKind::argmax; }, +[](Desc& d) { d.kind = ReduceKind::argmin; },
                        +[](Desc& d) { d.kind = ReduceKind::any; }, +[](Desc& d) { d.kind = ReduceKind::all; },
                        +[](Desc& d) { d.kind = ReduceKind::count_nonzero; }})
      e.push_back({"a kind without a gradient", mutate, StatusCode::unsupported, "descriptor.kind"});
  }
  return e;
}

// The profiler's cases: on the GPU [8192, 4096] along the last dim and along dim 0 (logsumexp also
// [4096, 131072]; sum also one row of 2^26), on the CPU smaller.
std::vector<Shape> last_dim_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{8192, 4096}};
  return {{1024, 1024}};
}
std::vector<Shape> sum_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{8192, 4096}, {1, int64_t{1} << 26}};
  return {{1024, 1024}, {1, int64_t{1} << 22}};
}
std::vector<Shape> logsumexp_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{8192, 4096}, {4096, 131072}};
  return {{1024, 1024}};
}
std::vector<Shape> dim0_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{8192, 4096}};
  return {{4000, 1024}};
}

template <ReduceKind kKind, int kDim>
Desc describe(DType dtype, const Shape& shape) {
  Desc d;
  d.dtype = dtype;
  d.shape = shape;
  d.dims = {kDim};
  d.kind = kKind;
  return d;
}

std::vector<BenchSample<Desc>> bench(bool backward) {
  using K = ReduceKind;
  const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  if (backward)
    return {
        {"sum_backward", "autograd of torch.sum(x, -1)", dtypes, last_dim_shapes, describe<K::sum, -1>},
        {"mean_backward", "autograd of torch.mean(x, -1)", dtypes, last_dim_shapes, describe<K::mean, -1>},
        {"amax_backward", "autograd of torch.amax(x, -1)", dtypes, last_dim_shapes, describe<K::amax, -1>},
        {"var_backward", "autograd of torch.var(x, -1)", dtypes, last_dim_shapes, describe<K::var, -1>},
        {"var_mean_backward", "autograd of torch.var_mean(x, -1)", dtypes, last_dim_shapes, describe<K::var_mean, -1>},
        {"logsumexp_backward", "autograd of torch.logsumexp(x, -1)", dtypes, last_dim_shapes,
         describe<K::logsumexp, -1>},
    };
  return {
      {"sum", "torch.sum(x, -1)", dtypes, sum_shapes, describe<K::sum, -1>},
      {"sum_dim0", "torch.sum(x, 0)", dtypes, dim0_shapes, describe<K::sum, 0>},
      {"mean", "torch.mean(x, -1)", dtypes, last_dim_shapes, describe<K::mean, -1>},
      {"mean_dim0", "torch.mean(x, 0)", dtypes, dim0_shapes, describe<K::mean, 0>},
      {"amax", "torch.amax(x, -1)", dtypes, last_dim_shapes, describe<K::amax, -1>},
      {"amax_dim0", "torch.amax(x, 0)", dtypes, dim0_shapes, describe<K::amax, 0>},
      {"argmax", "torch.argmax(x, -1)", dtypes, last_dim_shapes, describe<K::argmax, -1>},
      {"argmax_dim0", "torch.argmax(x, 0)", dtypes, dim0_shapes, describe<K::argmax, 0>},
      {"var", "torch.var(x, -1)", dtypes, last_dim_shapes, describe<K::var, -1>},
      {"var_dim0", "torch.var(x, 0)", dtypes, dim0_shapes, describe<K::var, 0>},
      {"std", "torch.std(x, -1)", dtypes, last_dim_shapes, describe<K::std, -1>},
      {"std_dim0", "torch.std(x, 0)", dtypes, dim0_shapes, describe<K::std, 0>},
      {"var_mean", "torch.var_mean(x, -1)", dtypes, last_dim_shapes, describe<K::var_mean, -1>},
      {"var_mean_dim0", "torch.var_mean(x, 0)", dtypes, dim0_shapes, describe<K::var_mean, 0>},
      {"norm", "torch.linalg.vector_norm(x, 2, -1)", dtypes, last_dim_shapes, describe<K::norm, -1>},
      {"norm_dim0", "torch.linalg.vector_norm(x, 2, 0)", dtypes, dim0_shapes, describe<K::norm, 0>},
      {"logsumexp", "torch.logsumexp(x, -1)", dtypes, logsumexp_shapes, describe<K::logsumexp, -1>},
      {"logsumexp_dim0", "torch.logsumexp(x, 0)", dtypes, dim0_shapes, describe<K::logsumexp, 0>},
      {"prod", "torch.prod(x, -1)", dtypes, last_dim_shapes, describe<K::prod, -1>},
      {"prod_dim0", "torch.prod(x, 0)", dtypes, dim0_shapes, describe<K::prod, 0>},
  };
}

// x as the header above says; the backward's saved `out` (norm's, logsumexp's) positive, as a norm
// is (and a logsumexp of such x is).
std::vector<ValueRange> forward_ranges() { return {{"x", 0.5, 1.5}}; }
std::vector<ValueRange> backward_ranges() { return {{"x", 0.5, 1.5}, {"out", 0.5, 1.5}}; }

void forward_reference(const Desc& d, RefIO& io) { reference::reduce_forward(d, io); }
void backward_reference(const Desc& d, RefIO& io) { reference::reduce_backward(d, io); }

}  // namespace

std::vector<std::unique_ptr<OpRow>> reduce_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  rows.push_back(make_row<ReducePlan>(
      {forward_samples, forward_reference, harness::tolerance, forward_ranges(), errors(false), bench(false)}));
  rows.push_back(make_row<ReduceBackwardPlan>({backward_samples,
                                               backward_reference,
                                               harness::tolerance,
                                               backward_ranges(),
                                               errors(true),
                                               bench(true),
                                               forward_of<ReducePlan>,
                                               {"dout", "out", {{"dx", "x"}}, {{"dmean", "mean"}}}}));
  return rows;
}

}  // namespace baracuda::harness

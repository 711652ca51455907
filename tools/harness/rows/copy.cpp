// Op-table rows of the copy family: CastPlan (every dtype to every dtype, the driver's dtype being
// x's) and FillPlan. Both are exact: tolerance 0 against tools/harness/reference/copy_reference.hpp.
// Cast samples, per out_dtype: edge sizes; padded, transposed, broadcast and misaligned views; x
// alone transposed (the transpose path: both sides of its minimum size, and with a batch dim); and
// value ranges past the out_dtype's (saturation, overflow to inf, rounding of wide integers).
// Special values (NaN, +-inf, +-0, subnormals, ties of rounding) are tests/test_copy.cpp's.
#include <cmath>
#include <string>
#include <vector>

#include "harness/op_row.hpp"
#include "harness/reference/copy_reference.hpp"

namespace baracuda::harness {
namespace {

constexpr DType kAll[] = {DType::f32, DType::f64, DType::f16, DType::bf16,   DType::i8,
                          DType::u8,  DType::i32, DType::i64, DType::boolean};
const std::vector<DType> kFloatTypes = {DType::f32, DType::f64, DType::f16, DType::bf16};

double exact(DType) { return 0.0; }

// x's values past the range of `out` (floats: saturation, overflow, rounding), where x is a float.
ValueRange float_range_for(DType out) {
  switch (out) {
    case DType::i8:
    case DType::u8:
      return {"x", -300, 300};
    case DType::i32:
      return {"x", -3e9, 3e9};
    case DType::i64:
      return {"x", -2e19, 2e19};
    case DType::f16:
      return {"x", -7e4, 7e4};
    case DType::boolean:
      return {"x", -2, 2};
    default:
      return {"x", -1e39, 1e39};  // f64 to f32 / bf16 overflows; f32 x is inf there
  }
}

std::vector<Sample<CastDescriptor>> cast_samples() {
  std::vector<Sample<CastDescriptor>> out;
  for (DType to : kAll) {
    const std::string label = std::string("to ") + std::string(dtype_name(to));
    auto add = [&](Shape shape, Views views = Views::contiguous, std::string_view only = {},
                   std::vector<DType> dtypes = {}, std::vector<ValueRange> ranges = {}) {
      CastDescriptor d;
      d.out_dtype = to;
      d.shape = shape;
      out.push_back({d, views, only, std::nullopt, label, std::move(dtypes), std::move(ranges)});
    };
    for (const Shape& s : {Shape{0}, Shape{}, Shape{7}, Shape{4097}, Shape{37, 53}, Shape{2, 1, 3, 2, 2, 1, 3, 2}})
      add(s);
    for (Views v : {Views::padded, Views::transposed, Views::broadcast, Views::misaligned}) add({33, 128}, v);
    add({5, 7, 11}, Views::transposed);
    add({4097}, Views::misaligned, "x");
    add({4097}, Views::misaligned, "y");
    // x alone transposed: the transpose path where both tiled dims reach kTransposeMinSize (16),
    // the strided one where one does not; and a batch of transposes ([40, 3, 50] column-major).
    add({33, 128}, Views::transposed, "x");
    add({16, 16}, Views::transposed, "x");
    add({15, 128}, Views::transposed, "x");
    add({128, 15}, Views::transposed, "x");
    add({40, 3, 50}, Views::transposed, "x");
    // The transpose kernels' blocks and tiles: Q (x's unit dim, the first here) and P (y's, the last)
    // in part of a thread's block (V up to 8 elements a side) and of a tile (16 V on CUDA, 32 on the
    // CPU), and past one tile ({200, 40}: two tiles along Q at V = 8); and a batch whose strides alone
    // break the vector accesses ({20, 2, 36}: x's stride along P 40 and y's along Q 72 are multiples of
    // 8, the batch's 20 and 36 are not).
    for (const Shape& s : {Shape{17, 200}, Shape{32, 40}, Shape{64, 33}, Shape{65, 300}, Shape{16, 1000},
                           Shape{200, 40}, Shape{20, 2, 36}})
      add(s, Views::transposed, "x");
    // Values past out's range.
    add({4097}, Views::contiguous, {}, kFloatTypes, {float_range_for(to)});
    add({33, 128}, Views::transposed, "x", kFloatTypes, {float_range_for(to)});
    add({4097}, Views::contiguous, {}, {DType::i64}, {{"x", -1e15, 1e15}});
    add({4097}, Views::contiguous, {}, {DType::i32}, {{"x", -2.1e9, 2.1e9}});
  }
  return out;
}

void cast_reference(const CastDescriptor& d, RefIO& io) { reference::cast(d, io); }

std::vector<DescriptorError<CastDescriptor>> cast_errors() {
  return {
      {"unknown out_dtype", [](CastDescriptor& d) { d.out_dtype = static_cast<DType>(77); },
       StatusCode::invalid_problem, "descriptor.out_dtype"},
      {"negative size",
       [](CastDescriptor& d) {
         d.shape = {4, -3};
       },
       StatusCode::invalid_problem, "descriptor.shape[1]"},
      {"rank 9", [](CastDescriptor& d) { d.shape = {1, 2, 3, 4, 5, 6, 7, 8, 9}; }, StatusCode::invalid_problem,
       "descriptor.shape.rank"},
  };
}

// The profiler's cases: 2^26 elements on the GPU (far past L2), 2^22 on the CPU; and an odd size.
std::vector<Shape> standard_shapes(Backend backend) {
  if (backend == Backend::cuda) return {{16384, 4096}, {1000, 1001}};
  return {{1024, 4096}, {1000, 1001}};
}
template <DType kOut>
CastDescriptor cast_to(DType dtype, const Shape& shape) {
  CastDescriptor d;
  d.dtype = dtype;
  d.out_dtype = kOut;
  d.shape = shape;
  return d;
}
CastDescriptor same_type(DType dtype, const Shape& shape) {
  CastDescriptor d;
  d.dtype = d.out_dtype = dtype;
  d.shape = shape;
  return d;
}

std::vector<BenchSample<CastDescriptor>> cast_bench() {
  return {{"cast_to_bf16", "x.to(torch.bfloat16)", {DType::f32}, standard_shapes, cast_to<DType::bf16>},
          {"cast_to_f32", "x.to(torch.float32)", {DType::bf16}, standard_shapes, cast_to<DType::f32>},
          {"copy_transposed",
           "x.t().contiguous()",
           {DType::f32, DType::bf16, DType::u8},
           standard_shapes,
           same_type,
           false,
           false,
           {},
           {},
           "x"}};
}

std::vector<Sample<FillDescriptor>> fill_samples() {
  std::vector<Sample<FillDescriptor>> out;
  auto add = [&](Shape shape, double value, Views views = Views::contiguous, std::vector<DType> dtypes = {},
                 std::optional<int64_t> integer = std::nullopt) {
    FillDescriptor d;
    d.shape = shape;
    d.value = value;
    d.integer_value = integer;
    out.push_back({d, views, {}, std::nullopt, "value " + std::to_string(value), std::move(dtypes)});
  };
  for (const Shape& s : {Shape{0}, Shape{}, Shape{7}, Shape{4097}, Shape{37, 53}, Shape{2, 1, 3, 2, 2, 1, 3, 2}})
    add(s, 3.75);
  for (Views v : {Views::padded, Views::transposed, Views::misaligned}) add({33, 128}, 3.75, v);
  add({4097}, 0.0);
  add({4097}, -7.5, Views::contiguous,
      {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8, DType::i32, DType::i64, DType::boolean});
  add({4097}, 1e30, Views::contiguous, {DType::f32, DType::f64});
  add({4097}, INFINITY, Views::contiguous, kFloatTypes);
  add({4097}, 0.1, Views::contiguous, kFloatTypes);                         // rounded once to each type
  add({4097}, 0, Views::contiguous, {DType::i64}, (int64_t{1} << 62) + 1);  // exact past 2^53
  add({4097}, 0, Views::contiguous, {DType::i64, DType::i32}, -123456);
  return out;
}

void fill_reference(const FillDescriptor& d, RefIO& io) { reference::fill(d, io); }

std::vector<DescriptorError<FillDescriptor>> fill_errors() {
  return {
      {"NaN into i32",
       [](FillDescriptor& d) {
         d.dtype = DType::i32;
         d.value = NAN;
         d.integer_value.reset();
       },
       StatusCode::invalid_problem, "descriptor.value"},
      {"300 into i8",
       [](FillDescriptor& d) {
         d.dtype = DType::i8;
         d.value = 300;
         d.integer_value.reset();
       },
       StatusCode::invalid_problem, "descriptor.value"},
      {"1e6 into f16",
       [](FillDescriptor& d) {
         d.dtype = DType::f16;
         d.value = 1e6;
         d.integer_value.reset();
       },
       StatusCode::invalid_problem, "descriptor.value"},
      {"integer 256 into u8",
       [](FillDescriptor& d) {
         d.dtype = DType::u8;
         d.integer_value = 256;
       },
       StatusCode::invalid_problem, "descriptor.integer_value"},
      {"negative size",
       [](FillDescriptor& d) {
         d.shape = {4, -3};
       },
       StatusCode::invalid_problem, "descriptor.shape[1]"},
  };
}

FillDescriptor fill_half(DType dtype, const Shape& shape) {
  FillDescriptor d;
  d.dtype = dtype;
  d.shape = shape;
  d.value = 0.5;
  return d;
}

std::vector<BenchSample<FillDescriptor>> fill_bench() {
  return {{"fill", "x.fill_(0.5)", {DType::f32, DType::bf16}, standard_shapes, fill_half}};
}

}  // namespace

std::vector<std::unique_ptr<OpRow>> copy_rows() {
  std::vector<std::unique_ptr<OpRow>> rows;
  rows.push_back(make_row<CastPlan>({cast_samples, cast_reference, exact, {}, cast_errors(), cast_bench()}));
  rows.push_back(make_row<FillPlan>({fill_samples, fill_reference, exact, {}, fill_errors(), fill_bench()}));
  return rows;
}

}  // namespace baracuda::harness

// The elementwise families on integer dtypes and bool: the edge values the op table's random samples
// cannot reach (wrapping at each width, division by 0 and of the most negative value by -1, shifts
// past the width, bool's logical add and mul), true division's f32 out, the scalars an integer dtype
// rejects, and the dtypes each kind refuses, naming the field. Every case on every backend present.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/backend.hpp"

namespace baracuda {
namespace {

using harness::Tensor;
using testing::contiguous;
using testing::unwrap;

using V = std::vector<double>;

class IntegerElementwiseTest : public testing::BackendDTypeTest {
 protected:
  Tensor tensor(DType dtype, const std::vector<double>& values) {
    Tensor t =
        unwrap(harness::random_tensor(backend(), dtype, contiguous({static_cast<int64_t>(values.size())}), rng_, 0, 2));
    for (size_t i = 0; i < values.size(); ++i) t.host[i] = values[i];
    EXPECT_TRUE(t.upload().is_ok());
    return t;
  }
  Tensor output(DType dtype, int64_t n) {
    Tensor t = unwrap(harness::random_tensor(backend(), dtype, contiguous({n}), rng_, 0, 2));
    EXPECT_TRUE(harness::poison(t).is_ok());
    return t;
  }
  static std::vector<double> values(const Tensor& t) {
    std::vector<double> v;
    for (int64_t i = 0, numel = t.shape.numel(); i < numel; ++i) v.push_back(t.at(i));
    return v;
  }
  // out = kind(a, b) elementwise, a and b of `dtype`.
  std::vector<double> binary(BinaryKind kind, DType dtype, const std::vector<double>& a, const std::vector<double>& b,
                             double alpha = 1) {
    BinaryDescriptor d;
    d.kind = kind;
    d.dtype = dtype;
    d.a_shape = d.b_shape = {static_cast<int64_t>(a.size())};
    d.alpha = alpha;
    return binary(d, a, b);
  }
  // out for a descriptor of 1-D operands (a scalar operand's values ignored), with the workspace the
  // plan asks for.
  std::vector<double> binary(const BinaryDescriptor& d, const std::vector<double>& a, const std::vector<double>& b) {
    const BinaryPlan plan = unwrap(BinaryPlan::select(stream(), d));
    Tensor ta = tensor(d.dtype, d.a_scalar ? V{0} : a), tb = tensor(d.b_dtype.value_or(d.dtype), d.b_scalar ? V{0} : b);
    Tensor out = output(binary_output_dtype(d), binary_output_shape(d).value_or(Shape{}).numel());
    harness::Buffer ws = unwrap(harness::Buffer::allocate(backend(), plan.workspace_size()));
    const Status s =
        plan.run(stream(), {ws.data(), ws.size()},
                 {d.a_scalar ? AnyTensorRef{} : ta.ref(), d.b_scalar ? AnyTensorRef{} : tb.ref(), out.mut()});
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_TRUE(out.download().is_ok());
    return values(out);
  }
  std::vector<double> unary(UnaryKind kind, DType dtype, const std::vector<double>& x) {
    UnaryDescriptor d;
    d.kind = kind;
    d.dtype = dtype;
    d.shape = {static_cast<int64_t>(x.size())};
    Tensor tx = tensor(dtype, x);
    Tensor out = output(unary_kind_is_predicate(kind) ? DType::boolean : dtype, d.shape.dims[0]);
    const Status s = unwrap(UnaryPlan::select(stream(), d)).run(stream(), {}, {tx.ref(), out.mut()});
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_TRUE(out.download().is_ok());
    return values(out);
  }
};

constexpr double kI32Min = -2147483648.0, kI32Max = 2147483647.0;

TEST_P(IntegerElementwiseTest, ArithmeticWrapsAtEveryWidth) {
  EXPECT_EQ(binary(BinaryKind::add, DType::i32, {kI32Max, kI32Min, 5}, {1, -1, -7}), (V{kI32Min, kI32Max, -2}));
  EXPECT_EQ(binary(BinaryKind::mul, DType::i32, {65536, -65536, 46341}, {65536, 32768, 46341}),
            (V{0, kI32Min, -2147479015}));
  EXPECT_EQ(binary(BinaryKind::sub, DType::u8, {5, 0, 255}, {10, 1, 255}), (V{251, 255, 0}));
  EXPECT_EQ(binary(BinaryKind::mul, DType::i8, {100, -128, 16}, {100, -1, 8}), (V{16, -128, -128}));
  EXPECT_EQ(binary(BinaryKind::add, DType::i8, {100, -100}, {10, 10}, -20), (V{-100, -44}));
  EXPECT_EQ(unary(UnaryKind::abs, DType::i8, {-128, -5, 7}), (V{-128, 5, 7}));
  EXPECT_EQ(unary(UnaryKind::neg, DType::u8, {5, 0, 255}), (V{251, 0, 1}));
  EXPECT_EQ(unary(UnaryKind::neg, DType::i32, {kI32Min, 3}), (V{kI32Min, -3}));
  EXPECT_EQ(unary(UnaryKind::square, DType::i32, {46341, -3}), (V{-2147479015, 9}));
  EXPECT_EQ(unary(UnaryKind::sign, DType::i64, {-7, 0, 9}), (V{-1, 0, 1}));
  EXPECT_EQ(binary(BinaryKind::maximum, DType::i64, {-7, 4e15}, {3, -4e15}), (V{3, 4e15}));
}

// a + b with b [N, 1] and b [D] for 1-, 4- and 8-byte integers (on the GPU the rows kernels, which
// repeat a stride-0 operand's element through whole words), rows on either side of the row lanes'
// bound (125 or 513 vectors of u8).
TEST_P(IntegerElementwiseTest, BroadcastRowsOfEveryWidth) {
  const int64_t n = 37;
  for (DType dtype : {DType::u8, DType::i8, DType::i32, DType::i64}) {
    for (int64_t d : {2000, 8208}) {
      for (bool column : {true, false}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " d " + std::to_string(d) + (column ? " b [N, 1]" : " b [D]"));
        BinaryDescriptor desc;
        desc.kind = BinaryKind::add;
        desc.dtype = dtype;
        desc.a_shape = {n, d};
        desc.b_shape = column ? Shape{n, 1} : Shape{d};
        Tensor a = unwrap(harness::random_tensor(backend(), dtype, contiguous(desc.a_shape), rng_, 0, 60));
        Tensor b = unwrap(harness::random_tensor(backend(), dtype, contiguous(desc.b_shape), rng_, 0, 60));
        Tensor out = unwrap(harness::random_tensor(backend(), dtype, contiguous(desc.a_shape), rng_, 0, 2));
        ASSERT_TRUE(harness::poison(out).is_ok());
        const BinaryPlan plan = unwrap(BinaryPlan::select(stream(), desc));
        const Status st = plan.run(stream(), {}, {a.ref(), b.ref(), out.mut()});
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        ASSERT_TRUE(out.download().is_ok());
        for (int64_t i = 0; i < n * d; ++i) ASSERT_EQ(out.at(i), a.at(i) + b.at(column ? i / d : i % d)) << i;
      }
    }
  }
}

// Division by 0 gives 0; the most negative value by -1 wraps to itself (its remainder 0); floor and
// trunc and the remainders' signs; true division gives f32.
TEST_P(IntegerElementwiseTest, QuotientsAndRemainders) {
  const V a = {7, -7, 7, -7, 5, kI32Min, kI32Min}, b = {2, 2, -2, -2, 0, -1, 1};
  EXPECT_EQ(binary(BinaryKind::div_floor, DType::i32, a, b), (V{3, -4, -4, 3, 0, kI32Min, kI32Min}));
  EXPECT_EQ(binary(BinaryKind::div_trunc, DType::i32, a, b), (V{3, -3, -3, 3, 0, kI32Min, kI32Min}));
  EXPECT_EQ(binary(BinaryKind::remainder, DType::i32, a, b), (V{1, 1, -1, -1, 0, 0, 0}));
  EXPECT_EQ(binary(BinaryKind::fmod, DType::i32, a, b), (V{1, -1, 1, -1, 0, 0, 0}));
  EXPECT_EQ(binary(BinaryKind::div_trunc, DType::i8, {-128, -128, 100}, {-1, 0, 7}), (V{-128, 0, 14}));
  EXPECT_EQ(binary(BinaryKind::div_floor, DType::u8, {200, 7}, {7, 0}), (V{28, 0}));
  BinaryDescriptor d;
  d.kind = BinaryKind::div;
  d.dtype = DType::i64;
  EXPECT_EQ(binary_output_dtype(d), DType::f32);
  const V q = binary(BinaryKind::div, DType::i64, {7, -7, 1, 0}, {2, 4, 0, 0});
  EXPECT_EQ(q[0], 3.5);
  EXPECT_EQ(q[1], -1.75);
  EXPECT_TRUE(std::isinf(q[2]) && q[2] > 0);
  EXPECT_TRUE(std::isnan(q[3]));
}

// pow by squaring, wrapping at each width; a negative exponent truncates the real power (1 for 1, +-1
// for -1, else 0). fmax / fmin are maximum / minimum; relu clamps at 0; the roundings are the identity.
TEST_P(IntegerElementwiseTest, PowExtremesReluAndRoundings) {
  EXPECT_EQ(binary(BinaryKind::pow, DType::i32, {2, 3, -2, 0, 7, 1, -1, -1, 5, 0, 2, 2, 3},
                   {10, 3, 3, 0, -1, -5, -3, -4, 0, 5, 31, 32, 40}),
            (V{1024, 27, -8, 1, 0, 1, -1, 1, 1, 0, kI32Min, 0, 689956897}));
  EXPECT_EQ(binary(BinaryKind::pow, DType::i8, {2, -2, 3, 0}, {7, 7, 5, -2}), (V{-128, -128, -13, 0}));
  EXPECT_EQ(binary(BinaryKind::pow, DType::u8, {2, 3, 255}, {8, 5, 2}), (V{0, 243, 1}));
  EXPECT_EQ(binary(BinaryKind::pow, DType::i64, {2, 10, -3}, {62, 15, 3}), (V{4611686018427387904.0, 1e15, -27}));
  EXPECT_EQ(binary(BinaryKind::fmax, DType::i32, {-7, 5, 3}, {3, -5, 3}), (V{3, 5, 3}));
  EXPECT_EQ(binary(BinaryKind::fmin, DType::i64, {-4e15, 5, 3}, {3, -5, 3}), (V{-4e15, -5, 3}));
  EXPECT_EQ(binary(BinaryKind::fmax, DType::boolean, {0, 0, 1}, {0, 1, 0}), (V{0, 1, 1}));
  EXPECT_EQ(binary(BinaryKind::fmin, DType::u8, {200, 7}, {255, 0}), (V{200, 0}));
  EXPECT_EQ(unary(UnaryKind::relu, DType::i8, {-128, 0, 127, -1}), (V{0, 0, 127, 0}));
  EXPECT_EQ(unary(UnaryKind::relu, DType::u8, {0, 255}), (V{0, 255}));
  EXPECT_EQ(unary(UnaryKind::relu, DType::i64, {-4e15, 4e15}), (V{0, 4e15}));
  for (UnaryKind kind : {UnaryKind::floor, UnaryKind::ceil, UnaryKind::round, UnaryKind::trunc}) {
    SCOPED_TRACE(std::string(unary_kind_name(kind)));
    EXPECT_EQ(unary(kind, DType::i64, {-4e15, 3, 0, 4e15 + 1}), (V{-4e15, 3, 0, 4e15 + 1}));
    EXPECT_EQ(unary(kind, DType::i8, {-128, -3, 127}), (V{-128, -3, 127}));
  }
}

// A scalar of a higher category than the tensor (scalar_dtype, as PyTorch types a Python number):
// an integer tensor with a float scalar computes in f32 (the tensor cast in the workspace first), a
// bool tensor with an integer scalar in i64; a scalar of the same or a lower category changes nothing.
TEST_P(IntegerElementwiseTest, ScalarsOfAHigherCategoryPromote) {
  BinaryDescriptor d;
  d.kind = BinaryKind::add;
  d.dtype = DType::i32;
  d.a_shape = {3};
  d.b_scalar = 2.5;
  d.scalar_dtype = DType::f64;
  EXPECT_EQ(binary_operand_dtype(d), DType::f32);
  EXPECT_EQ(binary_output_dtype(d), DType::f32);
  const BinaryPlan plan = unwrap(BinaryPlan::select(stream(), d));
  EXPECT_GT(plan.workspace_size(), 0u);
  EXPECT_EQ(plan.arg_specs()[2].dtype, DType::f32);
  Tensor a = tensor(DType::i32, {1, 3, 7}), out = output(DType::f32, 3);
  EXPECT_TRUE(testing::is_error(plan.run(stream(), {}, {a.ref(), {}, out.mut()}), StatusCode::workspace_too_small,
                                "BinaryPlan", "workspace.size"));
  EXPECT_EQ(binary(d, {1, -3, 7}, {}), (V{3.5, -0.5, 9.5}));
  d.kind = BinaryKind::lt;
  EXPECT_EQ(binary(d, {1, -3, 7}, {}), (V{1, 1, 0}));
  d.kind = BinaryKind::div;
  d.dtype = DType::i8;
  d.b_scalar.reset();
  d.a_scalar = 10;
  d.b_shape = {2};
  d.scalar_dtype = DType::f32;
  EXPECT_EQ(binary(d, {}, {4, -5}), (V{2.5, -2}));
  d.kind = BinaryKind::mul;
  d.dtype = DType::boolean;
  EXPECT_EQ(binary(d, {}, {1, 0}), (V{10, 0}));
  EXPECT_EQ(binary_output_dtype(d), DType::f32);
  d.scalar_dtype = DType::i64;
  d.kind = BinaryKind::add;
  d.a_scalar = 3;
  EXPECT_EQ(binary_output_dtype(d), DType::i64);
  EXPECT_EQ(binary(d, {}, {0, 1}), (V{3, 4}));
  // The same category (or a lower one): the tensor's dtype, no workspace.
  d.a_scalar = 1;
  for (const auto& [tensor_dtype, scalar_dtype] : std::vector<std::pair<DType, DType>>{{DType::i8, DType::i64},
                                                                                       {DType::f16, DType::f64},
                                                                                       {DType::bf16, DType::i32},
                                                                                       {DType::i32, DType::boolean}}) {
    SCOPED_TRACE(std::string(dtype_name(tensor_dtype)) + " with " + std::string(dtype_name(scalar_dtype)));
    d.dtype = tensor_dtype;
    d.scalar_dtype = scalar_dtype;
    EXPECT_EQ(binary_output_dtype(d), tensor_dtype);
    EXPECT_EQ(unwrap(BinaryPlan::select(stream(), d)).workspace_size(), 0u);
  }
  d.dtype = DType::i8;
  d.scalar_dtype = DType::i64;
  d.a_scalar = 300;  // the scalar must still fit the dtype it computes in
  EXPECT_TRUE(testing::is_error(BinaryPlan::select(stream(), d).status(), StatusCode::invalid_problem, "BinaryPlan",
                                "descriptor.a_scalar"));
  d.a_scalar = 2;
  d.kind = BinaryKind::bitwise_and;  // computes in f32 with a float scalar: bitwise_and does not take it
  d.scalar_dtype = DType::f32;
  EXPECT_TRUE(testing::is_error(BinaryPlan::select(stream(), d).status(), StatusCode::unsupported, "BinaryPlan",
                                "descriptor.scalar_dtype"));
  d.kind = BinaryKind::add;
  d.scalar_dtype = static_cast<DType>(99);
  EXPECT_TRUE(testing::is_error(BinaryPlan::select(stream(), d).status(), StatusCode::invalid_problem, "BinaryPlan",
                                "descriptor.scalar_dtype"));
  d.scalar_dtype = DType::f32;
  EXPECT_TRUE(testing::is_error(BinaryBackwardPlan::select(stream(), d).status(), StatusCode::unsupported,
                                "BinaryBackwardPlan", "descriptor.dtype"));
  // An integer or bool scalar_dtype: the scalar must be one.
  d.dtype = DType::f32;
  for (const auto& [scalar_dtype, value] :
       std::vector<std::pair<DType, double>>{{DType::i64, 2.5}, {DType::boolean, 3}, {DType::u8, -1}}) {
    d.scalar_dtype = scalar_dtype;
    d.a_scalar = value;
    EXPECT_TRUE(testing::is_error(BinaryPlan::select(stream(), d).status(), StatusCode::invalid_problem, "BinaryPlan",
                                  "descriptor.a_scalar"))
        << dtype_name(scalar_dtype) << " " << value;
  }
  // b_dtype equal to dtype counts as unset: the scalar still promotes.
  d.dtype = DType::i32;
  d.b_dtype = DType::i32;
  d.scalar_dtype = DType::f64;
  d.a_scalar = 0.5;
  EXPECT_EQ(binary_output_dtype(d), DType::f32);
  EXPECT_EQ(binary(d, {}, {4, -5}), (V{4.5, -4.5}));
  d.b_dtype.reset();
  d.a_scalar.reset();
  d.a_shape = {2};
  EXPECT_TRUE(testing::is_error(BinaryPlan::select(stream(), d).status(), StatusCode::invalid_problem, "BinaryPlan",
                                "descriptor.scalar_dtype"));
}

// A negative count or one at least the dtype's width: 0 to the left, the sign to the right.
TEST_P(IntegerElementwiseTest, ShiftsPastTheWidth) {
  EXPECT_EQ(binary(BinaryKind::shift_left, DType::i32, {1, 1, 1, 3, 1}, {31, 32, 40, 1, -1}), (V{kI32Min, 0, 0, 6, 0}));
  EXPECT_EQ(binary(BinaryKind::shift_right, DType::i32, {-8, -8, 8, 8, -8}, {1, 32, 32, 3, -2}), (V{-4, -1, 0, 1, -1}));
  EXPECT_EQ(binary(BinaryKind::shift_left, DType::i8, {1, 1, 3}, {7, 8, 6}), (V{-128, 0, -64}));
  EXPECT_EQ(binary(BinaryKind::shift_right, DType::i8, {-100, -100, 100}, {2, 9, 9}), (V{-25, -1, 0}));
  EXPECT_EQ(binary(BinaryKind::shift_right, DType::u8, {200, 200, 255}, {3, 8, 7}), (V{25, 0, 1}));
  EXPECT_EQ(binary(BinaryKind::shift_left, DType::i64, {1, 1, 1}, {62, 64, 70}), (V{4611686018427387904.0, 0, 0}));
  EXPECT_EQ(binary(BinaryKind::shift_right, DType::i64, {-1e15, 1e15}, {64, 64}), (V{-1, 0}));
  EXPECT_EQ(binary(BinaryKind::bitwise_xor, DType::u8, {0xF0, 0xFF}, {0x0F, 0x0F}), (V{0xFF, 0xF0}));
  EXPECT_EQ(binary(BinaryKind::bitwise_and, DType::i32, {-1, 12}, {kI32Min, 10}), (V{kI32Min, 8}));
  EXPECT_EQ(unary(UnaryKind::bitwise_not, DType::i32, {0, -1, 5}), (V{-1, 0, -6}));
  EXPECT_EQ(unary(UnaryKind::bitwise_not, DType::u8, {0, 255, 5}), (V{255, 0, 250}));
}

// bool: add is or, mul is and, bitwise_not is logical; the predicates on integers.
TEST_P(IntegerElementwiseTest, BoolAndPredicates) {
  const V a = {0, 0, 1, 1}, b = {0, 1, 0, 1};
  EXPECT_EQ(binary(BinaryKind::add, DType::boolean, a, b), (V{0, 1, 1, 1}));
  EXPECT_EQ(binary(BinaryKind::mul, DType::boolean, a, b), (V{0, 0, 0, 1}));
  EXPECT_EQ(binary(BinaryKind::bitwise_xor, DType::boolean, a, b), (V{0, 1, 1, 0}));
  EXPECT_EQ(binary(BinaryKind::maximum, DType::boolean, a, b), (V{0, 1, 1, 1}));
  EXPECT_EQ(binary(BinaryKind::lt, DType::boolean, a, b), (V{0, 1, 0, 0}));
  EXPECT_EQ(unary(UnaryKind::bitwise_not, DType::boolean, {0, 1}), (V{1, 0}));
  EXPECT_EQ(unary(UnaryKind::logical_not, DType::i64, {0, 5, -5}), (V{1, 0, 0}));
  EXPECT_EQ(binary(BinaryKind::lt, DType::u8, {0, 200, 5}, {255, 100, 5}), (V{1, 0, 0}));
  EXPECT_EQ(binary(BinaryKind::ge, DType::i64, {-4e15, 3}, {-4e15, 4}), (V{1, 0}));
  for (DType t : {DType::i8, DType::u8, DType::i32, DType::i64, DType::boolean}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    EXPECT_EQ(unary(UnaryKind::isnan, t, {0, 1}), (V{0, 0}));
    EXPECT_EQ(unary(UnaryKind::isinf, t, {0, 1}), (V{0, 0}));
    EXPECT_EQ(unary(UnaryKind::isfinite, t, {0, 1}), (V{1, 1}));
  }
  EXPECT_EQ(unary(UnaryKind::signbit, DType::i8, {-1, 0, 1}), (V{1, 0, 0}));
}

// where and clamp on integers: a bool condition picks i64 values exactly; clamp's crossing bounds.
TEST_P(IntegerElementwiseTest, WhereAndClamp) {
  TernaryDescriptor d;
  d.kind = TernaryKind::where;
  d.dtype = DType::i64;
  d.a_shape = d.b_shape = d.c_shape = {3};
  Tensor cond = tensor(DType::boolean, {1, 0, 1}), b = tensor(DType::i64, {4e15, 2, -3}),
         c = tensor(DType::i64, {7, -4e15, 9});
  Tensor out = output(DType::i64, 3);
  ASSERT_OK(unwrap(TernaryPlan::select(stream(), d)).run(stream(), {}, {cond.ref(), b.ref(), c.ref(), out.mut()}));
  ASSERT_OK(out.download());
  EXPECT_EQ(values(out), (V{4e15, -4e15, -3}));
  d.kind = TernaryKind::clamp;
  d.dtype = DType::i8;
  d.b_shape = d.c_shape = {};
  d.b_scalar = -5;
  d.c_scalar = 100;
  Tensor x = tensor(DType::i8, {-128, 0, 127}), out8 = output(DType::i8, 3);
  ASSERT_OK(unwrap(TernaryPlan::select(stream(), d)).run(stream(), {}, {x.ref(), {}, {}, out8.mut()}));
  ASSERT_OK(out8.download());
  EXPECT_EQ(values(out8), (V{-5, 0, 100}));
}

// Scalars and alpha of an integer dtype must be whole and in range; kinds refuse the dtypes they do
// not take, and no backward takes an integer dtype.
TEST_P(IntegerElementwiseTest, ErrorsNameTheField) {
  BinaryDescriptor d;
  d.kind = BinaryKind::add;
  d.dtype = DType::i8;
  d.a_shape = {4};
  d.b_scalar = 1000;
  EXPECT_TRUE(testing::is_error(BinaryPlan::select(stream(), d).status(), StatusCode::invalid_problem, "BinaryPlan",
                                "descriptor.b_scalar"));
  d.b_scalar = 2.5;
  EXPECT_TRUE(testing::is_error(BinaryPlan::select(stream(), d).status(), StatusCode::invalid_problem, "BinaryPlan",
                                "descriptor.b_scalar"));
  d.b_scalar = 3;
  d.alpha = 0.5;
  EXPECT_TRUE(testing::is_error(BinaryPlan::select(stream(), d).status(), StatusCode::invalid_problem, "BinaryPlan",
                                "descriptor.alpha"));
  d.alpha = 1;
  d.dtype = DType::u8;
  d.b_scalar = -1;
  EXPECT_TRUE(testing::is_error(BinaryPlan::select(stream(), d).status(), StatusCode::invalid_problem, "BinaryPlan",
                                "descriptor.b_scalar"));
  d.b_scalar = 255;
  EXPECT_TRUE(BinaryPlan::select(stream(), d).status().is_ok());
  d.dtype = DType::boolean;
  d.b_scalar = 2;
  EXPECT_TRUE(testing::is_error(BinaryPlan::select(stream(), d).status(), StatusCode::invalid_problem, "BinaryPlan",
                                "descriptor.b_scalar"));
  d.b_scalar = std::nullopt;
  d.b_shape = {4};
  for (const auto& [kind, dtype] : std::vector<std::pair<BinaryKind, DType>>{{BinaryKind::bitwise_and, DType::f32},
                                                                             {BinaryKind::shift_left, DType::boolean},
                                                                             {BinaryKind::sub, DType::boolean},
                                                                             {BinaryKind::atan2, DType::i32}}) {
    d.kind = kind;
    d.dtype = dtype;
    EXPECT_TRUE(testing::is_error(BinaryPlan::select(stream(), d).status(), StatusCode::unsupported, "BinaryPlan",
                                  "descriptor.dtype"))
        << binary_kind_name(kind) << " " << dtype_name(dtype);
  }
  d.kind = BinaryKind::add;
  d.dtype = DType::i32;
  EXPECT_TRUE(testing::is_error(BinaryBackwardPlan::select(stream(), d).status(), StatusCode::unsupported,
                                "BinaryBackwardPlan", "descriptor.dtype"));
  UnaryDescriptor u;
  u.shape = {4};
  u.kind = UnaryKind::exp;
  u.dtype = DType::i32;
  EXPECT_TRUE(testing::is_error(UnaryPlan::select(stream(), u).status(), StatusCode::unsupported, "UnaryPlan",
                                "descriptor.dtype"));
  u.kind = UnaryKind::bitwise_not;
  u.dtype = DType::f32;
  EXPECT_TRUE(testing::is_error(UnaryPlan::select(stream(), u).status(), StatusCode::unsupported, "UnaryPlan",
                                "descriptor.dtype"));
  u.kind = UnaryKind::abs;
  u.dtype = DType::i64;
  EXPECT_TRUE(testing::is_error(UnaryBackwardPlan::select(stream(), u).status(), StatusCode::unsupported,
                                "UnaryBackwardPlan", "descriptor.dtype"));
  TernaryDescriptor t;
  t.kind = TernaryKind::clamp;
  t.dtype = DType::boolean;
  t.a_shape = t.b_shape = t.c_shape = {4};
  EXPECT_TRUE(testing::is_error(TernaryPlan::select(stream(), t).status(), StatusCode::unsupported, "TernaryPlan",
                                "descriptor.dtype"));
  t.dtype = DType::i32;
  t.c_shape = {};
  t.c_scalar = 0.5;
  EXPECT_TRUE(testing::is_error(TernaryPlan::select(stream(), t).status(), StatusCode::invalid_problem, "TernaryPlan",
                                "descriptor.c_scalar"));
}

// (The dtype of a case is its own per check: one parameter per backend.)
INSTANTIATE_TEST_SUITE_P(IntegerElementwise, IntegerElementwiseTest,
                         ::testing::ValuesIn(testing::cases_of({DType::i32})), testing::case_name);

}  // namespace
}  // namespace baracuda

// The vocabulary: 16-bit float conversions, shapes and views, Status / Expected, SKU printing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "common/divisor.hpp"

namespace baracuda {
namespace {

// PyTorch's torch.promote_types over the dtypes here.
TEST(DTypes, PromoteAsPyTorch) {
  using D = DType;
  const struct {
    D a, b;
    std::optional<D> want;
  } cases[] = {{D::f32, D::f32, D::f32},   {D::boolean, D::u8, D::u8},   {D::i64, D::boolean, D::i64},
               {D::u8, D::i32, D::i32},    {D::i8, D::i64, D::i64},      {D::i32, D::f16, D::f16},
               {D::i64, D::bf16, D::bf16}, {D::bf16, D::f32, D::f32},    {D::f16, D::bf16, D::f32},
               {D::f32, D::f64, D::f64},   {D::boolean, D::f64, D::f64}, {D::u8, D::i8, std::nullopt}};
  for (const auto& c : cases) {
    EXPECT_EQ(promote_types(c.a, c.b), c.want) << dtype_name(c.a) << " with " << dtype_name(c.b);
    EXPECT_EQ(promote_types(c.b, c.a), c.want) << dtype_name(c.b) << " with " << dtype_name(c.a);
  }
}

// A scalar (a Python number) joins the promotion only when of a higher category than the tensor's.
TEST(DTypes, PromoteWithAScalarAsPyTorch) {
  using D = DType;
  const struct {
    D tensor, scalar, want;
  } cases[] = {{D::i32, D::f64, D::f32},     {D::u8, D::f32, D::f32},      {D::i64, D::f16, D::f32},
               {D::boolean, D::f64, D::f32}, {D::boolean, D::i32, D::i64}, {D::boolean, D::boolean, D::boolean},
               {D::i8, D::i64, D::i8},       {D::u8, D::boolean, D::u8},   {D::f16, D::f64, D::f16},
               {D::bf16, D::i64, D::bf16},   {D::f64, D::f32, D::f64},     {D::f32, D::boolean, D::f32}};
  for (const auto& c : cases)
    EXPECT_EQ(promote_with_scalar(c.tensor, c.scalar), c.want)
        << dtype_name(c.tensor) << " with a " << dtype_name(c.scalar) << " scalar";
}

TEST(Half, EveryBitPatternRoundTripsThroughFloat) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const half h = half::from_bits(static_cast<uint16_t>(bits));
    const float f = static_cast<float>(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(half(f))));
      continue;
    }
    EXPECT_EQ(half(f).bits, bits) << "bits " << bits;
  }
}

TEST(Half, RoundsToNearestEven) {
  EXPECT_EQ(half(1.0f).bits, 0x3c00);
  EXPECT_EQ(half(65504.0f).bits, 0x7bff);
  EXPECT_EQ(half(65520.0f).bits, 0x7c00);               // rounds up to infinity
  EXPECT_EQ(half(1.0f + 1.0f / 2048).bits, 0x3c00);     // halfway: to even (down)
  EXPECT_EQ(half(1.0f + 3.0f / 2048).bits, 0x3c02);     // halfway: to even (up)
  EXPECT_EQ(half(std::ldexp(1.0f, -24)).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(half(std::ldexp(1.0f, -25)).bits, 0x0000);  // halfway to zero: even
  EXPECT_EQ(half(-0.0f).bits, 0x8000);
  EXPECT_EQ(half(-2.5f).bits, 0xc100);
}

TEST(BFloat16, RoundsToNearestEvenAndKeepsNaN) {
  EXPECT_EQ(bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(bfloat16(1.0f + 1.0f / 256).bits, 0x3f80);  // halfway: to even
  EXPECT_EQ(bfloat16(1.0f + 3.0f / 256).bits, 0x3f82);
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(NAN))));
  for (uint32_t bits = 0; bits < 0x10000; bits += 7) {
    const float f = static_cast<float>(bfloat16::from_bits(static_cast<uint16_t>(bits)));
    if (!std::isnan(f)) {
      EXPECT_EQ(bfloat16(f).bits, bits);
    }
  }
}

// U32Divisor's quotient (the CUDA flat rows kernel's, which computes the same multiply-high) against
// `/`: divisors of every size class and either side of each power of two, dividends at the ends of
// the range, about each multiple, and random.
TEST(U32Divisor, QuotientsMatchDivision) {
  std::vector<uint32_t> divisors = {
      1,    2,    3,    5,    7,     8,     96,    125,         128,         255,         256,         257,
      1000, 4095, 4096, 4097, 65535, 65536, 65537, 0x7fffffffu, 0x80000000u, 0x80000001u, 0xfffffffeu, 0xffffffffu};
  uint64_t z = 0x9E3779B97F4A7C15ull;
  auto next = [&] { return z = z * 6364136223846793005ull + 1442695040888963407ull, static_cast<uint32_t>(z >> 32); };
  for (int i = 0; i < 200; ++i) divisors.push_back(next() >> (next() % 32) | 1);
  for (uint32_t d : divisors) {
    const detail::U32Divisor div(d);
    std::vector<uint32_t> ns = {0, 1, d - 1, d, d + 1, 0xffffffffu, 0xfffffffeu, 0x80000000u};
    for (uint64_t m : {uint64_t{2}, uint64_t{3}, uint64_t{1000}, uint64_t{0xffffffffu / d}})
      for (int64_t e : {-1, 0, 1})
        if (const int64_t n = static_cast<int64_t>(m * d) + e; n >= 0 && n <= 0xffffffffll) ns.push_back(uint32_t(n));
    for (int i = 0; i < 1000; ++i) ns.push_back(next());
    for (uint32_t n : ns) ASSERT_EQ(div.quotient(n), n / d) << n << " / " << d;
    EXPECT_EQ(div.divisor(), d);
  }
}

TEST(DTypes, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::i64), 8u);
  EXPECT_EQ(dtype_name(DType::f16), "f16");
  EXPECT_TRUE(is_index(DType::i32));
  EXPECT_FALSE(is_index(DType::f32));
  EXPECT_EQ(dtype_of_v<bfloat16>, DType::bf16);
}

TEST(Views, ContiguityExtentAndTypedVeneer) {
  float data[24] = {};
  TensorRef<float, 3> t(data, {2, 3, 4});
  AnyTensorRef any = t;
  EXPECT_EQ(any.dtype, DType::f32);
  EXPECT_EQ(any.rank(), 3);
  EXPECT_EQ(any.strides[0], 12);
  EXPECT_TRUE(any.is_contiguous());
  EXPECT_EQ(any.extent(), 24);
  TensorRef<float, 2> transposed(data, {4, 3}, {1, 4}, 12);
  EXPECT_FALSE(AnyTensorRef(transposed).is_contiguous());
  EXPECT_EQ(AnyTensorRef(transposed).extent(), 12);
  TensorRef<float, 2> broadcast(data, {5, 3}, {0, 1}, 3);
  EXPECT_EQ(AnyTensorRef(broadcast).extent(), 3);
  TensorRef<float, 2> empty(data, {0, 3});
  EXPECT_EQ(AnyTensorRef(empty).extent(), 0);
  TensorMut<float, 1> m(data, {24});
  AnyTensorRef from_mut = m;
  EXPECT_EQ(from_mut.data, data);
}

TEST(Shapes, RankNumelAndPrinting) {
  Shape s{2, 3, 5};
  EXPECT_EQ(s.rank, 3);
  EXPECT_EQ(s.numel(), 30);
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_EQ(s.to_string(), "[2, 3, 5]");
  EXPECT_EQ((Shape{1, 2, 3, 4, 5, 6, 7, 8, 9}).rank, 9);  // validation rejects it, not the constructor
}

TEST(Status, CodesMessagesAndExpected) {
  Status ok;
  EXPECT_TRUE(ok.is_ok());
  Status err = Status::error(StatusCode::buffer_too_small, "X: args.a.capacity: short", 10, 4);
  EXPECT_FALSE(err);
  EXPECT_EQ(err.needed(), 10);
  EXPECT_EQ(err.got(), 4);
  EXPECT_EQ(err.to_string(), "buffer_too_small: X: args.a.capacity: short");
  Expected<int> value = 3;
  EXPECT_TRUE(value.has_value());
  EXPECT_TRUE(value.status().is_ok());
  Expected<int> missing = err;
  EXPECT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), StatusCode::buffer_too_small);
}

TEST(Sku, PrintsEveryField) {
  KernelSku sku;
  sku.category = "elementwise";
  sku.op = "lerp";
  sku.element = DType::bf16;
  sku.layout = Layout::contiguous;
  sku.arch = 90;
  sku.backend = Backend::cuda;
  sku.variant = "vectorized";
  EXPECT_EQ(sku.to_string(), "elementwise.lerp.bf16.contiguous.cuda.sm90.vectorized");
  EXPECT_EQ(sku.precision.to_string(), "compute=f32 accumulate=f32 bit-stable deterministic");
}

TEST(Streams, DefaultFollowsTheDevices) {
  EXPECT_EQ(Stream::host().backend(), Backend::cpu);
  EXPECT_TRUE(Stream::host().synchronize());
  const Backend expected = cuda_device_count() > 0 ? Backend::cuda : Backend::cpu;
  EXPECT_EQ(Stream::default_stream().backend(), expected);
  if (cuda_device_count() == 0) {
    EXPECT_FALSE(cuda_unavailable_reason().empty());
  }
}

}  // namespace
}  // namespace baracuda

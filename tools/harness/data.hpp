#pragma once
// Test and profiler data: a tensor on either backend with a double-precision host mirror of its
// whole buffer, random fills, NaN poisoning, and dtype-aware tolerances.
#include <cstdint>
#include <random>
#include <vector>

#include "baracuda/core/tensor.hpp"
#include "harness/buffer.hpp"

namespace baracuda::harness {

// What a bool buffer holds where it is poisoned: a byte that is neither false nor true (decoded as
// its value, so that an unwritten bool output compares unequal to both).
inline constexpr unsigned char kBoolPoison = 0xA5;

// Rounds a double to what `dtype` stores, and back. Bools are bytes: 0 and 1 encode false and
// true, any other value kBoolPoison.
double quantize(DType dtype, double value);
void encode(DType dtype, const double* values, size_t count, void* out);
void decode(DType dtype, const void* in, size_t count, double* values);

// Relative tolerance for a result of `dtype` computed in f32 (f64 for f64) and rounded once; 0 for
// integers and bools (exact).
double tolerance(DType dtype);
// The relative error of one rounding to `dtype` (0 for integers).
double unit_roundoff(DType dtype);

// Offset (in elements, from the first element) of the element at `linear` in row-major order.
int64_t element_offset(const Shape& shape, const Strides& strides, int64_t linear);
// Every element's offset in row-major order (one odometer walk: the checks that visit every element
// would otherwise divide per element and dim).
std::vector<int64_t> element_offsets(const Shape& shape, const Strides& strides);

struct Tensor {
  DType dtype = DType::f32;
  Shape shape;
  Strides strides{};
  int64_t offset = 0;    // elements between the buffer's start and the view's first element
  int64_t capacity = 0;  // elements the view may reach, from its first element
  Buffer buffer;
  std::vector<double> host;  // mirror of the buffer: offset + capacity elements

  AnyTensorRef ref() const;
  AnyTensorMut mut();
  // Offset (from the view's first element) of the element at `linear` in row-major order.
  int64_t element_offset(int64_t linear) const { return harness::element_offset(shape, strides, linear); }
  double at(int64_t linear) const { return host[static_cast<size_t>(offset + element_offset(linear))]; }
  Status upload();    // host -> buffer
  Status download();  // buffer -> host
};

struct TensorSpec {
  Shape shape;
  Strides strides{};     // all zero: contiguous (a zero stride on a dim of size > 1 is kept only
  bool strided = false;  //   when `strided` is set, so broadcast views can be asked for)
  int64_t offset = 0;    // misalign the first element by this many elements
};

// A tensor whose whole buffer holds random values in [lo, hi), quantized to dtype (whole numbers for
// integers and bools).
Expected<Tensor> random_tensor(Backend backend, DType dtype, const TensorSpec& spec, std::mt19937_64& rng,
                               double lo = -1.0, double hi = 1.0);
// Sets every element of the buffer to NaN (outputs are poisoned before a run).
Status poison(Tensor& tensor);

// A read-only host view of a tensor for the references: elements through its strides, from a decoded
// mirror (a Tensor's) or from the raw bytes of its dtype (the profiler's buffers).
struct HostView {
  DType dtype = DType::f32;
  Shape shape;
  Strides strides{};
  const double* values = nullptr;        // the view's first element in a decoded mirror, or
  const unsigned char* bytes = nullptr;  // in raw bytes

  int64_t numel() const { return shape.numel(); }
  double at_offset(int64_t offset) const;
  double at(int64_t linear) const { return at_offset(element_offset(shape, strides, linear)); }
  double at_coords(const int64_t* coords) const;
  static HostView of(const Tensor& tensor);
  static HostView contiguous(DType dtype, const Shape& shape, const unsigned char* bytes);
};

}  // namespace baracuda::harness

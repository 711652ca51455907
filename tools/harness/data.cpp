#include "harness/data.hpp"

#include <cmath>
#include <limits>

namespace baracuda::harness {

double quantize(DType dtype, double value) {
  switch (dtype) {
    case DType::f16:
      return static_cast<float>(half(static_cast<float>(value)));
    case DType::bf16:
      return static_cast<float>(bfloat16(static_cast<float>(value)));
    case DType::f32:
      return static_cast<float>(value);
    case DType::i8:
      return static_cast<double>(static_cast<int8_t>(value));
    case DType::u8:
      return static_cast<double>(static_cast<uint8_t>(value));
    case DType::i32:
      return static_cast<double>(static_cast<int32_t>(value));
    case DType::i64:
      return static_cast<double>(static_cast<int64_t>(value));
    case DType::boolean:
      return value == 0 ? 0.0 : value == 1 ? 1.0 : kBoolPoison;
    default:
      return value;
  }
}

void encode(DType dtype, const double* values, size_t count, void* out) {
  for (size_t i = 0; i < count; ++i) {
    switch (dtype) {
      case DType::f16:
        static_cast<half*>(out)[i] = half(static_cast<float>(values[i]));
        break;
      case DType::bf16:
        static_cast<bfloat16*>(out)[i] = bfloat16(static_cast<float>(values[i]));
        break;
      case DType::f32:
        static_cast<float*>(out)[i] = static_cast<float>(values[i]);
        break;
      case DType::f64:
        static_cast<double*>(out)[i] = values[i];
        break;
      case DType::i8:
        static_cast<int8_t*>(out)[i] = static_cast<int8_t>(values[i]);
        break;
      case DType::u8:
        static_cast<uint8_t*>(out)[i] = static_cast<uint8_t>(values[i]);
        break;
      case DType::i32:
        static_cast<int32_t*>(out)[i] = static_cast<int32_t>(values[i]);
        break;
      case DType::i64:
        static_cast<int64_t*>(out)[i] = static_cast<int64_t>(values[i]);
        break;
      case DType::boolean:  // false, true, or a byte that is neither (an output's poison)
        static_cast<unsigned char*>(out)[i] = values[i] == 0 ? 0 : values[i] == 1 ? 1 : kBoolPoison;
        break;
      default:
        break;
    }
  }
}

void decode(DType dtype, const void* in, size_t count, double* values) {
  for (size_t i = 0; i < count; ++i) {
    switch (dtype) {
      case DType::f16:
        values[i] = static_cast<float>(static_cast<const half*>(in)[i]);
        break;
      case DType::bf16:
        values[i] = static_cast<float>(static_cast<const bfloat16*>(in)[i]);
        break;
      case DType::f32:
        values[i] = static_cast<const float*>(in)[i];
        break;
      case DType::f64:
        values[i] = static_cast<const double*>(in)[i];
        break;
      case DType::i8:
        values[i] = static_cast<const int8_t*>(in)[i];
        break;
      case DType::u8:
        values[i] = static_cast<const uint8_t*>(in)[i];
        break;
      case DType::i32:
        values[i] = static_cast<const int32_t*>(in)[i];
        break;
      case DType::i64:
        values[i] = static_cast<double>(static_cast<const int64_t*>(in)[i]);
        break;
      case DType::boolean:  // the byte: a bool output that is neither 0 nor 1 was not written
        values[i] = static_cast<const unsigned char*>(in)[i];
        break;
      default:
        values[i] = std::numeric_limits<double>::quiet_NaN();
        break;
    }
  }
}

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return 2e-3;  // 2^-10 unit roundoff, a few roundings
    case DType::bf16:
      return 1.6e-2;  // 2^-7
    case DType::f32:
      return 2e-6;
    case DType::f64:
      return 1e-12;
    default:
      return 0.0;  // integers and bools: exact
  }
}

double unit_roundoff(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return 0x1p-11;
    case DType::bf16:
      return 0x1p-8;
    case DType::f32:
      return 0x1p-24;
    case DType::f64:
      return 0x1p-53;
    default:
      return 0.0;
  }
}

AnyTensorRef Tensor::ref() const {
  const char* base = static_cast<const char*>(buffer.data()) + offset * static_cast<int64_t>(dtype_size(dtype));
  return {base, dtype, shape, strides, capacity};
}

AnyTensorMut Tensor::mut() {
  char* base = static_cast<char*>(buffer.data()) + offset * static_cast<int64_t>(dtype_size(dtype));
  return {base, dtype, shape, strides, capacity};
}

int64_t element_offset(const Shape& shape, const Strides& strides, int64_t linear) {
  int64_t off = 0;
  for (int d = shape.rank - 1; d >= 0; --d) {
    off += (linear % shape.dims[d]) * strides[d];
    linear /= shape.dims[d];
  }
  return off;
}

std::vector<int64_t> element_offsets(const Shape& shape, const Strides& strides) {
  const int64_t n = shape.numel();
  std::vector<int64_t> offsets(static_cast<size_t>(n));
  int64_t index[kMaxRank] = {}, off = 0;
  for (int64_t i = 0; i < n; ++i) {
    offsets[static_cast<size_t>(i)] = off;
    for (int d = shape.rank - 1; d >= 0; --d) {  // step the innermost dim, carrying outwards
      off += strides[d];
      if (++index[d] < shape.dims[d]) break;
      off -= index[d] * strides[d];
      index[d] = 0;
    }
  }
  return offsets;
}

Status Tensor::upload() {
  std::vector<unsigned char> bytes(host.size() * dtype_size(dtype));
  encode(dtype, host.data(), host.size(), bytes.data());
  return buffer.upload(bytes.data(), bytes.size());
}

Status Tensor::download() {
  std::vector<unsigned char> bytes(host.size() * dtype_size(dtype));
  if (Status s = buffer.download(bytes.data(), bytes.size()); !s) return s;
  decode(dtype, bytes.data(), host.size(), host.data());
  return Status::ok();
}

Expected<Tensor> random_tensor(Backend backend, DType dtype, const TensorSpec& spec, std::mt19937_64& rng, double lo,
                               double hi) {
  Tensor t;
  t.dtype = dtype;
  t.shape = spec.shape;
  t.strides = spec.strided ? spec.strides : contiguous_strides(spec.shape);
  t.offset = spec.offset;
  t.capacity = AnyTensorRef{nullptr, dtype, t.shape, t.strides, 0}.extent();
  const size_t elements = static_cast<size_t>(t.offset + t.capacity);
  Expected<Buffer> buffer = Buffer::allocate(backend, elements * dtype_size(dtype));
  if (!buffer) return buffer.status();
  t.buffer = std::move(*buffer);
  t.host.resize(elements);
  std::uniform_real_distribution<double> dist(lo, hi);
  const bool whole = !is_floating(dtype);  // integers and bools: whole numbers in [lo, hi)
  for (double& v : t.host) v = quantize(dtype, whole ? std::floor(dist(rng)) : dist(rng));
  if (Status s = t.upload(); !s) return s;
  return t;
}

Status poison(Tensor& tensor) {
  for (double& v : tensor.host) v = std::numeric_limits<double>::quiet_NaN();
  return tensor.upload();
}

double HostView::at_offset(int64_t offset) const {
  if (values) return values[offset];
  double v = 0;
  decode(dtype, bytes + offset * static_cast<int64_t>(dtype_size(dtype)), 1, &v);
  return v;
}

double HostView::at_coords(const int64_t* coords) const {
  int64_t off = 0;
  for (int d = 0; d < shape.rank; ++d) off += coords[d] * strides[d];
  return at_offset(off);
}

HostView HostView::of(const Tensor& tensor) {
  return {tensor.dtype, tensor.shape, tensor.strides, tensor.host.data() + tensor.offset, nullptr};
}

HostView HostView::contiguous(DType dtype, const Shape& shape, const unsigned char* bytes) {
  return {dtype, shape, contiguous_strides(shape), nullptr, bytes};
}

}  // namespace baracuda::harness

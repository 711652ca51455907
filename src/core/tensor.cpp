#include "baracuda/core/tensor.hpp"

namespace baracuda {

Shape::Shape(std::initializer_list<int64_t> sizes) {
  rank = static_cast<int>(sizes.size());
  int d = 0;
  for (int64_t s : sizes) {
    if (d < kMaxRank) dims[d] = s;
    ++d;
  }
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int d = 0; d < rank && d < kMaxRank; ++d) n *= dims[d];
  return n;
}

bool Shape::operator==(const Shape& other) const {
  if (rank != other.rank) return false;
  for (int d = 0; d < rank && d < kMaxRank; ++d)
    if (dims[d] != other.dims[d]) return false;
  return true;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int d = 0; d < rank && d < kMaxRank; ++d) {
    if (d) s += ", ";
    s += std::to_string(dims[d]);
  }
  return s + "]";
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides{};
  int64_t step = 1;
  for (int d = shape.rank - 1; d >= 0; --d) {
    strides[d] = step;
    step *= shape.dims[d];
  }
  return strides;
}

bool AnyTensorRef::is_contiguous() const {
  int64_t step = 1;
  for (int d = shape.rank - 1; d >= 0; --d) {
    if (shape.dims[d] == 1) continue;
    if (strides[d] != step) return false;
    step *= shape.dims[d];
  }
  return true;
}

int64_t AnyTensorRef::extent() const {
  int64_t last = 0;
  for (int d = 0; d < shape.rank; ++d) {
    if (shape.dims[d] == 0) return 0;
    last += (shape.dims[d] - 1) * strides[d];
  }
  return last + 1;
}

AnyTensorRef AnyTensorRef::contiguous(const void* data, DType dtype, Shape shape, int64_t capacity) {
  return {data, dtype, shape, contiguous_strides(shape), capacity >= 0 ? capacity : shape.numel()};
}

AnyTensorMut AnyTensorMut::contiguous(void* data, DType dtype, Shape shape, int64_t capacity) {
  return {data, dtype, shape, contiguous_strides(shape), capacity >= 0 ? capacity : shape.numel()};
}

}  // namespace baracuda

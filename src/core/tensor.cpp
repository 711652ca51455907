// Views' own arithmetic. These functions take whatever a caller wrote into a Shape or a view, so
// they never read past kMaxRank dims and never wrap: a product or extent that overflows saturates
// (validation then rejects it, naming the field).
#include "baracuda/core/tensor.hpp"

#include <algorithm>

#include "common/checked.hpp"

namespace baracuda {
namespace {
int dims_of(const Shape& shape) { return std::clamp(shape.rank, 0, kMaxRank); }
}  // namespace

Shape::Shape(std::initializer_list<int64_t> sizes) {
  rank = static_cast<int>(sizes.size());
  int d = 0;
  for (int64_t s : sizes) {
    if (d < kMaxRank) dims[d] = s;
    ++d;
  }
}

int64_t Shape::numel() const {
  detail::CheckedSize n = 1;
  for (int d = 0; d < dims_of(*this); ++d) {
    if (dims[d] == 0) return 0;
    n *= dims[d];
  }
  return n.saturated();
}

bool Shape::operator==(const Shape& other) const {
  if (rank != other.rank) return false;
  for (int d = 0; d < dims_of(*this); ++d)
    if (dims[d] != other.dims[d]) return false;
  return true;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int d = 0; d < dims_of(*this); ++d) {
    if (d) s += ", ";
    s += std::to_string(dims[d]);
  }
  if (rank > kMaxRank) s += ", ... (rank " + std::to_string(rank) + ")";
  return s + "]";
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides{};
  detail::CheckedSize step = 1;
  for (int d = dims_of(shape) - 1; d >= 0; --d) {
    strides[d] = step.saturated();
    step *= shape.dims[d];
  }
  return strides;
}

bool AnyTensorRef::is_contiguous() const {
  detail::CheckedSize step = 1;
  for (int d = dims_of(shape) - 1; d >= 0; --d) {
    if (shape.dims[d] == 1) continue;
    if (strides[d] != step.saturated()) return false;
    step *= shape.dims[d];
  }
  return true;
}

int64_t AnyTensorRef::extent() const {
  detail::CheckedSize last = 0;
  for (int d = 0; d < dims_of(shape); ++d) {
    if (shape.dims[d] == 0) return 0;
    last += detail::CheckedSize(shape.dims[d] - 1) * detail::CheckedSize(strides[d]);
  }
  return (last + 1).saturated();
}

AnyTensorRef AnyTensorRef::contiguous(const void* data, DType dtype, Shape shape, int64_t capacity) {
  return {data, dtype, shape, contiguous_strides(shape), capacity >= 0 ? capacity : shape.numel()};
}

AnyTensorMut AnyTensorMut::contiguous(void* data, DType dtype, Shape shape, int64_t capacity) {
  return {data, dtype, shape, contiguous_strides(shape), capacity >= 0 ? capacity : shape.numel()};
}

}  // namespace baracuda

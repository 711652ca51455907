#pragma once
// Tensor views. AnyTensorRef / AnyTensorMut are the runtime-typed views that kernels (and later a
// C ABI and language bindings) share; TensorRef<T, N> / TensorMut<T, N> are a typed veneer that
// converts to them. Strides are in elements, zero means broadcast, and `capacity` is the number of
// elements the buffer holds, so a view that reaches past it is an error rather than a wild read.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "baracuda/core/dtype.hpp"

namespace baracuda {

inline constexpr int kMaxRank = 8;
// The largest problems a plan accepts; past them select or can_implement returns an error naming
// the field. Every element count (the product of a shape's sizes, zero sizes counted as one) and
// every view's extent is below kMaxElements; every view's extent in bytes and every workspace is
// below kMaxBytes. So no offset or size the library computes can wrap.
inline constexpr int64_t kMaxElements = int64_t{1} << 62;
inline constexpr int64_t kMaxBytes = INT64_MAX;  // 2^63 - 1

// A shape of rank 0..kMaxRank. Rank 0 is a scalar (one element).
struct Shape {
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};

  Shape() = default;
  Shape(std::initializer_list<int64_t> sizes);  // more than kMaxRank sizes sets rank past kMaxRank
  int64_t operator[](int d) const { return dims[d]; }
  int64_t numel() const;  // product of dims; 1 for rank 0; INT64_MAX when the product overflows
  bool operator==(const Shape& other) const;
  std::string to_string() const;
};

using Strides = std::array<int64_t, kMaxRank>;
Strides contiguous_strides(const Shape& shape);  // saturated at INT64_MAX where they overflow

struct AnyTensorRef {
  const void* data = nullptr;
  DType dtype = DType::f32;
  Shape shape;
  Strides strides{};
  int64_t capacity = 0;  // elements in the buffer starting at data

  int rank() const { return shape.rank; }
  int64_t numel() const { return shape.numel(); }
  // Row-major with no gaps (dims of size 1 may have any stride).
  bool is_contiguous() const;
  // One past the furthest element the view reaches; 0 for an empty view; INT64_MAX when that
  // overflows or a stride is negative (so no capacity covers it).
  int64_t extent() const;
  static AnyTensorRef contiguous(const void* data, DType dtype, Shape shape, int64_t capacity = -1);
};

struct AnyTensorMut {
  void* data = nullptr;
  DType dtype = DType::f32;
  Shape shape;
  Strides strides{};
  int64_t capacity = 0;

  int rank() const { return shape.rank; }
  int64_t numel() const { return shape.numel(); }
  operator AnyTensorRef() const { return {data, dtype, shape, strides, capacity}; }  // NOLINT
  bool is_contiguous() const { return AnyTensorRef(*this).is_contiguous(); }
  int64_t extent() const { return AnyTensorRef(*this).extent(); }
  static AnyTensorMut contiguous(void* data, DType dtype, Shape shape, int64_t capacity = -1);
};

namespace detail {
template <int N>
Shape shape_of(const std::array<int64_t, N>& sizes) {
  Shape s;
  s.rank = N;
  for (int d = 0; d < N; ++d) s.dims[d] = sizes[d];
  return s;
}
template <int N>
Strides strides_of(const std::array<int64_t, N>& strides) {
  Strides s{};
  for (int d = 0; d < N; ++d) s[d] = strides[d];
  return s;
}
template <int N>
std::array<int64_t, N> row_major(const std::array<int64_t, N>& shape) {
  std::array<int64_t, N> s{};
  int64_t step = 1;
  for (int d = N - 1; d >= 0; --d) {
    s[d] = step;
    // Saturates rather than wrapping: an absurd shape then fails validation by its extent.
    if (__builtin_mul_overflow(step, shape[d], &step)) step = INT64_MAX;
  }
  return s;
}
}  // namespace detail

// Typed read-only view of rank N. Contiguous when strides are not given.
template <class T, int N>
struct TensorRef {
  static_assert(N >= 0 && N <= kMaxRank, "rank must be 0..8");
  const T* data = nullptr;
  std::array<int64_t, N> shape{};
  std::array<int64_t, N> strides{};
  int64_t capacity = 0;

  TensorRef() = default;
  TensorRef(const T* ptr, std::array<int64_t, N> sizes, int64_t capacity_elems = -1)
      : data(ptr),
        shape(sizes),
        strides(detail::row_major<N>(sizes)),
        capacity(capacity_elems >= 0 ? capacity_elems : detail::shape_of<N>(sizes).numel()) {}
  TensorRef(const T* ptr, std::array<int64_t, N> sizes, std::array<int64_t, N> elem_strides, int64_t capacity_elems)
      : data(ptr), shape(sizes), strides(elem_strides), capacity(capacity_elems) {}

  operator AnyTensorRef() const {  // NOLINT: the typed veneer converts implicitly
    return {data, dtype_of_v<T>, detail::shape_of<N>(shape), detail::strides_of<N>(strides), capacity};
  }
};

// Typed writable view of rank N.
template <class T, int N>
struct TensorMut {
  static_assert(N >= 0 && N <= kMaxRank, "rank must be 0..8");
  T* data = nullptr;
  std::array<int64_t, N> shape{};
  std::array<int64_t, N> strides{};
  int64_t capacity = 0;

  TensorMut() = default;
  TensorMut(T* ptr, std::array<int64_t, N> sizes, int64_t capacity_elems = -1)
      : data(ptr),
        shape(sizes),
        strides(detail::row_major<N>(sizes)),
        capacity(capacity_elems >= 0 ? capacity_elems : detail::shape_of<N>(sizes).numel()) {}
  TensorMut(T* ptr, std::array<int64_t, N> sizes, std::array<int64_t, N> elem_strides, int64_t capacity_elems)
      : data(ptr), shape(sizes), strides(elem_strides), capacity(capacity_elems) {}

  operator AnyTensorMut() const {  // NOLINT
    return {data, dtype_of_v<T>, detail::shape_of<N>(shape), detail::strides_of<N>(strides), capacity};
  }
  operator AnyTensorRef() const { return AnyTensorMut(*this); }  // NOLINT
};

}  // namespace baracuda

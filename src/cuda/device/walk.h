#pragma once
// The element walk shared by every kernel compiled at select (the host's detail::Walker<NT>,
// common/elementwise.hpp, field for field). Apart from the families' parameter structs
// (cuda/device/params.h) so that a change to those leaves the other families' cached kernels valid
// (a kernel's cache key holds the files it reads).
namespace baracuda::device {

inline constexpr int kMaxRank = 8;

// A linear index over `sizes` (row-major) to an element offset in each of NT tensors; the host's
// detail::Walker<NT> (common/elementwise.hpp), field for field.
template <int NT>
struct Walk {
  int rank;
  long long sizes[kMaxRank];
  long long strides[NT][kMaxRank];
};

}  // namespace baracuda::device

#pragma once
// A tensor for profiler cases (contiguous, or a transposed view of a contiguous buffer): `sets` buffers to rotate
// through, random contents (never zeros alone), and the host bytes of set 0 for verification.
#include <vector>

#include "baracuda/baracuda.hpp"
#include "harness/buffer.hpp"
#include "harness/data.hpp"

namespace baracuda::profiler {

// Host bytes of a tensor at one moment (e.g. a destination before an accumulating op).
struct HostSnapshot {
  DType dtype = DType::f32;
  std::vector<unsigned char> bytes;
  harness::HostView view(const Shape& shape) const { return harness::HostView::contiguous(dtype, shape, bytes.data()); }
};

// A plan's workspace on the stream's backend (an empty buffer when it needs none).
Expected<harness::Buffer> allocate_workspace(const Stream& stream, size_t bytes);

class CaseTensor {
 public:
  // Random values in [lo, hi), a different stream of them per set.
  Status allocate_random(const Stream& stream, DType dtype, Shape shape, int sets, uint64_t seed, double lo = -1.0,
                         double hi = 1.0);
  // Index values in [0, range): uniform, or log-uniform (skewed: small values far more frequent);
  // `sorted`: in nondecreasing order (a sorted plan's segment ids, offsets).
  Status allocate_indices(const Stream& stream, DType dtype, Shape shape, int sets, uint64_t seed, int64_t range,
                          bool skewed, bool sorted = false);
  // Poisoned with NaN, to be written by the op.
  Status allocate_output(const Stream& stream, DType dtype, Shape shape, int sets);
  Status download_set0();  // refresh the host copy of set 0 (for outputs)

  // The view of set `set`: contiguous, or after view_transposed() the transpose of a contiguous buffer.
  AnyTensorRef ref(int set) const { return {buffers_[set].data(), dtype_, shape_, strides_, numel()}; }
  AnyTensorMut mut(int set) { return {buffers_[set].data(), dtype_, shape_, strides_, numel()}; }
  // From now on, view the buffers as the transpose of a contiguous tensor with the last two dims of
  // shape() swapped (x.t() of a row-major [M, N]: shape [N, M], strides [1, N]); the values stay.
  void view_transposed();
  // [N, C, *] stored as [N, *, C] (PyTorch's channels_last memory format).
  void view_channels_last();
  void* data(int set) const { return buffers_[set].data(); }
  HostSnapshot snapshot() const { return {dtype_, host0_}; }
  harness::HostView host_view() const { return {dtype_, shape_, strides_, nullptr, host0_.data()}; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

 private:
  Status allocate(const Stream& stream, DType dtype, Shape shape, int sets);
  DType dtype_ = DType::f32;
  Shape shape_;
  Strides strides_{};
  std::vector<harness::Buffer> buffers_;
  std::vector<unsigned char> host0_;
};

}  // namespace baracuda::profiler

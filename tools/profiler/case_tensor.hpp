#pragma once
// A contiguous tensor for profiler cases: `sets` buffers to rotate through, random contents (never
// zeros alone), and the host bytes of set 0 for verification.
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

  AnyTensorRef ref(int set) const { return AnyTensorRef::contiguous(buffers_[set].data(), dtype_, shape_); }
  AnyTensorMut mut(int set) { return AnyTensorMut::contiguous(buffers_[set].data(), dtype_, shape_); }
  void* data(int set) const { return buffers_[set].data(); }
  HostSnapshot snapshot() const { return {dtype_, host0_}; }
  harness::HostView host_view() const { return harness::HostView::contiguous(dtype_, shape_, host0_.data()); }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

 private:
  Status allocate(const Stream& stream, DType dtype, Shape shape, int sets);
  DType dtype_ = DType::f32;
  Shape shape_;
  std::vector<harness::Buffer> buffers_;
  std::vector<unsigned char> host0_;
};

}  // namespace baracuda::profiler

#include "profiler/case_tensor.hpp"

#include <algorithm>
#include <cmath>

#include "harness/data.hpp"

namespace baracuda::profiler {
namespace {
// splitmix64: fast enough to fill gigabytes, well mixed.
double uniform01(uint64_t i, uint64_t seed) {
  uint64_t z = i * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}
}  // namespace

Status CaseTensor::allocate(const Stream& stream, DType dtype, Shape shape, int sets) {
  dtype_ = dtype;
  shape_ = shape;
  strides_ = contiguous_strides(shape);
  buffers_.clear();
  for (int s = 0; s < sets; ++s) {
    Expected<harness::Buffer> b = harness::Buffer::allocate(stream.backend(), bytes(), std::max(0, stream.device()));
    if (!b) return b.status();
    buffers_.push_back(std::move(*b));
  }
  host0_.assign(bytes(), 0);
  return Status::ok();
}

void CaseTensor::view_transposed() {
  const int r = shape_.rank;
  if (r < 2) return;
  Shape swapped = shape_;
  std::swap(swapped.dims[r - 1], swapped.dims[r - 2]);
  strides_ = contiguous_strides(swapped);
  std::swap(strides_[r - 1], strides_[r - 2]);
}

void CaseTensor::view_channels_last() {
  const int r = shape_.rank;
  if (r < 3) return;
  int64_t stride = 1;
  strides_[1] = stride;
  stride *= shape_.dims[1];
  for (int d = r - 1; d >= 2; --d) {
    strides_[d] = stride;
    stride *= shape_.dims[d];
  }
  strides_[0] = stride;
}

Status CaseTensor::allocate_random(const Stream& stream, DType dtype, Shape shape, int sets, uint64_t seed, double lo,
                                   double hi) {
  if (Status s = allocate(stream, dtype, shape, sets); !s) return s;
  std::vector<unsigned char> bytes_host(bytes());
  constexpr int64_t kChunk = 1 << 16;
  std::vector<double> values(kChunk);
  for (int s = 0; s < sets; ++s) {
    for (int64_t start = 0; start < numel(); start += kChunk) {
      const int64_t count = std::min(kChunk, numel() - start);
      for (int64_t i = 0; i < count; ++i) values[i] = lo + (hi - lo) * uniform01(start + i, seed * 131 + s);
      harness::encode(dtype, values.data(), count, bytes_host.data() + start * dtype_size(dtype));
    }
    if (Status st = buffers_[s].upload(bytes_host.data(), bytes_host.size()); !st) return st;
    if (s == 0) host0_ = bytes_host;
  }
  return Status::ok();
}

Status CaseTensor::allocate_indices(const Stream& stream, DType dtype, Shape shape, int sets, uint64_t seed,
                                    int64_t range, bool skewed, bool sorted) {
  if (Status s = allocate(stream, dtype, shape, sets); !s) return s;
  std::vector<double> values(static_cast<size_t>(numel()));
  std::vector<unsigned char> bytes_host(bytes());
  const double log_range = std::log(static_cast<double>(range) + 1.0);
  for (int s = 0; s < sets; ++s) {
    for (int64_t i = 0; i < numel(); ++i) {
      const double u = uniform01(i, seed * 131 + s);
      const double v = skewed ? std::floor(std::exp(u * log_range)) - 1.0 : std::floor(u * static_cast<double>(range));
      values[i] = std::min<double>(std::max(v, 0.0), static_cast<double>(range - 1));
    }
    if (sorted) std::sort(values.begin(), values.end());
    harness::encode(dtype, values.data(), values.size(), bytes_host.data());
    if (Status st = buffers_[s].upload(bytes_host.data(), bytes_host.size()); !st) return st;
    if (s == 0) host0_ = bytes_host;
  }
  return Status::ok();
}

Status CaseTensor::allocate_output(const Stream& stream, DType dtype, Shape shape, int sets) {
  if (Status s = allocate(stream, dtype, shape, sets); !s) return s;
  std::vector<double> nan(static_cast<size_t>(numel()), NAN);
  harness::encode(dtype, nan.data(), nan.size(), host0_.data());
  for (harness::Buffer& b : buffers_)
    if (Status s = b.upload(host0_.data(), host0_.size()); !s) return s;
  return Status::ok();
}

Status CaseTensor::download_set0() { return buffers_[0].download(host0_.data(), host0_.size()); }

Expected<harness::Buffer> allocate_workspace(const Stream& stream, size_t bytes) {
  return harness::Buffer::allocate(stream.backend(), bytes, std::max(0, stream.device()));
}

}  // namespace baracuda::profiler

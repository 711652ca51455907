#pragma once
// Memory on either backend, for tests and the profiler (the library itself never allocates).
#include <cstddef>
#include <cstdint>

#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"

namespace baracuda::harness {

class Buffer {
 public:
  Buffer() = default;
  static Expected<Buffer> allocate(Backend backend, size_t bytes, int device = 0);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  Backend backend() const { return backend_; }
  Status upload(const void* host, size_t bytes, size_t offset = 0);
  Status download(void* host, size_t bytes, size_t offset = 0) const;

 private:
  void release();
  void* data_ = nullptr;
  size_t size_ = 0;
  Backend backend_ = Backend::cpu;
  int device_ = 0;
};

// Device-to-device (or host) copy of `bytes` on the stream, for the copy-bandwidth reference.
Status copy_bytes(const Stream& stream, void* dst, const void* src, size_t bytes);

}  // namespace baracuda::harness

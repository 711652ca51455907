#include "harness/buffer.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#if BARACUDA_HAS_CUDA
#include <cuda_runtime.h>
#endif

namespace baracuda::harness {

#if BARACUDA_HAS_CUDA
namespace {
Status cuda_error(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return Status::error(StatusCode::backend_error,
                       std::string(what) + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}
}  // namespace
#endif

Expected<Buffer> Buffer::allocate(Backend backend, size_t bytes, int device) {
  Buffer b;
  b.backend_ = backend;
  b.device_ = device;
  b.size_ = bytes;
  const size_t padded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;  // aligned_alloc: a multiple of 256
  if (backend == Backend::cpu) {
    b.data_ = std::aligned_alloc(256, padded);
    if (!b.data_)
      return Status::error(StatusCode::backend_error, "host allocation of " + std::to_string(bytes) + " bytes failed");
    return b;
  }
#if BARACUDA_HAS_CUDA
  if (Status s = cuda_error(cudaSetDevice(device), "cudaSetDevice"); !s) return s;
  if (Status s = cuda_error(cudaMalloc(&b.data_, padded), "cudaMalloc"); !s) {
    b.data_ = nullptr;
    return s;
  }
  return b;
#else
  return Status::error(StatusCode::unsupported, "built without CUDA");
#endif
}

void Buffer::release() {
  if (!data_) return;
  if (backend_ == Backend::cpu) {
    std::free(data_);
  } else {
#if BARACUDA_HAS_CUDA
    cudaFree(data_);
#endif
  }
  data_ = nullptr;
}

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& other) noexcept { *this = std::move(other); }

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    backend_ = other.backend_;
    device_ = other.device_;
  }
  return *this;
}

Status Buffer::upload(const void* host, size_t bytes, size_t offset) {
  if (offset + bytes > size_) return Status::error(StatusCode::buffer_too_small, "upload past the buffer");
  if (bytes == 0) return Status::ok();  // (an empty vector's data() may be null: memcpy forbids it)
  if (backend_ == Backend::cpu) {
    std::memcpy(static_cast<char*>(data_) + offset, host, bytes);
    return Status::ok();
  }
#if BARACUDA_HAS_CUDA
  return cuda_error(cudaMemcpy(static_cast<char*>(data_) + offset, host, bytes, cudaMemcpyHostToDevice),
                    "cudaMemcpy H2D");
#else
  return Status::error(StatusCode::unsupported, "built without CUDA");
#endif
}

Status Buffer::download(void* host, size_t bytes, size_t offset) const {
  if (offset + bytes > size_) return Status::error(StatusCode::buffer_too_small, "download past the buffer");
  if (bytes == 0) return Status::ok();
  if (backend_ == Backend::cpu) {
    std::memcpy(host, static_cast<const char*>(data_) + offset, bytes);
    return Status::ok();
  }
#if BARACUDA_HAS_CUDA
  return cuda_error(cudaMemcpy(host, static_cast<const char*>(data_) + offset, bytes, cudaMemcpyDeviceToHost),
                    "cudaMemcpy D2H");
#else
  return Status::error(StatusCode::unsupported, "built without CUDA");
#endif
}

Status copy_bytes(const Stream& stream, void* dst, const void* src, size_t bytes) {
  if (stream.backend() == Backend::cpu) {
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
#if BARACUDA_HAS_CUDA
  return cuda_error(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream.cuda_stream()),
                    "cudaMemcpyAsync D2D");
#else
  return Status::error(StatusCode::unsupported, "built without CUDA");
#endif
}

}  // namespace baracuda::harness

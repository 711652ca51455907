#include "harness/buffer.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#if BARACUDA_HAS_CUDA
#include <cuda_runtime.h>
#endif

namespace baracuda::harness {
namespace {
size_t padded_size(size_t bytes) { return (std::max<size_t>(bytes, 1) + 255) / 256 * 256; }
}  // namespace

#if BARACUDA_HAS_CUDA
namespace {
Status cuda_error(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return Status::error(StatusCode::backend_error,
                       std::string(what) + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

// Device blocks kept for reuse by (device, padded size), so a test's thousands of samples do not
// each pay cudaMalloc and cudaFree: cudaFree waits for the whole device, and in the GPU suite, 16
// processes time-slice one GPU, so every such wait costs other processes' slices too. A block goes
// back to the pool at release: every stream the harness uses (the legacy default stream, or a
// blocking stream) orders the next owner's uploads and kernels after the last owner's work.
// BARACUDA_HARNESS_POOL=0 allocates and frees each buffer (for a sanitizer's view of each, or to
// measure the pool).
class DevicePool {
 public:
  static DevicePool& instance() {
    static DevicePool* pool = new DevicePool;  // never destroyed: the CUDA runtime may be gone at exit
    return *pool;
  }
  bool enabled() const { return enabled_; }
  void* take(int device, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find({device, bytes});
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= bytes;
    return p;
  }
  // Frees every kept block (a cudaMalloc that ran out of memory tries again after).
  void release_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [key, blocks] : free_)
      for (void* p : blocks) cudaFree(p);
    free_.clear();
    cached_ = 0;
  }
  // False when the block is not kept (too large, or the pool is full): the caller frees it.
  bool give(int device, size_t bytes, void* p) {
    if (bytes > kLargestKept) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_ + bytes > kMostCached) return false;
    free_[{device, bytes}].push_back(p);
    cached_ += bytes;
    return true;
  }

 private:
  static constexpr size_t kLargestKept = size_t{256} << 20;
  static constexpr size_t kMostCached = size_t{1} << 30;
  DevicePool() {
    const char* env = std::getenv("BARACUDA_HARNESS_POOL");
    enabled_ = !(env && std::strcmp(env, "0") == 0);
  }
  bool enabled_ = true;
  std::mutex mutex_;
  std::map<std::pair<int, size_t>, std::vector<void*>> free_;
  size_t cached_ = 0;
};
}  // namespace
#endif

Expected<Buffer> Buffer::allocate(Backend backend, size_t bytes, int device) {
  Buffer b;
  b.backend_ = backend;
  b.device_ = device;
  b.size_ = bytes;
  const size_t padded = padded_size(bytes);  // aligned_alloc: a multiple of 256
  if (backend == Backend::cpu) {
    b.data_ = std::aligned_alloc(256, padded);
    if (!b.data_)
      return Status::error(StatusCode::backend_error, "host allocation of " + std::to_string(bytes) + " bytes failed");
    return b;
  }
#if BARACUDA_HAS_CUDA
  if (Status s = cuda_error(cudaSetDevice(device), "cudaSetDevice"); !s) return s;
  DevicePool& pool = DevicePool::instance();
  if (pool.enabled() && (b.data_ = pool.take(device, padded))) return b;
  if (pool.enabled() && cudaMalloc(&b.data_, padded) == cudaSuccess) return b;
  if (pool.enabled()) {  // out of memory, perhaps for the blocks the pool keeps: free them, try again
    cudaGetLastError();
    pool.release_all();
  }
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
    DevicePool& pool = DevicePool::instance();
    if (!pool.enabled() || !pool.give(device_, padded_size(size_), data_)) cudaFree(data_);
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

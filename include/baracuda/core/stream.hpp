#pragma once
// Stream: where a plan runs. A host stream selects the CPU backend, a CUDA stream the CUDA one.
#include <cstddef>
#include <string_view>

struct CUstream_st;  // CUDA's opaque stream type; cudaStream_t is CUstream_st*

namespace baracuda {

enum class Backend : unsigned char { cpu, cuda };
std::string_view backend_name(Backend backend);

class Stream {
 public:
  // The host stream: CPU kernels, run synchronously on the calling thread (OpenMP inside).
  static Stream host() { return Stream(Backend::cpu, nullptr, -1); }
  // A CUDA stream on a device; nullptr is the device's legacy default stream.
  static Stream cuda(CUstream_st* stream = nullptr, int device = 0) { return Stream(Backend::cuda, stream, device); }
  // CUDA device 0's default stream where a GPU is present, else the host stream.
  static Stream default_stream();

  Backend backend() const { return backend_; }
  CUstream_st* cuda_stream() const { return cuda_stream_; }
  int device() const { return device_; }
  // Waits until the work queued on this stream is done (no-op for the host stream).
  bool synchronize() const;

 private:
  Stream(Backend b, CUstream_st* s, int d) : backend_(b), cuda_stream_(s), device_(d) {}
  Backend backend_;
  CUstream_st* cuda_stream_;
  int device_;
};

// Number of CUDA devices usable by this process: 0 when the library was built without CUDA, or
// when there is no driver or no GPU.
int cuda_device_count();
// Why there are no CUDA devices ("" when there are some): for test skips and the profiler.
std::string_view cuda_unavailable_reason();

// Scratch memory passed into run(); plans never allocate.
struct Workspace {
  void* data = nullptr;
  size_t size = 0;  // bytes
};

}  // namespace baracuda

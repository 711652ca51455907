#pragma once
// CUDA errors become Status values (never an abort).
#include <cuda_runtime.h>

#include <string>

#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"

namespace baracuda::detail::cuda {

inline Status cuda_status(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  // A failed call also leaves its error as the runtime's last one: clear it (unless sticky), so that
  // the next launch's check does not report it again as its own.
  (void)cudaGetLastError();
  return Status::error(StatusCode::backend_error,
                       std::string(what) + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

// The launch error of the kernel just queued, if any.
inline Status last_launch_status(const char* kernel) { return cuda_status(cudaGetLastError(), kernel); }

inline cudaStream_t native(const Stream& stream) { return stream.cuda_stream(); }

}  // namespace baracuda::detail::cuda

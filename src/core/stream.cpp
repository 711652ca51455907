#include "baracuda/core/stream.hpp"

#include "cuda/runtime.hpp"

namespace baracuda {

Stream Stream::default_stream() { return cuda_device_count() > 0 ? cuda(nullptr, 0) : host(); }

bool Stream::synchronize() const {
  return backend_ == Backend::cpu || detail::cuda_synchronize(cuda_stream_, device_).is_ok();
}

}  // namespace baracuda

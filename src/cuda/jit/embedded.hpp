#pragma once
// The device sources compiled at select (every file under src/cuda/device/), embedded in the
// library at build time by cmake/embed_sources.cmake: NVRTC reads them from here, never from disk.
#include <span>
#include <string_view>

namespace baracuda::detail::jit {

struct EmbeddedSource {
  std::string_view path;  // as device code includes it: "cuda/device/norm.cuh"
  std::string_view text;
};

std::span<const EmbeddedSource> embedded_sources();

}  // namespace baracuda::detail::jit

#pragma once
// The scan family's kinds (scan.hpp documents them): plain C++ with no include, which the kernels
// compiled at select (NVRTC) read as well as the host.
namespace baracuda {

enum class ScanKind : unsigned char { cumsum, cumprod, cummax, cummin, logcumsumexp };

}  // namespace baracuda

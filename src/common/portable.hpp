#pragma once
// The standard library the shared maths and elementwise kernels use, for both compilers that read
// them: the host's (and nvcc's) own headers, or under NVRTC (the kernels compiled at select, which
// see no host header) a shim of the few traits, limits and maths they need, and the 16-bit storage
// types baracuda::half / baracuda::bfloat16 with device conversions.
#if defined(__CUDACC_RTC__)
#include "common/nvrtc_std.hpp"
#else
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <tuple>
#include <type_traits>
#endif

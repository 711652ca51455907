#pragma once
// What every CPU kernel shares about going parallel.
#include <cstdint>

namespace baracuda::detail::cpu {

// Below this many elements an OpenMP parallel region costs more than it saves.
inline constexpr int64_t kParallelThreshold = 1 << 15;

}  // namespace baracuda::detail::cpu

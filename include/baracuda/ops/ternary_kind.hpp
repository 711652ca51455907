#pragma once
// The ternary family's kinds (ternary.hpp documents them): plain C++ with no include, which the kernels
// compiled at select (NVRTC) read as well as the host.
namespace baracuda {

enum class TernaryKind : unsigned char { where, clamp, addcdiv };
inline constexpr int kTernaryKindCount = static_cast<int>(TernaryKind::addcdiv) + 1;

}  // namespace baracuda

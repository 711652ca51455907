#pragma once
// The gated family's kinds (gated.hpp documents them): plain C++ with no include, which the kernels
// compiled at select (NVRTC) read as well as the host.
namespace baracuda {

enum class GatedKind : unsigned char { glu, swiglu, geglu, geglu_tanh, reglu };
inline constexpr int kGatedKindCount = static_cast<int>(GatedKind::reglu) + 1;

}  // namespace baracuda

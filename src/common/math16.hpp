#pragma once
// A Math's forward / backward, or for a 16-bit output where k16 (kUses16BitMath: the GPU's f16 and
// bf16 kernels) its forward16 / backward16 where it has one: the same to the accuracy a 16-bit result
// keeps and cheaper on the GPU (the host's loops take forward / backward). One hook for every family
// whose Maths have 16-bit forms (unary_math.hpp, binary_math.hpp, the gated functors), whatever the
// arity: forward_of<Math, k16>(x, params), forward_of<Math, k16>(a, b, alpha).
#include "common/hd.hpp"

namespace baracuda::detail {

template <class Math, bool k16, class... Args>
BARACUDA_HD auto forward_of(const Args&... args) {
#if defined(__CUDA_ARCH__)
  if constexpr (k16 && requires { Math::forward16(args...); })
    return Math::forward16(args...);
  else
#endif
    return Math::forward(args...);
}
template <class Math, bool k16, class... Args>
BARACUDA_HD auto backward_of(const Args&... args) {
#if defined(__CUDA_ARCH__)
  if constexpr (k16 && requires { Math::backward16(args...); })
    return Math::backward16(args...);
  else
#endif
    return Math::backward(args...);
}

}  // namespace baracuda::detail

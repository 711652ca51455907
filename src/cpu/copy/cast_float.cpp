// CPU casts from f16, bf16, f32 and f64.
#include "cpu/copy/cast.hpp"

namespace baracuda::detail::cpu {
template Status launch_cast<true>(const CastProblem&);
}  // namespace baracuda::detail::cpu

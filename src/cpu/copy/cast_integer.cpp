// CPU casts from i8, u8, i32, i64 and bool.
#include "cpu/copy/cast.hpp"

namespace baracuda::detail::cpu {
template Status launch_cast<false>(const CastProblem&);
}  // namespace baracuda::detail::cpu

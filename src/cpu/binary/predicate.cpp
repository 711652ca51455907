// CPU kernels of the binary predicates eq, ne, lt, le, gt, ge, logical_and, logical_or, logical_xor.
#include "cpu/binary/group.hpp"

namespace baracuda::detail::cpu {
template Status launch_group<kBinaryPredicate>(const LaunchContext&, const BinaryForwardProblem&);
template Status launch_group<kBinaryPredicate>(const LaunchContext&, const BinaryBackwardProblem&);
}  // namespace baracuda::detail::cpu

// The elementwise programs compiled at select time (cuda/elementwise_launch.hpp).
#include "cuda/elementwise_launch.hpp"

namespace baracuda::detail::cuda {

jit::Program elementwise_program(std::string_view maths, const std::string& in, const std::string& out,
                                 const std::string& op, const std::string& first) {
  jit::Program p;
  p.name = "elementwise<" + in + ", " + out + ", " + op + (first == in ? "" : ", " + first) + ">";
  p.source = "#include \"cuda/common/elementwise_kernels.cuh\"\n#include \"" + std::string(maths) + "\"\n";
  const std::string args = "<" + in + ", " + out + ", " + op + ", " + first + ">";
  // (ElementwiseKernel's order)
  for (const char* kernel : {"vectorized", "contiguous", "strided", "rows", "rows_vectorized", "flat_rows", "row_lanes"})
    p.kernels.push_back(std::string("baracuda::detail::cuda::elementwise_") + kernel + "_kernel" + args);
  // The shared headers' host functions (a Walker's, a divisor's) are compiled for the device as well.
  p.options = {"-default-device"};
  return p;
}

}  // namespace baracuda::detail::cuda

// The programs of the elementwise kernels compiled at select time (cuda/elementwise_launch.hpp).
#include "cuda/elementwise_launch.hpp"

#include <iterator>
#include <set>
#include <string>

namespace baracuda::detail::cuda {

jit::Program device_program(std::string name, std::string_view header, std::string_view maths) {
  jit::Program p;
  p.name = std::move(name);
  p.source = "#include \"" + std::string(header) + "\"\n#include \"" + std::string(maths) + "\"\n";
  // The shared headers' host functions (a Walker's, a divisor's) are compiled for the device as well.
  p.options = {"-default-device"};
  return p;
}

Status launch_kernel(const jit::Module& m, int index, dim3 grid, int threads, const Stream& stream, const char* what,
                     std::initializer_list<const void*> args, size_t shared_bytes) {
  void* params[12];
  if (args.size() > std::size(params))
    return Status::error(StatusCode::backend_error,
                         std::string(what) + ": more kernel arguments than the launcher holds");
  int count = 0;
  for (const void* a : args) params[count++] = const_cast<void*>(a);
  return cuda_status(cudaLaunchKernel(m.kernels[index], grid, dim3(threads), params, shared_bytes, native(stream)),
                     what);
}

std::vector<jit::Program> unique_programs(std::vector<jit::Program> programs) {
  std::set<std::string> seen;
  std::erase_if(programs, [&](const jit::Program& p) { return !seen.insert(p.name).second; });
  return programs;
}

jit::Program elementwise_program(std::string_view maths, const std::string& in, const std::string& out,
                                 const std::string& op, const std::string& first) {
  const std::string args = "<" + in + ", " + out + ", " + op + ", " + first + ">";
  jit::Program p = device_program("elementwise" + args, "cuda/common/elementwise_kernels.cuh", maths);
  // (ElementwiseKernel's order)
  for (const char* kernel :
       {"vectorized", "contiguous", "strided", "rows", "rows_vectorized", "flat_rows", "row_lanes"})
    p.kernels.push_back(std::string("baracuda::detail::cuda::elementwise_") + kernel + "_kernel" + args);
  return p;
}

jit::Program transposed_program(std::string_view maths, const std::string& in, const std::string& out,
                                const std::string& op, const std::string& first, int inputs) {
  const std::string args = in + ", " + out + ", " + op + ", " + first;
  jit::Program p =
      device_program("elementwise_transposed<" + args + ">", "cuda/common/elementwise_transposed.cuh", maths);
  for (int staged = 0; staged < inputs; ++staged)
    p.kernels.push_back("baracuda::detail::cuda::elementwise_transposed_kernel<" + args + ", " +
                        std::to_string(staged) + ">");
  return p;
}

jit::Program reduction_program(std::string_view maths, const std::string& t, const std::string& body,
                               const std::string& first) {
  const std::string args = t + ", " + body + ", " + first;
  const std::string reduction = "baracuda::detail::BroadcastReduction<" + args + ">";
  jit::Program p = device_program("broadcast_reduction<" + args + ">", "cuda/common/broadcast_reduction.cuh", maths);
  // (ReductionKernel's order)
  p.kernels = {"baracuda::detail::cuda::broadcast_reduction_items_kernel<" + reduction + ">",
               "baracuda::detail::cuda::broadcast_reduction_finalize_kernel<" + reduction + ">"};
  if (first == t) {
    p.kernels.push_back("baracuda::detail::cuda::broadcast_reduction_vectors_kernel<" + args + ", true>");
    p.kernels.push_back("baracuda::detail::cuda::broadcast_reduction_vectors_kernel<" + args + ", false>");
    p.kernels.push_back("baracuda::detail::cuda::broadcast_reduction_rows_kernel<" + args + ">");
  }
  return p;
}

}  // namespace baracuda::detail::cuda

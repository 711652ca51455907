#include "baracuda/core/plan.hpp"

namespace baracuda {

std::string_view backend_name(Backend backend) { return backend == Backend::cuda ? "cuda" : "cpu"; }

std::string_view layout_name(Layout layout) { return layout == Layout::contiguous ? "contiguous" : "strided"; }

std::string PrecisionGuarantee::to_string() const {
  std::string s = "compute=";
  s += dtype_name(compute);
  s += " accumulate=";
  s += dtype_name(accumulator);
  s += bit_stable ? " bit-stable" : " not-bit-stable";
  s += deterministic ? " deterministic" : " nondeterministic";
  if (tf32) s += " tf32-inputs";
  if (batch_invariant) s += " batch-invariant";
  return s;
}

std::string KernelSku::to_string() const {
  std::string s = category + "." + op + "." + std::string(dtype_name(element));
  if (index) s += "." + std::string(dtype_name(*index));
  s += "." + std::string(layout_name(layout)) + "." + std::string(backend_name(backend));
  if (arch) s += ".sm" + std::to_string(arch);
  s += "." + variant;
  return s;
}

}  // namespace baracuda

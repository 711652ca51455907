// libFuzzer entry point (built with -DBARACUDA_LIBFUZZER=ON and Clang): the same cases and
// invariants as baracuda-fuzz, on the CPU, with coverage guiding the bytes. A broken invariant
// aborts, so that libFuzzer saves the input (replay it with baracuda-fuzz FILE).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "fuzz_plans.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static baracuda::fuzz::FuzzStats stats;
  try {
    baracuda::fuzz::fuzz_one(std::span<const uint8_t>(data, size), baracuda::Backend::cpu, stats);
  } catch (const baracuda::fuzz::FuzzFailure& f) {
    std::fprintf(stderr, "FAILED: %s: %s\n", f.plan().c_str(), f.what());
    std::abort();
  }
  return 0;
}

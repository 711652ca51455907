#pragma once
// The CUDA kernels compiled when a plan is selected (NVRTC) and their disk cache (README, "Kernels
// compiled at select"): where the cache lives, and how to fill it ahead of time so that select never
// waits on the compiler (a deployment image, a test machine). Needs no GPU; a build without CUDA
// answers unsupported.
#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/core/status.hpp"

namespace baracuda {

struct PrecompileOptions {
  int arch = 0;                      // compute capability x 10 (90: sm_90); 0: device 0's, else 90
  int threads = 0;                   // 0: one a core
  std::vector<int64_t> row_lengths;  // the norms' row lengths; empty: the common models' hidden sizes
  std::vector<std::string> only;     // program name prefixes ("norm", "random"); empty: every program
  bool prune = false;                // then remove the cache's files no compile can read again
};

struct PrecompileReport {
  int arch = 0;
  int64_t programs = 0;       // compiled or found
  int64_t compiled = 0;       // by NVRTC in this call
  int64_t from_cache = 0;     // already on disk
  double seconds = 0;         // wall time
  double median_seconds = 0;  // a program's
  double p90_seconds = 0;
  std::string cache_directory;  // "" when the disk cache is off (BARACUDA_CACHE_DIR=off)
  int64_t pruned_files = 0;     // with options.prune: files of other sources or another NVRTC,
  int64_t pruned_bytes = 0;     // or not whole (each change of the device files leaves its own)
};

// Compiles every kernel the library compiles at select (for `options.only` and the row lengths) into
// the disk cache. An error names the first program that failed, with NVRTC's log.
Expected<PrecompileReport> precompile(const PrecompileOptions& options = {});

// The kernel cache directory now in force: BARACUDA_CACHE_DIR, else $XDG_CACHE_HOME/baracuda, else
// $HOME/.cache/baracuda; "" when off.
std::string kernel_cache_directory();

}  // namespace baracuda

// baracuda::precompile: the catalog's programs compiled into the disk cache on a pool of threads
// (baracuda-jit-warm and baracuda.precompile call it).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "baracuda/core/kernels.hpp"
#include "cuda/jit/jit.hpp"
#include "cuda/runtime.hpp"

namespace baracuda {

std::string kernel_cache_directory() { return detail::jit::cache_directory(); }

Expected<PrecompileReport> precompile(const PrecompileOptions& options) {
  namespace jit = detail::jit;
  int arch = options.arch;
  if (arch == 0) {
    const Expected<detail::CudaDeviceInfo> info = detail::cuda_device_info(0);
    arch = info ? info->arch : 90;
  }
  if (arch < 50 || arch > 1000)
    return Status::error(StatusCode::invalid_problem, "precompile: options.arch: " + std::to_string(arch) +
                                                          " is no compute capability x 10 (90: sm_90)");
  // The common models' hidden sizes; the norms' streamed kernels serve every other length.
  std::vector<int64_t> lengths = options.row_lengths;
  if (lengths.empty()) lengths = {128, 768, 1024, 2048, 4096, 5120, 8192};
  for (int64_t n : lengths)
    if (n < 1 || n > (int64_t{1} << 40))
      return Status::error(StatusCode::invalid_problem,
                           "precompile: options.row_lengths: " + std::to_string(n) + " is outside 1..2^40");
  std::vector<jit::Program> programs = jit::catalog(lengths);
  std::erase_if(programs, [&](const jit::Program& p) { return p.only_arch && p.only_arch != arch; });
  if (!options.only.empty())
    std::erase_if(programs, [&](const jit::Program& p) {
      return std::none_of(options.only.begin(), options.only.end(),
                          [&](const std::string& prefix) { return p.name.starts_with(prefix); });
    });
  if (programs.empty())
    return Status::error(StatusCode::invalid_problem, "precompile: options.only: no program's name starts with one");
  const int threads =
      std::clamp<int>(options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency()), 1,
                      static_cast<int>(programs.size()));
  const jit::CacheStats before = jit::cache_stats();
  std::vector<double> seconds(programs.size());
  std::atomic<size_t> next{0};
  std::mutex mutex;
  Status failure;
  const auto start = std::chrono::steady_clock::now();
  auto work = [&] {
    for (size_t i; (i = next++) < programs.size();) {
      const auto t0 = std::chrono::steady_clock::now();
      const Expected<jit::Compiled> c = jit::compile(programs[i], arch, "precompile");
      seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!c) {
        const std::lock_guard lock(mutex);
        if (failure.is_ok()) failure = c.status();  // the first failure
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  if (!failure.is_ok()) return failure;
  PrecompileReport r;
  r.arch = arch;
  r.programs = static_cast<int64_t>(programs.size());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const jit::CacheStats after = jit::cache_stats();
  r.compiled = after.compiled - before.compiled;
  r.from_cache = after.disk_hits - before.disk_hits;
  std::sort(seconds.begin(), seconds.end());
  r.median_seconds = seconds[seconds.size() / 2];
  r.p90_seconds = seconds[static_cast<size_t>(0.9 * static_cast<double>(seconds.size() - 1))];
  r.cache_directory = jit::cache_directory();
  if (options.prune) {
    const jit::PruneReport pruned = jit::prune_disk_cache();
    r.pruned_files = pruned.files;
    r.pruned_bytes = pruned.bytes;
  }
  return r;
}

}  // namespace baracuda

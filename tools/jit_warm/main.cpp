// baracuda-jit-warm: compiles every kernel the library compiles at select into the disk cache, with
// every core, so that select never waits on NVRTC (deployment images; the GPU machine before a test
// run). Needs no GPU: the arch is device 0's, or --arch.
//   baracuda-jit-warm [--arch 90] [--threads N] [--lengths 768,4096,...] [--only norm,random<,...]
// --only keeps the programs whose names start with one of the prefixes (the families a deployment
// uses).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "baracuda/core/stream.hpp"
#include "cuda/jit/jit.hpp"
#include "cuda/runtime.hpp"

using namespace baracuda::detail;

namespace {

int usage() {
  std::fprintf(stderr, "usage: baracuda-jit-warm [--arch SM] [--threads N] [--lengths N,N,...] [--only PREFIX,...]\n");
  return 2;
}

// The comma-separated items of `list`.
std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> items;
  for (size_t start = 0; start <= list.size();) {
    const size_t comma = std::min(list.find(',', start), list.size());
    items.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

bool parse_int(const char* s, long long lo, long long hi, long long& out) {
  char* end = nullptr;
  errno = 0;
  out = std::strtoll(s, &end, 10);
  return errno == 0 && end != s && *end == 0 && out >= lo && out <= hi;
}

}  // namespace

int main(int argc, char** argv) {
  long long arch = 0, threads = std::max(1u, std::thread::hardware_concurrency());
  // Row lengths of the common models' hidden sizes; the streamed kernels serve every other length.
  std::vector<int64_t> lengths = {128, 768, 1024, 2048, 4096, 5120, 8192};
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--arch") && has_value) {
      if (!parse_int(argv[++i], 50, 1000, arch)) return usage();
    } else if (!std::strcmp(argv[i], "--threads") && has_value) {
      if (!parse_int(argv[++i], 1, 1024, threads)) return usage();
    } else if (!std::strcmp(argv[i], "--lengths") && has_value) {
      lengths.clear();
      for (const std::string& item : split(argv[++i])) {
        long long n = 0;
        if (!parse_int(item.c_str(), 1, int64_t{1} << 40, n)) return usage();
        lengths.push_back(n);
      }
    } else if (!std::strcmp(argv[i], "--only") && has_value) {
      only = split(argv[++i]);
    } else {
      return usage();
    }
  }
  if (arch == 0) {
    const baracuda::Expected<CudaDeviceInfo> info = cuda_device_info(0);
    arch = info ? info->arch : 90;
  }
  std::vector<jit::Program> programs = jit::catalog(lengths);
  if (!only.empty())
    std::erase_if(programs, [&](const jit::Program& p) {
      return std::none_of(only.begin(), only.end(),
                          [&](const std::string& prefix) { return p.name.starts_with(prefix); });
    });
  if (programs.empty()) {
    std::fprintf(stderr, "baracuda-jit-warm: no program's name starts with a prefix of --only\n");
    return 2;
  }
  std::vector<double> seconds(programs.size());
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::string failures;
  const auto start = std::chrono::steady_clock::now();
  auto work = [&] {
    for (size_t i; (i = next++) < programs.size();) {
      const auto t0 = std::chrono::steady_clock::now();
      const baracuda::Expected<jit::Compiled> c =
          jit::compile(programs[i], static_cast<int>(arch), "baracuda-jit-warm");
      seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!c) {
        const std::lock_guard lock(mutex);
        failures += c.status().to_string() + "\n";
      }
    }
  };
  std::vector<std::thread> pool;
  for (long long t = 0; t < threads; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!failures.empty()) {
    std::fprintf(stderr, "%s", failures.c_str());
    return 1;
  }
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  const auto at = [&](double q) { return sorted.empty() ? 0.0 : sorted[static_cast<size_t>(q * (sorted.size() - 1))]; };
  const jit::CacheStats s = jit::cache_stats();
  std::printf(
      "sm_%lld: %zu programs in %.2f s on %lld threads (%lld compiled, %lld from the disk cache, %lld cache "
      "files rejected); per program median %.3f s, p90 %.3f s; cache: %s\n",
      arch, programs.size(), wall, threads, static_cast<long long>(s.compiled), static_cast<long long>(s.disk_hits),
      static_cast<long long>(s.disk_rejected), at(0.5), at(0.9),
      jit::cache_directory().empty() ? "off" : jit::cache_directory().c_str());
  return 0;
}

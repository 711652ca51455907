// baracuda-jit-warm: compiles every kernel the library compiles at select into the disk cache, with
// every core, so that select never waits on NVRTC (deployment images; the GPU machine before a test
// run): baracuda::precompile (baracuda/core/kernels.hpp) from the command line. Needs no GPU: the
// arch is device 0's, or --arch.
//   baracuda-jit-warm [--arch 90] [--threads N] [--lengths 768,4096,...] [--only norm,random<,...] [--prune]
// --only keeps the programs whose names start with one of the prefixes (the families a deployment
// uses); --prune then removes the files no compile can read again (other builds' device sources,
// another NVRTC: a library upgrade leaves its old files behind).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/core/kernels.hpp"

namespace {

int usage() {
  std::fprintf(
      stderr, "usage: baracuda-jit-warm [--arch SM] [--threads N] [--lengths N,N,...] [--only PREFIX,...] [--prune]\n");
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
  baracuda::PrecompileOptions options;
  long long value = 0;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--arch") && has_value) {
      if (!parse_int(argv[++i], 50, 1000, value)) return usage();
      options.arch = static_cast<int>(value);
    } else if (!std::strcmp(argv[i], "--threads") && has_value) {
      if (!parse_int(argv[++i], 1, 1024, value)) return usage();
      options.threads = static_cast<int>(value);
    } else if (!std::strcmp(argv[i], "--lengths") && has_value) {
      for (const std::string& item : split(argv[++i])) {
        if (!parse_int(item.c_str(), 1, int64_t{1} << 40, value)) return usage();
        options.row_lengths.push_back(value);
      }
    } else if (!std::strcmp(argv[i], "--only") && has_value) {
      options.only = split(argv[++i]);
    } else if (!std::strcmp(argv[i], "--prune")) {
      options.prune = true;
    } else {
      return usage();
    }
  }
  const baracuda::Expected<baracuda::PrecompileReport> r = baracuda::precompile(options);
  if (!r) {
    std::fprintf(stderr, "baracuda-jit-warm: %s\n", r.status().to_string().c_str());
    return r.status().code() == baracuda::StatusCode::invalid_problem ? 2 : 1;
  }
  std::printf(
      "sm_%d: %lld programs in %.2f s (%lld compiled, %lld from the disk cache); per program median %.3f s, p90 "
      "%.3f s; cache: %s\n",
      r->arch, static_cast<long long>(r->programs), r->seconds, static_cast<long long>(r->compiled),
      static_cast<long long>(r->from_cache), r->median_seconds, r->p90_seconds,
      r->cache_directory.empty() ? "off" : r->cache_directory.c_str());
  if (options.prune)
    std::printf("pruned %lld files (%.1f MB) no compile can read again\n", static_cast<long long>(r->pruned_files),
                static_cast<double>(r->pruned_bytes) / 1e6);
  return 0;
}

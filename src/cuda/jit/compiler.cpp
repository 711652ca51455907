// NVRTC, opened at first use, and the disk cache of what it compiles (see jit.hpp).
#include <cuda_runtime_api.h>  // CUDART_VERSION: the toolkit built against
#include <dlfcn.h>
#include <fcntl.h>
#include <nvrtc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>

#include "cuda/jit/embedded.hpp"
#include "cuda/jit/jit.hpp"

namespace baracuda::detail::jit {
namespace {

std::atomic<int64_t> g_compiled{0}, g_disk_hits{0}, g_disk_rejected{0};

Status jit_error(std::string_view plan, const Program& program, std::string what) {
  return Status::error(StatusCode::backend_error,
                       std::string(plan) + ": kernel " + program.name + ": " + std::move(what));
}

// FNV-1a, 64 bits, from a seed: two seeds make the 128-bit names of cache files.
uint64_t fnv1a(std::string_view bytes, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}
std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// ---------------------------------------------------------------------------------------------
// NVRTC through dlopen: the library loads, and the CPU backend runs, where no NVRTC is installed.

struct Nvrtc {
  std::string error;  // why it could not be opened
  int major = 0, minor = 0;
  decltype(&nvrtcGetErrorString) get_error_string = nullptr;
  decltype(&nvrtcVersion) version = nullptr;
  decltype(&nvrtcCreateProgram) create = nullptr;
  decltype(&nvrtcDestroyProgram) destroy = nullptr;
  decltype(&nvrtcCompileProgram) compile = nullptr;
  decltype(&nvrtcAddNameExpression) add_name = nullptr;
  decltype(&nvrtcGetLoweredName) lowered_name = nullptr;
  decltype(&nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&nvrtcGetProgramLog) log = nullptr;
  decltype(&nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&nvrtcGetCUBIN) cubin = nullptr;
  decltype(&nvrtcGetPTXSize) ptx_size = nullptr;
  decltype(&nvrtcGetPTX) ptx = nullptr;
};

template <class F>
bool resolve(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

const Nvrtc& nvrtc() {
  static const Nvrtc api = [] {
    Nvrtc n;
    std::vector<std::string> names;
    if (const char* own = std::getenv("BARACUDA_NVRTC_LIBRARY"); own && *own) {
      names.push_back(own);
    } else {
      names.push_back("libnvrtc.so." + std::to_string(CUDART_VERSION / 1000));
      names.push_back("libnvrtc.so");
    }
    void* lib = nullptr;
    for (const std::string& name : names) {
      lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
      n.error += (n.error.empty() ? "" : "; ") + name + ": " + dlerror();
    }
    if (!lib) return n;
    const bool ok = resolve(lib, "nvrtcGetErrorString", n.get_error_string) &&
                    resolve(lib, "nvrtcVersion", n.version) && resolve(lib, "nvrtcCreateProgram", n.create) &&
                    resolve(lib, "nvrtcDestroyProgram", n.destroy) && resolve(lib, "nvrtcCompileProgram", n.compile) &&
                    resolve(lib, "nvrtcAddNameExpression", n.add_name) &&
                    resolve(lib, "nvrtcGetLoweredName", n.lowered_name) &&
                    resolve(lib, "nvrtcGetProgramLogSize", n.log_size) && resolve(lib, "nvrtcGetProgramLog", n.log) &&
                    resolve(lib, "nvrtcGetCUBINSize", n.cubin_size) && resolve(lib, "nvrtcGetCUBIN", n.cubin) &&
                    resolve(lib, "nvrtcGetPTXSize", n.ptx_size) && resolve(lib, "nvrtcGetPTX", n.ptx);
    if (!ok) {
      n.error = names.front() + " lacks an NVRTC entry point (" + dlerror() + ")";
      n.create = nullptr;
      return n;
    }
    n.version(&n.major, &n.minor);
    return n;
  }();
  return api;
}

std::string nvrtc_version_text() {
  const Nvrtc& n = nvrtc();
  return n.create ? std::to_string(n.major) + "." + std::to_string(n.minor) : "none";
}

// ---------------------------------------------------------------------------------------------
// Keys and the disk cache.

// The names in a text's `#include "..."` lines (every such line, whatever `#if` it sits under: a
// superset of what is read is a safe key).
std::vector<std::string_view> quoted_includes(std::string_view text) {
  std::vector<std::string_view> out;
  auto skip_blanks = [](std::string_view& t) {
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  };
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    skip_blanks(line);
    if (!line.starts_with('#')) continue;
    line.remove_prefix(1);
    skip_blanks(line);
    if (!line.starts_with("include")) continue;
    line.remove_prefix(7);
    skip_blanks(line);
    if (!line.starts_with('"')) continue;
    line.remove_prefix(1);
    if (const size_t close = line.find('"'); close != std::string_view::npos) out.push_back(line.substr(0, close));
  }
  return out;
}

// The index of the embedded file named `path`, or -1.
int embedded_index(std::string_view path) {
  const std::span<const EmbeddedSource> files = embedded_sources();
  for (size_t i = 0; i < files.size(); ++i)
    if (files[i].path == path) return static_cast<int>(i);
  return -1;
}

// Each embedded file's include closure (its own index and those of every embedded file it reads,
// sorted) and the hash of its path and text: a program's key depends on the files it reads alone,
// so a change to one family's device code leaves the others' disk cache valid.
struct SourceGraph {
  std::vector<std::vector<int>> closure;
  std::vector<std::string> hash;
};
const SourceGraph& source_graph() {
  static const SourceGraph g = [] {
    const std::span<const EmbeddedSource> files = embedded_sources();
    const int n = static_cast<int>(files.size());
    std::vector<std::vector<int>> direct(n);
    SourceGraph out{std::vector<std::vector<int>>(n), std::vector<std::string>(n)};
    for (int i = 0; i < n; ++i) {
      for (std::string_view name : quoted_includes(files[i].text))
        if (const int j = embedded_index(name); j >= 0) direct[i].push_back(j);
      const std::string part = std::string(files[i].path) + '\0' + std::string(files[i].text);
      out.hash[i] = hex(fnv1a(part)) + hex(fnv1a(part, 0x84222325cbf29ce4ull));
    }
    for (int i = 0; i < n; ++i) {
      std::vector<char> seen(n, 0);
      std::vector<int> todo = {i};
      seen[i] = 1;
      while (!todo.empty()) {
        const int f = todo.back();
        todo.pop_back();
        out.closure[i].push_back(f);
        for (int j : direct[f])
          if (!seen[j]) seen[j] = 1, todo.push_back(j);
      }
      std::sort(out.closure[i].begin(), out.closure[i].end());
    }
    return out;
  }();
  return g;
}

std::vector<int> closure_of(std::string_view source) {
  const SourceGraph& g = source_graph();
  std::vector<int> out;
  for (std::string_view name : quoted_includes(source))
    if (const int i = embedded_index(name); i >= 0) out.insert(out.end(), g.closure[i].begin(), g.closure[i].end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The caller's own NVRTC options, BARACUDA_JIT_OPTIONS split at spaces ("-lineinfo" for the profiler's
// source view, "-pch" for NVRTC's precompiled headers): read once, part of every key.
const std::vector<std::string>& caller_options() {
  static const std::vector<std::string> options = [] {
    std::vector<std::string> out;
    const char* env = std::getenv("BARACUDA_JIT_OPTIONS");
    for (std::string_view rest = env ? env : ""; !rest.empty();) {
      const size_t start = rest.find_first_not_of(' ');
      if (start == std::string_view::npos) break;
      rest.remove_prefix(start);
      const size_t end = std::min(rest.find(' '), rest.size());
      out.emplace_back(rest.substr(0, end));
      rest.remove_prefix(end);
    }
    return out;
  }();
  return options;
}

// CUBIN for the real arch sm_<arch>; or PTX alone for the virtual arch compute_<arch> (no ptxas).
enum class Output { cubin, ptx };

std::vector<std::string> options_for(const Program& program, int arch, Output output = Output::cubin) {
  const char* prefix = output == Output::cubin ? "--gpu-architecture=sm_" : "--gpu-architecture=compute_";
  std::vector<std::string> opts = {prefix + std::to_string(arch) + (program.only_arch ? "a" : ""), "-std=c++20"};
  opts.insert(opts.end(), program.options.begin(), program.options.end());
  // PTX is compiled only to check that a program compiles (CI): NVRTC's fast-compile mode (12.8 on),
  // the front end whole, the optimizer cut short (the catalog 62 -> 11 s, bench/NOTES.md).
  const Nvrtc& n = nvrtc();
  if (output == Output::ptx && (n.major > 12 || (n.major == 12 && n.minor >= 8))) opts.push_back("-Ofc=max");
  opts.insert(opts.end(), caller_options().begin(), caller_options().end());
  return opts;
}

}  // namespace

std::string cache_key(const Program& program, int arch) {
  std::string k = "baracuda-jit 2\nnvrtc " + nvrtc_version_text() + "\n";
  for (int i : closure_of(program.source)) k += "reads " + source_graph().hash[i] + "\n";
  for (const std::string& o : options_for(program, arch)) k += "option " + o + "\n";
  for (const std::string& name : program.kernels) k += "kernel " + name + "\n";
  k += "source\n" + program.source;
  return k;
}

namespace {

std::string cache_file_name(const std::string& key) {
  return hex(fnv1a(key)) + hex(fnv1a(key, 0x84222325cbf29ce4ull)) + ".cubin";
}

// The file: magic, then (key, the lowered names, the CUBIN) as length-prefixed strings, then an
// FNV-1a checksum of all that precedes it.
constexpr char kMagic[8] = {'B', 'R', 'C', 'D', 'J', 'I', 'T', '1'};

void put(std::string& out, std::string_view bytes) {
  const uint64_t n = bytes.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(bytes);
}

std::string serialize(const std::string& key, const Compiled& c) {
  std::string out(kMagic, sizeof kMagic);
  put(out, key);
  const uint64_t names = c.lowered.size();
  out.append(reinterpret_cast<const char*>(&names), sizeof names);
  for (const std::string& name : c.lowered) put(out, name);
  put(out, std::string_view(c.cubin.data(), c.cubin.size()));
  const uint64_t sum = fnv1a(out);
  out.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  return out;
}

// Reads a length-prefixed string at `pos`, staying inside `data`.
bool get(std::string_view data, size_t& pos, std::string_view& out) {
  uint64_t n = 0;
  if (data.size() - pos < sizeof n) return false;
  std::memcpy(&n, data.data() + pos, sizeof n);
  pos += sizeof n;
  if (n > data.size() - pos) return false;
  out = data.substr(pos, n);
  pos += n;
  return true;
}

// A whole file's body (magic and checksum right) and the position after its key, which it returns.
std::optional<std::string_view> stored_key(std::string_view data, std::string_view* body = nullptr,
                                           size_t* after = nullptr) {
  uint64_t sum = 0;
  if (data.size() < sizeof kMagic + sizeof sum || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) return {};
  std::memcpy(&sum, data.data() + data.size() - sizeof sum, sizeof sum);
  const std::string_view whole = data.substr(0, data.size() - sizeof sum);
  if (fnv1a(whole) != sum) return {};
  size_t pos = sizeof kMagic;
  std::string_view key;
  if (!get(whole, pos, key)) return {};
  if (body) *body = whole;
  if (after) *after = pos;
  return key;
}

std::optional<Compiled> deserialize(std::string_view data, const std::string& key, size_t kernels) {
  std::string_view body, cubin;
  size_t pos = 0;
  if (stored_key(data, &body, &pos) != std::optional<std::string_view>(key)) return {};
  uint64_t names = 0;
  if (body.size() - pos < sizeof names) return {};
  std::memcpy(&names, body.data() + pos, sizeof names);
  pos += sizeof names;
  if (names != kernels) return {};
  Compiled c;
  for (uint64_t i = 0; i < names; ++i) {
    std::string_view name;
    if (!get(body, pos, name) || name.empty()) return {};
    c.lowered.emplace_back(name);
  }
  if (!get(body, pos, cubin) || cubin.empty() || pos != body.size()) return {};
  c.cubin.assign(cubin.begin(), cubin.end());
  return c;
}

std::optional<std::string> read_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return {};
  std::string data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, n);
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) return {};
  return data;
}

// mkdir -p; false where the directory cannot be made.
bool make_directories(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i != dir.size() && dir[i] != '/') continue;
    const std::string prefix = dir.substr(0, i);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st {};
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// A temporary file in the same directory, renamed over the final name: a reader sees the old file,
// the new one, or none, never a part. Any failure leaves the cache as it was.
void write_atomically(const std::string& dir, const std::string& name, const std::string& data) {
  if (!make_directories(dir)) return;
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::string tmp =
      dir + "/." + name + "." + std::to_string(::getpid()) + "." + std::to_string(counter++) + "." + hex(rng());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return;
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool ok = done == data.size() && ::close(fd) == 0;
  if (!ok || std::rename(tmp.c_str(), (dir + "/" + name).c_str()) != 0) ::unlink(tmp.c_str());
}

// ---------------------------------------------------------------------------------------------
// NVRTC itself.

struct ProgramGuard {
  const Nvrtc& api;
  nvrtcProgram p = nullptr;
  ~ProgramGuard() {
    if (p) api.destroy(&p);
  }
};

Expected<Compiled> run_nvrtc(const Program& program, int arch, std::string_view plan, Output output = Output::cubin) {
  const Nvrtc& api = nvrtc();
  if (!api.create) return jit_error(plan, program, "NVRTC could not be opened (" + api.error + ")");
  std::vector<std::string> header_names;
  std::vector<const char*> headers, names;
  for (const EmbeddedSource& s : embedded_sources()) {
    header_names.emplace_back(s.path);
    headers.push_back(s.text.data());
  }
  // The texts are string_views into literals: NUL-terminated, as NVRTC needs.
  for (const std::string& n : header_names) names.push_back(n.c_str());
  ProgramGuard guard{api};
  auto failed = [&](const char* step, nvrtcResult r) {
    return jit_error(plan, program, std::string(step) + ": " + api.get_error_string(r));
  };
  nvrtcResult r = api.create(&guard.p, program.source.c_str(), (program.name + ".cu").c_str(),
                             static_cast<int>(headers.size()), headers.data(), names.data());
  if (r != NVRTC_SUCCESS) return failed("nvrtcCreateProgram", r);
  for (const std::string& k : program.kernels)
    if ((r = api.add_name(guard.p, k.c_str())) != NVRTC_SUCCESS) return failed("nvrtcAddNameExpression", r);
  const std::vector<std::string> opts = options_for(program, arch, output);
  std::vector<const char*> opt_ptrs;
  for (const std::string& o : opts) opt_ptrs.push_back(o.c_str());
  r = api.compile(guard.p, static_cast<int>(opt_ptrs.size()), opt_ptrs.data());
  const auto program_log = [&] {
    size_t size = 0;
    std::string log;
    if (api.log_size(guard.p, &size) == NVRTC_SUCCESS && size > 1) {
      log.resize(size);
      api.log(guard.p, log.data());
      log.resize(size - 1);
    }
    return log;
  };
  if (r != NVRTC_SUCCESS)
    return jit_error(plan, program,
                     std::string("NVRTC failed for sm_") + std::to_string(arch) + " (" + api.get_error_string(r) +
                         "):\n" + program_log());
  if (const char* env = std::getenv("BARACUDA_JIT_LOG"); env && *env && std::strcmp(env, "0") != 0)
    // Every program NVRTC compiles, and its log (--ptxas-options=-v's registers and spills): which
    // kernels a run compiles that the warm-up's catalog did not hold.
    std::fprintf(stderr, "baracuda jit: compiled %s for sm_%d\n%s", program.name.c_str(), arch, program_log().c_str());
  Compiled c;
  for (const std::string& k : program.kernels) {
    const char* lowered = nullptr;
    if ((r = api.lowered_name(guard.p, k.c_str(), &lowered)) != NVRTC_SUCCESS || !lowered)
      return failed(("nvrtcGetLoweredName(" + k + ")").c_str(), r);
    c.lowered.emplace_back(lowered);
  }
  size_t size = 0;
  if (output == Output::ptx) {
    if ((r = api.ptx_size(guard.p, &size)) != NVRTC_SUCCESS) return failed("nvrtcGetPTXSize", r);
    c.ptx.resize(size);
    if ((r = api.ptx(guard.p, c.ptx.data())) != NVRTC_SUCCESS) return failed("nvrtcGetPTX", r);
    return c;
  }
  if ((r = api.cubin_size(guard.p, &size)) != NVRTC_SUCCESS) return failed("nvrtcGetCUBINSize", r);
  c.cubin.resize(size);
  if ((r = api.cubin(guard.p, c.cubin.data())) != NVRTC_SUCCESS) return failed("nvrtcGetCUBIN", r);
  ++g_compiled;
  return c;
}

}  // namespace

std::string cache_directory() {
  if (const char* dir = std::getenv("BARACUDA_CACHE_DIR"); dir && *dir)
    return std::string_view(dir) == "off" ? std::string() : std::string(dir);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/baracuda";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/baracuda";
  return {};
}

CacheStats cache_stats() { return {g_compiled.load(), g_disk_hits.load(), g_disk_rejected.load()}; }

std::vector<std::string_view> included_sources(std::string_view source) {
  std::vector<std::string_view> out;
  for (int i : closure_of(source)) out.push_back(embedded_sources()[i].path);
  return out;
}

Expected<Compiled> compile(const Program& program, int arch, std::string_view plan) {
  if (arch <= 0) return jit_error(plan, program, "no arch to compile for (" + std::to_string(arch) + ")");
  if (program.only_arch && program.only_arch != arch)
    return jit_error(
        plan, program,
        "compiles for sm_" + std::to_string(program.only_arch) + "a alone, not sm_" + std::to_string(arch));
  const std::string key = cache_key(program, arch);
  const std::string dir = cache_directory();
  const std::string file = cache_file_name(key);
  if (!dir.empty()) {
    if (std::optional<std::string> data = read_file(dir + "/" + file)) {
      if (std::optional<Compiled> c = deserialize(*data, key, program.kernels.size())) {
        ++g_disk_hits;
        return std::move(*c);
      }
      ++g_disk_rejected;
    }
  }
  Expected<Compiled> c = run_nvrtc(program, arch, plan);
  if (c && !dir.empty()) write_atomically(dir, file, serialize(key, *c));
  return c;
}

std::string cache_file(const std::string& key, const Compiled& c) { return serialize(key, c); }

PruneReport prune_disk_cache() {
  PruneReport r;
  const std::string dir = cache_directory();
  if (dir.empty() || !nvrtc().create) return r;  // no NVRTC: no version to hold the keys to
  const std::vector<std::string>& hashes = source_graph().hash;
  const std::string header = "baracuda-jit 2\nnvrtc " + nvrtc_version_text() + "\n";
  // A key these sources and this NVRTC could ask for: the header, then every file it read as it is now.
  auto current = [&](std::string_view key) {
    if (!key.starts_with(header)) return false;
    key.remove_prefix(header.size());
    while (key.starts_with("reads ")) {
      const size_t end = key.find('\n');
      if (end == std::string_view::npos) return false;
      if (std::find(hashes.begin(), hashes.end(), key.substr(6, end - 6)) == hashes.end()) return false;
      key.remove_prefix(end + 1);
    }
    return true;
  };
  // The names first, by increments that report errors rather than throw; a writer's temporary file
  // (or anything not ours) is not a .cubin.
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".cubin") files.push_back(it->path());
  for (const std::filesystem::path& f : files) {
    const std::optional<std::string> data = read_file(f.string());
    if (!data) continue;
    if (const std::optional<std::string_view> key = stored_key(*data); key && current(*key)) continue;
    if (std::filesystem::remove(f, ec)) {
      ++r.files;
      r.bytes += static_cast<int64_t>(data->size());
    }
  }
  return r;
}

Expected<Compiled> compile_ptx(const Program& program, int arch, std::string_view plan) {
  if (arch <= 0) return jit_error(plan, program, "no arch to compile for (" + std::to_string(arch) + ")");
  if (program.only_arch && program.only_arch != arch)
    return jit_error(
        plan, program,
        "compiles for sm_" + std::to_string(program.only_arch) + "a alone, not sm_" + std::to_string(arch));
  return run_nvrtc(program, arch, plan, Output::ptx);
}

}  // namespace baracuda::detail::jit

#pragma once
// CUDA kernels compiled when a plan is selected (NVRTC), kept in two caches: one in the process and
// one on disk. A family describes what it needs as a Program (a short main unit that includes the
// library's device sources, src/cuda/device/, embedded in the library at build time, and the kernels
// to take from it as C++ name expressions); `load` returns the kernels ready to launch, compiling
// them at most once per process and, with a warm disk cache, never. No CUDA header is needed here.
//
// The disk cache: BARACUDA_CACHE_DIR, else $XDG_CACHE_HOME/baracuda, else $HOME/.cache/baracuda;
// BARACUDA_CACHE_DIR=off disables it. A file is named by a hash of everything that specializes the
// kernel (the embedded sources, the program, the options, NVRTC's version, the arch), written to a
// temporary file and renamed, and checked whole on reading (its key and a checksum): a corrupt,
// truncated or foreign file is recompiled and replaced, never trusted; a directory that cannot be
// written means no disk cache, not an error. NVRTC is opened at first use (BARACUDA_NVRTC_LIBRARY
// names another library file): without it, a kernel that is not on disk is a backend error.
// BARACUDA_JIT_OPTIONS adds NVRTC options of the caller's to every compile ("-lineinfo"), and to the
// key; BARACUDA_JIT_LOG=1 names every program NVRTC compiles, with its log (--ptxas-options=-v's
// registers and spills).
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::detail::jit {

struct Program {
  std::string name;                  // for messages: "norm.forward<bf16>"
  std::string source;                // the main unit: #include "cuda/device/..." and nothing of the host
  std::vector<std::string> kernels;  // name expressions: "baracuda::device::norm_forward<float, 4>"
  std::vector<std::string> options;  // NVRTC options beyond the arch and the language standard
  int only_arch = 0;                 // compiled for sm_<only_arch>a alone (90: Hopper's wgmma); 0: any arch
};

// A program compiled for one arch: its CUBIN (or PTX, from compile_ptx) and each kernel's lowered
// (mangled) name.
struct Compiled {
  std::vector<char> cubin;
  std::vector<char> ptx;
  std::vector<std::string> lowered;
};

// Where a compile came from, counted per process (tests and the warm-up command read them).
struct CacheStats {
  int64_t compiled = 0;       // NVRTC runs
  int64_t disk_hits = 0;      // programs read from the disk cache
  int64_t disk_rejected = 0;  // cache files found corrupt, truncated or foreign (then recompiled)
};
CacheStats cache_stats();

// The disk cache directory now in force ("" when it is off).
std::string cache_directory();

// The program compiled for `arch` (compute capability * 10): from the disk cache, else by NVRTC
// (then stored on disk). Needs no GPU. An error names `plan`, the program and, for a compile
// error, carries NVRTC's log.
Expected<Compiled> compile(const Program& program, int arch, std::string_view plan);

// The program compiled to PTX for the virtual arch compute_<arch>: NVRTC's front end and optimizer
// without ptxas, nor either cache. How CI checks that every kernel compiles, at a fraction of the
// cost.
Expected<Compiled> compile_ptx(const Program& program, int arch, std::string_view plan);

// A loaded program: its kernels (cudaKernel_t, valid on every device) in Program::kernels order.
// Owned by the in-process cache for the life of the process, so plans may hold the pointer.
struct Module {
  std::vector<void*> kernels;
};

// The program's kernels for `arch`, from the in-process cache, else compile() and load. Threads
// asking for one key at once wait for one compile. Needs the CUDA runtime (not a GPU to compile).
Expected<const Module*> load(const Program& program, int arch, std::string_view plan);

// Every program the library's families compile at select, for rows of the given lengths (the
// kernels' specializations depend on them): the warm-up command and the compile test use it.
std::vector<Program> catalog(const std::vector<int64_t>& row_lengths);

// Everything a compile depends on, as text: the disk cache's files hold it, the in-process cache
// keys by it.
std::string cache_key(const Program& program, int arch);

// The disk cache's file of a key and its compiled program (the tests write stale files with it).
std::string cache_file(const std::string& key, const Compiled& c);

// Removes the disk cache's files that no compile can read again: keys of other sources (another
// build's device files: each change to them leaves the old files behind), of another NVRTC or key
// format, and files that are not whole. Other archs' files of these sources stay. Nothing without
// NVRTC (no version to hold the keys to) or without a cache directory.
struct PruneReport {
  int64_t files = 0, bytes = 0;
};
PruneReport prune_disk_cache();

// A kernel's hold on its module where the kernel's types are compile-time (a template's own static
// slot): the first module loaded for an arch, read after that with one atomic load, so that a plan's
// run costs no cache lookup. Another arch's lookups go to `load` (processes of mixed GPUs).
class ModuleSlot {
 public:
  const Module* get(int arch) const {
    const Module* m = module_.load(std::memory_order_acquire);
    return m && arch_ == arch ? m : nullptr;
  }
  void set(int arch, const Module* m) {
    const std::lock_guard lock(mutex_);
    if (module_.load(std::memory_order_relaxed)) return;
    arch_ = arch;
    module_.store(m, std::memory_order_release);
  }

 private:
  std::mutex mutex_;
  int arch_ = 0;  // written once, before module_
  std::atomic<const Module*> module_{nullptr};
};

// T as the device sources spell it, for a program's kernel expressions ("float", "baracuda::half",
// "baracuda::detail::UnaryForward<baracuda::detail::ExpMath, float, false>"): the host compiler's
// own spelling of the type, which names the same type in the same sources under NVRTC (the shared
// headers, the host's integer types: common/nvrtc_std.hpp).
std::string type_spelling(std::string_view pretty_function);
template <class T>
const std::string& type_name() {
  static const std::string name = type_spelling(__PRETTY_FUNCTION__);
  return name;
}

// The device sources' name of a float dtype's element type, for a program's kernel expressions
// ("baracuda::device::bf16", "float").
std::string device_type(DType dtype);

// The embedded device files a program's source reads (its quoted includes, transitively), sorted:
// its cache key holds their hashes, and no other file's.
std::vector<std::string_view> included_sources(std::string_view source);

}  // namespace baracuda::detail::jit

// Kernels compiled at select (src/cuda/jit/): every program of the catalog compiles with NVRTC (no GPU
// needed, so CI compiles every kernel), and the disk cache cannot hurt: a hit gives the same CUBIN, a
// truncated, corrupt or foreign file is recompiled, pruning removes only the files no compile can
// read, an unwritable or disabled directory means no cache, two processes filling one directory at
// once leave whole files, and NVRTC failing (a bad option, a bad source, no library) is a Status
// naming the plan and the kernel, never a crash.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "cuda/jit/embedded.hpp"
#include "cuda/jit/jit.hpp"

namespace baracuda::detail::jit {
namespace {

namespace fs = std::filesystem;

constexpr int kArch = 90;

// A fresh cache directory for one test, set as BARACUDA_CACHE_DIR while it lives.
class CacheDir {
 public:
  explicit CacheDir(const std::string& name)
      : path_(fs::temp_directory_path() / ("baracuda-jit-test-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    ::setenv("BARACUDA_CACHE_DIR", path_.c_str(), 1);
  }
  ~CacheDir() {
    fs::remove_all(path_);
    ::unsetenv("BARACUDA_CACHE_DIR");
  }
  const fs::path& path() const { return path_; }
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    if (fs::exists(path_))
      for (const auto& e : fs::directory_iterator(path_)) out.push_back(e.path());
    return out;
  }

 private:
  fs::path path_;
};

// The smallest real program: a norm forward of f32 rows of 768.
Program small_program() {
  std::vector<Program> all = catalog({768});
  EXPECT_FALSE(all.empty());
  return all.front();
}

std::vector<char> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The catalog's programs merged by source and options, up to 64 at a time, into programs of all their
// kernels: NVRTC then reads the shared headers once for many (the elementwise families' programs
// are thousands of one functor each: about 3x faster merged). A merged program names its first.
std::vector<Program> merged(const std::vector<Program>& programs) {
  struct Filling {
    size_t at = 0;
    int count = 0;
    std::string first;
  };
  std::vector<Program> out;
  std::map<std::string, Filling> open;  // by source and options: the merged program being filled
  for (const Program& p : programs) {
    std::string key = p.source + "\n" + std::to_string(p.only_arch);
    for (const std::string& o : p.options) key += "\n" + o;
    Filling& f = open[key];
    if (f.count == 0 || f.count == 64) {
      f = {out.size(), 0, p.name};
      out.push_back(p);
      out.back().kernels.clear();
    }
    Program& m = out[f.at];
    if (++f.count > 1) m.name = f.first + " (and " + std::to_string(f.count - 1) + " more)";
    for (const std::string& k : p.kernels)
      if (std::find(m.kernels.begin(), m.kernels.end(), k) == m.kernels.end()) m.kernels.push_back(k);
  }
  return out;
}

TEST(Jit, EveryProgramOfTheCatalogCompiles) {
  ::setenv("BARACUDA_CACHE_DIR", "off", 1);
  std::vector<Program> all = catalog({768, 4096});
  std::erase_if(all, [](const Program& p) { return p.only_arch && p.only_arch != kArch; });
  ASSERT_GT(all.size(), 50u);
  const std::vector<Program> programs = merged(all);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> failures(programs.size());
  std::vector<std::thread> pool;
  const unsigned threads = std::max(2u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (size_t i = t; i < programs.size(); i += threads) {
        const Expected<Compiled> c = compile_ptx(programs[i], kArch, "JitTest");
        if (!c)
          failures[i] = c.status().to_string();
        else if (c->ptx.empty() || c->lowered.size() != programs[i].kernels.size())
          failures[i] = programs[i].name + ": empty PTX or missing kernels";
      }
    });
  for (std::thread& t : pool) t.join();
  ::unsetenv("BARACUDA_CACHE_DIR");
  for (const std::string& f : failures) EXPECT_EQ(f, "");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ jit ] %zu programs (as %zu) compiled to PTX for compute_%d in %.1f s on %u threads\n", all.size(),
              programs.size(), kArch, seconds, threads);
}

// A key holds the hashes of the embedded files its program reads, so a change to one family's
// device code leaves every other family's cached kernels valid: the closure of random.cuh has the
// draws, Philox and the common header, not the norms'; and no embedded file includes another by a
// name the key's scan does not know (a file read but not hashed would let a stale kernel be kept).
TEST(Jit, AKeyHoldsTheFilesItsProgramReadsAndNoOther) {
  const std::vector<std::string_view> random = included_sources("#include \"cuda/device/random.cuh\"\n");
  auto has = [](const std::vector<std::string_view>& v, std::string_view path) {
    return std::find(v.begin(), v.end(), path) != v.end();
  };
  for (std::string_view f : {"cuda/device/random.cuh", "cuda/device/random_draw.h", "cuda/device/philox.h",
                             "cuda/device/common.cuh", "cuda/device/params.h"})
    EXPECT_TRUE(has(random, f)) << f;
  EXPECT_FALSE(has(random, "cuda/device/norm.cuh"));
  EXPECT_TRUE(std::is_sorted(random.begin(), random.end()));
  const std::regex include(R"re(^[ \t]*#[ \t]*include[ \t]*"([^"]+)")re", std::regex::multiline);
  for (const EmbeddedSource& file : embedded_sources()) {
    const std::vector<std::string_view> reads = included_sources("#include \"" + std::string(file.path) + "\"\n");
    EXPECT_TRUE(has(reads, file.path)) << file.path;
    const std::string text(file.text);
    for (std::sregex_iterator m(text.begin(), text.end(), include), end; m != end; ++m) {
      // (Includes of files not embedded are the host's, under #if: NVRTC never reads them.)
      const std::string name = (*m)[1].str();
      const bool embedded_by_another_name =
          std::any_of(embedded_sources().begin(), embedded_sources().end(),
                      [&](const EmbeddedSource& e) { return e.path != name && e.path.ends_with("/" + name); });
      EXPECT_FALSE(embedded_by_another_name) << file.path << " includes " << name << " by a relative name";
      if (std::any_of(embedded_sources().begin(), embedded_sources().end(),
                      [&](const EmbeddedSource& e) { return e.path == name; })) {
        EXPECT_TRUE(has(reads, name)) << file.path << " reads " << name << ", not hashed";
      }
    }
  }
  Program a, b;
  a.source = "#include \"cuda/device/random.cuh\"\n";
  b.source = "#include \"cuda/device/norm.cuh\"\n";
  EXPECT_NE(cache_key(a, kArch), cache_key(b, kArch));
  EXPECT_EQ(cache_key(a, kArch), cache_key(a, kArch));
}

TEST(Jit, ADiskHitGivesTheSameCubin) {
  CacheDir dir("hit");
  const Program p = small_program();
  const CacheStats before = cache_stats();
  const Expected<Compiled> first = compile(p, kArch, "JitTest");
  ASSERT_TRUE(first) << first.status().to_string();
  ASSERT_EQ(dir.files().size(), 1u);
  const Expected<Compiled> second = compile(p, kArch, "JitTest");
  ASSERT_TRUE(second);
  const CacheStats after = cache_stats();
  EXPECT_EQ(after.compiled - before.compiled, 1);
  EXPECT_EQ(after.disk_hits - before.disk_hits, 1);
  EXPECT_EQ(first->cubin, second->cubin);
  EXPECT_EQ(first->lowered, second->lowered);
  // Another arch is another key.
  ASSERT_TRUE(compile(p, 80, "JitTest"));
  EXPECT_EQ(dir.files().size(), 2u);
}

TEST(Jit, TruncatedCorruptOrForeignFilesAreRecompiled) {
  CacheDir dir("corrupt");
  const Program p = small_program();
  const Expected<Compiled> good = compile(p, kArch, "JitTest");
  ASSERT_TRUE(good);
  ASSERT_EQ(dir.files().size(), 1u);
  const fs::path file = dir.files().front();
  const std::vector<char> bytes = read_bytes(file);
  auto rewrite = [&](const std::vector<char>& b) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(b.data(), static_cast<std::streamsize>(b.size()));
  };
  std::vector<char> flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x40;
  std::vector<char> truncated(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 3));
  const std::vector<char> foreign = {'E', 'L', 'F', 0, 1, 2, 3};
  for (const auto& [label, contents] : {std::pair<const char*, std::vector<char>>{"truncated", truncated},
                                        {"a flipped bit", flipped},
                                        {"foreign", foreign},
                                        {"empty", {}}}) {
    SCOPED_TRACE(label);
    rewrite(contents);
    const CacheStats before = cache_stats();
    const Expected<Compiled> again = compile(p, kArch, "JitTest");
    ASSERT_TRUE(again) << again.status().to_string();
    EXPECT_EQ(again->cubin, good->cubin);
    EXPECT_EQ(cache_stats().disk_rejected - before.disk_rejected, 1);
    EXPECT_EQ(read_bytes(file), bytes);  // replaced by a whole file
  }
}

TEST(Jit, PruningRemovesTheFilesNoCompileCanReadAndKeepsTheRest) {
  CacheDir dir("prune");
  const Program p = small_program();
  const Expected<Compiled> good = compile(p, kArch, "JitTest");
  ASSERT_TRUE(good) << good.status().to_string();
  ASSERT_TRUE(compile(p, 80, "JitTest"));  // another arch's file of these sources: kept
  ASSERT_EQ(dir.files().size(), 2u);
  const std::string key = cache_key(p, kArch);
  auto plant = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir.path() / name, std::ios::binary) << bytes;
  };
  // Another build's device files: a `reads` line whose hash no embedded file has now.
  const size_t reads = key.find("reads ");
  ASSERT_NE(reads, std::string::npos);
  std::string stale_key = key;
  stale_key.replace(reads + 6, 4, "zzzz");
  plant("stale.cubin", cache_file(stale_key, *good));
  // Another NVRTC, and a key of the first format (every embedded file's hash in one line).
  std::string other_nvrtc = key;
  other_nvrtc.replace(key.find("nvrtc ") + 6, 1, "7");
  plant("nvrtc.cubin", cache_file(other_nvrtc, *good));
  plant("format1.cubin", cache_file("baracuda-jit 1\nsources 0123\n", *good));
  std::string torn = cache_file(key, *good);
  torn.resize(torn.size() / 2);
  plant("torn.cubin", torn);
  plant("notes.txt", "not a cache file");
  const PruneReport r = prune_disk_cache();
  EXPECT_EQ(r.files, 4);
  EXPECT_GT(r.bytes, 0);
  std::vector<std::string> left;
  for (const fs::path& f : dir.files()) left.push_back(f.filename().string());
  std::sort(left.begin(), left.end());
  ASSERT_EQ(left.size(), 3u);
  EXPECT_EQ(left[2], "notes.txt");
  const CacheStats before = cache_stats();
  ASSERT_TRUE(compile(p, kArch, "JitTest"));
  ASSERT_TRUE(compile(p, 80, "JitTest"));
  EXPECT_EQ(cache_stats().disk_hits - before.disk_hits, 2);  // the current files stayed
  EXPECT_EQ(prune_disk_cache().files, 0);
}

TEST(Jit, AnUnwritableOrDisabledCacheIsNoCache) {
  const Program p = small_program();
  // A directory below a regular file can never be made (root can write anywhere else).
  const fs::path blocker = fs::temp_directory_path() / ("baracuda-jit-blocker-" + std::to_string(::getpid()));
  std::ofstream(blocker) << "not a directory";
  ::setenv("BARACUDA_CACHE_DIR", (blocker / "cache").c_str(), 1);
  const Expected<Compiled> c = compile(p, kArch, "JitTest");
  EXPECT_TRUE(c) << c.status().to_string();
  fs::remove(blocker);
  ::setenv("BARACUDA_CACHE_DIR", "off", 1);
  EXPECT_EQ(cache_directory(), "");
  const CacheStats before = cache_stats();
  ASSERT_TRUE(compile(p, kArch, "JitTest"));
  ASSERT_TRUE(compile(p, kArch, "JitTest"));
  EXPECT_EQ(cache_stats().compiled - before.compiled, 2);
  ::unsetenv("BARACUDA_CACHE_DIR");
}

TEST(Jit, CompileErrorsAreStatusesNamingThePlanAndTheKernel) {
  ::setenv("BARACUDA_CACHE_DIR", "off", 1);
  Program bad_option = small_program();
  bad_option.options.push_back("--no-such-option");
  const Expected<Compiled> a = compile(bad_option, kArch, "JitTestPlan");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.status().code(), StatusCode::backend_error);
  EXPECT_NE(a.status().message().find("JitTestPlan"), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find(bad_option.name), std::string::npos) << a.status().message();

  Program bad_source = small_program();
  bad_source.source += "this is not C++;\n";
  const Expected<Compiled> b = compile(bad_source, kArch, "JitTestPlan");
  ASSERT_FALSE(b);
  EXPECT_NE(b.status().message().find("NVRTC failed"), std::string::npos) << b.status().message();
  EXPECT_NE(b.status().message().find("error"), std::string::npos) << "the compiler's log: " << b.status().message();

  Program no_kernel = small_program();
  no_kernel.kernels.push_back("baracuda::device::no_such_kernel<float>");
  EXPECT_FALSE(compile(no_kernel, kArch, "JitTestPlan"));
  EXPECT_FALSE(compile(small_program(), 0, "JitTestPlan"));  // no arch
  ::unsetenv("BARACUDA_CACHE_DIR");
}

#ifdef BARACUDA_JIT_WARM
// Runs the warm-up command with `env` set; its exit status.
int warm(const std::string& env, const std::string& args = "--lengths 768 --threads 1") {
  const std::string cmd = env + " " + BARACUDA_JIT_WARM + " --arch 90 " + args + " > /dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Jit, TwoProcessesFillingOneCacheLeaveWholeFiles) {
  CacheDir dir("two");
  const std::string env = "BARACUDA_CACHE_DIR=" + dir.path().string();
  // (The random draws' six programs: enough for the two to race on every file; the whole catalog
  // is the compile test's.)
  const std::string warm = env + " " + BARACUDA_JIT_WARM + " --arch 90 --lengths 768 --threads 1 --only 'random<'";
  const std::string cmd = "(" + warm + " & " + warm + " & wait) > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::vector<Program> programs = catalog({768});
  std::erase_if(programs, [](const Program& p) { return !p.name.starts_with("random<"); });
  ASSERT_EQ(programs.size(), 6u);
  size_t cubins = 0;
  for (const fs::path& f : dir.files()) {
    EXPECT_EQ(f.extension(), ".cubin") << "a temporary file left behind: " << f;
    cubins += f.extension() == ".cubin";
  }
  EXPECT_EQ(cubins, programs.size());
  const CacheStats before = cache_stats();
  for (const Program& p : programs) ASSERT_TRUE(compile(p, kArch, "JitTest"));
  EXPECT_EQ(cache_stats().compiled - before.compiled, 0);  // every one a disk hit
  EXPECT_EQ(cache_stats().disk_rejected - before.disk_rejected, 0);
}

TEST(Jit, TheWarmCommandPrunesWhenAsked) {
  CacheDir dir("warm-prune");
  fs::create_directories(dir.path());
  std::ofstream(dir.path() / "stale.cubin", std::ios::binary) << "BRCDJIT1 not whole";
  const std::string env = "BARACUDA_CACHE_DIR=" + dir.path().string();
  ASSERT_EQ(warm(env, "--lengths 768 --threads 1 --only 'random<'"), 0);
  EXPECT_TRUE(fs::exists(dir.path() / "stale.cubin"));  // kept unless asked
  ASSERT_EQ(warm(env, "--lengths 768 --threads 1 --only 'random<' --prune"), 0);
  EXPECT_FALSE(fs::exists(dir.path() / "stale.cubin"));
  EXPECT_EQ(dir.files().size(), 6u);  // the random draws' programs
}

TEST(Jit, NoNvrtcIsAStatusNotACrash) {
  // (That the command succeeds with NVRTC is the two-process test's.)
  EXPECT_EQ(warm("BARACUDA_CACHE_DIR=off BARACUDA_NVRTC_LIBRARY=/nonexistent/libnvrtc.so"), 1);
}
#endif

}  // namespace
}  // namespace baracuda::detail::jit

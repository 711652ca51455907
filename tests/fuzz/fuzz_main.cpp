// baracuda-fuzz: random fuzz cases of every plan (fuzz_plans.hpp), or replays of saved ones.
//   baracuda-fuzz [--runs N] [--seed S] [--backend cpu|cuda] [--max-bytes B] [--first K] [--case K]
//                 [--keep-going]
//   baracuda-fuzz [--backend cpu|cuda] FILE_OR_DIR...      replay raw byte files
// Case K of seed S is the same bytes on every machine, so a failure is reproduced by its numbers
// (--case K) or by the crash file it writes (fuzz-crash-S-K.bin). Exit status: 0 when every
// invariant held, 1 on a failure, 2 on a usage error.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "fuzz_plans.hpp"

// Set by the sanitizer runtimes (ASan, UBSan...), absent otherwise: called before they abort.
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));
// UBSan reports with a stack, which says which library line it is.
extern "C" const char* __ubsan_default_options() { return "print_stacktrace=1"; }

namespace baracuda::fuzz {
namespace {

struct Options {
  int64_t runs = 10000;
  uint64_t seed = 1;
  Backend backend = Backend::cpu;
  size_t max_bytes = 512;
  int64_t first = 0;                 // --first: the first case number (to resume after a crash)
  std::optional<int64_t> only_case;  // --case: run just this case number
  bool keep_going = false;           // --keep-going: report every distinct failure, then exit 1
  std::vector<std::string> inputs;   // files or directories to replay
};

[[noreturn]] void usage(const std::string& error) {
  std::fprintf(stderr,
               "baracuda-fuzz: %s\n"
               "usage: baracuda-fuzz [--runs N] [--seed S] [--backend cpu|cuda] [--max-bytes B] [--first K]\n"
               "                     [--case K] [--keep-going] [FILE_OR_DIR...]\n",
               error.c_str());
  std::exit(2);
}

uint64_t parse_number(const std::string& flag, const char* text) {
  if (!text) usage(flag + " needs a value");
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 0);
  if (*text == '-' || end == text || *end != '\0') usage(flag + ": '" + text + "' is not a number");
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (arg == "--runs") {
      o.runs = static_cast<int64_t>(parse_number(arg, value));
      ++i;
    } else if (arg == "--seed") {
      o.seed = parse_number(arg, value);
      ++i;
    } else if (arg == "--max-bytes") {
      o.max_bytes = parse_number(arg, value);
      ++i;
    } else if (arg == "--first") {
      o.first = static_cast<int64_t>(parse_number(arg, value));
      ++i;
    } else if (arg == "--case") {
      o.only_case = static_cast<int64_t>(parse_number(arg, value));
      ++i;
    } else if (arg == "--backend") {
      const std::string b = value ? value : "";
      if (b != "cpu" && b != "cuda") usage("--backend is cpu or cuda");
      o.backend = b == "cuda" ? Backend::cuda : Backend::cpu;
      ++i;
    } else if (arg == "--keep-going") {
      o.keep_going = true;
    } else if (arg.starts_with("--")) {
      usage("unknown flag " + arg);
    } else {
      o.inputs.push_back(arg);
    }
  }
  return o;
}

// The bytes of case `number` of `seed`: its own splitmix64 stream, of a random length up to max.
std::vector<uint8_t> case_bytes(uint64_t seed, int64_t number, size_t max_bytes) {
  SplitMix64 rng(SplitMix64(seed).next() ^ (static_cast<uint64_t>(number) * 0xd1b54a32d192ed03ULL));
  std::vector<uint8_t> bytes(static_cast<size_t>(rng.next() % (max_bytes + 1)));
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng.next());
  return bytes;
}

std::string crash_file_name(uint64_t seed, int64_t number) {
  return "fuzz-crash-" + std::to_string(seed) + "-" + std::to_string(number) + ".bin";
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// ---------------------------------------------------------------------------------------------
// A crash (a sanitizer report, a signal) ends the process before a FuzzFailure can be caught, and a
// hang never ends it: the case in flight is then saved from the sanitizer's death callback, a signal
// handler or the per-case alarm, with async-signal-safe calls only, from what was prepared before
// the case ran.
constexpr unsigned kCaseTimeoutSeconds = 30;  // a case takes microseconds; minutes mean a hang

struct InFlight {
  char note[512] = "";  // "<plan>, case K, seed S; its bytes are in F"
  char file[128] = "";  // where to save the bytes ("" when replaying a file)
  const uint8_t* bytes = nullptr;
  size_t size = 0;
};
InFlight g_in_flight;

void write_stderr(const char* text) {
  if (write(STDERR_FILENO, text, std::strlen(text)) < 0) {
    // nothing more can be done here
  }
}

void save_in_flight(const char* event) {
  const InFlight& c = g_in_flight;
  if (c.file[0] != '\0') {
    const int fd = open(c.file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      if (c.size > 0 && write(fd, c.bytes, c.size) < 0) {
        // nor here
      }
      close(fd);
    }
  }
  write_stderr("\nbaracuda-fuzz: ");
  write_stderr(event);
  write_stderr(c.note);
}

void on_sanitizer_death() { save_in_flight("crashed in "); }

void on_signal(int signal) {
  save_in_flight("crashed in ");
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void on_alarm(int) {
  save_in_flight("timed out (a hang) in ");
  _exit(1);
}

void install_crash_hooks() {
  std::signal(SIGALRM, on_alarm);
  using SetDeathCallback = void (*)(void (*)());
  if (!__sanitizer_set_death_callback) {
    for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(s, on_signal);
    return;
  }
  // The sanitizers catch the signals themselves. GCC loads UBSan as a runtime of its own, beside
  // ASan's, with its own callback: tell both.
  __sanitizer_set_death_callback(on_sanitizer_death);
  if (void* ubsan = dlopen("libubsan.so.1", RTLD_NOW | RTLD_NOLOAD))
    if (void* set = dlsym(ubsan, "__sanitizer_set_death_callback"))
      reinterpret_cast<SetDeathCallback>(set)(on_sanitizer_death);
}

void prepare_in_flight(const std::vector<uint8_t>& bytes, const std::string& what, const std::string& file) {
  const std::string note =
      std::string(fuzzed_plan(bytes)) + ", " + what + (file.empty() ? "" : "; its bytes are in " + file) + "\n";
  std::snprintf(g_in_flight.note, sizeof g_in_flight.note, "%s", note.c_str());
  std::snprintf(g_in_flight.file, sizeof g_in_flight.file, "%s", file.c_str());
  g_in_flight.bytes = bytes.data();
  g_in_flight.size = bytes.size();
}

// ---------------------------------------------------------------------------------------------

// Distinct failures under --keep-going: the same plan and message up to its numbers.
struct FailureClass {
  std::string first;  // the first report of the class
  int64_t count = 0;
};

std::string signature(const FuzzFailure& f) {
  std::string s = f.plan() + ": ";
  const std::string what = f.what();
  for (const char c : what.substr(0, what.find('\n'))) {  // the first line: the views follow
    const bool digit = c >= '0' && c <= '9';
    if (!digit || s.back() != '#') s += digit ? '#' : c;
  }
  return s;
}

class Runner {
 public:
  explicit Runner(const Options& options) : options_(options) {}

  // One case; false when it failed (and the run should stop).
  bool run(const std::vector<uint8_t>& bytes, const std::string& what, const std::string& crash_file) {
    prepare_in_flight(bytes, what, crash_file);
    alarm(kCaseTimeoutSeconds);
    try {
      fuzz_one(bytes, options_.backend, stats_);
      alarm(0);
      return true;
    } catch (const FuzzFailure& f) {
      alarm(0);
      ++failures_;
      FailureClass& c = classes_[signature(f)];
      if (c.count++ == 0) {
        c.first = "FAILED: " + f.plan() + ", " + what + ": " + f.what();
        std::printf("%s\n", c.first.c_str());
        if (!crash_file.empty()) {
          write_file(crash_file, bytes);
          std::printf("  bytes written to %s (replay: baracuda-fuzz %s%s)\n", crash_file.c_str(),
                      options_.backend == Backend::cuda ? "--backend cuda " : "", crash_file.c_str());
        }
        std::fflush(stdout);
      }
      return options_.keep_going;
    }
  }

  int finish(double seconds) const {
    print_table(seconds);
    if (failures_ == 0) return 0;
    std::printf("\n%lld failing cases in %zu classes:\n", static_cast<long long>(failures_), classes_.size());
    for (const auto& [sig, c] : classes_)
      std::printf("  %6lld x %s\n", static_cast<long long>(c.count), c.first.c_str());
    return 1;
  }

 private:
  static std::string codes(const std::map<StatusCode, int64_t>& counts) {
    std::string s;
    for (const auto& [code, n] : counts) s += " " + std::string(status_code_name(code)) + ":" + std::to_string(n);
    return s;
  }

  void print_table(double seconds) const {
    std::printf("\n%-26s %10s %10s %10s %8s %8s   %s\n", "plan", "rej.select", "rej.run", "ran", "overlap", "alias",
                "run rejections by code");
    const auto row = [](std::string_view name, const PlanCounts& c) {
      std::printf("%-26.*s %10lld %10lld %10lld %8lld %8lld  %s\n", static_cast<int>(name.size()), name.data(),
                  static_cast<long long>(c.select_rejections()), static_cast<long long>(c.run_rejections()),
                  static_cast<long long>(c.ran), static_cast<long long>(c.partial_overlaps),
                  static_cast<long long>(c.exact_aliases), codes(c.rejected_at_run).c_str());
    };
    for (std::string_view name : fuzzed_plan_names()) {
      const auto it = stats_.plans.find(name);
      row(name, it == stats_.plans.end() ? PlanCounts{} : it->second);
    }
    row("total", stats_.total);
    const int64_t cases = stats_.total.cases();
    std::printf("select rejections by code:%s\n", codes(stats_.total.rejected_at_select).c_str());
    std::printf("%lld cases in %.2f s (%.1f us per case)\n", static_cast<long long>(cases), seconds,
                cases ? seconds * 1e6 / static_cast<double>(cases) : 0.0);
  }

  const Options& options_;
  FuzzStats stats_;
  int64_t failures_ = 0;
  std::map<std::string, FailureClass> classes_;
};

std::vector<std::filesystem::path> replay_files(const std::vector<std::string>& inputs) {
  std::vector<std::filesystem::path> files;
  for (const std::string& input : inputs) {
    if (std::filesystem::is_directory(input)) {
      std::vector<std::filesystem::path> in_dir;
      for (const auto& e : std::filesystem::directory_iterator(input))
        if (e.is_regular_file()) in_dir.push_back(e.path());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (std::filesystem::is_regular_file(input)) {
      files.emplace_back(input);
    } else {
      usage("'" + input + "' is neither a file nor a directory");
    }
  }
  return files;
}

int run_main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // reports reach a log before a sanitizer ends the process
  if (options.backend == Backend::cuda && cuda_device_count() == 0) {
    std::printf("baracuda-fuzz: no CUDA device (%.*s); nothing to fuzz on the cuda backend\n",
                static_cast<int>(cuda_unavailable_reason().size()), cuda_unavailable_reason().data());
    return 0;
  }
  install_crash_hooks();
  Runner runner(options);
  const auto start = std::chrono::steady_clock::now();
  if (!options.inputs.empty()) {
    for (const std::filesystem::path& file : replay_files(options.inputs)) {
      std::ifstream in(file, std::ios::binary);
      const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      if (!runner.run(bytes, "replaying " + file.string(), "")) break;
    }
  } else {
    const std::string cases = options.only_case ? "case " + std::to_string(*options.only_case)
                                                : "cases " + std::to_string(options.first) + ".." +
                                                      std::to_string(options.first + options.runs - 1);
    std::printf("baracuda-fuzz: seed %llu, %s, %s\n", static_cast<unsigned long long>(options.seed), cases.c_str(),
                options.backend == Backend::cuda ? "cuda" : "cpu");
    const int64_t first = options.only_case.value_or(options.first);
    const int64_t end = first + (options.only_case ? 1 : options.runs);
    for (int64_t k = first; k < end; ++k) {
      const std::string what = "case " + std::to_string(k) + ", seed " + std::to_string(options.seed);
      if (!runner.run(case_bytes(options.seed, k, options.max_bytes), what, crash_file_name(options.seed, k))) break;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return runner.finish(seconds);
}

}  // namespace
}  // namespace baracuda::fuzz

int main(int argc, char** argv) { return baracuda::fuzz::run_main(argc, argv); }

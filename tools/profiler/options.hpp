#pragma once
// Command-line options of baracuda-profiler.
#include <optional>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"

namespace baracuda::profiler {

struct Options {
  std::vector<std::string> ops;    // empty: every registered op
  std::vector<DType> dtypes;       // empty: every dtype each op supports
  std::vector<Shape> shapes;       // empty: each op's standard shapes
  std::optional<Backend> backend;  // empty: CUDA where a GPU is, else CPU
  std::string variant;
  bool deterministic = false;
  bool serial = false;  // time each run alone (its latency, host enqueue included)
  int iterations = 0;
  int warmup = 0;
  uint64_t seed = 1;
  bool list = false;
  bool help = false;
  std::string json_path;
};

std::string usage();
// Parses argv[1..argc); an error names the option at fault.
Expected<Options> parse_options(int argc, const char* const* argv);
// "4096x1024" -> Shape{4096, 1024}; "scalar" -> rank 0.
Expected<Shape> parse_shape(const std::string& text);

}  // namespace baracuda::profiler

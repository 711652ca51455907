#include "profiler/options.hpp"

#include <charconv>
#include <cstdint>
#include <sstream>

namespace baracuda::profiler {
namespace {

Status bad(const std::string& what) { return Status::error(StatusCode::invalid_problem, what); }

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, sep);)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

Expected<int64_t> parse_int(const std::string& option, const std::string& text, int64_t lo, int64_t hi = INT64_MAX) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
    return bad(option + ": '" + text + "' is not an integer in [" + std::to_string(lo) + ", " +
               (hi == INT64_MAX ? std::string("2^63)") : std::to_string(hi) + "]"));
  return v;
}

}  // namespace

std::string usage() {
  return R"(usage: baracuda-profiler [options]
Runs every registered op's forward and backward cases, verifies each against a double-precision
reference, times it (median of many runs, inputs rotated past the L2 cache) and prints a table.

  --ops=LIST          ops to run, comma-separated (default: all; see --list)
  --dtypes=LIST       f32,f64,f16,bf16,i8,u8,i32,i64,bool (default: each op's dtypes)
  --shapes=LIST       shapes like 16384x4096,1000 (default: each op's standard shapes)
  --backend=cpu|cuda  (default: cuda where a GPU is, else cpu)
  --variant=NAME      force a kernel variant (see --list)
  --deterministic     require deterministic kernels
  --iterations=N      timed runs per case (default: 100 on cuda, 10 on cpu)
  --warmup=N          untimed runs first (default: 10 on cuda, 2 on cpu)
  --serial            cuda: wait for each timed run before enqueuing the next, so a time is a call's
                      latency, host enqueue included (default: runs queued back to back, each between
                      its own events: the GPU's time, as triton.testing.do_bench)
  --seed=N            seed of the random inputs (default: 1)
  --json=FILE         also write the results as JSON (with --list: the ops, their PyTorch peers and SKUs)
  --list              print every op (or those of --ops), plan SKU and precision guarantee, then exit
  --help              this text
Exit status: 0 when every case verified, 1 when any failed, 2 for bad options.
)";
}

Expected<Shape> parse_shape(const std::string& text) {
  if (text == "scalar") return Shape{};
  const std::vector<std::string> dims = split(text, 'x');
  if (dims.empty() || dims.size() > static_cast<size_t>(kMaxRank))
    return bad("--shapes: '" + text + "' must have 1 to 8 sizes joined by 'x'");
  Shape shape;
  shape.rank = static_cast<int>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    Expected<int64_t> v = parse_int("--shapes", dims[d], 0);
    if (!v) return v.status();
    shape.dims[d] = *v;
  }
  return shape;
}

Expected<Options> parse_options(int argc, const char* const* argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    const bool takes_value = arg == "--ops" || arg == "--dtypes" || arg == "--shapes" || arg == "--backend" ||
                             arg == "--variant" || arg == "--iterations" || arg == "--warmup" || arg == "--seed" ||
                             arg == "--json";
    if (takes_value && eq == std::string::npos) {
      if (i + 1 >= argc) return bad(arg + ": needs a value");
      value = argv[++i];
    } else if (!takes_value && eq != std::string::npos) {
      return bad(arg + ": takes no value");
    }
    if (arg == "--ops") {
      o.ops = split(value, ',');
    } else if (arg == "--dtypes") {
      for (const std::string& name : split(value, ',')) {
        bool found = false;
        for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8, DType::u8, DType::i32, DType::i64,
                        DType::boolean}) {
          if (name == dtype_name(d)) {
            o.dtypes.push_back(d);
            found = true;
          }
        }
        if (!found) return bad("--dtypes: '" + name + "' is not a dtype (f32, f64, f16, bf16, i8, u8, i32, i64, bool)");
      }
    } else if (arg == "--shapes") {
      for (const std::string& text : split(value, ',')) {
        Expected<Shape> s = parse_shape(text);
        if (!s) return s.status();
        o.shapes.push_back(*s);
      }
    } else if (arg == "--backend") {
      if (value == "cpu")
        o.backend = Backend::cpu;
      else if (value == "cuda")
        o.backend = Backend::cuda;
      else
        return bad("--backend: '" + value + "' is not cpu or cuda");
    } else if (arg == "--variant") {
      o.variant = value;
    } else if (arg == "--iterations" || arg == "--warmup" || arg == "--seed") {
      // (timed runs each hold a pair of events: a million is far past any use)
      Expected<int64_t> v = parse_int(arg, value, arg == "--iterations" ? 1 : 0, arg == "--seed" ? INT64_MAX : 1000000);
      if (!v) return v.status();
      if (arg == "--iterations")
        o.iterations = static_cast<int>(*v);
      else if (arg == "--warmup")
        o.warmup = static_cast<int>(*v);
      else
        o.seed = static_cast<uint64_t>(*v);
    } else if (arg == "--json") {
      o.json_path = value;
    } else if (arg == "--deterministic") {
      o.deterministic = true;
    } else if (arg == "--serial") {
      o.serial = true;
    } else if (arg == "--list") {
      o.list = true;
    } else if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else {
      return bad("unknown option '" + arg + "'");
    }
  }
  return o;
}

}  // namespace baracuda::profiler

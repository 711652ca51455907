// baracuda-profiler: verify and time every registered plan, and print the table.
#include <algorithm>
#include <fstream>
#include <functional>
#include <iostream>

#include "profiler/options.hpp"
#include "profiler/profiler.hpp"
#include "profiler/report.hpp"

using namespace baracuda;
using namespace baracuda::profiler;

namespace {

int fail_usage(const std::string& message) {
  std::cerr << "baracuda-profiler: " << message << "\n\n" << usage();
  return 2;
}

bool contains(const std::vector<DType>& v, DType d) { return std::find(v.begin(), v.end(), d) != v.end(); }

void print_list(const std::vector<const OpEntry*>& ops, const Stream& stream) {
  std::cout << "ops and plan SKUs on " << backend_name(stream.backend()) << ":\n";
  for (const OpEntry* op : ops) {
    std::cout << op->name << "  (" << op->family << "; compared with " << op->torch << ")\n";
    for (DType d : op->dtypes)
      for (const KernelSku& sku : op->skus(stream, d))
        std::cout << "  " << sku.to_string() << "  [" << sku.precision.to_string() << "]\n";
  }
}

bool write_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
  std::ofstream out(path);
  write(out);
  if (!out) std::cerr << "baracuda-profiler: could not write " << path << "\n";
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  Expected<Options> parsed = parse_options(argc, argv);
  if (!parsed) return fail_usage(parsed.status().message());
  const Options& o = *parsed;
  if (o.help) {
    std::cout << usage();
    return 0;
  }
  const Backend backend = o.backend.value_or(cuda_device_count() > 0 ? Backend::cuda : Backend::cpu);
  if (backend == Backend::cuda && cuda_device_count() == 0)
    return fail_usage("--backend=cuda: no CUDA device (" + std::string(cuda_unavailable_reason()) + ")");
  const Stream stream = backend == Backend::cuda ? Stream::cuda() : Stream::host();
  std::vector<const OpEntry*> ops;
  for (const OpEntry& op : registered_ops())
    if (o.ops.empty() || std::find(o.ops.begin(), o.ops.end(), op.name) != o.ops.end()) ops.push_back(&op);
  for (const std::string& name : o.ops) {
    bool known = false;
    for (const OpEntry& op : registered_ops()) known = known || op.name == name;
    if (!known) return fail_usage("--ops: unknown op '" + name + "' (see --list)");
  }
  if (o.list) {
    print_list(ops, stream);
    if (o.json_path.empty()) return 0;
    return write_file(o.json_path, [&](std::ostream& out) { write_list_json(out, ops, stream); }) ? 0 : 1;
  }

  Report report;
  report.backend = backend;
  report.device = device_name(stream);
  const size_t copy_size = backend == Backend::cuda ? size_t{1} << 30 : size_t{256} << 20;
  Expected<double> copy = measure_copy_gbps(stream, copy_size, backend == Backend::cuda ? 50 : 5, o.serial);
  if (!copy) {
    std::cerr << "baracuda-profiler: copy bandwidth: " << copy.status().to_string() << "\n";
    return 1;
  }
  report.copy_gbps = *copy;
  report.serial = o.serial;

  struct Planned {
    const OpEntry* op;
    DType dtype;
    Shape shape;
  };
  std::vector<Planned> planned;
  for (const OpEntry* op : ops)
    for (DType d : op->dtypes)
      if (o.dtypes.empty() || contains(o.dtypes, d))
        for (const Shape& s : o.shapes.empty() ? op->standard_shapes(backend) : o.shapes) planned.push_back({op, d, s});

  RunSettings settings;
  settings.iterations = o.iterations;
  settings.warmup = o.warmup;
  settings.serial = o.serial;
  for (size_t i = 0; i < planned.size(); ++i) {
    const Planned& p = planned[i];
    std::cerr << "[" << i + 1 << "/" << planned.size() << "] " << p.op->name << " " << dtype_name(p.dtype) << " "
              << p.shape.to_string() << "\n";
    CaseConfig config;
    config.stream = stream;
    config.dtype = p.dtype;
    config.shape = p.shape;
    config.seed = o.seed + i;
    config.preference.variant = o.variant;
    config.preference.determinism = o.deterministic ? Determinism::required : Determinism::any;
    std::unique_ptr<ProfilerCase> c = p.op->make();
    report.results.push_back(run_case(*p.op, *c, config, settings, report.copy_gbps));
  }
  print_table(std::cout, report);
  if (!o.json_path.empty() && !write_file(o.json_path, [&](std::ostream& out) { write_json(out, report); })) return 1;
  return all_passed(report) ? 0 : 1;
}

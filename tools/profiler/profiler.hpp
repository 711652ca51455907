#pragma once
// baracuda-profiler's core: how an op family describes its cases, and how a case is verified and
// timed. Families register their ops from their own files (tools/profiler/cases/), so adding an op
// never means editing a central switch.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"

namespace baracuda::profiler {

struct CaseConfig {
  Stream stream = Stream::host();
  DType dtype = DType::f32;
  Shape shape;
  PlanPreference preference;
  uint64_t seed = 1;
};

// Result of comparing an output with its reference.
struct Verification {
  bool passed = false;
  double max_error = 0;
  double tolerance = 0;
  int64_t checked = 0;
  int64_t total = 0;  // elements the output has (checked < total means sampled)
  std::string note;   // why it failed, or what was sampled
};

// Compares up to `max_checks` elements spread evenly over [0, total), always including the last.
// The error is |got - want| / (1 + scale), where scale is |want| unless `scale` is given (a sum is
// judged against the sum of its terms' magnitudes); want(i) is called before scale(i).
Verification verify_sampled(int64_t total, int64_t max_checks, double tolerance,
                            const std::function<double(int64_t)>& got, const std::function<double(int64_t)>& want,
                            const std::function<double(int64_t)>& scale = nullptr);
// Combines the verifications of several outputs: passes when all pass, reports the worst error.
Verification combine(const std::vector<Verification>& parts);

// One op at one dtype and shape, set up on one backend. `sets` copies of its inputs and outputs
// are rotated through when timing so that the working set exceeds the L2 cache.
class ProfilerCase {
 public:
  virtual ~ProfilerCase() = default;
  virtual Status setup(const CaseConfig& config, int sets) = 0;
  virtual KernelSku sku() const = 0;
  virtual Status run(int set) = 0;    // enqueue one run on input set `set`
  virtual Verification verify() = 0;  // after run(0) has completed
  // The fewest bytes the op must move for this dtype and shape (each input read once, each output
  // written once); known before setup, so the rotation can be sized from it.
  virtual double bytes_moved(const CaseConfig& config) const = 0;
};

struct OpEntry {
  std::string name;    // e.g. "lerp_backward"
  std::string family;  // e.g. "binary_param"
  std::string torch;   // what bench/compare_torch.py times against, for --list
  std::vector<DType> dtypes;
  // Standard shapes; the first is the large one the suite times on the GPU.
  std::function<std::vector<Shape>(Backend)> standard_shapes;
  std::function<std::unique_ptr<ProfilerCase>()> make;
  // Every SKU the op's plan can run on this stream and dtype.
  std::function<std::vector<KernelSku>(const Stream&, DType)> skus;
};

// Registration from a family's file: static bool registered = register_op({...});
bool register_op(OpEntry entry);
const std::vector<OpEntry>& registered_ops();

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  int iterations = 0;
};

struct CaseResult {
  std::string op;
  std::string torch;  // the op's PyTorch peer (compare_torch.py's builder key)
  KernelSku sku;
  DType dtype = DType::f32;
  Shape shape;
  Verification verification;
  Timing timing;
  double bytes = 0;
  double gbps = 0;
  double copy_fraction = 0;
  Status status;  // setup or run failure
};

struct RunSettings {
  int iterations = 0;      // 0: 100 on CUDA, 10 on CPU
  int warmup = 0;          // 0: 10 on CUDA, 2 on CPU
  size_t cache_bytes = 0;  // working set to exceed by rotation (0: 3x the device's L2, 64 MiB on CPU)
  bool serial = false;     // CUDA: wait for each run before the next (its latency); else queued (GPU time)
};

// Sets the case up, runs and verifies it once, then times it (warm-up, median of many runs,
// inputs rotated). copy_gbps is the copy bandwidth (read + write) to compare against.
CaseResult run_case(const OpEntry& op, ProfilerCase& c, const CaseConfig& config, const RunSettings& settings,
                    double copy_gbps);

// Device-to-device (or host memcpy) bandwidth, bytes read plus written per second, in GB/s.
Expected<double> measure_copy_gbps(const Stream& stream, size_t bytes, int iterations, bool serial);
// The device's L2 size (0 on the CPU) and a name for the report.
size_t l2_bytes(const Stream& stream);
std::string device_name(const Stream& stream);

}  // namespace baracuda::profiler

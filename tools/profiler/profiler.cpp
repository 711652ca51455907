#include "profiler/profiler.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "harness/buffer.hpp"

#if BARACUDA_HAS_CUDA
#include <cuda_runtime.h>
#endif

namespace baracuda::profiler {

Verification verify_sampled(int64_t total, int64_t max_checks, double tolerance,
                            const std::function<double(int64_t)>& got, const std::function<double(int64_t)>& want,
                            const std::function<double(int64_t)>& scale) {
  Verification v;
  v.tolerance = tolerance;
  v.total = total;
  v.passed = true;
  if (total == 0) return v;
  const int64_t step = std::max<int64_t>(1, total / std::max<int64_t>(1, max_checks));
  auto check = [&](int64_t i) {
    const double g = got(i), w = want(i);
    // Equal values match exactly (equal infinities too: an empty segment's max is -inf).
    const double err = g == w ? 0.0 : std::fabs(g - w) / (1.0 + (scale ? scale(i) : std::fabs(w)));
    ++v.checked;
    if (std::isnan(g) || std::isnan(err) || err > tolerance) {
      if (v.passed)
        v.note = "element " + std::to_string(i) + ": got " + std::to_string(g) + ", want " + std::to_string(w);
      v.passed = false;
      v.max_error = std::isnan(err) ? INFINITY : std::max(v.max_error, err);
      return;
    }
    v.max_error = std::max(v.max_error, err);
  };
  for (int64_t i = 0; i < total; i += step) check(i);
  if ((total - 1) % step != 0) check(total - 1);
  if (v.passed && v.checked < total) v.note = "sampled " + std::to_string(v.checked) + " of " + std::to_string(total);
  return v;
}

Verification combine(const std::vector<Verification>& parts) {
  Verification all;
  all.passed = true;
  for (const Verification& p : parts) {
    if (!p.passed && all.passed) all.note = p.note;
    all.passed = all.passed && p.passed;
    all.max_error = std::max(all.max_error, p.max_error);
    all.tolerance = std::max(all.tolerance, p.tolerance);
    all.checked += p.checked;
    all.total += p.total;
  }
  if (all.passed && all.checked < all.total)
    all.note = "sampled " + std::to_string(all.checked) + " of " + std::to_string(all.total);
  return all;
}

namespace {
std::vector<OpEntry>& registry() {
  static std::vector<OpEntry> ops;
  return ops;
}

// Each run's time: on the CPU by a steady clock around it; on CUDA by a pair of events around it on
// the stream. Queued (the default), the runs are enqueued back to back and the host waits once at the
// end, so a run's events time the GPU's work alone while the host enqueues the next run (as
// triton.testing.do_bench; a run shorter than its host enqueue still shows that time). Serial, the
// host waits after every run: a call's latency, its host enqueue included.
Expected<std::vector<double>> run_timed([[maybe_unused]] const Stream& stream, int iterations, bool serial,
                                        const std::function<Status(int)>& fn) {
  std::vector<double> ms;
#if BARACUDA_HAS_CUDA
  if (stream.backend() == Backend::cuda) {
    std::vector<cudaEvent_t> events(2 * static_cast<size_t>(iterations), nullptr);
    auto destroy = [&] {
      for (cudaEvent_t e : events)
        if (e) cudaEventDestroy(e);
    };
    auto failed = [&](const char* what, cudaError_t err) {
      destroy();
      return Status::error(StatusCode::backend_error, std::string(what) + ": " + cudaGetErrorName(err));
    };
    for (cudaEvent_t& e : events)
      if (cudaError_t err = cudaEventCreate(&e); err != cudaSuccess) return failed("cudaEventCreate", err);
    for (int i = 0; i < iterations; ++i) {
      cudaEventRecord(events[2 * i], stream.cuda_stream());
      if (Status s = fn(i); !s) {
        destroy();
        return s;
      }
      cudaEventRecord(events[2 * i + 1], stream.cuda_stream());
      if (serial)
        if (cudaError_t err = cudaEventSynchronize(events[2 * i + 1]); err != cudaSuccess)
          return failed("cudaEventSynchronize", err);
    }
    for (int i = 0; i < iterations; ++i) {
      if (cudaError_t err = cudaEventSynchronize(events[2 * i + 1]); err != cudaSuccess)
        return failed("cudaEventSynchronize", err);
      float t = 0;
      cudaEventElapsedTime(&t, events[2 * i], events[2 * i + 1]);
      ms.push_back(t);
    }
    destroy();
    return ms;
  }
#endif
  (void)serial;
  for (int i = 0; i < iterations; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (Status s = fn(i); !s) return s;
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

Expected<Timing> time_repeated(const Stream& stream, int warmup, int iterations, bool serial,
                               const std::function<Status(int)>& fn) {
  for (int i = 0; i < warmup; ++i)
    if (Status s = fn(i); !s) return s;
  if (!stream.synchronize()) return Status::error(StatusCode::backend_error, "stream synchronize failed");
  Expected<std::vector<double>> runs = run_timed(stream, iterations, serial, fn);
  if (!runs) return runs.status();
  std::vector<double>& ms = *runs;
  std::sort(ms.begin(), ms.end());
  Timing timing;
  timing.iterations = iterations;
  timing.median_ms = ms.empty() ? 0 : ms[ms.size() / 2];
  timing.min_ms = ms.empty() ? 0 : ms.front();
  return timing;
}
}  // namespace

bool register_op(OpEntry entry) {
  registry().push_back(std::move(entry));
  return true;
}

const std::vector<OpEntry>& registered_ops() { return registry(); }

CaseResult run_case(const OpEntry& op, ProfilerCase& c, const CaseConfig& config, const RunSettings& settings,
                    double copy_gbps) {
  CaseResult r;
  r.op = op.name;
  r.torch = op.torch;
  r.dtype = config.dtype;
  r.shape = config.shape;
  const bool gpu = config.stream.backend() == Backend::cuda;
  // Enough input sets that one pass over them exceeds the cache.
  const size_t cache = settings.cache_bytes ? settings.cache_bytes : gpu ? 3 * l2_bytes(config.stream) : 64u << 20;
  r.bytes = c.bytes_moved(config);
  const int sets =
      r.bytes > 0 ? static_cast<int>(std::clamp<double>(std::ceil(static_cast<double>(cache) / r.bytes), 2, 64)) : 2;
  if (Status s = c.setup(config, sets); !s) {
    r.status = s;
    return r;
  }
  r.sku = c.sku();
  if (Status s = c.run(0); !s) {
    r.status = s;
    return r;
  }
  if (!config.stream.synchronize()) {
    r.status = Status::error(StatusCode::backend_error, "stream synchronize failed after the first run");
    return r;
  }
  r.verification = c.verify();
  const int iterations = settings.iterations ? settings.iterations : (gpu ? 100 : 10);
  const int warmup = settings.warmup ? settings.warmup : (gpu ? 10 : 2);
  Expected<Timing> t =
      time_repeated(config.stream, warmup, iterations, settings.serial, [&](int i) { return c.run(i % sets); });
  if (!t) {
    r.status = t.status();
    return r;
  }
  r.timing = *t;
  r.gbps = r.timing.median_ms > 0 ? r.bytes / (r.timing.median_ms * 1e6) : 0;
  r.copy_fraction = copy_gbps > 0 ? r.gbps / copy_gbps : 0;
  return r;
}

Expected<double> measure_copy_gbps(const Stream& stream, size_t bytes, int iterations, bool serial) {
  Expected<harness::Buffer> src = harness::Buffer::allocate(stream.backend(), bytes, std::max(0, stream.device()));
  if (!src) return src.status();
  Expected<harness::Buffer> dst = harness::Buffer::allocate(stream.backend(), bytes, std::max(0, stream.device()));
  if (!dst) return dst.status();
  // Fresh non-zero bytes, so nothing about the data flatters the copy.
  std::vector<unsigned char> pattern(bytes);
  for (size_t i = 0; i < bytes; ++i) pattern[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
  if (Status s = src->upload(pattern.data(), bytes); !s) return s;
  Expected<Timing> t = time_repeated(stream, 3, iterations, serial,
                                     [&](int) { return harness::copy_bytes(stream, dst->data(), src->data(), bytes); });
  if (!t) return t.status();
  return 2.0 * static_cast<double>(bytes) / (t->median_ms * 1e6);
}

size_t l2_bytes([[maybe_unused]] const Stream& stream) {
#if BARACUDA_HAS_CUDA
  if (stream.backend() == Backend::cuda) {
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, stream.device());
    return static_cast<size_t>(l2);
  }
#endif
  return 0;
}

std::string device_name([[maybe_unused]] const Stream& stream) {
#if BARACUDA_HAS_CUDA
  if (stream.backend() == Backend::cuda) {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, stream.device());
    return prop.name;
  }
#endif
  return "CPU";
}

}  // namespace baracuda::profiler

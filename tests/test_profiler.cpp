// baracuda-profiler's option parsing, verification logic and case runner: a kernel that writes a
// wrong result must be reported as a failure.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "harness/buffer.hpp"
#include "profiler/options.hpp"
#include "profiler/profiler.hpp"
#include "profiler/report.hpp"
#include "support/backend.hpp"

namespace baracuda::profiler {
namespace {

Expected<Options> parse(std::vector<const char*> args) {
  args.insert(args.begin(), "baracuda-profiler");
  return parse_options(static_cast<int>(args.size()), args.data());
}

TEST(ProfilerOptions, ParsesEveryOption) {
  Expected<Options> o = parse({"--ops=lerp,lerp_backward", "--dtypes", "bf16,f32", "--shapes=16384x4096,1000",
                               "--backend=cpu", "--variant=strided", "--deterministic", "--serial", "--iterations=7",
                               "--warmup", "3", "--seed=9", "--json=out.json"});
  ASSERT_TRUE(o) << o.status().to_string();
  EXPECT_EQ(o->ops, (std::vector<std::string>{"lerp", "lerp_backward"}));
  EXPECT_EQ(o->dtypes, (std::vector<DType>{DType::bf16, DType::f32}));
  ASSERT_EQ(o->shapes.size(), 2u);
  EXPECT_EQ(o->shapes[0], (Shape{16384, 4096}));
  EXPECT_EQ(o->shapes[1], (Shape{1000}));
  EXPECT_EQ(o->backend, Backend::cpu);
  EXPECT_EQ(o->variant, "strided");
  EXPECT_TRUE(o->deterministic);
  EXPECT_TRUE(o->serial);
  EXPECT_FALSE(parse({})->serial);
  EXPECT_EQ(o->iterations, 7);
  EXPECT_EQ(o->warmup, 3);
  EXPECT_EQ(o->seed, 9u);
  EXPECT_EQ(o->json_path, "out.json");
  EXPECT_TRUE(parse({"--list"})->list);
  EXPECT_TRUE(parse({"--help"})->help);
  EXPECT_TRUE(parse({})->ops.empty());
}

TEST(ProfilerOptions, BadOptionsNameTheOption) {
  struct Case {
    std::vector<const char*> args;
    const char* names;
  };
  for (const Case& c :
       {Case{{"--frobnicate"}, "--frobnicate"}, Case{{"--dtypes=f8"}, "--dtypes"}, Case{{"--shapes=12xq"}, "--shapes"},
        Case{{"--shapes=1x2x3x4x5x6x7x8x9"}, "--shapes"}, Case{{"--backend=tpu"}, "--backend"},
        Case{{"--iterations=0"}, "--iterations"}, Case{{"--iterations"}, "--iterations"},
        Case{{"--iterations=3000000000"}, "--iterations"}, Case{{"--list=yes"}, "--list"}}) {
    Expected<Options> o = parse(c.args);
    ASSERT_FALSE(o) << c.args[0];
    EXPECT_NE(o.status().message().find(c.names), std::string::npos) << o.status().message();
  }
}

TEST(ProfilerVerification, PassesWithinToleranceAndFailsOutside) {
  auto want = [](int64_t i) { return std::sin(static_cast<double>(i)); };
  Verification ok = verify_sampled(
      1000, 1000, 1e-3, [&](int64_t i) { return want(i) + 1e-4; }, want);
  EXPECT_TRUE(ok.passed);
  EXPECT_EQ(ok.checked, 1000);
  EXPECT_NEAR(ok.max_error, 1e-4 / 1.0, 1e-4);
  Verification off_by_one = verify_sampled(
      1000, 1000, 1e-3, [&](int64_t i) { return want(i) + (i == 999 ? 0.5 : 0.0); }, want);
  EXPECT_FALSE(off_by_one.passed);
  EXPECT_NE(off_by_one.note.find("element 999"), std::string::npos);
  Verification nan = verify_sampled(
      10, 10, 1e-3, [&](int64_t i) { return i == 3 ? NAN : want(i); }, want);
  EXPECT_FALSE(nan.passed);
  // Sampling still checks the last element, where a tail bug would hide.
  Verification sampled = verify_sampled(
      1 << 20, 1000, 1e-3, [&](int64_t i) { return want(i) + (i == (1 << 20) - 1 ? 1.0 : 0.0); }, want);
  EXPECT_FALSE(sampled.passed);
  EXPECT_LT(sampled.checked, 1 << 20);
  EXPECT_FALSE(combine({ok, off_by_one}).passed);
  EXPECT_TRUE(combine({ok, ok}).passed);
}

// A case whose "kernel" writes a wrong value into one element.
class WrongKernelCase : public ProfilerCase {
 public:
  double bytes_moved(const CaseConfig& c) const override { return 8.0 * c.shape.numel(); }
  Status setup(const CaseConfig& c, int sets) override {
    n_ = c.shape.numel();
    sets_ = sets;
    out_.assign(static_cast<size_t>(n_), 0.0);
    return Status::ok();
  }
  KernelSku sku() const override {
    KernelSku k;
    k.op = "wrong";
    k.variant = "broken";
    return k;
  }
  Status run(int set) override {
    EXPECT_LT(set, sets_);
    for (int64_t i = 0; i < n_; ++i) out_[i] = 2.0 * static_cast<double>(i) + (i == n_ / 2 ? 1.0 : 0.0);
    return Status::ok();
  }
  Verification verify() override {
    return verify_sampled(
        n_, n_, 1e-6, [&](int64_t i) { return out_[i]; }, [](int64_t i) { return 2.0 * static_cast<double>(i); });
  }

 private:
  int64_t n_ = 0;
  int sets_ = 0;
  std::vector<double> out_;
};

TEST(ProfilerRunner, ReportsAWrongKernelAsAFailure) {
  OpEntry op;
  op.name = "wrong";
  WrongKernelCase c;
  CaseConfig config;
  config.shape = {1001};
  RunSettings settings;
  settings.iterations = 3;
  settings.warmup = 1;
  Report report;
  report.results.push_back(run_case(op, c, config, settings, 10.0));
  const CaseResult& r = report.results[0];
  EXPECT_TRUE(r.status.is_ok());
  EXPECT_FALSE(r.verification.passed);
  EXPECT_EQ(r.timing.iterations, 3);
  EXPECT_FALSE(all_passed(report));
  std::ostringstream table, json;
  print_table(table, report);
  write_json(json, report);
  EXPECT_NE(table.str().find("FAIL"), std::string::npos);
  EXPECT_NE(table.str().find("SOME CASES FAILED"), std::string::npos);
  EXPECT_NE(json.str().find("\"verified\": false"), std::string::npos);
}

TEST(ProfilerRunner, CopyBandwidthIsMeasured) {
  for (const bool serial : {false, true}) {
    Expected<double> gbps = measure_copy_gbps(Stream::host(), 8 << 20, 3, serial);
    ASSERT_TRUE(gbps) << gbps.status().to_string();
    EXPECT_GT(*gbps, 0.1);
  }
}

// Queued runs (each between its own events, the host waiting once at the end) and serial ones (the
// host waiting after each) both time every run of a large copy: near the same rate.
TEST(ProfilerRunner, CudaCopyBandwidthIsMeasuredQueuedAndSerial) {
  BARACUDA_SKIP_UNLESS_AVAILABLE(Backend::cuda);
  Expected<double> queued = measure_copy_gbps(Stream::cuda(), 64 << 20, 20, false);
  Expected<double> serial = measure_copy_gbps(Stream::cuda(), 64 << 20, 20, true);
  ASSERT_TRUE(queued) << queued.status().to_string();
  ASSERT_TRUE(serial) << serial.status().to_string();
  EXPECT_GT(*queued, 100.0);
  EXPECT_GT(*serial, 100.0);
  EXPECT_LT(*queued, 3 * *serial);
  EXPECT_LT(*serial, 3 * *queued);
}

}  // namespace
}  // namespace baracuda::profiler

#pragma once
// Every case runs on every backend present: tests are parametrized by (backend, dtype), and CUDA
// cases skip, with the reason, where no GPU is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>

#include "baracuda/baracuda.hpp"
#include "harness/data.hpp"

namespace baracuda::testing {

struct BackendDType {
  Backend backend;
  DType dtype;
};

inline std::string case_name(const ::testing::TestParamInfo<BackendDType>& info) {
  return std::string(backend_name(info.param.backend)) + "_" + std::string(dtype_name(info.param.dtype));
}

// Every backend at each of `dtypes`.
inline std::vector<BackendDType> cases_of(std::initializer_list<DType> dtypes) {
  std::vector<BackendDType> cases;
  for (Backend b : {Backend::cpu, Backend::cuda})
    for (DType d : dtypes) cases.push_back({b, d});
  return cases;
}
inline std::vector<BackendDType> all_float_cases() {
  return cases_of({DType::f32, DType::f64, DType::f16, DType::bf16});
}

// View specs for harness tensors: contiguous, explicitly strided (zero strides broadcast), or with
// the first element one element past a 16-byte boundary.
inline harness::TensorSpec contiguous(Shape shape) { return {shape, {}, false, 0}; }
inline harness::TensorSpec with_strides(Shape shape, Strides strides) { return {shape, strides, true, 0}; }
inline harness::TensorSpec misaligned(Shape shape) { return {shape, {}, false, 1}; }

inline Stream stream_for(Backend backend) { return backend == Backend::cuda ? Stream::cuda() : Stream::host(); }

// Empty when the backend can run here; otherwise why not.
inline std::string unavailable(Backend backend) {
  if (backend == Backend::cpu || cuda_device_count() > 0) return "";
  return "no CUDA device: " + std::string(cuda_unavailable_reason());
}

// Runs a bit-identity test makes of each call: 10, or BARACUDA_TEST_RUNS (2 to 10). The ci preset
// asks for 2: a memory error shows in the first run, and ten runs of every variant under ASan would
// cost it minutes; the GPU machine's runs keep ten.
inline int rerun_count() {
  const char* env = std::getenv("BARACUDA_TEST_RUNS");
  const int n = env ? std::atoi(env) : 10;
  return n < 2 ? 2 : n > 10 ? 10 : n;
}

#define BARACUDA_SKIP_UNLESS_AVAILABLE(backend)                                                         \
  do {                                                                                                  \
    if (std::string why = ::baracuda::testing::unavailable(backend); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

#define ASSERT_OK(expr)                                  \
  do {                                                   \
    const ::baracuda::Status status_ = (expr);           \
    ASSERT_TRUE(status_.is_ok()) << status_.to_string(); \
  } while (0)

#define EXPECT_OK(expr)                                  \
  do {                                                   \
    const ::baracuda::Status status_ = (expr);           \
    EXPECT_TRUE(status_.is_ok()) << status_.to_string(); \
  } while (0)

template <class T>
T unwrap(Expected<T> e) {
  if (!e) throw std::runtime_error(e.status().to_string());
  return std::move(*e);
}

// Fresh random data per case: a seed from the test's name and a counter.
inline std::mt19937_64 rng_for_test() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  static uint64_t counter = 0;
  return std::mt19937_64(std::hash<std::string>{}(std::string(info->test_suite_name()) + info->name()) + ++counter);
}

// A case on one (backend, dtype): skipped, with the reason, where the backend cannot run here;
// fresh random data from rng_ for every case.
class BackendDTypeTest : public ::testing::TestWithParam<BackendDType> {
 protected:
  void SetUp() override {
    BARACUDA_SKIP_UNLESS_AVAILABLE(GetParam().backend);
    rng_ = rng_for_test();
  }
  Backend backend() const { return GetParam().backend; }
  DType dtype() const { return GetParam().dtype; }
  Stream stream() const { return stream_for(backend()); }
  std::mt19937_64 rng_;
};

// Compares every element of `out` (downloaded) with ref(linear index); NaN (unwritten) fails.
inline ::testing::AssertionResult all_close(const harness::Tensor& out, const std::function<double(int64_t)>& ref,
                                            double tol) {
  const int64_t n = out.shape.numel();
  int64_t bad = 0;
  std::string first;
  for (int64_t i = 0; i < n; ++i) {
    const double got = out.at(i), want = ref(i);
    if (std::isnan(got) || std::fabs(got - want) > tol * (1.0 + std::fabs(want))) {
      if (bad++ < 3)
        first += " [" + std::to_string(i) + "] got " + std::to_string(got) + " want " + std::to_string(want) + ";";
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << n << " elements off (tol " << tol << "):" << first;
}

// The error has `code` and its message names the plan and the field.
inline ::testing::AssertionResult is_error(const Status& s, StatusCode code, const std::string& plan,
                                           const std::string& field) {
  if (s.is_ok()) return ::testing::AssertionFailure() << "expected " << status_code_name(code) << ", got ok";
  if (s.code() != code)
    return ::testing::AssertionFailure() << "expected " << status_code_name(code) << ", got " << s.to_string();
  if (s.message().find(plan) == std::string::npos || s.message().find(field) == std::string::npos)
    return ::testing::AssertionFailure() << "message does not name " << plan << " and " << field << ": " << s.message();
  return ::testing::AssertionSuccess();
}

}  // namespace baracuda::testing

#pragma once
// Size arithmetic that cannot wrap. Every element count, extent, byte size and workspace size the
// library derives from caller-supplied numbers is computed as a CheckedSize: an overflow (or a
// negative operand) poisons the result instead of wrapping, and the caller turns a poisoned or
// too-large result into an error naming the field (see kMaxElements / kMaxBytes in tensor.hpp).
#include "common/hd.hpp"
#include "common/portable.hpp"

namespace baracuda::detail {

// a / b rounded up, for a >= 0 and b > 0.
BARACUDA_HD int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }
// The least power of two >= n (1 for n <= 1).
inline int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

class CheckedSize {
 public:
  constexpr CheckedSize(int64_t value = 0) : value_(value), ok_(value >= 0) {}  // NOLINT: sizes convert
  static constexpr CheckedSize poisoned() {
    CheckedSize s;
    s.ok_ = false;
    return s;
  }

  constexpr CheckedSize operator*(CheckedSize other) const {
    int64_t r = 0;
    if (!ok_ || !other.ok_ || mul_overflows(value_, other.value_, &r)) return poisoned();
    return CheckedSize(r);
  }
  constexpr CheckedSize operator+(CheckedSize other) const {
    int64_t r = 0;
    if (!ok_ || !other.ok_ || add_overflows(value_, other.value_, &r)) return poisoned();
    return CheckedSize(r);
  }
  CheckedSize& operator*=(CheckedSize other) { return *this = *this * other; }
  CheckedSize& operator+=(CheckedSize other) { return *this = *this + other; }

  // Neither overflowed nor reached `limit`.
  constexpr bool below(int64_t limit) const { return ok_ && value_ < limit; }
  constexpr int64_t value() const { return value_; }  // meaningful only when below() something
  // The value, or the saturated maximum when it overflowed (for functions that cannot fail).
  constexpr int64_t saturated() const { return ok_ ? value_ : std::numeric_limits<int64_t>::max(); }

 private:
  // (of values >= 0; NVRTC has no __builtin_*_overflow)
  static constexpr bool mul_overflows(int64_t a, int64_t b, int64_t* r) {
#if defined(__CUDACC_RTC__)
    if (a != 0 && b > std::numeric_limits<int64_t>::max() / a) return true;
    *r = a * b;
    return false;
#else
    return __builtin_mul_overflow(a, b, r);
#endif
  }
  static constexpr bool add_overflows(int64_t a, int64_t b, int64_t* r) {
#if defined(__CUDACC_RTC__)
    if (a > std::numeric_limits<int64_t>::max() - b) return true;
    *r = a + b;
    return false;
#else
    return __builtin_add_overflow(a, b, r);
#endif
  }

  int64_t value_;
  bool ok_;
};

// a rounded up to a multiple of `to` (a power of two), poisoned on overflow.
constexpr CheckedSize round_up_to(CheckedSize a, int64_t to) {
  const CheckedSize r = a + CheckedSize(to - 1);
  return r.below(std::numeric_limits<int64_t>::max()) ? CheckedSize(r.value() & ~(to - 1)) : CheckedSize::poisoned();
}

}  // namespace baracuda::detail

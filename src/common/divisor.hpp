#pragma once
// Division of 32-bit unsigned numbers by a divisor fixed at launch, as a multiply-high, an add and a
// shift (Granlund & Montgomery 1994, "Division by invariant integers using multiplication"): a
// kernel that splits a flat index into a row and a column does so once per 16-byte vector, where a
// 32-bit `/` costs about twenty instructions and a 64-bit one a hundred.
#include "common/hd.hpp"
#include "common/portable.hpp"

namespace baracuda::detail {

class U32Divisor {
 public:
  U32Divisor() = default;
  // d >= 1. shift = ceil(log2 d); multiplier = floor(2^32 (2^shift - d) / d) + 1 < 2^32.
  explicit U32Divisor(uint32_t d) : divisor_(d) {
    while ((uint64_t{1} << shift_) < d) ++shift_;
    multiplier_ = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift_) - d)) / d + 1);
  }
  BARACUDA_HD uint32_t divisor() const { return divisor_; }
  // floor(n / divisor) for every n < 2^32.
  BARACUDA_HD uint32_t quotient(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t high = __umulhi(n, multiplier_);
#else
    const uint32_t high = static_cast<uint32_t>((uint64_t{n} * multiplier_) >> 32);
#endif
    return static_cast<uint32_t>((uint64_t{high} + n) >> shift_);
  }

 private:
  uint32_t divisor_ = 1, multiplier_ = 1, shift_ = 0;
};

}  // namespace baracuda::detail

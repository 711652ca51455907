#pragma once
// FuzzInput: every decision of a fuzz case read from a byte string, as LLVM's FuzzedDataProvider
// does, so that the same bytes always make the same case (a crash file replays it). Reads go front
// to back; an integer takes only as many bytes as its range needs. When the bytes run out every read
// returns zeros, which means the lowest value of a range, the first option of a pick and no for a
// chance(): a short input is a valid, plain case, never undefined behaviour.
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <type_traits>

namespace baracuda::fuzz {

// splitmix64: the case bytes of a (seed, case number) pair, and the contents of a case's buffers
// (seeded from the case's bytes, so that a big buffer costs eight bytes of input).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) for n > 0 (the modulo bias does not matter here).
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

class FuzzInput {
 public:
  explicit FuzzInput(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t remaining() const { return bytes_.size() - position_; }

  // An integer in [lo, hi] (both included; lo <= hi); lo once the bytes have run out.
  template <std::integral T>
  T consume_int(T lo, T hi) {
    static_assert(!std::is_same_v<T, bool>, "consume_bool reads a bool");
    using U = std::make_unsigned_t<T>;
    // The range and the sum are done in the unsigned type: no signed overflow for any lo, hi.
    const uint64_t range = static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo));
    uint64_t value = 0;
    for (int shift = 0; shift < 64 && (range >> shift) != 0; shift += 8)
      value |= static_cast<uint64_t>(next_byte()) << shift;
    if (range != std::numeric_limits<uint64_t>::max()) value %= range + 1;
    return static_cast<T>(static_cast<U>(static_cast<U>(lo) + static_cast<U>(value)));
  }

  uint64_t consume_uint64() { return consume_int<uint64_t>(0, std::numeric_limits<uint64_t>::max()); }
  int64_t consume_int64() {
    return consume_int<int64_t>(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  }
  bool consume_bool() { return (next_byte() & 1) != 0; }

  // True with probability percent/100; false once the bytes have run out (so that a short input
  // takes the plain path: no mutation, no extra call).
  bool chance(int percent) { return consume_int<int>(0, 99) >= 100 - percent; }

  // The index of an option drawn with the given weights; the first option with a non-zero weight
  // once the bytes have run out (list the plain option first).
  size_t consume_weighted(std::initializer_list<int> weights) {
    int total = 0;
    for (int w : weights) total += w;
    int r = consume_int<int>(0, total - 1);
    size_t index = 0;
    for (int w : weights) {
      if (r < w) return index;
      r -= w;
      ++index;
    }
    return 0;  // unreachable: r < total
  }

  // One of `options` (non-empty); the first once the bytes have run out.
  template <class T>
  const T& pick(std::span<const T> options) {
    return options[consume_int<size_t>(0, options.size() - 1)];
  }
  template <class T, size_t N>
  const T& pick(const T (&options)[N]) {
    return pick(std::span<const T>(options));
  }

  // Up to max_length arbitrary bytes as a string (embedded zeros included).
  std::string consume_string(size_t max_length) {
    std::string s(consume_int<size_t>(0, max_length), '\0');
    for (char& c : s) c = static_cast<char>(next_byte());
    return s;
  }

 private:
  uint8_t next_byte() { return position_ < bytes_.size() ? bytes_[position_++] : 0; }

  std::span<const uint8_t> bytes_;
  size_t position_ = 0;
};

}  // namespace baracuda::fuzz

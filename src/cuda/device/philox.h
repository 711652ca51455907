#pragma once
// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): the
// library's one generator. Plain C++ that the host compiler and NVRTC both read, so the CPU and
// every GPU compute the same bits: a value is a pure function of (seed, offset + element index),
// whatever the backend, grid or strides.
namespace baracuda::device {

struct Philox4 {
  unsigned int v[4];
};

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define BARACUDA_PHILOX_FN __host__ __device__ __forceinline__
#else
#define BARACUDA_PHILOX_FN inline
#endif

BARACUDA_PHILOX_FN void philox_mulhilo(unsigned int a, unsigned int b, unsigned int& hi, unsigned int& lo) {
  const unsigned long long p = static_cast<unsigned long long>(a) * b;
  hi = static_cast<unsigned int>(p >> 32);
  lo = static_cast<unsigned int>(p);
}

// The block for counter (c0, c1, c2, c3) under key (k0, k1).
BARACUDA_PHILOX_FN Philox4 philox4x32_10(Philox4 c, unsigned int k0, unsigned int k1) {
  for (int round = 0; round < 10; ++round) {
    unsigned int hi0, lo0, hi1, lo1;
    philox_mulhilo(0xD2511F53u, c.v[0], hi0, lo0);
    philox_mulhilo(0xCD9E8D57u, c.v[2], hi1, lo1);
    c = {{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

// The 32 random bits of stream position `index` under `seed`: word index % 4 of the block at
// counter index / 4 (64 bits of it), key the seed's two halves.
BARACUDA_PHILOX_FN unsigned int philox_bits(unsigned long long seed, unsigned long long index) {
  const unsigned long long block = index >> 2;
  const Philox4 r = philox4x32_10({{static_cast<unsigned int>(block), static_cast<unsigned int>(block >> 32), 0u, 0u}},
                                  static_cast<unsigned int>(seed), static_cast<unsigned int>(seed >> 32));
  return r.v[index & 3];
}

// u in [0, 1) from 53 bits of two words.
BARACUDA_PHILOX_FN double philox_u53(unsigned int hi, unsigned int lo) {
  return (static_cast<double>(hi >> 5) * 67108864.0 + static_cast<double>(lo >> 6)) * 1.1102230246251565e-16;
}

// log(x) for x in [2^-53, 1] and cos(2 pi v) for v in [0, 1) from +, -, *, / alone, in one order:
// the same bits on every backend (the libraries' log and cos differ in their last bits). Both are
// within a few units of f64's last place, far below what the callers round to.
BARACUDA_PHILOX_FN double portable_log(double x) {
  int e = 0;
  while (x < 0.70710678118654752440) {  // x = m 2^e, m in [sqrt(1/2), sqrt(2)): exact doublings
    x *= 2.0;
    --e;
  }
  const double s = (x - 1.0) / (x + 1.0), s2 = s * s;  // log m = 2 atanh(s), |s| <= 0.1716
  double series = 1.0 / 25.0;
  for (int k = 23; k >= 1; k -= 2) series = 1.0 / k + s2 * series;
  return e * 0.693147180559945286226764 + e * 2.319046813846299558e-17 + 2.0 * s * series;
}
BARACUDA_PHILOX_FN double portable_cos_2pi(double v) {
  const double t = v - (v >= 0.5 ? 1.0 : 0.0);  // [-1/2, 1/2): exact
  const double q = t < -0.375 ? -2.0 : t < -0.125 ? -1.0 : t < 0.125 ? 0.0 : t < 0.375 ? 1.0 : 2.0;
  const double x = 6.283185307179586232 * (t - 0.25 * q);  // [-pi/4, pi/4]
  const double x2 = x * x;
  double c = 1.0, sn = 1.0;  // Taylor, 11 and 10 terms
  for (int k = 22; k >= 2; k -= 2) c = 1.0 - x2 / (k * (k - 1)) * c;
  for (int k = 21; k >= 3; k -= 2) sn = 1.0 - x2 / (k * (k - 1)) * sn;
  sn *= x;
  const int quadrant = static_cast<int>(q) & 3;  // cos(x + q pi / 2)
  return quadrant == 0 ? c : quadrant == 1 ? -sn : quadrant == 2 ? -c : sn;
}

// The block at counter (index, 0, stream): the normal and exponential draws take one block an
// element, from streams of their own (1, 2), apart from the bits' (stream 0).
BARACUDA_PHILOX_FN Philox4 philox_block(unsigned long long seed, unsigned long long index, unsigned int stream) {
  return philox4x32_10({{static_cast<unsigned int>(index), static_cast<unsigned int>(index >> 32), 0u, stream}},
                       static_cast<unsigned int>(seed), static_cast<unsigned int>(seed >> 32));
}

// A standard normal (Box-Muller's cosine half): u1 in (0, 1], u2 in [0, 1), 53 bits each.
BARACUDA_PHILOX_FN double philox_normal(unsigned long long seed, unsigned long long index) {
  const Philox4 r = philox_block(seed, index, 1u);
  const double u1 = 1.0 - philox_u53(r.v[0], r.v[1]), u2 = philox_u53(r.v[2], r.v[3]);
  return sqrt(-2.0 * portable_log(u1)) * portable_cos_2pi(u2);
}

// A standard exponential: -log(u), u in (0, 1].
BARACUDA_PHILOX_FN double philox_exponential(unsigned long long seed, unsigned long long index) {
  const Philox4 r = philox_block(seed, index, 2u);
  return -portable_log(1.0 - philox_u53(r.v[0], r.v[1]));
}

#undef BARACUDA_PHILOX_FN

}  // namespace baracuda::device

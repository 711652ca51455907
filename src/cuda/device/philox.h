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

#undef BARACUDA_PHILOX_FN

}  // namespace baracuda::device

// Softmax forward lab (bench/NOTES.md, "Softmax held rows, third version"): kernels written for one
// shape each, beside a copy of the same bytes, to find what bounds the library's held rows before
// changing them: rows held in registers by a warp, a block or a cluster; the exp computed once or
// twice an element (FAST); plain loads or a cp.async prefetch of the next row (MODE 1). Not part of
// the library or its build. Build and run (sm_90):
//   nvcc -O3 -std=c++17 -arch=sm_90 bench/labs/softmax_lab.cu -o softmax_lab && ./softmax_lab
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lab.cuh"

template <class T>
__device__ __forceinline__ float tof(T v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ float tof(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <class T>
__device__ __forceinline__ T fromf(float v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 fromf(float v) {
  return __float2bfloat16_rn(v);
}

struct Stats {
  float max, sum;
};
__device__ __forceinline__ float term(float v, float m) { return v == -INFINITY ? 0.f : __expf(v - m); }
__device__ __forceinline__ Stats merge(Stats a, Stats b) {
  float m = fmaxf(a.max, b.max);
  return {m, a.sum * term(a.max, m) + b.sum * term(b.max, m)};
}
template <int W>
__device__ __forceinline__ Stats warp_reduce(Stats s) {
#pragma unroll
  for (int o = W / 2; o > 0; o /= 2) {
    Stats t{__shfl_xor_sync(~0u, s.max, o), __shfl_xor_sync(~0u, s.sum, o)};
    s = merge(s, t);
  }
  return s;
}

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
constexpr float kLog2e = 1.4426950408889634f;
// FAST: exps once (v becomes exp(x - local max)), four accumulators; the writer then scales.
template <bool FAST, int N>
__device__ __forceinline__ Stats local_stats(float (&v)[N]) {
  if (!FAST) {
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < N; ++i) m = fmaxf(m, v[i]);
    float s = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) s += term(v[i], m);
    return {m, s};
  }
  constexpr int K = N >= 4 ? 4 : N;
  float mk[K];
#pragma unroll
  for (int k = 0; k < K; ++k) mk[k] = v[k];
#pragma unroll
  for (int i = K; i < N; ++i) mk[i % K] = fmaxf(mk[i % K], v[i]);
  float m = mk[0];
#pragma unroll
  for (int k = 1; k < K; ++k) m = fmaxf(m, mk[k]);
  const float base = m == -INFINITY ? 0.f : m;
  float sk[K];
#pragma unroll
  for (int k = 0; k < K; ++k) sk[k] = 0.f;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    v[i] = ex2((v[i] - base) * kLog2e);
    sk[i % K] += v[i];
  }
  float s = sk[0];
#pragma unroll
  for (int k = 1; k < K; ++k) s += sk[k];
  return {m, s};
}
// Output scale: FAST multiplies the held exps; else the writer computes term(x, M) * scale.
template <bool FAST>
__device__ __forceinline__ float out_scale(Stats local, Stats total) {
  if (!FAST) return 1.f / total.sum;
  return (local.max == -INFINITY ? 0.f : ex2((local.max - total.max) * kLog2e)) / total.sum;
}
template <bool FAST>
__device__ __forceinline__ float out_value(float v, float M, float scale) {
  return FAST ? v * scale : term(v, M) * scale;
}
// two-step: max reduce, then sum reduce (no exps in the tree)
template <int W>
__device__ __forceinline__ float warp_max(float m) {
#pragma unroll
  for (int o = W / 2; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(~0u, m, o));
  return m;
}
template <int W>
__device__ __forceinline__ float warp_sum(float m) {
#pragma unroll
  for (int o = W / 2; o > 0; o /= 2) m += __shfl_xor_sync(~0u, m, o);
  return m;
}

__device__ __forceinline__ void cp_async16(void* smem, const void* g, bool pred) {
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  int n = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(g), "r"(n));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// MODE 0: plain loads (library's current design). MODE 1: cp.async prefetch of the next row into smem.
// LANES threads per row, C 16-byte chunks per thread. TWO: max then sum reductions (no merges).
template <class T, int LANES, int C, int MODE, int MINB, bool TWO, bool FAST = false>
__global__ void __launch_bounds__(128, MINB)
    warp_rows(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t len) {
  constexpr int V = 16 / sizeof(T);
  constexpr int N = C * V;
  extern __shared__ uint4 stage[];  // [C][blockDim]
  const int rank = threadIdx.x % LANES;
  const int rpb = blockDim.x / LANES;
  int64_t row = int64_t(blockIdx.x) * rpb + threadIdx.x / LANES;
  const int64_t step = int64_t(gridDim.x) * rpb;
  auto issue = [&](int64_t r) {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      int64_t p = (int64_t(c) * LANES + rank) * V;
      bool ok = r < rows && p < len;
      cp_async16(&stage[c * blockDim.x + threadIdx.x], ok ? x + r * len + p : x, ok);
    }
    cp_commit();
  };
  if (MODE == 1) issue(row);
  // loop while any lane of the warp has rows: all shuffle.
  for (int64_t first = row - threadIdx.x / LANES; first < rows; first += step, row += step) {
    float v[N];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      int64_t p = (int64_t(c) * LANES + rank) * V;
      uint4 raw;
      if (MODE == 1) {
        if (c == 0) cp_wait_all();
        raw = stage[c * blockDim.x + threadIdx.x];
      } else {
        raw = (row < rows && p < len) ? *reinterpret_cast<const uint4*>(x + row * len + p) : make_uint4(0, 0, 0, 0);
      }
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int j = 0; j < V; ++j) v[c * V + j] = (row < rows && p < len) ? tof(e[j]) : -INFINITY;
    }
    if (FAST) {
      Stats local = local_stats<true>(v);
      if (MODE == 1) issue(row + step);
      Stats tot = warp_reduce<LANES>(local);
      const float sc = out_scale<true>(local, tot);
      if (row < rows) {
#pragma unroll
        for (int c = 0; c < C; ++c) {
          int64_t p = (int64_t(c) * LANES + rank) * V;
          if (p < len) {
            uint4 raw;
            T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
            for (int j = 0; j < V; ++j) e[j] = fromf<T>(v[c * V + j] * sc);
            *reinterpret_cast<uint4*>(y + row * len + p) = raw;
          }
        }
      }
      continue;
    }
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < N; ++i) m = fmaxf(m, v[i]);
    if (MODE == 1) issue(row + step);
    float inv, mx;
    if (TWO) {
      mx = warp_max<LANES>(m);
      float s = 0;
#pragma unroll
      for (int i = 0; i < N; ++i) s += term(v[i], mx);
      s = warp_sum<LANES>(s);
      inv = 1.f / s;
    } else {
      float s = 0;
#pragma unroll
      for (int i = 0; i < N; ++i) s += term(v[i], m);
      Stats st = warp_reduce<LANES>(Stats{m, s});
      mx = st.max;
      inv = 1.f / st.sum;
    }
    if (row < rows) {
#pragma unroll
      for (int c = 0; c < C; ++c) {
        int64_t p = (int64_t(c) * LANES + rank) * V;
        if (p < len) {
          uint4 raw;
          T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
          for (int j = 0; j < V; ++j) e[j] = fromf<T>(term(v[c * V + j], mx) * inv);
          *reinterpret_cast<uint4*>(y + row * len + p) = raw;
        }
      }
    }
  }
  if (MODE == 1) cp_wait_all();
}

// Block per row, THREADS threads, C chunks per thread; MODE as above.
template <class T, int THREADS, int C, int MODE, bool FAST = false>
__global__ void __launch_bounds__(THREADS, 1)
    block_rows(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t len) {
  constexpr int V = 16 / sizeof(T);
  constexpr int N = C * V;
  extern __shared__ uint4 stage[];
  __shared__ float red[2][32];
  const int rank = threadIdx.x, lane = rank % 32, warp = rank / 32;
  auto issue = [&](int64_t r) {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      int64_t p = (int64_t(c) * THREADS + rank) * V;
      bool ok = r < rows && p < len;
      cp_async16(&stage[c * THREADS + rank], ok ? x + r * len + p : x, ok);
    }
    cp_commit();
  };
  int64_t row = blockIdx.x;
  if (MODE == 1) issue(row);
  for (; row < rows; row += gridDim.x) {
    float v[N];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      int64_t p = (int64_t(c) * THREADS + rank) * V;
      uint4 raw;
      if (MODE == 1) {
        if (c == 0) cp_wait_all();
        raw = stage[c * THREADS + rank];
      } else {
        raw = p < len ? *reinterpret_cast<const uint4*>(x + row * len + p) : make_uint4(0, 0, 0, 0);
      }
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int j = 0; j < V; ++j) v[c * V + j] = p < len ? tof(e[j]) : -INFINITY;
    }
    if (FAST) {
      Stats local = local_stats<true>(v);
      if (MODE == 1) issue(row + gridDim.x);
      Stats st = warp_reduce<32>(local);
      __shared__ Stats sred[32];
      if (lane == 0) sred[warp] = st;
      __syncthreads();
      Stats tot = warp_reduce<32>(lane < THREADS / 32 ? sred[lane] : Stats{-INFINITY, 0.f});
      __syncthreads();
      const float sc = out_scale<true>(local, tot);
#pragma unroll
      for (int c = 0; c < C; ++c) {
        int64_t p = (int64_t(c) * THREADS + rank) * V;
        if (p < len) {
          uint4 raw;
          T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
          for (int j = 0; j < V; ++j) e[j] = fromf<T>(v[c * V + j] * sc);
          *reinterpret_cast<uint4*>(y + row * len + p) = raw;
        }
      }
      continue;
    }
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < N; ++i) m = fmaxf(m, v[i]);
    if (MODE == 1) issue(row + gridDim.x);
    m = warp_max<32>(m);
    if (lane == 0) red[0][warp] = m;
    __syncthreads();
    m = warp_max<32>(lane < THREADS / 32 ? red[0][lane] : -INFINITY);
    float s = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) s += term(v[i], m);
    s = warp_sum<32>(s);
    if (lane == 0) red[1][warp] = s;
    __syncthreads();
    s = warp_sum<32>(lane < THREADS / 32 ? red[1][lane] : 0.f);
    const float inv = 1.f / s;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      int64_t p = (int64_t(c) * THREADS + rank) * V;
      if (p < len) {
        uint4 raw;
        T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
        for (int j = 0; j < V; ++j) e[j] = fromf<T>(term(v[c * V + j], m) * inv);
        *reinterpret_cast<uint4*>(y + row * len + p) = raw;
      }
    }
  }
  if (MODE == 1) cp_wait_all();
}

#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// A row held by a cluster of CL blocks of THREADS threads, C chunks a thread.
template <class T, int CL, int THREADS, int C, int MODE, bool FAST = false, int MINB = 1>
__global__ void __launch_bounds__(THREADS, MINB)
    cluster_rows(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t len) {
  constexpr int V = 16 / sizeof(T);
  constexpr int N = C * V;
  constexpr int G = CL * THREADS;
  extern __shared__ uint4 stage[];
  __shared__ Stats red[32];
  __shared__ Stats slots[2];
  cg::cluster_group cluster = cg::this_cluster();
  const int crank = (int)cluster.block_rank();
  const int rank = crank * THREADS + threadIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int64_t row = blockIdx.x / CL;
  const int64_t step = gridDim.x / CL;
  auto issue = [&](int64_t r) {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      int64_t p = (int64_t(c) * G + rank) * V;
      bool ok = r < rows && p < len;
      cp_async16(&stage[c * THREADS + threadIdx.x], ok ? x + r * len + p : x, ok);
    }
    cp_commit();
  };
  if (MODE == 1) issue(row);
  int parity = 0;
  for (; row < rows; row += step, parity ^= 1) {
    float v[N];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      int64_t p = (int64_t(c) * G + rank) * V;
      uint4 raw;
      if (MODE == 1) {
        if (c == 0) cp_wait_all();
        raw = stage[c * THREADS + threadIdx.x];
      } else {
        raw = p < len ? *reinterpret_cast<const uint4*>(x + row * len + p) : make_uint4(0, 0, 0, 0);
      }
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int j = 0; j < V; ++j) v[c * V + j] = p < len ? tof(e[j]) : -INFINITY;
    }
    Stats local;
    if (FAST) {
      local = local_stats<true>(v);
      if (MODE == 1) issue(row + step);
    } else {
      local = local_stats<false>(v);  // (issue after the max in the old form: here after both)
      if (MODE == 1) issue(row + step);
    }
    Stats st = warp_reduce<32>(local);
    if (lane == 0) red[warp] = st;
    __syncthreads();
    if (warp == 0) {
      st = warp_reduce<32>(lane < THREADS / 32 ? red[lane] : Stats{-INFINITY, 0.f});
      if (lane == 0) slots[parity] = st;
    }
    cluster.sync();
    Stats tot{-INFINITY, 0.f};
#pragma unroll
    for (int b = 0; b < CL; ++b) tot = merge(tot, *cluster.map_shared_rank(&slots[parity], b));
    const float sc = out_scale<FAST>(local, tot);
#pragma unroll
    for (int c = 0; c < C; ++c) {
      int64_t p = (int64_t(c) * G + rank) * V;
      if (p < len) {
        uint4 raw;
        T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
        for (int j = 0; j < V; ++j) e[j] = fromf<T>(out_value<FAST>(v[c * V + j], tot.max, sc));
        *reinterpret_cast<uint4*>(y + row * len + p) = raw;
      }
    }
  }
  if (MODE == 1) cp_wait_all();
  cluster.sync();  // no block leaves while another may read its slots
}

__global__ void copy16(const uint4* __restrict__ a, uint4* __restrict__ b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    b[i] = a[i];
}

template <class T>
__global__ void reference(const T* x, float* y, int64_t rows, int64_t len) {
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows; r += int64_t(gridDim.x) * blockDim.x) {
    double m = -INFINITY, s = 0;
    for (int64_t i = 0; i < len; ++i) m = fmax(m, (double)tof(x[r * len + i]));
    for (int64_t i = 0; i < len; ++i) s += exp((double)tof(x[r * len + i]) - m);
    for (int64_t i = 0; i < len; ++i) y[r * len + i] = (float)(exp((double)tof(x[r * len + i]) - m) / s);
  }
}
template <class T>
__global__ void fill_rand(T* x, int64_t n, unsigned seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995;
    h ^= h >> 15;
    x[i] = fromf<T>((h & 0xffffff) / float(0xffffff) * 8.f - 4.f);
  }
}
template <class T>
__global__ void maxdiff(const T* y, const float* r, int64_t n, float* out) {
  float d = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float a = tof(y[i]), b = r[i];
    float e = fabsf(a - b) / fmaxf(fabsf(b), 1e-30f);
    if (!(e <= d)) d = e;  // NaN sticks
  }
  atomicMax(reinterpret_cast<int*>(out), __float_as_int(d));
}

int sms = 132;
double copy_gbps_big = 0;

template <class F>
float time_median(F&& f, int sets, int iters = 100) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 10; ++i) f(i % sets);
  std::vector<float> t;
  for (int i = 0; i < iters; ++i) {
    CK(cudaEventRecord(a));
    f(i % sets);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <class T>
struct Problem {
  int64_t rows, len;
  int sets;
  std::vector<T*> x, y;
  float* ref;
  float* diff;
  Problem(int64_t r, int64_t l) : rows(r), len(l) {
    size_t bytes = size_t(r) * l * sizeof(T);
    sets = std::max<int>(2, std::min<int>(32, int(std::ceil(3.0 * 60e6 * 2 / (2.0 * bytes)))));
    for (int s = 0; s < sets; ++s) {
      T* p;
      CK(cudaMalloc(&p, bytes));
      x.push_back(p);
      CK(cudaMalloc(&p, bytes));
      y.push_back(p);
      fill_rand<<<1024, 256>>>(x[s], r * l, 1234 + s);
    }
    CK(cudaMalloc(&ref, size_t(r) * l * 4));
    CK(cudaMalloc(&diff, 4));
    reference<<<(r + 127) / 128, 128>>>(x[0], ref, r, l);
    CK(cudaDeviceSynchronize());
  }
  ~Problem() {
    for (auto p : x) cudaFree(p);
    for (auto p : y) cudaFree(p);
    cudaFree(ref);
    cudaFree(diff);
  }
  size_t bytes() const { return size_t(rows) * len * sizeof(T); }
  float copy_ms() {
    return time_median([&](int s) { copy16<<<sms * 16, 256>>>((const uint4*)x[s], (uint4*)y[s], bytes() / 16); }, sets);
  }
  template <class L>
  void run(const char* name, L launch, float copy) {
    CK(cudaMemset(y[0], 0xff, bytes()));
    launch(0);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemset(diff, 0, 4));
    maxdiff<<<1024, 256>>>(y[0], ref, rows * len, diff);
    float d;
    CK(cudaMemcpy(&d, diff, 4, cudaMemcpyDeviceToHost));
    float ms = time_median(launch, sets);
    double gbps = 2.0 * bytes() / (ms * 1e6);
    printf("%-44s %s [%lld,%lld] %8.4f ms  %5.1f%% samecopy  %5.1f%% bigcopy  relerr %.2e\n", name,
           sizeof(T) == 4 ? "f32 " : "bf16", (long long)rows, (long long)len, ms, 100 * copy / ms,
           100 * gbps / copy_gbps_big, d);
  }
};

template <class T, int LANES, int C, int MODE, int MINB, bool TWO, bool FAST = false>
void run_warp(Problem<T>& p, float copy, const char* name) {
  auto k = warp_rows<T, LANES, C, MODE, MINB, TWO, FAST>;
  int smem = MODE == 1 ? C * 128 * 16 : 0;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int per = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, 128, smem));
  int64_t need = (p.rows + 128 / LANES - 1) / (128 / LANES);
  int64_t grid = MODE == 1 ? std::min<int64_t>(need, int64_t(per) * sms) : std::min<int64_t>(need, int64_t(sms) * 64);
  char buf[128];
  snprintf(buf, sizeof buf, "%s L%d C%d min%d occ%d%s%s", name, LANES, C, MINB, per, TWO ? " two" : "",
           FAST ? " FAST" : "");
  p.run(
      buf, [&](int s) { k<<<grid, 128, smem>>>(p.x[s], p.y[s], p.rows, p.len); }, copy);
}
template <class T, int THREADS, int C, int MODE, bool FAST = false>
void run_block(Problem<T>& p, float copy, const char* name) {
  auto k = block_rows<T, THREADS, C, MODE, FAST>;
  int smem = MODE == 1 ? C * THREADS * 16 : 0;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int per = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, THREADS, smem));
  int64_t grid = MODE == 1 ? std::min<int64_t>(p.rows, int64_t(per) * sms) : p.rows;
  char buf[128];
  snprintf(buf, sizeof buf, "%s T%d C%d occ%d%s", name, THREADS, C, per, FAST ? " FAST" : "");
  p.run(
      buf, [&](int s) { k<<<grid, THREADS, smem>>>(p.x[s], p.y[s], p.rows, p.len); }, copy);
}

template <class T, int CL, int THREADS, int C, int MODE, bool FAST = false, int MINB = 1>
void run_cluster(Problem<T>& p, float copy, const char* name, bool persistent) {
  auto k = cluster_rows<T, CL, THREADS, C, MODE, FAST, MINB>;
  int smem = MODE == 1 ? C * THREADS * 16 : 0;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  if (CL > 8) CK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaLaunchConfig_t cfg{};
  cfg.blockDim = dim3(THREADS);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute at{};
  at.id = cudaLaunchAttributeClusterDimension;
  at.val.clusterDim.x = CL;
  at.val.clusterDim.y = at.val.clusterDim.z = 1;
  cfg.attrs = &at;
  cfg.numAttrs = 1;
  cfg.gridDim = dim3(CL);
  int clusters = 0;
  CK(cudaOccupancyMaxActiveClusters(&clusters, k, &cfg));
  int64_t grid = persistent ? std::min<int64_t>(p.rows, clusters) : std::min<int64_t>(p.rows, sms);
  cfg.gridDim = dim3(unsigned(grid * CL));
  char buf[128];
  snprintf(buf, sizeof buf, "%s CL%d T%d C%d act%d grid%lld%s m%d", name, CL, THREADS, C, clusters, (long long)grid,
           FAST ? " FAST" : "", MINB);
  p.run(
      buf,
      [&](int s) {
        cfg.stream = 0;
        CK(cudaLaunchKernelEx(&cfg, k, (const T*)p.x[s], p.y[s], p.rows, p.len));
      },
      copy);
}

template <class T>
void suite2() {
  constexpr int V = 16 / sizeof(T);
  {
    Problem<T> p(4096, 131072);
    float c = p.copy_ms();
    printf("copy %.4f ms\n", c);
    run_cluster<T, 8, 512, 32 / V, 1>(p, c, "cluster cpasync", true);
    run_cluster<T, 8, 512, 32 / V, 1, true>(p, c, "cluster cpasync", true);
    run_cluster<T, 8, 512, 32 / V, 0, true>(p, c, "cluster plain", true);
    run_cluster<T, 8, 512, 32 / V, 0, true, 2>(p, c, "cluster plain", true);
    run_cluster<T, 8, 512, 32 / V, 1, true, 2>(p, c, "cluster cpasync", true);
    run_cluster<T, 16, 256, 32 / V, 1, true, 4>(p, c, "cluster cpasync", true);
  }
  {
    Problem<T> p(1024, 32000);
    float c = p.copy_ms();
    printf("copy %.4f ms\n", c);
    run_block<T, 1024, 32 / V, 1>(p, c, "block cpasync");
    run_block<T, 1024, 32 / V, 1, true>(p, c, "block cpasync");
    run_block<T, 1024, 32 / V, 0, true>(p, c, "block plain");
    run_cluster<T, 4, 256, 32 / V, 1, true>(p, c, "cluster cpasync", true);
    run_cluster<T, 4, 256, 32 / V, 1, true, 2>(p, c, "cluster cpasync", true);
    run_cluster<T, 2, 512, 32 / V, 1, true, 2>(p, c, "cluster cpasync", true);
    run_cluster<T, 4, 512, 16 / V, 1, true, 2>(p, c, "cluster cpasync", true);
  }
}
template <class T>
void suite() {
  constexpr int V = 16 / sizeof(T);
  {
    Problem<T> p(8192, 1024);
    float c = p.copy_ms();
    printf("copy %.4f ms (%.1f%% bigcopy)\n", c, 100 * 2.0 * p.bytes() / (c * 1e6) / copy_gbps_big);
    run_warp<T, 32, 1024 / 32 / V, 0, 8, false>(p, c, "warp plain");
    run_warp<T, 32, 1024 / 32 / V, 0, 8, false, true>(p, c, "warp plain");
    run_warp<T, 32, 1024 / 32 / V, 1, 4, false, true>(p, c, "warp cpasync");
    run_warp<T, 32, 1024 / 32 / V, 1, 8, false, true>(p, c, "warp cpasync");
    run_block<T, 128, 1024 / 128 / V, 0, true>(p, c, "block plain");
    run_block<T, 64, 1024 / 64 / V, 1, true>(p, c, "block cpasync");
  }
  {
    Problem<T> p(65536, 128);
    float c = p.copy_ms();
    printf("copy %.4f ms\n", c);
    run_warp<T, 128 / V / 2, 2, 0, 8, false>(p, c, "warp plain");
    run_warp<T, 128 / V / 2, 2, 0, 8, false, true>(p, c, "warp plain");
    run_warp<T, 128 / V, 1, 0, 8, false, true>(p, c, "warp plain");
    run_warp<T, 128 / V / 4, 4, 0, 8, false, true>(p, c, "warp plain");
    run_warp<T, 128 / V / 4, 4, 1, 8, false, true>(p, c, "warp cpasync");
  }
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  sms = prop.multiProcessorCount;
  printf("%s sms %d l2 %d\n", prop.name, sms, prop.l2CacheSize);
  {
    size_t n = size_t(1) << 30;
    void *a, *b;
    CK(cudaMalloc(&a, n));
    CK(cudaMalloc(&b, n));
    CK(cudaMemset(a, 1, n));
    float ms = time_median([&](int) { CK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice)); }, 1, 30);
    copy_gbps_big = 2.0 * n / (ms * 1e6);
    printf("big copy %.1f GB/s\n", copy_gbps_big);
    cudaFree(a);
    cudaFree(b);
  }
  suite2<float>();
  suite2<__nv_bfloat16>();
  suite<float>();
  suite<__nv_bfloat16>();
}

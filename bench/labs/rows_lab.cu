// Broadcast-rows lab (bench/NOTES.md, "Broadcast rows in lanes; ..."): a + b[D] and a + b[N, 1],
// f32 and bf16, beside a device copy of the same bytes: the library's strided_vectorized launch
// (run_elementwise, as the headers this lab is built with have it), a prototype of the row lanes
// (lab_tile_kernel: lanes a row, one or two vectors a thread, the next row's loads before the current
// row's stores or not; with LANES set), a flat variant (lab_flat_kernel: the vectorized kernel's
// tiles over all rows, each vector's row by a multiply-shift division) and, run with an argument, the
// transposed kernel on a + b.t(). Not part of
// the library or its build. Build (sm_90) with the library's flags (`ninja -t commands` of any .cu:
// its -I, -D, -std and --expt flags); a variant of a header put in a directory named first with -I
// compiles against the same lab, for two builds run in one device call:
//   nvcc -O3 -std=c++20 --expt-relaxed-constexpr -arch=sm_90 -Isrc -Iinclude bench/labs/rows_lab.cu
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "common/binary_math.hpp"
#include "cuda/common/elementwise_transposed.cuh"
#include "elementwise_lab.cuh"

using namespace baracuda;
using namespace baracuda::detail;
using namespace baracuda::detail::cuda;

struct AddOp {
  using Acc = float;
  static constexpr int kIn = 2, kOut = 1;
  __device__ void operator()(const float (&x)[2], float (&y)[1]) const { y[0] = x[0] + x[1]; }
};

// Rows as a 2-D block: 2^lane_bits threads along a row (kU vectors each, gridDim.x * lanes apart),
// the block's other threads on the next rows; rows and vectors counted in 32 bits, a row's tensors
// as pointers. With kPrefetch the thread's next row is loaded before the current one is stored.
template <class In, class Op, int kU, bool kPrefetch>
__global__ void __launch_bounds__(kThreads)
    lab_tile_kernel(Op op, Operands<In, In, 2, 1, In> p, Walker<3> walker, int rows, int lane_bits) {
  constexpr int kIn = 2, NT = 3;
  constexpr int kV = kPackSize<In, In>;
  using Piece = Pack<In, kV>;
  const int vectors = static_cast<int>(walker.inner_size() / kV);
  const int lanes = 1 << lane_bits, lane = threadIdx.x & (lanes - 1);
  const int row_step = gridDim.y * (kThreads >> lane_bits);
  const int vstride = gridDim.x * lanes;
  const int first = blockIdx.x * lanes + lane;
  const bool b_scalar = walker.inner_stride(1) == 0;
  struct Row {
    const In* in[kIn];
    In* out;
  };
  auto row_at = [&](int row) {
    int64_t base[NT];
    walker.offsets(row, base, walker.rank - 1);
    return Row{{p.in[0] + base[0], p.in[1] + base[1]}, p.out[0] + base[2]};
  };
  auto load = [&](const Row& r, int v0, Piece(&in)[kU][kIn]) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int v = v0 + u * vstride;
      if (v < vectors) {
        in[u][0] = load_pack<kV>(r.in[0] + int64_t(v) * kV);
        if (b_scalar) {
          const In value = *r.in[1];
#pragma unroll
          for (int e = 0; e < kV; ++e) in[u][1].v[e] = value;
        } else {
          in[u][1] = load_pack<kV>(r.in[1] + int64_t(v) * kV);
        }
      }
    }
  };
  auto store = [&](const Row& r, int v0, Piece(&in)[kU][kIn]) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int v = v0 + u * vstride;
      if (v < vectors) {
        Pack<In, kV> out[1];
        apply_pack(op, in[u], out);
        store_pack(r.out + int64_t(v) * kV, out[0]);
      }
    }
  };
  for (int v0 = first; v0 < vectors; v0 += vstride * kU) {
    int row = blockIdx.y * (kThreads >> lane_bits) + (threadIdx.x >> lane_bits);
    if (row >= rows) break;
    Row r = row_at(row);
    Piece in[kU][kIn];
    load(r, v0, in);
    for (;;) {
      const int next = row + row_step;
      if constexpr (kPrefetch) {
        Row rn{};
        Piece ahead[kU][kIn];
        if (next < rows) {
          rn = row_at(next);
          load(rn, v0, ahead);
        }
        store(r, v0, in);
        if (next >= rows) break;
        r = rn;
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          in[u][0] = ahead[u][0];
          in[u][1] = ahead[u][1];
        }
      } else {
        store(r, v0, in);
        if (next >= rows) break;
        r = row_at(next);
        load(r, v0, in);
      }
      row = next;
    }
  }
}

// n / d and n % d for n, d < 2^31 by a multiply and a shift (the round-up method: p = 31 +
// ceil(log2 d), m = ceil(2^p / d), n / d = (n * m) >> p); d = 1 has m = 0 and is taken apart.
struct LabDivmod {
  unsigned d = 1, m = 0, shift = 0;
  explicit LabDivmod(unsigned divisor) : d(divisor) {
    if (d == 1) return;
    unsigned log2 = 0;
    while ((1u << log2) < d) ++log2;
    const unsigned p = 31 + log2;
    m = static_cast<unsigned>(((1ull << p) + d - 1) / d);
    shift = p - 32;
  }
  __host__ __device__ unsigned quotient(unsigned n) const {
#ifdef __CUDA_ARCH__
    return d == 1 ? n : __umulhi(n, m) >> shift;
#else
    return d == 1 ? n : static_cast<unsigned>((uint64_t(n) * m) >> 32) >> shift;
#endif
  }
};

// Rows of vectors as the vectorized kernel's flat tiles: each thread kU vectors kThreads apart, every
// vector's row and column by one LabDivmod, tensor t at row * strides[t][0] + column * kV *
// inner_stride(t) (rank-2 walker; an inner stride 0 broadcasts the row's value).
template <class In, class Op, int kU, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    lab_flat_kernel(Op op, Operands<In, In, 2, 1, In> p, Walker<3> walker, LabDivmod per_row, unsigned vectors) {
  constexpr int kV = kPackSize<In, In>;
  const unsigned tiles = (vectors + kThreads * kU - 1) / (kThreads * kU);
  for (unsigned tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const unsigned first = tile * kThreads * kU + threadIdx.x;
    Pack<In, kV> in[kU][2];
    int64_t out_at[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const unsigned v = first + u * kThreads;
      if (v < vectors) {
        const unsigned row = per_row.quotient(v), col = (v - row * per_row.d) * kV;
#pragma unroll
        for (int k = 0; k < 2; ++k) {
          const int64_t at = int64_t{row} * walker.strides[k][0];
          if (walker.strides[k][1] == 0) {
            const In value = p.in[k][at];
#pragma unroll
            for (int e = 0; e < kV; ++e) in[u][k].v[e] = value;
          } else {
            in[u][k] = load_pack<kV>(p.in[k] + at + col);
          }
        }
        out_at[u] = int64_t{row} * walker.strides[2][0] + col;
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const unsigned v = first + u * kThreads;
      if (v < vectors) {
        Pack<In, kV> out[1];
        apply_pack(op, in[u], out);
        store_pack(p.out[0] + out_at[u], out[0]);
      }
    }
  }
}

template <class In, int kU, int kMinBlocks>
void flat_variant(Operands<In, In, 2, 1, In> p, const Walker<3>& w, int64_t rows, float copy_ms, const char* label) {
  auto kernel = lab_flat_kernel<In, AddOp, kU, kMinBlocks>;
  cudaFuncAttributes attr{};
  CK(cudaFuncGetAttributes(&attr, kernel));
  constexpr int kV = kPackSize<In, In>;
  const unsigned per_row = static_cast<unsigned>(w.inner_size() / kV), vectors = per_row * static_cast<unsigned>(rows);
  const unsigned blocks = (vectors + kThreads * kU - 1) / (kThreads * kU);
  const float ms = median_ms([&] { kernel<<<blocks, kThreads>>>(AddOp{}, p, w, LabDivmod(per_row), vectors); });
  char name[64];
  snprintf(name, sizeof name, "flat U%d min%d", kU, kMinBlocks);
  printf("%-10s %-28s regs %3d  %.4f ms  %5.1f%% of copy\n", label, name, attr.numRegs, ms, 100.f * copy_ms / ms);
}

// Checks LabDivmod against division on random and edge values (host).
bool divmod_ok() {
  uint64_t x = 88172645463325252ull;
  auto next = [&] { return x ^= x << 13, x ^= x >> 7, x ^= x << 17, x; };
  for (int i = 0; i < 2000000; ++i) {
    unsigned d = static_cast<unsigned>(next() >> (33 + next() % 31)) + 1;
    if (d >= (1u << 31)) d = (1u << 31) - 1;
    const LabDivmod f(d);
    const unsigned ns[4] = {static_cast<unsigned>(next() % (1u << 31)), d - 1, d, (1u << 31) - 1};
    for (unsigned n : ns)
      if (f.quotient(n) != n / d) {
        printf("divmod wrong: %u / %u\n", n, d);
        return false;
      }
  }
  return true;
}

template <class In>
In from_float(float v) {
  if constexpr (std::is_same_v<In, float>)
    return v;
  else
    return __float2bfloat16(v);
}

template <class In, int kU, bool kPrefetch>
void tile_variant(int lane_bits, Operands<In, In, 2, 1, In> p, const Walker<3>& w, int64_t rows, float copy_ms, int sms,
                  const char* label) {
  auto kernel = lab_tile_kernel<In, AddOp, kU, kPrefetch>;
  cudaFuncAttributes attr{};
  CK(cudaFuncGetAttributes(&attr, kernel));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  constexpr int kV = kPackSize<In, In>;
  const int64_t vectors = w.inner_size() / kV, lanes = int64_t{1} << lane_bits, per_block = kThreads / lanes;
  const int64_t gx = std::max<int64_t>(1, vectors / (lanes * kU));  // (whole steps; the rest loops)
  const int64_t gy = std::clamp<int64_t>(int64_t(per_sm) * sms / gx, 1, (rows + per_block - 1) / per_block);
  dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
  const float ms = median_ms([&] { kernel<<<grid, kThreads>>>(AddOp{}, p, w, static_cast<int>(rows), lane_bits); });
  char name[64];
  snprintf(name, sizeof name, "tile lanes %d U%d%s", 1 << lane_bits, kU, kPrefetch ? " prefetch" : "");
  printf("%-10s %-28s regs %3d blocks/SM %d grid %6lld x %5lld  %.4f ms  %5.1f%% of copy\n", label, name, attr.numRegs,
         per_sm, (long long)gx, (long long)gy, ms, 100.f * copy_ms / ms);
}

// The library's launch (run_elementwise's strided_vectorized path), as the headers this lab was built
// with have it: timed queued (as the profiler times), rotating through sets of a and out; with the
// lab's add and with the library's own functors (BinaryPlan's add and mul: alpha, operands swapped).
template <class In>
void library_variant(Operands<In, In, 2, 1, In> p, In* const* a, In* const* out, int sets, const Walker<3>& w,
                     int64_t rows, float copy_ms, int sms, const char* label) {
  ElementwiseTensors<2, 1> t;
  t.path = ElementwisePath::strided_vectorized;
  t.shape.rank = 2;
  t.shape.dims[0] = rows;
  t.shape.dims[1] = w.sizes[1];
  for (int k = 0; k < 3; ++k) {
    Strides& st = k < 2 ? t.in_strides[k] : t.out_strides[0];
    st[0] = w.strides[k][0];
    st[1] = w.strides[k][1];
  }
  t.in[1] = p.in[1];
  auto time = [&](const auto& op) {
    return queued_median_ms([&](int i) {
      t.in[0] = a[i % sets];
      t.out[0] = out[i % sets];
      if (!run_elementwise<In>(Stream::cuda(), sms, op, t)) printf("launch failed\n");
    });
  };
  const float ms = time(AddOp{});
  printf("%-10s %-28s %.4f ms  %5.1f%% of copy\n", label, "library (queued, rotated)", ms, 100.f * copy_ms / ms);
  const float add_ms = time(BinaryForward<AddMath, float>{1.0f}), mul_ms = time(BinaryForward<MulMath, float>{1.0f});
  printf("%-10s %-28s %.4f ms  %5.1f%% of copy; mul %.4f ms  %5.1f%%\n", label, "library's add and mul", add_ms,
         100.f * copy_ms / add_ms, mul_ms, 100.f * copy_ms / mul_ms);
}

// Values -8 .. 8 from a hash of the index (zeros might flatter the memory system).
template <class In>
__global__ void lab_fill_kernel(In* p, int64_t n) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<In>(float((uint32_t(i) * 2654435761u >> 20) % 17) - 8.f);
}

template <class In>
void run_case(int64_t n, int64_t d, bool row_operand, int sms) {
  const size_t bytes = size_t(n) * d * sizeof(In);
  constexpr int kSets = 3;  // a and out rotated past the 60 MB L2 (the profiler's way)
  In *a_sets[kSets], *out_sets[kSets], *b;
  for (int s = 0; s < kSets; ++s) {
    CK(cudaMalloc(&a_sets[s], bytes));
    CK(cudaMalloc(&out_sets[s], bytes));
    lab_fill_kernel<<<1024, 256>>>(a_sets[s], int64_t(n) * d);
  }
  In *a = a_sets[0], *out = out_sets[0];
  const int64_t b_count = row_operand ? n : d;
  CK(cudaMalloc(&b, b_count * sizeof(In)));
  std::vector<In> host(b_count);
  for (int64_t i = 0; i < b_count; ++i) host[i] = from_float<In>(float(i % 7) - 3.f);
  CK(cudaMemcpy(b, host.data(), b_count * sizeof(In), cudaMemcpyHostToDevice));
  const float copy_ms = queued_median_ms(
      [&](int i) { CK(cudaMemcpyAsync(out_sets[i % kSets], a_sets[i % kSets], bytes, cudaMemcpyDeviceToDevice)); });
  Walker<3> w;
  w.rank = 2;
  w.sizes[0] = n;
  w.sizes[1] = d;
  w.strides[0][0] = d;
  w.strides[0][1] = 1;
  w.strides[1][0] = row_operand ? 1 : 0;
  w.strides[1][1] = row_operand ? 0 : 1;
  w.strides[2][0] = d;
  w.strides[2][1] = 1;
  Operands<In, In, 2, 1, In> p{};
  p.in[0] = a;
  p.in[1] = b;
  p.out[0] = out;
  char label[64];
  snprintf(label, sizeof label, "%s[%lld,%lld]%s", sizeof(In) == 4 ? "f32" : "bf16", (long long)n, (long long)d,
           row_operand ? "N1" : "D");
  printf("%s copy %.4f ms\n", label, copy_ms);
  constexpr bool f32 = sizeof(In) == 4;
  library_variant<In>(p, a_sets, out_sets, kSets, w, n, copy_ms, sms, label);
  flat_variant<In, kPackUnroll<In, In, AddOp>, 1>(p, w, n, copy_ms, label);
  flat_variant<In, kPackUnroll<In, In, AddOp>, 3>(p, w, n, copy_ms, label);
  flat_variant<In, 2, 1>(p, w, n, copy_ms, label);
  if (getenv("LANES") == nullptr) goto done;
  for (int lane_bits = 5; lane_bits <= 8; ++lane_bits) {
    if ((int64_t{1} << lane_bits) > (d / kPackSize<In, In>)*2) break;
    tile_variant<In, 1, false>(lane_bits, p, w, n, copy_ms, sms, label);
    tile_variant<In, 1, true>(lane_bits, p, w, n, copy_ms, sms, label);
    tile_variant<In, 2, false>(lane_bits, p, w, n, copy_ms, sms, label);
    if constexpr (f32) tile_variant<In, 2, true>(lane_bits, p, w, n, copy_ms, sms, label);
  }
done:
  for (int s = 0; s < kSets; ++s) {
    CK(cudaFree(a_sets[s]));
    CK(cudaFree(out_sets[s]));
  }
  CK(cudaFree(b));
}

// out = a + b.t() (a, out [n, d] contiguous, b [d, n] contiguous) through the library's transposed
// kernel, as compiled from the headers this lab was built with.
template <class In>
void transposed_case(int64_t n, int64_t d) {
  const size_t bytes = size_t(n) * d * sizeof(In);
  In *a, *b, *out;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMalloc(&out, bytes));
  CK(cudaMemset(a, 0, bytes));
  CK(cudaMemset(b, 0, bytes));
  const float copy_ms = median_ms([&] { CK(cudaMemcpyAsync(out, a, bytes, cudaMemcpyDeviceToDevice)); });
  Shape shape;
  shape.rank = 2;
  shape.dims[0] = n;
  shape.dims[1] = d;
  Strides sa{}, sb{};
  sa[0] = d;
  sa[1] = 1;
  sb[0] = 1;
  sb[1] = n;
  const Strides* strides[3] = {&sa, &sb, &sa};
  TransposedArgs<3> args;
  static_cast<TransposedWalk<3>&>(args) = *transposed_walk<3>(shape, strides, 2);
  args.all_pieces = true;
  for (bool& piece : args.pieces) piece = true;
  Operands<In, In, 2, 1, In> p{};
  p.in[0] = a;
  p.in[1] = b;
  p.out[0] = out;
  constexpr int64_t kTile = int64_t{kTransposeLanes} * kTransposeSide<In, In>;
  const dim3 grid(static_cast<unsigned>((args.p_size + kTile - 1) / kTile),
                  static_cast<unsigned>((args.q_size + kTile - 1) / kTile), 1);
  auto kernel = elementwise_transposed_kernel<In, In, AddOp, In, 1>;
  cudaFuncAttributes attr{};
  CK(cudaFuncGetAttributes(&attr, kernel));
  const float ms = median_ms([&] { kernel<<<grid, kTransposeThreads>>>(AddOp{}, p, args); });
  printf("%s a + b.t() [%lld,%lld] regs %d  %.4f ms  %5.1f%% of copy (copy %.4f)\n", sizeof(In) == 4 ? "f32" : "bf16",
         (long long)n, (long long)d, attr.numRegs, ms, 100.f * copy_ms / ms, copy_ms);
  CK(cudaFree(a));
  CK(cudaFree(b));
  CK(cudaFree(out));
}

int main(int argc, char**) {
  if (argc > 1) {  // the transposed kernel alone
    transposed_case<__nv_bfloat16>(16384, 4096);
    transposed_case<float>(16384, 4096);
    transposed_case<__nv_bfloat16>(4096, 100000);
    return 0;
  }
  if (!divmod_ok()) return 1;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (bool row_operand : {false, true}) {
    run_case<__nv_bfloat16>(16384, 4096, row_operand, sms);
    run_case<float>(16384, 4096, row_operand, sms);
  }
  run_case<__nv_bfloat16>(4096, 8192, false, sms);
  run_case<__nv_bfloat16>(65536, 768, false, sms);
  run_case<float>(65536, 768, false, sms);
  run_case<__nv_bfloat16>(262144, 256, false, sms);
  run_case<__nv_bfloat16>(16384, 1000, false, sms);
  run_case<__nv_bfloat16>(32768, 2048, false, sms);  // either side of the row lanes' bound (256 or 512 vectors)
  run_case<__nv_bfloat16>(32768, 2048, true, sms);
  run_case<__nv_bfloat16>(16384, 3072, true, sms);
  run_case<__nv_bfloat16>(65536, 768, true, sms);
  run_case<__nv_bfloat16>(262144, 256, true, sms);
  run_case<float>(16384, 1000, true, sms);
  run_case<float>(16384, 2048, false, sms);
  run_case<float>(8192, 4100, false, sms);
  run_case<float>(4096, 16384, false, sms);
  return 0;
}

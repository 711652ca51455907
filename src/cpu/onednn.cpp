// One 2-D product by oneDNN's matmul: its AMX and AVX-512 kernels, well ahead of f32 panels through
// OpenBLAS for 16-bit data and of OpenBLAS for small-M f32 (bench/NOTES.md, "CPU matmul"). Creating a
// primitive costs far more than most products, so each configuration's is made once and kept.
#include "cpu/onednn.hpp"

#include <array>
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <string_view>

namespace baracuda::detail::cpu {
namespace {

dnnl::memory::data_type dnnl_type(DType t) {
  switch (t) {
    case DType::bf16:
      return dnnl::memory::data_type::bf16;
    case DType::f16:
      return dnnl::memory::data_type::f16;
    default:
      return dnnl::memory::data_type::f32;
  }
}

// One engine for the process; a stream per calling thread (a stream is not shared between threads).
dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}
dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

using Key = std::array<int64_t, 15>;

int64_t bits_of(double v) {
  int64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

}  // namespace

bool onednn_gemm(DType in, DType out, int64_t m, int64_t n, int64_t k, const void* a, GemmMatrix am, const void* b,
                 GemmMatrix bm, void* d, GemmMatrix dm, double alpha, double beta) {
  // A column-major d as its transpose, d^T = b^T a^T: oneDNN has no fast kernel writing a column-major
  // f32 destination (its reference one ran a grouped backward's db a thousand times slower).
  auto transposed = [](GemmMatrix x) { return GemmMatrix{x.data, x.cs, x.rs}; };
  if (dm.rs == 1 && dm.cs != 1)
    return onednn_gemm(in, out, n, m, k, b, transposed(bm), a, transposed(am), d, transposed(dm), alpha, beta);
  static std::mutex mutex;
  static std::map<Key, std::optional<dnnl::matmul>> cache;  // nullopt: oneDNN has no kernel for it
  gemm_layout_ok(m, k, am.rs, am.cs);
  gemm_layout_ok(k, n, bm.rs, bm.cs);
  gemm_layout_ok(m, n, dm.rs, dm.cs);
  const Key key = {static_cast<int64_t>(in),
                   static_cast<int64_t>(out),
                   m,
                   n,
                   k,
                   am.rs,
                   am.cs,
                   bm.rs,
                   bm.cs,
                   dm.rs,
                   dm.cs,
                   bits_of(alpha),
                   bits_of(beta),
                   0,
                   0};
  using dims = dnnl::memory::dims;
  const dnnl::memory::desc ad(dims{m, k}, dnnl_type(in), dims{am.rs, am.cs});
  const dnnl::memory::desc bd(dims{k, n}, dnnl_type(in), dims{bm.rs, bm.cs});
  const dnnl::memory::desc dd(dims{m, n}, dnnl_type(out), dims{dm.rs, dm.cs});
  dnnl::matmul primitive;
  {
    std::lock_guard lock(mutex);
    auto it = cache.find(key);
    if (it == cache.end()) {
      std::optional<dnnl::matmul> made;
      try {
        dnnl::primitive_attr attr;
        if (alpha != 1.0) attr.set_output_scales(0, {static_cast<float>(alpha)});
        if (beta != 0.0) {
          dnnl::post_ops ops;
          ops.append_sum(static_cast<float>(beta));
          attr.set_post_ops(ops);
        }
        const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, dd), attr, engine());
        // Only oneDNN's real kernels: its reference one ("ref:any") is far slower than BLAS.
        if (!std::string_view(pd.impl_info_str()).starts_with("ref")) made = dnnl::matmul(pd);
      } catch (const dnnl::error&) {
        made.reset();
      }
      if (cache.size() > 4096) cache.clear();  // a bound on what odd shapes can pile up
      it = cache.emplace(key, made).first;
    }
    if (!it->second) return false;
    primitive = *it->second;
  }
  try {
    dnnl::memory ma(ad, engine(), const_cast<void*>(a)), mb(bd, engine(), const_cast<void*>(b)), md(dd, engine(), d);
    primitive.execute(stream(), {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, md}});
    stream().wait();
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

}  // namespace baracuda::detail::cpu

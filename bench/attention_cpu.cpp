// AttentionPlan (and its backward) on the CPU at one shape, timed: the median of --iters runs after a
// warm-up, fresh random inputs in [-1, 1). Beside it, bench/attention_jax_cpu.py times
// jax.nn.dot_product_attention (jitted, XLA:CPU) on the same shape. Built by hand against a build's
// library (bench/NOTES.md, "Attention on the CPU"):
//   c++ -O2 -std=c++20 -fopenmp -Iinclude bench/attention_cpu.cpp build/cpu/libbaracuda.a -lopenblas -ldnnl \
//       -o build/cpu/attention_cpu
//   build/cpu/attention_cpu B S H_q H_kv D [causal 0/1] [dtype f32|bf16] [iters]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"

using namespace baracuda;

template <class F>
double median_ms(int iters, F&& f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s B S H_q H_kv D [causal] [f32|bf16] [iters]\n", argv[0]);
    return 2;
  }
  AttentionDescriptor d;
  d.batch = std::atoll(argv[1]);
  d.seq_q = d.seq_kv = std::atoll(argv[2]);
  d.heads_q = std::atoll(argv[3]);
  d.heads_kv = std::atoll(argv[4]);
  d.head_dim = d.head_dim_v = std::atoll(argv[5]);
  d.causal = argc > 6 && std::atoi(argv[6]) != 0;
  const bool bf16 = argc > 7 && std::strcmp(argv[7], "bf16") == 0;
  d.dtype = bf16 ? DType::bf16 : DType::f32;
  const int iters = argc > 8 ? std::atoi(argv[8]) : 20;
  const int64_t nq = d.batch * d.seq_q * d.heads_q * d.head_dim, nk = d.batch * d.seq_kv * d.heads_kv * d.head_dim;
  const int64_t nl = d.batch * d.heads_q * d.seq_q;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  auto make = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng);
    return v;
  };
  std::vector<float> q = make(nq), k = make(nk), v = make(nk), dout = make(nq), out(nq), dq(nq), dk(nk), dv(nk),
                     lse(nl);
  std::vector<bfloat16> qb, kb, vb, doutb, outb(nq), dqb(nq), dkb(nk), dvb(nk);
  auto to16 = [](const std::vector<float>& f) {
    std::vector<bfloat16> b;
    for (float x : f) b.emplace_back(x);
    return b;
  };
  if (bf16) qb = to16(q), kb = to16(k), vb = to16(v), doutb = to16(dout);
  const Shape qs{d.batch, d.seq_q, d.heads_q, d.head_dim}, ks{d.batch, d.seq_kv, d.heads_kv, d.head_dim};
  const Shape ls{d.batch, d.heads_q, d.seq_q};
  auto ref = [&](const void* p, const Shape& s) { return AnyTensorRef::contiguous(p, d.dtype, s); };
  auto mut = [&](void* p, const Shape& s) { return AnyTensorMut::contiguous(p, d.dtype, s); };
  AttentionArgs a{
      bf16 ? ref(qb.data(), qs) : ref(q.data(), qs),     bf16 ? ref(kb.data(), ks) : ref(k.data(), ks),
      bf16 ? ref(vb.data(), ks) : ref(v.data(), ks),     {},
      bf16 ? mut(outb.data(), qs) : mut(out.data(), qs), AnyTensorMut::contiguous(lse.data(), DType::f32, ls)};
  Expected<AttentionPlan> plan = AttentionPlan::select(Stream::host(), d);
  if (!plan) return std::fprintf(stderr, "%s\n", plan.status().to_string().c_str()), 1;
  const double fw = median_ms(iters, [&] {
    if (!plan->run(Stream::host(), {}, a)) std::abort();
  });
  AttentionBackwardArgs b{a.q,
                          a.k,
                          a.v,
                          {},
                          AnyTensorRef(a.out),
                          bf16 ? ref(doutb.data(), qs) : ref(dout.data(), qs),
                          AnyTensorRef(a.lse),
                          bf16 ? mut(dqb.data(), qs) : mut(dq.data(), qs),
                          bf16 ? mut(dkb.data(), ks) : mut(dk.data(), ks),
                          bf16 ? mut(dvb.data(), ks) : mut(dv.data(), ks)};
  Expected<AttentionBackwardPlan> back = AttentionBackwardPlan::select(Stream::host(), d);
  if (!back) return std::fprintf(stderr, "%s\n", back.status().to_string().c_str()), 1;
  const double bw = median_ms(std::max(iters / 2, 3), [&] {
    if (!back->run(Stream::host(), {}, b)) std::abort();
  });
  const double flops = 4.0 * d.batch * d.heads_q * d.seq_q * d.seq_kv * d.head_dim * (d.causal ? 0.5 : 1.0);
  std::printf("attention B %lld S %lld H %lld/%lld D %lld %s %s: forward %.2f ms (%.1f GFLOP/s), backward %.2f ms\n",
              static_cast<long long>(d.batch), static_cast<long long>(d.seq_q), static_cast<long long>(d.heads_q),
              static_cast<long long>(d.heads_kv), static_cast<long long>(d.head_dim), d.causal ? "causal" : "full",
              bf16 ? "bf16" : "f32", fw, flops / fw * 1e-6, bw);
  return 0;
}

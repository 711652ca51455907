#!/usr/bin/env python3
"""jax.nn.dot_product_attention on the CPU (jitted, XLA:CPU), the peer of bench/attention_cpu.cpp:
the same shape ([B, S, H, D] as JAX takes it), inputs uniform in [-1, 1), the median of --iters
calls after a warm-up (block_until_ready). Forward, and the backward as the jitted pullback of
jax.vjp (its residuals computed beforehand).

    python3 bench/attention_jax_cpu.py B S H_q H_kv D [causal 0/1] [f32|bf16] [iters]
"""
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np


def median_ms(f, iters):
    f()
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return sorted(times)[len(times) // 2]


def main():
    b, s, hq, hkv, d = (int(x) for x in sys.argv[1:6])
    causal = len(sys.argv) > 6 and sys.argv[6] == "1"
    dtype = jnp.bfloat16 if len(sys.argv) > 7 and sys.argv[7] == "bf16" else jnp.float32
    iters = int(sys.argv[8]) if len(sys.argv) > 8 else 20
    rng = np.random.default_rng(1)
    q = jnp.asarray(rng.uniform(-1, 1, (b, s, hq, d)), dtype)
    k = jnp.asarray(rng.uniform(-1, 1, (b, s, hkv, d)), dtype)
    v = jnp.asarray(rng.uniform(-1, 1, (b, s, hkv, d)), dtype)
    dout = jnp.asarray(rng.uniform(-1, 1, (b, s, hq, d)), dtype)
    fwd = jax.jit(lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=causal))
    fw = median_ms(lambda: fwd(q, k, v).block_until_ready(), iters)
    _, pullback = jax.vjp(lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=causal), q, k, v)
    bwd = jax.jit(pullback)
    bw = median_ms(lambda: jax.block_until_ready(bwd(dout)), max(iters // 2, 3))
    print(f"jax {jax.__version__} dot_product_attention B {b} S {s} H {hq}/{hkv} D {d} "
          f"{'causal' if causal else 'full'} {jnp.dtype(dtype).name}: forward {fw:.2f} ms, backward {bw:.2f} ms")


if __name__ == "__main__":
    main()

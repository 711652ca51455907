"""The Python module's cost a call beside the C++ plan's (bench/labs/host_call_cost.cpp) and the
framework's own op, on the CPU: gelu and exp over n f32 elements through the plan API (plan.run on
given arrays), the plain function (baracuda.gelu, which allocates its output), NumPy's exp, and
through JAX: a jitted function of one baracuda op (an XLA custom call) beside the same of JAX's op.
Median of 5 rounds of `calls` calls, microseconds a call. Where PyTorch sees a GPU, the same on CUDA
tensors (the host's cost to enqueue: a kernel of 4096 elements takes less than the call): plan.run
on PyTorch's current stream, the plain function, the custom op of baracuda.torch, and F.gelu.

    PYTHONPATH=build/cpu-only/python OMP_NUM_THREADS=1 python3 bench/labs/python_overhead.py [n]
"""
import sys
import time

import numpy as np

import baracuda as bc


def per_call(f, calls=20000):
    for _ in range(200):
        f()
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        rounds.append((time.perf_counter() - t0) / calls * 1e6)
    return sorted(rounds)[2]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    x = np.full(n, 0.5, np.float32)
    y = np.empty_like(x)
    rows = []
    for kind in ("gelu", "exp"):
        plan = bc.UnaryPlan.select(bc.UnaryDescriptor(kind=getattr(bc.UnaryKind, kind), dtype="f32", shape=(n,)), "cpu")
        rows.append((f"{kind}: plan.run(x=, out=)", per_call(lambda: plan.run(x=x, out=y))))
        fn = getattr(bc, kind)
        rows.append((f"{kind}: baracuda.{kind}(x)", per_call(lambda: fn(x))))
    rows.append(("exp: np.exp(x)", per_call(lambda: np.exp(x))))
    try:
        import jax
        import jax.numpy as jnp

        import baracuda.jax as bj

        xj = jnp.asarray(x)
        ours = jax.jit(lambda v: bj.gelu(v))
        theirs = jax.jit(lambda v: jax.nn.gelu(v, approximate=False))
        rows.append(("gelu: jax.jit(baracuda.jax.gelu)", per_call(lambda: ours(xj).block_until_ready(), 5000)))
        rows.append(("gelu: jax.jit(jax.nn.gelu)", per_call(lambda: theirs(xj).block_until_ready(), 5000)))
    except ImportError:
        pass
    print(f"| call, n = {n} f32, CPU | us a call |\n|---|---|")
    for name, us in rows:
        print(f"| {name} | {us:.2f} |")
    cuda = cuda_rows(n)
    if cuda:
        print(f"\n| call, n = {n} f32, CUDA | us a call |\n|---|---|")
        for name, us in cuda:
            print(f"| {name} | {us:.2f} |")


def cuda_rows(n):
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    import baracuda.torch as bt
    from baracuda import functional as f

    x = torch.full((n,), 0.5, device="cuda")
    y = torch.empty_like(x)
    _, select_stream, handle = f._Torch.streams(x)
    plan = bc.UnaryPlan.select(bc.UnaryDescriptor(kind=bc.UnaryKind.gelu, dtype="f32", shape=(n,)), select_stream)
    rows = [("gelu: plan.run(x=, out=, stream=)", per_call(lambda: plan.run(x=x, out=y, stream=handle))),
            ("gelu: baracuda.gelu(x)", per_call(lambda: bc.gelu(x))),
            ("gelu: baracuda.torch.gelu(x) (custom op)", per_call(lambda: bt.gelu(x))),
            ("gelu: torch.nn.functional.gelu(x)", per_call(lambda: torch.nn.functional.gelu(x)))]
    torch.cuda.synchronize()
    return rows


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The CPU grouped matmul (MoE experts) beside one dense matmul of the same FLOPs and beside NumPy's
per-group loop (np.matmul per expert), f32, on this machine. Group sizes skewed 4:1 (every other
expert four times the rows of the next). Median of the calls' wall-clock times.

    PYTHONPATH=build/rel/python python3 bench/labs/grouped_mm_cpu.py [--tokens 4096] [--k 1024] [--n 1024]
"""
import argparse
import time

import numpy as np

import baracuda as bc


def median_ms(fn, calls):
    fn()
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * sorted(times)[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--calls", type=int, default=11)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print("| experts | grouped ms | dense ms | dense / grouped | NumPy loop ms | NumPy / grouped |")
    print("|---|---|---|---|---|---|")
    for experts in (8, 64):
        weights = np.array([4 if g % 2 == 0 else 1 for g in range(experts)], np.float64)
        sizes = np.floor(weights / weights.sum() * args.tokens).astype(np.int64)
        sizes[0] += args.tokens - sizes.sum()
        offs = np.cumsum(sizes).astype(np.int32)
        a = rng.standard_normal((args.tokens, args.k), np.float32)
        b = rng.standard_normal((experts, args.k, args.n), np.float32)
        dense_b = b[0].copy()
        starts = np.concatenate([[0], offs[:-1]])
        grouped = median_ms(lambda: bc.grouped_mm(a, b, offs), args.calls)
        dense = median_ms(lambda: bc.matmul(a, dense_b), args.calls)
        loop = median_ms(lambda: [a[s:e] @ b[g] for g, (s, e) in enumerate(zip(starts, offs))], args.calls)
        out = bc.grouped_mm(a, b, offs)
        ref = np.concatenate([a[s:e] @ b[g] for g, (s, e) in enumerate(zip(starts, offs))])
        assert np.allclose(out, ref, rtol=1e-3, atol=1e-2), "grouped_mm disagrees with NumPy"
        print(f"| {experts} | {grouped:.3f} | {dense:.3f} | {dense / grouped:.2f}x | {loop:.3f} | {loop / grouped:.2f}x |")


if __name__ == "__main__":
    main()

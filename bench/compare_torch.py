#!/usr/bin/env python3
"""Side by side with PyTorch, in the same run on the GPU machine.

Runs baracuda-profiler's standard suite (or the ops given), then times PyTorch's best equivalent
of every case it can do on the same shapes and dtypes: CUDA events, warm-up, the median of many
runs, inputs rotated through enough buffer sets that the working set exceeds 3x the L2 cache,
fresh random data. Prints one table: case, ours, PyTorch, speed-up, our fraction of the copy
bandwidth (measured by the profiler in the same run).

    python3 bench/compare_torch.py --profiler build/device/tools/profiler/baracuda-profiler \
        [--ops lerp,lerp_backward] [--out bench/results/DATE.md]
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU with PyTorch

import torch  # noqa: E402

DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}


def rotation_sets(bytes_per_set):
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    return max(2, min(64, math.ceil(3 * l2 / max(bytes_per_set, 1))))


def time_median(fn, sets, iterations=100, warmup=10):
    for i in range(warmup):
        fn(i % sets)
    torch.cuda.synchronize()
    times = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for i in range(iterations):
        start.record()
        fn(i % sets)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def rand(shape, dtype, lo=-1.0, hi=1.0):
    return (torch.rand(shape, device="cuda", dtype=torch.float64) * (hi - lo) + lo).to(dtype)


# Each builder takes (shape, dtype) and returns (make_set(), run(set_data)).
def binary_param_forward(fn, feature_weight):
    def build(shape, dtype):
        def make():
            a, b = rand(shape, dtype), rand(shape, dtype)
            w = rand(shape[-1:], dtype, -0.5, 1.5) if feature_weight else 0.3
            return a, b, w
        return make, lambda s: fn(s[0], s[1], s[2])
    return build


def binary_param_backward(fn, feature_weight):
    def build(shape, dtype):
        def make():
            a = rand(shape, dtype).requires_grad_()
            b = rand(shape, dtype).requires_grad_()
            w = rand(shape[-1:], dtype, -0.5, 1.5).requires_grad_() if feature_weight else 0.3
            out = fn(a, b, w)
            inputs = (a, b, w) if feature_weight else (a, b)
            return out, inputs, rand(shape, dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


def add_scaled(a, b, alpha):
    return torch.add(a, b, alpha=alpha)


# Indexing cases: shape [A, B, K] as in tools/harness/rows/indexing.cpp.
def indices(shape, count, skewed=False):
    u = torch.rand(shape, device="cuda", dtype=torch.float64)
    v = torch.floor(torch.exp(u * math.log(count + 1))) - 1 if skewed else torch.floor(u * count)
    return v.clamp(0, count - 1).long()


def embedding_forward(shape, dtype):
    a, b, k = shape
    return (lambda: (rand((a, b), dtype), indices((k,), a))), lambda s: torch.nn.functional.embedding(s[1], s[0])


def index_select_rows(shape, dtype):
    a, b, k = shape
    return (lambda: (rand((a, b), dtype), indices((k,), a))), lambda s: torch.index_select(s[0], 0, s[1])


def gather_rows_backward(shape, dtype):
    a, b, k = shape
    make = lambda: (rand((a, b), dtype), indices((k, b), a), rand((k, b), dtype))
    return make, lambda s: torch.zeros_like(s[0]).scatter_add_(0, s[1], s[2])


def embedding_backward(skewed):
    def build(shape, dtype):
        a, b, k = shape
        make = lambda: (rand((k, b), dtype), indices((k,), a, skewed))
        return make, lambda s: torch.ops.aten.embedding_dense_backward(s[0], s[1], a, -1, False)
    return build


def along_dim1(op):
    def build(shape, dtype):
        a, b, k = shape
        one_d = op in ("index_select", "index_select_backward")
        make = lambda: (rand((a, b), dtype), indices((k,) if one_d else (a, k), b), rand((a, k), dtype))
        run = {
            "index_select": lambda s: torch.index_select(s[0], 1, s[1]),
            "gather": lambda s: torch.gather(s[0], 1, s[1]),
            "index_select_backward": lambda s: torch.zeros_like(s[0]).index_add_(1, s[1], s[2]),
            "gather_backward": lambda s: torch.zeros_like(s[0]).scatter_add_(1, s[1], s[2]),
            "scatter_add": lambda s: s[0].scatter_add_(1, s[1], s[2]),
        }[op]
        return make, run
    return build


# Softmax cases: [rows, length] along dim, x spread over [-8, 8) as in tools/harness/rows/softmax.cpp.
def softmax_forward(fn, dim, out_dtype=None):
    def build(shape, dtype):
        extra = {"dtype": out_dtype} if out_dtype is not None else {}
        return (lambda: rand(shape, dtype, -8.0, 8.0)), lambda x: fn(x, dim, **extra)
    return build


def softmax_backward(log, dim):
    op = torch.ops.aten._log_softmax_backward_data if log else torch.ops.aten._softmax_backward_data

    def build(shape, dtype):
        def make():
            x = rand(shape, dtype, -8.0, 8.0)
            return (torch.log_softmax if log else torch.softmax)(x, dim), rand(shape, dtype)
        return make, lambda s: op(s[1], s[0], dim, dtype)
    return build


# The PyTorch peer of every profiled op, keyed by the peer string the op table gives it (the
# profiler's --list --json and its results carry it): an op's deterministic twin shares its peer.
TORCH_CASES = {
    "torch.lerp(a, b, 0.3)": binary_param_forward(torch.lerp, False),
    "torch.lerp(a, b, w[D])": binary_param_forward(torch.lerp, True),
    "autograd of torch.lerp(a, b, 0.3)": binary_param_backward(torch.lerp, False),
    "autograd of torch.lerp(a, b, w[D])": binary_param_backward(torch.lerp, True),
    "torch.add(a, b, alpha=0.3)": binary_param_forward(add_scaled, False),
    "torch.addcmul(a, b, w[D])": binary_param_forward(torch.addcmul, True),
    "autograd of torch.add(a, b, alpha=0.3)": binary_param_backward(add_scaled, False),
    "autograd of torch.addcmul(a, b, w[D])": binary_param_backward(torch.addcmul, True),
    "F.embedding": embedding_forward,
    "aten.embedding_dense_backward": embedding_backward(False),
    "aten.embedding_dense_backward (log-uniform)": embedding_backward(True),
    "torch.index_select(src, 0, idx)": index_select_rows,
    "torch.index_select(src, 1, idx)": along_dim1("index_select"),
    "torch.gather(src, 1, idx)": along_dim1("gather"),
    "zeros().index_add_(1, idx, dout)": along_dim1("index_select_backward"),
    "zeros().scatter_add_(1, idx, dout)": along_dim1("gather_backward"),
    "zeros().scatter_add_(0, idx, dout)": gather_rows_backward,
    "dst.scatter_add_(1, idx, src)": along_dim1("scatter_add"),
    "torch.softmax(x, -1)": softmax_forward(torch.softmax, -1),
    "torch.log_softmax(x, -1)": softmax_forward(torch.log_softmax, -1),
    "torch.softmax(x, 0)": softmax_forward(torch.softmax, 0),
    "torch.softmax(x, -1, dtype=torch.float32)": softmax_forward(torch.softmax, -1, torch.float32),
    "aten._softmax_backward_data(dy, y, -1)": softmax_backward(False, -1),
    "aten._log_softmax_backward_data(dy, y, -1)": softmax_backward(True, -1),
    "aten._softmax_backward_data(dy, y, 0)": softmax_backward(False, 0),
}


def check_peers(profiler, ops):
    """Fails, naming them, when a profiled op's PyTorch peer has no builder here."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ops.json")
        cmd = [profiler, "--list", f"--json={path}"] + ([f"--ops={ops}"] if ops else [])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not os.path.exists(path):
            sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
        listed = json.load(open(path))["ops"]
    missing = [f"{op['op']} ({op['torch']})" for op in listed if op["torch"] not in TORCH_CASES]
    if missing:
        sys.exit("bench/compare_torch.py has no PyTorch builder for these profiled ops (add one to "
                 "TORCH_CASES, keyed by the peer string of the op table):\n  " + "\n  ".join(missing))


def time_torch(peer, shape, dtype, bytes_per_set):
    make, run = TORCH_CASES[peer](shape, dtype)
    sets = rotation_sets(bytes_per_set)
    data = [make() for _ in range(sets)]
    ms = time_median(lambda i: run(data[i]), sets)
    del data
    torch.cuda.empty_cache()
    return ms


def time_jax_segment_sum(shape, dtype_name, skewed, bytes_per_set):
    """jax.ops.segment_sum for the embedding-backward cases (wall clock around a jitted call)."""
    try:
        import jax
        import jax.numpy as jnp
    except Exception:  # noqa: BLE001 - JAX is optional
        return None
    import time
    a, b, k = shape
    jdt = {"f32": jnp.float32, "bf16": jnp.bfloat16, "f16": jnp.float16, "f64": jnp.float64}[dtype_name]
    if dtype_name == "f64":
        jax.config.update("jax_enable_x64", True)
    f = jax.jit(lambda d, i: jax.ops.segment_sum(d, i, num_segments=a))
    sets = rotation_sets(bytes_per_set)
    data = []
    for s in range(sets):
        key = jax.random.PRNGKey(s)
        d = jax.random.uniform(key, (k, b), minval=-1.0, maxval=1.0).astype(jdt)
        u = jax.random.uniform(jax.random.PRNGKey(1000 + s), (k,))
        idx = (jnp.floor(jnp.exp(u * math.log(a + 1))) - 1) if skewed else jnp.floor(u * a)
        data.append((d, jnp.clip(idx, 0, a - 1).astype(jnp.int32)))
    for i in range(5):
        f(*data[i % sets]).block_until_ready()
    times = []
    for i in range(50):
        t0 = time.perf_counter()
        f(*data[i % sets]).block_until_ready()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiler", required=True)
    ap.add_argument("--ops", default="")
    ap.add_argument("--dtypes", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--commit", default=os.environ.get("BARACUDA_COMMIT", "unknown"))
    args = ap.parse_args()

    check_peers(args.profiler, args.ops)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ours.json")
        cmd = [args.profiler, f"--json={path}"]
        if args.ops:
            cmd.append(f"--ops={args.ops}")
        if args.dtypes:
            cmd.append(f"--dtypes={args.dtypes}")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        print(proc.stdout)
        if not os.path.exists(path):
            print(proc.stderr, file=sys.stderr)
            sys.exit("baracuda-profiler wrote no results")
        ours = json.load(open(path))

    torch.manual_seed(0)
    rows = []
    unmatched = sorted({case["op"] for case in ours["cases"] if case.get("torch") not in TORCH_CASES})
    if unmatched:
        sys.exit("no PyTorch builder for the profiled ops: " + ", ".join(unmatched))
    for case in ours["cases"]:
        if case["dtype"] not in DTYPES:
            continue
        shape = tuple(case["shape"])
        torch_ms = time_torch(case["torch"], shape, DTYPES[case["dtype"]], case["bytes"])
        torch_gbps = case["bytes"] / (torch_ms * 1e6)
        jax_ms = None
        if case["op"].startswith("embedding_backward"):
            jax_ms = time_jax_segment_sum(shape, case["dtype"], "skewed" in case["op"], case["bytes"])
        rows.append((case["op"], case["variant"], case["dtype"], "x".join(map(str, case["shape"])),
                     "ok" if case["verified"] else "FAIL", case["median_ms"], torch_ms,
                     torch_ms / case["median_ms"], 100 * case["copy_fraction"],
                     100 * torch_gbps / ours["copy_gbps"], jax_ms))

    header = ("case", "variant", "dtype", "shape", "verified", "ours ms", "torch ms", "speed-up",
              "ours % copy", "torch % copy", "jax ms")
    lines = [f"# baracuda vs PyTorch {torch.__version__} on {ours['device']}",
             "",
             f"date {datetime.date.today().isoformat()}, commit {args.commit}, copy bandwidth "
             f"{ours['copy_gbps']:.1f} GB/s (device-to-device, read + write, same run). Medians of 100 runs, "
             f"inputs rotated past 3x L2. % copy counts the fewest bytes each op must move. Backward "
             f"indexing cases zero the gradient inside the timed region (PyTorch's ops allocate and zero "
             f"it). jax ms: jax.ops.segment_sum, jitted, wall-clock median of 50 calls.",
             "",
             "| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    for r in rows:
        jax = f"{r[10]:.4f}" if r[10] is not None else "-"
        lines.append(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]:.4f} | {r[6]:.4f} | {r[7]:.2f}x "
                     f"| {r[8]:.1f} | {r[9]:.1f} | {jax} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)
    if not all(c["verified"] for c in ours["cases"]):
        sys.exit(1)


if __name__ == "__main__":
    main()

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

import torch

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


# Each builder takes (shape, dtype) and returns (bytes per set, make_set(), run(set_data)).
def lerp_forward(feature_weight):
    def build(shape, dtype):
        def make():
            a, b = rand(shape, dtype), rand(shape, dtype)
            w = rand(shape[-1:], dtype, -0.5, 1.5) if feature_weight else 0.3
            return a, b, w
        size = torch.tensor([], dtype=dtype).element_size() * math.prod(shape)
        return 3 * size, make, lambda s: torch.lerp(s[0], s[1], s[2])
    return build


def lerp_backward(feature_weight):
    def build(shape, dtype):
        def make():
            a = rand(shape, dtype).requires_grad_()
            b = rand(shape, dtype).requires_grad_()
            w = rand(shape[-1:], dtype, -0.5, 1.5).requires_grad_() if feature_weight else 0.3
            out = torch.lerp(a, b, w)
            inputs = (a, b, w) if feature_weight else (a, b)
            return out, inputs, rand(shape, dtype)
        size = torch.tensor([], dtype=dtype).element_size() * math.prod(shape)
        run = lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
        return (5 if feature_weight else 3) * size, make, run
    return build


TORCH_CASES = {
    "lerp": lerp_forward(False),
    "lerp_feature_weight": lerp_forward(True),
    "lerp_backward": lerp_backward(False),
    "lerp_feature_weight_backward": lerp_backward(True),
}


def time_torch(op, shape, dtype):
    bytes_per_set, make, run = TORCH_CASES[op](shape, dtype)
    sets = rotation_sets(bytes_per_set)
    data = [make() for _ in range(sets)]
    ms = time_median(lambda i: run(data[i]), sets)
    del data
    torch.cuda.empty_cache()
    return ms


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiler", required=True)
    ap.add_argument("--ops", default="")
    ap.add_argument("--dtypes", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--commit", default=os.environ.get("BARACUDA_COMMIT", "unknown"))
    args = ap.parse_args()

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
    for case in ours["cases"]:
        if case["op"] not in TORCH_CASES or case["dtype"] not in DTYPES:
            continue
        torch_ms = time_torch(case["op"], tuple(case["shape"]), DTYPES[case["dtype"]])
        torch_gbps = case["bytes"] / (torch_ms * 1e6)
        rows.append((case["op"], case["variant"], case["dtype"], "x".join(map(str, case["shape"])),
                     "ok" if case["verified"] else "FAIL", case["median_ms"], torch_ms,
                     torch_ms / case["median_ms"], 100 * case["copy_fraction"],
                     100 * torch_gbps / ours["copy_gbps"]))

    header = ("case", "variant", "dtype", "shape", "verified", "ours ms", "torch ms", "speed-up",
              "ours % copy", "torch % copy")
    lines = [f"# baracuda vs PyTorch {torch.__version__} on {ours['device']}",
             "",
             f"date {datetime.date.today().isoformat()}, commit {args.commit}, copy bandwidth "
             f"{ours['copy_gbps']:.1f} GB/s (device-to-device, read + write, same run). Medians of 100 runs, "
             f"inputs rotated past 3x L2. % copy counts the fewest bytes each op must move.",
             "",
             "| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]:.4f} | {r[6]:.4f} | {r[7]:.2f}x "
                     f"| {r[8]:.1f} | {r[9]:.1f} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)
    if not all(c["verified"] for c in ours["cases"]):
        sys.exit(1)


if __name__ == "__main__":
    main()

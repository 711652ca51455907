#!/usr/bin/env python3
"""Two builds of baracuda-profiler side by side, in one run on the GPU machine: is a change neutral?

For every op the `--before` build lists, runs the op on the before build, then on the after build,
then again in that order (`--rounds`), so clock and thermal drift fall on both alike. Prints each
case's median time per build (the faster of the rounds) and the ratio after / before.

    python3 bench/compare_builds.py --before build/base/tools/profiler/baracuda-profiler \
        --after build/device/tools/profiler/baracuda-profiler [--dtypes f32,bf16] [--out table.md]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def op_names(profiler):
    out = subprocess.run([profiler, "--list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines()[1:] if line and not line.startswith(" ")]


def run(profiler, op, dtypes, tmp, options=()):
    """One op's cases on one build, keyed by (op, dtype, shape); `options`: more profiler flags."""
    path = os.path.join(tmp, "cases.json")
    cmd = [profiler, f"--ops={op}", f"--json={path}"] + ([f"--dtypes={dtypes}"] if dtypes else []) + list(options)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not os.path.exists(path):
        print(proc.stdout, proc.stderr, file=sys.stderr)
        return {}
    cases = json.load(open(path))["cases"]
    os.remove(path)
    return {(c["op"], c["dtype"], "x".join(map(str, c["shape"]))): c for c in cases}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--ops", default="", help="comma-separated op names (default: every op --before lists)")
    ap.add_argument("--shapes", default="", help="the profiler's --shapes (default: each op's standard shapes)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    options = [f"--shapes={args.shapes}"] if args.shapes else []
    before, after, failed = {}, {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for op in args.ops.split(",") if args.ops else op_names(args.before):
            for _ in range(args.rounds):
                for build, results in ((args.before, before), (args.after, after)):
                    for key, case in run(build, op, args.dtypes, tmp, options).items():
                        if not case["verified"]:
                            failed.append((build, key))
                        if key not in results or case["median_ms"] < results[key]["median_ms"]:
                            results[key] = case
    lines = ["| case | dtype | shape | before ms | after ms | after / before | after variant |", "|---|---|---|---|---|---|---|"]
    worst = 0.0
    for key in sorted(before):
        b = before[key]
        a = after.get(key)
        if a is None:
            lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {b['median_ms']:.4f} | missing | - | - |")
            worst = float("inf")
            continue
        ratio = a["median_ms"] / b["median_ms"]
        worst = max(worst, ratio)
        flag = " **slower**" if ratio > 1.03 else ""
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {b['median_ms']:.4f} | {a['median_ms']:.4f} | "
                     f"{ratio:.3f}{flag} | {a['variant']} |")
    lines.append("")
    lines.append(f"worst after / before: {worst:.3f}; unverified cases: {len(failed)}")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

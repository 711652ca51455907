"""The fused linear + cross-entropy (forward and backward, one training step's loss) through
baracuda.torch beside PyTorch eager (F.linear then F.cross_entropy, the [N, V] logits whole),
torch.compile of that, and Liger-Kernel's fused linear cross-entropy, on one GPU. Prints one
Markdown row a shape: median ms of forward + backward, peak memory above the inputs, and the
largest gradient difference from eager. Needs PyTorch with CUDA and baracuda's Python module;
Liger where installed (bench/compare_torch.py says how on the GPU machine).

    python3 bench/labs/linear_cross_entropy_peers.py [--shapes N,D,V;...] [--dtype bf16] [--peers a,b]
"""

import argparse

import torch
import torch.nn.functional as F

import baracuda.torch as bt


def eager(h, w, t):
    return F.cross_entropy(F.linear(h, w).float(), t)


def liger():
    try:
        from liger_kernel.transformers.functional import liger_fused_linear_cross_entropy
    except ImportError:
        return None
    return lambda h, w, t: liger_fused_linear_cross_entropy(h, w, t)


def step(fn, h, w, t):
    h.grad = w.grad = None
    fn(h, w, t).backward()
    return h.grad, w.grad


def timed(fn, h, w, t, reps=10):
    for _ in range(3):
        step(fn, h, w, t)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step(fn, h, w, t)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2], (torch.cuda.max_memory_allocated() - base) / 2**20


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="4096,4096,128256;8192,2048,32000;1000,1024,50257")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--peers", default="baracuda,eager,compile,liger")
    args = p.parse_args()
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[args.dtype]
    peers = {"baracuda": lambda h, w, t: bt.linear_cross_entropy(h, w, t), "eager": eager,
             "compile": torch.compile(eager), "liger": liger()}
    peers = {k: v for k, v in peers.items() if v is not None and k in args.peers.split(",")}
    print("| N, D, V | dtype | " + " | ".join(f"{k} ms | {k} MiB" for k in peers) + " | max |dh|, |dw| vs eager |")
    print("|---|---|" + "---|---|" * len(peers) + "---|")
    for shape in args.shapes.split(";"):
        n, d, v = (int(s) for s in shape.split(","))
        g = torch.Generator(device="cuda").manual_seed(n + d + v)
        h = (torch.randn(n, d, device="cuda", generator=g) * 0.5).to(dtype).requires_grad_()
        w = (torch.randn(v, d, device="cuda", generator=g) * d**-0.5).to(dtype).requires_grad_()
        t = torch.randint(0, v, (n,), device="cuda", generator=g)
        t[::7] = -100
        ref = [x.float() for x in step(eager, h, w, t)]
        got = [x.float() for x in step(peers["baracuda"], h, w, t)]
        err = ", ".join(f"{float((a - b).abs().max()):.2e}" for a, b in zip(got, ref))
        cells = []
        for name, fn in peers.items():
            try:
                ms, mib = timed(fn, h, w, t)
                cells += [f"{ms:.3f}", f"{mib:.0f}"]
            except Exception as e:  # a peer that cannot run this shape (memory): said, not hidden
                cells += [f"failed: {type(e).__name__}", "-"]
        print(f"| {n}, {d}, {v} | {args.dtype} | " + " | ".join(cells) + f" | {err} |", flush=True)


if __name__ == "__main__":
    main()

"""Decode over a paged KV cache on CUDA (issue 61): baracuda's paged_decode kernel beside PyTorch's
paged gather + SDPA (each of PyTorch's SDPA backends that runs the case) and SDPA over the same keys
held densely, with the device's copy bandwidth measured in the same run; then the KV cache append of one
token a sequence beside PyTorch's index_put. Figures: the median of `--iters` runs (CUDA events), the
KV bytes each decode must read (sum of lengths x H_kv x (D + D_v) x element size) over the time.

    PYTHONPATH=<built python module> python3 bench/labs/paged_decode.py [--batch 64 --seq 8192 ...]
"""
import argparse
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import baracuda as bc


def median_ms(fn, iters, warmup=3, batch=10):
    """The median over `iters` samples of `batch` calls back to back, per call (so the host's cost of a
    call overlaps the device's work, as in a serving loop)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / batch)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--seq-q", type=int, default=1)
    ap.add_argument("--heads-q", type=int, default=32)
    ap.add_argument("--heads-kv", type=int, default=8)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--block", type=int, default=16)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--ragged", action="store_true", help="lengths drawn from 1..seq, not all seq")
    a = ap.parse_args()
    dt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[a.dtype]
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(0)
    B, Sq, Hq, Hk, D, bs = a.batch, a.seq_q, a.heads_q, a.heads_kv, a.dim, a.block
    mb = (a.seq + bs - 1) // bs
    nb = B * mb
    kc = torch.randn(nb, bs, Hk, D, device=dev, dtype=dt, generator=g)
    vc = torch.randn(nb, bs, Hk, D, device=dev, dtype=dt, generator=g)
    table = torch.randperm(nb, device=dev, generator=g).view(B, mb).to(torch.int32)
    if a.ragged:
        lens = torch.randint(1, a.seq + 1, (B,), device=dev, generator=g, dtype=torch.int32)
    else:
        lens = torch.full((B,), a.seq, device=dev, dtype=torch.int32)
    q = torch.randn(B, Sq, Hq, D, device=dev, dtype=dt, generator=g)
    elem = kc.element_size()
    kv_bytes = int(lens.sum()) * Hk * 2 * D * elem

    # The device's copy bandwidth, same run: 1 GiB read and written.
    x = torch.empty(2**30 // 4, device=dev, dtype=torch.float32)
    y = torch.empty_like(x)
    copy_ms = median_ms(lambda: y.copy_(x), 20)
    copy_tbs = 2 * x.numel() * 4 / copy_ms / 1e9
    del x, y

    rows = []

    def row(name, ms, note=""):
        tbs = kv_bytes / ms / 1e9
        rows.append((name, ms, tbs, tbs / copy_tbs, note))

    ours = lambda: bc.paged_attention(q, kc, vc, table, lens, max_seq_len=a.seq)  # noqa: E731
    out = ours()
    row("baracuda paged_decode", median_ms(ours, a.iters))

    # Dense keys [B, H_kv, S, D] (padding past each length masked off where ragged).
    j = torch.arange(mb * bs, device=dev)
    flat_rows = (table[:, j // bs].long() * bs + j % bs)  # [B, mb * bs]
    k_dense = kc.view(-1, Hk, D)[flat_rows].transpose(1, 2).contiguous()
    v_dense = vc.view(-1, Hk, D)[flat_rows].transpose(1, 2).contiguous()
    mask = None
    if a.ragged:
        mask = (j[None, :] < lens[:, None].long())[:, None, None, :]  # [B, 1, 1, S]
    qt = q.transpose(1, 2)
    want = F.scaled_dot_product_attention(qt.float(), k_dense.float(), v_dense.float(), attn_mask=mask,
                                          enable_gqa=True).transpose(1, 2)
    err = (out.float() - want).abs().max().item()

    def gather_sdpa():
        k = kc.view(-1, Hk, D)[flat_rows].transpose(1, 2)
        v = vc.view(-1, Hk, D)[flat_rows].transpose(1, 2)
        return F.scaled_dot_product_attention(qt, k, v, attn_mask=mask, enable_gqa=True)

    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                          ("cudnn", SDPBackend.CUDNN_ATTENTION), ("math", SDPBackend.MATH)):
        with sdpa_kernel(backend):
            try:
                gather_sdpa()
                row(f"torch gather + SDPA ({name})", median_ms(gather_sdpa, a.iters))
                dense = lambda: F.scaled_dot_product_attention(qt, k_dense, v_dense, attn_mask=mask,  # noqa: E731
                                                               enable_gqa=True)
                row(f"torch SDPA dense keys ({name})", median_ms(dense, a.iters), "keys already dense")
            except RuntimeError as e:
                rows.append((f"torch SDPA ({name})", float("nan"), float("nan"), float("nan"),
                             "refused: " + str(e).split("\n")[0][:60]))

    print(f"decode B {B}, S_q {Sq}, H_q {Hq}, H_kv {Hk}, D {D}, blocks of {bs}, {a.dtype}, "
          f"{'ragged lengths' if a.ragged else f'{a.seq} keys each'}: KV {kv_bytes / 1e9:.3f} GB; "
          f"copy {copy_tbs:.2f} TB/s; device {torch.cuda.get_device_name()}; max |ours - f32 SDPA| {err:.2e}")
    print("| kernel | ms | TB/s of KV | of copy | note |")
    print("|---|---|---|---|---|")
    for name, ms, tbs, frac, note in rows:
        print(f"| {name} | {ms:.4f} | {tbs:.2f} | {100 * frac:.1f}% | {note} |")

    # The append of one token a sequence (decode), beside PyTorch's index_put on the same rows.
    k_new = torch.randn(B, 1, Hk, D, device=dev, dtype=dt, generator=g)
    v_new = torch.randn(B, 1, Hk, D, device=dev, dtype=dt, generator=g)
    start = (lens - 1).clamp(min=0)
    append = lambda: bc.kv_cache_append(k_new, v_new, kc, vc, table, start)  # noqa: E731
    pos = start.long()
    dest = table[torch.arange(B, device=dev), pos // bs].long() * bs + pos % bs

    def torch_append():
        kc.view(-1, Hk, D)[dest] = k_new[:, 0]
        vc.view(-1, Hk, D)[dest] = v_new[:, 0]

    append()
    assert torch.equal(kc.view(-1, Hk, D)[dest], k_new[:, 0])
    print(f"append of {B} tokens: baracuda {median_ms(append, a.iters) * 1e3:.1f} us, "
          f"torch index_put {median_ms(torch_append, a.iters) * 1e3:.1f} us")


if __name__ == "__main__":
    main()

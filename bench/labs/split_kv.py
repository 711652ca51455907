"""Attention cases cuDNN refuses, on CUDA through baracuda's split_kv kernels (issue 61), beside
PyTorch: f32 (PyTorch's SDPA with its own backend choice) and the soft-cap in bf16 (Gemma 2: PyTorch
has no fused soft-cap, so its eager scores -> tanh -> mask -> softmax -> @ v, and torch.compile of
that). Each case checks baracuda's out against PyTorch's, then times the forward and forward +
backward (median of CUDA-event samples).

    PYTHONPATH=<built python module> python3 bench/labs/split_kv.py
"""
import torch
import torch.nn.functional as F
from paged_decode import median_ms as batched_median_ms  # (this script's folder is on sys.path)

import baracuda as bc


def median_ms(fn):
    return batched_median_ms(fn, 10, warmup=2, batch=1)


def capped(q, k, v, softcap, causal):
    """[B, H, S, D] eager attention with a soft-cap, GQA by repeating the kv heads."""
    rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    s = (q.float() @ k.float().transpose(-1, -2)) * q.shape[-1] ** -0.5
    s = softcap * torch.tanh(s / softcap)
    if causal:
        n, m = s.shape[-2:]
        s = s.masked_fill(torch.ones(n, m, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return (torch.softmax(s, -1) @ v.float()).to(q.dtype)


def case(name, B, S, Hq, Hk, D, dtype, softcap, causal=True):
    g = torch.Generator(device="cuda").manual_seed(0)
    mk = lambda h: torch.randn(B, h, S, D, device="cuda", dtype=dtype, generator=g)  # noqa: E731
    q, k, v = mk(Hq), mk(Hk), mk(Hk)
    dout = torch.randn(B, Hq, S, D, device="cuda", dtype=dtype, generator=g)
    qs, ks, vs, dos = (t.transpose(1, 2) for t in (q, k, v, dout))  # [B, S, H, D] views

    def ours_fwd():
        return bc.attention(qs, ks, vs, causal=causal, softcap=softcap, return_lse=True)

    def ours_fb():
        out, lse = ours_fwd()
        return bc.attention_backward(dos, qs, ks, vs, out, lse, causal=causal, softcap=softcap)

    if softcap:
        peer = lambda a, b, c: capped(a, b, c, softcap, causal)  # noqa: E731
        compiled = torch.compile(peer)
    else:
        peer = lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=causal, enable_gqa=True)  # noqa: E731
        compiled = None
    out_ref = capped(q.double(), k.double(), v.double(), softcap, causal) if softcap else None
    if out_ref is None:
        rep = Hq // Hk
        out_ref = F.scaled_dot_product_attention(q.double(), k.double().repeat_interleave(rep, 1),
                                                 v.double().repeat_interleave(rep, 1), is_causal=causal)
    err = (ours_fwd()[0].transpose(1, 2).double() - out_ref).abs().max().item()

    def peer_fb(fn):
        qa, ka, va = (t.detach().requires_grad_() for t in (q, k, v))
        fn(qa, ka, va).backward(dout)

    rows = [("baracuda split_kv", lambda: ours_fwd(), ours_fb)]
    rows.append(("torch eager", lambda: peer(q, k, v), lambda: peer_fb(peer)))
    if compiled is not None:
        rows.append(("torch.compile", lambda: compiled(q, k, v), lambda: peer_fb(compiled)))
    print(f"\n### {name}: B {B}, S {S}, H_q {Hq} / H_kv {Hk}, D {D}, {dtype}, softcap {softcap}, "
          f"causal {causal}; baracuda's out max |error| vs f64 {err:.2e}\n")
    print("| kernel | forward ms | forward + backward ms |\n|---|---|---|")
    for label, fwd, fb in rows:
        print(f"| {label} | {median_ms(fwd):.3f} | {median_ms(fb):.3f} |")


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    print("GPU:", torch.cuda.get_device_name())
    case("f32 prefill", 2, 1024, 8, 8, 64, torch.float32, 0.0)
    case("f32 GQA", 1, 2048, 16, 4, 128, torch.float32, 0.0)
    case("Gemma 2 soft-cap", 1, 2048, 8, 4, 256, torch.bfloat16, 50.0)


if __name__ == "__main__":
    main()

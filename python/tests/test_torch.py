"""baracuda.torch: the custom operators under torch.library.opcheck, their gradients against PyTorch's
own (and gradcheck in f64), torch.compile(fullgraph=True) without a graph break, patch(model). Needs
PyTorch (the GPU machine has it; CPU tensors here, CUDA ones where a GPU is)."""

import contextlib

import pytest

torch = pytest.importorskip("torch")
bt = pytest.importorskip("baracuda.torch")
F = torch.nn.functional

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def randn(*shape, device="cpu", dtype=torch.float64, grad=True):
    g = torch.Generator().manual_seed(sum(shape) * 7919 + len(shape))
    return torch.randn(*shape, generator=g, dtype=dtype).to(device).requires_grad_(grad)


def _rope(t, positions, base=10000.0):
    d = t.shape[-1]
    inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=t.device) / d)
    angle = positions.to(torch.float64)[None, :, None, None] * inv
    t1, t2 = t[..., : d // 2], t[..., d // 2:]
    return torch.cat([t1 * angle.cos() - t2 * angle.sin(), t2 * angle.cos() + t1 * angle.sin()], -1)


def cases(device):
    """(name, our function, PyTorch's, its inputs), f64 so that gradcheck's finite differences hold."""
    x, w, b = randn(4, 16, device=device), randn(16, device=device), randn(16, device=device)
    a, m = randn(2, 3, 5, device=device), randn(5, 7, device=device)
    lw, lb = randn(6, 16, device=device), randn(6, device=device)
    t = torch.tensor([0, 15, 3, -100], device=device)
    t2 = torch.tensor([0, 5, 3, -100], device=device)
    hq, hk, hv = randn(2, 3, 5, 8, device=device), randn(2, 3, 6, 8, device=device), randn(2, 3, 6, 8, device=device)
    mask = torch.rand(5, 6, generator=torch.Generator().manual_seed(5)).to(device) > 0.3
    mask[:, 0] = True  # (every row sees a key: PyTorch's fully masked rows are NaN, ours 0)
    # targets made once, outside the functions: gradcheck perturbs x in place, and a target made from x
    # inside would move with it
    half, positive = x.detach().clone() * 0.5, (x.detach() > 0).double()
    offs = torch.tensor([2, 2, 7], device=device, dtype=torch.int32)  # groups of 2, 0 and 5 rows; row 7 in none
    grouped = [  # (CUDA: the library's tile kernels, f64 by FMAs)
        ("grouped_mm", lambda a, b: bt.grouped_mm(a, b, offs),
         lambda a, b: torch.cat([a[:2] @ b[0], a[2:2] @ b[1], a[2:7] @ b[2], a[7:] * 0 @ b[0]]),
         (randn(8, 5, device=device), randn(3, 5, 4, device=device))),
        ("grouped_mm_transposed", lambda a, b: bt.grouped_mm(a, b, offs, transpose_b=True),
         lambda a, b: torch.cat([a[:2] @ b[0].T, a[2:7] @ b[2].T, a[7:] * 0 @ b[0].T]) + 0 * b[1].sum(),
         (randn(8, 5, device=device), randn(3, 4, 5, device=device))),
    ]
    # (f64 attention on CUDA is split_kv's, forward and backward; cuDNN's f16 / bf16: test_sdpa_bf16)
    attention = grouped + [
        ("sdpa_causal", lambda q, k, v: bt.scaled_dot_product_attention(q, k, v, is_causal=True),
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (hq, hk, hv)),
        ("sdpa_mask", lambda q, k, v: bt.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3),
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3), (hq, hk, hv)),
    ]
    return attention + [
        ("rms_norm", lambda x, w: bt.rms_norm(x, w, 1e-6), lambda x, w: F.rms_norm(x, (16,), w, 1e-6), (x, w)),
        ("layer_norm", lambda x, w, b: bt.layer_norm(x, w, b), lambda x, w, b: F.layer_norm(x, (16,), w, b), (x, w, b)),
        ("softmax", lambda x: bt.softmax(x, 0), lambda x: torch.softmax(x, 0), (x,)),
        ("log_softmax", bt.log_softmax, lambda x: torch.log_softmax(x, -1), (x,)),
        ("gelu", bt.gelu, F.gelu, (x,)),
        ("silu", bt.silu, F.silu, (x,)),
        ("leaky_relu", lambda x: bt.unary("leaky_relu", x, negative_slope=0.2), lambda x: F.leaky_relu(x, 0.2), (x,)),
        ("matmul", bt.matmul, torch.matmul, (a, m)),
        ("linear", lambda x, w, b: bt.linear(x, w, b, activation="gelu_tanh"),
         lambda x, w, b: F.gelu(F.linear(x, w, b), approximate="tanh"), (x, lw, lb)),
        ("linear_nobias", lambda x, w: bt.linear(x, w), F.linear, (x, lw)),
        ("cross_entropy", lambda z: bt.cross_entropy(z, t, label_smoothing=0.1),
         lambda z: F.cross_entropy(z, t, label_smoothing=0.1), (x,)),
        ("swiglu", lambda x: bt.gated("swiglu", x), lambda x: x[..., :8] * F.silu(x[..., 8:]), (x,)),
        ("rotary", lambda q: bt.rotary(q, None, torch.arange(3, device=device))[0],
         lambda q: _rope(q, torch.arange(3, device=device)), (randn(2, 3, 2, 8, device=device),)),
        ("embedding", lambda w: bt.embedding(torch.tensor([[1, 3], [3, 0]], device=device), w),
         lambda w: F.embedding(torch.tensor([[1, 3], [3, 0]], device=device), w), (randn(5, 4, device=device),)),
        ("group_norm", lambda x, w, b: bt.group_norm(x, 2, w, b), lambda x, w, b: F.group_norm(x, 2, w, b),
         (randn(2, 4, 3, device=device), randn(4, device=device), randn(4, device=device))),
        ("smooth_l1", lambda a: bt.smooth_l1_loss(a, half, beta=0.3), lambda a: F.smooth_l1_loss(a, half, beta=0.3),
         (x,)),
        ("bce_logits", lambda a: bt.binary_cross_entropy_with_logits(a, positive),
         lambda a: F.binary_cross_entropy_with_logits(a, positive), (x,)),
        ("linear_cross_entropy", lambda h, w, b: bt.linear_cross_entropy(h, w, t2, b, label_smoothing=0.1),
         lambda h, w, b: F.cross_entropy(F.linear(h, w, b), t2, label_smoothing=0.1),
         (randn(4, 16, device=device), lw, lb)),
    ]


@pytest.mark.parametrize("device", DEVICES)
def test_values_and_gradients_match_pytorch(device):
    for name, ours, theirs, inputs in cases(device):
        got, want = ours(*inputs), theirs(*inputs)
        torch.testing.assert_close(got, want, msg=name)
        up = torch.randn_like(want)
        g_ours = torch.autograd.grad((got * up).sum(), inputs)
        g_want = torch.autograd.grad((want * up).sum(), inputs)
        for g, r in zip(g_ours, g_want):
            torch.testing.assert_close(g, r, msg=name)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("causal", [True, False])
def test_sdpa_bf16(causal):
    """CUDA's attention (cuDNN) in bf16 against PyTorch's on the same bf16 values in f32."""
    q, k, v = (randn(2, 4, s, 64, device="cuda", dtype=torch.bfloat16) for s in (33, 40, 40))
    got = bt.scaled_dot_product_attention(q, k, v, is_causal=causal)
    f32 = [t.detach().float().requires_grad_() for t in (q, k, v)]
    want = F.scaled_dot_product_attention(*f32, is_causal=causal)
    torch.testing.assert_close(got.float(), want, atol=2e-2, rtol=2e-2)
    up = torch.randn_like(want)
    for g, r in zip(torch.autograd.grad((got.float() * up).sum(), (q, k, v)),
                    torch.autograd.grad((want * up).sum(), f32)):
        torch.testing.assert_close(g.float(), r, atol=5e-2, rtol=5e-2)


@pytest.mark.parametrize("device", DEVICES)
def test_linear_cross_entropy_gradients_made_in_the_forward(device):
    """Under sum or mean the forward makes the gradients (dloss = 1) and the backward scales them: a
    retained graph's second backward must see them unscaled; reduction none recomputes instead."""
    h, w = randn(6, 8, device=device), randn(11, 8, device=device)
    t = torch.tensor([0, 3, 10, -100, 5, 5], device=device)
    loss = bt.linear_cross_entropy(h, w, t)
    g2 = torch.autograd.grad(loss * 2, (h, w), retain_graph=True)
    g3 = torch.autograd.grad(loss * 3, (h, w))
    want = torch.autograd.grad(F.cross_entropy(F.linear(h, w), t) * 3, (h, w))
    for a, b, r in zip(g2, g3, want):
        torch.testing.assert_close(a * 1.5, b)
        torch.testing.assert_close(b, r)
    with torch.no_grad():  # no gradient wanted: the plain forward
        torch.testing.assert_close(bt.linear_cross_entropy(h, w, t), F.cross_entropy(F.linear(h, w), t))


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    for name, ours, _, inputs in cases(device):
        assert torch.autograd.gradcheck(ours, inputs), name


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x, w, b = randn(3, 8, device=device), randn(8, device=device), randn(8, device=device)
    a, m = randn(3, 8, device=device), randn(8, 4, device=device)
    t = torch.tensor([1, 7, 0], device=device)
    ops = torch.ops.baracuda
    for op, args in [
        (ops.rms_norm, (x, w, 1e-6, 1)),
        (ops.rms_norm, (x, None, 1e-6, 1)),
        (ops.layer_norm, (x, w, b, 1e-5, 1)),
        (ops.softmax, (x, -1, "softmax")),
        (ops.unary, (x, "gelu", [0.01, 1.0, 1.0, 20.0, -1.0, 1.0])),
        (ops.matmul, (a, m, False)),
        (ops.linear, (x, randn(5, 8, device=device), randn(5, device=device), "silu", False)),
        (ops.cross_entropy, (x, t, None, -100, "mean", 0.0)),
        (ops.gated, (randn(3, 16, device=device), "swiglu")),
        (ops.rotary, (randn(2, 3, 2, 8, device=device), randn(2, 3, 1, 8, device=device), torch.arange(3, device=device),
                      0, "half_split", 10000.0)),
        (ops.embedding, (torch.tensor([[1, 3], [3, 0]], device=device), randn(5, 4, device=device), -1)),
        (ops.group_norm, (randn(2, 4, 3, device=device), 2, randn(4, device=device), randn(4, device=device), 1e-5,
                          False)),
        (ops.pointwise_loss, (x, randn(3, 8, device=device, grad=False), None, None, "mse", "mean", 1.0, False)),
        (ops.linear_cross_entropy, (x, randn(5, 8, device=device), torch.tensor([1, 4, 0], device=device),
                                    randn(5, device=device), -100, "mean", 0.0)),
        (ops.linear_cross_entropy_grads, (x, randn(5, 8, device=device), torch.tensor([1, 4, -100], device=device),
                                          None, -100, "sum", 0.1)),
        (ops.attention, tuple(randn(2, s, h, 16, device=device) for s, h in ((5, 4), (6, 2), (6, 2))) + (None, True, 0.0)),
        (ops.grouped_mm, (randn(6, 8, device=device), randn(3, 8, 4, device=device),
                          torch.tensor([1, 1, 5], device=device, dtype=torch.int32), False)),
    ] + ([] if device == "cpu" else [  # (CUDA's 16-bit attention: cuDNN's)
        (ops.attention, tuple(randn(2, s, h, 16, device=device, dtype=torch.bfloat16)
                              for s, h in ((5, 4), (6, 2), (6, 2))) + (None, True, 0.0)),
    ]):
        torch.library.opcheck(op, args)


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph(device):
    x, w, lw = randn(4, 16, device=device, dtype=torch.float32), randn(16, device=device, dtype=torch.float32), \
        randn(8, 16, device=device, dtype=torch.float32)
    t = torch.tensor([0, 1, 2, 3], device=device)

    def step(x, w, lw):
        return bt.cross_entropy(bt.linear(bt.rms_norm(x, w), lw, activation="silu"), t)

    compiled = torch.compile(step, fullgraph=True)
    loss = compiled(x, w, lw)
    torch.testing.assert_close(loss, step(x, w, lw))
    loss.backward()
    assert x.grad is not None and lw.grad is not None


def test_patch_keeps_the_model_s_outputs():
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.SiLU(), torch.nn.LayerNorm(32),
                                torch.nn.Linear(32, 8), torch.nn.GELU()).double()
    x = randn(5, 16)
    want = model(x)
    counts = bt.patch(model)
    assert counts == {"linear": 2, "silu": 1, "layer_norm": 1, "gelu": 1}
    torch.testing.assert_close(model(x), want)


@pytest.mark.parametrize("device", DEVICES)
def test_zero_copy_on_the_callers_stream(device):
    """The plan reads and writes the caller's own memory (DLPack, no copy) and, on CUDA, orders its work
    on PyTorch's current stream: a side stream's result is there once that stream is waited on."""
    import baracuda as bc
    from baracuda import functional as f
    x = randn(64, 128, device=device, dtype=torch.float32, grad=False)
    y = bt.softmax(x)
    assert y.device == x.device and y.dtype == x.dtype
    out = torch.empty_like(x)
    ptr = out.data_ptr()
    side = torch.cuda.Stream() if device == "cuda" else None
    with torch.cuda.stream(side) if side is not None else contextlib.nullcontext():
        _, select_stream, run_stream = f._Torch.streams(x)
        plan = bc.UnaryPlan.select(bc.UnaryDescriptor(kind=bc.UnaryKind.neg, shape=tuple(x.shape)), select_stream)
        plan.run(x=x, out=out, stream=run_stream)
    if side is not None:
        torch.cuda.current_stream().wait_stream(side)
    assert out.data_ptr() == ptr
    torch.testing.assert_close(out, -x, rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_kv_cache_append_then_paged_decode(device, dtype):
    """A decode step: one token each appended to a paged cache, then attention over the cache, against
    PyTorch's SDPA over each sequence's keys gathered densely."""
    from baracuda import functional as f
    g = torch.Generator().manual_seed(7)
    B, Hq, Hk, D, bs, nb, mb = 3, 8, 2, 64, 16, 40, 8
    lens = torch.tensor([100, 1, 37], dtype=torch.int32)
    table = torch.randperm(nb, generator=g)[:B * mb].view(B, mb).to(torch.int32)
    kc, vc = (torch.randn(nb, bs, Hk, D, generator=g).to(dtype) for _ in range(2))
    k_new, v_new = (torch.randn(B, 1, Hk, D, generator=g).to(dtype) for _ in range(2))
    q = torch.randn(B, 1, Hq, D, generator=g).to(dtype)
    kc, vc, k_new, v_new, q, table, lens = (t.to(device) for t in (kc, vc, k_new, v_new, q, table, lens))
    f.kv_cache_append(k_new, v_new, kc, vc, table, lens)
    lens1 = lens + 1
    out = f.paged_attention(q, kc, vc, table, lens1)
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
    for b in range(B):
        n = int(lens1[b])
        j = torch.arange(n, device=device)
        rows = table[b, j // bs].long() * bs + j % bs
        k, v = kc.view(-1, Hk, D)[rows], vc.view(-1, Hk, D)[rows]
        assert torch.equal(k[-1], k_new[b, 0]) and torch.equal(v[-1], v_new[b, 0])
        want = torch.nn.functional.scaled_dot_product_attention(
            q[b].transpose(0, 1).float(), k.transpose(0, 1).float(), v.transpose(0, 1).float(), enable_gqa=True)
        torch.testing.assert_close(out[b].float(), want.transpose(0, 1), atol=tol, rtol=tol)


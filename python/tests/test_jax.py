"""baracuda.jax: plans as XLA custom calls, eager and under jax.jit, their gradients against JAX's own,
the generic call with an aliased argument, vmap, errors. On the CPU here; the same tests run on a GPU
where JAX has one."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
bj = pytest.importorskip("baracuda.jax")

import baracuda as bc  # noqa: E402
from conftest import randn  # noqa: E402

if not bc.ffi_handlers():
    pytest.skip("baracuda was built without XLA FFI", allow_module_level=True)

# JAX's own matmuls on a GPU default to TF32 (about 1e-3 relative): the references are computed in full f32
jax.config.update("jax_default_matmul_precision", "highest")
ON_GPU = jax.default_backend() == "gpu"


def close(a, b, tol=2e-5):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol, atol=tol)


def rms_ref(x, w):
    return x / jnp.sqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * w


def ln_ref(x, w, b):
    m = jnp.mean(x, -1, keepdims=True)
    return (x - m) / jnp.sqrt(jnp.mean((x - m) ** 2, -1, keepdims=True) + 1e-5) * w + b


def test_plain_functions_take_jax_arrays_eager_and_jitted(rng):
    x, w = jnp.asarray(randn(rng, 5, 48)), jnp.asarray(randn(rng, 48))
    y = bc.rms_norm(x, w)
    assert isinstance(y, jax.Array) and y.shape == x.shape and y.dtype == jnp.float32
    # on the CPU the same kernel as a NumPy call: the same bits (on a GPU the CUDA kernel: to rounding)
    if ON_GPU:
        close(y, bc.rms_norm(np.asarray(x), np.asarray(w)), 1e-5)
    else:
        np.testing.assert_array_equal(np.asarray(y), bc.rms_norm(np.asarray(x), np.asarray(w)))
    np.testing.assert_array_equal(np.asarray(jax.jit(bc.rms_norm)(x, w)), np.asarray(y))
    close(jax.jit(lambda a: bc.softmax(a, dim=0))(x), jax.nn.softmax(x, axis=0))
    close(jax.jit(lambda a: bc.binary("mul", a, 2.5))(x), x * 2.5)
    close(jax.jit(lambda a: bc.sum(a, dim=1))(x), jnp.sum(x, 1), 1e-4)


def test_bf16_round_trip(rng):
    x = jnp.asarray(randn(rng, 4, 32)).astype(jnp.bfloat16)
    y = jax.jit(bj.gelu)(x)
    assert y.dtype == jnp.bfloat16
    close(y.astype(jnp.float32), jax.nn.gelu(x.astype(jnp.float32), approximate=False), 1e-2)


@pytest.mark.parametrize("jit", [False, True])
def test_norm_gradients(rng, jit):
    x, w, b = jnp.asarray(randn(rng, 6, 40)), jnp.asarray(randn(rng, 40)), jnp.asarray(randn(rng, 40))
    up = jnp.asarray(randn(rng, 6, 40))
    g = jax.grad(lambda x, w: jnp.sum(bj.rms_norm(x, w) * up), (0, 1))
    for got, want in zip((jax.jit(g) if jit else g)(x, w), jax.grad(lambda x, w: jnp.sum(rms_ref(x, w) * up), (0, 1))(x, w)):
        close(got, want, 1e-4)
    g = jax.grad(lambda x, w, b: jnp.sum(bj.layer_norm(x, w, b) * up), (0, 1, 2))
    want = jax.grad(lambda x, w, b: jnp.sum(ln_ref(x, w, b) * up), (0, 1, 2))(x, w, b)
    for got, ref in zip((jax.jit(g) if jit else g)(x, w, b), want):
        close(got, ref, 1e-4)
    # no weight: the gradient of x alone
    close(jax.grad(lambda x: jnp.sum(bj.rms_norm(x) * up))(x), jax.grad(lambda x: jnp.sum(rms_ref(x, 1.0) * up))(x), 1e-4)


def test_softmax_unary_gradients(rng):
    x = jnp.asarray(randn(rng, 3, 7, 9))
    up = jnp.asarray(randn(rng, 3, 7, 9))
    for ours, theirs in ((lambda a: bj.softmax(a, 1), lambda a: jax.nn.softmax(a, 1)),
                         (lambda a: bj.log_softmax(a), jax.nn.log_softmax),
                         (bj.silu, jax.nn.silu), (bj.tanh, jnp.tanh), (bj.relu, jax.nn.relu),
                         (lambda a: bj.gelu(a, "tanh"), lambda a: jax.nn.gelu(a, approximate=True)),
                         (lambda a: bj.unary("leaky_relu", a, negative_slope=0.2),
                          lambda a: jax.nn.leaky_relu(a, 0.2))):
        close(ours(x), theirs(x), 1e-5)
        close(jax.jit(jax.grad(lambda a: jnp.sum(ours(a) * up)))(x), jax.grad(lambda a: jnp.sum(theirs(a) * up))(x), 1e-5)


@pytest.mark.parametrize("shapes", [((3, 5), (5, 7)), ((2, 1, 4, 6), (3, 6, 2)), ((6,), (6, 4)), ((1, 6), (6,))])
def test_matmul_gradients(rng, shapes):
    a, b = jnp.asarray(randn(rng, *shapes[0])), jnp.asarray(randn(rng, *shapes[1]))
    close(bj.matmul(a, b), a @ b, 1e-5)
    f = lambda a, b: jnp.sum(jnp.sin(bj.matmul(a, b)))  # noqa: E731
    f_ref = lambda a, b: jnp.sum(jnp.sin(a @ b))  # noqa: E731
    for got, want in zip(jax.jit(jax.grad(f, (0, 1)))(a, b), jax.grad(f_ref, (0, 1))(a, b)):
        close(got, want, 1e-5)


@pytest.mark.skipif(ON_GPU, reason="the grouped matmul runs on the CPU backend only so far")
def test_grouped_mm_gradients(rng):
    a, b = jnp.asarray(randn(rng, 7, 5)), jnp.asarray(randn(rng, 3, 5, 4))
    offsets = jnp.asarray(np.array([2, 2, 6], np.int32))  # groups of 2, 0 and 4 rows; row 6 in none

    def ref(a, b):
        return jnp.concatenate([a[:2] @ b[0], a[2:6] @ b[2], jnp.zeros((1, 4), a.dtype)])

    close(bj.grouped_mm(a, b, offsets), ref(a, b), 1e-5)
    f = lambda a, b: jnp.sum(jnp.sin(bj.grouped_mm(a, b, offsets)))  # noqa: E731
    for got, want in zip(jax.jit(jax.grad(f, (0, 1)))(a, b), jax.grad(lambda a, b: jnp.sum(jnp.sin(ref(a, b))), (0, 1))(a, b)):
        close(got, want, 1e-5)


@pytest.mark.parametrize("activation,bias", [("none", True), ("gelu", True), ("silu", False), ("relu", True)])
def test_linear_gradients(rng, activation, bias):
    x, w = jnp.asarray(randn(rng, 2, 3, 16)), jnp.asarray(randn(rng, 5, 16))
    b = jnp.asarray(randn(rng, 5)) if bias else None
    act = {"none": lambda v: v, "gelu": lambda v: jax.nn.gelu(v, approximate=False), "silu": jax.nn.silu,
           "relu": jax.nn.relu}[activation]

    def ref(x, w, b):
        return act(x @ w.T + (b if b is not None else 0))

    up = jnp.asarray(randn(rng, 2, 3, 5))
    close(bj.linear(x, w, b, activation=activation), ref(x, w, b), 1e-4)
    argnums = (0, 1, 2) if bias else (0, 1)
    got = jax.jit(jax.grad(lambda *p: jnp.sum(bj.linear(*p, activation=activation) * up), argnums))(x, w, b)
    want = jax.grad(lambda *p: jnp.sum(ref(*p) * up), argnums)(x, w, b)
    for g, r in zip(got, want):
        close(g, r, 1e-4)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_gradients(rng, reduction):
    logits = jnp.asarray(randn(rng, 6, 11))
    targets = jnp.asarray(np.array([0, 3, 10, -100, 7, 7], np.int32))
    valid = targets != -100
    safe = jnp.where(valid, targets, 0)

    def ref(z):
        per_row = jnp.where(valid, jax.nn.logsumexp(z, -1) - z[jnp.arange(6), safe], 0.0)
        return {"mean": jnp.sum(per_row) / jnp.sum(valid), "sum": jnp.sum(per_row), "none": per_row}[reduction]

    close(bj.cross_entropy(logits, targets, reduction=reduction), ref(logits), 1e-5)
    up = jnp.arange(6, dtype=jnp.float32) if reduction == "none" else 1.0
    got = jax.jit(jax.grad(lambda z: jnp.sum(bj.cross_entropy(z, targets, reduction=reduction) * up)))(logits)
    close(got, jax.grad(lambda z: jnp.sum(ref(z) * up))(logits), 1e-5)


def test_generic_call_aliases_written_arguments(rng):
    # batch norm in training with running statistics: read and written, so results aliasing operands
    x = jnp.asarray(randn(rng, 8, 3, 5))
    mean0, var0 = jnp.zeros(3), jnp.ones(3)
    desc = bc.BatchNormDescriptor(dtype="f32", shape=(8, 3, 5), channel_dim=1, eps=1e-5, momentum=0.1,
                                  training=True, running_stats=True, has_weight=False, has_bias=False)
    out = jax.jit(lambda x, m, v: bj.call(bc.BatchNormPlan, desc, x=x, running_mean=m, running_var=v))(x, mean0, var0)
    batch_mean = jnp.mean(x, (0, 2))
    close(out["running_mean"], 0.1 * batch_mean, 1e-5)
    close(out["running_var"], 0.9 + 0.1 * jnp.var(x, (0, 2)) * 40 / 39, 1e-5)
    close(out["y"], (x - batch_mean[None, :, None]) / jnp.sqrt(jnp.var(x, (0, 2))[None, :, None] + 1e-5), 1e-4)
    np.testing.assert_array_equal(np.asarray(mean0), np.zeros(3))  # the operand itself is untouched
    with pytest.raises(TypeError, match="in place"):
        bc.batch_norm(x, mean0, var0, training=True)


def test_vmap_and_workspace(rng):
    x = jnp.asarray(randn(rng, 4, 2, 33))
    close(jax.vmap(bj.softmax)(x), jax.nn.softmax(x, -1), 1e-6)
    # a plan with a workspace (the fused linear + cross-entropy's chunks): XLA allocates it
    h, w = jnp.asarray(randn(rng, 9, 16)), jnp.asarray(randn(rng, 13, 16))
    t = jnp.asarray(rng.integers(0, 13, 9).astype(np.int32))
    desc = bc.LinearCrossEntropyDescriptor(dtype="f32", tokens=9, hidden_size=16, vocab_size=13, index_dtype="i32",
                                           has_bias=False)
    plan = bc.LinearCrossEntropyPlan.select(desc, "cpu")
    loss = jax.jit(lambda h, w, t: bj.call(bc.LinearCrossEntropyPlan, desc, hidden=h, weight=w, targets=t)["loss"])(h, w, t)
    close(loss, bc.cross_entropy(np.asarray(h @ w.T), np.asarray(t)), 1e-5)
    assert plan.workspace_size() >= 0


def test_errors_are_exceptions(rng):
    x = jnp.asarray(randn(rng, 4, 8))
    with pytest.raises(bc.Error, match="RmsNormPlan"):  # at select, in Python
        bj.rms_norm(x, jnp.ones(8), eps=-1.0)
    t = jnp.asarray(np.array([0, 1, 2, 3], np.int64 if jax.config.jax_enable_x64 else np.int32))
    with pytest.raises(Exception, match="CrossEntropyPlan"):  # at select: the targets' rank
        bj.cross_entropy(x, t.reshape(2, 2))
    with pytest.raises(TypeError, match="class indices"):
        bj.cross_entropy(x, x)


@pytest.mark.parametrize("causal,gqa", [(False, 1), (True, 2)])
def test_attention_against_jax(rng, causal, gqa):
    # CUDA's attention is cuDNN's, f16 / bf16 only: there bf16 inputs against JAX's in f32 of the same values
    dt, tol, gtol = (jnp.bfloat16, 2e-2, 5e-2) if ON_GPU else (jnp.float32, 1e-5, 1e-4)
    B, S, Skv, H, D = 2, 7, 7 if causal else 11, 4, 16
    q = jnp.asarray(randn(rng, B, S, H, D)).astype(dt)
    k, v = (jnp.asarray(randn(rng, B, Skv, H // gqa, D)).astype(dt) for _ in range(2))

    def ref(q, k, v, bias=None):
        f32 = [t.astype(jnp.float32) for t in (q, k, v)]
        return jax.nn.dot_product_attention(*f32, bias=bias, is_causal=causal and bias is None)

    close(bj.attention(q, k, v, causal=causal), ref(q, k, v), tol)
    up = jnp.asarray(randn(rng, B, S, H, D))
    got = jax.jit(jax.grad(lambda *a: jnp.sum(bj.attention(*a, causal=causal) * up), (0, 1, 2)))(q, k, v)
    want = jax.grad(lambda *a: jnp.sum(ref(*a) * up), (0, 1, 2))(q, k, v)
    for g, w in zip(got, want):
        close(g, w, gtol)
    # an additive bias broadcast over the batch and heads: a constant (no gradient flows to it)
    bias = jnp.asarray(randn(rng, S, Skv)).astype(dt)
    close(bj.attention(q, k, v, bias), ref(q, k, v, bias.astype(jnp.float32)[None, None]), tol)
    assert float(jnp.max(jnp.abs(jax.grad(lambda b: jnp.sum(bj.attention(q, k, v, b).astype(jnp.float32)))(bias)))) == 0.0


def test_call_keys_on_parameter_values_and_refuses_what_it_cannot_do(rng):
    x = jnp.asarray(randn(rng, 64))

    def leaky(slope):
        p = bc.UnaryParameters()
        p.negative_slope = slope
        desc = bc.UnaryDescriptor(kind=bc.UnaryKind.leaky_relu, dtype="f32", shape=(64,), parameters=p)
        return bj.call(bc.UnaryPlan, desc, x=x)["out"]

    close(leaky(0.1), jax.nn.leaky_relu(x, 0.1), 1e-6)
    close(leaky(0.3), jax.nn.leaky_relu(x, 0.3), 1e-6)  # not the 0.1 plan again
    with pytest.raises(TypeError, match="jax.random"):
        bc.dropout(x, 0.5, seed=1, offset=0)
    plan = bc.SoftmaxPlan.select(bc.SoftmaxDescriptor(dtype="f32", shape=(64,), dim=0), "cpu")
    with pytest.raises(bc.Error, match="args.y"):  # a written argument given as an operand alone
        plan.ffi_target(["x", "y"], [])


def test_gated_rotary_embedding_and_their_gradients(rng):
    x = jnp.asarray(randn(rng, 3, 5, 16))
    a, b = x[..., :8], x[..., 8:]
    up = jnp.asarray(randn(rng, 3, 5, 8))
    close(bj.gated("swiglu", x), a * jax.nn.silu(b), 1e-5)
    close(jax.jit(jax.grad(lambda v: jnp.sum(bj.gated("geglu", v) * up)))(x),
          jax.grad(lambda v: jnp.sum(v[..., :8] * jax.nn.gelu(v[..., 8:], approximate=False) * up))(x), 1e-5)

    B, S, H, Hk, D = 2, 6, 4, 2, 8
    q, k = jnp.asarray(randn(rng, B, S, H, D)), jnp.asarray(randn(rng, B, S, Hk, D))
    positions = jnp.asarray(np.array([3, 0, 7, 100, 5, -2], np.int32))  # one row for every batch entry

    def rope(t):
        inv = 10000.0 ** (-jnp.arange(0, D, 2, dtype=jnp.float32) / D)
        angle = positions.astype(jnp.float32)[None, :, None, None] * inv
        t1, t2 = t[..., : D // 2], t[..., D // 2:]
        return jnp.concatenate([t1 * jnp.cos(angle) - t2 * jnp.sin(angle), t2 * jnp.cos(angle) + t1 * jnp.sin(angle)], -1)

    q_out, k_out = bj.rotary(q, k, positions)
    close(q_out, rope(q), 1e-5)
    close(k_out, rope(k), 1e-5)
    uq, uk = jnp.asarray(randn(rng, B, S, H, D)), jnp.asarray(randn(rng, B, S, Hk, D))
    got = jax.jit(jax.grad(lambda q, k: jnp.sum(bj.rotary(q, k, positions)[0] * uq) +
                           jnp.sum(bj.rotary(q, k, positions)[1] * uk), (0, 1)))(q, k)
    want = jax.grad(lambda q, k: jnp.sum(rope(q) * uq) + jnp.sum(rope(k) * uk), (0, 1))(q, k)
    for g, w in zip(got, want):
        close(g, w, 1e-5)

    weight = jnp.asarray(randn(rng, 10, 4))
    idx = jnp.asarray(np.array([1, 3, 3, 9, 0, 1], np.int32))
    close(bj.embedding(idx, weight), weight[idx], 0)
    u = jnp.asarray(randn(rng, 6, 4))
    close(jax.jit(jax.grad(lambda w: jnp.sum(bj.embedding(idx, w, padding_idx=3) * u)))(weight),
          jax.grad(lambda w: jnp.sum(jnp.where((idx == 3)[:, None], 0.0, 1.0) * w[idx] * u))(weight), 1e-6)


def test_group_norm_and_pointwise_losses_gradients(rng):
    x, w, b = jnp.asarray(randn(rng, 2, 6, 5)), jnp.asarray(randn(rng, 6)), jnp.asarray(randn(rng, 6))

    def gn_ref(x, w, b):
        g = x.reshape(2, 3, -1)
        m = jnp.mean(g, -1, keepdims=True)
        y = ((g - m) / jnp.sqrt(jnp.mean((g - m) ** 2, -1, keepdims=True) + 1e-5)).reshape(x.shape)
        return y * w[:, None] + b[:, None]

    up = jnp.asarray(randn(rng, 2, 6, 5))
    close(bj.group_norm(x, 3, w, b), gn_ref(x, w, b), 1e-5)
    for got, want in zip(jax.jit(jax.grad(lambda *a: jnp.sum(bj.group_norm(a[0], 3, a[1], a[2]) * up), (0, 1, 2)))(x, w, b),
                         jax.grad(lambda *a: jnp.sum(gn_ref(*a) * up), (0, 1, 2))(x, w, b)):
        close(got, want, 1e-4)

    p, t = jnp.asarray(randn(rng, 4, 7)), jnp.asarray(randn(rng, 4, 7))
    probs, labels = jax.nn.sigmoid(p), (t > 0).astype(jnp.float32)
    for ours, ref, a, c in (
            (bj.mse_loss, lambda a, c: jnp.mean((a - c) ** 2), p, t),
            (lambda a, c: bj.smooth_l1_loss(a, c, beta=0.5),
             lambda a, c: jnp.mean(jnp.where(jnp.abs(a - c) < 0.5, 0.5 * (a - c) ** 2 / 0.5, jnp.abs(a - c) - 0.25)), p, t),
            (bj.binary_cross_entropy_with_logits,
             lambda a, c: jnp.mean(jnp.maximum(a, 0) - a * c + jnp.log1p(jnp.exp(-jnp.abs(a)))), p, labels),
            (lambda a, c: bj.binary_cross_entropy(a, c, reduction="sum"),
             lambda a, c: -jnp.sum(c * jnp.log(a) + (1 - c) * jnp.log1p(-a)), probs, labels)):
        close(ours(a, c), ref(a, c), 1e-5)
        close(jax.jit(jax.grad(ours))(a, c), jax.grad(ref)(a, c), 1e-5)
    # the target is a constant: no gradient flows to it
    assert float(jnp.max(jnp.abs(jax.grad(lambda c: bj.mse_loss(p, c))(t)))) == 0.0


@pytest.mark.parametrize("reduction,bias", [("mean", True), ("sum", False), ("none", True)])
def test_linear_cross_entropy_against_the_logits(rng, reduction, bias):
    h, w = jnp.asarray(randn(rng, 9, 16)), jnp.asarray(randn(rng, 13, 16))
    b = jnp.asarray(randn(rng, 13)) if bias else None
    t = jnp.asarray(np.array([0, 12, 5, -100, 7, 7, 1, 2, 3], np.int32))
    valid = t != -100

    def ref(h, w, b):
        z = h @ w.T + (b if b is not None else 0)
        per = jnp.where(valid, jax.nn.logsumexp(z, -1) - z[jnp.arange(9), jnp.where(valid, t, 0)], 0.0)
        return {"mean": jnp.sum(per) / jnp.sum(valid), "sum": jnp.sum(per), "none": per}[reduction]

    close(bj.linear_cross_entropy(h, w, t, b, reduction=reduction), ref(h, w, b), 1e-4)
    up = jnp.arange(9, dtype=jnp.float32) if reduction == "none" else 1.0
    argnums = (0, 1, 2) if bias else (0, 1)
    got = jax.jit(jax.grad(lambda *a: jnp.sum(bj.linear_cross_entropy(a[0], a[1], t, *a[2:], reduction=reduction) * up),
                           argnums))(h, w, *([b] if bias else []))
    want = jax.grad(lambda *a: jnp.sum(ref(a[0], a[1], a[2] if bias else None) * up), argnums)(h, w, *([b] if bias else []))
    for g, r in zip(got, want):
        close(g, r, 1e-4)

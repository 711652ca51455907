"""The plain functions: outputs allocated with the input's framework, plans cached, NumPy references."""

import math

import numpy as np
import pytest

import baracuda as bc
from conftest import randn

TOL = dict(rtol=1e-5, atol=1e-5)


def test_rms_norm(rng):
    x, w = randn(rng, 3, 16), randn(rng, 16)
    y = bc.rms_norm(x, w, 1e-6)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w, **TOL)


def test_layer_norm(rng):
    x, w, b = randn(rng, 5, 8), randn(rng, 8), randn(rng, 8)
    y = bc.layer_norm(x, w, b)
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(y, ref, **TOL)


def test_group_norm(rng):
    x, w, b = randn(rng, 2, 6, 4, 5), randn(rng, 6), randn(rng, 6)
    g = x.reshape(2, 3, -1)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    ref = ref * w[:, None, None] + b[:, None, None]
    np.testing.assert_allclose(bc.group_norm(x, 3, w, b), ref, **TOL)
    np.testing.assert_allclose(bc.group_norm(x, 3, w, b, silu=True), ref / (1 + np.exp(-ref)), **TOL)
    last = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)  # channels-last view
    np.testing.assert_allclose(bc.group_norm(last, 3, w, b), ref, **TOL)


def test_batch_norm(rng):
    x, w, b = randn(rng, 4, 3, 5), randn(rng, 3), randn(rng, 3)
    rm, rv = np.zeros(3, np.float32), np.ones(3, np.float32)
    mean, var = x.mean((0, 2)), x.var((0, 2))
    ref = (x - mean[:, None]) / np.sqrt(var[:, None] + 1e-5) * w[:, None] + b[:, None]
    np.testing.assert_allclose(bc.batch_norm(x, rm, rv, w, b, training=True), ref, **TOL)
    np.testing.assert_allclose(rm, 0.1 * mean, **TOL)  # updated in place
    np.testing.assert_allclose(rv, 0.9 + 0.1 * var * 20 / 19, **TOL)
    inference = (x - rm[:, None]) / np.sqrt(rv[:, None] + 1e-5) * w[:, None] + b[:, None]
    np.testing.assert_allclose(bc.batch_norm(x, rm, rv, w, b), inference, **TOL)


def test_softmax_and_log_softmax(rng):
    x = randn(rng, 4, 6)
    e = np.exp(x - x.max(0, keepdims=True))
    np.testing.assert_allclose(bc.softmax(x, dim=0), e / e.sum(0, keepdims=True), **TOL)
    np.testing.assert_allclose(bc.log_softmax(x), x - np.log(np.exp(x).sum(-1, keepdims=True)), **TOL)


def test_matmul_batched_broadcast(rng):
    a, b = randn(rng, 2, 3, 4), randn(rng, 4, 5)
    np.testing.assert_allclose(bc.matmul(a, b), a @ b, **TOL)


def test_linear(rng):
    x, w, b = randn(rng, 7, 4), randn(rng, 3, 4), randn(rng, 3)
    np.testing.assert_allclose(bc.linear(x, w, b), x @ w.T + b, **TOL)
    np.testing.assert_allclose(bc.linear(x, w, activation="relu"), np.maximum(x @ w.T, 0), **TOL)


@pytest.mark.parametrize("transpose_b", [False, True])
def test_grouped_mm(rng, transpose_b):
    a = randn(rng, 9, 6)
    b = randn(rng, 4, 5, 6) if transpose_b else randn(rng, 4, 6, 5)
    offsets = np.array([3, 3, 7, 8], np.int32)  # groups of 3, 0, 4 and 1 rows; row 8 in none
    weights = b.transpose(0, 2, 1) if transpose_b else b
    want = np.zeros((9, 5), np.float32)
    start = 0
    for g, end in enumerate(offsets):
        want[start:end] = a[start:end] @ weights[g]
        start = end
    np.testing.assert_allclose(bc.grouped_mm(a, b, offsets, transpose_b=transpose_b), want, **TOL)
    dout = randn(rng, 9, 5)
    da, db = bc.grouped_mm_backward(dout, a, b, offsets.astype(np.int64), transpose_b=transpose_b)
    want_da, want_db, start = np.zeros_like(a), np.zeros((4, 6, 5), np.float32), 0
    for g, end in enumerate(offsets):
        want_da[start:end] = dout[start:end] @ weights[g].T
        want_db[g] = a[start:end].T @ dout[start:end]
        start = end
    np.testing.assert_allclose(da, want_da, **TOL)
    np.testing.assert_allclose(db, want_db.transpose(0, 2, 1) if transpose_b else want_db, **TOL)


def test_kv_cache_append_in_place(rng):
    kc, vc = randn(rng, 4, 2, 1, 3), randn(rng, 4, 2, 1, 2)
    k_want, v_want = kc.copy(), vc.copy()
    k_new, v_new = randn(rng, 2, 2, 1, 3), randn(rng, 2, 2, 1, 2)
    table, lens = np.array([[3, 1], [0, 2]], np.int32), np.array([1, 0], np.int32)
    bc.kv_cache_append(k_new, v_new, kc, vc, table, lens, new_lens=np.array([2, 1], np.int32))
    for b, i in ((0, 0), (0, 1), (1, 0)):
        p = lens[b] + i
        k_want[table[b, p // 2], p % 2], v_want[table[b, p // 2], p % 2] = k_new[b, i], v_new[b, i]
    np.testing.assert_array_equal(kc, k_want)
    np.testing.assert_array_equal(vc, v_want)


def test_paged_attention_matches_dense(rng):
    """Decode over a paged cache (shuffled blocks of 4 rows) equals attention over each sequence's keys
    held densely."""
    B, Sq, Hq, Hk, D, bs, mb = 3, 2, 4, 2, 8, 4, 3
    lens = np.array([9, 1, 4], np.int32)
    table = rng.permutation(B * mb).astype(np.int32).reshape(B, mb)
    kc, vc = randn(rng, B * mb, bs, Hk, D), randn(rng, B * mb, bs, Hk, D)
    q = randn(rng, B, Sq, Hq, D)
    out, lse = bc.paged_attention(q, kc, vc, table, lens, return_lse=True)
    for b in range(B):
        rows = [(table[b, j // bs], j % bs) for j in range(lens[b])]
        k = np.stack([kc[r] for r in rows])[None]
        v = np.stack([vc[r] for r in rows])[None]
        want, want_lse = bc.attention(q[b:b + 1], k, v, causal=True, alignment="bottom_right", return_lse=True)
        np.testing.assert_allclose(out[b:b + 1], want, **TOL)
        np.testing.assert_allclose(lse[b:b + 1], want_lse, **TOL)


def test_gelu(rng):
    x = randn(rng, 100)
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(bc.gelu(x), x * 0.5 * (1 + erf(x / math.sqrt(2))), rtol=1e-5, atol=1e-6)
    tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(bc.gelu(x, approximate="tanh"), tanh, rtol=1e-5, atol=1e-6)


def test_every_unary_kind_is_a_function(rng):
    x = randn(rng, 10)
    np.testing.assert_allclose(bc.exp(x), np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(bc.silu(x), x / (1 + np.exp(-x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bc.leaky_relu(x, negative_slope=0.2), np.where(x > 0, x, 0.2 * x), rtol=1e-6)
    np.testing.assert_allclose(bc.leaky_relu(x, negative_slope=0.3), np.where(x > 0, x, 0.3 * x), rtol=1e-6)
    assert bc.isnan(np.array([1.0, np.nan], np.float32)).tolist() == [False, True]


def test_binary_and_scalars(rng):
    a, b = randn(rng, 3, 4), randn(rng, 4)
    np.testing.assert_allclose(bc.binary("add", a, b, alpha=2.0), a + 2 * b, **TOL)
    np.testing.assert_allclose(bc.binary("mul", a, 3.0), a * 3, **TOL)
    np.testing.assert_array_equal(bc.binary("gt", a, b), a > b)


def test_reductions(rng):
    x = randn(rng, 3, 4, 5)
    np.testing.assert_allclose(bc.sum(x, dim=1), x.sum(1), **TOL)
    np.testing.assert_allclose(bc.mean(x, dim=(0, 2), keepdim=True), x.mean((0, 2), keepdims=True), **TOL)
    np.testing.assert_allclose(bc.amax(x), x.max(), **TOL)
    np.testing.assert_array_equal(bc.reduce("argmax", x, dim=2), x.argmax(2))


def test_dropout(rng):
    x = randn(rng, 50, 20)
    y = bc.dropout(x, 0.5, seed=1)
    kept = y != 0
    np.testing.assert_allclose(y[kept], 2 * x[kept], **TOL)
    np.testing.assert_array_equal(bc.dropout(x, 0.5, seed=1), y)
    assert bc.dropout(x, 0.5, seed=1, training=False) is x


def test_plans_are_cached(rng):
    bc.functional.clear_plan_cache()
    x = randn(rng, 2, 8)
    bc.softmax(x)
    bc.softmax(x + 1)
    assert len(bc.functional._plans) == 1
    bc.softmax(randn(rng, 3, 8))
    assert len(bc.functional._plans) == 2


def test_bf16_function(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = randn(rng, 4, 8).astype(ml_dtypes.bfloat16)
    y = bc.softmax(x)
    assert y.dtype == ml_dtypes.bfloat16
    xf = x.astype(np.float32)
    e = np.exp(xf - xf.max(-1, keepdims=True))
    np.testing.assert_allclose(y.astype(np.float32), e / e.sum(-1, keepdims=True), rtol=1e-2, atol=1e-2)


def test_errors_come_through(rng):
    with pytest.raises(bc.Error) as e:
        bc.softmax(randn(rng, 3, 4), dim=5)
    assert "SoftmaxPlan" in str(e.value) and "dim" in str(e.value)


def test_torch_inputs_give_torch_outputs():
    torch = pytest.importorskip("torch")
    x = torch.randn(3, 8)
    y = bc.softmax(x)
    assert isinstance(y, torch.Tensor)
    torch.testing.assert_close(y, torch.softmax(x, -1))


def test_jax_inputs_give_jax_outputs(rng):
    jax = pytest.importorskip("jax")
    x = jax.numpy.asarray(randn(rng, 3, 8))
    y = bc.softmax(x)
    assert isinstance(y, jax.Array)
    np.testing.assert_allclose(np.asarray(y), np.asarray(jax.nn.softmax(x, -1)), rtol=1e-5, atol=1e-6)


def test_pointwise_losses(rng):
    x, y = randn(rng, 3, 5), randn(rng, 3, 5)
    np.testing.assert_allclose(bc.mse_loss(x, y), ((x - y) ** 2).mean(), **TOL)
    np.testing.assert_allclose(bc.l1_loss(x, y, reduction="sum"), np.abs(x - y).sum(), **TOL)
    p = 1 / (1 + np.exp(-y))  # probabilities as targets
    ref = np.maximum(x, 0) - x * p + np.log1p(np.exp(-np.abs(x)))
    np.testing.assert_allclose(bc.binary_cross_entropy_with_logits(x, p, reduction="none"), ref, **TOL)
    # PyTorch's weight [3, 1] and pos_weight [5], broadcast
    w = (rng.random((3, 1)) + 0.5).astype(np.float32)
    pw = (rng.random(5) * 3).astype(np.float32)
    lw = 1 + (pw - 1) * p
    ref = w * ((1 - p) * x + lw * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)))
    got = bc.binary_cross_entropy_with_logits(x, p, weight=w, pos_weight=pw, reduction="none")
    np.testing.assert_allclose(got, ref, **TOL)
    np.testing.assert_allclose(bc.binary_cross_entropy_with_logits(x, p, weight=w, pos_weight=pw), ref.mean(), **TOL)
    q = 1 / (1 + np.exp(-x))
    ref = -w * (p * np.log(q) + (1 - p) * np.log1p(-q))
    np.testing.assert_allclose(bc.binary_cross_entropy(q, p, weight=w, reduction="sum"), ref.sum(), **TOL)


def test_cross_entropy_and_nll_loss(rng):
    x = randn(rng, 6, 9)
    t = np.array([0, 8, -100, 3, 2, 5], np.int64)  # one row ignored
    w = (rng.random(9) + 0.5).astype(np.float32)
    kept = t != -100
    lse = np.log(np.exp(x.astype(np.float64)).sum(-1))
    picked = x[np.arange(6), np.where(kept, t, 0)]
    np.testing.assert_allclose(bc.cross_entropy(x, t), (lse - picked)[kept].mean(), **TOL)
    logp = (x - lse[:, None]).astype(np.float32)  # log-probabilities
    wt = w[np.where(kept, t, 0)]
    ref = -(wt * logp[np.arange(6), np.where(kept, t, 0)])
    np.testing.assert_allclose(bc.nll_loss(logp, t, weight=w, reduction="none"), np.where(kept, ref, 0), **TOL)
    np.testing.assert_allclose(bc.nll_loss(logp, t, weight=w), ref[kept].sum() / wt[kept].sum(), **TOL)
    with pytest.raises(bc.Error) as e:
        bc.cross_entropy(x, t, label_smoothing=2.0)
    assert "CrossEntropyPlan" in str(e.value) and "label_smoothing" in str(e.value)


def test_cross_entropy_with_probabilities(rng):
    x = randn(rng, 6, 9)
    y = rng.random((6, 9)).astype(np.float32)  # need not sum to 1
    w = (rng.random(9) + 0.5).astype(np.float32)
    logp = x.astype(np.float64) - np.log(np.exp(x.astype(np.float64)).sum(-1, keepdims=True))
    q = w * (0.9 * y + 0.1 / 9)  # PyTorch's smoothing of probabilities, weighted
    rows = -(q * logp).sum(-1)
    np.testing.assert_allclose(bc.cross_entropy(x, y, weight=w, label_smoothing=0.1, reduction="none"), rows, **TOL)
    np.testing.assert_allclose(bc.cross_entropy(x, y, weight=w, label_smoothing=0.1), rows.mean(), **TOL)
    np.testing.assert_allclose(bc.cross_entropy(x, y, reduction="sum"), -(y * logp).sum(), **TOL)


def test_randperm_is_a_permutation_fixed_by_seed_and_offset():
    p = bc.randperm(1000, seed=3)
    assert p.dtype == np.int64 and sorted(p.tolist()) == list(range(1000))
    np.testing.assert_array_equal(p, bc.randperm(1000, seed=3))
    assert not np.array_equal(p, bc.randperm(1000, seed=3, offset=1000))
    q = bc.randperm(50, seed=1, dtype="i32")
    assert q.dtype == np.int32 and sorted(q.tolist()) == list(range(50))


def test_multinomial_draws_from_the_weights_and_marks_bad_rows():
    probs = np.array([[0, 1, 0, 3], [1, 1, 1, 1], [1, -1, 1, 1]], np.float32)
    s = bc.multinomial(probs, 2, seed=7)
    assert s.shape == (3, 2) and s.dtype == np.int64
    assert set(s[0].tolist()) == {1, 3} and len(set(s[1].tolist())) == 2 and s[2].tolist() == [-1, -1]
    np.testing.assert_array_equal(s, bc.multinomial(probs, 2, seed=7))
    r = bc.multinomial(probs[:2], 1000, replacement=True, seed=7, dtype="i32")
    assert r.dtype == np.int32 and set(r[0].tolist()) <= {1, 3} and abs((r[0] == 3).mean() - 0.75) < 0.06
    with pytest.raises(bc.Error) as e:
        bc.multinomial(probs, 5, seed=1)
    assert "MultinomialPlan" in str(e.value) and "samples" in str(e.value)

"""Every bound plan run once on the CPU through the generic binding, against a NumPy reference."""

import math
import re
from pathlib import Path

import numpy as np
import pytest

import baracuda as bc
from conftest import poisoned, randn

TOL = dict(rtol=1e-5, atol=1e-5)
ROOT = Path(__file__).resolve().parents[2]


def run(plan_cls, desc, **args):
    plan = plan_cls.select(desc, "cpu")
    plan.can_implement(**args)
    plan.run(**args)
    return plan


def test_every_plan_of_the_library_is_bound():
    # Every `using XPlan = Plan<XOp>;` of include/baracuda/ops/ (a new plan is one line of python/src/plans.cpp).
    headers = (ROOT / "include" / "baracuda" / "ops").glob("*.hpp")
    plans = sorted({m for h in headers for m in re.findall(r"using (\w+Plan) = Plan<", h.read_text())})
    assert len(plans) > 40
    missing = [p for p in plans if not hasattr(bc, p)]
    assert not missing, f"bind them in python/src/plans.cpp: {missing}"
    for name in plans:
        cls = getattr(bc, name)
        assert cls.schema["plan"] == name
        assert cls.arg_names()


def test_schema_and_sku():
    s = bc.RmsNormPlan.schema
    assert s["op"] and "f32" in s["dtypes"] and "bf16" in s["dtypes"]
    assert all({"name", "deterministic", "cpu", "cuda"} <= set(v) for v in s["variants"])
    plan = bc.RmsNormPlan.select(bc.NormDescriptor(shape=(4, 8), has_bias=False), "cpu")
    assert "cpu" in str(plan.sku())
    assert plan.precision_guarantee().deterministic
    specs = {a.name: a for a in plan.arg_specs()}
    assert specs["y"].output and specs["y"].shape == (4, 8) and specs["y"].dtype == "f32"
    assert not specs["bias"].present
    assert plan.stream.backend == bc.Backend.cpu
    assert {"name": "y", "output": True} in bc.RmsNormPlan.schema["args"]


def test_sku_of_views_and_preference(rng):
    desc = bc.UnaryDescriptor(kind=bc.UnaryKind.relu, shape=(4, 6))
    plan = bc.UnaryPlan.select(desc, "cpu")
    x = randn(rng, 6, 4).T
    assert plan.sku(x=x, out=poisoned(4, 6)).layout == bc.Layout.strided
    assert plan.sku().layout == bc.Layout.contiguous
    cpu_variant = next(v["name"] for v in bc.RmsNormPlan.schema["variants"] if v["cpu"])
    norm = bc.NormDescriptor(shape=(2, 8), has_bias=False)
    forced = bc.RmsNormPlan.select(norm, "cpu", bc.PlanPreference(variant=cpu_variant))
    assert forced.sku().variant == cpu_variant
    with pytest.raises(bc.Error) as e:
        bc.RmsNormPlan.select(norm, "cpu", bc.PlanPreference(variant="no_such_variant"))
    assert "preference.variant" in str(e.value)


# ---------------------------------------------------------------------------------------------
# matmul.hpp

def test_matmul_and_backward(rng):
    a, b = randn(rng, 3, 5), randn(rng, 5, 4)
    out = poisoned(3, 4)
    run(bc.MatmulPlan, bc.MatmulDescriptor(a=(3, 5), b=(5, 4)), a=a, b=b, out=out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)
    dout = randn(rng, 3, 4)
    da, db = poisoned(3, 5), poisoned(5, 4)
    run(bc.MatmulBackwardPlan, bc.MatmulDescriptor(a=(3, 5), b=(5, 4)), dout=dout, a=a, b=b, da=da, db=db)
    np.testing.assert_allclose(da, dout @ b.T, **TOL)
    np.testing.assert_allclose(db, a.T @ dout, **TOL)


def test_matmul_batch_invariant_rows(rng):
    # A row's bits are the same in a product of 70 rows and alone; the backward refuses the preference.
    a, b = randn(rng, 70, 300), randn(rng, 300, 24)
    pref = bc.PlanPreference(batch_invariant=True)
    whole = poisoned(70, 24)
    plan = bc.MatmulPlan.select(bc.MatmulDescriptor(a=(70, 300), b=(300, 24)), "cpu", pref)
    assert plan.precision_guarantee().batch_invariant and plan.sku().variant == "batch_invariant"
    plan.run(a=a, b=b, out=whole)
    np.testing.assert_allclose(whole, a @ b, rtol=1e-4, atol=1e-4)
    for row in (0, 13, 69):
        one = poisoned(1, 24)
        bc.MatmulPlan.select(bc.MatmulDescriptor(a=(1, 300), b=(300, 24)), "cpu", pref).run(
            a=np.ascontiguousarray(a[row:row + 1]), b=b, out=one)
        assert np.array_equal(one[0], whole[row])
    with pytest.raises(bc.Error) as e:
        bc.MatmulBackwardPlan.select(bc.MatmulDescriptor(a=(3, 5), b=(5, 4)), "cpu", pref)
    assert "preference.batch_invariant" in str(e.value)


def test_linear_and_backward(rng):
    x, w, bias = randn(rng, 6, 5), randn(rng, 3, 5), randn(rng, 3)
    y = poisoned(6, 3)
    desc = bc.LinearDescriptor(x=(6, 5), out_features=3, activation=bc.Activation.relu)
    pre = poisoned(6, 3)
    plan = bc.LinearPlan.select(desc, "cpu")
    plan.run(x=x, weight=w, bias=bias, y=y, pre=pre,
             workspace=np.empty(plan.workspace_size(), np.uint8))
    ref_pre = x @ w.T + bias
    np.testing.assert_allclose(pre, ref_pre, **TOL)
    np.testing.assert_allclose(y, np.maximum(ref_pre, 0), **TOL)
    dy = randn(rng, 6, 3)
    dx, dw, dbias = poisoned(6, 5), poisoned(3, 5), poisoned(3)
    run(bc.LinearBackwardPlan, desc, dy=dy, x=x, weight=w, pre=pre, dx=dx, dweight=dw, dbias=dbias)
    dpre = dy * (ref_pre > 0)
    np.testing.assert_allclose(dx, dpre @ w, **TOL)
    np.testing.assert_allclose(dw, dpre.T @ x, **TOL)
    np.testing.assert_allclose(dbias, dpre.sum(0), **TOL)


# ---------------------------------------------------------------------------------------------
# norm.hpp

@pytest.mark.parametrize("rms", [False, True])
def test_norm_and_backward(rng, rms):
    x, w, b = randn(rng, 4, 16), randn(rng, 16), randn(rng, 16)
    desc = bc.NormDescriptor(shape=(4, 16), eps=1e-5, has_bias=not rms)
    y, mean, rstd = poisoned(4, 16), poisoned(4), poisoned(4)
    xd = x.astype(np.float64)
    mu = np.zeros((4, 1)) if rms else xd.mean(-1, keepdims=True)
    var = (xd**2).mean(-1, keepdims=True) if rms else xd.var(-1, keepdims=True)
    r = 1 / np.sqrt(var + 1e-5)
    xhat = (xd - mu) * r
    if rms:
        run(bc.RmsNormPlan, desc, x=x, weight=w, y=y, rstd=rstd)
        np.testing.assert_allclose(y, xhat * w, **TOL)
    else:
        run(bc.LayerNormPlan, desc, x=x, weight=w, bias=b, y=y, mean=mean, rstd=rstd)
        np.testing.assert_allclose(y, xhat * w + b, **TOL)
        np.testing.assert_allclose(mean, mu[:, 0], **TOL)
    np.testing.assert_allclose(rstd, r[:, 0], rtol=1e-5)

    dy = randn(rng, 4, 16)
    dx, dw = poisoned(4, 16), poisoned(16)
    g = dy * w
    if rms:
        run(bc.RmsNormBackwardPlan, desc, dy=dy, x=x, weight=w, rstd=rstd, dx=dx, dweight=dw)
        ref_dx = r * (g - xhat * (g * xhat).mean(-1, keepdims=True))
    else:
        db = poisoned(16)
        run(bc.LayerNormBackwardPlan, desc, dy=dy, x=x, weight=w, mean=mean, rstd=rstd, dx=dx, dweight=dw, dbias=db)
        ref_dx = r * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
        np.testing.assert_allclose(db, dy.sum(0), **TOL)
    np.testing.assert_allclose(dx, ref_dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dw, (dy * xhat).sum(0), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# softmax.hpp

def test_softmax_and_backward(rng):
    x = randn(rng, 3, 7)
    y = poisoned(3, 7)
    desc = bc.SoftmaxDescriptor(shape=(3, 7), dim=-1)
    run(bc.SoftmaxPlan, desc, x=x, y=y)
    e = np.exp(x - x.max(-1, keepdims=True))
    ref = e / e.sum(-1, keepdims=True)
    np.testing.assert_allclose(y, ref, **TOL)
    dy, dx = randn(rng, 3, 7), poisoned(3, 7)
    run(bc.SoftmaxBackwardPlan, desc, y=y, dy=dy, dx=dx)
    np.testing.assert_allclose(dx, ref * (dy - (dy * ref).sum(-1, keepdims=True)), **TOL)


# ---------------------------------------------------------------------------------------------
# random.hpp

def test_random_uniform():
    out, again = poisoned(1000), poisoned(1000)
    desc = bc.RandomDescriptor(kind=bc.RandomKind.uniform, shape=(1000,), seed=7, low=-2.0, high=3.0)
    run(bc.RandomPlan, desc, out=out)
    run(bc.RandomPlan, desc, out=again)
    assert out.min() >= -2.0 and out.max() < 3.0 and abs(out.mean() - 0.5) < 0.3
    np.testing.assert_array_equal(out, again)  # a pure function of (seed, offset + i)


def test_dropout_and_backward(rng):
    x = randn(rng, 64, 32)
    y, mask = poisoned(64, 32), np.zeros((64, 32), bool)
    desc = bc.DropoutDescriptor(shape=(64, 32), p=0.25, seed=3)
    run(bc.DropoutPlan, desc, x=x, y=y, mask=mask)
    np.testing.assert_allclose(y, np.where(mask, x / 0.75, 0), **TOL)
    assert 0.6 < mask.mean() < 0.9
    dy, dx = randn(rng, 64, 32), poisoned(64, 32)
    run(bc.DropoutBackwardPlan, desc, dy=dy, dx=dx)
    np.testing.assert_allclose(dx, np.where(mask, dy / 0.75, 0), **TOL)


# ---------------------------------------------------------------------------------------------
# attention.hpp

def test_attention_causal_gqa(rng):
    b, s, hq, hkv, d = 1, 5, 4, 2, 8
    q, k, v = randn(rng, b, s, hq, d), randn(rng, b, s, hkv, d), randn(rng, b, s, hkv, d)
    out, lse = poisoned(b, s, hq, d), poisoned(b, hq, s)
    desc = bc.AttentionDescriptor(batch=b, seq_q=s, seq_kv=s, heads_q=hq, heads_kv=hkv, head_dim=d, head_dim_v=d,
                                  causal=True)
    run(bc.AttentionPlan, desc, q=q, k=k, v=v, out=out, lse=lse)
    kk, vv = np.repeat(k, hq // hkv, axis=2), np.repeat(v, hq // hkv, axis=2)
    scores = np.einsum("bqhd,bkhd->bhqk", q, kk) / math.sqrt(d)
    scores = np.where(np.tril(np.ones((s, s), bool)), scores, -np.inf)
    ref_lse = np.log(np.exp(scores).sum(-1))
    ref = np.einsum("bhqk,bkhd->bqhd", np.exp(scores - ref_lse[..., None]), vv)
    np.testing.assert_allclose(out, ref, **TOL)
    np.testing.assert_allclose(lse, ref_lse, **TOL)


def test_attention_reads_a_paged_kv_cache(rng):
    """Decode over a paged cache: two sequences of 6 and 3 keys in shuffled blocks of 2 rows, each
    query seeing the keys up to its bottom-right diagonal, against the same keys held densely."""
    hq, hkv, d, sq, bs = 2, 1, 8, 2, 2
    lens, table = np.array([6, 3], np.int32), np.array([[4, 0, 2], [1, 3, 0]], np.int32)
    q = randn(rng, 2, sq, hq, d)
    kc, vc = randn(rng, 5, bs, hkv, d), randn(rng, 5, bs, hkv, d)
    out = poisoned(2, sq, hq, d)
    desc = bc.AttentionDescriptor(batch=2, seq_q=sq, seq_kv=6, heads_q=hq, heads_kv=hkv, head_dim=d, head_dim_v=d,
                                  causal=True, alignment=bc.CausalAlignment.bottom_right, paged=True, block_size=bs,
                                  num_blocks=5, max_blocks=3)
    run(bc.AttentionPlan, desc, q=q, k=kc, v=vc, out=out, block_table=table, seq_lens_kv=lens)
    for b, n in enumerate(lens):
        rows = [table[b, j // bs] * bs + j % bs for j in range(n)]
        k, v = kc.reshape(-1, hkv, d)[rows], vc.reshape(-1, hkv, d)[rows]
        scores = np.einsum("qhd,khd->hqk", q[b], np.repeat(k, hq // hkv, axis=1)) / math.sqrt(d)
        visible = np.arange(n)[None, :] <= np.arange(sq)[:, None] + n - sq
        p = np.exp(np.where(visible, scores, -np.inf) - scores.max(-1, keepdims=True))
        ref = np.einsum("hqk,khd->qhd", p / p.sum(-1, keepdims=True), np.repeat(v, hq // hkv, axis=1))
        np.testing.assert_allclose(out[b], ref, **TOL)
    with pytest.raises(bc.Error, match="args.block_table"):
        run(bc.AttentionPlan, desc, q=q, k=kc, v=vc, out=out, block_table=table + 5, seq_lens_kv=lens)



def test_kv_cache_append_writes_where_the_table_maps(rng):
    """Two sequences holding 3 and 0 keys append 2 and 1 tokens (new_lens: the second's other token
    is padding) into shuffled blocks of 2 rows; every other row of the caches keeps its values."""
    bs, hkv, d = 2, 2, 4
    table = np.array([[4, 0, 2], [1, 3, 0]], np.int32)
    lens, new_lens = np.array([3, 0], np.int32), np.array([2, 1], np.int32)
    kc, vc = randn(rng, 5, bs, hkv, d), randn(rng, 5, bs, hkv, 3)
    k_before, v_before = kc.copy(), vc.copy()
    k_new, v_new = randn(rng, 2, 2, hkv, d), randn(rng, 2, 2, hkv, 3)
    desc = bc.KvCacheAppendDescriptor(batch=2, new_tokens=2, heads_kv=hkv, head_dim=d, head_dim_v=3, block_size=bs,
                                      num_blocks=5, max_blocks=3)
    run(bc.KvCacheAppendPlan, desc, k_new=k_new, v_new=v_new, block_table=table, seq_lens=lens, new_lens=new_lens,
        k_cache=kc, v_cache=vc)
    k_want, v_want = k_before.copy(), v_before.copy()
    for b in range(2):
        for i in range(new_lens[b]):
            p = lens[b] + i
            k_want[table[b, p // bs], p % bs] = k_new[b, i]
            v_want[table[b, p // bs], p % bs] = v_new[b, i]
    np.testing.assert_array_equal(kc, k_want)
    np.testing.assert_array_equal(vc, v_want)

# ---------------------------------------------------------------------------------------------
# loss.hpp

def test_pointwise_losses_and_backward(rng):
    x, y = randn(rng, 4, 6), randn(rng, 4, 6)
    desc = bc.PointwiseLossDescriptor(shape=(4, 6), kind=bc.PointwiseLossKind.huber, beta=0.5,
                                      reduction=bc.LossReduction.mean)
    loss = poisoned()
    run(bc.PointwiseLossPlan, desc, input=x, target=y, loss=loss)
    d = (x - y).astype(np.float64)
    a = np.abs(d)
    np.testing.assert_allclose(loss, np.where(a < 0.5, 0.5 * d * d, 0.5 * (a - 0.25)).mean(), **TOL)
    dloss, dx = np.array(3.0, np.float32), poisoned(4, 6)
    run(bc.PointwiseLossBackwardPlan, desc, dloss=dloss, input=x, target=y, dinput=dx)
    np.testing.assert_allclose(dx, 3.0 / 24 * np.where(a < 0.5, d, 0.5 * np.sign(d)), **TOL)


def test_cross_entropy_and_backward(rng):
    x = randn(rng, 5, 7)
    t = np.array([0, 6, -100, 3, 2], np.int64)  # one row ignored
    loss, lse = poisoned(), poisoned(5)
    desc = bc.CrossEntropyDescriptor(shape=(5, 7), reduction=bc.LossReduction.mean, index_dtype="i64")
    run(bc.CrossEntropyPlan, desc, logits=x, targets=t, loss=loss, lse=lse)
    ref_lse = np.log(np.exp(x).sum(-1))
    kept = t != -100
    np.testing.assert_allclose(lse, ref_lse, **TOL)
    np.testing.assert_allclose(loss, (ref_lse - x[np.arange(5), np.where(kept, t, 0)])[kept].mean(), **TOL)
    dloss, dx = np.array(2.0, np.float32), poisoned(5, 7)
    run(bc.CrossEntropyBackwardPlan, desc, dloss=dloss, logits=x, targets=t, lse=lse, dlogits=dx)
    p = np.exp(x - ref_lse[:, None])
    p[np.arange(5)[kept], t[kept]] -= 1
    np.testing.assert_allclose(dx, np.where(kept[:, None], 2.0 * p / kept.sum(), 0), **TOL)


# ---------------------------------------------------------------------------------------------
# rotary.hpp

@pytest.mark.parametrize("layout", ["half_split", "interleaved"])
def test_rotary_and_backward(rng, layout):
    b, s, hq, hk, d, rd = 2, 5, 4, 2, 10, 6
    q, k = randn(rng, b, s, hq, d), randn(rng, b, s, hk, d)
    pos = rng.integers(0, 1000, (b, s)).astype(np.int64)
    q_out, k_out = poisoned(b, s, hq, d), poisoned(b, s, hk, d)
    desc = bc.RotaryDescriptor(batch=b, seq_len=s, q_heads=hq, k_heads=hk, head_dim=d, rotary_dim=rd,
                               layout=getattr(bc.RotaryLayout, layout), index_dtype="i64")
    run(bc.RotaryPlan, desc, q=q, k=k, positions=pos, q_out=q_out, k_out=k_out)
    angle = pos[..., None, None].astype(np.float64) * 10000.0 ** (-2.0 * np.arange(rd // 2) / rd)
    c, sn = np.cos(angle), np.sin(angle)
    ia = np.arange(0, rd, 2) if layout == "interleaved" else np.arange(rd // 2)
    ib = ia + 1 if layout == "interleaved" else ia + rd // 2

    def rotated(x, sign=1.0):
        out = x.astype(np.float64).copy()
        xa, xb = x[..., ia].astype(np.float64), x[..., ib].astype(np.float64)
        out[..., ia], out[..., ib] = xa * c - sign * xb * sn, xb * c + sign * xa * sn
        return out

    np.testing.assert_allclose(q_out, rotated(q), **TOL)
    np.testing.assert_allclose(k_out, rotated(k), **TOL)
    dq, dk = poisoned(b, s, hq, d), poisoned(b, s, hk, d)
    run(bc.RotaryBackwardPlan, desc, dq_out=q_out, dk_out=k_out, positions=pos, dq=dq, dk=dk)
    np.testing.assert_allclose(dq, q, **TOL)  # the transposed rotation undoes the forward
    np.testing.assert_allclose(dk, k, **TOL)


# ---------------------------------------------------------------------------------------------
# unary.hpp, binary.hpp, ternary.hpp, binary_param.hpp, gated.hpp

def test_unary_and_backward(rng):
    x = randn(rng, 5, 6)
    out = poisoned(5, 6)
    desc = bc.UnaryDescriptor(kind=bc.UnaryKind.tanh, shape=(5, 6))
    run(bc.UnaryPlan, desc, x=x, out=out)
    np.testing.assert_allclose(out, np.tanh(x), **TOL)
    dout, dx = randn(rng, 5, 6), poisoned(5, 6)
    run(bc.UnaryBackwardPlan, desc, dout=dout, x=x, dx=dx)
    np.testing.assert_allclose(dx, dout * (1 - np.tanh(x) ** 2), **TOL)


def test_binary_broadcast_and_backward(rng):
    a, b = randn(rng, 4, 5), randn(rng, 5)
    out = poisoned(4, 5)
    desc = bc.BinaryDescriptor(kind=bc.BinaryKind.mul, a_shape=(4, 5), b_shape=(5,))
    run(bc.BinaryPlan, desc, a=a, b=b, out=out)
    np.testing.assert_allclose(out, a * b, **TOL)
    dout, da, db = randn(rng, 4, 5), poisoned(4, 5), poisoned(5)
    run(bc.BinaryBackwardPlan, desc, dout=dout, a=a, b=b, da=da, db=db)
    np.testing.assert_allclose(da, dout * b, **TOL)
    np.testing.assert_allclose(db, (dout * a).sum(0), **TOL)


def test_ternary_where_and_backward(rng):
    cond = rng.random((3, 4)) < 0.5
    b, c = randn(rng, 3, 4), randn(rng, 3, 4)
    out = poisoned(3, 4)
    desc = bc.TernaryDescriptor(kind=bc.TernaryKind.where, a_shape=(3, 4), b_shape=(3, 4), c_shape=(3, 4))
    run(bc.TernaryPlan, desc, a=cond, b=b, c=c, out=out)
    np.testing.assert_array_equal(out, np.where(cond, b, c))
    dout, db, dc = randn(rng, 3, 4), poisoned(3, 4), poisoned(3, 4)
    run(bc.TernaryBackwardPlan, desc, dout=dout, a=cond, b=b, c=c, db=db, dc=dc)
    np.testing.assert_array_equal(db, np.where(cond, dout, 0))
    np.testing.assert_array_equal(dc, np.where(cond, 0, dout))


@pytest.mark.parametrize("name", ["Lerp", "Addcmul"])
def test_binary_param_and_backward(rng, name):
    a, b = randn(rng, 3, 8), randn(rng, 3, 8)
    out = poisoned(3, 8)
    desc = bc.BinaryParamDescriptor(shape=(3, 8), weight=0.25)
    run(getattr(bc, name + "Plan"), desc, a=a, b=b, out=out)
    ref = a + 0.25 * (b - a) if name == "Lerp" else a + 0.25 * b
    np.testing.assert_allclose(out, ref, **TOL)
    dout, da, db = randn(rng, 3, 8), poisoned(3, 8), poisoned(3, 8)
    run(getattr(bc, name + "BackwardPlan"), desc, dout=dout, da=da, db=db)
    np.testing.assert_allclose(da, dout * (0.75 if name == "Lerp" else 1.0), **TOL)
    np.testing.assert_allclose(db, dout * 0.25, **TOL)


def test_gated_glu_and_backward(rng):
    x = randn(rng, 4, 10)
    a, g = x[:, :5], x[:, 5:]
    s = 1 / (1 + np.exp(-g))
    out = poisoned(4, 5)
    desc = bc.GatedDescriptor(kind=bc.GatedKind.glu, shape=(4, 10))
    run(bc.GatedPlan, desc, x=x, out=out)
    np.testing.assert_allclose(out, a * s, **TOL)
    dout, dx = randn(rng, 4, 5), poisoned(4, 10)
    run(bc.GatedBackwardPlan, desc, dout=dout, x=x, dx=dx)
    np.testing.assert_allclose(dx, np.concatenate([dout * s, dout * a * s * (1 - s)], -1), **TOL)


# ---------------------------------------------------------------------------------------------
# reduce.hpp, scan.hpp, segment.hpp

def test_reduce_and_backward(rng):
    x = randn(rng, 3, 4, 5)
    out = poisoned(3, 5)
    desc = bc.ReduceDescriptor(kind=bc.ReduceKind.sum, shape=(3, 4, 5), dims=1)
    run(bc.ReducePlan, desc, x=x, out=out)
    np.testing.assert_allclose(out, x.sum(1), **TOL)
    dout, dx = randn(rng, 3, 5), poisoned(3, 4, 5)
    run(bc.ReduceBackwardPlan, desc, x=x, out=out, dout=dout, dx=dx)
    np.testing.assert_allclose(dx, np.broadcast_to(dout[:, None, :], (3, 4, 5)), **TOL)


def test_argmax_writes_indices(rng):
    x = randn(rng, 6, 9)
    indices = np.full(6, -1, np.int64)
    desc = bc.ReduceDescriptor(kind=bc.ReduceKind.argmax, shape=(6, 9), dims=(1,))
    assert desc.dims == (1,)
    run(bc.ReducePlan, desc, x=x, indices=indices)
    np.testing.assert_array_equal(indices, x.argmax(1))


def test_scan_and_backward(rng):
    x = randn(rng, 4, 6)
    out = poisoned(4, 6)
    desc = bc.ScanDescriptor(kind=bc.ScanKind.cumsum, shape=(4, 6), dim=1)
    run(bc.ScanPlan, desc, x=x, out=out)
    np.testing.assert_allclose(out, np.cumsum(x, 1), **TOL)
    dout, dx = randn(rng, 4, 6), poisoned(4, 6)
    run(bc.ScanBackwardPlan, desc, x=x, out=out, dout=dout, dx=dx)
    np.testing.assert_allclose(dx, np.cumsum(dout[:, ::-1], 1)[:, ::-1], **TOL)


@pytest.mark.parametrize("kind", ["Sum", "Mean", "Max", "Min"])
def test_segment_and_backward(rng, kind):
    ids = np.array([0, 0, 1, 2, 2, 2, 3], np.int64)
    data = randn(rng, 7, 3)
    desc = bc.SegmentDescriptor(data_shape=(7, 3), num_segments=4, form=bc.SegmentForm.sorted_ids)
    out, indices = poisoned(4, 3), np.full((4, 3), -7, np.int64)
    args = dict(data=data, segment_ids=ids, out=out)
    if kind in ("Max", "Min"):
        args["indices"] = indices
    run(getattr(bc, f"Segment{kind}Plan"), desc, **args)
    reduce = {"Sum": np.sum, "Mean": np.mean, "Max": np.max, "Min": np.min}[kind]
    ref = np.stack([reduce(data[ids == s], axis=0) for s in range(4)])
    np.testing.assert_allclose(out, ref, **TOL)

    dout, ddata = randn(rng, 4, 3), poisoned(7, 3)
    bargs = dict(dout=dout, segment_ids=ids, ddata=ddata)
    if kind in ("Max", "Min"):
        bargs["indices"] = indices
    bad = np.zeros(1, np.int64)
    run(getattr(bc, f"Segment{kind}BackwardPlan"), desc, bad_index_count=bad, **bargs)
    if kind == "Sum":
        ref_d = dout[ids]
    elif kind == "Mean":
        ref_d = dout[ids] / np.bincount(ids)[ids][:, None]
    else:
        ref_d = np.zeros((7, 3), np.float32)
        for s in range(4):
            for j in range(3):
                ref_d[indices[s, j], j] = dout[s, j]
    np.testing.assert_allclose(ddata, ref_d, **TOL)
    assert bad[0] == 0


# ---------------------------------------------------------------------------------------------
# copy.hpp, indexing.hpp

def test_cast_and_fill(rng):
    x = randn(rng, 3, 5)
    y = np.zeros((3, 5), np.float64)
    run(bc.CastPlan, bc.CastDescriptor(dtype="f32", out_dtype=np.float64, shape=(3, 5)), x=x, y=y)
    np.testing.assert_array_equal(y, x.astype(np.float64))
    z = poisoned(2, 3)
    run(bc.FillPlan, bc.FillDescriptor(shape=(2, 3), value=2.5), y=z)
    np.testing.assert_array_equal(z, np.full((2, 3), 2.5, np.float32))


def test_gather_and_backward(rng):
    src = randn(rng, 5, 4)
    index = rng.integers(0, 5, (3, 4)).astype(np.int64)
    out = poisoned(3, 4)
    desc = bc.GatherDescriptor(src_shape=(5, 4), index_shape=(3, 4), dim=0)
    run(bc.GatherPlan, desc, src=src, index=index, out=out)
    np.testing.assert_array_equal(out, np.take_along_axis(src, index, 0))
    dout, dsrc = randn(rng, 3, 4), np.zeros((5, 4), np.float32)
    run(bc.GatherBackwardPlan, desc, dout=dout, index=index, dsrc=dsrc)
    ref = np.zeros((5, 4), np.float32)
    np.add.at(ref, (index, np.arange(4)[None, :]), dout)
    np.testing.assert_allclose(dsrc, ref, **TOL)


def test_scatter_add(rng):
    src = randn(rng, 3, 4)
    index = rng.integers(0, 5, (3, 4)).astype(np.int64)
    dst = randn(rng, 5, 4)
    ref = dst.copy()
    np.add.at(ref, (index, np.arange(4)[None, :]), src)
    run(bc.ScatterAddPlan, bc.ScatterAddDescriptor(dst_shape=(5, 4), index_shape=(3, 4), dim=0),
        src=src, index=index, dst=dst)
    np.testing.assert_allclose(dst, ref, **TOL)


def test_index_select_and_backward(rng):
    src = randn(rng, 4, 6)
    index = np.array([5, 0, 0, 3], np.int32)
    out = poisoned(4, 4)
    desc = bc.IndexSelectDescriptor(index_dtype="i32", src_shape=(4, 6), dim=1, num_indices=4)
    run(bc.IndexSelectPlan, desc, src=src, index=index, out=out)
    np.testing.assert_array_equal(out, src[:, index])
    dout, dsrc = randn(rng, 4, 4), np.zeros((4, 6), np.float32)
    run(bc.IndexSelectBackwardPlan, desc, dout=dout, index=index, dsrc=dsrc)
    ref = np.zeros((4, 6), np.float32)
    np.add.at(ref, (slice(None), index), dout)
    np.testing.assert_allclose(dsrc, ref, **TOL)


def test_embedding_and_backward(rng):
    weight = randn(rng, 10, 3)
    indices = np.array([1, 9, 1, 0, 4], np.int64)
    out = poisoned(5, 3)
    desc = bc.EmbeddingDescriptor(num_embeddings=10, embedding_dim=3, num_indices=5)
    run(bc.EmbeddingPlan, desc, weight=weight, indices=indices, out=out)
    np.testing.assert_array_equal(out, weight[indices])
    dout, dweight = randn(rng, 5, 3), np.zeros((10, 3), np.float32)
    run(bc.EmbeddingBackwardPlan, desc, dout=dout, indices=indices, dweight=dweight)
    ref = np.zeros((10, 3), np.float32)
    np.add.at(ref, indices, dout)
    np.testing.assert_allclose(dweight, ref, **TOL)
    assert math.isfinite(float(dweight.sum()))


def test_precompile_fills_the_kernel_cache(tmp_path, monkeypatch):
    """baracuda.precompile compiles (NVRTC, no GPU needed) into the cache the C++ library reads; a second
    call finds every program there."""
    monkeypatch.setenv("BARACUDA_CACHE_DIR", str(tmp_path))
    try:
        first = bc.precompile(arch=90, threads=2, row_lengths=[768], only=["random<"])
    except bc.Error as e:  # a build without CUDA (no kernel cache either)
        assert e.code == "unsupported" and "without CUDA" in str(e)
        assert bc.kernel_cache_directory() == ""
        return
    assert bc.kernel_cache_directory() == str(tmp_path)
    assert first["programs"] == first["compiled"] + first["from_cache"] > 0
    assert first["cache_directory"] == str(tmp_path) and any(tmp_path.iterdir())
    second = bc.precompile(arch=90, row_lengths=[768], only=["random<"])
    assert second["compiled"] == 0 and second["from_cache"] == first["programs"]
    with pytest.raises(bc.Error, match="options.only"):
        bc.precompile(only=["no such family"])

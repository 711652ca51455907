"""Tensors through DLPack: zero-copy, in place, strided views, every dtype, other frameworks."""

import numpy as np
import pytest

import baracuda as bc
from conftest import poisoned, randn


def test_output_written_in_place_into_the_callers_array(rng):
    x = randn(rng, 4, 8)
    y = poisoned(4, 8)
    before = y.__array_interface__["data"][0]
    plan = bc.UnaryPlan.select(bc.UnaryDescriptor(kind=bc.UnaryKind.neg, shape=(4, 8)), "cpu")
    plan.run(x=x, out=y)
    assert y.__array_interface__["data"][0] == before
    np.testing.assert_array_equal(y, -x)


def test_in_place_on_the_input(rng):
    x = randn(rng, 3, 5)
    ref = np.abs(x)
    plan = bc.UnaryPlan.select(bc.UnaryDescriptor(kind=bc.UnaryKind.abs, shape=(3, 5)), "cpu")
    plan.run(x=x, out=x)
    np.testing.assert_array_equal(x, ref)


def test_transposed_input_view(rng):
    base = randn(rng, 6, 4)
    a = base.T  # (4, 6), strides (1, 4) in elements: no copy
    assert not a.flags.c_contiguous
    b = randn(rng, 6, 3)
    out = poisoned(4, 3)
    plan = bc.MatmulPlan.select(bc.MatmulDescriptor(a=(4, 6), b=(6, 3)), "cpu")
    plan.run(a=a, b=b, out=out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)


def test_strided_output_view_leaves_the_gaps_alone(rng):
    x = randn(rng, 5, 4)
    big = np.full((5, 8), 7.0, np.float32)
    out = big[:, ::2]  # every other column
    plan = bc.UnaryPlan.select(bc.UnaryDescriptor(kind=bc.UnaryKind.square, shape=(5, 4)), "cpu")
    plan.run(x=x, out=out)
    np.testing.assert_allclose(big[:, ::2], x * x, rtol=1e-6)
    np.testing.assert_array_equal(big[:, 1::2], 7.0)


def test_broadcast_input_view(rng):
    row = randn(rng, 6)
    a = np.broadcast_to(row, (3, 6))  # stride 0 along dim 0, read-only
    b = randn(rng, 3, 6)
    out = poisoned(3, 6)
    plan = bc.BinaryPlan.select(bc.BinaryDescriptor(kind=bc.BinaryKind.add, a_shape=(3, 6), b_shape=(3, 6)), "cpu")
    plan.run(a=a, b=b, out=out)
    np.testing.assert_allclose(out, row + b)


@pytest.mark.parametrize("dtype", ["f16", "f32", "f64", "i8", "u8", "i32", "i64", "bool"])
def test_every_numpy_dtype_round_trips(rng, dtype):
    np_dtype = bc.functional._NumPy.dtype(dtype)
    x = (rng.integers(0, 2, (3, 4)) if dtype == "bool" else rng.integers(0, 100, (3, 4))).astype(np_dtype)
    y = np.zeros((3, 4), np_dtype)
    plan = bc.CastPlan.select(bc.CastDescriptor(dtype=dtype, out_dtype=dtype, shape=(3, 4)), "cpu")
    plan.run(x=x, y=y)
    np.testing.assert_array_equal(y, x)
    assert bc.dtype_name(x.dtype) == dtype


def test_bf16_through_ml_dtypes(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = randn(rng, 4, 32).astype(ml_dtypes.bfloat16)
    w = randn(rng, 32).astype(ml_dtypes.bfloat16)
    y = np.zeros((4, 32), ml_dtypes.bfloat16)
    desc = bc.NormDescriptor(dtype=ml_dtypes.bfloat16, shape=(4, 32), has_bias=False, eps=1e-6)
    assert desc.dtype == "bf16"
    bc.RmsNormPlan.select(desc, "cpu").run(x=x, weight=w, y=y)
    xf, wf = x.astype(np.float32), w.astype(np.float32)
    ref = xf / np.sqrt((xf * xf).mean(-1, keepdims=True) + 1e-6) * wf
    np.testing.assert_allclose(y.astype(np.float32), ref, rtol=2e-2, atol=2e-2)
    # ... and the cast between bf16 and f32, both ways
    back = np.zeros((4, 32), np.float32)
    bc.CastPlan.select(bc.CastDescriptor(dtype="bf16", out_dtype="f32", shape=(4, 32)), "cpu").run(x=y, y=back)
    np.testing.assert_array_equal(back, y.astype(np.float32))


def test_read_only_inputs_from_jax():
    jnp = pytest.importorskip("jax.numpy")
    import jax

    x = jax.device_put(jnp.arange(12, dtype=jnp.float32).reshape(3, 4), jax.devices("cpu")[0])
    out = poisoned(3, 4)
    plan = bc.UnaryPlan.select(bc.UnaryDescriptor(kind=bc.UnaryKind.exp, shape=(3, 4)), "cpu")
    plan.run(x=x, out=out)
    np.testing.assert_allclose(out, np.exp(np.asarray(x)), rtol=1e-6)


def test_workspace_given_as_a_tensor(rng):
    x, w = randn(rng, 64, 32), randn(rng, 32)
    dy = randn(rng, 64, 32)
    desc = bc.NormDescriptor(shape=(64, 32), has_bias=False)
    rstd = poisoned(64)
    y = poisoned(64, 32)
    bc.RmsNormPlan.select(desc, "cpu").run(x=x, weight=w, y=y, rstd=rstd)
    plan = bc.RmsNormBackwardPlan.select(desc, "cpu")
    dx, dw = poisoned(64, 32), poisoned(32)
    ws = np.empty(max(plan.workspace_size(), 1), np.uint8)
    plan.run(dy=dy, x=x, weight=w, rstd=rstd, dx=dx, dweight=dw, workspace=ws)
    assert np.isfinite(dx).all() and np.isfinite(dw).all()


def test_torch_tensors_zero_copy():
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 8)
    y = torch.empty(4, 8)
    ptr = y.data_ptr()
    bc.UnaryPlan.select(bc.UnaryDescriptor(kind=bc.UnaryKind.neg, shape=(4, 8)), "cpu").run(x=x, out=y)
    assert y.data_ptr() == ptr
    assert torch.equal(y, -x)

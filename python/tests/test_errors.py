"""A failing Status is a baracuda.Error (a RuntimeError) carrying the code and a message that names the
plan and the field; the binding's own errors read the same way."""

import numpy as np
import pytest

import baracuda as bc


def test_error_is_a_runtime_error():
    assert issubclass(bc.Error, RuntimeError)


def test_select_names_the_descriptor_field():
    with pytest.raises(bc.Error) as e:
        bc.RmsNormPlan.select(bc.NormDescriptor(dtype="i32", shape=(2, 4)), "cpu")
    assert e.value.code == "unsupported"
    assert "RmsNormPlan" in str(e.value) and "descriptor.dtype" in str(e.value)
    assert "descriptor.dtype" in e.value.message


def test_invalid_descriptor_value():
    with pytest.raises(bc.Error) as e:
        bc.LayerNormPlan.select(bc.NormDescriptor(shape=(2, 4), eps=-1.0), "cpu")
    assert e.value.code == "invalid_problem" and "eps" in str(e.value)


def test_can_implement_names_the_argument():
    plan = bc.SoftmaxPlan.select(bc.SoftmaxDescriptor(shape=(3, 4)), "cpu")
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(bc.Error) as e:
        plan.can_implement(x=x, y=np.zeros((3, 5), np.float32))
    assert "SoftmaxPlan" in str(e.value) and "args.y" in str(e.value)
    with pytest.raises(bc.Error) as e:
        plan.run(x=x, y=np.zeros((3, 4), np.float64))
    assert "args.y" in str(e.value)


def test_missing_output_names_it():
    plan = bc.SoftmaxPlan.select(bc.SoftmaxDescriptor(shape=(3, 4)), "cpu")
    with pytest.raises(bc.Error) as e:
        plan.run(x=np.zeros((3, 4), np.float32))
    assert "args.y" in str(e.value)


def test_unknown_argument_lists_the_names():
    plan = bc.SoftmaxPlan.select(bc.SoftmaxDescriptor(shape=(3, 4)), "cpu")
    with pytest.raises(bc.Error) as e:
        plan.run(x=np.zeros((3, 4), np.float32), out=np.zeros((3, 4), np.float32))
    assert "args.out" in str(e.value) and "x, y" in str(e.value)


def test_read_only_output_is_refused():
    plan = bc.SoftmaxPlan.select(bc.SoftmaxDescriptor(shape=(3, 4)), "cpu")
    y = np.zeros((3, 4), np.float32)
    y.flags.writeable = False
    with pytest.raises(bc.Error) as e:
        plan.run(x=np.zeros((3, 4), np.float32), y=y)
    assert "args.y" in str(e.value) and "read-only" in str(e.value)


def test_not_a_tensor():
    plan = bc.SoftmaxPlan.select(bc.SoftmaxDescriptor(shape=(3,)), "cpu")
    with pytest.raises(bc.Error) as e:
        plan.run(x=[1.0, 2.0, 3.0], y=np.zeros(3, np.float32))
    assert "args.x" in str(e.value) and "not a tensor" in str(e.value)


def test_negative_strides_are_refused_by_name():
    plan = bc.SoftmaxPlan.select(bc.SoftmaxDescriptor(shape=(4,)), "cpu")
    x = np.arange(4, dtype=np.float32)[::-1]
    with pytest.raises(bc.Error) as e:
        plan.run(x=x, y=np.zeros(4, np.float32))
    assert "args.x" in str(e.value) and "negative stride" in str(e.value)


def test_unsupported_tensor_dtype():
    plan = bc.SoftmaxPlan.select(bc.SoftmaxDescriptor(shape=(2,)), "cpu")
    with pytest.raises(bc.Error) as e:
        plan.run(x=np.zeros(2, np.complex64), y=np.zeros(2, np.float32))
    assert e.value.code == "unsupported" and "args.x" in str(e.value)


def test_descriptor_fields_by_keyword():
    d = bc.MatmulDescriptor(a=[2, 3], b=(3, 4), dtype=np.float64, out_dtype=None)
    assert d.a == (2, 3) and d.dtype == "f64" and d.out_dtype is None
    d.transpose_b = True
    assert "transpose_b=True" in repr(d)
    with pytest.raises(TypeError):
        bc.MatmulDescriptor(c=(1,))
    with pytest.raises(ValueError, match=r"MatmulDescriptor\.dtype: .*f99"):
        d.dtype = "f99"
    with pytest.raises(TypeError, match=r"NormDescriptor\.shape: cannot take"):
        bc.NormDescriptor(shape="abc")
    with pytest.raises(TypeError, match=r"NormDescriptor\.eps"):
        bc.NormDescriptor(eps="small")
    u = bc.UnaryDescriptor(kind=bc.UnaryKind.elu)
    u.parameters.alpha = 2.0  # a nested struct is written in place
    assert u.parameters.alpha == 2.0


def test_cuda_select_without_a_gpu():
    if bc.cuda_device_count() > 0:
        pytest.skip("a GPU is present")
    with pytest.raises(bc.Error) as e:
        bc.SoftmaxPlan.select(bc.SoftmaxDescriptor(shape=(2,)), "cuda")
    assert "SoftmaxPlan" in str(e.value)

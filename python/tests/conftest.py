import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(63)


def randn(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def poisoned(*shape, dtype=np.float32):
    """An output buffer full of NaN, so that an element the plan does not write fails the comparison."""
    return np.full(shape, np.nan, dtype=dtype)

"""baracuda: machine-learning primitives behind one plan API.

Two levels:

* plans, as in C++: ``plan = baracuda.RmsNormPlan.select(desc, "cpu")``, then
  ``plan.can_implement(x=x, weight=w, y=y)``, ``plan.workspace_size()``,
  ``plan.run(x=x, weight=w, y=y)``; tensors are keyword arguments named as the op's argument table
  names them (``RmsNormPlan.arg_names()``), any object with ``__dlpack__`` (NumPy, PyTorch, JAX,
  CuPy), read and written in place, without a copy;
* plain functions (``baracuda.rms_norm(x, w)``, ``baracuda.softmax(x, dim=-1)``, ``baracuda.gelu(x)``)
  that allocate their outputs with the input's framework and cache their plans.

A failing Status raises ``baracuda.Error`` (a RuntimeError with ``code`` and ``message``).
"""

from ._baracuda import *  # noqa: F401,F403  (the plans, descriptors, enums, Stream, Error)
from ._baracuda import Error, Stream  # noqa: F401
from . import functional  # noqa: F401
from .functional import *  # noqa: F401,F403

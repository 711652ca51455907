"""Plain functions over the plans: each builds a descriptor from its inputs, selects a plan (cached per
descriptor and device), allocates the outputs the plan's arg_specs() ask for with the input's framework
(NumPy; PyTorch where the input is a torch.Tensor), and runs it; JAX arrays (traced or not, CPU or GPU)
go through XLA custom calls (baracuda.jax), XLA allocating the outputs.

On a CUDA tensor the work is queued on PyTorch's current stream (no synchronization); NumPy arrays run
on the CPU backend.
"""

from numpy import empty as _np_empty

from . import _baracuda as _bc

__all__ = [
    "matmul",
    "linear",
    "rms_norm",
    "layer_norm",
    "group_norm",
    "batch_norm",
    "softmax",
    "log_softmax",
    "gelu",
    "unary",
    "binary",
    "reduce",
    "sum",
    "mean",
    "amax",
    "amin",
    "dropout",
    "randperm",
    "multinomial",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "rms_norm_backward",
    "layer_norm_backward",
    "softmax_backward",
    "unary_backward",
    "matmul_backward",
    "linear_backward",
    "grouped_mm",
    "grouped_mm_backward",
    "cross_entropy_backward",
    "linear_cross_entropy",
    "linear_cross_entropy_backward",
    "attention",
    "attention_backward",
    "kv_cache_append",
    "paged_attention",
    "gated",
    "gated_backward",
    "group_norm_backward",
    "pointwise_loss",
    "pointwise_loss_backward",
    "rotary",
    "rotary_backward",
    "embedding",
    "embedding_backward",
    "clear_plan_cache",
]


# ---------------------------------------------------------------------------------------------
# Frameworks: how to allocate an output like an input, and which stream the input's work runs on.

class _NumPy:
    name = "numpy"

    _dtypes = {}  # name -> NumPy dtype, filled at first use (a dict built every call showed in a call's cost)

    @classmethod
    def dtype(cls, name):
        found = cls._dtypes.get(name)
        if found is not None:
            return found
        import numpy as np

        if name == "bf16":
            try:
                import ml_dtypes
            except ImportError as e:  # pragma: no cover
                raise TypeError("bf16 NumPy arrays need ml_dtypes (pip install ml_dtypes)") from e
            found = ml_dtypes.bfloat16
        else:
            found = {
                "f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "u8": np.uint8,
                "i32": np.int32, "i64": np.int64, "bool": np.bool_,
            }[name]
        cls._dtypes[name] = found
        return found

    @classmethod
    def empty(cls, shape, dtype, like):
        return _np_empty(shape, dtype=cls.dtype(dtype))

    @staticmethod
    def streams(like):
        return ("cpu",), "cpu", None

    @staticmethod
    def broadcast(t, shape):
        """A view of t broadcast to shape (stride 0 along the broadcast dims), as the plans take it."""
        import numpy as np

        return np.broadcast_to(np.asarray(t), tuple(shape))


class _Torch:
    name = "torch"

    @staticmethod
    def dtype(name):
        import torch

        return {
            "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
            "i8": torch.int8, "u8": torch.uint8, "i32": torch.int32, "i64": torch.int64, "bool": torch.bool,
        }[name]

    @classmethod
    def empty(cls, shape, dtype, like):
        import torch

        return torch.empty(tuple(shape), dtype=cls.dtype(dtype), device=like.device)

    @staticmethod
    def streams(like):
        if like.device.type == "cuda":
            import torch

            device = like.device.index if like.device.index is not None else torch.cuda.current_device()
            handle = torch.cuda.current_stream(device).cuda_stream
            return ("cuda", device), _bc.Stream.cuda(0, device), handle
        return ("cpu",), "cpu", None

    @staticmethod
    def broadcast(t, shape):
        return t.expand(tuple(shape))

    @staticmethod
    def abstract(like):
        """A tensor without data (torch.compile's fake tensors, the meta device): only the outputs'
        shapes are asked for (baracuda.torch's custom ops use the same functions as their fake kernels)."""
        if like.device.type == "meta":
            return True
        try:
            from torch._subclasses.fake_tensor import FakeTensor
        except ImportError:  # pragma: no cover
            return False
        return isinstance(like, FakeTensor)


class _Jax(_NumPy):
    """JAX arrays, traced or not, on any platform: each plan is an XLA custom call (baracuda.jax)."""

    name = "jax"

    @staticmethod
    def broadcast(t, shape):
        import jax.numpy as jnp

        return jnp.broadcast_to(t, tuple(shape))


def _framework(x):
    module = type(x).__module__
    if module.startswith("torch"):
        return _Torch
    if module.startswith("jax"):
        return _Jax
    return _NumPy


_dtype_names = {}


def _dtype(x):
    # (cached by dtype object: asking NumPy for a dtype's name costs microseconds a call)
    name = _dtype_names.get(x.dtype)
    if name is None:
        name = _dtype_names[x.dtype] = _bc.dtype_name(x.dtype)
    return name


def _shape(x):
    shape = x.shape
    # (NumPy's and JAX's shapes are tuples of ints already; torch.Size's may hold symbolic sizes)
    return shape if type(shape) is tuple else tuple(int(n) for n in shape)


# ---------------------------------------------------------------------------------------------
# Plans, cached per (plan, descriptor fields, device).

_plans = {}


def clear_plan_cache():
    _plans.clear()


def _run(plan_cls, desc_cls, fields, like, inputs, outputs=(), key=None, cache=True):
    """Selects (or reuses) the plan, allocates its required outputs (but those the caller gives in
    `inputs`: a batch norm's running statistics, updated in place) and those named in `outputs` with
    the framework of `like`, runs, and returns the outputs by name. The cache key is the descriptor's
    fields, or `key` where a field is not hashable; cache=False for descriptors that change every call
    (a random draw's offset), whose plans would otherwise pile up."""
    fw = _framework(like)
    if fw is _Jax:
        from . import jax as _jax

        if not cache:
            raise TypeError(f"{plan_cls.__name__}: its seed and offset are part of the plan, so with JAX arrays each "
                            "new offset would compile a new custom call: use jax.random, or NumPy / PyTorch arrays")

        return _jax.run_plan(plan_cls, lambda: desc_cls(**fields), key if key is not None else
                             tuple(fields.items()), like, inputs, outputs)
    abstract = fw is _Torch and fw.abstract(like)
    if fw is _Torch:
        # (torch refuses DLPack export of a tensor that requires grad; autograd comes with the custom
        # ops of baracuda.torch, not here)
        inputs = {k: v.detach() if v is not None else None for k, v in inputs.items()}
    stream_key, select_stream, run_stream = (("cpu",), "cpu", None) if abstract else fw.streams(like)
    # (the fields in the order the caller wrote them: one call site, one order)
    cache_key = (plan_cls.__name__, key if key is not None else tuple(fields.items()), stream_key)
    entry = _plans.get(cache_key) if cache else None
    if entry is None:
        plan = plan_cls.select(desc_cls(**fields), select_stream)
        # (the plan with what every call asks of it: its outputs' specs, its workspace size)
        entry = (plan, [(s.name, tuple(s.shape), s.dtype, s.optional) for s in plan.arg_specs()
                        if s.output and s.present], plan.workspace_size())
        if cache:
            _plans[cache_key] = entry
    plan, output_specs, size = entry
    out = {}
    for name, shape, dtype, optional in output_specs:
        if name not in inputs and (not optional or name in outputs):
            out[name] = fw.empty(shape, dtype, like)
    if abstract:  # (the shapes of a CPU plan's arguments are every backend's)
        return out
    workspace = None
    if size and fw is _Torch:  # (the CPU plans allocate their own when given none)
        workspace = fw.empty((size,), "u8", like)
    plan.run(workspace=workspace, stream=run_stream, **inputs, **out)
    return out


# ---------------------------------------------------------------------------------------------
# The functions.

def matmul(a, b, *, out_dtype=None, allow_tf32=False):
    """a @ b, batched and broadcast as torch.matmul."""
    fields = dict(dtype=_dtype(a), a=_shape(a), b=_shape(b), allow_tf32=allow_tf32)
    if out_dtype is not None:
        fields["out_dtype"] = _bc.dtype_name(out_dtype)
    return _run(_bc.MatmulPlan, _bc.MatmulDescriptor, fields, a, dict(a=a, b=b))["out"]


def matmul_backward(dout, a, b, *, allow_tf32=False, needs=(True, True)):
    """(da, db) of out = a @ b given dout (summed over broadcast batch dims); needs=(bool, bool) skips
    one (None in its place)."""
    fields = dict(dtype=_dtype(a), a=_shape(a), b=_shape(b), allow_tf32=allow_tf32)
    if _dtype(dout) != fields["dtype"]:
        fields["out_dtype"] = _dtype(dout)
    wanted = [name for name, need in zip(("da", "db"), needs) if need]
    out = _run(_bc.MatmulBackwardPlan, _bc.MatmulDescriptor, fields, a, dict(dout=dout, a=a, b=b), outputs=wanted)
    return out.get("da"), out.get("db")


def _linear_fields(x, weight, bias, activation, allow_tf32):
    return dict(dtype=_dtype(x), x=_shape(x), out_features=int(weight.shape[0]), has_bias=bias is not None,
                activation=getattr(_bc.Activation, activation), allow_tf32=allow_tf32)


def linear(x, weight, bias=None, *, activation="none", allow_tf32=False, return_pre=False):
    """act(x @ weight^T + bias), as F.linear followed by relu, gelu, gelu_tanh or silu. return_pre=True
    (with an activation) returns (y, pre), pre = x @ weight^T + bias, which linear_backward reads."""
    fields = _linear_fields(x, weight, bias, activation, allow_tf32)
    want_pre = return_pre and activation != "none"
    out = _run(_bc.LinearPlan, _bc.LinearDescriptor, fields, x, dict(x=x, weight=weight, bias=bias),
               outputs=("pre",) if want_pre else ())
    return (out["y"], out.get("pre")) if return_pre else out["y"]


def linear_backward(dy, x, weight, pre=None, *, has_bias=True, activation="none", allow_tf32=False):
    """(dx, dweight, dbias) of y = act(x @ weight^T + bias) given dy; pre from linear(return_pre=True)
    with an activation; dbias is None without a bias."""
    fields = _linear_fields(x, weight, True if has_bias else None, activation, allow_tf32)
    inputs = dict(dy=dy, x=x, weight=weight)
    if pre is not None:
        inputs["pre"] = pre
    wanted = ["dx", "dweight"] + (["dbias"] if has_bias else [])
    out = _run(_bc.LinearBackwardPlan, _bc.LinearDescriptor, fields, x, inputs, outputs=wanted)
    return out["dx"], out["dweight"], out.get("dbias")


def _grouped_mm_fields(a, b, offsets, transpose_b, allow_tf32):
    return dict(dtype=_dtype(a), index_dtype=_dtype(offsets), rows=int(a.shape[0]), k=int(a.shape[1]),
                n=int(b.shape[1] if transpose_b else b.shape[2]), groups=int(b.shape[0]), transpose_b=transpose_b,
                allow_tf32=allow_tf32)


def grouped_mm(a, b, offsets, *, transpose_b=False, allow_tf32=False):
    """The products of a mixture of experts, as torch._grouped_mm(a, b, offs): a [T, K] holds the
    groups' rows one group after another, b [G, K, N] (or [G, N, K] with transpose_b, as each
    expert's nn.Linear weight lies) their weights, offsets [G] (int32 or int64) each group's end row;
    out [T, N], rows after the last group zero. On CUDA the offsets are read on the device (no
    host sync)."""
    fields = _grouped_mm_fields(a, b, offsets, transpose_b, allow_tf32)
    return _run(_bc.GroupedMatmulPlan, _bc.GroupedMatmulDescriptor, fields, a,
                dict(a=a, b=b, offsets=offsets))["out"]


def grouped_mm_backward(dout, a, b, offsets, *, transpose_b=False, allow_tf32=False, needs=(True, True)):
    """(da, db) of grouped_mm given dout [T, N]; needs=(bool, bool) skips one (None in its place)."""
    fields = _grouped_mm_fields(a, b, offsets, transpose_b, allow_tf32)
    wanted = [name for name, need in zip(("da", "db"), needs) if need]
    out = _run(_bc.GroupedMatmulBackwardPlan, _bc.GroupedMatmulDescriptor, fields, a,
               dict(dout=dout, a=a, b=b, offsets=offsets), outputs=wanted)
    return out.get("da"), out.get("db")


def _norm_fields(x, weight, has_bias, eps, normalized_dims):
    if normalized_dims is None:
        normalized_dims = len(weight.shape) if weight is not None else 1
    fields = dict(dtype=_dtype(x), shape=_shape(x), normalized_dims=normalized_dims, eps=float(eps),
                  has_weight=weight is not None, has_bias=has_bias)
    if weight is not None and _dtype(weight) != fields["dtype"]:
        fields["weight_dtype"] = _dtype(weight)
    return fields


def _norm(plan_cls, x, weight, bias, eps, normalized_dims, stats):
    fields = _norm_fields(x, weight, bias is not None, eps, normalized_dims)
    inputs = dict(x=x, weight=weight)
    if bias is not None:
        inputs["bias"] = bias
    out = _run(plan_cls, _bc.NormDescriptor, fields, x, inputs, outputs=stats)
    return (out["y"],) + tuple(out[name] for name in stats) if stats else out["y"]


def rms_norm(x, weight=None, eps=1e-6, *, normalized_dims=None, return_rstd=False):
    """F.rms_norm over the last normalized_dims dims (default: the weight's rank, else 1);
    return_rstd=True returns (y, rstd), which rms_norm_backward reads."""
    return _norm(_bc.RmsNormPlan, x, weight, None, eps, normalized_dims, ("rstd",) if return_rstd else ())


def layer_norm(x, weight=None, bias=None, eps=1e-5, *, normalized_dims=None, return_stats=False):
    """F.layer_norm over the last normalized_dims dims (default: the weight's rank, else 1);
    return_stats=True returns (y, mean, rstd), which layer_norm_backward reads."""
    return _norm(_bc.LayerNormPlan, x, weight, bias, eps, normalized_dims, ("mean", "rstd") if return_stats else ())


def _norm_backward(plan_cls, dy, x, weight, has_bias, mean, rstd, eps, normalized_dims):
    fields = _norm_fields(x, weight, has_bias, eps, normalized_dims)
    inputs = dict(dy=dy, x=x, rstd=rstd)
    if weight is not None:
        inputs["weight"] = weight
    if mean is not None:
        inputs["mean"] = mean
    wanted = ["dx"] + (["dweight"] if weight is not None else []) + (["dbias"] if has_bias else [])
    out = _run(plan_cls, _bc.NormDescriptor, fields, x, inputs, outputs=wanted)
    return out["dx"], out.get("dweight"), out.get("dbias")


def rms_norm_backward(dy, x, weight, rstd, eps=1e-6, *, normalized_dims=None):
    """(dx, dweight) of rms_norm given dy and the forward's rstd; dweight is None without a weight."""
    return _norm_backward(_bc.RmsNormBackwardPlan, dy, x, weight, False, None, rstd, eps, normalized_dims)[:2]


def layer_norm_backward(dy, x, weight, mean, rstd, eps=1e-5, *, has_bias=True, normalized_dims=None):
    """(dx, dweight, dbias) of layer_norm given dy and the forward's mean and rstd."""
    return _norm_backward(_bc.LayerNormBackwardPlan, dy, x, weight, has_bias, mean, rstd, eps, normalized_dims)


def _group_norm_fields(x, num_groups, weight, has_bias, eps, silu):
    fields = dict(dtype=_dtype(x), shape=_shape(x), groups=int(num_groups), eps=float(eps),
                  has_weight=weight is not None, has_bias=has_bias, silu=bool(silu))
    if weight is not None and _dtype(weight) != fields["dtype"]:
        fields["weight_dtype"] = _dtype(weight)
    return fields


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, *, silu=False, return_stats=False):
    """F.group_norm of x [N, C, *] (channels-last views too); with silu=True, F.silu of it in one pass.
    return_stats=True returns (y, mean, rstd) [N, groups], which group_norm_backward reads."""
    fields = _group_norm_fields(x, num_groups, weight, bias is not None, eps, silu)
    inputs = dict(x=x, weight=weight)
    if bias is not None:
        inputs["bias"] = bias
    out = _run(_bc.GroupNormPlan, _bc.GroupNormDescriptor, fields, x, inputs,
               outputs=("mean", "rstd") if return_stats else ())
    return (out["y"], out["mean"], out["rstd"]) if return_stats else out["y"]


def group_norm_backward(dy, x, num_groups, weight, mean, rstd, bias=None, eps=1e-5, *, has_bias=True, silu=False):
    """(dx, dweight, dbias) of group_norm given dy and the forward's mean and rstd (the bias is read
    with silu=True)."""
    fields = _group_norm_fields(x, num_groups, weight, has_bias, eps, silu)
    inputs = dict(dy=dy, x=x, mean=mean, rstd=rstd)
    if weight is not None:
        inputs["weight"] = weight
    if bias is not None and silu:
        inputs["bias"] = bias
    wanted = ["dx"] + (["dweight"] if weight is not None else []) + (["dbias"] if has_bias else [])
    out = _run(_bc.GroupNormBackwardPlan, _bc.GroupNormDescriptor, fields, x, inputs, outputs=wanted)
    return out["dx"], out.get("dweight"), out.get("dbias")


def batch_norm(x, running_mean=None, running_var=None, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    """F.batch_norm of x [N, C, *]: training updates running_mean / running_var in place (when given)."""
    fields = dict(dtype=_dtype(x), shape=_shape(x), channel_dim=1 if len(x.shape) > 1 else 0, eps=float(eps),
                  momentum=float(momentum), training=bool(training), running_stats=running_mean is not None,
                  has_weight=weight is not None, has_bias=bias is not None)
    params = [t for t in (weight, bias, running_mean) if t is not None]
    if params and _dtype(params[0]) != fields["dtype"]:
        fields["weight_dtype"] = _dtype(params[0])
    inputs = dict(x=x, weight=weight)
    if bias is not None:
        inputs["bias"] = bias
    if running_mean is not None:
        if _framework(x) is _Jax and training:
            raise TypeError("batch_norm: JAX arrays are not updated in place: for the new running statistics, "
                            "baracuda.jax.call(BatchNormPlan, ...) returns them")
        inputs["running_mean"] = running_mean
        inputs["running_var"] = running_var
    return _run(_bc.BatchNormPlan, _bc.BatchNormDescriptor, fields, x, inputs)["y"]


def _class_loss_fields(input, target, weight, ignore_index, reduction, label_smoothing, log_probs):
    # A floating target is class probabilities of the input's shape (as F.cross_entropy takes them).
    soft = _dtype(target) == _dtype(input)
    fields = dict(dtype=_dtype(input), shape=_shape(input), reduction=getattr(_bc.LossReduction, reduction),
                  ignore_index=int(ignore_index), label_smoothing=float(label_smoothing),
                  has_weight=weight is not None, log_probs=log_probs, soft_targets=soft)
    if not soft:
        fields["index_dtype"] = _dtype(target)
    if weight is not None and _dtype(weight) != fields["dtype"]:
        fields["weight_dtype"] = _dtype(weight)
    return fields


def _class_loss_inputs(input, target, weight):
    inputs = dict(logits=input, targets=target)
    if weight is not None:
        inputs["weight"] = weight
    return inputs


def _class_loss(input, target, weight, ignore_index, reduction, label_smoothing, log_probs, return_lse=False):
    fields = _class_loss_fields(input, target, weight, ignore_index, reduction, label_smoothing, log_probs)
    out = _run(_bc.CrossEntropyPlan, _bc.CrossEntropyDescriptor, fields, input,
               _class_loss_inputs(input, target, weight), outputs=("lse",) if return_lse else ())
    return (out["loss"], out["lse"]) if return_lse else out["loss"]


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0, *,
                  return_lse=False):
    """F.cross_entropy of logits [N, C] (or [C], [N, C, d1, ...]) against class indices, or against
    class probabilities of the logits' shape and dtype. return_lse=True returns (loss, lse), the rows'
    log-sum-exp, which cross_entropy_backward reads."""
    return _class_loss(input, target, weight, ignore_index, reduction, label_smoothing, False, return_lse)


def cross_entropy_backward(dloss, input, target, lse, weight=None, ignore_index=-100, reduction="mean",
                           label_smoothing=0.0):
    """dlogits of cross_entropy given dloss (the loss's shape) and the forward's lse."""
    fields = _class_loss_fields(input, target, weight, ignore_index, reduction, label_smoothing, False)
    inputs = dict(_class_loss_inputs(input, target, weight), dloss=dloss, lse=lse)
    return _run(_bc.CrossEntropyBackwardPlan, _bc.CrossEntropyDescriptor, fields, input, inputs)["dlogits"]


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """F.nll_loss of log-probabilities [N, C] (or [C], [N, C, d1, ...]) against class indices."""
    return _class_loss(input, target, weight, ignore_index, reduction, 0.0, True)


def _pointwise_loss_setup(kind, input, target, reduction, beta, log_target, weight, pos_weight):
    fields = dict(dtype=_dtype(input), kind=getattr(_bc.PointwiseLossKind, kind), shape=_shape(input),
                  reduction=getattr(_bc.LossReduction, reduction), beta=float(beta), log_target=bool(log_target),
                  has_weight=weight is not None, has_pos_weight=pos_weight is not None)
    inputs = dict(input=input, target=target)
    fw = _framework(input)
    # weight and pos_weight broadcast to the input's shape as PyTorch broadcasts them (stride-0 views)
    if weight is not None:
        inputs["weight"] = fw.broadcast(weight, input.shape)
    if pos_weight is not None:
        inputs["pos_weight"] = fw.broadcast(pos_weight, input.shape)
    return fields, inputs


def pointwise_loss(kind, input, target, reduction="mean", beta=1.0, log_target=False, weight=None, pos_weight=None):
    """Any PointwiseLossKind by name ("mse", "l1", "smooth_l1", "huber", "bce", "bce_with_logits",
    "kl_div"), reduced; beta is smooth_l1's beta and huber's delta."""
    fields, inputs = _pointwise_loss_setup(kind, input, target, reduction, beta, log_target, weight, pos_weight)
    return _run(_bc.PointwiseLossPlan, _bc.PointwiseLossDescriptor, fields, input, inputs)["loss"]


def pointwise_loss_backward(kind, dloss, input, target, reduction="mean", beta=1.0, log_target=False, weight=None,
                            pos_weight=None):
    """dinput of pointwise_loss given dloss (the loss's shape); the target and weights get none."""
    fields, inputs = _pointwise_loss_setup(kind, input, target, reduction, beta, log_target, weight, pos_weight)
    inputs["dloss"] = dloss
    return _run(_bc.PointwiseLossBackwardPlan, _bc.PointwiseLossDescriptor, fields, input, inputs)["dinput"]


def loss_shortcuts(pointwise_loss):
    """PyTorch's names for the pointwise losses over a module's pointwise_loss(kind, input, target,
    reduction, beta, log_target, weight, pos_weight) (this module's, baracuda.jax's and
    baracuda.torch's differentiable ones): mse_loss, l1_loss, smooth_l1_loss, huber_loss,
    binary_cross_entropy (each log clamped at -100), binary_cross_entropy_with_logits, kl_div."""

    def mse_loss(input, target, reduction="mean"):
        return pointwise_loss("mse", input, target, reduction)

    def l1_loss(input, target, reduction="mean"):
        return pointwise_loss("l1", input, target, reduction)

    def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
        return pointwise_loss("smooth_l1", input, target, reduction, beta)

    def huber_loss(input, target, reduction="mean", delta=1.0):
        return pointwise_loss("huber", input, target, reduction, delta)

    def binary_cross_entropy(input, target, weight=None, reduction="mean"):
        return pointwise_loss("bce", input, target, reduction, weight=weight)

    def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
        return pointwise_loss("bce_with_logits", input, target, reduction, weight=weight, pos_weight=pos_weight)

    def kl_div(input, target, reduction="mean", log_target=False):
        return pointwise_loss("kl_div", input, target, reduction, log_target=log_target)

    return (mse_loss, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy, binary_cross_entropy_with_logits,
            kl_div)


(mse_loss, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy, binary_cross_entropy_with_logits,
 kl_div) = loss_shortcuts(pointwise_loss)


def _linear_cross_entropy_fields(hidden, weight, targets, bias, ignore_index, reduction, label_smoothing):
    return dict(dtype=_dtype(hidden), index_dtype=_dtype(targets), tokens=int(hidden.shape[0]),
                hidden_size=int(hidden.shape[1]), vocab_size=int(weight.shape[0]), has_bias=bias is not None,
                reduction=getattr(_bc.LossReduction, reduction), ignore_index=int(ignore_index),
                label_smoothing=float(label_smoothing))


def _linear_cross_entropy_inputs(hidden, weight, targets, bias):
    inputs = dict(hidden=hidden, weight=weight, targets=targets)
    if bias is not None:
        inputs["bias"] = bias
    return inputs


def linear_cross_entropy(hidden, weight, targets, bias=None, ignore_index=-100, reduction="mean",
                         label_smoothing=0.0, *, return_lse=False, grad_in_forward=False):
    """F.cross_entropy(hidden @ weight^T + bias, targets) without the [N, V] logits: hidden [N, D], weight
    [V, D], class-index targets [N]; the logits are made a chunk of tokens at a time (Liger-Kernel's
    fused linear cross-entropy). return_lse=True returns (loss, lse [N]), which the backward reads.
    grad_in_forward=True (reduction sum or mean) returns (loss, dhidden, dweight, dbias) instead, the
    gradients for dloss = 1 made in the same sweep (a training step of three matmuls, not four: the
    backward is then only their product with dloss); dbias is None without a bias."""
    fields = _linear_cross_entropy_fields(hidden, weight, targets, bias, ignore_index, reduction, label_smoothing)
    inputs = _linear_cross_entropy_inputs(hidden, weight, targets, bias)
    if grad_in_forward:
        fields["grad_in_forward"] = True
        out = _run(_bc.LinearCrossEntropyPlan, _bc.LinearCrossEntropyDescriptor, fields, hidden, inputs,
                   outputs=("dhidden", "dweight") + (("dbias",) if bias is not None else ()))
        return out["loss"], out["dhidden"], out["dweight"], out.get("dbias")
    out = _run(_bc.LinearCrossEntropyPlan, _bc.LinearCrossEntropyDescriptor, fields, hidden, inputs,
               outputs=("lse",) if return_lse else ())
    return (out["loss"], out["lse"]) if return_lse else out["loss"]


def linear_cross_entropy_backward(dloss, hidden, weight, targets, lse, bias=None, ignore_index=-100,
                                  reduction="mean", label_smoothing=0.0):
    """(dhidden, dweight, dbias) of linear_cross_entropy given dloss and the forward's lse: the logits
    made again a chunk at a time, never whole."""
    fields = _linear_cross_entropy_fields(hidden, weight, targets, bias, ignore_index, reduction, label_smoothing)
    inputs = dict(_linear_cross_entropy_inputs(hidden, weight, targets, bias), dloss=dloss, lse=lse)
    wanted = ["dhidden", "dweight"] + (["dbias"] if bias is not None else [])
    out = _run(_bc.LinearCrossEntropyBackwardPlan, _bc.LinearCrossEntropyDescriptor, fields, hidden, inputs,
               outputs=wanted)
    return out["dhidden"], out["dweight"], out.get("dbias")


def _attention_fields(q, k, v, bias, causal, scale, window, softcap, alignment):
    B, Sq, Hq, D = _shape(q)
    _, Skv, Hkv, _ = _shape(k)
    fields = dict(dtype=_dtype(q), batch=B, seq_q=Sq, seq_kv=Skv, heads_q=Hq, heads_kv=Hkv, head_dim=D,
                  head_dim_v=int(v.shape[3]), scale=float(scale or 0.0), causal=bool(causal),
                  window_left=int(window[0]), window_right=int(window[1]), softcap=float(softcap),
                  has_bias=bias is not None, alignment=getattr(_bc.CausalAlignment, alignment))
    if bias is not None and _dtype(bias) != fields["dtype"]:
        fields["bias_dtype"] = _dtype(bias)
    return fields


def _attention_inputs(q, k, v, bias, fields):
    inputs = dict(q=q, k=k, v=v)
    if bias is not None:  # broadcast as PyTorch broadcasts an attn_mask (stride-0 views)
        shape = (fields["batch"], fields["heads_q"], fields["seq_q"], fields["seq_kv"])
        inputs["bias"] = _framework(q).broadcast(bias, shape)
    return inputs


def attention(q, k, v, bias=None, *, causal=False, scale=None, window=(-1, -1), softcap=0.0,
              alignment="top_left", return_lse=False):
    """Scaled-dot-product attention of q [B, S_q, H_q, D], k [B, S_kv, H_kv, D], v [B, S_kv, H_kv, D_v]
    (jax.nn.dot_product_attention's layout; PyTorch's [B, H, S, D] tensors as q.transpose(1, 2) views):
    out [B, S_q, H_q, D_v]. H_kv divides H_q (GQA); scale None is 1 / sqrt(D); causal and window
    (left, right) relative to the diagonal (alignment "top_left" as PyTorch, "bottom_right" as
    FlashAttention); softcap > 0 (Gemma 2); an additive bias broadcast to [B, H_q, S_q, S_kv].
    return_lse=True returns (out, lse [B, H_q, S_q]), which attention_backward reads."""
    fields = _attention_fields(q, k, v, bias, causal, scale, window, softcap, alignment)
    out = _run(_bc.AttentionPlan, _bc.AttentionDescriptor, fields, q, _attention_inputs(q, k, v, bias, fields),
               outputs=("lse",) if return_lse else ())
    return (out["out"], out["lse"]) if return_lse else out["out"]


def attention_backward(dout, q, k, v, out, lse, bias=None, *, causal=False, scale=None, window=(-1, -1),
                       softcap=0.0, alignment="top_left"):
    """(dq, dk, dv) of attention given dout and the forward's out and lse."""
    fields = _attention_fields(q, k, v, bias, causal, scale, window, softcap, alignment)
    inputs = dict(_attention_inputs(q, k, v, bias, fields), out=out, dout=dout, lse=lse)
    grads = _run(_bc.AttentionBackwardPlan, _bc.AttentionDescriptor, fields, q, inputs, outputs=("dq", "dk", "dv"))
    return grads["dq"], grads["dk"], grads["dv"]


def paged_attention(q, k_cache, v_cache, block_table, seq_lens, *, max_seq_len=None, causal=True, scale=None,
                    window=(-1, -1), softcap=0.0, alignment="bottom_right", return_lse=False):
    """Attention of q [B, S_q, H_q, D] over a block-paged KV cache (vLLM's layout, decode):
    k_cache [num_blocks, block_size, H_kv, D], v_cache [num_blocks, block_size, H_kv, D_v]; sequence b
    holds seq_lens[b] keys, key j in row j % block_size of block block_table[b, j // block_size]
    (int32 tables). max_seq_len bounds seq_lens (default: the table's max_blocks * block_size, which
    costs nothing: it sizes the splits, not the work). Masks as attention's, with each sequence's own
    length (the default: causal, bottom-right, as a decode step sees its cache). On CUDA a bad length or
    block entry gives NaN in that sequence's rows; on the CPU it raises. Returns out [B, S_q, H_q, D_v]
    (and lse [B, H_q, S_q] with return_lse)."""
    B, Sq, Hq, D = _shape(q)
    num_blocks, block_size, Hkv, _ = _shape(k_cache)
    max_blocks = int(block_table.shape[1])
    seq_kv = int(max_seq_len) if max_seq_len is not None else max_blocks * block_size
    fields = dict(dtype=_dtype(q), batch=B, seq_q=Sq, seq_kv=seq_kv, heads_q=Hq, heads_kv=Hkv, head_dim=D,
                  head_dim_v=int(v_cache.shape[3]), scale=float(scale or 0.0), causal=bool(causal),
                  window_left=int(window[0]), window_right=int(window[1]), softcap=float(softcap),
                  alignment=getattr(_bc.CausalAlignment, alignment), paged=True, block_size=block_size,
                  num_blocks=num_blocks, max_blocks=max_blocks)
    inputs = dict(q=q, k=k_cache, v=v_cache, block_table=block_table, seq_lens_kv=seq_lens)
    out = _run(_bc.AttentionPlan, _bc.AttentionDescriptor, fields, q, inputs, outputs=("lse",) if return_lse else ())
    return (out["out"], out["lse"]) if return_lse else out["out"]


def kv_cache_append(k_new, v_new, k_cache, v_cache, block_table, seq_lens, new_lens=None):
    """Writes k_new [B, S_new, H_kv, D] and v_new [B, S_new, H_kv, D_v] into the paged caches
    k_cache / v_cache [num_blocks, block_size, H_kv, D(_v)] in place (vLLM's reshape_and_cache):
    token i of sequence b at position seq_lens[b] + i, in row position % block_size of block
    block_table[b, position // block_size]; new_lens [B] appends fewer tokens for some sequences.
    block_table, seq_lens and new_lens are int32; bad entries are skipped (KvCacheAppendPlan with
    bad_index_count counts them). NumPy and PyTorch arrays, on the CPU or CUDA (JAX arrays are not
    updated in place)."""
    if _framework(k_new) is _Jax:
        raise TypeError("kv_cache_append: JAX arrays are not updated in place: baracuda.jax.call(KvCacheAppendPlan, "
                        "...) returns the new caches")
    fields = dict(dtype=_dtype(k_new), batch=int(k_new.shape[0]), new_tokens=int(k_new.shape[1]),
                  heads_kv=int(k_new.shape[2]), head_dim=int(k_new.shape[3]), head_dim_v=int(v_new.shape[3]),
                  block_size=int(k_cache.shape[1]), num_blocks=int(k_cache.shape[0]),
                  max_blocks=int(block_table.shape[1]))
    inputs = dict(k_new=k_new, v_new=v_new, block_table=block_table, seq_lens=seq_lens, k_cache=k_cache,
                  v_cache=v_cache)
    if new_lens is not None:
        inputs["new_lens"] = new_lens
    _run(_bc.KvCacheAppendPlan, _bc.KvCacheAppendDescriptor, fields, k_new, inputs)


def gated(kind, x):
    """A gated linear unit over the last dim's halves, x = [a, b] -> a * act(b): kind "glu" (F.glu),
    "swiglu", "geglu", "geglu_tanh", "reglu" (Liger's silu(gate) * up is x = [up, gate])."""
    fields = dict(kind=getattr(_bc.GatedKind, kind), dtype=_dtype(x), shape=_shape(x))
    return _run(_bc.GatedPlan, _bc.GatedDescriptor, fields, x, dict(x=x))["out"]


def gated_backward(kind, dout, x):
    """dx of gated(kind, x) given dout."""
    fields = dict(kind=getattr(_bc.GatedKind, kind), dtype=_dtype(x), shape=_shape(x))
    return _run(_bc.GatedBackwardPlan, _bc.GatedDescriptor, fields, x, dict(dout=dout, x=x))["dx"]


def _rotary_fields(q, k, positions, rotary_dim, layout, base, inv_freq):
    B, S, Hq, D = _shape(q)
    return dict(dtype=_dtype(q), index_dtype=_dtype(positions), batch=B, seq_len=S, q_heads=Hq,
                k_heads=int(k.shape[2]) if k is not None else 0, head_dim=D, rotary_dim=int(rotary_dim),
                layout=getattr(_bc.RotaryLayout, layout), base=float(base), has_inv_freq=inv_freq is not None)


def rotary(q, k, positions, *, rotary_dim=0, layout="half_split", base=10000.0, inv_freq=None):
    """Rotary position embedding of q [B, S, H_q, D] and k [B, S, H_k, D] (or None) at positions
    [B, S] (int; a [S] row broadcast): (q_out, k_out). layout "half_split" (NeoX, Llama) or
    "interleaved" (GPT-J); the first rotary_dim dims (0: all); inv_freq [rotary_dim / 2] f32 overrides
    base's frequencies."""
    positions = _framework(q).broadcast(positions, tuple(q.shape[:2]))
    fields = _rotary_fields(q, k, positions, rotary_dim, layout, base, inv_freq)
    inputs = dict(q=q, k=k, positions=positions, inv_freq=inv_freq)
    out = _run(_bc.RotaryPlan, _bc.RotaryDescriptor, fields, q, {n: v for n, v in inputs.items() if v is not None})
    return out["q_out"], out.get("k_out")


def rotary_backward(dq_out, dk_out, positions, *, rotary_dim=0, layout="half_split", base=10000.0, inv_freq=None):
    """(dq, dk) of rotary given the gradients of its outputs (dk_out None without k)."""
    positions = _framework(dq_out).broadcast(positions, tuple(dq_out.shape[:2]))
    fields = _rotary_fields(dq_out, dk_out, positions, rotary_dim, layout, base, inv_freq)
    inputs = dict(dq_out=dq_out, dk_out=dk_out, positions=positions, inv_freq=inv_freq)
    out = _run(_bc.RotaryBackwardPlan, _bc.RotaryDescriptor, fields, dq_out,
               {n: v for n, v in inputs.items() if v is not None})
    return out["dq"], out.get("dk")


def _embedding_fields(dtype, num_embeddings, embedding_dim, indices, padding_idx):
    fields = dict(dtype=dtype, index_dtype=_dtype(indices), num_embeddings=int(num_embeddings),
                  embedding_dim=int(embedding_dim), num_indices=int(indices.shape[0]), accumulate=False)
    if padding_idx is not None:
        fields["padding_idx"] = int(padding_idx)
    return fields


def embedding(indices, weight, padding_idx=None):
    """F.embedding of 1-D indices [N] into weight [V, D]: [N, D] (flatten other shapes first); rows of
    padding_idx read as zeros."""
    fields = _embedding_fields(_dtype(weight), weight.shape[0], weight.shape[1], indices, padding_idx)
    return _run(_bc.EmbeddingPlan, _bc.EmbeddingDescriptor, fields, weight, dict(weight=weight, indices=indices))["out"]


def embedding_backward(dout, indices, num_embeddings, padding_idx=None):
    """dweight [V, D] of embedding given dout [N, D] (rows summed per index in a fixed order; the
    padding row and rows no index names are zeros)."""
    fields = _embedding_fields(_dtype(dout), num_embeddings, dout.shape[1], indices, padding_idx)
    return _run(_bc.EmbeddingBackwardPlan, _bc.EmbeddingDescriptor, fields, dout,
                dict(dout=dout, indices=indices))["dweight"]


def _softmax(kind, x, dim):
    fields = dict(dtype=_dtype(x), shape=_shape(x), dim=int(dim), kind=kind)
    return _run(_bc.SoftmaxPlan, _bc.SoftmaxDescriptor, fields, x, dict(x=x))["y"]


def softmax(x, dim=-1):
    return _softmax(_bc.SoftmaxKind.softmax, x, dim)


def log_softmax(x, dim=-1):
    return _softmax(_bc.SoftmaxKind.log_softmax, x, dim)


def softmax_backward(y, dy, dim=-1, kind="softmax"):
    """dx of y = softmax(x, dim) (kind="log_softmax": of log_softmax) given the forward's y and dy."""
    fields = dict(dtype=_dtype(y), shape=_shape(y), dim=int(dim), kind=getattr(_bc.SoftmaxKind, kind))
    return _run(_bc.SoftmaxBackwardPlan, _bc.SoftmaxDescriptor, fields, y, dict(y=y, dy=dy))["dx"]


_unary_kinds = {}  # name -> UnaryKind (an enum's getattr every call showed in a call's cost)


def _unary_fields(kind, x, parameters):
    if isinstance(kind, str):
        name, kind = kind, _unary_kinds.get(kind)
        if kind is None:
            kind = _unary_kinds[name] = getattr(_bc.UnaryKind, name)
    fields = dict(kind=kind, dtype=_dtype(x), shape=_shape(x))
    key = None
    if parameters:
        # (UnaryParameters is not hashable: the cache keys on the values given)
        key = (tuple(sorted(fields.items())), tuple(sorted(parameters.items())))
        fields["parameters"] = p = _bc.UnaryParameters()
        for name, value in parameters.items():
            setattr(p, name, value)
    return fields, key


def unary(kind, x, **parameters):
    """Any UnaryKind by name ("exp", "silu", "leaky_relu", ...); parameters as UnaryParameters' fields."""
    fields, key = _unary_fields(kind, x, parameters)
    return _run(_bc.UnaryPlan, _bc.UnaryDescriptor, fields, x, dict(x=x), key=key)["out"]


def unary_backward(kind, dout, x, **parameters):
    """dx of out = unary(kind, x) given dout."""
    fields, key = _unary_fields(kind, x, parameters)
    return _run(_bc.UnaryBackwardPlan, _bc.UnaryDescriptor, fields, x, dict(dout=dout, x=x), key=key)["dx"]


def gelu(x, approximate="none"):
    """F.gelu: the erf form, or approximate="tanh"."""
    return unary("gelu_tanh" if approximate == "tanh" else "gelu", x)


def binary(kind, a, b, *, alpha=1.0):
    """Any BinaryKind by name ("add", "mul", "maximum", ...) of two tensors, broadcast as NumPy; alpha
    scales b for add and sub. A Python number as either operand is a scalar operand."""
    kind = getattr(_bc.BinaryKind, kind) if isinstance(kind, str) else kind
    like = a if not isinstance(a, (int, float)) else b
    fields = dict(kind=kind, dtype=_dtype(like), alpha=float(alpha))
    inputs = {}
    for name, v in (("a", a), ("b", b)):
        if isinstance(v, (bool, int, float)):
            fields[name + "_scalar"] = float(v)
            fields["scalar_dtype"] = "bool" if isinstance(v, bool) else "i64" if isinstance(v, int) else "f32"
        else:
            fields[name + "_shape"] = _shape(v)
            inputs[name] = v
    if "b" in inputs and "a" in inputs and _dtype(b) != fields["dtype"]:
        fields["b_dtype"] = _dtype(b)
    return _run(_bc.BinaryPlan, _bc.BinaryDescriptor, fields, like, inputs)["out"]


def reduce(kind, x, dim=None, keepdim=False):
    """Any ReduceKind by name over dim (an int, a tuple, or None: every dim)."""
    kind = getattr(_bc.ReduceKind, kind) if isinstance(kind, str) else kind
    rank = len(x.shape)
    dims = tuple(range(rank)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    fields = dict(kind=kind, dtype=_dtype(x), shape=_shape(x), dims=dims, keepdim=bool(keepdim))
    out = _run(_bc.ReducePlan, _bc.ReduceDescriptor, fields, x, dict(x=x))
    return out["out"] if "out" in out else out["indices"]


def sum(x, dim=None, keepdim=False):  # noqa: A001 (torch.sum)
    return reduce("sum", x, dim, keepdim)


def mean(x, dim=None, keepdim=False):
    return reduce("mean", x, dim, keepdim)


def amax(x, dim=None, keepdim=False):
    return reduce("amax", x, dim, keepdim)


def amin(x, dim=None, keepdim=False):
    return reduce("amin", x, dim, keepdim)


def dropout(x, p=0.5, *, seed, offset=0, training=True):
    """F.dropout with a Philox (seed, offset): the same bits on every backend."""
    if not training or p == 0:
        return x
    fields = dict(dtype=_dtype(x), shape=_shape(x), p=float(p), seed=int(seed), offset=int(offset))
    return _run(_bc.DropoutPlan, _bc.DropoutDescriptor, fields, x, dict(x=x), cache=False)["y"]


def randperm(n, *, seed, offset=0, dtype="i64", like=None):
    """torch.randperm(n) from a Philox (seed, offset): the same permutation on every backend. The result
    takes the framework and device of `like` (NumPy on the CPU by default)."""
    if like is None:
        import numpy as np

        like = np.empty(0, np.int64)
    fields = dict(dtype=dtype, n=int(n), seed=int(seed), offset=int(offset))
    return _run(_bc.RandpermPlan, _bc.RandpermDescriptor, fields, like, {}, cache=False)["out"]


def multinomial(probs, num_samples, replacement=False, *, seed, offset=0, dtype="i64"):
    """torch.multinomial(probs, num_samples, replacement) from a Philox (seed, offset): the same indices
    on every backend; a row of bad weights (negative, NaN, infinite, all zero), and samples past a
    row's positive weights without replacement, come back as -1."""
    fields = dict(dtype=_dtype(probs), index_dtype=dtype, shape=_shape(probs), samples=int(num_samples),
                  replacement=bool(replacement), seed=int(seed), offset=int(offset))
    return _run(_bc.MultinomialPlan, _bc.MultinomialDescriptor, fields, probs, dict(probs=probs), cache=False)["out"]


def unary_shortcuts(unary):
    """gelu, silu, relu and tanh over a module's unary(kind, x) (baracuda.jax's and baracuda.torch's
    differentiable ones)."""

    def gelu(x, approximate="none"):
        return unary("gelu_tanh" if approximate == "tanh" else "gelu", x)

    def named(kind):
        def f(x):
            return unary(kind, x)

        f.__name__ = kind
        return f

    return gelu, named("silu"), named("relu"), named("tanh")


# Every unary kind as a function of its own (baracuda.exp(x), baracuda.silu(x), ...), but for those
# defined above.
def _unary_function(name):
    def f(x, **parameters):
        return unary(name, x, **parameters)

    f.__name__ = name
    f.__doc__ = f"UnaryKind.{name}, elementwise."
    return f


for _kind in _bc.UnaryKind:
    if _kind.name not in globals():
        globals()[_kind.name] = _unary_function(_kind.name)
        __all__.append(_kind.name)
del _kind

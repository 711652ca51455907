"""baracuda.jax: the plans as XLA FFI custom calls, under jax.jit, on the CPU and the GPU.

Every plan is reachable through ``call`` (a plan class, its descriptor's fields, JAX arrays by
argument name), and baracuda's plain functions (``baracuda.rms_norm(x, w)``, ...) take JAX arrays
through it. The functions here are differentiable (``jax.custom_vjp``, the backward plans):
``rms_norm``, ``layer_norm``, ``softmax``, ``log_softmax``, ``unary`` (and ``gelu``, ``silu``,
``relu``, ``tanh``), ``matmul``, ``linear``, ``grouped_mm``, ``cross_entropy``, ``linear_cross_entropy``, ``attention``, ``gated`` (SwiGLU and
the other GLUs), ``rotary``, ``embedding``, ``group_norm`` and the pointwise losses (``mse_loss``, ...).

A call is one custom call, "baracuda_plan", whose attribute names a plan selected at trace time for
the device of the inputs (under tracing, one for each platform baracuda has a handler for, XLA
keeping the one it compiles for); XLA allocates its results and the plan's workspace. Plans and
their targets live as long as the process. Plans whose descriptor changes every call (the random
draws' seed and offset) are refused with JAX arrays: use jax.random there.
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from . import _baracuda as _bc
from . import functional as _f

__all__ = [
    "call",
    "rms_norm",
    "layer_norm",
    "softmax",
    "log_softmax",
    "unary",
    "gelu",
    "silu",
    "relu",
    "tanh",
    "matmul",
    "linear",
    "grouped_mm",
    "cross_entropy",
    "linear_cross_entropy",
    "attention",
    "gated",
    "rotary",
    "embedding",
    "group_norm",
    "pointwise_loss",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
]

_TARGET = "baracuda_plan"
_registered = False
_targets = {}

_DTYPES = {
    "f16": jnp.float16, "bf16": jnp.bfloat16, "f32": jnp.float32, "f64": jnp.float64, "i8": jnp.int8,
    "u8": jnp.uint8, "i32": jnp.int32, "i64": jnp.int64, "bool": jnp.bool_,
}


def _register():
    global _registered
    if _registered:
        return
    handlers = _bc.ffi_handlers()
    if not handlers:
        raise RuntimeError("baracuda was built without XLA's FFI headers (jaxlib was not installed when it was "
                           "built): reinstall baracuda where jax is installed")
    for platform, capsule in handlers.items():
        try:
            jax.ffi.register_ffi_target(_TARGET, capsule, platform="cpu" if platform == "cpu" else "CUDA")
        except Exception:  # a jaxlib without that platform (JAX for the CPU on a GPU machine)
            if platform == "cpu":
                raise
    _registered = True


def _device_stream(like):
    """The stream of the concrete array `like` ("cpu", "cuda:N"), or None for a tracer (under jit or
    grad the platform is known only when XLA lowers the call)."""
    try:
        device = next(iter(like.devices()))
    except Exception:
        return None
    return "cpu" if device.platform == "cpu" else f"cuda:{device.local_hardware_id or 0}"


def _target(plan_cls, descriptor, key, stream, present, outputs):
    """The custom call of plan_cls selected on `stream` (cached): a function of the operands returning
    the named results (and the workspace, last, where the plan has one), and the results' names."""
    cache_key = (plan_cls.__name__, key, stream, tuple(present), tuple(outputs))
    entry = _targets.get(cache_key)
    if entry is None:
        plan = plan_cls.select(descriptor(), stream)
        results = [s for s in plan.arg_specs()
                   if s.output and s.present and (s.name in present or not s.optional or s.name in outputs)]
        types = [jax.ShapeDtypeStruct(tuple(s.shape), _DTYPES[s.dtype]) for s in results]
        if plan.workspace_size():
            types.append(jax.ShapeDtypeStruct((plan.workspace_size(),), jnp.uint8))
        names = [s.name for s in results]
        # An argument read and written (batch norm's running statistics): its result aliases the operand.
        operands = list(present)
        aliases = {operands.index(n): names.index(n) for n in names if n in present}
        target = plan.ffi_target(operands, names)
        fn = jax.ffi.ffi_call(_TARGET, types, input_output_aliases=aliases or None, vmap_method="sequential")
        wants = {s.name: (tuple(s.shape), s.dtype) for s in plan.arg_specs() if s.present and s.name in present}
        entry = _targets[cache_key] = (partial(fn, target=np.int64(target)), names, wants)
    _check_operands(plan_cls, entry[2], present)
    return entry[:2]


def _check_operands(plan_cls, wants, present):
    """The plan checks its arguments again when it runs, but inside XLA's call, where on a GPU the error
    would surface later, at some other array's use: here, at trace time, it names the call that is wrong."""
    for name, value in present.items():
        if name not in wants:
            continue
        shape, dtype = wants[name]
        got = (tuple(int(n) for n in value.shape), _f._dtype(value))
        if got != (shape, dtype):
            raise _bc.Error(f"invalid_problem: {plan_cls.__name__}: args.{name}: a {got[1]} array of shape {got[0]} "
                            f"where the descriptor says {dtype} {shape}")


def run_plan(plan_cls, descriptor, key, like, inputs, outputs=()):
    """Runs plan_cls for descriptor() (called at the first use of `key`, which stands for it) on JAX
    arrays by argument name: one custom call; its results by name, as functional._run's. A concrete
    input's device picks the plan; under tracing each platform baracuda has a handler for gets its
    plan, and XLA keeps the branch of the platform it compiles for (lax.platform_dependent)."""
    _register()
    present = {name: value for name, value in inputs.items() if value is not None}
    operands = list(present.values())
    stream = _device_stream(like)
    platforms = list(_bc.ffi_handlers())
    if stream is None and len(platforms) == 1:
        stream = "cpu" if platforms[0] == "cpu" else "cuda:0"
    if stream is not None:
        fn, names = _target(plan_cls, descriptor, key, stream, present, outputs)
        return dict(zip(names, fn(*operands)))
    branches = {}
    for platform in platforms:
        fn, names = _target(plan_cls, descriptor, key, "cpu" if platform == "cpu" else "cuda:0", present, outputs)
        branches[platform] = (lambda fn, n: lambda *a: tuple(fn(*a)[:n]))(fn, len(names))
    return dict(zip(names, jax.lax.platform_dependent(*operands, **branches)))


def call(plan_cls, descriptor, outputs=(), **inputs):
    """Runs plan_cls, selected for `descriptor`, on JAX arrays given by argument name (arg_names());
    returns its results by name, the optional ones named in `outputs` too. Works under jax.jit; an
    argument both read and written (batch norm's running statistics) comes back as a new array."""
    like = next(v for v in inputs.values() if v is not None)
    return run_plan(plan_cls, lambda: descriptor, repr(descriptor), like, inputs, outputs)


# ---------------------------------------------------------------------------------------------
# Differentiable functions: a forward plan that saves what the backward plan reads.

def _none_if(cond, value):
    return None if cond else value


@partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _rms_norm(x, weight, eps, normalized_dims):
    return _f.rms_norm(x, weight, eps, normalized_dims=normalized_dims)


def _rms_norm_fwd(x, weight, eps, normalized_dims):
    y, rstd = _f.rms_norm(x, weight, eps, normalized_dims=normalized_dims, return_rstd=True)
    return y, (x, weight, rstd)


def _rms_norm_bwd(eps, normalized_dims, saved, dy):
    x, weight, rstd = saved
    return _f.rms_norm_backward(dy, x, weight, rstd, eps, normalized_dims=normalized_dims)


_rms_norm.defvjp(_rms_norm_fwd, _rms_norm_bwd)


def rms_norm(x, weight=None, eps=1e-6, *, normalized_dims=None):
    """F.rms_norm over the last normalized_dims dims (default: the weight's rank, else 1)."""
    return _rms_norm(x, weight, float(eps), normalized_dims)


@partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def _layer_norm(x, weight, bias, eps, normalized_dims):
    return _f.layer_norm(x, weight, bias, eps, normalized_dims=normalized_dims)


def _layer_norm_fwd(x, weight, bias, eps, normalized_dims):
    y, mean, rstd = _f.layer_norm(x, weight, bias, eps, normalized_dims=normalized_dims, return_stats=True)
    return y, (x, weight, bias is not None, mean, rstd)


def _layer_norm_bwd(eps, normalized_dims, saved, dy):
    x, weight, has_bias, mean, rstd = saved
    return _f.layer_norm_backward(dy, x, weight, mean, rstd, eps, has_bias=has_bias,
                                  normalized_dims=normalized_dims)


_layer_norm.defvjp(_layer_norm_fwd, _layer_norm_bwd)


def layer_norm(x, weight=None, bias=None, eps=1e-5, *, normalized_dims=None):
    """F.layer_norm over the last normalized_dims dims (default: the weight's rank, else 1)."""
    return _layer_norm(x, weight, bias, float(eps), normalized_dims)


@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def _softmax(x, dim, kind):
    return _f._softmax(getattr(_bc.SoftmaxKind, kind), x, dim)


def _softmax_fwd(x, dim, kind):
    y = _softmax(x, dim, kind)
    return y, y


def _softmax_bwd(dim, kind, y, dy):
    return (_f.softmax_backward(y, dy, dim, kind),)


_softmax.defvjp(_softmax_fwd, _softmax_bwd)


def softmax(x, dim=-1):
    return _softmax(x, int(dim), "softmax")


def log_softmax(x, dim=-1):
    return _softmax(x, int(dim), "log_softmax")


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _unary(kind, parameters, x):
    return _f.unary(kind, x, **dict(parameters))


def _unary_fwd(kind, parameters, x):
    return _unary(kind, parameters, x), x


def _unary_bwd(kind, parameters, x, dout):
    return (_f.unary_backward(kind, dout, x, **dict(parameters)),)


_unary.defvjp(_unary_fwd, _unary_bwd)


def unary(kind, x, **parameters):
    """Any differentiable UnaryKind by name; parameters as UnaryParameters' fields."""
    return _unary(kind, tuple(sorted(parameters.items())), x)


gelu, silu, relu, tanh = _f.unary_shortcuts(unary)


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def _matmul(a, b, allow_tf32):
    return _f.matmul(a, b, allow_tf32=allow_tf32)


def _matmul_fwd(a, b, allow_tf32):
    return _matmul(a, b, allow_tf32), (a, b)


def _matmul_bwd(allow_tf32, saved, dout):
    a, b = saved
    return _f.matmul_backward(dout, a, b, allow_tf32=allow_tf32)


_matmul.defvjp(_matmul_fwd, _matmul_bwd)


def matmul(a, b, *, allow_tf32=False):
    """a @ b, batched and broadcast as jnp.matmul."""
    return _matmul(a, b, bool(allow_tf32))


@partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def _linear(x, weight, bias, activation, allow_tf32):
    return _f.linear(x, weight, bias, activation=activation, allow_tf32=allow_tf32)


def _linear_fwd(x, weight, bias, activation, allow_tf32):
    y, pre = _f.linear(x, weight, bias, activation=activation, allow_tf32=allow_tf32, return_pre=True)
    return y, (x, weight, bias is not None, pre)


def _linear_bwd(activation, allow_tf32, saved, dy):
    x, weight, has_bias, pre = saved
    return _f.linear_backward(dy, x, weight, pre, has_bias=has_bias, activation=activation, allow_tf32=allow_tf32)


_linear.defvjp(_linear_fwd, _linear_bwd)


def linear(x, weight, bias=None, *, activation="none", allow_tf32=False):
    """act(x @ weight^T + bias): none, relu, gelu, gelu_tanh or silu."""
    return _linear(x, weight, bias, activation, bool(allow_tf32))


@partial(jax.custom_vjp, nondiff_argnums=(3,))
def _grouped_mm(a, b, offsets, transpose_b):
    return _f.grouped_mm(a, b, offsets, transpose_b=transpose_b)


def _grouped_mm_fwd(a, b, offsets, transpose_b):
    return _f.grouped_mm(a, b, offsets, transpose_b=transpose_b), (a, b, offsets)


def _grouped_mm_bwd(transpose_b, saved, dout):
    a, b, offsets = saved
    da, db = _f.grouped_mm_backward(dout, a, b, offsets, transpose_b=transpose_b)
    return da, db, None


_grouped_mm.defvjp(_grouped_mm_fwd, _grouped_mm_bwd)


def grouped_mm(a, b, offsets, *, transpose_b=False):
    """The products of a mixture of experts (torch._grouped_mm): a [T, K] packed by group, b [G, K, N]
    (or [G, N, K] with transpose_b), offsets [G] each group's end row; differentiable in a and b. The
    CPU backend only so far."""
    return _grouped_mm(a, b, offsets, bool(transpose_b))


@partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5))
def _cross_entropy(logits, targets, weight, ignore_index, reduction, label_smoothing):
    return _f.cross_entropy(logits, targets, weight, ignore_index, reduction, label_smoothing)


def _cross_entropy_fwd(logits, targets, weight, ignore_index, reduction, label_smoothing):
    loss, lse = _f.cross_entropy(logits, targets, weight, ignore_index, reduction, label_smoothing, return_lse=True)
    return loss, (logits, targets, weight, lse)


def _cross_entropy_bwd(ignore_index, reduction, label_smoothing, saved, dloss):
    logits, targets, weight, lse = saved
    dlogits = _f.cross_entropy_backward(dloss, logits, targets, lse, weight, ignore_index, reduction, label_smoothing)
    # (class indices and class weights take no gradient; soft targets would, and are refused below)
    return dlogits, None, None


_cross_entropy.defvjp(_cross_entropy_fwd, _cross_entropy_bwd)


def cross_entropy(logits, targets, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """F.cross_entropy of logits against class indices (differentiable in the logits)."""
    if jnp.issubdtype(targets.dtype, jnp.floating):
        raise TypeError("baracuda.jax.cross_entropy takes class indices; soft targets: baracuda.cross_entropy "
                        "(not differentiated)")
    return _cross_entropy(logits, targets, weight, int(ignore_index), reduction, float(label_smoothing))


@partial(jax.custom_vjp, nondiff_argnums=(4,))
def _attention(q, k, v, bias, options):
    return _f.attention(q, k, v, bias, **dict(options))


def _attention_fwd(q, k, v, bias, options):
    out, lse = _f.attention(q, k, v, bias, return_lse=True, **dict(options))
    return out, (q, k, v, bias, out, lse)


def _attention_bwd(options, saved, dout):
    q, k, v, bias, out, lse = saved
    dq, dk, dv = _f.attention_backward(dout, q, k, v, out, lse, bias, **dict(options))
    return dq, dk, dv, None if bias is None else jnp.zeros_like(bias)


_attention.defvjp(_attention_fwd, _attention_bwd)


def attention(q, k, v, bias=None, *, causal=False, scale=None, window=(-1, -1), softcap=0.0, alignment="top_left"):
    """jax.nn.dot_product_attention's layout: q [B, S_q, H_q, D], k [B, S_kv, H_kv, D], v [B, S_kv, H_kv, D_v]
    -> [B, S_q, H_q, D_v]; GQA where H_kv divides H_q; causal / window / softcap / alignment as
    baracuda.attention. The bias (broadcast to [B, H_q, S_q, S_kv]) is a constant: no gradient flows
    to it (it is wrapped in lax.stop_gradient)."""
    if bias is not None:
        bias = jax.lax.stop_gradient(bias)
    options = (("causal", bool(causal)), ("scale", None if scale is None else float(scale)),
               ("window", tuple(int(w) for w in window)), ("softcap", float(softcap)), ("alignment", alignment))
    return _attention(q, k, v, bias, options)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _gated(kind, x):
    return _f.gated(kind, x)


_gated.defvjp(lambda kind, x: (_f.gated(kind, x), x), lambda kind, x, dout: (_f.gated_backward(kind, dout, x),))


def gated(kind, x):
    """A gated linear unit over the last dim's halves, x = [a, b] -> a * act(b) (baracuda.gated)."""
    return _gated(kind, x)


@partial(jax.custom_vjp, nondiff_argnums=(3,))
def _rotary(q, k, positions, options):
    return _f.rotary(q, k, positions, **dict(options))


def _rotary_fwd(q, k, positions, options):
    return _f.rotary(q, k, positions, **dict(options)), positions


def _rotary_bwd(options, positions, grads):
    dq, dk = _f.rotary_backward(grads[0], grads[1], positions, **dict(options))
    return dq, dk, None


_rotary.defvjp(_rotary_fwd, _rotary_bwd)


def rotary(q, k, positions, *, rotary_dim=0, layout="half_split", base=10000.0):
    """Rotary position embedding of q [B, S, H_q, D] and k [B, S, H_k, D] at integer positions [B, S]
    (or [S]): (q_out, k_out) (baracuda.rotary). Both q and k are rotated: pass the two."""
    options = (("rotary_dim", int(rotary_dim)), ("layout", layout), ("base", float(base)))
    return _rotary(q, k, positions, options)


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def _embedding(indices, weight, padding_idx):
    return _f.embedding(indices, weight, padding_idx)


def _embedding_fwd(indices, weight, padding_idx):
    return _f.embedding(indices, weight, padding_idx), (indices, weight.shape[0])


def _embedding_bwd(padding_idx, saved, dout):
    indices, rows = saved
    return None, _f.embedding_backward(dout, indices, rows, padding_idx)


_embedding.defvjp(_embedding_fwd, _embedding_bwd)


def embedding(indices, weight, padding_idx=None):
    """weight[indices] for 1-D integer indices [N] (F.embedding; the padding row reads as zeros and gets
    no gradient), differentiable in the weight."""
    return _embedding(indices, weight, padding_idx)


@partial(jax.custom_vjp, nondiff_argnums=(1, 4, 5))
def _group_norm(x, num_groups, weight, bias, eps, silu):
    return _f.group_norm(x, num_groups, weight, bias, eps, silu=silu)


def _group_norm_fwd(x, num_groups, weight, bias, eps, silu):
    y, mean, rstd = _f.group_norm(x, num_groups, weight, bias, eps, silu=silu, return_stats=True)
    return y, (x, weight, bias, mean, rstd)


def _group_norm_bwd(num_groups, eps, silu, saved, dy):
    x, weight, bias, mean, rstd = saved
    return _f.group_norm_backward(dy, x, num_groups, weight, mean, rstd, bias, eps, has_bias=bias is not None,
                                  silu=silu)


_group_norm.defvjp(_group_norm_fwd, _group_norm_bwd)


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, *, silu=False):
    """F.group_norm of x [N, C, *]; silu=True applies F.silu in the same pass."""
    return _group_norm(x, int(num_groups), weight, bias, float(eps), bool(silu))


@partial(jax.custom_vjp, nondiff_argnums=(4,))
def _pointwise_loss(input, target, weight, pos_weight, options):
    return _f.pointwise_loss(input=input, target=target, weight=weight, pos_weight=pos_weight, **dict(options))


def _pointwise_loss_fwd(input, target, weight, pos_weight, options):
    loss = _pointwise_loss(input, target, weight, pos_weight, options)
    return loss, (input, target, weight, pos_weight)


def _pointwise_loss_bwd(options, saved, dloss):
    input, target, weight, pos_weight = saved
    dinput = _f.pointwise_loss_backward(dloss=dloss, input=input, target=target, weight=weight,
                                        pos_weight=pos_weight, **dict(options))
    zeros = [None if t is None else jnp.zeros_like(t) for t in (target, weight, pos_weight)]
    return (dinput, *zeros)


_pointwise_loss.defvjp(_pointwise_loss_fwd, _pointwise_loss_bwd)


def pointwise_loss(kind, input, target, reduction="mean", beta=1.0, log_target=False, weight=None, pos_weight=None):
    """baracuda.pointwise_loss, differentiable in the input; the target and the weights are constants
    (wrapped in lax.stop_gradient: no gradient flows to them)."""
    target, weight, pos_weight = (None if t is None else jax.lax.stop_gradient(t) for t in (target, weight, pos_weight))
    options = (("kind", kind), ("reduction", reduction), ("beta", float(beta)), ("log_target", bool(log_target)))
    return _pointwise_loss(input, target, weight, pos_weight, options)


(mse_loss, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy, binary_cross_entropy_with_logits,
 kl_div) = _f.loss_shortcuts(pointwise_loss)


@partial(jax.custom_vjp, nondiff_argnums=(4,))
def _linear_cross_entropy(hidden, weight, targets, bias, options):
    return _f.linear_cross_entropy(hidden, weight, targets, bias, **dict(options))


def _linear_cross_entropy_fwd(hidden, weight, targets, bias, options):
    if dict(options)["reduction"] != "none":  # the gradients in the same sweep (three matmuls a step, not four)
        loss, dhidden, dweight, dbias = _f.linear_cross_entropy(hidden, weight, targets, bias, grad_in_forward=True,
                                                                **dict(options))
        return loss, (None, None, None, (dhidden, dweight, dbias))
    loss, lse = _f.linear_cross_entropy(hidden, weight, targets, bias, return_lse=True, **dict(options))
    return loss, (hidden, weight, targets, bias, lse)


def _linear_cross_entropy_bwd(options, saved, dloss):
    if len(saved) == 4:
        dhidden, dweight, dbias = saved[3]
        return ((dloss * dhidden).astype(dhidden.dtype), (dloss * dweight).astype(dweight.dtype), None,
                None if dbias is None else (dloss * dbias).astype(dbias.dtype))
    hidden, weight, targets, bias, lse = saved
    dhidden, dweight, dbias = _f.linear_cross_entropy_backward(dloss, hidden, weight, targets, lse, bias,
                                                               **dict(options))
    return dhidden, dweight, None, dbias


_linear_cross_entropy.defvjp(_linear_cross_entropy_fwd, _linear_cross_entropy_bwd)


def linear_cross_entropy(hidden, weight, targets, bias=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """cross_entropy(hidden @ weight^T + bias, targets) without the [N, V] logits (baracuda's fused
    plan), differentiable in hidden, weight and bias."""
    options = (("ignore_index", int(ignore_index)), ("reduction", reduction), ("label_smoothing", float(label_smoothing)))
    return _linear_cross_entropy(hidden, weight, targets, bias, options)

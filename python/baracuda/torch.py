"""baracuda.torch: the plans as PyTorch custom operators (torch.library), with autograd and fake
kernels, so that autograd, torch.compile(fullgraph=True) and torch.library.opcheck work; and
``patch(model)``, which moves a model's modules onto them.

Each operator is a forward plan that returns what its backward needs, and a backward operator over
the backward plan. Their fake kernels are the same functions: given fake (or meta) tensors,
baracuda.functional selects a CPU plan to learn the outputs' shapes and runs nothing. On CUDA tensors
the work is queued on PyTorch's current stream.

Differentiable: ``rms_norm``, ``layer_norm``, ``softmax``, ``log_softmax``, ``unary`` (and ``gelu``,
``silu``, ``relu``, ``tanh``), ``matmul``, ``linear``, ``cross_entropy``, ``linear_cross_entropy``,
``scaled_dot_product_attention``, ``gated`` (SwiGLU and the other GLUs), ``rotary``, ``embedding``,
``group_norm`` and the pointwise losses (``mse_loss``, ...).
"""

import types
from typing import List, Optional, Tuple

import torch

from . import functional as _f

__all__ = [
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
    "scaled_dot_product_attention",
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
    "patch",
]

Tensor = torch.Tensor


def _op(name, fn):
    """A custom operator baracuda::<name> whose fake kernel is fn itself (see the module's doc)."""
    op = torch.library.custom_op(f"baracuda::{name}", fn, mutates_args=())
    op.register_fake(fn)
    return op


def _none(x):
    """An absent result of an operator (its schema has no optional results): an empty tensor."""
    return x.new_empty(0)


def _grad(t):
    return t.contiguous() if t is not None else None


# ---------------------------------------------------------------------------------------------
# Norms

def _rms_norm_impl(x: Tensor, weight: Optional[Tensor], eps: float, normalized_dims: int) -> Tuple[Tensor, Tensor]:
    y, rstd = _f.rms_norm(x, weight, eps, normalized_dims=normalized_dims, return_rstd=True)
    return y, rstd


def _rms_norm_backward_impl(dy: Tensor, x: Tensor, weight: Optional[Tensor], rstd: Tensor, eps: float,
                            normalized_dims: int) -> Tuple[Tensor, Tensor]:
    dx, dweight = _f.rms_norm_backward(dy, x, weight, rstd, eps, normalized_dims=normalized_dims)
    return dx, dweight if dweight is not None else _none(x)


_rms_norm_op = _op("rms_norm", _rms_norm_impl)
_rms_norm_backward_op = _op("rms_norm_backward", _rms_norm_backward_impl)


def _rms_norm_setup(ctx, inputs, output):
    x, weight, ctx.eps, ctx.normalized_dims = inputs
    ctx.save_for_backward(x, weight, output[1])


def _rms_norm_backward(ctx, dy, _drstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dweight = _rms_norm_backward_op(_grad(dy), x, weight, rstd, ctx.eps, ctx.normalized_dims)
    return dx, dweight if weight is not None else None, None, None


_rms_norm_op.register_autograd(_rms_norm_backward, setup_context=_rms_norm_setup)


def _layer_norm_impl(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], eps: float,
                     normalized_dims: int) -> Tuple[Tensor, Tensor, Tensor]:
    return tuple(_f.layer_norm(x, weight, bias, eps, normalized_dims=normalized_dims, return_stats=True))


def _layer_norm_backward_impl(dy: Tensor, x: Tensor, weight: Optional[Tensor], mean: Tensor, rstd: Tensor, eps: float,
                              has_bias: bool, normalized_dims: int) -> Tuple[Tensor, Tensor, Tensor]:
    dx, dweight, dbias = _f.layer_norm_backward(dy, x, weight, mean, rstd, eps, has_bias=has_bias,
                                                normalized_dims=normalized_dims)
    return dx, dweight if dweight is not None else _none(x), dbias if dbias is not None else _none(x)


_layer_norm_op = _op("layer_norm", _layer_norm_impl)
_layer_norm_backward_op = _op("layer_norm_backward", _layer_norm_backward_impl)


def _layer_norm_setup(ctx, inputs, output):
    x, weight, bias, ctx.eps, ctx.normalized_dims = inputs
    ctx.has_weight, ctx.has_bias = weight is not None, bias is not None
    ctx.save_for_backward(x, weight, output[1], output[2])


def _layer_norm_backward(ctx, dy, _dmean, _drstd):
    x, weight, mean, rstd = ctx.saved_tensors
    dx, dweight, dbias = _layer_norm_backward_op(_grad(dy), x, weight, mean, rstd, ctx.eps, ctx.has_bias,
                                                 ctx.normalized_dims)
    return dx, dweight if ctx.has_weight else None, dbias if ctx.has_bias else None, None, None


_layer_norm_op.register_autograd(_layer_norm_backward, setup_context=_layer_norm_setup)


def _normalized_dims(weight, normalized_dims):
    return normalized_dims if normalized_dims is not None else weight.dim() if weight is not None else 1


def rms_norm(x, weight=None, eps=1e-6, *, normalized_dims=None):
    """F.rms_norm over the last normalized_dims dims (default: the weight's rank, else 1)."""
    return _rms_norm_op(x, weight, float(eps), _normalized_dims(weight, normalized_dims))[0]


def layer_norm(x, weight=None, bias=None, eps=1e-5, *, normalized_dims=None):
    """F.layer_norm over the last normalized_dims dims (default: the weight's rank, else 1)."""
    return _layer_norm_op(x, weight, bias, float(eps), _normalized_dims(weight, normalized_dims))[0]


# ---------------------------------------------------------------------------------------------
# Softmax and the unary kinds

def _softmax_impl(x: Tensor, dim: int, kind: str) -> Tensor:
    return _f._softmax(getattr(_f._bc.SoftmaxKind, kind), x, dim)


def _softmax_backward_impl(y: Tensor, dy: Tensor, dim: int, kind: str) -> Tensor:
    return _f.softmax_backward(y, dy, dim, kind)


_softmax_op = _op("softmax", _softmax_impl)
_softmax_backward_op = _op("softmax_backward", _softmax_backward_impl)


def _softmax_setup(ctx, inputs, output):
    _, ctx.dim, ctx.kind = inputs
    ctx.save_for_backward(output)


def _softmax_backward(ctx, dy):
    (y,) = ctx.saved_tensors
    return _softmax_backward_op(y, _grad(dy), ctx.dim, ctx.kind), None, None


_softmax_op.register_autograd(_softmax_backward, setup_context=_softmax_setup)


def softmax(x, dim=-1):
    return _softmax_op(x, int(dim), "softmax")


def log_softmax(x, dim=-1):
    return _softmax_op(x, int(dim), "log_softmax")


# UnaryParameters' fields, in the order the operators' `parameters` list carries them.
_UNARY_PARAMETERS = ("negative_slope", "alpha", "beta", "threshold", "min_val", "max_val")


def _unary_parameters(parameters):
    defaults = _f._bc.UnaryParameters()
    return {name: value for name, value in zip(_UNARY_PARAMETERS, parameters) if value != getattr(defaults, name)}


def _unary_impl(x: Tensor, kind: str, parameters: List[float]) -> Tensor:
    return _f.unary(kind, x, **_unary_parameters(parameters))


def _unary_backward_impl(dout: Tensor, x: Tensor, kind: str, parameters: List[float]) -> Tensor:
    return _f.unary_backward(kind, dout, x, **_unary_parameters(parameters))


_unary_op = _op("unary", _unary_impl)
_unary_backward_op = _op("unary_backward", _unary_backward_impl)


def _unary_setup(ctx, inputs, output):
    x, ctx.kind, ctx.parameters = inputs
    ctx.save_for_backward(x)


def _unary_backward(ctx, dout):
    (x,) = ctx.saved_tensors
    return _unary_backward_op(_grad(dout), x, ctx.kind, ctx.parameters), None, None


_unary_op.register_autograd(_unary_backward, setup_context=_unary_setup)


def unary(kind, x, **parameters):
    """Any differentiable UnaryKind by name; parameters as UnaryParameters' fields."""
    defaults = _f._bc.UnaryParameters()
    unknown = set(parameters) - set(_UNARY_PARAMETERS)
    if unknown:
        raise TypeError(f"unary: no parameter {sorted(unknown)} (the parameters: {', '.join(_UNARY_PARAMETERS)})")
    values = [float(parameters.get(name, getattr(defaults, name))) for name in _UNARY_PARAMETERS]
    return _unary_op(x, kind, values)


gelu, silu, relu, tanh = _f.unary_shortcuts(unary)


# ---------------------------------------------------------------------------------------------
# Matmul and linear

def _matmul_impl(a: Tensor, b: Tensor, allow_tf32: bool) -> Tensor:
    return _f.matmul(a, b, allow_tf32=allow_tf32)


def _matmul_backward_impl(dout: Tensor, a: Tensor, b: Tensor, allow_tf32: bool, needs_a: bool,
                          needs_b: bool) -> Tuple[Tensor, Tensor]:
    da, db = _f.matmul_backward(dout, a, b, allow_tf32=allow_tf32, needs=(needs_a, needs_b))
    return da if da is not None else _none(a), db if db is not None else _none(b)


_matmul_op = _op("matmul", _matmul_impl)
_matmul_backward_op = _op("matmul_backward", _matmul_backward_impl)


def _matmul_setup(ctx, inputs, output):
    a, b, ctx.allow_tf32 = inputs
    ctx.save_for_backward(a, b)


def _matmul_backward(ctx, dout):
    a, b = ctx.saved_tensors
    needs_a, needs_b = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    da, db = _matmul_backward_op(_grad(dout), a, b, ctx.allow_tf32, needs_a, needs_b)
    return da if needs_a else None, db if needs_b else None, None


_matmul_op.register_autograd(_matmul_backward, setup_context=_matmul_setup)


def matmul(a, b, *, allow_tf32=False):
    """torch.matmul (batched, broadcast; 1-D operands as torch.matmul treats them)."""
    return _matmul_op(a, b, bool(allow_tf32))


def _linear_impl(x: Tensor, weight: Tensor, bias: Optional[Tensor], activation: str,
                 allow_tf32: bool) -> Tuple[Tensor, Tensor]:
    y, pre = _f.linear(x, weight, bias, activation=activation, allow_tf32=allow_tf32, return_pre=True)
    return y, pre if pre is not None else _none(x)


def _linear_backward_impl(dy: Tensor, x: Tensor, weight: Tensor, pre: Tensor, has_bias: bool, activation: str,
                          allow_tf32: bool) -> Tuple[Tensor, Tensor, Tensor]:
    dx, dweight, dbias = _f.linear_backward(dy, x, weight, pre if activation != "none" else None, has_bias=has_bias,
                                            activation=activation, allow_tf32=allow_tf32)
    return dx, dweight, dbias if dbias is not None else _none(x)


_linear_op = _op("linear", _linear_impl)
_linear_backward_op = _op("linear_backward", _linear_backward_impl)


def _linear_setup(ctx, inputs, output):
    x, weight, bias, ctx.activation, ctx.allow_tf32 = inputs
    ctx.has_bias = bias is not None
    ctx.save_for_backward(x, weight, output[1])


def _linear_backward(ctx, dy, _dpre):
    x, weight, pre = ctx.saved_tensors
    dx, dweight, dbias = _linear_backward_op(_grad(dy), x, weight, pre, ctx.has_bias, ctx.activation, ctx.allow_tf32)
    return dx, dweight, dbias if ctx.has_bias else None, None, None


_linear_op.register_autograd(_linear_backward, setup_context=_linear_setup)


def linear(x, weight, bias=None, *, activation="none", allow_tf32=False):
    """act(F.linear(x, weight, bias)): activation none, relu, gelu, gelu_tanh or silu, fused."""
    return _linear_op(x, weight, bias, activation, bool(allow_tf32))[0]


# ---------------------------------------------------------------------------------------------
# Cross-entropy (class indices)

def _cross_entropy_impl(logits: Tensor, targets: Tensor, weight: Optional[Tensor], ignore_index: int, reduction: str,
                        label_smoothing: float) -> Tuple[Tensor, Tensor]:
    loss, lse = _f.cross_entropy(logits, targets, weight, ignore_index, reduction, label_smoothing, return_lse=True)
    return loss, lse


def _cross_entropy_backward_impl(dloss: Tensor, logits: Tensor, targets: Tensor, lse: Tensor, weight: Optional[Tensor],
                                 ignore_index: int, reduction: str, label_smoothing: float) -> Tensor:
    return _f.cross_entropy_backward(dloss, logits, targets, lse, weight, ignore_index, reduction, label_smoothing)


_cross_entropy_op = _op("cross_entropy", _cross_entropy_impl)
_cross_entropy_backward_op = _op("cross_entropy_backward", _cross_entropy_backward_impl)


def _cross_entropy_setup(ctx, inputs, output):
    logits, targets, weight, ctx.ignore_index, ctx.reduction, ctx.label_smoothing = inputs
    ctx.save_for_backward(logits, targets, weight, output[1])


def _cross_entropy_backward(ctx, dloss, _dlse):
    logits, targets, weight, lse = ctx.saved_tensors
    dlogits = _cross_entropy_backward_op(_grad(dloss), logits, targets, lse, weight, ctx.ignore_index, ctx.reduction,
                                         ctx.label_smoothing)
    return dlogits, None, None, None, None, None


_cross_entropy_op.register_autograd(_cross_entropy_backward, setup_context=_cross_entropy_setup)


def cross_entropy(logits, targets, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """F.cross_entropy of logits against class indices (differentiable in the logits)."""
    if targets.is_floating_point():
        raise TypeError("baracuda.torch.cross_entropy takes class indices; soft targets: baracuda.cross_entropy "
                        "(not differentiated)")
    return _cross_entropy_op(logits, targets, weight, int(ignore_index), reduction, float(label_smoothing))[0]


def _linear_cross_entropy_impl(hidden: Tensor, weight: Tensor, targets: Tensor, bias: Optional[Tensor],
                               ignore_index: int, reduction: str, label_smoothing: float) -> Tuple[Tensor, Tensor]:
    loss, lse = _f.linear_cross_entropy(hidden, weight, targets, bias, ignore_index, reduction, label_smoothing,
                                        return_lse=True)
    return loss, lse


def _linear_cross_entropy_backward_impl(dloss: Tensor, hidden: Tensor, weight: Tensor, targets: Tensor, lse: Tensor,
                                        bias: Optional[Tensor], ignore_index: int, reduction: str,
                                        label_smoothing: float) -> Tuple[Tensor, Tensor, Tensor]:
    dhidden, dweight, dbias = _f.linear_cross_entropy_backward(dloss, hidden, weight, targets, lse, bias,
                                                               ignore_index, reduction, label_smoothing)
    return dhidden, dweight, dbias if dbias is not None else _none(hidden)


_linear_cross_entropy_op = _op("linear_cross_entropy", _linear_cross_entropy_impl)
_linear_cross_entropy_backward_op = _op("linear_cross_entropy_backward", _linear_cross_entropy_backward_impl)


def _linear_cross_entropy_setup(ctx, inputs, output):
    hidden, weight, targets, bias, *ctx.options = inputs
    ctx.has_bias = bias is not None
    ctx.save_for_backward(hidden, weight, targets, bias, output[1])


def _linear_cross_entropy_backward(ctx, dloss, _dlse):
    hidden, weight, targets, bias, lse = ctx.saved_tensors
    dhidden, dweight, dbias = _linear_cross_entropy_backward_op(_grad(dloss), hidden, weight, targets, lse, bias,
                                                                *ctx.options)
    return dhidden, dweight, None, dbias if ctx.has_bias else None, None, None, None


_linear_cross_entropy_op.register_autograd(_linear_cross_entropy_backward, setup_context=_linear_cross_entropy_setup)


def _linear_cross_entropy_grads_impl(hidden: Tensor, weight: Tensor, targets: Tensor, bias: Optional[Tensor],
                                     ignore_index: int, reduction: str,
                                     label_smoothing: float) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    loss, dhidden, dweight, dbias = _f.linear_cross_entropy(hidden, weight, targets, bias, ignore_index, reduction,
                                                            label_smoothing, grad_in_forward=True)
    return loss, dhidden, dweight, dbias if dbias is not None else _none(hidden)


_linear_cross_entropy_grads_op = _op("linear_cross_entropy_grads", _linear_cross_entropy_grads_impl)


def _linear_cross_entropy_grads_setup(ctx, inputs, output):
    ctx.has_bias = inputs[3] is not None
    ctx.dtypes = (inputs[1].dtype, inputs[3].dtype if ctx.has_bias else None)
    ctx.save_for_backward(*output[1:])


def _linear_cross_entropy_grads_backward(ctx, dloss, _dh, _dw, _db):
    # The gradients were made in the forward, as constants: a graph of this backward (create_graph=True)
    # through a dloss that requires grad would leave out their own second derivatives without a word.
    if torch.is_grad_enabled() and dloss.requires_grad:
        raise RuntimeError("baracuda.torch.linear_cross_entropy has no double backward (its gradients are made "
                           "in the forward): use F.cross_entropy(F.linear(...)) where second derivatives are needed")
    # (out of place, so a second backward through a retained graph, and gradcheck's reentrancy check,
    # find them unscaled; the price is a second [V, D] buffer for a moment)
    dhidden, dweight, dbias = ctx.saved_tensors
    return (dhidden * dloss, (dweight * dloss).to(ctx.dtypes[0]), None,
            (dbias * dloss).to(ctx.dtypes[1]) if ctx.has_bias else None, None, None, None)


_linear_cross_entropy_grads_op.register_autograd(_linear_cross_entropy_grads_backward,
                                                 setup_context=_linear_cross_entropy_grads_setup)


def linear_cross_entropy(hidden, weight, targets, bias=None, ignore_index=-100, reduction="mean",
                         label_smoothing=0.0):
    """F.cross_entropy(F.linear(hidden, weight, bias), targets) without the [N, V] logits (Liger-Kernel's
    fused linear cross-entropy): hidden [N, D], weight [V, D], class-index targets [N]. Under reduction sum
    or mean, when a gradient is wanted, the forward makes the gradients in the same sweep (three matmuls
    a step, as Liger; they are held until the backward scales them by dloss); otherwise the backward
    makes the logits again from the saved log-sum-exp."""
    wants_grad = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (hidden, weight, bias))
    if wants_grad and reduction != "none":
        return _linear_cross_entropy_grads_op(hidden, weight, targets, bias, int(ignore_index), reduction,
                                              float(label_smoothing))[0]
    return _linear_cross_entropy_op(hidden, weight, targets, bias, int(ignore_index), reduction,
                                    float(label_smoothing))[0]


# ---------------------------------------------------------------------------------------------
# Attention: q, k, v as [B, S, H, D] views (PyTorch's [B, H, S, D] tensors transposed, no copy)

def _attention_impl(q: Tensor, k: Tensor, v: Tensor, bias: Optional[Tensor], causal: bool,
                    scale: float) -> Tuple[Tensor, Tensor]:
    out, lse = _f.attention(q, k, v, bias, causal=causal, scale=scale or None, return_lse=True)
    return out, lse


def _attention_backward_impl(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor,
                             bias: Optional[Tensor], causal: bool, scale: float) -> Tuple[Tensor, Tensor, Tensor]:
    dq, dk, dv = _f.attention_backward(dout, q, k, v, out, lse, bias, causal=causal, scale=scale or None)
    return dq, dk, dv


_attention_op = _op("attention", _attention_impl)
_attention_backward_op = _op("attention_backward", _attention_backward_impl)


def _attention_setup(ctx, inputs, output):
    q, k, v, bias, ctx.causal, ctx.scale = inputs
    ctx.save_for_backward(q, k, v, bias, output[0], output[1])


def _attention_backward(ctx, dout, _dlse):
    q, k, v, bias, out, lse = ctx.saved_tensors
    if ctx.needs_input_grad[3]:
        raise RuntimeError("baracuda.torch.scaled_dot_product_attention: no gradient for attn_mask (a float mask "
                           "that requires grad); detach it")
    dq, dk, dv = _attention_backward_op(_grad(dout), q, k, v, out, lse, bias, ctx.causal, ctx.scale)
    return dq, dk, dv, None, None, None


_attention_op.register_autograd(_attention_backward, setup_context=_attention_setup)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """F.scaled_dot_product_attention on [B, H, S, D] tensors (grouped-query heads whether or not
    enable_gqa says so): a boolean attn_mask keeps where True, a float one is added; no dropout."""
    if dropout_p:
        raise NotImplementedError("baracuda.torch.scaled_dot_product_attention: no dropout_p (apply dropout apart)")
    if query.dim() != 4:
        raise ValueError("baracuda.torch.scaled_dot_product_attention takes [B, H, S, D] tensors")
    bias = attn_mask
    if bias is not None and bias.dtype == torch.bool:
        bias = torch.zeros(bias.shape, dtype=query.dtype, device=bias.device).masked_fill_(~bias, float("-inf"))
    if bias is not None:
        while bias.dim() < 4:
            bias = bias.unsqueeze(0)
    out, _ = _attention_op(query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2), bias, bool(is_causal),
                           float(scale or 0.0))
    return out.transpose(1, 2)


# ---------------------------------------------------------------------------------------------
# Gated units, rotary embeddings, embeddings

def _gated_impl(x: Tensor, kind: str) -> Tensor:
    return _f.gated(kind, x)


def _gated_backward_impl(dout: Tensor, x: Tensor, kind: str) -> Tensor:
    return _f.gated_backward(kind, dout, x)


_gated_op = _op("gated", _gated_impl)
_gated_backward_op = _op("gated_backward", _gated_backward_impl)


def _gated_setup(ctx, inputs, output):
    x, ctx.kind = inputs
    ctx.save_for_backward(x)


def _gated_backward(ctx, dout):
    (x,) = ctx.saved_tensors
    return _gated_backward_op(_grad(dout), x, ctx.kind), None


_gated_op.register_autograd(_gated_backward, setup_context=_gated_setup)


def gated(kind, x):
    """A gated linear unit over the last dim's halves, x = [a, b] -> a * act(b): "glu" (F.glu),
    "swiglu", "geglu", "geglu_tanh", "reglu"."""
    return _gated_op(x, kind)


def _rotary_impl(q: Tensor, k: Optional[Tensor], positions: Tensor, rotary_dim: int, layout: str,
                 base: float) -> Tuple[Tensor, Tensor]:
    q_out, k_out = _f.rotary(q, k, positions, rotary_dim=rotary_dim, layout=layout, base=base)
    return q_out, k_out if k_out is not None else _none(q)


def _rotary_backward_impl(dq_out: Tensor, dk_out: Optional[Tensor], positions: Tensor, rotary_dim: int, layout: str,
                          base: float) -> Tuple[Tensor, Tensor]:
    dq, dk = _f.rotary_backward(dq_out, dk_out, positions, rotary_dim=rotary_dim, layout=layout, base=base)
    return dq, dk if dk is not None else _none(dq_out)


_rotary_op = _op("rotary", _rotary_impl)
_rotary_backward_op = _op("rotary_backward", _rotary_backward_impl)


def _rotary_setup(ctx, inputs, output):
    q, k, positions, ctx.rotary_dim, ctx.layout, ctx.base = inputs
    ctx.has_k = k is not None
    ctx.save_for_backward(positions)


def _rotary_backward(ctx, dq_out, dk_out):
    (positions,) = ctx.saved_tensors
    dq, dk = _rotary_backward_op(_grad(dq_out), _grad(dk_out) if ctx.has_k else None, positions, ctx.rotary_dim,
                                 ctx.layout, ctx.base)
    return dq, dk if ctx.has_k else None, None, None, None, None


_rotary_op.register_autograd(_rotary_backward, setup_context=_rotary_setup)


def rotary(q, k, positions, *, rotary_dim=0, layout="half_split", base=10000.0):
    """Rotary position embedding of q [B, S, H_q, D] and k [B, S, H_k, D] (or None; [B, H, S, D]
    tensors as transposed views) at integer positions [B, S] or [S]: (q_out, k_out)."""
    q_out, k_out = _rotary_op(q, k, positions, int(rotary_dim), layout, float(base))
    return q_out, k_out if k is not None else None


def _embedding_impl(indices: Tensor, weight: Tensor, padding_idx: int) -> Tensor:
    return _f.embedding(indices.reshape(-1), weight, None if padding_idx < 0 else padding_idx).reshape(
        *indices.shape, weight.shape[1])


def _embedding_backward_impl(dout: Tensor, indices: Tensor, num_embeddings: int, padding_idx: int) -> Tensor:
    return _f.embedding_backward(dout.reshape(-1, dout.shape[-1]), indices.reshape(-1), num_embeddings,
                                 None if padding_idx < 0 else padding_idx)


_embedding_op = _op("embedding", _embedding_impl)
_embedding_backward_op = _op("embedding_backward", _embedding_backward_impl)


def _embedding_setup(ctx, inputs, output):
    indices, weight, ctx.padding_idx = inputs
    ctx.rows = weight.shape[0]
    ctx.save_for_backward(indices)


def _embedding_backward(ctx, dout):
    (indices,) = ctx.saved_tensors
    return None, _embedding_backward_op(_grad(dout), indices, ctx.rows, ctx.padding_idx), None


_embedding_op.register_autograd(_embedding_backward, setup_context=_embedding_setup)


def embedding(indices, weight, padding_idx=None):
    """F.embedding(indices, weight, padding_idx): integer indices of any shape; the padding row gets
    no gradient and reads as zeros (PyTorch reads weight[padding_idx], which nn.Embedding keeps zero)."""
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return _embedding_op(indices, weight, -1 if padding_idx is None else int(padding_idx))


def _grouped_mm_impl(a: Tensor, b: Tensor, offsets: Tensor, transpose_b: bool) -> Tensor:
    return _f.grouped_mm(a, b, offsets, transpose_b=transpose_b)


def _grouped_mm_backward_impl(dout: Tensor, a: Tensor, b: Tensor, offsets: Tensor,
                              transpose_b: bool) -> Tuple[Tensor, Tensor]:
    return _f.grouped_mm_backward(dout, a, b, offsets, transpose_b=transpose_b)


_grouped_mm_op = _op("grouped_mm", _grouped_mm_impl)
_grouped_mm_backward_op = _op("grouped_mm_backward", _grouped_mm_backward_impl)


def _grouped_mm_setup(ctx, inputs, output):
    a, b, offsets, ctx.transpose_b = inputs
    ctx.save_for_backward(a, b, offsets)


def _grouped_mm_backward(ctx, dout):
    a, b, offsets = ctx.saved_tensors
    da, db = _grouped_mm_backward_op(_grad(dout), a, b, offsets, ctx.transpose_b)
    return da, db, None, None


_grouped_mm_op.register_autograd(_grouped_mm_backward, setup_context=_grouped_mm_setup)


def grouped_mm(a, b, offsets, *, transpose_b=False):
    """torch._grouped_mm(a, b, offs) of a mixture of experts: a [T, K] (each group's rows in turn),
    b [G, K, N] (or [G, N, K], each expert's weight as nn.Linear keeps it, with transpose_b), offsets
    [G] each group's end row; differentiable in a and b. The CPU backend only so far."""
    return _grouped_mm_op(a, b, offsets, bool(transpose_b))


# ---------------------------------------------------------------------------------------------
# Group norm and the pointwise losses

def _group_norm_impl(x: Tensor, num_groups: int, weight: Optional[Tensor], bias: Optional[Tensor], eps: float,
                     silu: bool) -> Tuple[Tensor, Tensor, Tensor]:
    return tuple(_f.group_norm(x, num_groups, weight, bias, eps, silu=silu, return_stats=True))


def _group_norm_backward_impl(dy: Tensor, x: Tensor, num_groups: int, weight: Optional[Tensor], mean: Tensor,
                              rstd: Tensor, bias: Optional[Tensor], eps: float, has_bias: bool,
                              silu: bool) -> Tuple[Tensor, Tensor, Tensor]:
    dx, dweight, dbias = _f.group_norm_backward(dy, x, num_groups, weight, mean, rstd, bias, eps, has_bias=has_bias,
                                                silu=silu)
    return dx, dweight if dweight is not None else _none(x), dbias if dbias is not None else _none(x)


_group_norm_op = _op("group_norm", _group_norm_impl)
_group_norm_backward_op = _op("group_norm_backward", _group_norm_backward_impl)


def _group_norm_setup(ctx, inputs, output):
    x, ctx.num_groups, weight, bias, ctx.eps, ctx.silu = inputs
    ctx.has_weight, ctx.has_bias = weight is not None, bias is not None
    ctx.save_for_backward(x, weight, bias, output[1], output[2])


def _group_norm_backward(ctx, dy, _dmean, _drstd):
    x, weight, bias, mean, rstd = ctx.saved_tensors
    dx, dweight, dbias = _group_norm_backward_op(_grad(dy), x, ctx.num_groups, weight, mean, rstd, bias, ctx.eps,
                                                 ctx.has_bias, ctx.silu)
    return dx, None, dweight if ctx.has_weight else None, dbias if ctx.has_bias else None, None, None


_group_norm_op.register_autograd(_group_norm_backward, setup_context=_group_norm_setup)


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, *, silu=False):
    """F.group_norm of x [N, C, *]; silu=True applies F.silu in the same pass."""
    return _group_norm_op(x, int(num_groups), weight, bias, float(eps), bool(silu))[0]


def _pointwise_loss_impl(input: Tensor, target: Tensor, weight: Optional[Tensor], pos_weight: Optional[Tensor],
                         kind: str, reduction: str, beta: float, log_target: bool) -> Tensor:
    return _f.pointwise_loss(kind, input, target, reduction, beta, log_target, weight, pos_weight)


def _pointwise_loss_backward_impl(dloss: Tensor, input: Tensor, target: Tensor, weight: Optional[Tensor],
                                  pos_weight: Optional[Tensor], kind: str, reduction: str, beta: float,
                                  log_target: bool) -> Tensor:
    return _f.pointwise_loss_backward(kind, dloss, input, target, reduction, beta, log_target, weight, pos_weight)


_pointwise_loss_op = _op("pointwise_loss", _pointwise_loss_impl)
_pointwise_loss_backward_op = _op("pointwise_loss_backward", _pointwise_loss_backward_impl)


def _pointwise_loss_setup(ctx, inputs, output):
    input, target, weight, pos_weight, *ctx.options = inputs
    ctx.save_for_backward(input, target, weight, pos_weight)


def _pointwise_loss_backward(ctx, dloss):
    if any(ctx.needs_input_grad[1:4]):
        raise RuntimeError("baracuda.torch's pointwise losses give no gradient to the target or the weights; "
                           "detach them")
    input, target, weight, pos_weight = ctx.saved_tensors
    dinput = _pointwise_loss_backward_op(_grad(dloss), input, target, weight, pos_weight, *ctx.options)
    return dinput, None, None, None, None, None, None, None


_pointwise_loss_op.register_autograd(_pointwise_loss_backward, setup_context=_pointwise_loss_setup)


def pointwise_loss(kind, input, target, reduction="mean", beta=1.0, log_target=False, weight=None, pos_weight=None):
    """baracuda.pointwise_loss (kind "mse", "l1", "smooth_l1", "huber", "bce", "bce_with_logits",
    "kl_div"), differentiable in the input alone (a target or weight that requires grad is an error)."""
    return _pointwise_loss_op(input, target, weight, pos_weight, kind, reduction, float(beta), bool(log_target))


(mse_loss, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy, binary_cross_entropy_with_logits,
 kl_div) = _f.loss_shortcuts(pointwise_loss)


# ---------------------------------------------------------------------------------------------
# patch(model)

def _linear_forward(self, x):
    return linear(x, self.weight, self.bias)


def _layer_norm_forward(self, x):
    return layer_norm(x, self.weight, self.bias, self.eps, normalized_dims=len(self.normalized_shape))


def _rms_norm_forward(self, x):
    # torch.nn.RMSNorm (eps None: the dtype's machine epsilon) and Hugging Face's *RMSNorm (variance_epsilon)
    eps = getattr(self, "variance_epsilon", getattr(self, "eps", None))
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    weight = getattr(self, "weight", None)
    normalized_dims = len(self.normalized_shape) if hasattr(self, "normalized_shape") else 1
    return rms_norm(x, weight, eps, normalized_dims=normalized_dims)


def _embedding_forward(self, indices):
    return embedding(indices, self.weight, self.padding_idx)


def _silu_forward(self, x):
    return silu(x)


def _gelu_forward(self, x):
    return gelu(x, getattr(self, "approximate", "none"))


def patch(model):
    """Moves, in place, the modules of `model` that baracuda has operators for onto them: nn.Linear,
    nn.LayerNorm, nn.RMSNorm and Hugging Face's *RMSNorm modules (a weight and variance_epsilon), nn.SiLU,
    nn.GELU and nn.Embedding (without max_norm or sparse gradients). Returns the number of modules
    patched, by kind."""
    counts = {}
    for module in model.modules():
        kind = None
        if isinstance(module, torch.nn.Linear):
            kind, forward = "linear", _linear_forward
        elif isinstance(module, torch.nn.LayerNorm):
            kind, forward = "layer_norm", _layer_norm_forward
        elif isinstance(module, getattr(torch.nn, "RMSNorm", ())) or (
                type(module).__name__.endswith("RMSNorm") and hasattr(module, "variance_epsilon")):
            kind, forward = "rms_norm", _rms_norm_forward
        elif isinstance(module, torch.nn.SiLU):
            kind, forward = "silu", _silu_forward
        elif isinstance(module, torch.nn.GELU):
            kind, forward = "gelu", _gelu_forward
        elif isinstance(module, torch.nn.Embedding) and module.max_norm is None and not module.sparse:
            kind, forward = "embedding", _embedding_forward
        if kind:
            module.forward = types.MethodType(forward, module)
            counts[kind] = counts.get(kind, 0) + 1
    return counts

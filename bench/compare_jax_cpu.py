#!/usr/bin/env python3
"""The CPU backend's reductions, scans, softmax family, random draws (rand, randn, dropout), norms (layer_norm, rms_norm, group_norm, batch_norm and backward), cross-entropy (and backward), matmul (and backward), unary and binary ops (add, mul, pow, logaddexp, xlogy), where / clamp, lerp, indexing and segment reductions beside jitted JAX (XLA:CPU), in one
run on this machine.

Runs baracuda-profiler (--backend=cpu) on each op and shape, then times JAX's equivalent on the same
shapes and dtypes: jax.jit, block_until_ready, the median of many wall-clock calls after a warm-up,
inputs rotated through as many sets as the profiler uses (past 64 MiB), x uniform in [0.5, 1.5) as
in tools/harness/rows/reduce.cpp ([-8, 8) for the softmax family, as tools/harness/rows/softmax.cpp);
each case the faster of --rounds rounds, ours then JAX in each. Prints one markdown table: case,
ours, JAX, JAX / ours.

    python3 bench/compare_jax_cpu.py --profiler build/cpu/tools/profiler/baracuda-profiler \
        [--ops sum,cumsum] [--dtypes f32,bf16] [--shapes 8192x4096] [--softmax-shapes 1024x1024] [--out table.md]

For a single core on both sides: `taskset -c 0 python3 bench/compare_jax_cpu.py ...` (OpenMP and XLA
both take the affinity mask's one CPU).

cummax: ours also writes the i64 indices (torch.cummax's pair); lax.cummax writes the values only.
Softmax backward: ours reads (y, dy); JAX's is the jitted pullback of jax.vjp, its residuals computed
beforehand from x, so that neither side times the forward.
Outputs as large as the inputs (the softmax family, scans): the profiler rotates its output buffers
with its inputs, through cold memory; JAX's outputs come from its allocator, most likely the buffer
the previous call freed, still in cache (keeping each call's output alive, so that the next gets new
memory, doubled JAX's softmax along dim 0 of [4000, 1024] f32 on one core, page faults included).
"""
import argparse
import math
import os
import platform
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_builds import run as run_profiler  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.scipy.special  # noqa: E402
import numpy as np  # noqa: E402

DTYPES = {"f32": jnp.float32, "bf16": jnp.bfloat16, "f64": jnp.float64}


def vjp_of(f):
    """The gradient of x from dout through jax.vjp, as the profiler's backward cases."""
    return lambda x, dout: jax.vjp(f, x)[1](dout)[0]


# The JAX peer of each profiled op, as a function of x and the axis (the profiler's *_dim0 ops reduce
# or scan dim 0, the others the last dim).
FORWARD = {
    "sum": lambda x, a: jnp.sum(x, a),
    "amax": lambda x, a: jnp.max(x, a),
    "argmax": lambda x, a: jnp.argmax(x, a),
    "var": lambda x, a: jnp.var(x, a, ddof=1),
    "logsumexp": lambda x, a: jax.nn.logsumexp(x, a),
    "cumsum": lambda x, a: jnp.cumsum(x, a),
    "cummax": lambda x, a: jax.lax.cummax(x, a % x.ndim),
    "logcumsumexp": lambda x, a: jax.lax.cumlogsumexp(x, a % x.ndim),
    "softmax": lambda x, a: jax.nn.softmax(x, a),
    "log_softmax": lambda x, a: jax.nn.log_softmax(x, a),
    "gelu": lambda x, a: jax.nn.gelu(x, approximate=False),
    "silu": lambda x, a: jax.nn.silu(x),
    "exp": lambda x, a: jnp.exp(x),
    "copy_transposed": lambda x, a: jnp.transpose(x),  # ours: y = x.t() made contiguous
}
BACKWARD = {"sum_backward": "sum", "cumsum_backward": "cumsum", "gelu_backward": "gelu", "silu_backward": "silu",
            "exp_backward": "exp"}
# The elementwise ops (x uniform in UNARY_RANGE, the first interval of tools/harness/rows/unary.cpp's
# gelu / silu; a and b of lerp in [-1, 1)), lerp with the profiler's scalar weight 0.3.
UNARY = ("gelu", "silu", "exp")
UNARY_RANGE = (-4.0, 4.0)
LERP_WEIGHT = 0.3
# Backward ops timed as the pullback alone (the profiler's *_backward_dim0 ops run along dim 0).
PULLBACK = {"softmax_backward": "softmax", "log_softmax_backward": "log_softmax",
            "softmax_backward_dim0": "softmax"}
FORWARD_SOFTMAX = ("softmax", "log_softmax")
SOFTMAX_RANGE = (-8.0, 8.0)
# Ops whose profiler cases are their own shapes (the profiler's defaults), not --shapes.
OWN_SHAPES = ("softmax", "log_softmax", "softmax_dim0", "softmax_backward", "log_softmax_backward",
              "softmax_backward_dim0", "gather", "gather_backward", "gather_rows_backward", "index_select",
              "index_select_rows", "embedding",
              "embedding_backward", "segment_sum_sorted", "segment_sum_unsorted", "segment_max_sorted",
              "segment_max_unsorted", "segment_min_sorted", "segment_min_unsorted", "group_norm", "group_norm_backward",
              "group_norm_silu", "group_norm_nhwc", "group_norm_silu_nhwc", "group_norm_backward_nhwc",
              "group_norm_silu_backward", "group_norm_silu_backward_nhwc",
              "batch_norm", "batch_norm_backward")

DEFAULT_OPS = ("sum,sum_dim0,amax,amax_dim0,argmax,argmax_dim0,var,var_dim0,logsumexp,logsumexp_dim0,"
               "cumsum,cumsum_dim0,cummax,cummax_dim0,logcumsumexp,logcumsumexp_dim0,sum_backward,cumsum_backward,"
               "softmax,log_softmax,softmax_dim0,softmax_backward,log_softmax_backward,softmax_backward_dim0")


def lerp_case(op, shape, dtype):
    """lerp (a + w (b - a)) and its pullback to (da, db) from dout."""
    def lerp(a, b):
        return a + LERP_WEIGHT * (b - a)
    if op == "lerp":
        fn = jax.jit(lerp)
    else:
        fn = jax.jit(lambda a, b, dout: jax.vjp(lerp, a, b)[1](dout))

    def make(seed):
        keys = jax.random.split(jax.random.PRNGKey(seed), 3)
        args = [jax.random.uniform(k, shape, jnp.float32, -1.0, 1.0).astype(dtype) for k in keys]
        return tuple(args[:2] if op == "lerp" else args)
    return fn, make


# The indexing ops on the profiler's (a, b, k) shapes (tools/harness/rows/indexing.cpp), uniform
# int32 indices (ours i64). Each op: (fn(a, b, k) -> the function of (x, idx), with the table's
# extent fixed in it, x's shape, idx's shape, the index bound), each a function of (a, b, k).
def _scatter_rows(extent):
    return lambda d, i: jnp.zeros((d.shape[0], extent), d.dtype).at[jnp.arange(d.shape[0])[:, None], i].add(d)


INDEXING = {
    "gather": (lambda a, b, k: lambda x, i: jnp.take_along_axis(x, i, 1), lambda a, b, k: (a, b),
               lambda a, b, k: (a, k), lambda a, b, k: b),
    "gather_backward": (lambda a, b, k: _scatter_rows(b), lambda a, b, k: (a, k), lambda a, b, k: (a, k),
                        lambda a, b, k: b),
    "gather_rows_backward": (lambda a, b, k: lambda d, i: jnp.zeros((a, b), d.dtype).at[i, jnp.arange(b)[None, :]].add(d),
                             lambda a, b, k: (k, b), lambda a, b, k: (k, b), lambda a, b, k: a),
    "index_select": (lambda a, b, k: lambda x, i: jnp.take(x, i, axis=1), lambda a, b, k: (a, b),
                     lambda a, b, k: (k,), lambda a, b, k: b),
    "index_select_rows": (lambda a, b, k: lambda x, i: jnp.take(x, i, axis=0), lambda a, b, k: (a, b),
                          lambda a, b, k: (k,), lambda a, b, k: a),
    "embedding": (lambda a, b, k: lambda x, i: jnp.take(x, i, axis=0), lambda a, b, k: (a, b),
                  lambda a, b, k: (k,), lambda a, b, k: a),
    "embedding_backward": (lambda a, b, k: lambda d, i: jax.ops.segment_sum(d, i, a), lambda a, b, k: (k, b),
                           lambda a, b, k: (k,), lambda a, b, k: a),
}


def indexing_case(op, shape, dtype):
    fn, x_shape, idx_shape, bound = INDEXING[op]
    a, b, k = shape
    jitted = jax.jit(fn(a, b, k))

    def make(seed):
        key = jax.random.PRNGKey(seed)
        x = jax.random.uniform(key, x_shape(a, b, k), jnp.float32, -1.0, 1.0).astype(dtype)
        idx = jax.random.randint(jax.random.fold_in(key, 1), idx_shape(a, b, k), 0, bound(a, b, k), jnp.int32)
        return x, idx
    return jitted, make


# The segment reductions on the profiler's [N, D, S] shapes (tools/harness/rows/segment.cpp): data
# [N, D] uniform, S segments, ids uniform (sorted for the sorted forms), jax.ops.segment_*.
SEGMENT = {"segment_sum_sorted": (jax.ops.segment_sum, True), "segment_sum_unsorted": (jax.ops.segment_sum, False),
           "segment_max_sorted": (jax.ops.segment_max, True), "segment_max_unsorted": (jax.ops.segment_max, False),
           "segment_min_sorted": (jax.ops.segment_min, True), "segment_min_unsorted": (jax.ops.segment_min, False)}


def segment_case(op, shape, dtype):
    """ids int64 on both sides, as the profiler's cases (JAX's default int32 would read half the id
    bytes: at D = 1 a third of the case's bytes)."""
    reduce, is_sorted = SEGMENT[op]
    n, d, segments = shape
    jitted = jax.jit(lambda x, i: reduce(x, i, segments, indices_are_sorted=is_sorted))

    def fn(x, i):
        with jax.enable_x64(True):
            return jitted(x, i)

    def make(seed):
        with jax.enable_x64(True):
            key = jax.random.PRNGKey(seed)
            x = jax.random.uniform(key, (n, d), jnp.float32, -1.0, 1.0).astype(dtype)
            ids = jax.random.randint(jax.random.fold_in(key, 1), (n,), 0, segments, jnp.int64)
            return x, jnp.sort(ids) if is_sorted else ids
    return fn, make


def _clip_row(x, lo, hi):
    return jnp.clip(x, lo, hi[None, :])


# The ternary family (tools/harness/rows/ternary.cpp's bench cases): (function of the operands, the
# operands it takes, whether it is the pullback of the tensors' gradients). Operands in the profiler's
# ranges: x in [-1, 1), lo in [-1, -0.5), hi in [0.5, 1); cond uniform.
TERNARY = {
    "where": (lambda c, x, y: jnp.where(c, x, y), "cxy", False),
    "clamp": (lambda x: jnp.clip(x, -0.5, 0.5), "x", False),
    "clamp_tensors": (lambda x, lo, hi: jnp.clip(x, lo, hi), "xlh", False),
    "where_backward": (lambda c, x, y: jnp.where(c, x, y), "cxy", True),
    "clamp_backward": (lambda x: jnp.clip(x, -0.5, 0.5), "x", True),
    "clamp_row_backward": (_clip_row, "xlH", True),
    "addcdiv": (lambda a, b, c: a + 0.5 * (b / c), "xyh", False),
    "addcdiv_backward": (lambda a, b, c: a + 0.5 * (b / c), "xyh", True),
}


# Binary ops: a and b [N, D] in the profiler's range [0.5, 2) (tools/harness/rows/binary.cpp).
BINARY = {
    "add": jnp.add,
    "mul": jnp.multiply,
    "pow": jnp.power,
    "logaddexp": jnp.logaddexp,
    "xlogy": jax.scipy.special.xlogy,
}


def binary_case(op, shape, dtype):
    def make(seed):
        key = jax.random.PRNGKey(seed)
        return tuple(jax.random.uniform(jax.random.fold_in(key, i), shape, jnp.float32, 0.5, 2.0).astype(dtype)
                     for i in range(2))
    return jax.jit(BINARY[op]), make


def ternary_case(op, shape, dtype):
    f, names, pullback = TERNARY[op]
    ranges = {"x": (-1.0, 1.0), "y": (-1.0, 1.0), "l": (-1.0, -0.5), "h": (0.5, 1.0), "H": (0.5, 1.0)}

    def make(seed):
        key = jax.random.PRNGKey(seed)
        args = []
        for i, n in enumerate(names):
            k = jax.random.fold_in(key, i)
            if n == "c":
                args.append(jax.random.uniform(k, shape) < 0.5)
            else:
                s = shape[-1:] if n == "H" else shape
                args.append(jax.random.uniform(k, s, jnp.float32, *ranges[n]).astype(dtype))
        if pullback:  # the gradients of the float operands (not where's condition) from dout
            dout = jax.random.uniform(jax.random.fold_in(key, 9), shape, jnp.float32, -1.0, 1.0).astype(dtype)
            return tuple(args) + (dout,)
        return tuple(args)
    if not pullback:
        return jax.jit(f), make
    if names[0] == "c":
        fn = jax.jit(lambda c, x, y, d: jax.vjp(lambda a, b: f(c, a, b), x, y)[1](d))
    else:
        fn = jax.jit(lambda *a: jax.vjp(f, *a[:-1])[1](a[-1]))
    return fn, make


# LayerNorm / RmsNorm over the last dim (weight, LayerNorm's bias; f32 statistics for 16-bit x, as
# ours): the forward, and the backward as the pullback of (x, w[, b]) alone, its residuals computed
# beforehand (ours reads the saved mean and rstd).
def _layer_norm(x, w, b, eps=1e-5):
    xf = x.astype(jnp.float32) if x.dtype == jnp.bfloat16 else x
    mean = jnp.mean(xf, -1, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), -1, keepdims=True)
    return ((xf - mean) * jax.lax.rsqrt(var + eps) * w + b).astype(x.dtype)


def _rms_norm(x, w, eps=1e-5):
    xf = x.astype(jnp.float32) if x.dtype == jnp.bfloat16 else x
    return (xf * jax.lax.rsqrt(jnp.mean(jnp.square(xf), -1, keepdims=True) + eps) * w).astype(x.dtype)


NORM = {"layer_norm": (_layer_norm, 3), "rms_norm": (_rms_norm, 2)}


def norm_case(op, shape, dtype):
    f, arity = NORM[op.removesuffix("_backward")]

    def args(seed):
        key = jax.random.PRNGKey(seed)
        x = jax.random.uniform(key, shape, jnp.float32, -1.0, 1.0).astype(dtype)
        w = jax.random.uniform(jax.random.fold_in(key, 1), shape[-1:], jnp.float32, 0.5, 1.5).astype(dtype)
        b = jax.random.uniform(jax.random.fold_in(key, 2), shape[-1:], jnp.float32, -1.0, 1.0).astype(dtype)
        return (x, w, b)[:arity]
    if not op.endswith("_backward"):
        return jax.jit(f), args

    def make_pullback(seed):
        dout = jax.random.uniform(jax.random.fold_in(jax.random.PRNGKey(seed), 3), shape, jnp.float32, -1.0,
                                  1.0).astype(dtype)
        return jax.vjp(f, *args(seed))[1], dout
    return jax.jit(lambda pullback, dout: pullback(dout)), make_pullback


# GroupNorm (32 groups, as the profiler's cases) and BatchNorm (training: the batch's statistics over
# every dim but 1) of x [N, C, H, W], the weight and bias [C] (f32 beside 16-bit data for BatchNorm,
# as the profiler's cases), f32 statistics for 16-bit x: the forward, and the backward as the pullback
# of (x, w, b).
def _group_norm(x, w, b, eps=1e-5, silu=False):
    n, c = x.shape[:2]
    g = math.gcd(c, 32)
    xf = (x.astype(jnp.float32) if x.dtype == jnp.bfloat16 else x).reshape(n, g, -1)
    mean = jnp.mean(xf, -1, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), -1, keepdims=True)
    y = ((xf - mean) * jax.lax.rsqrt(var + eps)).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    y = y * w.reshape(shape) + b.reshape(shape)
    return (jax.nn.silu(y) if silu else y).astype(x.dtype)


# The same of x [N, H, W, C] (channels last: JAX's and flax.linen.GroupNorm's layout; the profiler's
# _nhwc cases, whose shape is given as [N, C, H, W]).
def _group_norm_nhwc(x, w, b, eps=1e-5, silu=False):
    n, c = x.shape[0], x.shape[-1]
    g = math.gcd(c, 32)
    xf = (x.astype(jnp.float32) if x.dtype == jnp.bfloat16 else x).reshape(n, -1, g, c // g)
    mean = jnp.mean(xf, (1, 3), keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), (1, 3), keepdims=True)
    y = ((xf - mean) * jax.lax.rsqrt(var + eps)).reshape(x.shape) * w + b
    return (jax.nn.silu(y) if silu else y).astype(x.dtype)


def _batch_norm(x, w, b, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    xf = x.astype(jnp.float32) if x.dtype == jnp.bfloat16 else x
    mean = jnp.mean(xf, axes, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), axes, keepdims=True)
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    return ((xf - mean) * jax.lax.rsqrt(var + eps) * w.reshape(shape) + b.reshape(shape)).astype(x.dtype)


CHANNEL_NORM = {"group_norm": _group_norm, "batch_norm": _batch_norm,
                "group_norm_silu": lambda x, w, b: _group_norm(x, w, b, silu=True),
                "group_norm_nhwc": _group_norm_nhwc,
                "group_norm_silu_nhwc": lambda x, w, b: _group_norm_nhwc(x, w, b, silu=True)}


# An op's channel-norm name: group_norm_backward_nhwc is group_norm_nhwc's backward.
def channel_norm_base(op):
    return op.replace("_backward", "")


def channel_norm_case(op, shape, dtype):
    base = channel_norm_base(op)
    f = CHANNEL_NORM[base]
    channels = (shape[1],)
    if base.endswith("_nhwc"):
        shape = (shape[0],) + tuple(shape[2:]) + (shape[1],)
    wdtype = jnp.float32 if base == "batch_norm" else dtype

    def args(seed):
        key = jax.random.PRNGKey(seed)
        x = jax.random.uniform(key, shape, jnp.float32, -1.0, 1.0).astype(dtype)
        w = jax.random.uniform(jax.random.fold_in(key, 1), channels, jnp.float32, 0.5, 1.5).astype(wdtype)
        b = jax.random.uniform(jax.random.fold_in(key, 2), channels, jnp.float32, -1.0, 1.0).astype(wdtype)
        return x, w, b
    if "_backward" not in op:
        return jax.jit(f), args

    def make_pullback(seed):
        dout = jax.random.uniform(jax.random.fold_in(jax.random.PRNGKey(seed), 3), shape, jnp.float32, -1.0,
                                  1.0).astype(dtype)
        return jax.vjp(f, *args(seed))[1], dout
    return jax.jit(lambda pullback, dout: pullback(dout)), make_pullback


# Cross-entropy over class indices, the mean (optax.softmax_cross_entropy_with_integer_labels, then
# its mean), f32 arithmetic for 16-bit logits as ours; the backward as the pullback of the logits.
def _cross_entropy(x, t):
    x32 = x.astype(jnp.float32)
    picked = jnp.take_along_axis(x32, t[:, None], axis=-1)[:, 0]
    return jnp.mean(jax.nn.logsumexp(x32, axis=-1) - picked)


def cross_entropy_case(op, shape, dtype):
    n, c = shape

    def args(seed):
        key = jax.random.PRNGKey(seed)
        x = jax.random.uniform(key, shape, jnp.float32, -4.0, 4.0).astype(dtype)
        t = jax.random.randint(jax.random.fold_in(key, 1), (n,), 0, c, jnp.int32)
        return x, t
    if op == "cross_entropy":
        return jax.jit(_cross_entropy), args

    def make_pullback(seed):
        x, t = args(seed)
        return jax.vjp(lambda v: _cross_entropy(v, t), x)[1], jnp.ones((), jnp.float32)
    return jax.jit(lambda pullback, dout: pullback(dout)[0]), make_pullback


# torch.matmul's case shape is M x N x K: a [M, K] @ b [K, N] (16-bit products accumulated in f32,
# as ours); the backward as the pullback of (a, b), its residuals computed beforehand.
def matmul_case(op, shape, dtype):
    m, n, k = shape

    def f(a, b):
        return jnp.matmul(a, b, preferred_element_type=jnp.float32).astype(dtype)

    def args(seed):
        key = jax.random.PRNGKey(seed)
        a = jax.random.uniform(key, (m, k), jnp.float32, -1.0, 1.0).astype(dtype)
        return a, jax.random.uniform(jax.random.fold_in(key, 1), (k, n), jnp.float32, -1.0, 1.0).astype(dtype)
    if op == "matmul":
        return jax.jit(f), args

    def make_pullback(seed):
        dout = jax.random.uniform(jax.random.fold_in(jax.random.PRNGKey(seed), 3), (m, n), jnp.float32, -1.0,
                                  1.0).astype(dtype)
        return jax.vjp(f, *args(seed))[1], dout
    return jax.jit(lambda pullback, dout: pullback(dout)), make_pullback


# The random family (tools/harness/rows/random.cpp's bench cases): jax.random's draws from a key
# (threefry, JAX's default), dropout written as JAX users write it (bernoulli keep mask, x / (1 - p)).
RANDOM = {
    "rand": lambda key, x: jax.random.uniform(key, x.shape, x.dtype),
    "randn": lambda key, x: jax.random.normal(key, x.shape, x.dtype),
    "dropout": lambda key, x: jnp.where(jax.random.bernoulli(key, 0.9, x.shape), x / 0.9, 0).astype(x.dtype),
}


def random_case(op, shape, dtype):
    def make(seed):
        key = jax.random.PRNGKey(seed)
        return key, jax.random.uniform(jax.random.fold_in(key, 1), shape, jnp.float32, -1.0, 1.0).astype(dtype)
    return jax.jit(RANDOM[op]), make


def jax_case(op, shape, dtype):
    """(jitted fn, make(seed) -> its arguments) for one profiled case."""
    if op in ("matmul", "matmul_backward"):
        return matmul_case(op, shape, dtype)
    if op in RANDOM:
        return random_case(op, shape, dtype)
    if op.removesuffix("_backward") in NORM:
        return norm_case(op, shape, dtype)
    if channel_norm_base(op) in CHANNEL_NORM:
        return channel_norm_case(op, shape, dtype)
    if op in ("cross_entropy", "cross_entropy_backward"):
        return cross_entropy_case(op, shape, dtype)
    if op in BINARY:
        return binary_case(op, shape, dtype)
    if op in TERNARY:
        return ternary_case(op, shape, dtype)
    if op in INDEXING:
        return indexing_case(op, shape, dtype)
    if op in SEGMENT:
        return segment_case(op, shape, dtype)
    if op in ("lerp", "lerp_backward"):
        return lerp_case(op, shape, dtype)
    base = op.removesuffix("_dim0")
    axis = 0 if op.endswith("_dim0") else -1
    if op in PULLBACK:
        forward = FORWARD[PULLBACK[op]]
        fn = jax.jit(lambda pullback, dout: pullback(dout)[0])

        def make_pullback(seed):
            key = jax.random.PRNGKey(seed)
            x = jax.random.uniform(key, shape, jnp.float32, *SOFTMAX_RANGE).astype(dtype)
            dout = jax.random.uniform(jax.random.fold_in(key, 1), shape, jnp.float32, -1.0, 1.0).astype(dtype)
            return jax.vjp(lambda v: forward(v, axis), x)[1], dout
        return fn, make_pullback
    if op in BACKWARD:
        forward = FORWARD[BACKWARD[op]]
        fn = jax.jit(vjp_of(lambda x: forward(x, -1)))
        out_shape = jax.eval_shape(lambda x: forward(x, -1), jax.ShapeDtypeStruct(shape, dtype)).shape
    else:
        fn = jax.jit(lambda x: FORWARD[base](x, axis))
        out_shape = None

    def make(seed):
        key = jax.random.PRNGKey(seed)
        x = jax.random.uniform(key, shape, jnp.float32, *SOFTMAX_RANGE if base in FORWARD_SOFTMAX else (
            UNARY_RANGE if base in UNARY or BACKWARD.get(base) in UNARY else (0.5, 1.5)))
        x = x.astype(dtype)
        if out_shape is None:
            return (x,)
        dout = jax.random.uniform(jax.random.fold_in(key, 1), out_shape, jnp.float32, -1.0, 1.0).astype(dtype)
        return x, dout
    return fn, make


def time_jax(op, shape, dtype, sets, iterations, warmup, flush=None):
    """Median ms of fn's calls. flush: an array read between calls (untimed), so that JAX's
    output, which XLA's allocator recycles, is as cold as ours (the profiler rotates outputs too)."""
    fn, make = jax_case(op, shape, dtype)
    data = [jax.block_until_ready(make(s)) for s in range(sets)]
    for i in range(warmup):
        jax.block_until_ready(fn(*data[i % sets]))
    times = []
    for i in range(iterations):
        if flush is not None:  # read, not written: no dirty lines left to cost JAX a write-back
            flush.sum()
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*data[i % sets]))
        times.append((time.perf_counter() - t0) * 1e3)
        if len(times) >= 3 and sum(times) > 10e3:  # lax.cumlogsumexp takes 10 s a call at [8192, 4096]
            break
    times.sort()
    return times[len(times) // 2]


def profiler_sets(case_bytes):
    """As the profiler on the CPU: enough input sets that one pass over them exceeds 64 MiB."""
    return int(min(64, max(2, math.ceil((64 << 20) / max(case_bytes, 1)))))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiler", required=True)
    ap.add_argument("--ops", default=DEFAULT_OPS)
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--shapes", default="8192x4096",
                    help="shapes of the reductions and scans (the profiler's --shapes)")
    ap.add_argument("--vector", default="16777216", help="more shapes of cumsum (one long line)")
    ap.add_argument("--softmax-shapes", default="",
                    help="shapes of the softmax family (default: the profiler's own, [1024, 1024], [64, 32000], "
                         "[4096, 128] along the last dim and [4000, 1024] along dim 0)")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default="")
    ap.add_argument("--cold-outputs", action="store_true",
                    help="read 64 MiB between JAX's calls (untimed), evicting its recycled output as ours is")
    args = ap.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        flush = np.ones(64 << 18, np.float32) if args.cold_outputs else None  # 64 MiB
        for op in args.ops.split(","):
            shapes = args.shapes + ("," + args.vector if op == "cumsum" and args.vector else "")
            options = ["--backend=cpu", f"--iterations={args.iterations}", f"--warmup={args.warmup}"]
            if op not in OWN_SHAPES:
                options.append(f"--shapes={shapes}")
            elif args.softmax_shapes and op not in INDEXING:
                options.append(f"--shapes={args.softmax_shapes}")
            # Each round times ours, then JAX: the faster median of the rounds, so that a burst of
            # other work on the machine falls on both alike.
            ours, theirs = {}, {}
            for _ in range(args.rounds):
                for key, case in run_profiler(args.profiler, op, args.dtypes, tmp, options).items():
                    if key not in ours or case["median_ms"] < ours[key]["median_ms"] or not case["verified"]:
                        ours[key] = case
                    ms = time_jax(op, tuple(case["shape"]), DTYPES[key[1]], profiler_sets(case["bytes"]),
                                  args.iterations, args.warmup, flush)
                    theirs[key] = min(theirs.get(key, ms), ms)
            for (name, dtype, shape_text), case in ours.items():
                jax_ms = theirs[(name, dtype, shape_text)]
                rows.append((name, case["variant"], dtype, shape_text, "ok" if case["verified"] else "FAIL",
                             case["median_ms"], 100 * case["copy_fraction"], jax_ms))
                print(f"{name} {dtype} {shape_text}: ours {case['median_ms']:.3f} ms, jax {jax_ms:.3f} ms",
                      file=sys.stderr)

    lines = [f"# baracuda CPU vs jitted JAX {jax.__version__} ({platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} cores)",
             "",
             f"Medians of {args.iterations} wall-clock calls after {args.warmup} warm-up calls (the faster of "
             f"{args.rounds} rounds, each ours then JAX; JAX's calls stop past 10 s, 3 at least), inputs rotated past "
             f"64 MiB" + (", and 64 MiB read between JAX's calls (untimed: its recycled output as cold as "
                          "ours)" if args.cold_outputs else "") + ". JAX / ours > 1: ours is faster.",
             "",
             "| case | variant | dtype | shape | verified | ours ms | ours % of copy | jax ms | jax / ours |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, variant, dtype, shape, verified, ours, copy, theirs in rows:
        flag = " **slower**" if theirs / ours < 1 else ""
        lines.append(f"| {name} | {variant} | {dtype} | {shape} | {verified} | {ours:.3f} | {copy:.1f} | {theirs:.3f} | "
                     f"{theirs / ours:.2f}x{flag} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)
    sys.exit(0 if all(r[4] == "ok" for r in rows) else 1)


if __name__ == "__main__":
    main()

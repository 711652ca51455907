#!/usr/bin/env python3
"""Side by side with PyTorch, in the same run on the GPU machine.

Runs baracuda-profiler's standard suite (or the ops given), then times PyTorch's best equivalent
of every case it can do on the same shapes and dtypes: CUDA events, warm-up, the median of many
runs (queued back to back, each between its own events: GPU time; --serial waits after each run, for a
call's latency, as the profiler's --serial), inputs rotated through enough buffer sets that the working set exceeds 3x the L2 cache,
fresh random data. Prints one table: case, ours, PyTorch, speed-up, our fraction of the copy
bandwidth (measured by the profiler in the same run), and for some cases further peers (EXTRA_PEERS:
torch.compile, Liger-Kernel, the entmax package) in columns of their own. A peer that is not
installed, refuses a shape or fails shows "—" and a footnote saying why; the run goes on.

    python3 bench/compare_torch.py --profiler build/device/tools/profiler/baracuda-profiler \
        [--ops lerp,lerp_backward] [--shapes 65536x64x8,4096x50257x1] [--out bench/results/DATE.md] \
        [--no-extras]

--shapes replaces each op's standard shapes (a sweep). A *_deterministic case is timed beside
PyTorch under torch.use_deterministic_algorithms(True).

Liger-Kernel and entmax are pure-Python wheels: `pip download` them into .whl/ (git-ignored) and
`python3 -m pip install --no-deps --no-index .whl/*.whl` on the GPU machine, which has no internet.
"""
import argparse
import datetime
import importlib
import importlib.metadata
import json
import math
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU with PyTorch

import torch  # noqa: E402

DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
          "i8": torch.int8, "u8": torch.uint8, "i32": torch.int32, "i64": torch.int64, "bool": torch.bool}


def rotation_sets(bytes_per_set):
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    return max(2, min(64, math.ceil(3 * l2 / max(bytes_per_set, 1))))


# Queued (the default): every run between its own events, enqueued back to back, one wait at the end:
# GPU time, the Python call hidden behind the previous run (as triton.testing.do_bench, and the
# profiler's default). --serial waits after each run: a call's latency (the profiler's --serial).
SERIAL = False


def time_median(fn, sets, iterations=100, warmup=10):
    for i in range(warmup):
        fn(i % sets)
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iterations)]
    for i, (start, stop) in enumerate(events):
        start.record()
        fn(i % sets)
        stop.record()
        if SERIAL:
            stop.synchronize()
    torch.cuda.synchronize()
    times = sorted(start.elapsed_time(stop) for start, stop in events)
    return times[len(times) // 2]


def rand(shape, dtype, lo=-1.0, hi=1.0):
    return (torch.rand(shape, device="cuda", dtype=torch.float64) * (hi - lo) + lo).to(dtype)


# Each builder takes (shape, dtype) and returns (make_set(), run(set_data)).
def binary_param_forward(fn, feature_weight):
    def build(shape, dtype):
        def make():
            a, b = rand(shape, dtype), rand(shape, dtype)
            w = rand(shape[-1:], dtype, -0.5, 1.5) if feature_weight else 0.3
            return a, b, w
        return make, lambda s: fn(s[0], s[1], s[2])
    return build


def binary_param_backward(fn, feature_weight):
    def build(shape, dtype):
        def make():
            a = rand(shape, dtype).requires_grad_()
            b = rand(shape, dtype).requires_grad_()
            w = rand(shape[-1:], dtype, -0.5, 1.5).requires_grad_() if feature_weight else 0.3
            out = fn(a, b, w)
            inputs = (a, b, w) if feature_weight else (a, b)
            return out, inputs, rand(shape, dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


def add_scaled(a, b, alpha):
    return torch.add(a, b, alpha=alpha)


# Indexing cases: shape [A, B, K] as in tools/harness/rows/indexing.cpp.
def indices(shape, count, skewed=False):
    u = torch.rand(shape, device="cuda", dtype=torch.float64)
    v = torch.floor(torch.exp(u * math.log(count + 1))) - 1 if skewed else torch.floor(u * count)
    return v.clamp(0, count - 1).long()


def embedding_forward(shape, dtype):
    a, b, k = shape
    return (lambda: (rand((a, b), dtype), indices((k,), a))), lambda s: torch.nn.functional.embedding(s[1], s[0])


def index_select_rows(shape, dtype):
    a, b, k = shape
    return (lambda: (rand((a, b), dtype), indices((k,), a))), lambda s: torch.index_select(s[0], 0, s[1])


def gather_rows_backward(shape, dtype):
    a, b, k = shape
    make = lambda: (rand((a, b), dtype), indices((k, b), a), rand((k, b), dtype))
    return make, lambda s: torch.zeros_like(s[0]).scatter_add_(0, s[1], s[2])


def embedding_backward(skewed):
    def build(shape, dtype):
        a, b, k = shape
        make = lambda: (rand((k, b), dtype), indices((k,), a, skewed))
        return make, lambda s: torch.ops.aten.embedding_dense_backward(s[0], s[1], a, -1, False)
    return build


def along_dim1(op):
    def build(shape, dtype):
        a, b, k = shape
        one_d = op in ("index_select", "index_select_backward")
        make = lambda: (rand((a, b), dtype), indices((k,) if one_d else (a, k), b), rand((a, k), dtype))
        run = {
            "index_select": lambda s: torch.index_select(s[0], 1, s[1]),
            "gather": lambda s: torch.gather(s[0], 1, s[1]),
            "index_select_backward": lambda s: torch.zeros_like(s[0]).index_add_(1, s[1], s[2]),
            "gather_backward": lambda s: torch.zeros_like(s[0]).scatter_add_(1, s[1], s[2]),
            "scatter_add": lambda s: s[0].scatter_add_(1, s[1], s[2]),
        }[op]
        return make, run
    return build


# Softmax-family cases: [rows, length] along dim, x spread over [-8, 8) as in
# tools/harness/rows/softmax.cpp.
def logits(shape, dtype):
    return rand(shape, dtype, -8.0, 8.0)


def on_logits(run):
    """A forward case: run(x) on fresh logits."""
    return lambda shape, dtype: ((lambda: logits(shape, dtype)), run)


def from_saved(forward, backward):
    """A backward case: backward(y, dy) with y = forward(logits) saved and a random dy."""
    def build(shape, dtype):
        return (lambda: (forward(logits(shape, dtype)), rand(shape, dtype))), lambda s: backward(s[0], s[1])
    return build


def softmax_forward(fn, dim, out_dtype=None):
    extra = {"dtype": out_dtype} if out_dtype is not None else {}
    return on_logits(lambda x: fn(x, dim, **extra))


def softmax_backward(log, dim):
    op = torch.ops.aten._log_softmax_backward_data if log else torch.ops.aten._softmax_backward_data
    forward = torch.log_softmax if log else torch.softmax
    return from_saved(lambda x: forward(x, dim), lambda y, dy: op(dy, y, dim, y.dtype))


# Sparsemax and 1.5-entmax along the last dim: the best composite of PyTorch ops, the sort-based
# closed form that the entmax package and Liger-Kernel's reference use. The sort runs in the input
# dtype (exact); the cumulative sums and the threshold in f32 (f64 for f64), so bf16 rows of 32000
# stay correct.
def accumulate_type(x):
    return torch.promote_types(x.dtype, torch.float32)


def ranks(z):
    return torch.arange(1, z.shape[-1] + 1, device=z.device, dtype=accumulate_type(z))


def sparsemax(x):
    z = torch.sort(x, -1, descending=True).values
    cumsum = torch.cumsum(z, -1, dtype=accumulate_type(x))
    # The support is the prefix of the sorted row where 1 + k z_k > z_1 + ... + z_k.
    size = (ranks(z) * z > cumsum - 1).sum(-1, keepdim=True)
    tau = (cumsum.gather(-1, size - 1) - 1) / size
    return torch.clamp(x - tau, min=0).to(x.dtype)


def entmax15(x):
    z = torch.sort(x, -1, descending=True).values
    top = z[..., :1].to(accumulate_type(x))
    # 1.5-entmax of x is (x/2 - tau)_+^2. Shifted by the max, the values near the support are small, so
    # mean_sq - mean^2 does not cancel in f32.
    half = (z - top) * 0.5
    k = ranks(z)
    mean = torch.cumsum(half, -1) / k
    mean_sq = torch.cumsum(half * half, -1) / k
    delta = (1 - k * (mean_sq - mean * mean)) / k
    tau = mean - torch.sqrt(torch.clamp(delta, min=0))
    size = (tau <= half).sum(-1, keepdim=True)
    return torch.square(torch.clamp((x - top) * 0.5 - tau.gather(-1, size - 1), min=0)).to(x.dtype)


# Their backward from the saved output, the closed form autograd of the composite amounts to:
# sums in f32, the rest in the gradient's dtype.
def sparsemax_backward(y, dy):
    support = y > 0
    total = torch.where(support, dy, 0).sum(-1, keepdim=True, dtype=accumulate_type(dy))
    return torch.where(support, dy - (total / support.sum(-1, keepdim=True)).to(dy.dtype), 0)


def entmax15_backward(y, dy):
    g = torch.sqrt(y)
    g_dy = g * dy
    acc = accumulate_type(y)
    q = g_dy.sum(-1, keepdim=True, dtype=acc) / g.sum(-1, keepdim=True, dtype=acc)
    return torch.addcmul(g_dy, g, q.to(y.dtype), value=-1)


# Reduction cases: [rows, length] along the last dim or dim 0, x in [0.5, 1.5) as in
# tools/harness/rows/reduce.cpp.
REDUCTIONS = {"sum": torch.sum, "mean": torch.mean, "amax": torch.amax, "argmax": torch.argmax, "var": torch.var,
              "std": torch.std, "var_mean": torch.var_mean, "logsumexp": torch.logsumexp, "prod": torch.prod}


def reduction(fn, dim):
    return lambda x: fn(x, dim)


def vector_norm(dim):
    return lambda x: torch.linalg.vector_norm(x, 2, dim)


def reduce_values(shape, dtype):
    return rand(shape, dtype, 0.5, 1.5)


def on_values(run):
    """A forward case: run(x) on fresh x."""
    return lambda shape, dtype: ((lambda: reduce_values(shape, dtype)), run)


def reduce_backward(forward):
    """The gradient of x from a random dout through autograd, materialized: sum's and mean's backward
    return an expanded view of dout, which our plan writes out in full. A forward of several outputs
    (var_mean's var and mean) takes a random cotangent for each (our dout and dmean)."""
    def build(shape, dtype):
        def make():
            x = reduce_values(shape, dtype).requires_grad_()
            out = forward(x)
            outs = out if isinstance(out, tuple) else (out,)
            return outs, x, tuple(rand(o.shape, dtype) for o in outs)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)[0].contiguous()
    return build


REDUCE_CASES = {
    **{f"torch.{name}(x, {dim})": on_values(reduction(fn, dim)) for name, fn in REDUCTIONS.items() for dim in (-1, 0)},
    **{f"torch.linalg.vector_norm(x, 2, {dim})": on_values(vector_norm(dim)) for dim in (-1, 0)},
    **{f"autograd of torch.{name}(x, -1)": reduce_backward(reduction(REDUCTIONS[name], -1))
       for name in ("sum", "mean", "amax", "var", "var_mean", "logsumexp")},
}


SCANS = {"cumsum": torch.cumsum, "cumprod": torch.cumprod, "cummax": torch.cummax, "cummin": torch.cummin,
         "logcumsumexp": torch.logcumsumexp}


def scan_values(fn, dim):
    """cummax / cummin return (values, indices): the values are compared with the other peers'."""
    return lambda x: (lambda out: out[0] if isinstance(out, tuple) else out)(fn(x, dim))


SCAN_CASES = {
    **{f"torch.{name}(x, {dim})": on_values(scan_values(fn, dim)) for name, fn in SCANS.items() for dim in (-1, 0)},
    **{f"autograd of torch.{name}(x, {dim})": reduce_backward(scan_values(SCANS[name], dim))
       for name in SCANS for dim in (-1, 0)},
}


# The PyTorch peer of every profiled op, keyed by the peer string the op table gives it (the
# profiler's --list --json and its results carry it): an op's deterministic twin shares its peer.

# Segment cases: shape [N, D, S] as in tools/harness/rows/segment.cpp (data [N, D], S segments).
def segment_ids(n, s, sorted_ids):
    ids = indices((n,), s)
    return torch.sort(ids).values if sorted_ids else ids


def segment_case(op, sorted_ids=True):
    def build(shape, dtype):
        n, d, s = shape
        make = lambda: (rand((n, d), dtype), segment_ids(n, s, sorted_ids), rand((s, d), dtype))
        lengths = lambda ids: torch.bincount(ids, minlength=s)
        offsets = lambda ids: torch.cat([ids.new_zeros(1), torch.cumsum(lengths(ids), 0)])
        reduce = {"sum": "sum", "mean": "mean", "max": "amax", "min": "amin"}
        run = {
            "segment_reduce_lengths": lambda x, r: torch.segment_reduce(x[0], r, lengths=lengths(x[1])),
            "segment_reduce_offsets": lambda x, r: torch.segment_reduce(x[0], r, offsets=offsets(x[1])),
            "index_add": lambda x, r: torch.zeros((s, d), dtype=x[0].dtype, device="cuda").index_add_(0, x[1], x[0]),
            "scatter_reduce": lambda x, r: torch.zeros((s, d), dtype=x[0].dtype, device="cuda").scatter_reduce_(
                0, x[1][:, None].expand(n, d), x[0], reduce[r], include_self=False),
            "index_select": lambda x, r: torch.index_select(x[2], 0, x[1]),
            "index_select_scaled": lambda x, r: torch.index_select(x[2] / lengths(x[1]).clamp(min=1)[:, None], 0, x[1]),
        }[op[0]]
        return make, lambda x: run(x, op[1])
    return build


SEGMENT_CASES = {
    "torch.segment_reduce(sum, lengths)": segment_case(("segment_reduce_lengths", "sum")),
    "torch.segment_reduce(sum, offsets)": segment_case(("segment_reduce_offsets", "sum")),
    "torch.segment_reduce(mean, lengths)": segment_case(("segment_reduce_lengths", "mean")),
    "torch.segment_reduce(max, lengths)": segment_case(("segment_reduce_lengths", "max")),
    "torch.segment_reduce(min, lengths)": segment_case(("segment_reduce_lengths", "min")),
    "zeros().index_add_(0, ids, data)": segment_case(("index_add", "sum"), False),
    "scatter_reduce(0, ids, data, mean)": segment_case(("scatter_reduce", "mean"), False),
    "scatter_reduce(0, ids, data, amax)": segment_case(("scatter_reduce", "max"), False),
    "scatter_reduce(0, ids, data, amin)": segment_case(("scatter_reduce", "min"), False),
    "index_select(dout, 0, ids)": segment_case(("index_select", "sum")),
    "index_select(dout, 0, ids) / counts": segment_case(("index_select_scaled", "mean")),
    # max / min backward: PyTorch's segment_reduce backward is autograd's; index_select of dout is its
    # lower bound (the gradient's scatter to the first maximal row reads at least as much).
    "segment_reduce(max) backward": segment_case(("index_select", "max")),
    "segment_reduce(min) backward": segment_case(("index_select", "min")),
}

# Unary cases: x (and dy) of the case's shape; the backward peers are the kernels autograd runs
# (aten.gelu_backward / silu_backward read dy and x; exp's backward multiplies dy by the saved y).
def unary_forward(fn, lo=-1.0, hi=1.0):  # x in [lo, hi), the profiler's range for the case
    def build(shape, dtype):
        return (lambda: (rand(shape, dtype, lo, hi),)), lambda s: fn(s[0])
    return build


def unary_backward(fn):
    def build(shape, dtype):
        return (lambda: (rand(shape, dtype), rand(shape, dtype))), lambda s: fn(s[0], s[1])
    return build


UNARY_CASES = {
    "F.gelu(x)": unary_forward(torch.nn.functional.gelu),
    "F.silu(x)": unary_forward(torch.nn.functional.silu),
    "torch.exp(x)": unary_forward(torch.exp),
    "torch.sqrt(x)": unary_forward(torch.sqrt, 0.0, 4.0),
    "torch.reciprocal(x)": unary_forward(torch.reciprocal),
    "torch.isnan(x)": unary_forward(torch.isnan),
    "aten.gelu_backward(dy, x)": unary_backward(torch.ops.aten.gelu_backward),
    "aten.silu_backward(dy, x)": unary_backward(torch.ops.aten.silu_backward),
    "dy * y (autograd of torch.exp)": unary_backward(torch.mul),
}

# Binary cases: out [N, D] (the case's shape); b of the same shape, a row [D] or a column [N, 1]. The
# backward peers are PyTorch's autograd of the expression (both gradients, b's summed where broadcast).
def operand_b(shape, kind):
    return {"same": shape, "row": shape[-1:], "column": (shape[0], 1)}[kind]


def binary_forward(fn, b_kind="same"):
    def build(shape, dtype):
        def b():  # "transposed": the transpose of a contiguous [D, N] buffer, as the profiler's
            if b_kind == "transposed":
                return rand(tuple(shape[::-1]), dtype, 0.5, 2.0).t()
            return rand(operand_b(shape, b_kind), dtype, 0.5, 2.0)
        return (lambda: (rand(shape, dtype, 0.5, 2.0), b())), lambda s: fn(s[0], s[1])
    return build


def binary_backward(fn, b_kind="same"):
    def build(shape, dtype):
        def make():
            a = rand(shape, dtype, 0.5, 2.0).requires_grad_()
            b = rand(operand_b(shape, b_kind), dtype, 0.5, 2.0).requires_grad_()
            return fn(a, b), (a, b), rand(shape, dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


BINARY_CASES = {
    "torch.add(a, b)": binary_forward(torch.add),
    "torch.mul(a, b)": binary_forward(torch.mul),
    "torch.div(a, b)": binary_forward(torch.div),
    "torch.maximum(a, b)": binary_forward(torch.maximum),
    "torch.bitwise_and(a, b)": binary_forward(torch.bitwise_and),
    "a (16-bit) + b (f32)": lambda shape, dtype: ((lambda: (rand(shape, dtype), rand(shape, torch.float32))),
                                                  lambda s: torch.add(s[0], s[1])),
    "torch.pow(a, b)": binary_forward(torch.pow),
    "torch.logaddexp(a, b)": binary_forward(torch.logaddexp),
    "torch.xlogy(a, b)": binary_forward(torch.xlogy),
    "torch.lt(a, b)": binary_forward(torch.lt),
    "a + b[D]": binary_forward(torch.add, "row"),
    "a * b[N, 1]": binary_forward(torch.mul, "column"),
    "a / b[D]": binary_forward(torch.div, "row"),
    "a + b.t()": binary_forward(torch.add, "transposed"),
    "autograd of a * b": binary_backward(torch.mul),
    "autograd of a / b": binary_backward(torch.div),
    "autograd of a + b[D] (da is dout)": binary_backward(torch.add, "row"),
    "autograd of a * b[D]": binary_backward(torch.mul, "row"),
    "autograd of a * b[N, 1]": binary_backward(torch.mul, "column"),
}

# Ternary cases: out [N, D]; where's condition a random bool tensor; "hi[D]" a row. The backward peers are PyTorch's autograd of the expression (every float operand's
# gradient, a broadcast one summed).
def ternary_operands(shape, dtype, c_shape=None):
    return rand(shape, dtype), rand(shape, dtype), rand(c_shape or shape, dtype, 0.5, 2.0)


def ternary_forward(fn, c_row=False):
    def build(shape, dtype):
        return (lambda: ternary_operands(shape, dtype, shape[-1:] if c_row else None)), lambda s: fn(*s)
    return build


def ternary_backward(fn, c_row=False):
    def build(shape, dtype):
        def make():
            a, b, c = (t.requires_grad_() for t in ternary_operands(shape, dtype, shape[-1:] if c_row else None))
            return fn(a, b, c), (a, b, c), rand(shape, dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


def autograd_of_x(fn):
    def build(shape, dtype):
        def make():
            x = rand(shape, dtype).requires_grad_()
            return fn(x), (x,), rand(shape, dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


def where_case(backward=False):
    def build(shape, dtype):
        def make():
            cond = torch.rand(shape, device="cuda") < 0.5
            b, c = rand(shape, dtype), rand(shape, dtype)
            if not backward:
                return cond, b, c
            b.requires_grad_()
            c.requires_grad_()
            return torch.where(cond, b, c), (b, c), rand(shape, dtype)
        if backward:
            return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
        return make, lambda s: torch.where(s[0], s[1], s[2])
    return build


TERNARY_CASES = {
    "torch.where(cond, b, c)": where_case(),
    "torch.clamp(x, -0.5, 0.5)": ternary_forward(lambda a, b, c: torch.clamp(a, -0.5, 0.5)),
    "torch.clamp(x, lo, hi)": ternary_forward(torch.clamp),
    "autograd of torch.where(cond, b, c)": where_case(backward=True),
    "autograd of torch.clamp(x, -0.5, 0.5)": autograd_of_x(lambda x: torch.clamp(x, -0.5, 0.5)),
    "autograd of torch.clamp(x, lo, hi[D])": ternary_backward(torch.clamp, c_row=True),
    "torch.addcdiv(a, b, c, value=0.5)": ternary_forward(lambda a, b, c: torch.addcdiv(a, b, c, value=0.5)),
    "autograd of torch.addcdiv(a, b, c, value=0.5)": ternary_backward(lambda a, b, c: torch.addcdiv(a, b, c, value=0.5)),
}

# Copy cases: the case's dtype is x's; a transposed x is the transpose of a contiguous buffer.
def copy_case(fn, transposed=False):
    def build(shape, dtype):
        def make():
            if transposed:
                return (rand(tuple(shape[:-2]) + (shape[-1], shape[-2]), dtype).transpose(-1, -2),)
            return (rand(shape, dtype),)
        return make, lambda s: fn(s[0])
    return build


COPY_CASES = {
    "x.to(torch.bfloat16)": copy_case(lambda x: x.to(torch.bfloat16)),
    "x.to(torch.float32)": copy_case(lambda x: x.to(torch.float32)),
    "x.t().contiguous()": copy_case(lambda x: x.contiguous(), transposed=True),
    "x.fill_(0.5)": copy_case(lambda x: x.fill_(0.5)),
}

# Gated cases: the case's shape is the output's [N, D]; x = [a, b] is [N, 2D]. PyTorch eager runs the
# activation and the product as two kernels (its autograd: their backward).
def gated_case(act, backward=False):
    def fn(x):
        a, b = x.chunk(2, dim=-1)
        return a * act(b)

    def build(shape, dtype):
        x_shape = tuple(shape[:-1]) + (2 * shape[-1],)
        if not backward:
            return (lambda: (rand(x_shape, dtype),)), lambda s: fn(s[0])

        def make():
            x = rand(x_shape, dtype).requires_grad_()
            return fn(x), (x,), rand(shape, dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


GATED_CASES = {
    "a * F.silu(b), x = [a, b]": gated_case(torch.nn.functional.silu),
    "a * F.gelu(b), x = [a, b]": gated_case(torch.nn.functional.gelu),
    "autograd of a * F.silu(b), x = [a, b]": gated_case(torch.nn.functional.silu, True),
    "autograd of a * F.gelu(b), x = [a, b]": gated_case(torch.nn.functional.gelu, True),
}

# Norm cases: x [rows, n], the weight (and LayerNorm's bias) [n]; with a residual, h = x + r first
# (PyTorch: two kernels). The backward is autograd's, through a graph built once per input set.
# `compile`: the same function through torch.compile (a fresh dynamo cache per case).
def norm_case(kind, backward=False, residual=False, compile=False):
    def forward(x, w, b, r):
        if residual:  # (y, h): a pre-norm block keeps h, so torch.compile must write it too
            h = x + r
            return torch.nn.functional.rms_norm(h, h.shape[-1:], w), h
        if kind == "layer":
            return torch.nn.functional.layer_norm(x, x.shape[-1:], w, b)
        return torch.nn.functional.rms_norm(x, x.shape[-1:], w)

    def build(shape, dtype):
        fn = forward
        if compile:
            torch._dynamo.reset()
            fn = torch.compile(forward, dynamic=False)
        n = shape[-1]

        def inputs(grad=False):
            x = rand(shape, dtype).requires_grad_(grad)
            w = rand((n,), dtype, 0.5, 1.5).requires_grad_(grad)
            b = rand((n,), dtype).requires_grad_(grad) if kind == "layer" else None
            return x, w, b, rand(shape, dtype) if residual else None
        if not backward:
            return (lambda: inputs()), lambda s: fn(*s)

        def make():
            x, w, b, r = inputs(True)
            return fn(x, w, b, r), [t for t in (x, w, b) if t is not None], rand(shape, dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


# GroupNorm cases: x [N, C, H, W], 32 groups, the weight and bias [C]; `silu`: F.silu after it
# (PyTorch: two kernels). `channels_last`: x in torch.channels_last memory format.
def group_norm_case(backward=False, silu=False, compile=False, channels_last=False):
    def forward(x, w, b):
        y = torch.nn.functional.group_norm(x, 32, w, b)
        return torch.nn.functional.silu(y) if silu else y

    def build(shape, dtype):
        fn = forward
        if compile:
            torch._dynamo.reset()
            fn = torch.compile(forward, dynamic=False)
        c = shape[1]

        def inputs(grad=False):
            x = rand(shape, dtype)
            if channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            return (x.requires_grad_(grad), rand((c,), dtype, 0.5, 1.5).requires_grad_(grad),
                    rand((c,), dtype).requires_grad_(grad))
        if not backward:
            return (lambda: inputs()), lambda s: fn(*s)

        def make():
            x, w, b = inputs(True)
            return fn(x, w, b), [x, w, b], rand(shape, dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


# BatchNorm cases: x [N, C, H, W], training, the weight, bias and running statistics [C] in f32 (as
# autocast keeps a bf16 model's), the running statistics updated every call.
def batch_norm_case(backward=False, compile=False):
    def forward(x, rm, rv, w, b):
        return torch.nn.functional.batch_norm(x, rm, rv, w, b, training=True)

    def build(shape, dtype):
        fn = forward
        if compile:
            torch._dynamo.reset()
            fn = torch.compile(forward, dynamic=False)
        c = shape[1]

        def inputs(grad=False):
            return (rand(shape, dtype).requires_grad_(grad), torch.zeros(c, device="cuda"), torch.ones(c, device="cuda"),
                    rand((c,), torch.float32, 0.5, 1.5).requires_grad_(grad),
                    rand((c,), torch.float32).requires_grad_(grad))
        if not backward:
            return (lambda: inputs()), lambda s: fn(*s)

        def make():
            x, rm, rv, w, b = inputs(True)
            return fn(x, rm, rv, w, b), [x, w, b], rand(shape, dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


def liger_norm_case(kind, backward=False, residual=False):
    """Liger-Kernel's layer_norm, rms_norm (Llama casting) and fused add + rms_norm, on the inputs
    norm_case builds (eps 1e-5 as ours). Not in place, so repeated backward calls see the same dy."""
    def build(shape, dtype):
        if kind == "layer":
            fn = peer_attr("liger_kernel.ops.layer_norm", "LigerLayerNormFunction.apply")
            run = lambda x, w, b, r: fn(x, w, b, 1e-5)
        elif residual:
            fn = peer_attr("liger_kernel.ops.fused_add_rms_norm", "LigerFusedAddRMSNormFunction.apply")
            run = lambda x, w, b, r: fn(x, r, w, 1e-5, 0.0, "llama", False)  # (y, h)
        else:
            fn = peer_attr("liger_kernel.ops.rms_norm", "LigerRMSNormFunction.apply")
            run = lambda x, w, b, r: fn(x, w, 1e-5, 0.0, "llama", False)
        make, call = norm_case(kind, backward, residual)(shape, dtype)
        if not backward:
            return make, lambda s: run(*s)
        n = shape[-1]

        def make_graph():
            x = rand(shape, dtype).requires_grad_(True)
            w = rand((n,), dtype, 0.5, 1.5).requires_grad_(True)
            b = rand((n,), dtype).requires_grad_(True) if kind == "layer" else None
            return run(x, w, b, None), [t for t in (x, w, b) if t is not None], rand(shape, dtype)
        return make_graph, call
    return build


NORM_CASES = {
    "F.layer_norm(x, [n], w, b)": norm_case("layer"),
    "autograd of F.layer_norm(x, [n], w, b)": norm_case("layer", True),
    "F.rms_norm(x, [n], w)": norm_case("rms"),
    "autograd of F.rms_norm(x, [n], w)": norm_case("rms", True),
    "h = x + r; F.rms_norm(h, [n], w)": norm_case("rms", residual=True),
    "F.group_norm(x, 32, w, b)": group_norm_case(),
    "F.silu(F.group_norm(x, 32, w, b))": group_norm_case(silu=True),
    "autograd of F.group_norm(x, 32, w, b)": group_norm_case(True),
    "F.group_norm(x, 32, w, b), x channels_last": group_norm_case(channels_last=True),
    "F.silu(F.group_norm(x, 32, w, b)), x channels_last": group_norm_case(silu=True, channels_last=True),
    "autograd of F.group_norm(x, 32, w, b), x channels_last": group_norm_case(True, channels_last=True),
    "autograd of F.silu(F.group_norm(x, 32, w, b))": group_norm_case(True, silu=True),
    "autograd of F.silu(F.group_norm(x, 32, w, b)), x channels_last": group_norm_case(True, silu=True,
                                                                                      channels_last=True),
    "F.batch_norm(x, rm, rv, w, b, training=True)": batch_norm_case(),
    "autograd of F.batch_norm(x, rm, rv, w, b, training=True)": batch_norm_case(True),
}

# Cross-entropy cases: logits x [N, C] (the profiler's shape), targets t [N] in [0, C), the mean. The
# backward is autograd's (the softmax minus the one-hot, scaled), through a graph built once per
# input set. `compile`: the same function through torch.compile (a fresh dynamo cache per case).
def cross_entropy_case(backward=False, compile=False, loss=torch.nn.functional.cross_entropy, soft=False):
    """loss(x, t) of logits [N, C] against class indices: F.cross_entropy, or F.nll_loss (x taken as
    log-probabilities, as the profiler's nll_loss); soft: t probabilities [N, C] in the logits' dtype."""
    def forward(x, t):
        return loss(x, t)

    def build(shape, dtype):
        fn = forward
        if compile:
            torch._dynamo.reset()
            fn = torch.compile(forward, dynamic=False)
        n, c = shape

        def inputs(grad=False):
            x = rand(shape, dtype, -4.0, 4.0).requires_grad_(grad)
            if soft:
                return x, rand(shape, dtype, 0.0, 1.0)
            return x, torch.randint(0, c, (n,), device="cuda")
        if not backward:
            return (lambda: inputs()), lambda s: fn(*s)

        def make():
            x, t = inputs(True)
            return fn(x, t), (x,), rand((), dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


def liger_cross_entropy(shape, dtype):
    """Liger-Kernel's cross-entropy. It computes the gradient inside its forward (written over the
    logits), so this column is its forward and backward together; its backward alone only scales."""
    fn = peer_attr("liger_kernel.ops.cross_entropy", "LigerCrossEntropyFunction.apply")
    n, c = shape

    def make():
        return rand(shape, dtype, -4.0, 4.0), torch.randint(0, c, (n,), device="cuda")

    def run(s):
        out = fn(s[0], s[1], None)  # (no class weights)
        return out[0] if isinstance(out, tuple) else out
    return make, run


def pointwise_loss_case(fn, target_lo=-1.0, backward=False):
    """A pointwise loss of x against y (the mean), as the profiler's `mse_loss`, `bce_with_logits`."""
    def build(shape, dtype):
        def inputs(grad=False):
            return rand(tuple(shape), dtype).requires_grad_(grad), rand(tuple(shape), dtype, target_lo, 1.0)
        if not backward:
            return (lambda: inputs()), lambda s: fn(s[0], s[1])

        def make():
            x, y = inputs(True)
            return fn(x, y), [x], torch.ones((), device="cuda", dtype=dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


LOSS_CASES = {
    "F.cross_entropy(x, t)": cross_entropy_case(),
    "autograd of F.cross_entropy(x, t)": cross_entropy_case(True),
    "F.cross_entropy(x, p), p probabilities": cross_entropy_case(soft=True),
    "autograd of F.cross_entropy(x, p), p probabilities": cross_entropy_case(True, soft=True),
    "F.nll_loss(x, t)": cross_entropy_case(loss=torch.nn.functional.nll_loss),
    "autograd of F.nll_loss(x, t)": cross_entropy_case(True, loss=torch.nn.functional.nll_loss),
    "F.mse_loss(x, y)": pointwise_loss_case(torch.nn.functional.mse_loss),
    "autograd of F.mse_loss(x, y)": pointwise_loss_case(torch.nn.functional.mse_loss, backward=True),
    "F.binary_cross_entropy_with_logits(x, y)": pointwise_loss_case(
        torch.nn.functional.binary_cross_entropy_with_logits, 0.0),
}

def matmul_case(backward=False):
    """torch.matmul of a [M, K] by b [K, N] (the profiler's shape is M x N x K)."""
    def build(shape, dtype):
        m, n, k = shape

        def inputs(grad=False):
            return rand((m, k), dtype).requires_grad_(grad), rand((k, n), dtype).requires_grad_(grad)
        if not backward:
            return (lambda: inputs()), lambda s: torch.matmul(*s)

        def make():
            a, b = inputs(True)
            return torch.matmul(a, b), [a, b], rand((m, n), dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


def grouped_offsets(t, g):
    """Group ends drawn sorted from [0, T] as the profiler draws them, the same for every peer."""
    gen = torch.Generator(device="cuda").manual_seed(1)
    return torch.sort(torch.randint(0, t + 1, (g,), device="cuda", generator=gen)).values.to(torch.int32)


def grouped_mm_case(backward=False, loop=False):
    """torch._grouped_mm of a [T, K] by each expert's weight w [G, N, K] transposed (its shape is
    T x N x K x G); loop: a torch.mm a group (the ends read on the host once, outside the timing)."""
    def build(shape, dtype):
        t, n, k, g = shape
        offs = grouped_offsets(t, g)
        ends = [0] + offs.tolist()

        def inputs(grad=False):
            return rand((t, k), dtype).requires_grad_(grad), rand((g, n, k), dtype).requires_grad_(grad)

        def fn(a, w):
            if not loop:
                return torch._grouped_mm(a, w.transpose(-2, -1), offs=offs)
            out = torch.zeros((t, n), device="cuda", dtype=dtype)
            for e in range(g):
                if ends[e + 1] > ends[e]:
                    torch.mm(a[ends[e]:ends[e + 1]], w[e].t(), out=out[ends[e]:ends[e + 1]])
            return out
        if not backward:
            return (lambda: inputs()), lambda s: fn(*s)

        def make():
            a, w = inputs(True)
            return fn(a, w), [a, w], rand((t, n), dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


def linear_case(act=None, backward=False, compile=False):
    """F.linear of x [M, K] by w [N, K] and bias [N], then act (the profiler's shape is M x N x K)."""
    def forward(x, w, b):
        y = torch.nn.functional.linear(x, w, b)
        return act(y) if act else y

    def build(shape, dtype):
        m, n, k = shape
        fn = forward
        if compile:
            torch._dynamo.reset()
            fn = torch.compile(forward, dynamic=False)

        def inputs(grad=False):
            return tuple(t.requires_grad_(grad) for t in (rand((m, k), dtype), rand((n, k), dtype), rand((n,), dtype)))
        if not backward:
            return (lambda: inputs()), lambda s: fn(*s)

        def make():
            x, w, b = inputs(True)
            return fn(x, w, b), [x, w, b], rand((m, n), dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


def gelu_tanh(y):
    return torch.nn.functional.gelu(y, approximate="tanh")


def rand_case(shape, dtype):
    return (lambda: torch.empty(shape, device="cuda", dtype=dtype)), lambda out: out.uniform_()


def dropout_case(backward=False):
    def build(shape, dtype):
        if not backward:
            return (lambda: rand(shape, dtype)), lambda x: torch.nn.functional.dropout(x, 0.1, training=True)

        def make():
            x = rand(shape, dtype).requires_grad_(True)
            return torch.nn.functional.dropout(x, 0.1, training=True), [x], rand(shape, dtype)
        return make, lambda s: torch.autograd.grad(s[0], s[1], s[2], retain_graph=True)
    return build


def randn_case(shape, dtype):
    return (lambda: torch.empty(shape, device="cuda", dtype=dtype)), lambda out: out.normal_()


def randint_case(shape, dtype):
    return (lambda: torch.empty(shape, device="cuda", dtype=dtype)), lambda out: out.random_(0, 1000)


def bernoulli_case(shape, dtype):
    return (lambda: torch.empty(shape, device="cuda", dtype=dtype)), lambda out: out.bernoulli_(0.5)


def randperm_case(shape, dtype):
    n = shape[0]
    return (lambda: None), lambda _: torch.randperm(n, device="cuda", dtype=dtype)


def multinomial_case(samples, replacement=False):
    def build(shape, dtype):
        return (lambda: torch.rand(shape, device="cuda", dtype=dtype)), \
            lambda p: torch.multinomial(p, samples, replacement=replacement)
    return build


RANDOM_CASES = {
    "torch.randperm(n)": randperm_case,
    "torch.multinomial(p, 1)": multinomial_case(1),
    "torch.multinomial(p, 64, replacement=True)": multinomial_case(64, True),
    "torch.rand(shape)": rand_case,
    "torch.randn(shape)": randn_case,
    "torch.randint(0, 1000, shape)": randint_case,
    "torch.bernoulli(shape, 0.5)": bernoulli_case,
    "F.dropout(x, 0.1)": dropout_case(),
    "autograd of F.dropout(x, 0.1)": dropout_case(True),
}


# Rotary cases: q [B, S, H_q, D] and k [B, S, H_q / 4, D] (the profiler's shape is B x S x H_q x D),
# the whole head dim rotated, positions in [0, 32768). The peer is HF transformers' apply_rotary_pos_emb
# (Llama's rotate_half; GPT-J's rotate_every_two for the interleaved case) on cos / sin computed
# beforehand from the positions, as a model computes them once for all its layers: the peer is timed
# without them, ours computes its cos / sin (in f64) in the same pass. `compile`: torch.compile of it.
def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_every_two(x):
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=2):
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def apply_rotary_pos_emb_interleaved(q, k, cos, sin):
    cos = torch.repeat_interleave(cos, 2, -1).unsqueeze(2)
    sin = torch.repeat_interleave(sin, 2, -1).unsqueeze(2)
    return q * cos + rotate_every_two(q) * sin, k * cos + rotate_every_two(k) * sin


def rotary_case(interleaved=False, backward=False, compile=False):
    apply = apply_rotary_pos_emb_interleaved if interleaved else apply_rotary_pos_emb

    def build(shape, dtype):
        b, s, hq, d = shape
        hk = max(1, hq // 4)
        fn = apply
        if compile:
            torch._dynamo.reset()
            fn = torch.compile(apply, dynamic=False)

        def cos_sin():
            positions = torch.randint(0, 32768, (b, s), device="cuda")
            inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d, 2, device="cuda", dtype=torch.float32) / d))
            freqs = positions[..., None].float() * inv_freq
            emb = freqs if interleaved else torch.cat((freqs, freqs), dim=-1)
            return emb.cos().to(dtype), emb.sin().to(dtype)

        def inputs(grad=False):
            q = rand((b, s, hq, d), dtype).requires_grad_(grad)
            k = rand((b, s, hk, d), dtype).requires_grad_(grad)
            return (q, k) + cos_sin()
        if not backward:
            return (lambda: inputs()), lambda t: fn(*t)

        def make():
            q, k, cos, sin = inputs(True)
            return fn(q, k, cos, sin), [q, k], (rand((b, s, hq, d), dtype), rand((b, s, hk, d), dtype))
        return make, lambda t: torch.autograd.grad(t[0], t[1], t[2], retain_graph=True)
    return build


ROTARY_CASES = {
    "apply_rotary_pos_emb(q, k, cos, sin)": rotary_case(),
    "apply_rotary_pos_emb_interleaved(q, k, cos, sin)": rotary_case(True),
    "autograd of apply_rotary_pos_emb(q, k, cos, sin)": rotary_case(backward=True),
}


def attention_case(backward=False, backend=None):
    """F.scaled_dot_product_attention, causal, on [B, S, H, D] buffers viewed as [B, H, S, D] (the
    profiler's layout). backend None: PyTorch picks its kernel; else the SDPBackend's name (cudnn,
    flash, efficient), forced by torch.nn.attention.sdpa_kernel."""
    def build(shape, dtype):
        def attend(q, k, v):
            t = lambda x: x.transpose(1, 2)
            return torch.nn.functional.scaled_dot_product_attention(t(q), t(k), t(v), is_causal=True).transpose(1, 2)

        if backend is not None:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            forced = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                      "efficient": SDPBackend.EFFICIENT_ATTENTION}[backend]
            plain = attend

            def attend(q, k, v):
                with sdpa_kernel(forced):
                    return plain(q, k, v)

        def inputs(grad=False):
            return tuple(rand(tuple(shape), dtype).requires_grad_(grad) for _ in range(3))
        if not backward:
            return (lambda: inputs()), lambda t: attend(*t)

        def make():
            q, k, v = inputs(True)
            return attend(q, k, v), [q, k, v], rand(tuple(shape), dtype)
        return make, lambda t: torch.autograd.grad(t[0], t[1], t[2], retain_graph=True)
    return build


ATTENTION_CASES = {
    "F.scaled_dot_product_attention(q, k, v, is_causal=True)": attention_case(),
    "autograd of F.scaled_dot_product_attention(q, k, v, is_causal=True)": attention_case(True),
}


MATMUL_CASES = {
    "torch.matmul(a, b)": matmul_case(),
    "autograd of torch.matmul(a, b)": matmul_case(True),
    "torch._grouped_mm(a, b, offs)": grouped_mm_case(),
    "autograd of torch._grouped_mm(a, b, offs)": grouped_mm_case(True),
    "F.linear(x, w, b)": linear_case(),
    "F.gelu(F.linear(x, w, b))": linear_case(torch.nn.functional.gelu),
    "F.gelu(F.linear(x, w, b), approximate='tanh')": linear_case(gelu_tanh),
    "autograd of F.gelu(F.linear(x, w, b))": linear_case(torch.nn.functional.gelu, True),
}


TORCH_CASES = {
    "torch.lerp(a, b, 0.3)": binary_param_forward(torch.lerp, False),
    "torch.lerp(a, b, w[D])": binary_param_forward(torch.lerp, True),
    "autograd of torch.lerp(a, b, 0.3)": binary_param_backward(torch.lerp, False),
    "autograd of torch.lerp(a, b, w[D])": binary_param_backward(torch.lerp, True),
    "torch.add(a, b, alpha=0.3)": binary_param_forward(add_scaled, False),
    "torch.addcmul(a, b, w[D])": binary_param_forward(torch.addcmul, True),
    "autograd of torch.add(a, b, alpha=0.3)": binary_param_backward(add_scaled, False),
    "autograd of torch.addcmul(a, b, w[D])": binary_param_backward(torch.addcmul, True),
    "F.embedding": embedding_forward,
    "aten.embedding_dense_backward": embedding_backward(False),
    "aten.embedding_dense_backward (log-uniform)": embedding_backward(True),
    "torch.index_select(src, 0, idx)": index_select_rows,
    "torch.index_select(src, 1, idx)": along_dim1("index_select"),
    "torch.gather(src, 1, idx)": along_dim1("gather"),
    "zeros().index_add_(1, idx, dout)": along_dim1("index_select_backward"),
    "zeros().scatter_add_(1, idx, dout)": along_dim1("gather_backward"),
    "zeros().scatter_add_(0, idx, dout)": gather_rows_backward,
    "dst.scatter_add_(1, idx, src)": along_dim1("scatter_add"),
    "torch.softmax(x, -1)": softmax_forward(torch.softmax, -1),
    "torch.log_softmax(x, -1)": softmax_forward(torch.log_softmax, -1),
    "torch.softmax(x, 0)": softmax_forward(torch.softmax, 0),
    "torch.softmax(x, -1, dtype=torch.float32)": softmax_forward(torch.softmax, -1, torch.float32),
    "aten._softmax_backward_data(dy, y, -1)": softmax_backward(False, -1),
    "aten._log_softmax_backward_data(dy, y, -1)": softmax_backward(True, -1),
    "aten._softmax_backward_data(dy, y, 0)": softmax_backward(False, 0),
    "sparsemax(x, -1)": on_logits(sparsemax),
    "entmax15(x, -1)": on_logits(entmax15),
    "sparsemax_backward(y, dy, -1)": from_saved(sparsemax, sparsemax_backward),
    "entmax15_backward(y, dy, -1)": from_saved(entmax15, entmax15_backward),
    **UNARY_CASES,
    **BINARY_CASES,
    **TERNARY_CASES,
    **COPY_CASES,
    **GATED_CASES,
    **NORM_CASES,
    **LOSS_CASES,
    **MATMUL_CASES,
    **RANDOM_CASES,
    **ROTARY_CASES,
    **ATTENTION_CASES,
    **REDUCE_CASES,
    **SCAN_CASES,
    **SEGMENT_CASES,
}


# Further peers, each in a column of its own. Their packages are optional, so each builder imports
# what it needs when it runs: a missing one is a footnote, not a failed run.
def peer_attr(module, name):
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def compiled(fn, inputs=None):
    """torch.compile of fn on the case's inputs (softmax's logits by default). A fresh dynamo cache
    for each case: its recompile limit (8 per function) would otherwise send later shapes back to
    eager without a word. The first call (untimed) compiles."""
    def build(shape, dtype):
        torch._dynamo.reset()
        return (inputs or on_logits)(torch.compile(fn, dynamic=False))(shape, dtype)
    return build


compiled_softmax = compiled(lambda x: torch.softmax(x, -1))


def peer_forward(module, name, *args):
    def build(shape, dtype):
        fn = peer_attr(module, name)
        return on_logits(lambda x: fn(x, *args))(shape, dtype)
    return build


class SavedContext:
    """Stands in for autograd's ctx: what a forward saves, for calling its backward directly."""

    def __init__(self, inputs):
        self.needs_input_grad = (True,) + (False,) * (inputs - 1)

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors


def peer_backward(module, name, *args):
    """The backward of a peer's autograd.Function, called on what its forward saved: the kernels
    autograd would run, without the engine's walk of the graph on the CPU."""
    def build(shape, dtype):
        fn = peer_attr(module, name)

        def make():
            ctx = SavedContext(1 + len(args))
            with torch.no_grad():
                fn.forward(ctx, logits(shape, dtype), *args)
            return ctx, rand(shape, dtype)
        return make, lambda s: fn.backward(s[0], s[1])
    return build


EXTRA_COLUMNS = ("compile ms", "liger ms", "entmax ms", "entmax bisect ms", "cudnn ms", "flash ms", "efficient ms")
SDPA_BACKENDS = ("cudnn", "flash", "efficient")
# Forward peers' outputs are checked against the PyTorch column's on the same inputs.
EXTRA_FORWARD = {
    "torch.softmax(x, -1)": {"compile ms": compiled_softmax,
                             "liger ms": peer_forward("liger_kernel.ops.softmax", "LigerSoftmaxFunction.apply")},
    "sparsemax(x, -1)": {"liger ms": peer_forward("liger_kernel.ops.sparsemax", "LigerSparsemaxFunction.apply", -1),
                         "entmax ms": peer_forward("entmax", "sparsemax", -1),
                         "entmax bisect ms": peer_forward("entmax", "sparsemax_bisect", -1)},
    "entmax15(x, -1)": {"entmax ms": peer_forward("entmax", "entmax15", -1),
                        "entmax bisect ms": peer_forward("entmax", "entmax_bisect", 1.5, -1)},
    **{f"torch.{name}(x, {dim})": {"compile ms": compiled(reduction(REDUCTIONS[name], dim), on_values)}
       for name in ("sum", "logsumexp") for dim in (-1, 0)},
    **{f"torch.cumsum(x, {dim})": {"compile ms": compiled(scan_values(torch.cumsum, dim), on_values)}
       for dim in (-1, 0)},
}
EXTRA_FORWARD.update({
    "torch._grouped_mm(a, b, offs)": {"mm loop ms": grouped_mm_case(loop=True)},
    "F.layer_norm(x, [n], w, b)": {"compile ms": norm_case("layer", compile=True), "liger ms": liger_norm_case("layer")},
    "F.rms_norm(x, [n], w)": {"compile ms": norm_case("rms", compile=True), "liger ms": liger_norm_case("rms")},
    "h = x + r; F.rms_norm(h, [n], w)": {"compile ms": norm_case("rms", residual=True, compile=True),
                                         "liger ms": liger_norm_case("rms", residual=True)},
    "F.cross_entropy(x, t)": {"compile ms": cross_entropy_case(compile=True), "liger ms": liger_cross_entropy},
    "F.group_norm(x, 32, w, b)": {"compile ms": group_norm_case(compile=True)},
    "F.silu(F.group_norm(x, 32, w, b))": {"compile ms": group_norm_case(silu=True, compile=True)},
    "F.group_norm(x, 32, w, b), x channels_last": {"compile ms": group_norm_case(compile=True, channels_last=True)},
    "F.silu(F.group_norm(x, 32, w, b)), x channels_last":
        {"compile ms": group_norm_case(silu=True, compile=True, channels_last=True)},
    "F.batch_norm(x, rm, rv, w, b, training=True)": {"compile ms": batch_norm_case(compile=True)},
    "F.gelu(F.linear(x, w, b))": {"compile ms": linear_case(torch.nn.functional.gelu, compile=True)},
    "F.gelu(F.linear(x, w, b), approximate='tanh')": {"compile ms": linear_case(gelu_tanh, compile=True)},
    "apply_rotary_pos_emb(q, k, cos, sin)": {"compile ms": rotary_case(compile=True)},
    "F.scaled_dot_product_attention(q, k, v, is_causal=True)": {f"{b} ms": attention_case(backend=b)
                                                                for b in SDPA_BACKENDS},
    "apply_rotary_pos_emb_interleaved(q, k, cos, sin)": {"compile ms": rotary_case(True, compile=True)},
})
EXTRA_BACKWARD = {
    "autograd of F.layer_norm(x, [n], w, b)": {"compile ms": norm_case("layer", True, compile=True),
                                               "liger ms": liger_norm_case("layer", True)},
    "autograd of F.rms_norm(x, [n], w)": {"compile ms": norm_case("rms", True, compile=True),
                                          "liger ms": liger_norm_case("rms", True)},
    "autograd of F.cross_entropy(x, t)": {"compile ms": cross_entropy_case(True, compile=True)},
    "F.cross_entropy(x, p), p probabilities": {"compile ms": cross_entropy_case(compile=True, soft=True)},
    "autograd of F.cross_entropy(x, p), p probabilities": {
        "compile ms": cross_entropy_case(True, compile=True, soft=True)},
    "autograd of F.group_norm(x, 32, w, b)": {"compile ms": group_norm_case(True, compile=True)},
    "autograd of F.group_norm(x, 32, w, b), x channels_last":
        {"compile ms": group_norm_case(True, compile=True, channels_last=True)},
    "autograd of F.silu(F.group_norm(x, 32, w, b))": {"compile ms": group_norm_case(True, silu=True, compile=True)},
    "autograd of F.silu(F.group_norm(x, 32, w, b)), x channels_last":
        {"compile ms": group_norm_case(True, silu=True, compile=True, channels_last=True)},
    "autograd of F.batch_norm(x, rm, rv, w, b, training=True)": {"compile ms": batch_norm_case(True, compile=True)},
    "autograd of F.scaled_dot_product_attention(q, k, v, is_causal=True)": {
        f"{b} ms": attention_case(True, b) for b in SDPA_BACKENDS},
    "autograd of F.gelu(F.linear(x, w, b))": {"compile ms": linear_case(torch.nn.functional.gelu, True, compile=True)},
    "autograd of apply_rotary_pos_emb(q, k, cos, sin)": {"compile ms": rotary_case(backward=True, compile=True)},
    "aten._softmax_backward_data(dy, y, -1)": {
        "liger ms": peer_backward("liger_kernel.ops.softmax", "LigerSoftmaxFunction")},
    "sparsemax_backward(y, dy, -1)": {
        "liger ms": peer_backward("liger_kernel.ops.sparsemax", "LigerSparsemaxFunction", -1),
        "entmax ms": peer_backward("entmax.activations", "SparsemaxFunction", -1),
        "entmax bisect ms": peer_backward("entmax.root_finding", "SparsemaxBisectFunction", -1)},
    "entmax15_backward(y, dy, -1)": {
        "entmax ms": peer_backward("entmax.activations", "Entmax15Function", -1),
        "entmax bisect ms": peer_backward("entmax.root_finding", "EntmaxBisectFunction", 1.5, -1)},
}
EXTRA_PEERS = {**EXTRA_FORWARD, **EXTRA_BACKWARD}


def check_peers(profiler, ops):
    """Fails, naming them, when a profiled op's PyTorch peer has no builder here."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ops.json")
        cmd = [profiler, "--list", f"--json={path}"] + ([f"--ops={ops}"] if ops else [])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not os.path.exists(path):
            sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
        listed = json.load(open(path))["ops"]
    missing = [f"{op['op']} ({op['torch']})" for op in listed if op["torch"] not in TORCH_CASES]
    if missing:
        sys.exit("bench/compare_torch.py has no PyTorch builder for these profiled ops (add one to "
                 "TORCH_CASES, keyed by the peer string of the op table):\n  " + "\n  ".join(missing))


def time_peer(build, shape, dtype, bytes_per_set):
    """The median ms of one peer, and its output on the first input set: every peer of a case draws
    its inputs from the same seed, so their outputs can be compared."""
    make, run = build(shape, dtype)
    sets = rotation_sets(bytes_per_set)
    torch.manual_seed(0)
    data = [make() for _ in range(sets)]
    first = run(data[0])  # untimed: torch.compile compiles here
    ms = time_median(lambda i: run(data[i]), sets)
    del data
    torch.cuda.empty_cache()
    return ms, first


def time_extra(build, shape, dtype, bytes_per_set, expected):
    """(ms or None, note or None): the note says why a peer has no time, or how far its output is
    from `expected` (the torch column's on the same inputs; None where outputs are not compared)."""
    ms, out, note = None, None, None
    try:
        ms, out = time_peer(build, shape, dtype, bytes_per_set)
    except Exception as e:  # noqa: BLE001 - a peer missing, refusing the shape or failing is a footnote
        lines = [line for line in str(e).splitlines() if line.strip()] or [""]
        note = f"{type(e).__name__}: {lines[0].strip()}"[:200]
    torch.cuda.empty_cache()  # after the traceback, which held the failed peer's tensors, is gone
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    wants = tuple(expected) if isinstance(expected, (tuple, list)) else (expected,)
    if (ms is not None and expected is not None and len(outs) == len(wants)
            and all(isinstance(t, torch.Tensor) for t in outs + wants)):
        tolerance = 1e-4 if wants[0].dtype in (torch.float32, torch.float64) else 1e-2
        diff = max((o.float() - e.float()).abs().max().item() for o, e in zip(outs, wants))
        if not diff <= tolerance:  # NaN included
            note = f"output differs from the torch column's by up to {diff:.3g} (tolerance {tolerance:g})"
    return ms, note


def package_version(name):
    try:
        return importlib.metadata.version(name)
    except Exception:  # noqa: BLE001 - not installed
        return "not installed"


def extra_cells(rows):
    """The extra peers' columns that this run has, each row's cells, its fastest peer's ms (peers
    with a note left out) and the footnotes: one per distinct column and reason, naming its cases."""
    columns = [c for c in EXTRA_COLUMNS if any(c in r["extras"] for r in rows)]
    notes = {}
    cells, fastest = [], []
    for r in rows:
        row_cells, best = [], r["torch_ms"]
        for c in columns:
            if c not in r["extras"]:
                row_cells.append("-")
                continue
            ms, note = r["extras"][c]
            text = f"{ms:.4f}" if ms is not None else "—"
            if note is not None:
                notes.setdefault((c, note), []).append(f"{r['op']} {r['dtype']} {r['shape']}")
                text += f" [{list(notes).index((c, note)) + 1}]"
            elif ms is not None:
                best = min(best, ms)
            row_cells.append(text)
        cells.append(row_cells)
        fastest.append(best)
    footnotes = [f"- [{i + 1}] {c}: {note} ({'; '.join(cases)})" for i, ((c, note), cases) in enumerate(notes.items())]
    return columns, cells, fastest, footnotes


def jax_median_ms(f, data):
    """Median wall clock (ms) of 50 calls of the jitted f over the rotated input sets, after 5 warm-ups."""
    import time
    for i in range(5):
        f(*data[i % len(data)]).block_until_ready()
    times = []
    for i in range(50):
        t0 = time.perf_counter()
        f(*data[i % len(data)]).block_until_ready()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def time_jax_segment_sum(shape, dtype_name, skewed, bytes_per_set):
    """jax.ops.segment_sum for the embedding-backward cases (wall clock around a jitted call)."""
    try:
        import jax
        import jax.numpy as jnp
    except Exception:  # noqa: BLE001 - JAX is optional
        return None
    a, b, k = shape
    jdt = {"f32": jnp.float32, "bf16": jnp.bfloat16, "f16": jnp.float16, "f64": jnp.float64}[dtype_name]
    if dtype_name == "f64":
        jax.config.update("jax_enable_x64", True)
    f = jax.jit(lambda d, i: jax.ops.segment_sum(d, i, num_segments=a))
    sets = rotation_sets(bytes_per_set)
    data = []
    for s in range(sets):
        key = jax.random.PRNGKey(s)
        d = jax.random.uniform(key, (k, b), minval=-1.0, maxval=1.0).astype(jdt)
        u = jax.random.uniform(jax.random.PRNGKey(1000 + s), (k,))
        idx = (jnp.floor(jnp.exp(u * math.log(a + 1))) - 1) if skewed else jnp.floor(u * a)
        data.append((d, jnp.clip(idx, 0, a - 1).astype(jnp.int32)))
    return jax_median_ms(f, data)


def time_jax_segment(shape, dtype_name, op, bytes_per_set):
    """jax.ops.segment_sum / segment_max / segment_min for the segment cases ([N, D, S]; sorted ids
    with indices_are_sorted=True unless the case is unsorted), wall clock around a jitted call."""
    try:
        import jax
        import jax.numpy as jnp
    except Exception:  # noqa: BLE001 - JAX is optional
        return None
    n, d, s = shape
    kind = op.split("_")[1]
    if kind not in ("sum", "max", "min") or "backward" in op or "offsets" in op:
        return None
    sorted_ids = "unsorted" not in op
    jdt = {"f32": jnp.float32, "bf16": jnp.bfloat16, "f16": jnp.float16, "f64": jnp.float64}[dtype_name]
    fn = {"sum": jax.ops.segment_sum, "max": jax.ops.segment_max, "min": jax.ops.segment_min}[kind]
    f = jax.jit(lambda x, i: fn(x, i, num_segments=s, indices_are_sorted=sorted_ids))
    sets = rotation_sets(bytes_per_set)
    data = []
    for k in range(sets):
        x = jax.random.uniform(jax.random.PRNGKey(k), (n, d), minval=-1.0, maxval=1.0).astype(jdt)
        ids = jnp.floor(jax.random.uniform(jax.random.PRNGKey(1000 + k), (n,)) * s).astype(jnp.int32)
        data.append((x, jnp.sort(ids) if sorted_ids else ids))
    return jax_median_ms(f, data)


_same_copy_ms = {}


def time_same_bytes_copy(case_bytes):
    """Median ms of a device copy that moves the case's bytes (half read, half written), rotated as
    the cases are: the launch and ramp costs a small case pays too, which the 1 GiB copy rate hides."""
    half = max(16, (int(case_bytes) // 2 + 15) // 16 * 16)
    if half not in _same_copy_ms:
        sets = rotation_sets(2 * half)
        bufs = [(torch.empty(half, dtype=torch.uint8, device="cuda"),
                 torch.randint(0, 255, (half,), dtype=torch.uint8, device="cuda")) for _ in range(sets)]
        _same_copy_ms[half] = time_median(lambda i: bufs[i][0].copy_(bufs[i][1]), sets)
        del bufs
    return _same_copy_ms[half]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiler", required=True)
    ap.add_argument("--ops", default="")
    ap.add_argument("--dtypes", default="")
    ap.add_argument("--shapes", default="", help="the profiler's --shapes (e.g. 65536x64x8,4096x50257x1): a sweep")
    ap.add_argument("--out", default="")
    ap.add_argument("--commit", default=os.environ.get("BARACUDA_COMMIT", "unknown"))
    ap.add_argument("--no-extras", dest="extras", action="store_false", help="time PyTorch only, no EXTRA_PEERS")
    ap.add_argument("--serial", action="store_true", help="time each run alone, waiting after it (a call's latency)")
    ap.add_argument("--no-jax", dest="jax", action="store_false", help="no jax ms column (JAX's skewed 16-bit sums take seconds)")
    args = ap.parse_args()
    global SERIAL
    SERIAL = args.serial

    check_peers(args.profiler, args.ops)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ours.json")
        cmd = [args.profiler, f"--json={path}"]
        if args.ops:
            cmd.append(f"--ops={args.ops}")
        if args.dtypes:
            cmd.append(f"--dtypes={args.dtypes}")
        if args.shapes:
            cmd.append(f"--shapes={args.shapes}")
        if args.serial:
            cmd.append("--serial")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        print(proc.stdout)
        if not os.path.exists(path):
            print(proc.stderr, file=sys.stderr)
            sys.exit("baracuda-profiler wrote no results")
        ours = json.load(open(path))

    torch.manual_seed(0)
    rows = []
    unmatched = sorted({case["op"] for case in ours["cases"] if case.get("torch") not in TORCH_CASES})
    if unmatched:
        sys.exit("no PyTorch builder for the profiled ops: " + ", ".join(unmatched))
    for case in ours["cases"]:
        if case["dtype"] not in DTYPES:
            continue
        shape, dtype, peer = tuple(case["shape"]), DTYPES[case["dtype"]], case["torch"]
        # A deterministic variant is timed beside PyTorch's deterministic mode.
        deterministic = case["op"].endswith("_deterministic")
        torch.use_deterministic_algorithms(deterministic)
        torch.utils.deterministic.fill_uninitialized_memory = False  # no NaN fill of new tensors in the timing
        torch_ms, expected = time_peer(TORCH_CASES[peer], shape, dtype, case["bytes"])
        torch.use_deterministic_algorithms(False)
        expected = expected if args.extras and peer in EXTRA_FORWARD else None
        extras = {}
        for column, build in (EXTRA_PEERS.get(peer, {}) if args.extras else {}).items():
            extras[column] = time_extra(build, shape, dtype, case["bytes"], expected)
        del expected
        jax_ms = None
        if not args.jax:
            pass
        elif case["op"].startswith("embedding_backward"):
            jax_ms = time_jax_segment_sum(shape, case["dtype"], "skewed" in case["op"], case["bytes"])
        elif case["op"].startswith("segment_"):
            jax_ms = time_jax_segment(shape, case["dtype"], case["op"], case["bytes"])
        rows.append({"op": case["op"], "variant": case["variant"], "dtype": case["dtype"],
                     "shape": "x".join(map(str, case["shape"])), "verified": "ok" if case["verified"] else "FAIL",
                     "ours_ms": case["median_ms"], "torch_ms": torch_ms, "ours_copy": 100 * case["copy_fraction"],
                     "same_copy": 100 * time_same_bytes_copy(case["bytes"]) / case["median_ms"],
                     "torch_copy": 100 * case["bytes"] / (torch_ms * 1e6) / ours["copy_gbps"], "jax_ms": jax_ms,
                     "extras": extras})

    columns, cells, fastest, footnotes = extra_cells(rows)
    header = ("case", "variant", "dtype", "shape", "verified", "ours ms", "torch ms", "speed-up",
              "ours % copy", "torch % copy", "ours % same-bytes copy", "jax ms", *columns, *(["vs fastest"] if columns else []))
    extras_text = ""
    if columns:
        extras_text = (
            f" Further peers: compile ms is torch.compile (default mode, dynamic=False, compiled before the "
            f"timed runs); liger ms Liger-Kernel {package_version('liger-kernel')}; entmax ms and entmax bisect "
            f"ms the entmax package {package_version('entmax')} (sort-based; bisection, 50 iterations). Their "
            f"backward columns call the peer's autograd.Function backward directly on what its forward saved "
            f"(the kernels autograd runs, not the engine's walk on the CPU). Forward peers' outputs are compared "
            f"with the torch column's on the same inputs. Each time is GPU time between events around one "
            f"Python call, so a peer that takes longer to launch its kernels than to run them is timed at its "
            f"launch rate (queued or not). vs fastest: our speed-up over the fastest of torch ms and the further peers "
            f"(those without a footnote).")
    lines = [f"# baracuda vs PyTorch {torch.__version__} on {ours['device']}",
             "",
             f"date {datetime.date.today().isoformat()}, commit {args.commit}, copy bandwidth "
             f"{ours['copy_gbps']:.1f} GB/s (device-to-device, read + write, same run). Medians of 100 runs "
             f"{'each alone (--serial: a call latency)' if SERIAL else 'queued back to back, each between its own events'}, "
             f"inputs rotated past 3x L2. % copy counts the fewest bytes each op must move, at the 1 GiB copy's "
             f"rate; % same-bytes copy is a device copy moving those bytes, timed as the cases are (it "
             f"pays the launch and ramp a small case pays). Backward "
             f"indexing cases zero the gradient inside the timed region (PyTorch's ops allocate and zero "
             f"it). torch ms of a *_deterministic case: PyTorch under torch.use_deterministic_algorithms(True). "
             f"jax ms: jax.ops.segment_sum, jitted, wall-clock median of 50 calls. torch ms of sparsemax "
             f"and entmax15 is the sort-based composite (sort in the input dtype, f32 cumulative sums and "
             f"threshold); of their backward, the closed form on the saved output." + extras_text,
             "",
             "| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    for r, row_cells, best in zip(rows, cells, fastest):
        jax = f"{r['jax_ms']:.4f}" if r["jax_ms"] is not None else "-"
        vs_fastest = [f"{best / r['ours_ms']:.2f}x"] if columns else []
        lines.append("| " + " | ".join([r["op"], r["variant"], r["dtype"], r["shape"], r["verified"],
                                        f"{r['ours_ms']:.4f}", f"{r['torch_ms']:.4f}",
                                        f"{r['torch_ms'] / r['ours_ms']:.2f}x", f"{r['ours_copy']:.1f}",
                                        f"{r['torch_copy']:.1f}", f"{r['same_copy']:.1f}", jax, *row_cells,
                                        *vs_fastest]) + " |")
    if footnotes:
        lines += [""] + footnotes
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)
    if not all(c["verified"] for c in ours["cases"]):
        sys.exit(1)


if __name__ == "__main__":
    main()

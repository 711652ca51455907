"""A two-layer MLP trained on synthetic data through baracuda's differentiable functions:
linear -> gelu (fused into the first linear) -> linear -> log_softmax -> the target's log-probability
-> mean. The same model is trained beside it with the framework's own operators, from the same
initial weights on the same batches; the script checks that the losses and the final weights agree
within tolerance and prints both step times.

    python examples/mlp.py --framework jax     # baracuda.jax under jax.jit (CPU or GPU)
    python examples/mlp.py --framework torch   # baracuda.torch's custom operators (CUDA where present)

Exits non-zero when the two trainings disagree.
"""

import argparse
import sys
import time

import numpy as np


def data(steps, batch, features, classes, seed=0):
    """Batches from a fixed random teacher, so that the loss has something to learn."""
    rng = np.random.default_rng(seed)
    teacher = rng.standard_normal((features, classes)).astype(np.float32)
    for _ in range(steps):
        x = rng.standard_normal((batch, features)).astype(np.float32)
        yield x, np.argmax(x @ teacher, axis=1).astype(np.int32)


def initial_weights(features, hidden, classes, seed=1):
    rng = np.random.default_rng(seed)
    # (scaled before the cast: NumPy 2 promotes an f32 array divided by an np.float64 to f64)
    return [(rng.standard_normal((hidden, features)) / np.sqrt(features)).astype(np.float32),
            np.zeros(hidden, np.float32),
            (rng.standard_normal((classes, hidden)) / np.sqrt(hidden)).astype(np.float32),
            np.zeros(classes, np.float32)]


def train_jax(args):
    import jax
    import jax.numpy as jnp

    import baracuda.jax as bj

    def loss_with(linear, log_softmax):
        def loss(params, x, t):
            w1, b1, w2, b2 = params
            logp = log_softmax(linear(linear(x, w1, b1, "gelu"), w2, b2, "none"))
            return -jnp.mean(jnp.take_along_axis(logp, t[:, None], axis=1))
        return loss

    ours = loss_with(lambda x, w, b, act: bj.linear(x, w, b, activation=act), bj.log_softmax)
    act = {"gelu": lambda v: jax.nn.gelu(v, approximate=False), "none": lambda v: v}
    theirs = loss_with(lambda x, w, b, a: act[a](x @ w.T + b), jax.nn.log_softmax)

    def make_step(loss):
        @jax.jit
        def step(params, x, t):
            value, grads = jax.value_and_grad(loss)(params, x, t)
            return [p - args.lr * g for p, g in zip(params, grads)], value
        return step

    return run(args, [make_step(ours), make_step(theirs)], lambda p: [jnp.asarray(w) for w in p],
               jnp.asarray, lambda v: float(v), lambda v: np.asarray(v), lambda v: v.block_until_ready())


def train_torch(args):
    import torch
    import torch.nn.functional as F

    import baracuda.torch as bt

    device = "cuda" if torch.cuda.is_available() else "cpu"

    def loss_with(linear, log_softmax):
        def loss(params, x, t):
            w1, b1, w2, b2 = params
            logp = log_softmax(linear(linear(x, w1, b1, "gelu"), w2, b2, "none"))
            return -logp.gather(1, t[:, None]).mean()
        return loss

    ours = loss_with(lambda x, w, b, act: bt.linear(x, w, b, activation=act), bt.log_softmax)
    act = {"gelu": F.gelu, "none": lambda v: v}
    theirs = loss_with(lambda x, w, b, a: act[a](F.linear(x, w, b)), lambda v: torch.log_softmax(v, -1))

    def make_step(loss):
        def step(params, x, t):
            value = loss(params, x, t)
            grads = torch.autograd.grad(value, params)
            with torch.no_grad():
                new = [(p - args.lr * g).requires_grad_() for p, g in zip(params, grads)]
            return new, value.detach()
        return step

    def sync(v):
        if device == "cuda":
            torch.cuda.synchronize()
        return v

    return run(args, [make_step(ours), make_step(theirs)],
               lambda p: [torch.tensor(w, device=device, requires_grad=True) for w in p],
               lambda a: torch.from_numpy(a).to(device).long() if a.dtype == np.int32 else torch.from_numpy(a).to(device),
               lambda v: float(v), lambda v: v.detach().cpu().numpy(), sync)


def run(args, steps, to_params, to_array, to_float, to_numpy, sync):
    """Trains both models on the same batches; prints their losses and step times; returns whether
    they agree."""
    results = []
    for step in steps:
        params = to_params(initial_weights(args.features, args.hidden, args.classes))
        losses, times = [], []
        for x, t in data(args.steps, args.batch, args.features, args.classes):
            x, t = to_array(x), to_array(t)
            start = time.perf_counter()
            params, loss = step(params, x, t)
            sync(loss)
            times.append(time.perf_counter() - start)
            losses.append(to_float(loss))
        results.append((losses, [to_numpy(p) for p in params], np.median(times[len(times) // 2:])))
    (ours, ours_params, ours_time), (theirs, theirs_params, theirs_time) = results
    print(f"{args.framework}: loss {ours[0]:.4f} -> {ours[-1]:.4f} (baracuda), {theirs[0]:.4f} -> {theirs[-1]:.4f} "
          f"({args.framework}'s own)")
    print(f"step time (median of the last half): baracuda {ours_time * 1e3:.3f} ms, {args.framework} "
          f"{theirs_time * 1e3:.3f} ms")
    loss_gap = max(abs(a - b) for a, b in zip(ours, theirs))
    weight_gap = max(float(np.max(np.abs(a - b))) for a, b in zip(ours_params, theirs_params))
    print(f"largest difference: loss {loss_gap:.2e}, final weights {weight_gap:.2e}")
    return loss_gap <= args.tolerance and weight_gap <= args.tolerance and ours[-1] < ours[0]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--framework", choices=["jax", "torch"], default="jax")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--features", type=int, default=64)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--tolerance", type=float, default=1e-3)
    args = p.parse_args()
    ok = (train_jax if args.framework == "jax" else train_torch)(args)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

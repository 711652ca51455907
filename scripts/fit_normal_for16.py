#!/usr/bin/env python3
"""Fits the rational R(a) = P(a) / Q(a), degrees (3, 4), q0 = 1, to Phi(-a) exp(a^2 / 2) on [0, 14]:
the coefficients of unary_fn::normal_for16 (src/common/unary_math.hpp), where Phi(-|x|) =
exp(-x^2 / 2) R(|x|). Minimax by reweighted least squares on the relative error; prints the
coefficients and the largest relative error of R evaluated in f32 (Horner, as the kernel does).
Needs NumPy and SciPy."""
import numpy as np
from scipy.optimize import least_squares
from scipy.special import log_ndtr

N_P, A_MAX = 3, 14.0
a = np.linspace(0.0, A_MAX, 6000)
target = np.exp(log_ndtr(-a) + a * a / 2)  # Phi(-a) exp(a^2 / 2), no underflow


def rational(c, x, dtype=np.float64):
    c = c.astype(dtype)
    x = x.astype(dtype)
    p = np.zeros_like(x)
    for k in range(N_P, -1, -1):
        p = (p * x + c[k]).astype(dtype)
    q_coeffs = np.concatenate([[1.0], c[N_P + 1:]]).astype(dtype)
    q = np.zeros_like(x)
    for k in range(N_P + 1, -1, -1):
        q = (q * x + q_coeffs[k]).astype(dtype)
    return p.astype(np.float64) / q


# Start from the linear problem R Q - P = 0, then minimize the relative error, reweighting toward
# the worst points until the error levels out (near-minimax).
m = np.hstack([-np.vander(a, N_P + 1, increasing=True), target[:, None] * np.vander(a, N_P + 2, increasing=True)[:, 1:]])
c, *_ = np.linalg.lstsq(m / target[:, None], -np.ones_like(a), rcond=None)
w = np.ones_like(a)
for _ in range(40):
    c = least_squares(lambda c: (rational(c, a) - target) / target * w, c, method="lm", max_nfev=5000).x
    e = np.abs(rational(c, a) / target - 1)
    w = w * np.power(e / e.max() + 1e-4, 0.25)
    w /= w.mean()

x32 = np.linspace(0.0, A_MAX, 400001).astype(np.float32)
ref = np.exp(log_ndtr(-x32.astype(np.float64)) + x32.astype(np.float64) ** 2 / 2)
print("P:", ", ".join(f"{v:.9g}f" for v in c[: N_P + 1]))
print("Q: 1,", ", ".join(f"{v:.9g}f" for v in c[N_P + 1:]))
print(f"max relative error of R: f64 {np.abs(rational(c, a) / target - 1).max():.2e}, "
      f"f32 {np.abs(rational(c, x32, np.float32) / ref - 1).max():.2e}")

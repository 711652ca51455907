#!/usr/bin/env python3
"""Fits the two pieces of the host's erf (simd_math::f32::erf, src/common/simd_math.hpp), evaluated in
f64 and rounded once to f32:
  |x| <= 0.921875:        erf(x) = x + x P(x^2), P of degree 6 ~ erf(x) / x - 1
  0.921875 < |x| <= 3.9375: erf(x) = 1 - exp(R(x)), R of degree 7 ~ log(erfc(x))
Minimax by reweighted least squares (Lawson): P on erf's relative error, R on the error it makes in
erf (erfc times R's error), both in units of 2^-24. Prints the coefficients (constant term first) and
each piece's largest error in f32 ulp of erf. Needs NumPy and mpmath."""
import mpmath as mp
import numpy as np

mp.mp.dps = 40
SPLIT, TOP = 0.921875, 3.9375


def lawson(basis, target, weight, iterations=300):
    lam = np.full(len(target), 1.0 / len(target))
    for _ in range(iterations):
        w = np.sqrt(lam) * weight
        c, *_ = np.linalg.lstsq(basis * w[:, None], target * w, rcond=None)
        err = np.abs(weight * (basis @ c - target))
        lam = lam * err
        lam /= lam.sum()
    return c, np.max(np.abs(weight * (basis @ c - target)))


x = np.linspace(1e-4, SPLIT, 3000)
erf = np.array([float(mp.erf(mp.mpf(v))) for v in x])
p, err_p = lawson(np.vstack([(x * x) ** k for k in range(7)]).T, erf / x - 1, x / erf * 2.0**24)
print("P:", ", ".join(repr(float(c)) for c in p), f"(within {err_p:.2g} ulp)")

t = np.linspace(SPLIT, TOP, 4000)
erfc = [mp.erfc(mp.mpf(v)) for v in t]
r, err_r = lawson(np.vstack([t**k for k in range(8)]).T, np.array([float(mp.log(e)) for e in erfc]),
                  np.array([float(e) for e in erfc]) * 2.0**24)
print("R:", ", ".join(repr(float(c)) for c in r), f"(within {err_r:.2g} ulp)")

r"""Closed forms of the risks of Appendix C (Bon et al. 2026) — KL, Rényi, χ² and total
variation of the privacy loss at sensitivity 1 — for Gaussian, Laplace, geometric noise and
finite kernels, shared by the App. C certificate (:mod:`persuasive.certify.appc`) and Rényi
composition (:mod:`persuasive.pld.renyi`); ``docs/math.md`` §7.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy import stats
from scipy.special import logsumexp


def gaussian_risk(sigma: float, kind: str, alpha: float = 1.0) -> float:
    r"""Closed forms at sensitivity 1: KL :math:`1/(2\sigma^2)`, Rényi :math:`\alpha/(2\sigma^2)`,
    χ² :math:`e^{1/\sigma^2}-1`, TV :math:`2\Phi(1/(2\sigma))-1`."""
    s2 = sigma * sigma
    if kind == "kl":
        return 0.5 / s2
    if kind == "renyi":
        return alpha / (2.0 * s2)
    if kind == "chi2":
        return math.expm1(1.0 / s2)
    return float(1.0 - 2.0 * stats.norm.sf(0.5 / sigma))


def laplace_risk(b: float, kind: str, alpha: float = 1.0) -> float:
    r"""Closed forms at sensitivity 1: KL :math:`1/b + e^{-1/b} - 1`; Rényi (Mironov 2017)
    :math:`\frac{1}{\alpha-1}\log\big(\frac{\alpha}{2\alpha-1}e^{(\alpha-1)/b}
    + \frac{\alpha-1}{2\alpha-1}e^{-\alpha/b}\big)`; χ² :math:`e^{D_2}-1`;
    TV :math:`1 - e^{-1/(2b)}`."""
    if kind == "kl":
        return 1.0 / b + math.expm1(-1.0 / b)
    if kind in ("renyi", "chi2"):
        a = alpha if kind == "renyi" else 2.0
        log_e = np.logaddexp(
            math.log(a / (2 * a - 1)) + (a - 1) / b, math.log((a - 1) / (2 * a - 1)) - a / b
        )
        d = float(log_e / (a - 1))
        return d if kind == "renyi" else math.expm1(d)
    return -math.expm1(-0.5 / b)


def discrete_risk(
    loss: NDArray[np.float64], p: NDArray[np.float64], kind: str, alpha: float = 1.0
) -> float:
    r"""The worst row of :math:`\mathbb E_x[\cdot]` for losses ``loss`` with probabilities ``p``
    (shape (P, J); entries with p = 0 are ignored): KL :math:`\mathbb E\ell`, Rényi
    :math:`\frac1{\alpha-1}\log\mathbb E e^{(\alpha-1)\ell}`, TV
    :math:`\mathbb E|1-e^{-\ell}|/2`, χ² :math:`\mathbb E(e^{\ell}-2+e^{-\ell})`."""
    if loss.shape[0] == 0:
        return 0.0
    pos = p > 0
    ell = np.where(pos, loss, 0.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if kind == "renyi":
            vals = logsumexp(
                np.where(pos, np.log(np.where(pos, p, 1.0)) + (alpha - 1) * ell, -np.inf), axis=1
            ) / (alpha - 1)
        else:
            if kind == "kl":
                g = ell
            elif kind == "tv":
                g = np.abs(np.expm1(-ell)) / 2.0
            else:
                g = np.expm1(ell) + np.expm1(-ell)
            vals = np.sum(np.where(pos, p * g, 0.0), axis=1)
    return float(np.max(vals))


def geometric_risk(b: float, kind: str, alpha: float = 1.0) -> float:
    """Two-sided geometric: the loss is +1/b w.p. 1/(1 + e^{-1/b}) and -1/b otherwise."""
    p = 1.0 / (1.0 + math.exp(-1.0 / b))
    return discrete_risk(np.array([[1.0 / b, -1.0 / b]]), np.array([[p, 1.0 - p]]), kind, alpha)


def _laplace_magnitude(b: float, kind: str, alpha: float, value: float) -> float:
    """Size of the terms of :func:`laplace_risk` (its rounding error is a few ulps of it)."""
    if kind in ("renyi", "chi2"):
        a = alpha if kind == "renyi" else 2.0
        terms = abs(math.log(a / (2 * a - 1))) + abs(math.log((a - 1) / (2 * a - 1))) + a / b
        mag = (terms + (a - 1) / b) / (a - 1)
        return mag * (1.0 + abs(value)) if kind == "chi2" else mag
    return abs(value) + 1.0 / b + 1.0
